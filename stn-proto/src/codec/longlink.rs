//! The Mars long-link frame format (`mars/stn/proto/longlink_packer.cc`),
//! the default [`LongLinkCodec`] ([`MarsCodec`]), and the [`FrameDecoder`]
//! that buffers frames of any codec within a body cap.
//!
//! Every frame is a 20-byte big-endian header followed by the body:
//!
//! | offset | field            | notes                                              |
//! |-------:|------------------|----------------------------------------------------|
//! | 0      | `head_length`    | 20 when we encode; a receiver honours the value    |
//! | 4      | `client_version` | must equal the configured version, else an error   |
//! | 8      | `cmd_id`         | the task's command id; noop = 6, signal-keep = 243 |
//! | 12     | `seq`            | task id; 0 = server push, 0xFFFFFFFF = noop        |
//! | 16     | `body_length`    | bytes of body that follow the header               |
//!
//! [`encode`] writes one frame; [`FrameDecoder`] reads frames incrementally
//! from input cut at arbitrary points (one byte at a time works). The decoder
//! keeps at most one frame's worth of data — never more than
//! [`CodecConfig::max_body_len`] body bytes plus the fixed 20-byte header —
//! and rejects a bad header as soon as its 20 bytes have arrived, before any of
//! the body is buffered. Any decode error poisons the decoder: the stream has
//! lost framing and the connection must be failed (Mars disconnects with
//! `kEctNetMsgXPHandleBufferErr`).
//!
//! ```
//! use stn_proto::codec::longlink::{encode, CodecConfig, Frame, FrameDecoder};
//! use bytes::BytesMut;
//!
//! let config = CodecConfig { client_version: 0x0100_0000, ..CodecConfig::default() };
//! let mut wire = BytesMut::new();
//! encode(&Frame::new(1001, 7, &b"hello"[..]), config.client_version, &mut wire).unwrap();
//! encode(&Frame::noop(), config.client_version, &mut wire).unwrap();
//!
//! let mut decoder = FrameDecoder::new(config);
//! // The network may deliver the bytes in any pieces; here the first 23.
//! let mut first = &wire[..23];
//! assert_eq!(decoder.decode(&mut first).unwrap(), None);
//! let partial = decoder.partial().unwrap();
//! assert_eq!((partial.seq, partial.received, partial.total), (7, 23, 25));
//!
//! let mut rest = &wire[23..];
//! let frame = decoder.decode(&mut rest).unwrap().unwrap();
//! assert_eq!((frame.cmd_id, frame.seq, &frame.body[..]), (1001, 7, &b"hello"[..]));
//! assert!(decoder.decode(&mut rest).unwrap().unwrap().is_noop());
//! assert_eq!(decoder.decode(&mut rest).unwrap(), None);
//! assert_eq!(decoder.buffered_len(), 0);
//! ```

use bytes::{Buf, Bytes};

pub use super::frame::{
    encode, encode_to_bytes, CodecConfig, DecodeError, EncodeError, Frame, DEFAULT_MAX_BODY,
    DEFAULT_MAX_HEAD, HEADER_LEN, IDENTIFY_SEQ, NOOP_CMD_ID, NOOP_SEQ, PUSH_SEQ,
    SIGNAL_KEEP_CMD_ID,
};
use super::frame_codec::{HeadStatus, LongLinkCodec, MarsCodec, SharedCodec};

/// First allocation for a body that does not arrive in one piece; the buffer
/// then doubles up to the announced length, so a peer that announces 1 MiB and
/// sends 10 bytes does not make us allocate 1 MiB.
const INITIAL_BODY_CAPACITY: usize = 16 * 1024;

/// A frame whose header has arrived but whose body (or header extension) has
/// not yet fully arrived. Counts cover the whole frame, header included, like
/// Mars's `OnRecv(taskid, cached, total)` that feeds the packet-gap timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialFrame {
    /// The frame's command id.
    pub cmd_id: u32,
    /// The frame's sequence number (the task it answers, or 0 for a push).
    pub seq: u32,
    /// Bytes of this frame received so far (header, extension and body).
    pub received: usize,
    /// Bytes of the whole frame (`head_length + body_length`).
    pub total: usize,
}

/// The validated header of the frame in progress.
#[derive(Clone, Copy, Debug)]
struct Header {
    head_len: usize,
    cmd_id: u32,
    seq: u32,
    body_len: usize,
}

