//! The long link's input path without sockets: bytes in, whole frames out.
//!
//! The partial frame stays in the connection's own read buffer (charged to
//! the server's byte budget) rather than inside
//! [`FrameDecoder`], whose partial body the server could not count: the
//! reader asks the codec about the header for the frame's length and hands
//! the decoder only whole frames (or a header it will reject), so every
//! frame's checks stay the decoder's.

use bytes::BytesMut;
use stn_proto::codec::longlink::{DecodeError, Frame, FrameDecoder};
use stn_proto::codec::{HeadStatus, SharedCodec};

/// Why the stream cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    /// The decoder refused a header or body.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The decoder wanted more bytes of a frame the reader thought whole: a
    /// disagreement about the header, reported rather than buffered.
    #[error("frame decoder and reader disagree about a frame's length")]
    Disagreement,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct FrameReader {
    decoder: FrameDecoder,
    codec: SharedCodec,
    max_body: usize,
}

/// What the bytes at the front of a buffer are, by the codec's reading.
enum Peek {
    /// The header is not in: this many bytes are needed to read it.
    Header(usize),
    /// A header within the caps announcing a frame of this many bytes.
    Frame(usize),
    /// A header the decoder rejects.
    Invalid,
}

impl FrameReader {
    /// A reader of Mars's 20-byte header with these settings.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn new(codec: stn_proto::codec::longlink::CodecConfig) -> Self {
        let mars = stn_proto::codec::MarsCodec::new(codec);
        Self::with_codec(SharedCodec::new(mars), codec.max_body_len)
    }

    /// A reader of `codec`'s frames with bodies up to `max_body` bytes.
    pub(crate) fn with_codec(codec: SharedCodec, max_body: usize) -> Self {
        FrameReader {
            decoder: FrameDecoder::shared(codec.clone(), max_body),
            codec,
            max_body,
        }
    }

    /// The longest frame a valid header can announce: what a connection's
    /// buffer may need to hold (plus one read's worth of the next frame).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn max_frame(&self) -> usize {
        max_frame(self.codec.get(), self.max_body)
    }

    /// The codec's reading of the header at the front of `buf`, held to
    /// the caps the decoder enforces.
    fn peek(&self, buf: &[u8]) -> Peek {
        let codec = self.codec.get();
        let max_head = codec.max_head_len();
        let view = &buf[..buf.len().min(max_head)];
        match codec.decode_head(view) {
            Ok(HeadStatus::NeedMore { at_least })
                if at_least > view.len() && at_least <= max_head =>
            {
                Peek::Header(at_least)
            }
            Ok(HeadStatus::Head(head))
                if (1..=max_head).contains(&head.head_len)
                    && head.body_len as usize <= self.max_body =>
            {
                Peek::Frame(head.head_len + head.body_len as usize)
            }
            _ => Peek::Invalid,
        }
    }

    /// The buffered length the frame at the front of `buf` needs: the
    /// header's length until the header is in, then the whole frame
    /// (at most [`max_frame`](Self::max_frame)).
    pub(crate) fn wanted(&self, buf: &[u8]) -> usize {
        match self.peek(buf) {
            Peek::Header(len) | Peek::Frame(len) => len,
            Peek::Invalid => buf.len(),
        }
    }

    /// Whether [`next_frame`](Self::next_frame) would take something (a
    /// whole frame, or a header it rejects) rather than ask for more bytes.
    pub(crate) fn ready(&self, buf: &[u8]) -> bool {
        match self.peek(buf) {
            Peek::Header(_) => false,
            Peek::Frame(total) => buf.len() >= total,
            Peek::Invalid => true,
        }
    }

    /// Takes the next whole frame off the front of `buf`. `Ok(None)`: more
    /// bytes needed (nothing taken). An error poisons the reader: the
    /// stream has lost its framing.
    pub(crate) fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if !self.ready(buf) {
            return Ok(None);
        }
        // Either the whole frame is here, or the header is one the decoder
        // rejects without reading on.
        match self.decoder.decode(buf)? {
            Some(frame) => Ok(Some(frame)),
            None => Err(FrameError::Disagreement),
        }
    }
}

/// The longest frame `codec` can announce with bodies up to `max_body`.
pub(crate) fn max_frame(codec: &dyn stn_proto::codec::LongLinkCodec, max_body: usize) -> usize {
    codec.max_head_len().saturating_add(max_body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::codec::longlink::{encode_to_bytes, CodecConfig, HEADER_LEN};

    fn reader() -> FrameReader {
        FrameReader::new(CodecConfig {
            max_body_len: 100,
            ..CodecConfig::default()
        })
    }

    #[test]
    fn whole_frames_only_and_partial_ones_stay_buffered() {
        let mut r = reader();
        let a = Frame::new(8, 1, &b"hello"[..]);
        let b = Frame::new(6, 2, &b""[..]);
        let mut wire = encode_to_bytes(&a, 0).unwrap().to_vec();
        wire.extend_from_slice(&encode_to_bytes(&b, 0).unwrap());
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for byte in &wire {
            buf.extend_from_slice(&[*byte]);
            assert!(r.wanted(&buf) >= buf.len().min(HEADER_LEN));
            while let Some(frame) = r.next_frame(&mut buf).unwrap() {
                got.push(frame);
            }
        }
        assert_eq!(got, vec![a, b]);
        assert!(buf.is_empty());
    }

    #[test]
    fn an_oversize_header_fails_before_its_body() {
        let mut r = reader();
        let mut header = encode_to_bytes(&Frame::new(8, 1, &b""[..]), 0)
            .unwrap()
            .to_vec();
        header[16..20].copy_from_slice(&101u32.to_be_bytes());
        let mut buf = BytesMut::from(&header[..]);
        assert_eq!(r.wanted(&buf), HEADER_LEN);
        assert!(matches!(r.next_frame(&mut buf), Err(FrameError::Decode(_))));
        let mut buf = BytesMut::from(&b"GARBAGE! this is not a frame"[..]);
        assert!(r.next_frame(&mut buf).is_err());
    }
}
