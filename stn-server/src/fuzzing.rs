//! Fuzz target bodies for the reference server's input paths, shared by the
//! cargo-fuzz targets in `fuzz/` and the stable replay test
//! (`stn_proto::fuzz_corpus`). Built only under `cfg(fuzzing)` (cargo-fuzz sets it) and in
//! this crate's tests.
//!
//! Each body runs the server's own code on the fuzzer's bytes, without
//! sockets, and **asserts oracles**:
//!
//! | target | code | oracles (beyond "no panic") |
//! |---|---|---|
//! | [`http_request`] | the short link's `RequestParser` | what the server buffers never exceeds head cap + body cap (the parser's `wanted` and the unparsed head stay under the caps); whole / byte-at-a-time / random chunks agree; a request's body is its `Content-Length`; errors map to 400/411/413/431/505 only; a parsed request re-serialized parses back to itself |
//! | [`long_input`] | the long link's `FrameReader`, `classify` and `answer` (the whole input path of a connection but the socket) | buffered bytes stay under the largest valid frame; whole / byte-at-a-time / random chunks agree; every frame re-encodes and decodes to itself; identify, noop and hello answers carry the request's cmd id and seq and the documented bodies; nothing is answered under `NeverRespond`; a decode error ends the stream |

use stn_proto::codec::longlink::{self, CodecConfig, Frame, FrameDecoder, HEADER_LEN};
use stn_proto::codec::MarsCodec;
// What a target is and the corpus replay: shared by the three crates
// with fuzz targets.
pub use stn_proto::fuzz_corpus::Target;

use super::frames::{FrameError, FrameReader};
use super::long::{answer, classify, FrameKind};
use super::request::{Request, RequestError, RequestLimits, RequestParser, Version};
use super::{
    feed_chunks, hello_response_body, identify_response_body, Fault, DEFAULT_HELLO_CMD_ID,
    IDENTIFY_OK_PREFIX,
};

/// Every server fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "http_request",
        run: http_request,
        seeds: http_seeds,
    },
    Target {
        name: "long_input",
        run: long_input,
        seeds: long_seeds,
    },
];

stn_proto::corpus_tests!(super::TARGETS);

/// Splits a fixed-size prefix off `data`, zero-padded when `data` is
/// shorter, so every byte string is a valid input.
fn split_prefix<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let n = N.min(data.len());
    let mut prefix = [0u8; N];
    prefix[..n].copy_from_slice(&data[..n]);
    (prefix, &data[n..])
}