impl Header {
    fn total(&self) -> usize {
        self.head_len + self.body_len
    }
}

#[derive(Debug)]
enum State {
    /// Collecting header bytes into `FrameDecoder::head` until it holds
    /// `want` (0: ask the codec how many it needs).
    Header { want: usize },
    /// Skipping `remaining` header bytes past the ones the codec parsed.
    SkipHead { header: Header, remaining: usize },
    /// Collecting the body; `body.capacity() <= header.body_len` always.
    Body { header: Header, body: Vec<u8> },
}

impl State {
    fn start() -> Self {
        State::Header { want: 0 }
    }
}

/// Incremental, bounded long-link frame decoder, over Mars's 20-byte header
/// ([`new`](Self::new)) or any [`LongLinkCodec`] ([`with_codec`](Self::with_codec)).
///
/// Feed it bytes in any pieces with [`decode`](Self::decode) (or iterate with
/// [`frames`](Self::frames)); it takes from the input only what the current
/// frame needs and returns each frame as soon as it is complete. Memory held is
/// at most the codec's header bytes (20 for Mars) plus `max_body_len` body
/// bytes however the input arrives: a header announcing too much is rejected
/// before its body is read. The cap is the decoder's, not the codec's: a
/// codec cannot make it buffer more.
///
/// After an error the decoder is poisoned: the byte stream has lost framing, so
/// every later call returns the same error and the connection must be failed.
/// [`reset`](Self::reset) makes it usable for a new connection.
#[derive(Debug)]
pub struct FrameDecoder {
    config: CodecConfig,
    codec: SharedCodec,
    /// Header bytes of the frame in progress (at most the codec's
    /// `max_head_len`); kept until the frame ends, reused across frames.
    head: Vec<u8>,
    state: State,
    error: Option<DecodeError>,
    last_len: usize,
}

impl FrameDecoder {
    /// A decoder of Mars's 20-byte header ([`MarsCodec`]) at the start of a
    /// stream.
    pub fn new(config: CodecConfig) -> Self {
        Self::with_shared(SharedCodec::new(MarsCodec::new(config)), config)
    }

    /// A decoder of `codec`'s frames whose bodies are at most `max_body_len`
    /// bytes, at the start of a stream.
    pub fn with_codec(codec: impl LongLinkCodec + 'static, max_body_len: usize) -> Self {
        Self::shared(SharedCodec::new(codec), max_body_len)
    }

    /// [`with_codec`](Self::with_codec) for a codec already shared.
    pub fn shared(codec: SharedCodec, max_body_len: usize) -> Self {
        let config = CodecConfig {
            max_body_len,
            ..CodecConfig::default()
        };
        Self::with_shared(codec, config)
    }

    fn with_shared(codec: SharedCodec, config: CodecConfig) -> Self {
        FrameDecoder {
            config,
            codec,
            head: Vec::new(),
            state: State::start(),
            error: None,
            last_len: 0,
        }
    }

    /// The settings this decoder checks frames against. For a decoder made
    /// with [`with_codec`](Self::with_codec) only
    /// [`max_body_len`](CodecConfig::max_body_len) applies; the other
    /// fields are the codec's business.
    pub fn config(&self) -> &CodecConfig {
        &self.config
    }

    /// The codec this decoder parses headers with.
    pub fn codec(&self) -> &SharedCodec {
        &self.codec
    }

