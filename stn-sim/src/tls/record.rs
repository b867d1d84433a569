//! The record layer: `[content type][0x03 0x03][length u16]` then a body
//! whose first byte says which message it is (standing in for TLS 1.3's
//! inner content type) and filler or application bytes.

use crate::tls::{MAX_PLAINTEXT, RECORD_OVERHEAD};

/// Record header bytes.
const HEADER: usize = 5;
/// The AEAD tag of an application-data record.
const TAG: usize = RECORD_OVERHEAD - HEADER - 1;
/// Largest body accepted (RFC 8446 §5.2: 2^14 + 256).
const MAX_BODY: usize = MAX_PLAINTEXT + 256;

/// The server's first flight, by what the ClientHello got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flight {
    /// A full handshake: the certificate chain.
    Full,
    /// A resumption; early data, if offered, rejected.
    Resumed,
    /// A resumption whose early data the server accepted
    /// (EncryptedExtensions carries `early_data`).
    ResumedEarly,
}

/// Which message a record carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Message {
    ClientHello {
        psk: bool,
    },
    ServerFlight(Flight),
    ClientFinished,
    Ticket,
    AppData,
    /// Application data sent before the handshake completed (0-RTT).
    EarlyData,
    EndOfEarlyData,
}

impl Message {
    fn tag(self) -> u8 {
        match self {
            Message::ClientHello { psk: false } => 1,
            Message::ClientHello { psk: true } => 2,
            Message::ServerFlight(Flight::Full) => 3,
            Message::ServerFlight(Flight::Resumed) => 4,
            Message::ClientFinished => 5,
            Message::Ticket => 6,
            Message::AppData => 7,
            Message::ServerFlight(Flight::ResumedEarly) => 8,
            Message::EarlyData => 9,
            Message::EndOfEarlyData => 10,
        }
    }

    fn from_tag(t: u8) -> Option<Message> {
        Some(match t {
            1 => Message::ClientHello { psk: false },
            2 => Message::ClientHello { psk: true },
            3 => Message::ServerFlight(Flight::Full),
            4 => Message::ServerFlight(Flight::Resumed),
            5 => Message::ClientFinished,
            6 => Message::Ticket,
            7 => Message::AppData,
            8 => Message::ServerFlight(Flight::ResumedEarly),
            9 => Message::EarlyData,
            10 => Message::EndOfEarlyData,
            _ => return None,
        })
    }

