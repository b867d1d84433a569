//! The I/O pieces both runtimes share: async-io's resettable timer and a
//! `futures-io` TCP stream behind the driver's traits.
//!
//! async-std and smol both sit on async-io (one reactor thread, one timer
//! wheel), so these work whichever executor polls them.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_io::{AsyncRead, AsyncWrite};
use stn_driver::{AsyncStream, AsyncTimer};

/// async-io's `Timer`, reset in place with `set_at`.
#[derive(Debug)]
pub(crate) struct Timer(async_io::Timer);

impl Timer {
    pub(crate) fn at(deadline: Instant) -> Self {
        Timer(async_io::Timer::at(deadline))
    }
}

impl AsyncTimer for Timer {
    fn reset(self: Pin<&mut Self>, deadline: Instant) {
        self.get_mut().0.set_at(deadline);
    }

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // async-io's Timer is Unpin; its output (the instant it fired) is not needed.
        Pin::new(&mut self.get_mut().0).poll(cx).map(|_| ())
    }
}

/// Any `futures-io` stream (async-std's and smol's `TcpStream`) as the
/// driver's [`AsyncStream`].
pub(crate) struct Stream<S>(pub(crate) S);

impl<S> AsyncStream for Stream<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
}

/// The distinct IPs of resolved socket addresses, in the resolver's order.
pub(crate) fn distinct_ips(
    addrs: impl IntoIterator<Item = std::net::SocketAddr>,
) -> Vec<std::net::IpAddr> {
    let mut ips = Vec::new();
    for a in addrs {
        if !ips.contains(&a.ip()) {
            ips.push(a.ip());
        }
    }
    ips
}