    /// Decodes at most one frame from `input`.
    ///
    /// Takes bytes from `input` only up to the end of the next frame, so the
    /// caller can loop until `Ok(None)`, which means every byte of `input`
    /// has been taken and the decoder waits for more. A complete body
    /// available at once is taken with [`Buf::copy_to_bytes`], which does not
    /// copy when `input` is [`Bytes`] or [`BytesMut`](bytes::BytesMut).
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] as soon as a header is invalid — the rest of that
    /// frame is not read, and how much of `input` was taken is unspecified.
    /// The decoder is then poisoned and returns the same error on every call.
    pub fn decode<B: Buf + ?Sized>(&mut self, input: &mut B) -> Result<Option<Frame>, DecodeError> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        loop {
            match &mut self.state {
                State::Header { want } => {
                    let want = *want;
                    while self.head.len() < want && input.has_remaining() {
                        let chunk = input.chunk();
                        let n = chunk.len().min(want - self.head.len());
                        self.head.extend_from_slice(&chunk[..n]);
                        input.advance(n);
                    }
                    if self.head.len() < want {
                        return Ok(None);
                    }
                    if let Err(err) = self.parse_head() {
                        self.state = State::start();
                        self.head.clear();
                        self.error = Some(err.clone());
                        return Err(err);
                    }
                }
                State::SkipHead { header, remaining } => {
                    let n = (*remaining).min(input.remaining());
                    input.advance(n);
                    *remaining -= n;
                    if *remaining > 0 {
                        return Ok(None);
                    }
                    self.state = State::Body {
                        header: *header,
                        body: Vec::new(),
                    };
                }
                State::Body { header, body } => {
                    let header = *header;
                    let need = header.body_len - body.len();
                    if need == 0 {
                        let body = Bytes::from(core::mem::take(body));
                        return Ok(Some(self.finish(header, body)));
                    }
                    if body.is_empty() && input.remaining() >= need {
                        // Whole body present: one exact allocation, or none
                        // at all for `Bytes` input.
                        let body = input.copy_to_bytes(need);
                        return Ok(Some(self.finish(header, body)));
                    }
                    if !input.has_remaining() {
                        return Ok(None);
                    }
                    let body_len = header.body_len;
                    while input.has_remaining() && body.len() < body_len {
                        let chunk = input.chunk();
                        let n = chunk.len().min(body_len - body.len());
                        grow_bounded(body, n, body_len);
                        body.extend_from_slice(&chunk[..n]);
                        input.advance(n);
                    }
                }
            }
        }
    }

    /// Asks the codec about the header bytes held and moves on: wait for
    /// more, skip an extension, or read the body. Holds the codec to its
    /// contract, so a faulty codec cannot make the decoder loop or buffer
    /// past its caps.
    fn parse_head(&mut self) -> Result<(), DecodeError> {
        let codec = self.codec.get();
        let max_head = codec.max_head_len();
        let have = self.head.len();
        match codec.decode_head(&self.head)? {
            HeadStatus::NeedMore { at_least } => {
                if at_least <= have {
                    return Err(DecodeError::malformed(format!(
                        "the codec asked for {at_least} header bytes with {have} in hand"
                    )));
                }
                if at_least > max_head {
                    return Err(DecodeError::HeadTooLong {
                        len: at_least,
                        max: max_head,
                    });
                }
                self.state = State::Header { want: at_least };
            }
            HeadStatus::Head(head) => {
                if head.head_len < have.max(1) {
                    return Err(DecodeError::malformed(format!(
                        "the codec announced a {}-byte header after reading {have} bytes",
                        head.head_len
                    )));
                }
                if head.head_len > max_head {
                    return Err(DecodeError::HeadTooLong {
                        len: head.head_len,
                        max: max_head,
                    });
                }
                // `u32 -> usize` cannot fail on the 32/64-bit targets we
                // build for; if it did, the body could not be held anyway.
                let body_len = match usize::try_from(head.body_len) {
                    Ok(len) if len <= self.config.max_body_len => len,
                    _ => {
                        return Err(DecodeError::BodyTooLarge {
                            len: head.body_len,
                            max: self.config.max_body_len,
                        })
                    }
                };
                let header = Header {
                    head_len: head.head_len,
                    cmd_id: head.cmd_id,
                    seq: head.seq,
                    body_len,
                };
                let extra = head.head_len - have;
                self.state = if extra > 0 {
                    State::SkipHead {
                        header,
                        remaining: extra,
                    }
                } else {
                    State::Body {
                        header,
                        body: Vec::new(),
                    }
                };
            }
        }
        Ok(())
    }

    /// An iterator decoding every frame from `input`. It yields `Err` at most
    /// once and then stops; when it ends without error all of `input` has been
    /// taken.
    pub fn frames<'a, B: Buf + ?Sized>(&'a mut self, input: &'a mut B) -> Frames<'a, B> {
        Frames {
            decoder: self,
            input,
            done: false,
        }
    }

    /// The frame whose header has arrived but which is not complete yet, with
    /// progress counts (for the packet-gap timer). `None` between frames and
    /// while the header is still arriving.
    pub fn partial(&self) -> Option<PartialFrame> {
        if self.error.is_some() {
            return None;
        }
        let (header, received) = match &self.state {
            State::Header { .. } => return None,
            State::SkipHead { header, remaining } => (header, header.head_len - remaining),
            State::Body { header, body } => (header, header.head_len + body.len()),
        };
        Some(PartialFrame {
            cmd_id: header.cmd_id,
            seq: header.seq,
            received,
            total: header.total(),
        })
    }

    /// Whether some bytes of a frame have been taken but the frame is not
    /// complete (a header fragment counts).
    pub fn in_frame(&self) -> bool {
        if self.error.is_some() {
            return false;
        }
        match &self.state {
            State::Header { .. } => !self.head.is_empty(),
            State::SkipHead { .. } | State::Body { .. } => true,
        }
    }

    /// Bytes currently held by the decoder (header bytes of the current frame
    /// plus its body bytes received so far; skipped header-extension bytes are
    /// not held). Never exceeds the codec's `max_head_len` (20 for Mars)
    /// plus `max_body_len`.
    pub fn buffered_len(&self) -> usize {
        match &self.state {
            State::Header { .. } | State::SkipHead { .. } => self.head.len(),
            State::Body { body, .. } => self.head.len() + body.len(),
        }
    }

    /// Bytes on the wire (header, extension and body) of the frame the last
    /// successful [`decode`](Self::decode) returned; 0 before the first.
    pub fn last_frame_len(&self) -> usize {
        self.last_len
    }

    /// The error that poisoned this decoder, if any.
    pub fn error(&self) -> Option<&DecodeError> {
        self.error.as_ref()
    }

    /// Whether a decode error has poisoned this decoder.
    pub fn is_poisoned(&self) -> bool {
        self.error.is_some()
    }

    /// Forgets any partial frame and error, ready for a new connection.
    pub fn reset(&mut self) {
        self.state = State::start();
        self.head.clear();
        self.error = None;
    }

    fn finish(&mut self, header: Header, body: Bytes) -> Frame {
        self.state = State::start();
        self.head.clear();
        self.last_len = header.total();
        Frame {
            cmd_id: header.cmd_id,
            seq: header.seq,
            body,
        }
    }
}

