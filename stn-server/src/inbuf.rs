//! A connection's read buffer: allocated only once a byte has arrived,
//! grown toward the size the message in progress needs, charged to the
//! server's [`Budget`] byte for byte, and freed when empty.

use std::io;

use super::ServerStream;
use bytes::BytesMut;

use super::budget::{Budget, Charge};

/// The first allocation for a message of unknown size (an HTTP head, a
/// long-link header): enough for an ordinary request in one read.
const FIRST_CHUNK: usize = 4 * 1024;

/// See the module docs.
#[derive(Debug)]
pub(super) struct InBuf<'a> {
    buf: BytesMut,
    charge: Charge<'a>,
}

impl<'a> InBuf<'a> {
    pub(super) fn new(budget: &'a Budget) -> Self {
        InBuf {
            buf: BytesMut::new(),
            charge: Charge::new(budget),
        }
    }

    /// The bytes received and not yet taken.
    pub(super) fn bytes(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Waits until `stream` has data, makes room (waiting for the budget if
    /// it is full) and reads once. `want` is the total buffered length the
    /// message in progress needs, if known; growth is geometric toward it,
    /// so a peer must send about half of what is allocated for it.
    ///
    /// Returns the bytes read; 0 means the peer closed its side. Cancel safe:
    /// no data is lost if the future is dropped.
    /// A TLS stream may hold decrypted bytes while its socket is not
    /// readable, so its buffer is made ready first, then read into.
    pub(super) async fn read_from(
        &mut self,
        stream: &mut ServerStream,
        want: usize,
    ) -> io::Result<usize> {
        if stream.is_tls() {
            while self.buf.len() == self.buf.capacity() {
                if self.grow(want) {
                    break;
                }
                self.charge.budget_wait().await;
            }
            return tokio::io::AsyncReadExt::read_buf(stream, &mut self.buf).await;
        }
        let stream = stream.tcp();
        if self.buf.capacity() == 0 {
            // An idle connection holds no buffer, and `readable` also fires
            // for a socket with nothing to read (a fresh accept): wait for a
            // byte without taking it (or the end), then allocate.
            if stream.peek(&mut [0u8; 1]).await? == 0 {
                return Ok(0);
            }
        }
        loop {
            stream.readable().await?;
            while self.buf.len() == self.buf.capacity() {
                if self.grow(want) {
                    break;
                }
                self.charge.budget_wait().await;
            }
            match stream.try_read_buf(&mut self.buf) {
                Ok(n) => return Ok(n),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
                Err(err) => return Err(err),
            }
        }
    }

    /// Reallocates with more room, if the budget allows. Copies what is
    /// buffered: an exact allocation keeps the charge equal to the memory.
    ///
    /// The new capacity doubles (and is at least [`FIRST_CHUNK`] past what
    /// is buffered) but stops at `want` when the message's length is known.
    /// A head of unknown length (`want` one byte past what is buffered) is
    /// read `FIRST_CHUNK` at a time, not a byte per read.
    fn grow(&mut self, want: usize) -> bool {
        let len = self.buf.len();
        let doubled = self.buf.capacity().saturating_mul(2).max(len + FIRST_CHUNK);
        let want = if want <= len + 1 {
            len + FIRST_CHUNK
        } else {
            want
        };
        let new_cap = want.min(doubled);
        if !self.charge.try_set(new_cap) {
            return false;
        }
        let mut grown = BytesMut::with_capacity(new_cap);
        grown.extend_from_slice(&self.buf);
        self.buf = grown;
        self.recharge();
        true
    }

    /// Makes the charge the buffer's capacity (the allocator may give more
    /// than asked; shrinking always succeeds).
    fn recharge(&mut self) {
        let cap = self.buf.capacity();
        if !self.charge.try_set(cap) {
            self.charge.force_add(cap - self.charge.held());
        }
    }

    /// After messages were taken off the front: frees the buffer when empty,
    /// or moves the rest into an exact allocation (the old one stays alive
    /// while taken messages borrow it, so the charge would undercount).
    pub(super) fn compact(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        } else if self.buf.len() < self.buf.capacity() {
            self.buf = BytesMut::from(&self.buf[..]);
        }
        self.recharge();
    }
}
