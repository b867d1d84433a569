//! Interop with the real Tencent Mars, from captures of its traffic
//! (stn-testkit's `fixtures/mars/`, see its README): stn's reference server fed the
//! Mars client's bytes answers what Mars accepted; the long-link codec
//! round-trips every captured frame; stn's short-link head is Mars's. The
//! client-side tests (stn's client against the sample server's replies) are
//! in stn-testkit's `client_suite/mars.rs`, run on both adapters; here `stn send` calls
//! the scripted sample's hello2 on both links.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use bytes::BytesMut;
use stn_server::{Server, ServerConfig};
use stn_tokio::proto::codec::longlink::{encode, CodecConfig, Frame, FrameDecoder, PUSH_SEQ};
use stn_tokio::proto::{Channel, Task};
use stn_tokio::Client;

macro_rules! fixture {
    ($name:literal) => {
        stn_testkit::mars_sample::capture($name)
    };
}

/// Every long-link stream captured, with the client version its frames carry.
const LONG_STREAMS: &[(&str, u32, &[u8])] = &[
    ("02-a1 c2s", 200, fixture!("02-a1-v200-long-c2s.bin")),
    ("02-a1 s2c", 200, fixture!("02-a1-v200-long-s2c.bin")),
    ("03-a2 c2s", 0, fixture!("03-a2-v0-long-c2s.bin")),
    ("03-a2 s2c", 0, fixture!("03-a2-v0-long-s2c.bin")),
    ("06-b1 c2s", 200, fixture!("06-b1-pb-long-c2s.bin")),
    ("06-b1 s2c", 200, fixture!("06-b1-pb-long-s2c.bin")),
    ("09-b2 c2s", 200, fixture!("09-b2-pb-identify-long-c2s.bin")),
    ("09-b2 s2c", 200, fixture!("09-b2-pb-identify-long-s2c.bin")),
    ("13-c2 c2s", 0, fixture!("13-c2-stn-long-long-c2s.bin")),
    ("15-c3 c2s", 200, fixture!("15-c3-replay-v200-long-c2s.bin")),
    ("15-c3 s2c", 200, fixture!("15-c3-replay-v200-long-s2c.bin")),
    ("17-c3 c2s", 200, fixture!("17-c3-replay-v200-long-c2s.bin")),
    ("17-c3 s2c", 200, fixture!("17-c3-replay-v200-long-s2c.bin")),
];

fn codec(client_version: u32) -> CodecConfig {
    CodecConfig {
        client_version,
        ..CodecConfig::default()
    }
}

/// Every frame of a captured stream (which must end on a frame boundary).
fn frames(wire: &[u8], client_version: u32) -> Vec<Frame> {
    let mut decoder = FrameDecoder::new(codec(client_version));
    let mut input = wire;
    let mut out = Vec::new();
    while let Some(frame) = decoder.decode(&mut input).expect("a valid frame") {
        out.push(frame);
    }
    assert!(input.is_empty());
    out
}

#[test]
fn the_codec_round_trips_every_captured_frame() {
    let mut count = 0;
    for &(name, version, wire) in LONG_STREAMS {
        let frames = frames(wire, version);
        let mut again = BytesMut::new();
        for frame in &frames {
            encode(frame, version, &mut again).expect("encode");
        }
        assert_eq!(&again[..], wire, "{name}");
        count += frames.len();
    }
    // The 39 frames of these streams (as the captures' index lists them).
    assert_eq!(count, 39);
    // The wire facts the manifest lists.
    let hello_and_identify = frames(fixture!("02-a1-v200-long-c2s.bin"), 200);
    assert_eq!(
        hello_and_identify
            .iter()
            .map(|f| (f.cmd_id, f.seq))
            .collect::<Vec<_>>(),
        [(8, 2), (7, 0xFFFF_FFFE), (6, 0xFFFF_FFFF)]
    );
}