    /// Whether the record's bytes after the tag are data (application or
    /// early data, the tag stripped) or fields the model reads (a
    /// ClientHello's, a ticket's); other messages are filler alone.
    fn payload(self) -> Payload {
        match self {
            Message::AppData | Message::EarlyData => Payload::Data,
            Message::ClientHello { .. } | Message::Ticket => Payload::Fields,
            _ => Payload::None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Payload {
    None,
    Data,
    Fields,
}

/// The most field bytes a handshake message's filler carries.
pub(crate) const MAX_FIELDS: usize = 64;

/// Appends a handshake message of `len` bytes on the wire (header
/// included) to `out`.
pub(crate) fn handshake(out: &mut Vec<u8>, msg: Message, len: usize) {
    handshake_with(out, msg, len, &[]);
}

/// [`handshake`] with `fields` at the start of the filler (what the model
/// needs of the message: a ticket's identity, a ClientHello's name),
/// truncated to the message's size and to [`MAX_FIELDS`].
pub(crate) fn handshake_with(out: &mut Vec<u8>, msg: Message, len: usize, fields: &[u8]) {
    let body = len.saturating_sub(HEADER).clamp(1, MAX_BODY);
    // ClientHello and ServerHello travel as handshake records (22); what
    // follows is encrypted and looks like application data (23).
    let ct = if matches!(msg, Message::ClientHello { .. }) {
        22
    } else {
        23
    };
    push_header(out, ct, body);
    out.push(msg.tag());
    let start = out.len();
    out.resize(start + body - 1, 0);
    let n = fields.len().min(body - 1).min(MAX_FIELDS);
    out[start..start + n].copy_from_slice(&fields[..n]);
}

/// Appends `data` as application-data records to `out`.
pub(crate) fn app_data(out: &mut Vec<u8>, data: &[u8]) {
    data_records(out, Message::AppData, data);
}

/// Appends `data` as early-data records (0-RTT) to `out`.
pub(crate) fn early_data(out: &mut Vec<u8>, data: &[u8]) {
    data_records(out, Message::EarlyData, data);
}

fn data_records(out: &mut Vec<u8>, msg: Message, data: &[u8]) {
    for chunk in data.chunks(MAX_PLAINTEXT) {
        push_header(out, 23, chunk.len() + 1 + TAG);
        out.push(msg.tag());
        out.extend_from_slice(chunk);
        out.resize(out.len() + TAG, 0);
    }
}

fn push_header(out: &mut Vec<u8>, ct: u8, body: usize) {
    let len = u16::try_from(body).unwrap_or(u16::MAX);
    out.extend_from_slice(&[ct, 3, 3]);
    out.extend_from_slice(&len.to_be_bytes());
}

/// A record that does not parse: the peer does not speak this TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadRecord;

/// Splits a byte stream into records; holds at most one partial record.
#[derive(Debug, Default)]
pub(crate) struct RecordReader {
    buf: Vec<u8>,
}

impl RecordReader {
    /// Adds received bytes and returns every record now complete, in
    /// order: the message and, for application and early data, its bytes;
    /// for a ClientHello or a ticket, the first [`MAX_FIELDS`] bytes after
    /// the tag.
    pub(crate) fn push(&mut self, data: &[u8]) -> Result<Vec<(Message, Vec<u8>)>, BadRecord> {
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let rest = &self.buf[at..];
            if rest.len() < HEADER {
                break;
            }
            let body = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
            if !matches!(rest[0], 22 | 23) || rest[1] != 3 || body == 0 || body > MAX_BODY {
                return Err(BadRecord);
            }
            if rest.len() < HEADER + body {
                break;
            }
            let msg = Message::from_tag(rest[HEADER]).ok_or(BadRecord)?;
            let payload = match msg.payload() {
                Payload::Data => {
                    let end = (HEADER + body).checked_sub(TAG).ok_or(BadRecord)?;
                    rest.get(HEADER + 1..end).ok_or(BadRecord)?.to_vec()
                }
                Payload::Fields => {
                    let end = HEADER + body.min(1 + MAX_FIELDS);
                    rest.get(HEADER + 1..end).unwrap_or_default().to_vec()
                }
                Payload::None => Vec::new(),
            };
            out.push((msg, payload));
            at += HEADER + body;
        }
        self.buf.drain(..at);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_in_any_chunking() {
        let mut wire = Vec::new();
        handshake(&mut wire, Message::ServerFlight(Flight::Full), 4200);
        assert_eq!(wire.len(), 4200);
        let data: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
        app_data(&mut wire, &data);
        assert_eq!(wire.len(), 4200 + data.len() + 3 * RECORD_OVERHEAD);
        for chunk in [1, 7, 1460, wire.len()] {
            let mut r = RecordReader::default();
            let mut got = Vec::new();
            for c in wire.chunks(chunk) {
                got.extend(r.push(c).unwrap());
            }
            assert_eq!(got[0].0, Message::ServerFlight(Flight::Full));
            let app: Vec<u8> = got[1..].iter().flat_map(|(_, d)| d.clone()).collect();
            assert_eq!(app, data);
        }
    }

    #[test]
    fn garbage_is_refused_not_buffered() {
        let mut r = RecordReader::default();
        assert_eq!(r.push(b"HTTP/1.1 200 OK\r\n"), Err(BadRecord));
        let mut r = RecordReader::default();
        assert_eq!(r.push(&[23, 3, 3, 0xFF, 0xFF]), Err(BadRecord));
    }
}
