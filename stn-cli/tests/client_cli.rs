//! `stn send` end to end against an in-process server.

use std::process::Command;
use std::time::Duration;

use stn_server::{Server, ServerConfig, ServerHandle, Stats};

fn stn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stn"))
}

/// Runs `stn` with `args`, asserts it succeeded, and returns its stdout.
async fn run_ok(args: &[&str]) -> String {
    let out = run(args.iter().map(|a| a.to_string()).collect()).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

async fn run(args: Vec<String>) -> std::process::Output {
    let out = tokio::task::spawn_blocking(move || stn().args(&args).output().expect("run stn"));
    tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("stn send finishes")
        .expect("join")
}

/// The server's count, once it reaches `want` or after 2 s (bounded): the
/// server counts a request after its write completes, which may be just
/// after the client, having read the response, has exited.
async fn served(server: &ServerHandle, count: impl Fn(&Stats) -> u64, want: u64) -> u64 {
    for _ in 0..200 {
        let n = count(&server.stats());
        if n >= want {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    count(&server.stats())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_prints_lines_and_a_summary() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let to = server.short_addr().expect("short").to_string();
    let stdout = run_ok(&[
        "send",
        "--to",
        &to,
        "--count",
        "5",
        "--concurrency",
        "2",
        "--body-size",
        "32",
    ])
    .await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert_eq!(
        lines.iter().filter(|l| l.contains(" ok ")).count(),
        5,
        "{stdout}"
    );
    assert!(
        lines[5].starts_with("summary: 5/5 ok, 5 attempts"),
        "{stdout}"
    );
    assert!(lines[5].contains("p99"), "{stdout}");
    assert_eq!(
        served(&server, |s| s.short_requests_served, 5).await,
        5,
        "the server counts a request once its response is written"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_json_on_the_long_link() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let to = server.long_addr().expect("long").to_string();
    let out = run([
        "send",
        "--to",
        &to,
        "--channel",
        "long",
        "--count",
        "20",
        "--concurrency",
        "8",
        "--json",
        "--profile",
        "mars",
    ]
    .map(String::from)
    .to_vec())
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (tasks, report) = ndjson(&out.stdout);
    assert_eq!(report["successes"], 20);
    assert_eq!(report["failures"], 0);
    assert_eq!(report["channel"], "long");
    assert_eq!(tasks.len(), 20);
    assert!(tasks.iter().all(|t| t["ok"] == true && t["type"] == "task"));
    assert!(report["latency_ms"]["p95"].as_f64().is_some());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_reports_failures_with_a_nonzero_exit() {
    // A port nobody listens on: every connect is refused. (Mars profile:
    // stn's default would park the failed tasks until their deadline.)
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let to = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let out = run([
        "send",
        "--to",
        &to,
        "--count",
        "2",
        "--retry",
        "0",
        "--profile",
        "mars",
    ]
    .map(String::from)
    .to_vec())
    .await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" error ")).count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("summary: 0/2 ok"), "{stdout}");
}

/// `--json` output: one object per task, then the summary.
fn ndjson(stdout: &[u8]) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut objects: Vec<serde_json::Value> = String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let summary = objects.pop().expect("a summary");
    assert_eq!(summary["type"], "summary", "{summary}");
    (objects, summary)
}

/// `stn` with `args`, without a server (argument errors only).
fn run_blocking(args: &[&str]) -> std::process::Output {
    stn().args(args).output().expect("run stn")
}

/// What a run must never do on any input: die of a signal (an abort is
/// SIGABRT, exit 134 from a shell) or panic.
fn assert_no_abort(out: &std::process::Output, args: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some(),
        "{args:?} died of a signal: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
}

#[test]
fn oversized_and_malformed_arguments_are_refused_with_a_clear_error() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["send", "--to", "127.0.0.1:9", "--body-size", "99999999999"],
            "--body-size",
        ),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--count",
                "18446744073709551615",
            ],
            "--count",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--concurrency", "0"],
            "--concurrency",
        ),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--concurrency",
                "99999999999",
            ],
            "--concurrency",
        ),
        (&["send", "--to", "127.0.0.1:80:90"], "127.0.0.1:80:90"),
        (&["send", "--to", "localhost"], "has no port"),
        (&["send", "--to", "a b:1"], "a b:1"),
        (
            &["send", "--to", "127.0.0.1:9", "--timeout", "0s"],
            "out of range",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--timeout", "5 parsecs"],
            "--timeout",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--timeout", "1e999"],
            "--timeout",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--client-version", "v2"],
            "--client-version",
        ),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--body-file",
                "/nonexistent/stn-body",
            ],
            "/nonexistent/stn-body",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--body-file", "/dev/zero"],
            "larger than",
        ),
    ];
    for (args, needle) in cases {
        let out = run_blocking(args);
        assert_no_abort(&out, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: no {needle:?} in {stderr}"
        );
    }
}

