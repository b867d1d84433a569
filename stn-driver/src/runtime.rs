//! The small trait an async runtime implements to drive stn (in the style of
//! quinn's `Runtime` / `AsyncUdpSocket`).

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::tls::{TlsIo, TlsStart};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the driver needs from an async runtime: spawn a task, a timer,
/// a TCP connect and a DNS lookup. Everything else (the engine, the drain
/// rule, the per-connection tasks, the public API) is runtime-agnostic and
/// lives in this crate.
pub trait Runtime: Send + Sync + Debug + 'static {
    /// Runs `future` in the background until it completes.
    fn spawn(&self, future: BoxFuture<()>);

    /// A timer that fires at `deadline` (and can be [reset](AsyncTimer::reset)).
    fn new_timer(&self, deadline: Instant) -> Pin<Box<dyn AsyncTimer>>;

    /// Opens a TCP connection to `addr` with the operating system's connect
    /// (no timeout of its own: the engine aborts connects it no longer wants
    /// by dropping the future).
    fn connect(&self, addr: SocketAddr) -> BoxFuture<io::Result<Box<dyn AsyncStream>>>;

    /// Resolves `host` to its addresses, in the resolver's order. Return the
    /// resolver's raw list: the driver drops repeated IPs (getaddrinfo gives
    /// one entry per socket type) before the engine sees them.
    fn resolve(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>>;

    /// Whether the runtime can [`spawn`](Self::spawn) from the calling
    /// thread; `Err` says why not. [`Builder::build`](crate::Builder::build)
    /// asks before it spawns the driver, so a runtime whose `spawn` would
    /// panic out of context (tokio's) fails the build with a clear error
    /// instead. The default is `Ok`.
    ///
    /// # Errors
    ///
    /// A sentence naming what is missing.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Runs a TLS client handshake over `stream`, a TCP connection that just
    /// connected, and returns the encrypted stream: with its handshake done,
    /// or still handshaking when it may send early data (see [`TlsIo`]).
    /// Only called when the client has a [TLS configuration](crate::Builder::tls);
    /// the driver bounds the handshake with its timeout. The default refuses:
    /// a runtime without TLS support cannot serve a TLS client.
    fn start_tls(
        &self,
        stream: Box<dyn AsyncStream>,
        tls: TlsStart,
    ) -> BoxFuture<io::Result<Box<dyn TlsIo>>> {
        drop((stream, tls));
        Box::pin(std::future::ready(Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this runtime does not support TLS",
        ))))
    }

    /// The current time. Override only for tests.
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A resettable timer (quinn's `AsyncTimer`).
pub trait AsyncTimer: Send + Debug + 'static {
    /// Makes the timer fire at `deadline` instead.
    fn reset(self: Pin<&mut Self>, deadline: Instant);
    /// Ready once the deadline has passed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;
}

/// A connected TCP stream: a read half and a write half polled from one task.
///
/// Implementations must allow `poll_read` and `poll_write` to be pending at
/// the same time (their wakers are independent), as tokio's and async-std's
/// streams do. Dropping the stream closes the socket.
pub trait AsyncStream: Send + Unpin + 'static {
    /// Reads into `buf`; `Ok(0)` is end of stream.
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;
    /// Writes some of `buf`; returns how much was written.
    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;
    /// Flushes buffered writes (a no-op for plain sockets).
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}
