//! The `stn` binary end to end: argument errors, and `stn serve` answering a
//! short-link request on the ports it logs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

mod cli_support;
use cli_support::{serve, stn};

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

#[test]
fn serve_answers_a_short_link_request() {
    let served = serve(&["--response-size", "5", "--delay-ms", "1"]);

    let mut conn = TcpStream::connect(served.short).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(
        b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
    )
    .unwrap();
    let mut response = Vec::new();
    conn.read_to_end(&mut response).expect("response");
    let response = stn_tokio::proto::codec::http::decode_response(&response, Default::default())
        .expect("a valid response");
    assert_eq!(response.into_result().unwrap(), &b"Hello"[..]);
}

#[cfg(unix)]
#[test]
fn sigterm_shuts_the_server_down_like_ctrl_c() {
    let (mut child, lines) = cli_support::spawn_serve(&[]);
    let running = cli_support::wait_for_line(&lines, "stn server running");
    // Addresses print as addresses, not as Rust's `Some(..)`.
    assert!(!running.contains("Some("), "{running}");
    assert!(running.contains("long=127.0.0.1:"), "{running}");
    let pid = child.0.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let stopping = cli_support::wait_for_line(&lines, "shutting down");
    assert!(stopping.contains("signal=\"SIGTERM\""), "{stopping}");
    let status = child.0.wait().expect("exits");
    assert!(status.success(), "graceful: exit 0, not killed ({status})");
}
