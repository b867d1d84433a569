//! The long-link frame decoder target.

use bytes::BytesMut;

use super::{random_chunks, split_prefix};
use crate::codec::longlink::{
    encode, CodecConfig, DecodeError, Frame, FrameDecoder, DEFAULT_MAX_BODY, HEADER_LEN,
};

/// Input layout: an 8-byte prefix, then the received byte stream.
///
/// | bytes | meaning |
/// |---|---|
/// | 0..4 | `client_version`, big-endian |
/// | 4..6 | `max_body_len`, big-endian (`0xFFFF` = the 1 MiB default) |
/// | 6 | `max_head_len` |
/// | 7 | seed of the random chunking |
const PREFIX: usize = 8;

/// Decodes the stream whole, one byte at a time and in random chunks, and
/// checks:
/// - memory: [`FrameDecoder::buffered_len`] never exceeds the 20 header bytes
///   plus `max_body_len` (so never the head cap plus the body cap), and every
///   frame body respects the cap;
/// - chunking invariance: every chunking gives the same frames, the same
///   error and the same final partial-frame state;
/// - poisoning: after an error every call returns that error;
/// - round trip: the frames re-encode (within the cap) to bytes that decode
///   to the same frames, leaving nothing buffered.
pub fn longlink_decoder(data: &[u8]) {
    let (prefix, wire) = split_prefix::<PREFIX>(data);
    let config = config_from(&prefix);

    let whole = decode_all(config, [wire]);
    let bytewise = decode_all(config, wire.chunks(1));
    let chunked = decode_all(
        config,
        random_chunks(wire, u64::from(prefix[7]), 1 + usize::from(prefix[7] % 64)),
    );
    assert_eq!(whole, bytewise, "byte-at-a-time decoding differs");
    assert_eq!(whole, chunked, "chunked decoding differs");

    // Round trip of whatever decoded before any error.
    let mut reencoded = BytesMut::new();
    for frame in &whole.frames {
        config
            .encode(frame, &mut reencoded)
            .expect("a decoded frame fits the cap it was decoded under");
    }
    let again = decode_all(config, [&reencoded[..]]);
    assert_eq!(again.frames, whole.frames, "re-encoded frames differ");
    assert_eq!(again.error, None);
    assert_eq!((again.buffered, again.partial), (0, None));
}

/// What decoding one stream produced.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    frames: Vec<Frame>,
    error: Option<DecodeError>,
    buffered: usize,
    partial: Option<(u32, u32, usize, usize)>,
}

fn config_from(prefix: &[u8; PREFIX]) -> CodecConfig {
    let max_body = u16::from_be_bytes([prefix[4], prefix[5]]);
    CodecConfig {
        client_version: u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]),
        max_body_len: if max_body == u16::MAX {
            DEFAULT_MAX_BODY
        } else {
            usize::from(max_body)
        },
        max_head_len: u32::from(prefix[6]),
    }
}

fn decode_all<'a>(config: CodecConfig, chunks: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
    let head_cap = config.max_head_len.max(HEADER_LEN as u32) as usize;
    let bound = HEADER_LEN + config.max_body_len;
    let mut dec = FrameDecoder::new(config);
    let mut frames = Vec::new();
    let mut error = None;
    'outer: for chunk in chunks {
        let mut input = chunk;
        loop {
            let result = dec.decode(&mut input);
            assert!(dec.buffered_len() <= bound, "decoder holds too much");
            match result {
                Ok(Some(frame)) => {
                    assert!(frame.body.len() <= config.max_body_len);
                    frames.push(frame);
                }
                Ok(None) => {
                    assert!(input.is_empty(), "Ok(None) with input left");
                    break;
                }
                Err(err) => {
                    assert!(dec.is_poisoned());
                    assert_eq!(dec.error(), Some(&err));
                    assert_eq!(dec.partial(), None);
                    assert_eq!(dec.decode(&mut &b"more"[..]), Err(err.clone()));
                    error = Some(err);
                    break 'outer;
                }
            }
        }
        if let Some(p) = dec.partial() {
            assert!(dec.in_frame());
            assert!(HEADER_LEN <= p.received && p.received < p.total, "{p:?}");
            assert!(p.total <= head_cap + config.max_body_len, "{p:?}");
        }
    }
    Decoded {
        frames,
        error,
        buffered: dec.buffered_len(),
        partial: dec
            .partial()
            .map(|p| (p.cmd_id, p.seq, p.received, p.total)),
    }
}

/// Builds an input from a configuration and a byte stream.
fn input(client_version: u32, max_body: u16, max_head: u8, seed: u8, wire: &[u8]) -> Vec<u8> {
    let mut out = client_version.to_be_bytes().to_vec();
    out.extend_from_slice(&max_body.to_be_bytes());
    out.extend_from_slice(&[max_head, seed]);
    out.extend_from_slice(wire);
    out
}

fn frames(version: u32, frames: &[Frame]) -> Vec<u8> {
    let mut wire = BytesMut::new();
    for f in frames {
        encode(f, version, &mut wire).expect("small frame");
    }
    wire.to_vec()
}

fn raw_header(head_len: u32, version: u32, cmd_id: u32, seq: u32, body_len: u32) -> Vec<u8> {
    [head_len, version, cmd_id, seq, body_len]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect()
}

/// Seed inputs: valid streams (noop, push, several frames, header
/// extensions, a body at the cap, a partial frame) and each kind of error.
pub(super) fn seeds() -> Vec<(String, Vec<u8>)> {
    let hello = Frame::new(1001, 7, &b"hello"[..]);
    let push = Frame::new(10001, 0, vec![0xAB; 300]);
    let mut extended = raw_header(40, 0, 77, 5, 4);
    extended.extend_from_slice(&[0xEE; 20]);
    extended.extend_from_slice(b"body");
    extended.extend(frames(0, &[Frame::noop()]));
    let mut partial = frames(0, std::slice::from_ref(&hello));
    partial.extend_from_slice(&raw_header(20, 0, 3, 9, 100)[..]);
    partial.extend_from_slice(&[1; 40]);
    vec![
        (
            "noop".into(),
            input(0, u16::MAX, 64, 0, &frames(0, &[Frame::noop()])),
        ),
        (
            "three_frames_v1".into(),
            input(
                0x0100_0000,
                1024,
                64,
                3,
                &frames(0x0100_0000, &[hello.clone(), Frame::noop(), push.clone()]),
            ),
        ),
        ("header_extension".into(), input(0, 64, 64, 17, &extended)),
        (
            "body_at_cap".into(),
            input(0, 300, 20, 200, &frames(0, std::slice::from_ref(&push))),
        ),
        ("partial_frame".into(), input(0, 1000, 64, 5, &partial)),
        (
            "body_over_cap".into(),
            input(0, 299, 64, 1, &frames(0, &[push])),
        ),
        (
            "bad_head_length".into(),
            input(0, 100, 64, 2, &raw_header(19, 0, 1, 1, 0)),
        ),
        (
            "version_mismatch".into(),
            input(5, 100, 64, 2, &frames(6, &[hello])),
        ),
    ]
}
