//! A real alternative long-link format for the codec tests, unlike Mars's
//! fixed 20-byte header in every field: a 2-byte magic, then the cmd id, the
//! seq and the body length as LEB128 varints (1 to 5 bytes each), then the
//! body. Its heartbeat is its own too: cmd id 1 with body `ping`, answered
//! with `pong`.

use bytes::{BufMut, BytesMut};
use stn_driver::proto::codec::longlink::{DecodeError, EncodeError, Frame, NOOP_SEQ};
use stn_driver::proto::codec::{FrameHead, HeadStatus, LongLinkCodec};

/// First two bytes of every frame.
pub const MAGIC: [u8; 2] = [0xA5, 0x5A];
/// The heartbeat's cmd id.
pub const NOOP_CMD: u32 = 1;
/// A `u32` takes at most 5 LEB128 bytes.
const MAX_VARINT: usize = 5;
/// Magic plus three varints.
pub const MAX_HEAD: usize = MAGIC.len() + 3 * MAX_VARINT;

/// See the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub struct VarintCodec;

/// Appends `v` as LEB128.
pub fn put_varint(dst: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        dst.put_u8((v & 0x7F) as u8 | 0x80);
        v >>= 7;
    }
    dst.put_u8(v as u8);
}

/// The varint at `buf[pos..]` and the position after it; `None` if it has
/// not all arrived.
fn varint(buf: &[u8], pos: usize, what: &str) -> Result<Option<(u32, usize)>, DecodeError> {
    let mut value = 0u64;
    for i in 0..MAX_VARINT {
        let Some(&byte) = buf.get(pos + i) else {
            return Ok(None);
        };
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            let value = u32::try_from(value).map_err(|_| {
                DecodeError::malformed(format!("varint codec: {what} {value} exceeds u32"))
            })?;
            return Ok(Some((value, pos + i + 1)));
        }
    }
    Err(DecodeError::malformed(format!(
        "varint codec: {what} longer than {MAX_VARINT} bytes"
    )))
}

impl LongLinkCodec for VarintCodec {
    fn max_head_len(&self) -> usize {
        MAX_HEAD
    }

    fn decode_head(&self, buf: &[u8]) -> Result<HeadStatus, DecodeError> {
        // Refuse a foreign stream at its first wrong byte.
        for (i, (&got, &want)) in buf.iter().zip(&MAGIC).enumerate() {
            if got != want {
                return Err(DecodeError::malformed(format!(
                    "varint codec: magic byte {i} is {got:#04x}, expected {want:#04x}"
                )));
            }
        }
        let more = Ok(HeadStatus::NeedMore {
            at_least: (buf.len() + 1).max(MAGIC.len()),
        });
        if buf.len() < MAGIC.len() {
            return more;
        }
        let Some((cmd_id, pos)) = varint(buf, MAGIC.len(), "cmd id")? else {
            return more;
        };
        let Some((seq, pos)) = varint(buf, pos, "seq")? else {
            return more;
        };
        let Some((body_len, pos)) = varint(buf, pos, "body length")? else {
            return more;
        };
        Ok(HeadStatus::Head(FrameHead {
            cmd_id,
            seq,
            head_len: pos,
            body_len,
        }))
    }

    fn encode(&self, frame: &Frame, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let len = u32::try_from(frame.body.len()).map_err(|_| EncodeError::BodyTooLarge {
            len: frame.body.len(),
            max: u32::MAX as usize,
        })?;
        dst.reserve(MAX_HEAD + frame.body.len());
        dst.put_slice(&MAGIC);
        put_varint(dst, frame.cmd_id);
        put_varint(dst, frame.seq);
        put_varint(dst, len);
        dst.put_slice(&frame.body);
        Ok(())
    }

    fn noop_request(&self) -> Frame {
        Frame::new(NOOP_CMD, NOOP_SEQ, &b"ping"[..])
    }

    fn is_noop(&self, frame: &Frame) -> bool {
        frame.cmd_id == NOOP_CMD
    }

    fn noop_response(&self, request: &Frame) -> Frame {
        Frame::new(NOOP_CMD, request.seq, &b"pong"[..])
    }
}

/// `frame` in the varint format.
pub fn encode(frame: &Frame) -> BytesMut {
    let mut wire = BytesMut::new();
    VarintCodec.encode(frame, &mut wire).expect("encodable");
    wire
}

/// A varint-codec header announcing a body of `len` bytes, no body.
pub fn header_announcing(cmd_id: u32, seq: u32, len: u32) -> BytesMut {
    let mut wire = BytesMut::new();
    wire.put_slice(&MAGIC);
    put_varint(&mut wire, cmd_id);
    put_varint(&mut wire, seq);
    put_varint(&mut wire, len);
    wire
}
