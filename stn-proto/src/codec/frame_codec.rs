//! The pluggable long-link frame format (Mars's `LongLinkEncoder`).
//!
//! A [`LongLinkCodec`] says how a [`Frame`] (cmd id, seq, body) looks on the
//! wire and which frames are noops, pushes and identify answers. The
//! long-link machine and the reference server call it; the
//! [`FrameDecoder`](super::longlink::FrameDecoder) around it owns the
//! buffering, so whatever the codec, memory stays within the header cap the
//! codec declares plus the body cap the caller configures, and a header
//! announcing a larger body is refused before any of the body is buffered.
//!
//! [`MarsCodec`], Mars's 20-byte header, is the default everywhere.
//!
//! See [`LongLinkCodec`] for an example implementation.

use std::fmt;
use std::sync::Arc;

use bytes::BytesMut;

use super::frame::{
    encode_unchecked, CodecConfig, DecodeError, EncodeError, Frame, HEADER_LEN, IDENTIFY_SEQ,
    NOOP_CMD_ID, PUSH_SEQ,
};

/// What a received frame's header says, once enough of it has arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameHead {
    /// The frame's command id.
    pub cmd_id: u32,
    /// The frame's sequence number.
    pub seq: u32,
    /// Bytes of the whole header on the wire, from the frame's first byte to
    /// its body's first byte. At least the bytes [`LongLinkCodec::decode_head`]
    /// looked at, at most [`LongLinkCodec::max_head_len`]; bytes past the
    /// ones the codec needed (a header extension) are skipped unread.
    pub head_len: usize,
    /// Bytes of body that follow the header. The decoder refuses a value over
    /// its configured cap before buffering any of it.
    pub body_len: u32,
}

/// The answer of [`LongLinkCodec::decode_head`] (Mars `longlink_unpack`'s
/// `LONGLINK_UNPACK_CONTINUE` / `OK`; `FALSE` is the `Err`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeadStatus {
    /// The header is not complete: call again once the buffer holds at least
    /// `at_least` bytes from the frame's start. Must be more than the bytes
    /// given and at most [`LongLinkCodec::max_head_len`].
    NeedMore {
        /// Bytes from the frame's start needed before the next call.
        at_least: usize,
    },
    /// The header is complete.
    Head(FrameHead),
}

/// A long-link frame format: Mars's `LongLinkEncoder`, the hooks a Mars
/// deployment plugs in for its own packer.
///
/// The codec is stateless and shared (`Send + Sync`): one instance serves
/// every connection of a client or server. Buffering is the caller's
/// ([`FrameDecoder`](super::longlink::FrameDecoder) or the reference
/// server's reader), which keeps memory within [`max_head_len`](Self::max_head_len)
/// plus its own body cap whatever the codec answers. [`MarsCodec`] is the
/// default.
///
/// # Example
///
/// A codec only parses headers and writes frames; it keeps no state. This
/// one uses a 12-byte header: a magic byte `0xC7`, a version byte, the
/// cmd id and seq as big-endian `u32`s, and the body length as a `u16`.
///
/// ```
/// use bytes::{BufMut, BytesMut};
/// use stn_proto::codec::longlink::{DecodeError, EncodeError, Frame, FrameDecoder};
/// use stn_proto::codec::{FrameHead, HeadStatus, LongLinkCodec};
///
/// #[derive(Debug)]
/// struct Tiny;
///
/// impl LongLinkCodec for Tiny {
///     fn max_head_len(&self) -> usize {
///         12
///     }
///     fn decode_head(&self, buf: &[u8]) -> Result<HeadStatus, DecodeError> {
///         if let Some(&magic) = buf.first() {
///             if magic != 0xC7 {
///                 return Err(DecodeError::malformed(format!(
///                     "tiny codec: bad magic byte {magic:#04x}"
///                 )));
///             }
///         }
///         let Some(h) = buf.get(..12) else {
///             return Ok(HeadStatus::NeedMore { at_least: 12 });
///         };
///         let word = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
///         Ok(HeadStatus::Head(FrameHead {
///             cmd_id: word(2),
///             seq: word(6),
///             head_len: 12,
///             body_len: u32::from(u16::from_be_bytes([h[10], h[11]])),
///         }))
///     }
///     fn encode(&self, frame: &Frame, dst: &mut BytesMut) -> Result<(), EncodeError> {
///         let len = u16::try_from(frame.body.len()).map_err(|_| EncodeError::BodyTooLarge {
///             len: frame.body.len(),
///             max: usize::from(u16::MAX),
///         })?;
///         dst.reserve(12 + frame.body.len());
///         dst.put_u8(0xC7);
///         dst.put_u8(1);
///         dst.put_u32(frame.cmd_id);
///         dst.put_u32(frame.seq);
///         dst.put_u16(len);
///         dst.put_slice(&frame.body);
///         Ok(())
///     }
/// }
///
/// let mut wire = BytesMut::new();
/// Tiny.encode(&Frame::new(1001, 7, &b"hello"[..]), &mut wire).unwrap();
/// assert_eq!(wire.len(), 17);
/// let mut decoder = FrameDecoder::with_codec(Tiny, 1024);
/// let frame = decoder.decode(&mut &wire[..]).unwrap().unwrap();
/// assert_eq!((frame.cmd_id, frame.seq, &frame.body[..]), (1001, 7, &b"hello"[..]));
///
/// // A 20-byte Mars header is refused at its first byte, naming the cause.
/// let mars = stn_proto::codec::longlink::encode_to_bytes(&Frame::noop(), 0).unwrap();
/// let err = FrameDecoder::with_codec(Tiny, 1024).decode(&mut &mars[..]).unwrap_err();
/// assert_eq!(err.to_string(), "malformed long-link frame: tiny codec: bad magic byte 0x00");
/// ```
pub trait LongLinkCodec: fmt::Debug + Send + Sync {
    /// The most header bytes [`decode_head`](Self::decode_head) may ask for
    /// or a [`FrameHead::head_len`] may announce; a decoder holds no more
    /// header than this.
    fn max_head_len(&self) -> usize;

