//! The long link's input path without sockets: bytes in, whole frames out.
//!
//! The partial frame stays in the connection's own read buffer (charged to
//! the server's byte budget) rather than inside
//! [`FrameDecoder`], whose partial body the server could not count: the
//! reader peeks at the 20-byte header for the frame's length and hands the
//! decoder only whole frames (or a header it will reject), so every frame's
//! checks stay the decoder's.

use bytes::BytesMut;
use stn_proto::codec::longlink::{CodecConfig, DecodeError, Frame, FrameDecoder, HEADER_LEN};

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
    max_head: u32,
    max_body: usize,
}

impl FrameReader {
    pub(crate) fn new(codec: CodecConfig) -> Self {
        FrameReader {
            max_head: codec.max_head_len,
            max_body: codec.max_body_len,
            decoder: FrameDecoder::new(codec),
        }
    }

    /// The longest frame a valid header can announce: what a connection's
    /// buffer may need to hold (plus one read's worth of the next frame).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn max_frame(&self) -> usize {
        (self.max_head as usize).saturating_add(self.max_body)
    }

    /// The whole length of the frame at the front of `buf`, if its header
    /// is in and within the caps (the decoder rejects it otherwise).
    fn plausible_len(&self, buf: &[u8]) -> Option<usize> {
        let header = buf.get(..HEADER_LEN)?;
        let word =
            |i: usize| u32::from_be_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let (head_len, body_len) = (word(0), word(16) as usize);
        let ok =
            (HEADER_LEN as u32..=self.max_head).contains(&head_len) && body_len <= self.max_body;
        ok.then(|| head_len as usize + body_len)
    }

    /// The buffered length the frame at the front of `buf` needs: the
    /// header's length until the header is in, then the whole frame
    /// (at most [`max_frame`](Self::max_frame)).
    pub(crate) fn wanted(&self, buf: &[u8]) -> usize {
        self.plausible_len(buf).unwrap_or(HEADER_LEN)
    }

    /// Whether [`next_frame`](Self::next_frame) would take something (a
    /// whole frame, or a header it rejects) rather than ask for more bytes.
    pub(crate) fn ready(&self, buf: &[u8]) -> bool {
        buf.len() >= HEADER_LEN
            && self
                .plausible_len(buf)
                .is_none_or(|total| buf.len() >= total)
    }

    /// Takes the next whole frame off the front of `buf`. `Ok(None)`: more
    /// bytes needed (nothing taken). An error poisons the reader: the
    /// stream has lost its framing.
    pub(crate) fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        if self
            .plausible_len(buf)
            .is_some_and(|total| buf.len() < total)
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::codec::longlink::encode_to_bytes;

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
