//! `stn send` end to end against an in-process server.

use std::process::Command;
use std::time::Duration;

use stn_tokio::server::{Server, ServerConfig};

fn stn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stn"))
}

async fn run(args: Vec<String>) -> std::process::Output {
    let out = tokio::task::spawn_blocking(move || stn().args(&args).output().expect("run stn"));
    tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("stn send finishes")
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_prints_lines_and_a_summary() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let to = server.short_addr().expect("short").to_string();
    let out = run([
        "send",
        "--to",
        &to,
        "--count",
        "5",
        "--concurrency",
        "2",
        "--body-size",
        "32",
    ]
    .map(String::from)
    .to_vec())
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert_eq!(server.stats().short_requests_served, 5);
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
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["successes"], 20);
    assert_eq!(report["failures"], 0);
    assert_eq!(report["channel"], "long");
    assert_eq!(report["tasks"].as_array().map(Vec::len), Some(20));
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