    /// Parses the header at the front of `buf`, which holds the received
    /// bytes from the frame's first byte on (possibly fewer than a header,
    /// possibly body bytes and later frames too). Returns
    /// [`HeadStatus::NeedMore`] until the header is in, then
    /// [`HeadStatus::Head`]. Mars `longlink_unpack` without the body copy.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] naming what is wrong as soon as the bytes cannot be
    /// a valid header (wrong magic or version, a bad length): the stream has
    /// lost framing and the connection is failed. Use
    /// [`DecodeError::malformed`] for a codec's own reasons.
    fn decode_head(&self, buf: &[u8]) -> Result<HeadStatus, DecodeError>;

    /// Appends `frame`, header and body, to `dst` (Mars `longlink_pack`).
    /// The caller has already refused bodies over its configured cap.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BodyTooLarge`] if the format cannot carry the body;
    /// nothing is written then.
    fn encode(&self, frame: &Frame, dst: &mut BytesMut) -> Result<(), EncodeError>;

    /// The heartbeat request the client writes (Mars `longlink_noop_cmdid`
    /// and `longlink_noop_req_body`). Default: cmd id 6, seq
    /// [`NOOP_SEQ`](super::longlink::NOOP_SEQ), empty body.
    fn noop_request(&self) -> Frame {
        Frame::noop()
    }

    /// Whether a received frame is a heartbeat: a noop response on the
    /// client, a noop request on the server (Mars `longlink_noop_isresp`).
    /// The client consumes it (the body is not delivered: Mars's
    /// `longlink_noop_resp_body` only inspects it). Default: cmd id 6, any
    /// seq, as stn has always matched it.
    fn is_noop(&self, frame: &Frame) -> bool {
        frame.cmd_id == NOOP_CMD_ID
    }

    /// The heartbeat answer the reference server writes for a received noop
    /// `request`. Default: the request echoed (the Mars sample server).
    fn noop_response(&self, request: &Frame) -> Frame {
        request.clone()
    }

    /// Whether a received frame is a server push (Mars `longlink_ispush`).
    /// Default: seq [`PUSH_SEQ`] (0).
    fn is_push(&self, frame: &Frame) -> bool {
        frame.seq == PUSH_SEQ
    }

    /// Whether a received frame answers the identify packet, which the
    /// client sends with seq [`IDENTIFY_SEQ`] (Mars
    /// `longlink_identify_isresp`: the received seq equals the sent one).
    fn is_identify_response(&self, frame: &Frame) -> bool {
        frame.seq == IDENTIFY_SEQ
    }
}

