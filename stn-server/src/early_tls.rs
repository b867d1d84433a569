//! TLS with early data (0-RTT) on the reference server: a rustls
//! `ServerConnection` driven over the TCP socket by hand.
//!
//! tokio-rustls' acceptor finishes the handshake before the server reads a
//! byte, so a request sent as early data would wait for the client's
//! Finished, a round trip after its ClientHello, and gain nothing. Here the
//! accept ends as soon as the ClientHello is processed with its early data
//! accepted; reads return the early data first and the reply goes out as
//! half-RTT data (`ServerConfig::send_half_rtt_data`), right behind the
//! server's handshake flight. A connection whose early data is refused, or
//! that carries none, completes its handshake in the accept as tokio-rustls'
//! does: the server's wait for a first request never includes the
//! handshake's round trip.
//!
//! Replays: rustls accepts early data only on a stateful resumption (the
//! default without a ticketer), and the session cache hands each session out
//! once, so one server never accepts the same early data twice.

use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use rustls::{ServerConfig, ServerConnection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most early data a session allows (`max_early_data_size` in its
/// tickets): one record, as rustls' and BoringSSL's servers use when they
/// turn early data on. Large enough for any request a task would send early.
pub const MAX_EARLY_DATA: u32 = 16_384;

/// Turns on early data in `config`: tickets allow [`MAX_EARLY_DATA`] bytes
/// of 0-RTT data and replies may go out before the client's Finished.
/// The reference server's apps (echo, delay, sizes) are idempotent; a server
/// whose handlers are not must not accept early data (RFC 8446 §8).
pub fn enable_early_data(config: &mut ServerConfig) {
    config.max_early_data_size = MAX_EARLY_DATA;
    config.send_half_rtt_data = true;
}

/// One server-side TLS connection that may read early data.
pub(super) struct EarlyTls {
    tcp: TcpStream,
    conn: ServerConnection,
    /// The ClientHello's early data was accepted.
    accepted: bool,
    /// Early data taken from rustls during the accept and not read yet (at
    /// most the session's `max_early_data_size`, which rustls enforces).
    early: Bytes,
    /// The socket reached end of stream.
    eof: bool,
}

impl EarlyTls {
    /// Runs the handshake until the early data is accepted or the handshake
    /// is done (the caller bounds it in time).
    pub(super) async fn accept(tcp: TcpStream, config: Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(config).map_err(io::Error::other)?;
        let mut tls = EarlyTls {
            tcp,
            conn,
            accepted: false,
            early: Bytes::new(),
            eof: false,
        };
        poll_fn(|cx| tls.poll_accept(cx)).await?;
        Ok(tls)
    }

    /// The socket underneath.
    pub(super) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// The client's early data was accepted.
    pub(super) fn early_accepted(&self) -> bool {
        self.accepted
    }

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.poll_write_tls(cx))?;
            if !self.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if let Some(mut early) = self.conn.early_data() {
                self.accepted = true;
                // Ends once some of the request is here; early data that
                // never comes (an offer with none sent) waits for the
                // handshake's end like any connection.
                let mut taken = Vec::new();
                early.read_to_end(&mut taken)?;
                if !taken.is_empty() {
                    self.early = taken.into();
                    return Poll::Ready(Ok(()));
                }
            }
            if ready!(self.poll_read_tls(cx))? == 0 {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }

    /// Reads what the socket has into rustls and processes it; `Ok(0)` at
    /// end of stream. A TLS error sends its alert and is returned.
    fn poll_read_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let n = loop {
            ready!(self.tcp.poll_read_ready(cx))?;
            match self.conn.read_tls(&mut TryIo(&self.tcp)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
                Ok(n) => break n,
            }
        };
        if n == 0 {
            self.eof = true;
        }
        if let Err(e) = self.conn.process_new_packets() {
            // The alert rustls queued goes out if the socket takes it now.
            let _ = self.conn.write_tls(&mut TryIo(&self.tcp));
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        Poll::Ready(Ok(n))
    }

    /// Writes rustls' pending records to the socket.
    fn poll_write_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.conn.wants_write() {
            ready!(self.tcp.poll_write_ready(cx))?;
            match self.conn.write_tls(&mut TryIo(&self.tcp)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
                Ok(_) => {}
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for EarlyTls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if !this.early.is_empty() {
            let n = buf.remaining().min(this.early.len());
            buf.put_slice(&this.early.split_to(n));
            return Poll::Ready(Ok(()));
        }
        loop {
            // Early data comes first: the client sends nothing else before
            // its Finished.
            if let Some(mut early) = this.conn.early_data() {
                let n = early.read(buf.initialize_unfilled())?;
                if n > 0 {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
            }
            match this.conn.reader().read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            if this.eof {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
            // Our own handshake records (and alerts) go out before we wait.
            if let Poll::Ready(Err(e)) = this.poll_write_tls(cx) {
                return Poll::Ready(Err(e));
            }
            ready!(this.poll_read_tls(cx))?;
        }
    }
}

impl AsyncWrite for EarlyTls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let n = this.conn.writer().write(buf)?;
            let flushed = this.poll_write_tls(cx)?;
            if n > 0 || buf.is_empty() {
                return Poll::Ready(Ok(n));
            }
            // rustls' buffer is full: wait for the socket to take some.
            ready!(flushed);
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.conn.writer().flush()?;
        this.poll_write_tls(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.conn.send_close_notify();
        ready!(this.poll_write_tls(cx))?;
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

/// The socket's non-blocking reads and writes as `std::io` (`WouldBlock`
/// when it has nothing or no room), for rustls' `read_tls`/`write_tls`.
struct TryIo<'a>(&'a TcpStream);

impl Read for TryIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for TryIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
