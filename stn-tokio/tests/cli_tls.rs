//! `stn serve --tls-self-signed` and `stn send --tls` end to end: both
//! links over TLS with the CA the server wrote, and a wrong server name
//! refused with an error that names it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn stn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stn"))
}

/// Kills the child even if an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    let mut child = KillOnDrop(
        stn()
            .args(["serve", "--long", "127.0.0.1:0", "--short", "127.0.0.1:0"])
            .args(["--tls-self-signed", "--tls-ca-out", &ca_arg])
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn stn serve"),
    );
    // Both bound addresses from the log, read on a thread so the wait is bounded.
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            for link in ["long", "short"] {
                if line.contains(&format!("{link} link listening")) {
                    let addr = line
                        .rsplit("addr=")
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_owned();
                    let _ = tx.send((link, addr));
                }
            }
        }
    });
    let mut long = None;
    let mut short = None;
    for _ in 0..2 {
        let (link, addr) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("stn serve logs its addresses");
        let addr: SocketAddr = addr.parse().expect("an address");
        match link {
            "long" => long = Some(addr.to_string()),
            _ => short = Some(addr.to_string()),
        }
    }
    let (long, short) = (long.expect("long"), short.expect("short"));
    assert!(ca.exists(), "the CA is written before the server listens");

    let (ok, out) = send(&["--to", &short, "--tls", "--ca", &ca_arg, "--count", "3"]);
    assert!(ok, "{out}");
    assert!(out.contains("3/3 ok"), "{out}");
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
