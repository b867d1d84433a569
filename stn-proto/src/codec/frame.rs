//! The long-link frame (Mars `longlink_packer.cc`): what a frame is, the
//! header's constants, the codec settings and errors, and Mars's 20-byte
//! encoding. [`super::longlink`] re-exports all of it beside the decoder.

use bytes::{BufMut, Bytes, BytesMut};

/// Length of the fixed header we encode, and the smallest `head_length` a
/// decoder accepts.
pub const HEADER_LEN: usize = 20;
/// Command id of the heartbeat (noop) request and of its response.
pub const NOOP_CMD_ID: u32 = 6;
/// Command id of the signalling-keep packet (Mars sends it over UDP, §5.6).
pub const SIGNAL_KEEP_CMD_ID: u32 = 243;
/// Sequence number of a server push.
pub const PUSH_SEQ: u32 = 0;
/// Sequence number of a noop (heartbeat).
pub const NOOP_SEQ: u32 = 0xFFFF_FFFF;
/// Sequence number of the identify (auth check) request (§5.4).
pub const IDENTIFY_SEQ: u32 = 0xFFFF_FFFE;
/// Default cap on a frame body: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;
/// Default cap on a received `head_length` (header plus extension bytes).
pub const DEFAULT_MAX_HEAD: u32 = 64;

/// One long-link frame: a command id, a sequence number and an opaque body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Command id (the task's cmdid; [`NOOP_CMD_ID`] for heartbeats).
    pub cmd_id: u32,
    /// Sequence number: the task id, [`PUSH_SEQ`] for server pushes,
    /// [`NOOP_SEQ`] for heartbeats, [`IDENTIFY_SEQ`] for the identify check.
    pub seq: u32,
    /// The body, opaque to stn (the app's own serialisation).
    pub body: Bytes,
}

impl Frame {
    /// A frame with the given fields.
    pub fn new(cmd_id: u32, seq: u32, body: impl Into<Bytes>) -> Self {
        Frame {
            cmd_id,
            seq,
            body: body.into(),
        }
    }

    /// The heartbeat request: cmd id [`NOOP_CMD_ID`], seq [`NOOP_SEQ`], empty body.
    pub fn noop() -> Self {
        Frame::new(NOOP_CMD_ID, NOOP_SEQ, Bytes::new())
    }

    /// Whether this is a server push (`seq == 0`, Mars's `ispush`).
    pub fn is_push(&self) -> bool {
        self.seq == PUSH_SEQ
    }

    /// Whether this is a noop / heartbeat response (`cmd_id == 6`, Mars's
    /// `noop_isresp`; the seq is not checked, as in Mars).
    pub fn is_noop(&self) -> bool {
        self.cmd_id == NOOP_CMD_ID
    }

    /// Bytes this frame occupies on the wire when encoded: header plus body.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + self.body.len()
    }
}

/// Codec settings shared by the encoder and the decoder of one long link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodecConfig {
    /// Our client version, written into every frame; received frames must
    /// carry exactly this value (Mars `SetClientVersion`, default 0).
    pub client_version: u32,
    /// Largest body accepted by the decoder and by [`CodecConfig::encode`].
    /// Mars caps the whole package (`head_length + body_length`) at 1 MiB;
    /// stn caps the body and the header separately, so the largest accepted
    /// package is `max_head_len + max_body_len`.
    pub max_body_len: usize,
    /// Largest `head_length` accepted; values `20..=max_head_len` are valid
    /// and bytes past the 20 known ones are skipped. Values below 20 are
    /// treated as 20. Mars accepts any value within its package cap (and
    /// misbehaves below 20); a small cap keeps garbage from hiding frames.
    pub max_head_len: u32,
}

impl CodecConfig {
    /// Encodes `frame` with this configuration's client version, refusing a
    /// body larger than [`max_body_len`](Self::max_body_len): a peer with the
    /// same limits would reject it and drop the connection, so failing only
    /// the offending task is better.
    pub fn encode(&self, frame: &Frame, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let max = self.max_body_len.min(u32::MAX as usize);
        check_body_len(frame.body.len(), max)?;
        encode_unchecked(frame, self.client_version, dst);
        Ok(())
    }