/// Makes room for `additional` more bytes without the capacity ever passing
/// `limit` (the announced body length): `Vec::reserve` could double past it.
fn grow_bounded(body: &mut Vec<u8>, additional: usize, limit: usize) {
    let needed = body.len() + additional;
    if needed <= body.capacity() {
        return;
    }
    let target = needed
        .max(body.capacity().saturating_mul(2))
        .max(INITIAL_BODY_CAPACITY)
        .min(limit);
    body.reserve_exact(target - body.len());
}

/// Iterator over the frames of one input buffer; see [`FrameDecoder::frames`].
#[derive(Debug)]
pub struct Frames<'a, B: Buf + ?Sized> {
    decoder: &'a mut FrameDecoder,
    input: &'a mut B,
    done: bool,
}

impl<B: Buf + ?Sized> Iterator for Frames<'_, B> {
    type Item = Result<Frame, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.decoder.decode(self.input) {
            Ok(Some(frame)) => Some(Ok(frame)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(err) => {
                self.done = true;
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use bytes::BytesMut;
    use proptest::prelude::*;
    use quickcheck::quickcheck;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn raw_header(head_len: u32, version: u32, cmd_id: u32, seq: u32, body_len: u32) -> Vec<u8> {
        [head_len, version, cmd_id, seq, body_len]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect()
    }

    fn cfg(version: u32, max_body: usize, max_head: u32) -> CodecConfig {
        CodecConfig {
            client_version: version,
            max_body_len: max_body,
            max_head_len: max_head,
        }
    }

    /// Decodes `wire` split into `chunks` pieces of the given sizes (cycled),
    /// checking the memory bound at every step.
    fn decode_chunked(
        dec: &mut FrameDecoder,
        wire: &[u8],
        sizes: &[usize],
    ) -> Result<Vec<Frame>, DecodeError> {
        let mut out = Vec::new();
        let mut pos = 0;
        let mut i = 0;
        while pos < wire.len() {
            let size = sizes
                .get(i % sizes.len().max(1))
                .copied()
                .unwrap_or(1)
                .max(1);
            i += 1;
            let end = (pos + size).min(wire.len());
            let mut chunk = &wire[pos..end];
            pos = end;
            loop {
                let r = dec.decode(&mut chunk);
                assert_bounded(dec);
                match r? {
                    Some(f) => out.push(f),
                    None => {
                        assert!(chunk.is_empty(), "Ok(None) must mean input consumed");
                        break;
                    }
                }
            }
        }
        Ok(out)
    }

    fn assert_bounded(dec: &FrameDecoder) {
        let bound = HEADER_LEN + dec.config.max_body_len;
        assert!(dec.buffered_len() <= bound);
        if let State::Body { header, body } = &dec.state {
            assert!(body.capacity() <= header.body_len);
            assert!(body.capacity() <= dec.config.max_body_len);
        }
    }

    #[test]
    fn noop_frame_exact_bytes() {
        let bytes = encode_to_bytes(&Frame::noop(), 0).unwrap();
        assert_eq!(
            hex(&bytes),
            concat!("00000014", "00000000", "00000006", "ffffffff", "00000000")
        );
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let frame = dec.decode(&mut bytes.clone()).unwrap().unwrap();
        assert!(frame.is_noop());
        assert!(!frame.is_push());
        assert_eq!(frame, Frame::noop());
    }

    #[test]
    fn push_frame_exact_bytes_and_decode() {
        let frame = Frame::new(10001, PUSH_SEQ, &b"hi!"[..]);
        let bytes = encode_to_bytes(&frame, 0x0102_0304).unwrap();
        assert_eq!(
            hex(&bytes),
            concat!("00000014", "01020304", "00002711", "00000000", "00000003", "686921")
        );
        let mut dec = FrameDecoder::new(cfg(0x0102_0304, DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD));
        let got = dec.decode(&mut &bytes[..]).unwrap().unwrap();
        assert!(got.is_push());
        assert!(!got.is_noop());
        assert_eq!(got, frame);
    }

    #[test]
    fn signal_keep_and_identify_constants() {
        let b =
            encode_to_bytes(&Frame::new(SIGNAL_KEEP_CMD_ID, PUSH_SEQ, Bytes::new()), 0).unwrap();
        assert_eq!(&b[8..12], &243u32.to_be_bytes());
        assert_eq!(IDENTIFY_SEQ, 0xFFFF_FFFE);
        assert_eq!(NOOP_SEQ, u32::MAX);
    }

    #[test]
    fn byte_at_a_time() {
        let frames = vec![
            Frame::new(1, 1, &b"abc"[..]),
            Frame::noop(),
            Frame::new(2, 0, Bytes::new()),
            Frame::new(3, 99, vec![7u8; 300]),
        ];
        let mut wire = BytesMut::new();
        for f in &frames {
            encode(f, 5, &mut wire).unwrap();
        }
        let mut dec = FrameDecoder::new(cfg(5, DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD));
        let mut got = Vec::new();
        for (i, b) in wire.iter().enumerate() {
            let mut one = &[*b][..];
            if let Some(f) = dec.decode(&mut one).unwrap() {
                got.push(f);
            }
            assert!(one.is_empty());
            // Progress is visible once the header of the 300-byte frame is in.
            let start_last = wire.len() - 320;
            if i >= start_last + HEADER_LEN - 1 && i + 1 < wire.len() {
                let p = dec.partial().unwrap();
                assert_eq!((p.cmd_id, p.seq, p.total), (3, 99, 320));
                assert_eq!(p.received, i + 1 - start_last);
            }
        }
        assert_eq!(got, frames);
        assert!(!dec.in_frame());
        assert_eq!(dec.buffered_len(), 0);
    }

    #[test]
    fn body_at_cap_is_accepted() {
        let max = 1000;
        let frame = Frame::new(9, 9, vec![0xAB; max]);
        let wire = encode_to_bytes(&frame, 0).unwrap();
        let mut dec = FrameDecoder::new(cfg(0, max, DEFAULT_MAX_HEAD));
        assert_eq!(
            decode_chunked(&mut dec, &wire, &[7, 1, 300]).unwrap(),
            vec![frame]
        );
    }

    #[test]
    fn oversize_body_rejected_on_header_alone() {
        let max = 1000;
        let header = raw_header(20, 0, 9, 9, max as u32 + 1);
        let mut dec = FrameDecoder::new(cfg(0, max, DEFAULT_MAX_HEAD));
        // 19 bytes: not yet decidable.
        assert_eq!(dec.decode(&mut &header[..19]).unwrap(), None);
        assert!(dec.in_frame());
        let expected = DecodeError::BodyTooLarge {
            len: max as u32 + 1,
            max,
        };
        // The 20th byte triggers the error; no body byte has been sent.
        assert_eq!(dec.decode(&mut &header[19..]), Err(expected.clone()));
        assert!(dec.is_poisoned());
        assert_eq!(dec.buffered_len(), 0);
        assert_eq!(dec.partial(), None);
        // Poisoned: the same error whatever comes next, even valid frames.
        let noop = encode_to_bytes(&Frame::noop(), 0).unwrap();
        assert_eq!(dec.decode(&mut &noop[..]), Err(expected.clone()));
        assert_eq!(dec.error(), Some(&expected));
        assert_eq!(
            expected.to_string(),
            "long-link frame body of 1001 bytes exceeds the limit of 1000 bytes"
        );
        // A reset decoder serves a new connection.
        dec.reset();
        assert_eq!(dec.decode(&mut &noop[..]).unwrap(), Some(Frame::noop()));
    }

    #[test]
    fn default_cap_is_one_mib() {
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let ok = raw_header(20, 0, 1, 1, DEFAULT_MAX_BODY as u32);
        assert_eq!(dec.decode(&mut &ok[..]).unwrap(), None);
        assert_eq!(dec.partial().unwrap().total, 20 + DEFAULT_MAX_BODY);
        // Nothing is allocated for a body that has not arrived.
        assert_bounded(&dec);
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let bad = raw_header(20, 0, 1, 1, DEFAULT_MAX_BODY as u32 + 1);
        assert!(matches!(
            dec.decode(&mut &bad[..]),
            Err(DecodeError::BodyTooLarge { .. })
        ));
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let huge = raw_header(20, 0, 1, 1, u32::MAX);
        assert_eq!(
            dec.decode(&mut &huge[..]),
            Err(DecodeError::BodyTooLarge {
                len: u32::MAX,
                max: DEFAULT_MAX_BODY
            })
        );
    }

    #[test]
    fn body_buffer_grows_gradually_and_never_past_announced_len() {
        let len = DEFAULT_MAX_BODY - 3; // not a power of two: doubling must clamp
        let frame = Frame::new(1, 1, (0..len).map(|i| i as u8).collect::<Vec<_>>());
        let wire = encode_to_bytes(&frame, 0).unwrap();
        let mut dec = FrameDecoder::new(CodecConfig::default());
        assert_eq!(dec.decode(&mut &wire[..HEADER_LEN + 10]).unwrap(), None);
        match &dec.state {
            State::Body { body, .. } => assert_eq!(body.capacity(), INITIAL_BODY_CAPACITY),
            other => panic!("unexpected state {other:?}"),
        }
        let mut got = None;
        for chunk in wire[HEADER_LEN + 10..].chunks(4099) {
            let mut chunk = chunk;
            if let Some(f) = dec.decode(&mut chunk).unwrap() {
                got = Some(f);
            }
            assert_bounded(&dec);
        }
        assert_eq!(got, Some(frame));
    }

    #[test]
    fn client_version_mismatch() {
        let wire = encode_to_bytes(&Frame::new(1, 2, &b"x"[..]), 7).unwrap();
        let mut dec = FrameDecoder::new(cfg(8, DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD));
        let err = dec.decode(&mut &wire[..]).unwrap_err();
        assert_eq!(
            err,
            DecodeError::ClientVersion {
                expected: 8,
                got: 7
            }
        );
        assert_eq!(
            err.to_string(),
            "long-link client version mismatch: expected 0x8, got 0x7"
        );
        assert!(dec.is_poisoned());
    }

    #[test]
    fn bad_head_lengths() {
        for head_len in [0u32, 1, 19, 65, u32::MAX] {
            let mut dec = FrameDecoder::new(CodecConfig::default());
            let h = raw_header(head_len, 0, 1, 1, 0);
            assert_eq!(
                dec.decode(&mut &h[..]),
                Err(DecodeError::HeadLength {
                    head_len,
                    min: 20,
                    max: 64
                }),
                "head_len {head_len}"
            );
        }
        // A cap below 20 is treated as 20.
        let mut dec = FrameDecoder::new(cfg(0, 10, 3));
        let noop = encode_to_bytes(&Frame::noop(), 0).unwrap();
        assert_eq!(dec.decode(&mut &noop[..]).unwrap(), Some(Frame::noop()));
    }

    #[test]
    fn extra_header_bytes_are_skipped() {
        let mut wire = raw_header(64, 0, 77, 5, 4);
        wire.extend_from_slice(&[0xEE; 44]); // header extension, ignored
        wire.extend_from_slice(b"body");
        wire.extend_from_slice(&encode_to_bytes(&Frame::noop(), 0).unwrap());
        for sizes in [&[1usize][..], &[21, 5], &[200]] {
            let mut dec = FrameDecoder::new(CodecConfig::default());
            let frames = decode_chunked(&mut dec, &wire, sizes).unwrap();
            assert_eq!(frames, vec![Frame::new(77, 5, &b"body"[..]), Frame::noop()]);
        }
        // Progress while inside the extension.
        let mut dec = FrameDecoder::new(CodecConfig::default());
        assert_eq!(dec.decode(&mut &wire[..30]).unwrap(), None);
        assert_eq!(
            dec.partial(),
            Some(PartialFrame {
                cmd_id: 77,
                seq: 5,
                received: 30,
                total: 68
            })
        );
        assert_eq!(dec.buffered_len(), HEADER_LEN);
    }

    #[test]
    fn zero_length_bodies_back_to_back() {
        let frames: Vec<Frame> = (0..10)
            .map(|i| Frame::new(i, i * 3, Bytes::new()))
            .collect();
        let mut wire = BytesMut::new();
        for f in &frames {
            encode(f, 0, &mut wire).unwrap();
        }
        assert_eq!(wire.len(), 200);
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let mut input = wire.freeze();
        let got: Result<Vec<_>, _> = dec.frames(&mut input).collect();
        assert_eq!(got.unwrap(), frames);
        assert!(input.is_empty());
    }

    #[test]
    fn whole_body_from_bytes_is_not_copied() {
        let frame = Frame::new(1, 2, vec![1u8; 100]);
        let wire = encode_to_bytes(&frame, 0).unwrap();
        let mut input = wire.clone();
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let got = dec.decode(&mut input).unwrap().unwrap();
        assert_eq!(got.body.as_ptr(), wire[HEADER_LEN..].as_ptr());
    }

    #[test]
    fn partial_then_complete_across_chain() {
        let frame = Frame::new(4, 8, (0..=255u8).collect::<Vec<_>>());
        let wire = encode_to_bytes(&frame, 0).unwrap();
        let mut dec = FrameDecoder::new(CodecConfig::default());
        assert_eq!(dec.decode(&mut &wire[..100]).unwrap(), None);
        assert_eq!(dec.buffered_len(), 100);
        assert!(dec.in_frame());
        let p = dec.partial().unwrap();
        assert_eq!((p.received, p.total), (100, 276));
        let next = encode_to_bytes(&Frame::noop(), 0).unwrap();
        let mut rest = (&wire[100..]).chain(&next[..]);
        let got: Vec<_> = dec.frames(&mut rest).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![frame, Frame::noop()]);
        assert!(!rest.has_remaining());
    }

    #[test]
    fn frames_iterator_stops_after_error() {
        let mut wire = encode_to_bytes(&Frame::noop(), 0).unwrap().to_vec();
        wire.extend_from_slice(&raw_header(3, 0, 0, 0, 0));
        wire.extend_from_slice(&encode_to_bytes(&Frame::noop(), 0).unwrap());
        let mut dec = FrameDecoder::new(CodecConfig::default());
        let mut input = &wire[..];
        let items: Vec<_> = dec.frames(&mut input).collect();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], Ok(Frame::noop()));
        assert!(matches!(
            items[1],
            Err(DecodeError::HeadLength { head_len: 3, .. })
        ));
    }

    #[test]
    fn encode_caps() {
        let config = cfg(1, 4, DEFAULT_MAX_HEAD);
        let mut dst = BytesMut::new();
        config
            .encode(&Frame::new(1, 1, &b"four"[..]), &mut dst)
            .unwrap();
        assert_eq!(&dst[4..8], &1u32.to_be_bytes());
        let err = config
            .encode(&Frame::new(1, 1, &b"fives"[..]), &mut dst)
            .unwrap_err();
        assert_eq!(err, EncodeError::BodyTooLarge { len: 5, max: 4 });
        assert_eq!(dst.len(), 24, "a refused frame writes nothing");
        // The free function only enforces the wire limit.
        encode(&Frame::new(1, 1, &b"fives"[..]), 1, &mut dst).unwrap();
        assert_eq!(dst.len(), 24 + 25);
    }

    #[test]
    fn profiles_share_mars_framing() {
        for p in Profile::ALL {
            let c = CodecConfig::for_profile(p);
            assert_eq!(c.client_version, 0);
            assert_eq!(c.max_body_len, DEFAULT_MAX_BODY);
            assert_eq!(c.max_head_len, DEFAULT_MAX_HEAD);
        }
        assert_eq!(
            CodecConfig::default(),
            CodecConfig::for_profile(Profile::Stn)
        );
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
                proptest::collection::vec(any::<u8>(), 0..64),
                proptest::collection::vec(any::<u8>(), 0..3000),
            ],
        )
            .prop_map(|(cmd_id, seq, body)| Frame::new(cmd_id, seq, body))
    }

    proptest! {
        #[test]
        fn round_trip_any_chunking(
            frames in proptest::collection::vec(arb_frame(), 0..12),
            version in any::<u32>(),
            sizes in proptest::collection::vec(
                prop_oneof![Just(1usize), 1usize..40, 1usize..5000], 1..8),
        ) {
            let mut wire = BytesMut::new();
            for f in &frames {
                encode(f, version, &mut wire).unwrap();
            }
            let mut dec = FrameDecoder::new(cfg(version, 3000, DEFAULT_MAX_HEAD));
            let got = decode_chunked(&mut dec, &wire, &sizes).unwrap();
            prop_assert_eq!(got, frames.clone());
            prop_assert!(!dec.in_frame());
            prop_assert_eq!(dec.buffered_len(), 0);

            // All frames back-to-back in one `Bytes` buffer.
            let mut dec = FrameDecoder::new(cfg(version, 3000, DEFAULT_MAX_HEAD));
            let mut input = wire.freeze();
            let got: Vec<_> = dec.frames(&mut input).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(got, frames);
            prop_assert!(input.is_empty());
        }

        #[test]
        fn round_trip_with_header_extensions(
            items in proptest::collection::vec((arb_frame(), 0u32..=44, any::<u8>()), 1..6),
            sizes in proptest::collection::vec(1usize..50, 1..5),
        ) {
            let mut wire = Vec::new();
            for (f, extra, fill) in &items {
                wire.extend(raw_header(20 + extra, 0, f.cmd_id, f.seq, f.body.len() as u32));
                wire.extend(std::iter::repeat_n(*fill, *extra as usize));
                wire.extend_from_slice(&f.body);
            }
            let mut dec = FrameDecoder::new(CodecConfig::default());
            let got = decode_chunked(&mut dec, &wire, &sizes).unwrap();
            let want: Vec<Frame> = items.into_iter().map(|(f, _, _)| f).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn garbage_never_panics_and_stays_bounded(
            data in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..400),
                // Mostly-valid prefixes make deeper states reachable.
                (proptest::collection::vec(any::<u8>(), 0..300), 0u32..80, 0u32..300)
                    .prop_map(|(tail, head, body)| {
                        let mut v = raw_header(head, 0, 1, 2, body);
                        v.extend(tail);
                        v
                    }),
            ],
            sizes in proptest::collection::vec(1usize..64, 1..6),
            max_body in 0usize..256,
        ) {
            let mut dec = FrameDecoder::new(cfg(0, max_body, 40));
            match decode_chunked(&mut dec, &data, &sizes) {
                Ok(frames) => {
                    let used: usize = frames.iter().map(|f| f.encoded_len()).sum();
                    prop_assert!(used <= data.len());
                    for f in &frames {
                        prop_assert!(f.body.len() <= max_body);
                    }
                    prop_assert!(!dec.is_poisoned());
                }
                Err(err) => {
                    prop_assert_eq!(dec.error(), Some(&err));
                    let mut more = &[0u8; 64][..];
                    prop_assert_eq!(dec.decode(&mut more), Err(err));
                }
            }
            assert_bounded(&dec);
        }
    }

    quickcheck! {
        fn encoded_len_is_header_plus_body(cmd_id: u32, seq: u32, body: Vec<u8>, version: u32) -> bool {
            let frame = Frame::new(cmd_id, seq, body);
            let wire = encode_to_bytes(&frame, version).unwrap();
            wire.len() == HEADER_LEN + frame.body.len()
                && wire.len() == frame.encoded_len()
                && wire[..4] == 20u32.to_be_bytes()
                && wire[16..20] == (frame.body.len() as u32).to_be_bytes()
        }
    }
}
