//! `stn serve --tls-self-signed` and `stn send --tls` end to end: both
//! links over TLS with the CA the server wrote, and a wrong server name
//! refused with an error that names it.

use std::process::Stdio;

mod cli_support;
use cli_support::{serve, stn};

/// Runs `stn send` with `args`; its exit status and its output (both streams).
fn send(args: &[&str]) -> (bool, String) {
    let out = stn()
        .arg("send")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run stn send");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn serve_and_send_over_tls() {
    let dir = std::env::temp_dir().join(format!("stn-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ca = dir.join("ca.pem");
    let ca_arg = ca.to_str().expect("utf-8 path").to_owned();
    let served = serve(&[
        "--tls-self-signed",
        "--tls-ca-out",
        &ca_arg,
        "--tls-early-data",
    ]);
    let (long, short) = (served.long.to_string(), served.short.to_string());
    assert!(ca.exists(), "the CA is written before the server listens");

    let (ok, out) = send(&["--to", &short, "--tls", "--ca", &ca_arg, "--count", "3"]);
    assert!(ok, "{out}");
    assert!(out.contains("3/3 ok"), "{out}");
    // A connection per task: the first pays the full handshake and brings
    // two session tickets; the next two resume and send their request early.
    let (ok, out) = send(&[
        "--to",
        &short,
        "--tls",
        "--ca",
        &ca_arg,
        "--early-data",
        "--count",
        "3",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("3/3 ok"), "{out}");
    assert!(
        out.contains("tls: 3 handshakes, 2 resumed, 0 failed, 2 with early data (2 accepted)"),
        "{out}"
    );
    let (ok, out) = send(&[
        "--to",
        &long,
        "--channel",
        "long",
        "--tls",
        "--ca",
        &ca_arg,
        "--count",
        "3",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("3/3 ok"), "{out}");
    let (ok, out) = send(&[
        "--to",
        &short,
        "--tls",
        "--ca",
        &ca_arg,
        "--server-name",
        "wrong.example",
    ]);
    assert!(!ok, "{out}");
    assert!(out.contains("not valid for the server name"), "{out}");
    let (ok, out) = send(&["--to", &short]);
    assert!(!ok, "plaintext to a TLS port fails: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
