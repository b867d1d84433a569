//! The `stn` binary end to end: argument errors, and `stn serve` answering a
//! short-link request on the ports it logs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn stn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stn"))
}

#[test]
fn bad_arguments_are_refused() {
    for args in [
        &["serve", "--fault", "bogus"][..],
        &["serve", "--push-every-ms", "0"],
        &["serve", "--long", "not-an-address"],
    ] {
        let out = stn().args(args).output().expect("run stn");
        assert!(!out.status.success(), "stn {args:?} should fail");
        assert!(!out.stderr.is_empty(), "stn {args:?} explains why");
    }
    let out = stn().arg("--version").output().expect("run stn");
    assert!(out.status.success());
}

/// Kills the child even if an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_answers_a_short_link_request() {
    let mut child = KillOnDrop(
        stn()
            .args(["serve", "--long", "127.0.0.1:0", "--short", "127.0.0.1:0"])
            .args(["--response-size", "5", "--delay-ms", "1"])
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn stn serve"),
    );
    // The bound short-link address from the log, read on a thread so the
    // wait is bounded.
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if line.contains("short link listening") {
                let addr = line
                    .rsplit("addr=")
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let _ = tx.send(addr);
            }
        }
    });
    let addr: SocketAddr = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("stn serve logs its short-link address")
        .parse()
        .expect("an address");

    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(
        b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
    )
    .unwrap();
    let mut response = Vec::new();
    conn.read_to_end(&mut response).expect("response");
    let response = stn_proto::codec::http::decode_response(&response, Default::default())
        .expect("a valid response");
    assert_eq!(response.into_result().unwrap(), &b"Hello"[..]);
}