#[test]
fn usage_errors_exit_2_with_the_engines_limits() {
    let cases: &[(&[&str], &str)] = &[
        // The engine's limits, not the CLI's own: 600 s and 30 retries.
        (
            &["send", "--to", "127.0.0.1:9", "--timeout", "11m"],
            "at most 600 s",
        ),
        (&["send", "--to", "127.0.0.1:9", "--retry", "99"], "0..=30"),
        (
            &["send", "--to", "http://127.0.0.1:18080"],
            "a URL is not an endpoint",
        ),
        (&["send", "--to", "127.0.0.1:0"], "port 0"),
        (
            &["send", "--to", "127.0.0.1:9", "--channel", "both"],
            "--long-port",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "-H", "Bad Name:1"],
            "Bad Name",
        ),
        (&["serve", "--push-every-ms", "0"], "--push-every-ms"),
    ];
    for (args, needle) in cases {
        let out = run_blocking(args);
        assert_no_abort(&out, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: no {needle:?} in {stderr}"
        );
    }
}

#[test]
fn a_runtime_error_is_one_chain_without_a_backtrace() {
    // A missing file is the user's, not a bug: no backtrace even under
    // RUST_BACKTRACE=1, the whole chain on one line, exit 1.
    let out = stn()
        .args([
            "send",
            "--to",
            "127.0.0.1:9",
            "--body-file",
            "/nonexistent/stn-body",
        ])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run stn");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("stn: error: opening --body-file /nonexistent/stn-body: "),
        "{stderr}"
    );
    assert!(!stderr.contains("backtrace"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_body_headers_and_json_errors() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let short = server.short_addr().expect("short").to_string();
    let long_port = server.long_addr().expect("long").port().to_string();
    // --print-body and -H on the short link, --channel both with a long port.
    let stdout = run_ok(&[
        "send",
        "--to",
        &short,
        "--long-port",
        &long_port,
        "--channel",
        "both",
        "--body-size",
        "5",
        "--print-body",
        "-H",
        "Connection: Keep-Alive",
        "-H",
        "X-Trace:1",
    ])
    .await;
    assert!(stdout.contains("  body (5 bytes): 0:xxx"), "{stdout}");
    assert!(stdout.contains("summary: 1/1 ok"), "{stdout}");

    // A 404 in JSON: its kind, status, Mars code and body.
    let out = run([
        "send",
        "--to",
        &short,
        "--cgi",
        "/nope",
        "--json",
        "--print-body",
    ]
    .map(String::from)
    .to_vec())
    .await;
    assert_eq!(out.status.code(), Some(1));
    let (tasks, summary) = ndjson(&out.stdout);
    let t = &tasks[0];
    assert_eq!(t["ok"], false, "{t}");
    assert_eq!(t["error_kind"], "http", "{t}");
    assert_eq!(t["status"], 404, "{t}");
    assert_eq!(t["mars_code"]["type"], 5, "{t}");
    assert_eq!(t["mars_code"]["code"], 404, "{t}");
    assert_eq!(t["addr"], short.as_str(), "{t}");
    assert!(
        t["body"]
            .as_str()
            .is_some_and(|b| b.starts_with("no CGI at /nope")),
        "{t}"
    );
    assert_eq!(summary["failures"], 1);
    // Numbers are rounded: no float noise in the durations.
    let d = t["duration_ms"].as_f64().expect("a number");
    assert_eq!((d * 1e3).round() / 1e3, d);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_host_is_named_once() {
    let out = run(
        ["send", "--to", "no-such-host.invalid:18080", "--retry", "0"]
            .map(String::from)
            .to_vec(),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("could not resolve no-such-host.invalid: "),
        "{stdout}"
    );
    // Printed once: the task line, not also a log line.
    assert!(!stderr.contains("no-such-host"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_takes_host_names_and_the_long_link_client_version() {
    let server = Server::start(ServerConfig {
        client_version: 200,
        ..ServerConfig::default()
    })
    .await
    .expect("server");
    let short = format!("localhost:{}", server.short_addr().expect("short").port());
    let long = format!("localhost:{}", server.long_addr().expect("long").port());
    let stdout = run_ok(&["send", "--to", &short, "--count", "2", "--timeout", "10s"]).await;
    assert!(stdout.contains("summary: 2/2 ok"), "{stdout}");

    // And the long link by host name, at the server's version 200 (the
    // Mars sample's; `mars_interop` calls the sample itself).
    let stdout = run_ok(&[
        "send",
        "--to",
        &long,
        "--channel",
        "long",
        "--client-version",
        "200",
        "--json",
    ])
    .await;
    let (_, report) = ndjson(stdout.as_bytes());
    assert_eq!(report["successes"], 1, "{report}");
    assert_eq!(served(&server, |s| s.long_requests_served, 1).await, 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_link_to_the_http_port_fails_with_a_protocol_error() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let http = server.short_addr().expect("short").to_string();
    let out = run(["send", "--to", &http, "--channel", "long", "--retry", "0"]
        .map(String::from)
        .to_vec())
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    // The HTTP server refuses the frame at once (400); the client reads
    // "HTTP/1.1 …" as a frame header and says so, instead of waiting for
    // its heartbeat to time out.
    assert!(stdout.contains("long-link frame"), "{stdout}");
    assert!(!stdout.contains("heartbeat"), "{stdout}");
    server.shutdown().await;
}

#[test]
fn address_in_use_is_named_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = run_blocking(&["serve", "--no-long", "--short", &addr]);
    assert_no_abort(&out, &["serve"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    assert_eq!(
        stderr.matches("Address already in use").count(),
        1,
        "{stderr}"
    );
}
