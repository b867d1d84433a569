//! The Mars sample server, scripted from its captured replies
//! (`fixtures/mars/`): a loopback server per link plays the sample's
//! part the way the sample does it (version 200 required, one frame decoded
//! per socket read, the rest of that read dropped) and answers with the
//! captured bytes. Shared by stn-cli's `mars_interop` and the client suite.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use bytes::BytesMut;
use stn_driver::proto::codec::longlink::{encode, CodecConfig, Frame, FrameDecoder, NOOP_CMD_ID};

macro_rules! capture {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!("../../fixtures/mars/", $name)) as &[u8],
        )
    };
}

/// Every captured stream in `fixtures/mars/` (see its README), by file name.
pub const CAPTURES: &[(&str, &[u8])] = &[
    capture!("01-a1-v200-short-c2s.bin"),
    capture!("01-a1-v200-short-s2c.bin"),
    capture!("02-a1-v200-long-c2s.bin"),
    capture!("02-a1-v200-long-s2c.bin"),
    capture!("03-a2-v0-long-c2s.bin"),
    capture!("03-a2-v0-long-s2c.bin"),
    capture!("04-a2-v0-short-c2s.bin"),
    capture!("04-a2-v0-short-s2c.bin"),
    capture!("05-b1-pb-short-c2s.bin"),
    capture!("05-b1-pb-short-s2c.bin"),
    capture!("06-b1-pb-long-c2s.bin"),
    capture!("06-b1-pb-long-s2c.bin"),
    capture!("09-b2-pb-identify-long-c2s.bin"),
    capture!("09-b2-pb-identify-long-s2c.bin"),
    capture!("13-c2-stn-long-long-c2s.bin"),
    capture!("15-c3-replay-v200-long-c2s.bin"),
    capture!("15-c3-replay-v200-long-s2c.bin"),
    capture!("17-c3-replay-v200-long-c2s.bin"),
    capture!("17-c3-replay-v200-long-s2c.bin"),
];

/// The captured stream `fixtures/mars/<name>`. In a `const` an unknown name
/// is a compile error; elsewhere it panics.
pub const fn capture(name: &str) -> &'static [u8] {
    let mut i = 0;
    while i < CAPTURES.len() {
        if same(CAPTURES[i].0.as_bytes(), name.as_bytes()) {
            return CAPTURES[i].1;
        }
        i += 1;
    }
    panic!("no such capture in fixtures/mars")
}

/// Byte-string equality in a `const fn`.
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The sample's long-link client version (hard-coded in its proxy).
pub const SAMPLE_VERSION: u32 = 200;
/// How long a scripted server waits on a silent client before giving up.
const SCRIPT_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections a scripted server serves (a client that retries).
const SCRIPT_CONNECTIONS: usize = 4;

/// The body Mars's sample client sends to hello2: a protobuf `HelloRequest`
/// (`user`, `text`), taken from the captured request.
pub fn hello_request() -> Vec<u8> {
    let wire = capture("05-b1-pb-short-c2s.bin");
    let end = wire
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head")
        + 4;
    wire[end..].to_vec()
}

/// The sample's answer body: `HelloResponse{retcode: 0, errmsg: "hello mars"}`.
pub const HELLO_RESPONSE: &[u8] = b"\x08\x00\x12\x0ahello mars";

/// The long-link codec settings of the sample (client version 200).
pub fn codec() -> CodecConfig {
    CodecConfig {
        client_version: SAMPLE_VERSION,
        ..CodecConfig::default()
    }
}

/// A scripted server on 127.0.0.1 running `serve` per connection on a thread;
/// the thread ends after [`SCRIPT_CONNECTIONS`] or when the listener errors.
pub fn scripted(
    serve: impl Fn(TcpStream) + Send + 'static,
) -> (SocketAddr, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = thread::spawn(move || {
        for stream in listener.incoming().take(SCRIPT_CONNECTIONS) {
            let Ok(stream) = stream else { return };
            stream
                .set_read_timeout(Some(SCRIPT_READ_TIMEOUT))
                .expect("timeout");
            serve(stream);
        }
    });
    (addr, handle)
}

/// The sample web server's part: read one request, answer with the
/// captured `200` (chunked and with a Content-length, as the JDK server
/// wrote it), close.
pub fn sample_web(mut stream: TcpStream) {
    let reply = capture("05-b1-pb-short-s2c.bin");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                break;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let _ = stream.write_all(reply);
}

/// What the scripted sample proxy saw on one read.
#[derive(Debug)]
pub struct ProxyRead {
    /// The frame it decoded (the first of the read).
    pub frame: Frame,
    /// Whole frames behind it in the same read, which the sample drops.
    pub dropped: usize,
}

/// The sample proxy's part: answer hello (cmd 8) with the captured reply
/// frame (its body, the task's seq), echo noops, report every read. With
/// `one_frame_per_read` it decodes only the first frame of each socket read
/// and drops the rest, as the real sample does; without, it answers every
/// frame (a proxy with length-based framing).
pub fn sample_proxy(
    reads: mpsc::Sender<ProxyRead>,
    one_frame_per_read: bool,
) -> impl Fn(TcpStream) + Send + 'static {
    let captured = {
        let mut input = capture("06-b1-pb-long-s2c.bin");
        FrameDecoder::new(codec())
            .decode(&mut input)
            .expect("valid capture")
            .expect("a hello reply")
    };
    move |mut stream| {
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut input = &buf[..n];
            // A fresh decoder per read: the sample keeps no partial frame.
            let mut decoder = FrameDecoder::new(codec());
            let mut frames = Vec::new();
            // The sample throws on a wrong version and answers nothing.
            while let Ok(Some(frame)) = decoder.decode(&mut input) {
                frames.push(frame);
            }
            let answered = if one_frame_per_read { 1 } else { frames.len() };
            let dropped = frames.len().saturating_sub(answered);
            for frame in frames.into_iter().take(answered) {
                let answer = match frame.cmd_id {
                    8 => Some(Frame::new(8, frame.seq, captured.body.clone())),
                    NOOP_CMD_ID => Some(frame.clone()),
                    _ => None,
                };
                let _ = reads.send(ProxyRead { frame, dropped });
                if let Some(answer) = answer {
                    let mut out = BytesMut::new();
                    encode(&answer, SAMPLE_VERSION, &mut out).expect("encode");
                    if stream.write_all(&out).is_err() {
                        return;
                    }
                }
            }
        }
    }
}