    /// The accepted `head_length` range's upper end (never below 20).
    pub(crate) fn head_cap(&self) -> u32 {
        self.max_head_len.max(HEADER_LEN as u32)
    }
}

/// Why a frame could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The body does not fit the limit (`u32::MAX` for [`encode`], the
    /// configured cap for [`CodecConfig::encode`]).
    #[error("frame body of {len} bytes exceeds the limit of {max} bytes")]
    BodyTooLarge {
        /// The body's length.
        len: usize,
        /// The limit it exceeded.
        max: usize,
    },
}

/// Why the received byte stream is not a valid sequence of frames. Every
/// variant is fatal for the connection: the decoder is poisoned and keeps
/// returning the same error until [`FrameDecoder::reset`](super::longlink::FrameDecoder::reset).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// `head_length` outside `20..=max_head_len`.
    #[error("bad long-link header length {head_len}: expected {min}..={max}")]
    HeadLength {
        /// The received `head_length`.
        head_len: u32,
        /// Smallest accepted value (20).
        min: u32,
        /// Largest accepted value (the configured `max_head_len`).
        max: u32,
    },
    /// The frame's client version differs from ours (Mars: unpack fails).
    #[error("long-link client version mismatch: expected {expected:#x}, got {got:#x}")]
    ClientVersion {
        /// Our configured client version.
        expected: u32,
        /// The version in the received header.
        got: u32,
    },
    /// `body_length` larger than the configured cap.
    #[error("long-link frame body of {len} bytes exceeds the limit of {max} bytes")]
    BodyTooLarge {
        /// The received `body_length`.
        len: u32,
        /// The configured `max_body_len`.
        max: usize,
    },
    /// A [`LongLinkCodec`](super::LongLinkCodec) asked for, or announced, a header longer than
    /// its own [`LongLinkCodec::max_head_len`](super::LongLinkCodec::max_head_len).
    #[error("long-link frame header of {len} bytes exceeds the codec's limit of {max} bytes")]
    HeadTooLong {
        /// The header length asked for or announced.
        len: usize,
        /// The codec's `max_head_len`.
        max: usize,
    },
    /// The bytes are not a header of the codec in use, for the reason given
    /// (a custom codec's own check, or a codec that broke its contract).
    #[error("malformed long-link frame: {reason}")]
    Malformed {
        /// What is wrong, in words.
        reason: String,
    },
}

impl DecodeError {
    /// A [`DecodeError::Malformed`] with this reason, for a codec's own
    /// checks (a bad magic number, an unknown version).
    pub fn malformed(reason: impl Into<String>) -> Self {
        DecodeError::Malformed {
            reason: reason.into(),
        }
    }
}

/// Appends `frame` to `dst` with `head_length = 20` and the given client
/// version. The only limit is the wire format's: a body longer than
/// `u32::MAX` bytes is refused. Use [`CodecConfig::encode`] to also enforce
/// the configured body cap.
pub fn encode(frame: &Frame, client_version: u32, dst: &mut BytesMut) -> Result<(), EncodeError> {
    check_body_len(frame.body.len(), u32::MAX as usize)?;
    encode_unchecked(frame, client_version, dst);
    Ok(())
}

/// [`encode`] into a fresh buffer of exactly [`Frame::encoded_len`] bytes.
pub fn encode_to_bytes(frame: &Frame, client_version: u32) -> Result<Bytes, EncodeError> {
    check_body_len(frame.body.len(), u32::MAX as usize)?;
    let mut dst = BytesMut::with_capacity(frame.encoded_len());
    encode_unchecked(frame, client_version, &mut dst);
    Ok(dst.freeze())
}

fn check_body_len(len: usize, max: usize) -> Result<(), EncodeError> {
    if len > max {
        return Err(EncodeError::BodyTooLarge { len, max });
    }
    Ok(())
}

/// Caller has checked that the body length fits in a `u32`.
pub(crate) fn encode_unchecked(frame: &Frame, client_version: u32, dst: &mut BytesMut) {
    dst.reserve(frame.encoded_len());
    dst.put_u32(HEADER_LEN as u32);
    dst.put_u32(client_version);
    dst.put_u32(frame.cmd_id);
    dst.put_u32(frame.seq);
    dst.put_u32(frame.body.len() as u32);
    dst.put_slice(&frame.body);
}
