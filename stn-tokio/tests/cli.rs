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
    let response = stn_proto::codec::http::decode_response(&response, Default::default())
        .expect("a valid response");
    assert_eq!(response.into_result().unwrap(), &b"Hello"[..]);
}