/// Cuts `data` into chunks of 1..=64 bytes chosen by a xorshift PRNG seeded
/// from the input (deterministic per input).
fn random_chunks(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(seed);
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let n = 1 + (state % 64) as usize;
        let (head, tail) = rest.split_at(n.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

// ---------------------------------------------------------------- short link

/// The short link's request parser on raw bytes. Input: a 4-byte prefix
/// (head cap selector, header count cap, body cap selector, chunking seed),
/// then the byte stream a client sends.
pub fn http_request(data: &[u8]) {
    let (prefix, wire) = split_prefix::<4>(data);
    let limits = RequestLimits {
        max_head_len: 16 + usize::from(prefix[0]) * 8,
        max_headers: 1 + usize::from(prefix[1] % 16),
        max_body_len: usize::from(prefix[2]) * 4,
    };
    let whole = parse_stream(limits, &[wire]);
    let bytewise: Vec<&[u8]> = wire.chunks(1).collect();
    assert_eq!(parse_stream(limits, &bytewise), whole, "byte-at-a-time");
    assert_eq!(
        parse_stream(limits, &random_chunks(wire, prefix[3])),
        whole,
        "random chunks"
    );
    let (requests, error) = whole;
    for request in &requests {
        check_request(request, limits);
    }
    if let Some(err) = error {
        assert!(
            matches!(err.status(), 400 | 411 | 413 | 431 | 505),
            "{err}: status {}",
            err.status()
        );
    }
}

/// Feeds `chunks` as a connection would, checking the memory bound after
/// every step; returns the requests and the error that ended the stream.
fn parse_stream(limits: RequestLimits, chunks: &[&[u8]]) -> (Vec<Request>, Option<RequestError>) {
    let parser = std::cell::RefCell::new(RequestParser::new(limits));
    feed_chunks(
        chunks,
        |buf| parser.borrow_mut().parse(buf),
        |buf| {
            // Waiting for more: the server grows its buffer toward `wanted`
            // only, so this is what it can be made to hold.
            let parser = parser.borrow();
            let wanted = parser.wanted(buf);
            assert!(
                wanted <= limits.max_head_len + limits.max_body_len,
                "wants {wanted} bytes, over the caps {limits:?}"
            );
            if !parser.has_head() {
                assert!(
                    buf.len() < limits.max_head_len,
                    "head over its cap buffered"
                );
            }
        },
    )
}

fn check_request(request: &Request, limits: RequestLimits) {
    let declared = request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse::<usize>().unwrap_or(usize::MAX));
    assert_eq!(
        request.body.len(),
        declared,
        "body is not its Content-Length"
    );
    assert!(request.body.len() <= limits.max_body_len);
    assert!(request.headers.len() <= limits.max_headers);
    let path = request.path();
    assert!(path.starts_with('/') || path == "*", "path {path:?}");
    // Re-serialized, it parses back to itself.
    let version = match request.version {
        Version::Http10 => "HTTP/1.0",
        Version::Http11 => "HTTP/1.1",
    };
    let mut wire = format!("{} {} {version}\r\n", request.method, request.target).into_bytes();
    for (name, value) in &request.headers {
        wire.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    wire.extend_from_slice(b"\r\n");
    wire.extend_from_slice(&request.body);
    let roomy = RequestLimits {
        max_head_len: wire.len() + 1,
        ..limits
    };
    let (again, err) = parse_stream(roomy, &[&wire]);
    assert_eq!(err, None, "re-serialized request refused");
    assert_eq!(again.as_slice(), std::slice::from_ref(request));
}

fn http_seeds() -> Vec<(String, Vec<u8>)> {
    // Prefix: head cap 16 + 8*60 = 496, 8 headers, body cap 256, seed.
    let with = |name: &str, wire: &[u8]| {
        let mut data = vec![60, 7, 64, name.len() as u8];
        data.extend_from_slice(wire);
        (name.to_owned(), data)
    };
    vec![
        with(
            "post",
            b"POST /mars/hello2 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        ),
        with(
            "pipelined",
            b"POST /a?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET http://h:1/p HTTP/1.0\nConnection: keep-alive\n\nGET / HTTP/1.0\r\n\r\n",
        ),
        with(
            "expect_continue",
            b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        ),
        with(
            "chunked",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        ),
        with("huge_length", b"POST /a HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"),
        with("partial_body", b"POST /a HTTP/1.1\r\nContent-Length: 200\r\n\r\nonly some"),
        with("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n"),
        with("long_head", &[b'A'; 600]),
    ]
}

// ----------------------------------------------------------------- long link

/// The long link's input path on raw bytes. Input: a 4-byte prefix (body
/// cap selector, head cap selector, fault, chunking seed), then the byte
/// stream a client sends.
pub fn long_input(data: &[u8]) {
    let (prefix, wire) = split_prefix::<4>(data);
    let codec = CodecConfig {
        client_version: 0,
        max_body_len: usize::from(prefix[0]) * 8,
        max_head_len: HEADER_LEN as u32 + u32::from(prefix[1] % 48),
    };
    let fault = Fault::ALL[usize::from(prefix[2]) % Fault::ALL.len()];
    let whole = read_stream(codec, fault, &[wire]);
    let bytewise: Vec<&[u8]> = wire.chunks(1).collect();
    assert_eq!(
        read_stream(codec, fault, &bytewise),
        whole,
        "byte-at-a-time"
    );
    assert_eq!(
        read_stream(codec, fault, &random_chunks(wire, prefix[3])),
        whole,
        "random chunks"
    );
    let (frames, _error) = whole;
    for (frame, reply) in &frames {
        check_frame(codec, fault, frame, reply.as_ref());
    }
}

type Replies = Vec<(Frame, Option<Frame>)>;

/// Feeds `chunks` through the server's reader, classifying and answering
/// each frame; checks the memory bound after every step.
fn read_stream(
    codec: CodecConfig,
    fault: Fault,
    chunks: &[&[u8]],
) -> (Replies, Option<FrameError>) {
    let reader = std::cell::RefCell::new(FrameReader::new(codec));
    feed_chunks(
        chunks,
        |buf| {
            let frame = reader.borrow_mut().next_frame(buf)?;
            Ok(frame.map(|frame| {
                let mars = MarsCodec::new(codec);
                let kind = classify(&frame, DEFAULT_HELLO_CMD_ID, fault, &mars);
                let reply = answer(&frame, kind, None, &mars);
                (frame, reply)
            }))
        },
        |buf| {
            let reader = reader.borrow();
            assert!(!reader.ready(buf), "a whole frame left behind");
            let wanted = reader.wanted(buf);
            assert!(wanted <= reader.max_frame().max(HEADER_LEN));
            assert!(
                buf.len() < wanted.max(HEADER_LEN),
                "{} bytes buffered waiting for a {wanted}-byte frame",
                buf.len()
            );
        },
    )
}

fn check_frame(codec: CodecConfig, fault: Fault, frame: &Frame, reply: Option<&Frame>) {
    assert!(frame.body.len() <= codec.max_body_len);
    let wire = longlink::encode_to_bytes(frame, codec.client_version).expect("encodable");
    let mut decoder = FrameDecoder::new(codec);
    let again = decoder.decode(&mut &wire[..]).expect("re-decodes");
    assert_eq!(again.as_ref(), Some(frame));
    let kind = classify(frame, DEFAULT_HELLO_CMD_ID, fault, &MarsCodec::new(codec));
    let Some(reply) = reply else {
        assert!(matches!(kind, FrameKind::Unanswered | FrameKind::Unknown));
        return;
    };
    assert_ne!(fault, Fault::NeverRespond);
    assert_eq!((reply.cmd_id, reply.seq), (frame.cmd_id, frame.seq));
    let expected = match kind {
        FrameKind::Identify => {
            assert!(reply.body.starts_with(IDENTIFY_OK_PREFIX));
            identify_response_body(&frame.body)
        }
        FrameKind::Noop | FrameKind::Hello => hello_response_body(&frame.body, None),
        FrameKind::Unanswered | FrameKind::Unknown => unreachable!("answered"),
    };
    assert_eq!(reply.body, expected);
}

fn long_seeds() -> Vec<(String, Vec<u8>)> {
    let frame = |cmd_id: u32, seq: u32, body: &[u8]| {
        longlink::encode_to_bytes(&Frame::new(cmd_id, seq, body.to_vec()), 0)
            .expect("small frame")
            .to_vec()
    };
    let with = |name: &str, fault: u8, wire: Vec<u8>| {
        // Body cap 8 * 128 = 1 KiB, head cap 20 + 8.
        let mut data = vec![128, 8, fault, name.len() as u8];
        data.extend_from_slice(&wire);
        (name.to_owned(), data)
    };
    let mut session = frame(6, 1, b"");
    session.extend(frame(DEFAULT_HELLO_CMD_ID, 2, b"hello"));
    session.extend(frame(8, longlink::IDENTIFY_SEQ, b"who"));
    session.extend(frame(12345, 3, b"unknown"));
    let mut extension = frame(DEFAULT_HELLO_CMD_ID, 4, b"ext");
    extension[3] = 24; // head_length 24: four extension bytes before the body
    extension.splice(20..20, *b"EXT!");
    let mut oversize = frame(DEFAULT_HELLO_CMD_ID, 5, b"");
    oversize[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut partial = frame(DEFAULT_HELLO_CMD_ID, 6, &[7u8; 900]);
    partial.truncate(500);
    vec![
        with("session", 0, session.clone()),
        with("session_never_respond", 1, session),
        with("extension_head", 0, extension),
        with("oversize_length", 0, oversize),
        with("partial_frame", 0, partial),
        with(
            "garbage",
            0,
            b"GARBAGE! this is not a frame\r\n\r\n".to_vec(),
        ),
    ]
}
