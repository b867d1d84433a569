//! The sender's byte queue: application bytes from `snd_una` on, sent or
//! not, and where the FIN goes.

use bytes::Bytes;

/// Unacknowledged and unsent bytes; `buf[0]` has sequence number `start`.
#[derive(Clone, Debug)]
pub(crate) struct SendBuffer {
    buf: Vec<u8>,
    start: u64,
    /// Sequence number of our FIN once the application closed.
    fin_seq: Option<u64>,
}

impl SendBuffer {
    /// Empty, the first data byte at `start`.
    pub(crate) fn new(start: u64) -> Self {
        SendBuffer {
            buf: Vec::new(),
            start,
            fin_seq: None,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// One past the last queued byte.
    pub(crate) fn data_end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// The FIN's sequence number, once closed.
    pub(crate) fn fin_seq(&self) -> Option<u64> {
        self.fin_seq
    }

    /// Closes: the FIN follows the queued bytes.
    pub(crate) fn close(&mut self) {
        self.fin_seq = Some(self.data_end());
    }

    /// Bytes `[seq, seq + len)`.
    pub(crate) fn slice(&self, seq: u64, len: u64) -> Bytes {
        let off = (seq - self.start) as usize;
        Bytes::copy_from_slice(&self.buf[off..off + len as usize])
    }

    /// Drops the bytes before `ack`.
    pub(crate) fn release(&mut self, ack: u64) {
        let upto = ack.min(self.data_end());
        if upto > self.start {
            self.buf.drain(..(upto - self.start) as usize);
            self.start = upto;
        }
    }

    /// The segment that starts at `seq`: its payload length (at most
    /// `mss`, at most `room`), whether it carries the FIN and whether it
    /// ends the queued data (PSH). `None` when nothing is left from `seq`.
    pub(crate) fn next_segment(&self, seq: u64, mss: u64, room: u64) -> Option<(u64, bool, bool)> {
        let end = self.data_end();
        if seq < end {
            let len = mss.min(end - seq).min(room);
            let fin = self.fin_seq == Some(seq + len);
            Some((len, fin, seq + len == end))
        } else if self.fin_seq == Some(seq) {
            Some((0, true, false))
        } else {
            None
        }
    }
}