/// A shared codec as configuration holds it: compared by identity, so
/// configs stay `PartialEq` (two configs are equal when they hold the same
/// codec instance).
///
/// ```
/// use stn_proto::codec::{MarsCodec, SharedCodec};
/// let codec = SharedCodec::new(MarsCodec::default());
/// assert_eq!(codec, codec.clone());
/// assert_ne!(codec, SharedCodec::new(MarsCodec::default()));
/// ```
#[derive(Clone)]
pub struct SharedCodec(Arc<dyn LongLinkCodec>);

impl SharedCodec {
    /// Wraps `codec` for sharing.
    pub fn new(codec: impl LongLinkCodec + 'static) -> Self {
        SharedCodec(Arc::new(codec))
    }

    /// The codec.
    pub fn get(&self) -> &dyn LongLinkCodec {
        &*self.0
    }
}

impl From<Arc<dyn LongLinkCodec>> for SharedCodec {
    fn from(codec: Arc<dyn LongLinkCodec>) -> Self {
        SharedCodec(codec)
    }
}

impl fmt::Debug for SharedCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for SharedCodec {
    fn eq(&self, other: &Self) -> bool {
        // Data pointers only: vtable pointers may differ for one type.
        std::ptr::eq(
            Arc::as_ptr(&self.0).cast::<()>(),
            Arc::as_ptr(&other.0).cast::<()>(),
        )
    }
}

impl Eq for SharedCodec {}

/// Mars's 20-byte header (`longlink_packer.cc`), the default codec; see
/// [`longlink`](super::longlink) for the layout. The client version and the
/// caps are its own: received frames must carry exactly
/// [`CodecConfig::client_version`], `head_length` must be within
/// `20..=max_head_len` (extension bytes are skipped) and `body_length`
/// within `max_body_len`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarsCodec {
    config: CodecConfig,
}

impl MarsCodec {
    /// The codec with these settings.
    pub fn new(config: CodecConfig) -> Self {
        MarsCodec { config }
    }

    /// Its settings.
    pub fn config(&self) -> &CodecConfig {
        &self.config
    }
}

impl From<CodecConfig> for MarsCodec {
    fn from(config: CodecConfig) -> Self {
        MarsCodec::new(config)
    }
}

impl LongLinkCodec for MarsCodec {
    fn max_head_len(&self) -> usize {
        self.config.head_cap() as usize
    }

    fn decode_head(&self, buf: &[u8]) -> Result<HeadStatus, DecodeError> {
        let Some(header) = buf.first_chunk::<HEADER_LEN>() else {
            return Ok(HeadStatus::NeedMore {
                at_least: HEADER_LEN,
            });
        };
        check_header(&self.config, header).map(HeadStatus::Head)
    }

    fn encode(&self, frame: &Frame, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let len = frame.body.len();
        if len > u32::MAX as usize {
            return Err(EncodeError::BodyTooLarge {
                len,
                max: u32::MAX as usize,
            });
        }
        encode_unchecked(frame, self.config.client_version, dst);
        Ok(())
    }
}

/// Parses and validates the 20 known header bytes against `config`, in
/// Mars's order: header length, client version, body length.
fn check_header(config: &CodecConfig, buf: &[u8; HEADER_LEN]) -> Result<FrameHead, DecodeError> {
    let field = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    let head_len = field(0);
    let client_version = field(4);
    let body_len = field(16);
    let max_head = config.head_cap();
    let min_head = HEADER_LEN as u32;
    if !(min_head..=max_head).contains(&head_len) {
        return Err(DecodeError::HeadLength {
            head_len,
            min: min_head,
            max: max_head,
        });
    }
    if client_version != config.client_version {
        return Err(DecodeError::ClientVersion {
            expected: config.client_version,
            got: client_version,
        });
    }
    if usize::try_from(body_len).map_or(true, |len| len > config.max_body_len) {
        return Err(DecodeError::BodyTooLarge {
            len: body_len,
            max: config.max_body_len,
        });
    }
    Ok(FrameHead {
        cmd_id: field(8),
        seq: field(12),
        head_len: head_len as usize,
        body_len,
    })
}
