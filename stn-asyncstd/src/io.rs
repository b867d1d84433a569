//! The I/O pieces both runtimes share: async-io's resettable timer and an
//! async-io TCP connect behind the driver's traits.
//!
//! async-std and smol both sit on async-io (one reactor thread, one timer
//! wheel), so these work whichever executor polls them.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_io::{AsyncRead, AsyncWrite};
use stn_driver::{AsyncStream, AsyncTimer, BoxFuture};

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

/// Opens a TCP connection to `addr` with `TCP_NODELAY`, for both runtimes'
/// [`Runtime::connect`](stn_driver::Runtime::connect): async-std's and
/// smol's `TcpStream::connect` are both this async-io connect underneath.
pub(crate) fn connect(addr: SocketAddr) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
    Box::pin(async move {
        let stream = async_io::Async::<TcpStream>::connect(addr).await?;
        // Small request/response frames: do not wait for Nagle.
        stream.get_ref().set_nodelay(true)?;
        Ok(Box::new(Stream(stream)) as Box<dyn AsyncStream>)
    })
}

/// Any `futures-io` stream (async-io's `Async<TcpStream>`) as the driver's
/// [`AsyncStream`].
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

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
    use std::time::Duration;

    use stn_driver::proto::ConnectError;
    use stn_driver::{connect_error, Runtime};

    use super::*;

    /// How many runtimes [`on_each_runtime`] runs on.
    const RUNTIMES: usize = cfg!(feature = "smol") as usize + cfg!(feature = "async-std") as usize;

    /// Runs `f` on each runtime's own executor, bounded by 10 s each.
    fn on_each_runtime<F, Fut>(f: F)
    where
        F: Fn(Box<dyn Runtime>) -> Fut,
        Fut: Future<Output = ()>,
    {
        #[cfg(feature = "async-std")]
        async_std::task::block_on(bounded(f(Box::new(crate::AsyncStdRuntime))));
        #[cfg(feature = "smol")]
        smol::block_on(bounded(f(Box::new(crate::SmolRuntime::default()))));
    }

    async fn bounded(fut: impl Future<Output = ()>) {
        let mut fut = std::pin::pin!(fut);
        let mut limit = async_io::Timer::after(Duration::from_secs(10));
        poll_fn(|cx| {
            if fut.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            assert!(
                Pin::new(&mut limit).poll(cx).is_pending(),
                "test exceeded its time bound"
            );
            Poll::Pending
        })
        .await;
    }

    #[test]
    fn timer_reset_earlier_fires_and_later_does_not() {
        on_each_runtime(|rt| async move {
            let start = Instant::now();
            let mut timer = rt.new_timer(start + Duration::from_secs(3600));
            // Reset far in the past: ready at the first poll.
            timer.as_mut().reset(start);
            poll_fn(|cx| timer.as_mut().poll(cx)).await;
            // Reset into the far future: pending.
            timer.as_mut().reset(start + Duration::from_secs(3600));
            let waker = std::task::Waker::noop();
            let mut cx = Context::from_waker(waker);
            assert!(timer.as_mut().poll(&mut cx).is_pending());
            // And back to soon: it fires (well before the hour).
            timer
                .as_mut()
                .reset(Instant::now() + Duration::from_millis(20));
            poll_fn(|cx| timer.as_mut().poll(cx)).await;
            assert!(start.elapsed() < Duration::from_secs(60));
        });
    }

    #[test]
    fn connect_refused_maps_to_refused() {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind")
            .port();
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        on_each_runtime(|rt| async move {
            let err = match rt.connect(addr).await {
                Ok(_) => panic!("nothing listens on {addr}"),
                Err(e) => e,
            };
            assert_eq!(connect_error(&err), ConnectError::Refused, "{err}");
        });
    }

    #[test]
    fn connect_exchanges_bytes() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let echo = std::thread::spawn(move || {
            use std::io::{Read, Write};
            for _ in 0..RUNTIMES {
                let (mut s, _) = listener.accept().expect("accept");
                let mut buf = [0u8; 5];
                s.read_exact(&mut buf).expect("read");
                s.write_all(&buf).expect("write");
            }
        });
        on_each_runtime(|rt| async move {
            let mut stream = rt.connect(addr).await.expect("connect");
            let mut sent = 0;
            while sent < 5 {
                sent += poll_fn(|cx| stream.poll_write(cx, &b"hello"[sent..]))
                    .await
                    .expect("write");
            }
            poll_fn(|cx| stream.poll_flush(cx)).await.expect("flush");
            let mut got = Vec::new();
            let mut buf = [0u8; 16];
            while got.len() < 5 {
                let n = poll_fn(|cx| stream.poll_read(cx, &mut buf))
                    .await
                    .expect("read");
                assert!(n > 0, "closed early");
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, b"hello");
        });
        echo.join().expect("echo thread");
    }

    #[test]
    fn resolve_localhost_gives_loopback() {
        on_each_runtime(|rt| async move {
            let ips = rt.resolve("localhost".into()).await.expect("resolve");
            assert!(!ips.is_empty());
            assert!(ips.iter().all(IpAddr::is_loopback), "{ips:?}");
        });
    }
}