/// Writes `request` to `addr` and reads until the peer closes or `want`
/// bytes arrived (bounded by a read timeout).
fn exchange(addr: SocketAddr, request: &[u8], want: usize) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request).expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < want {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read after {} bytes: {e}", got.len()),
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_answers_the_mars_client_as_mars_accepted() {
    for (version, short_c2s, short_s2c, long_c2s, long_s2c) in [
        (
            200,
            fixture!("01-a1-v200-short-c2s.bin"),
            fixture!("01-a1-v200-short-s2c.bin"),
            fixture!("02-a1-v200-long-c2s.bin"),
            fixture!("02-a1-v200-long-s2c.bin"),
        ),
        (
            0,
            fixture!("04-a2-v0-short-c2s.bin"),
            fixture!("04-a2-v0-short-s2c.bin"),
            fixture!("03-a2-v0-long-c2s.bin"),
            fixture!("03-a2-v0-long-s2c.bin"),
        ),
    ] {
        let server = Server::start(ServerConfig {
            client_version: version,
            ..ServerConfig::default()
        })
        .await
        .expect("server");
        let short = server.short_addr().expect("short");
        let long = server.long_addr().expect("long");
        // Short link: the same bytes Mars got (it sent `Connection: close`,
        // so the server closes after answering).
        let answer = tokio::task::spawn_blocking(move || exchange(short, short_c2s, usize::MAX))
            .await
            .expect("join");
        assert_eq!(answer, short_s2c, "v{version} short");

        // Long link: hello, identify and noop in one write; the captured
        // answers without the pushes (that server pushed every 2 s).
        let expected: Vec<Frame> = frames(long_s2c, version)
            .into_iter()
            .filter(|f| f.seq != PUSH_SEQ)
            .collect();
        let mut expected_wire = BytesMut::new();
        for f in &expected {
            encode(f, version, &mut expected_wire).expect("encode");
        }
        let want = expected_wire.len();
        let answer = tokio::task::spawn_blocking(move || exchange(long, long_c2s, want))
            .await
            .expect("join");
        assert_eq!(frames(&answer, version), expected, "v{version} long");
        assert_eq!(answer, &expected_wire[..]);
        server.shutdown().await;
    }
}

/// Accepts one connection on `listener` and returns its request head (up to
/// the empty line) after answering `200` with an empty body.
fn capture_head(listener: TcpListener) -> String {
    let (mut stream, _) = listener.accept().expect("accept");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() < 64 * 1024 {
        let n = stream.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .expect("answer");
    let end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    String::from_utf8_lossy(&got[..end]).into_owned()
}

#[tokio::test]
async fn the_short_link_head_is_the_one_mars_sends() {
    // Mars's head for its 28-byte body to host `mars-short.lab`, verbatim.
    let mars = fixture!("01-a1-v200-short-c2s.bin");
    let mars_head_end = mars
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head")
        + 4;
    let (mars_head, mars_body) = mars.split_at(mars_head_end);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::task::spawn_blocking(move || capture_head(listener));
    // A host name with a port (which resolves here, unlike Mars's lab name):
    // `Host` carries the name alone, as Mars's does, and every other line is
    // Mars's, in Mars's order.
    let client = Client::builder()
        .endpoint(format!("localhost:{port}"))
        .build()
        .expect("build");
    let task = Task::new(8, "/mars/hello2", mars_body.to_vec())
        .channel(Channel::Short)
        .retry_count(0);
    client.send(task).await.expect("200");
    let head = server.await.expect("join");
    let expected = String::from_utf8_lossy(mars_head)
        .replace("\r\nHost: mars-short.lab\r\n", "\r\nHost: localhost\r\n");
    assert_eq!(head, expected);
    client.shutdown().await;
}

/// `stn` with `args`, bounded: its exit status and stdout.
fn stn(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stn"))
        .args(args)
        .output()
        .expect("run stn");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn stn_send_calls_the_sample_hello2_with_its_version_and_a_protobuf_body() {
    let dir = std::env::temp_dir().join(format!("stn-mars-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let body = dir.join("hello-request.pb");
    std::fs::write(&body, stn_testkit::mars_sample::hello_request()).expect("body file");
    let body = body.to_string_lossy().into_owned();

    let (web, _web) = stn_testkit::mars_sample::scripted(stn_testkit::mars_sample::sample_web);
    let web = web.to_string();
    let (ok, out) = stn(&["send", "--to", &web, "--body-file", &body, "--retry", "0"]);
    assert!(ok, "{out}");
    assert!(out.contains("summary: 1/1 ok"), "{out}");

    let (reads, _) = std::sync::mpsc::channel();
    let (proxy, _proxy) =
        stn_testkit::mars_sample::scripted(stn_testkit::mars_sample::sample_proxy(reads, false));
    let proxy = proxy.to_string();
    let long = |version: &'static str| {
        stn(&[
            "send",
            "--to",
            &proxy,
            "--channel",
            "long",
            "--client-version",
            version,
            "--body-file",
            &body,
            "--retry",
            "0",
            "--timeout",
            "5s",
        ])
    };
    let (ok, out) = long("200");
    assert!(ok, "{out}");
    assert!(out.contains("summary: 1/1 ok"), "{out}");
    // The default version 0 is what the sample refuses (it never answers).
    let (ok, out) = long("0");
    assert!(!ok, "{out}");
    std::fs::remove_dir_all(&dir).ok();
}
