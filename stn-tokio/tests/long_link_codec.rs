//! The pluggable long-link codec on tokio: the shared suite
//! (`stn_testkit::codec_suite`: a custom codec on client and reference server, a codec
//! mismatch, oversize headers) and the codec laws, for Mars's 20-byte header
//! and the suite's varint codec: encode then decode round-trips any frames,
//! however the bytes are cut; an oversize header is refused holding no more
//! than the header.
//!
//! ```text
//! cargo test -p stn-tokio --test long_link_codec
//! ```

mod tokio_harness;

use bytes::BytesMut;
use proptest::prelude::*;
use stn_tokio::proto::codec::longlink::{
    CodecConfig, DecodeError, Frame, FrameDecoder, IDENTIFY_SEQ, NOOP_SEQ, PUSH_SEQ,
};
use stn_tokio::proto::codec::{LongLinkCodec, MarsCodec};

use stn_testkit::codec_suite::varint::{self, VarintCodec};
use tokio_harness::TokioHarness;

stn_testkit::codec_suite!(TokioHarness);

/// Largest body the laws use (and the decoders' cap).
const MAX_BODY: usize = 3000;

fn decoder(varint: bool, version: u32) -> FrameDecoder {
    if varint {
        FrameDecoder::with_codec(VarintCodec, MAX_BODY)
    } else {
        FrameDecoder::new(CodecConfig {
            client_version: version,
            max_body_len: MAX_BODY,
            ..CodecConfig::default()
        })
    }
}

fn encode_all(varint: bool, version: u32, frames: &[Frame]) -> BytesMut {
    let mars = MarsCodec::new(CodecConfig {
        client_version: version,
        ..CodecConfig::default()
    });
    let codec: &dyn LongLinkCodec = if varint { &VarintCodec } else { &mars };
    let mut wire = BytesMut::new();
    for frame in frames {
        codec.encode(frame, &mut wire).expect("encodable");
    }
    wire
}

/// Decodes `wire` cut into pieces of `sizes` (cycled), checking after every
/// call that the decoder holds at most one header and one capped body.
fn decode_chunked(
    dec: &mut FrameDecoder,
    max_head: usize,
    wire: &[u8],
    sizes: &[usize],
) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut rest = wire;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (mut piece, tail) = rest.split_at((*size).clamp(1, rest.len()));
        rest = tail;
        while let Some(frame) = dec.decode(&mut piece).expect("valid stream") {
            out.push(frame);
        }
        assert!(piece.is_empty(), "Ok(None) takes every byte");
        assert!(dec.buffered_len() <= max_head + MAX_BODY);
    }
    out
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    (
        any::<u32>(),
        prop_oneof![
            Just(PUSH_SEQ),
            Just(NOOP_SEQ),
            Just(IDENTIFY_SEQ),
            any::<u32>()
        ],
        prop_oneof![
            Just(Vec::new()),
            proptest::collection::vec(any::<u8>(), 0..200),
            proptest::collection::vec(any::<u8>(), 0..=MAX_BODY),
        ],
    )
        .prop_map(|(cmd_id, seq, body)| Frame::new(cmd_id, seq, body))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Encode then decode gives the frames back, for both codecs, whether
    /// the bytes come at once, one at a time, or in random pieces.
    #[test]
    fn round_trip_is_chunking_invariant(
        varint in any::<bool>(),
        version in any::<u32>(),
        frames in proptest::collection::vec(arb_frame(), 0..10),
        sizes in proptest::collection::vec(prop_oneof![Just(1usize), 1usize..30, 1usize..4000], 1..8),
    ) {
        let wire = encode_all(varint, version, &frames);
        let max_head = if varint { varint::MAX_HEAD } else { 64 };
        let whole = decode_chunked(&mut decoder(varint, version), max_head, &wire, &[wire.len().max(1)]);
        let bytewise = decode_chunked(&mut decoder(varint, version), max_head, &wire, &[1]);
        let random = decode_chunked(&mut decoder(varint, version), max_head, &wire, &sizes);
        prop_assert_eq!(&whole, &frames);
        prop_assert_eq!(&bytewise, &frames);
        prop_assert_eq!(&random, &frames);
    }

    /// Any announced body over the cap is refused once the header is in,
    /// holding no more than the header, for both codecs.
    #[test]
    fn oversize_header_refused_holding_only_the_header(
        varint in any::<bool>(),
        len in (MAX_BODY as u32 + 1)..=u32::MAX,
        cmd_id in any::<u32>(),
        seq in any::<u32>(),
    ) {
        let header = if varint {
            varint::header_announcing(cmd_id, seq, len).to_vec()
        } else {
            [20, 0, cmd_id, seq, len].iter().flat_map(|v| v.to_be_bytes()).collect()
        };
        let mut dec = decoder(varint, 0);
        let (head, last) = header.split_at(header.len() - 1);
        prop_assert_eq!(dec.decode(&mut &head[..]), Ok(None));
        let err = dec.decode(&mut &last[..]).unwrap_err();
        prop_assert_eq!(err, DecodeError::BodyTooLarge { len, max: MAX_BODY });
        prop_assert!(dec.buffered_len() <= header.len());
        prop_assert!(dec.is_poisoned());
    }
}
