//! The stn client over tokio: [`Client`] is [`stn_driver::Client`] on
//! [`TokioRuntime`]; see [`Client`] for an example.

#[cfg(feature = "tls")]
mod tls;

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use stn_driver::{AsyncStream, AsyncTimer, BoxFuture, Runtime};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

pub use stn_driver::{
    Attempt, BuildError, Endpoint, EndpointError, EndpointState, Error, ErrorKind, Finished,
    LinkOptions, LinkUpdate, Push, Pushes, Snapshot,
};

/// The stn client on tokio. Build one with `Client::builder()` inside a
/// tokio runtime; [`stn_driver::Client`] documents the methods (`send`,
/// `send_detailed`, `pushes`, `network_changed`, `set_foreground`,
/// `snapshot`, `shutdown`) and [`stn_driver::Builder`] the options.
///
/// ```
/// use stn_tokio::Client;
/// use stn_server::{Server, ServerConfig};
/// use stn_tokio::proto::{Channel, Task};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Server::start(ServerConfig::default()).await?;
/// let client = Client::builder()
///     .endpoint("127.0.0.1") // an IP, or a host name resolved with tokio's resolver
///     .short_link_port(server.short_addr().unwrap().port())
///     .long_link_port(server.long_addr().unwrap().port())
///     .build()?;
/// let short = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
/// assert_eq!(short.body, "hi");
/// let long = client.send(Task::new(8, "", "hello").channel(Channel::Long)).await?;
/// assert_eq!(long.body, "hello");
/// client.shutdown().await;
/// # server.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub type Client = stn_driver::Client<TokioRuntime>;

/// Its builder.
pub type ClientBuilder = stn_driver::Builder<TokioRuntime>;

/// The tokio [`Runtime`]: `tokio::spawn`, `tokio::time::sleep_until`,
/// `tokio::net::TcpStream::connect` (with `TCP_NODELAY`) and
/// `tokio::net::lookup_host`. Must be used inside a tokio runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    fn spawn(&self, future: BoxFuture<()>) {
        tokio::spawn(future);
    }

    fn check(&self) -> Result<(), String> {
        tokio::runtime::Handle::try_current()
            .map(drop)
            .map_err(|e| format!("{e}; build the stn_tokio::Client inside a tokio runtime (e.g. in #[tokio::main])"))
    }

    fn new_timer(&self, deadline: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(Timer(Box::pin(tokio::time::sleep_until(deadline.into()))))
    }

    fn connect(&self, addr: SocketAddr) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            // Small request/response frames: do not wait for Nagle.
            stream.set_nodelay(true)?;
            Ok(Box::new(Stream(stream)) as Box<dyn AsyncStream>)
        })
    }

    #[cfg(feature = "tls")]
    fn start_tls(
        &self,
        stream: Box<dyn AsyncStream>,
        tls: stn_driver::tls::TlsStart,
    ) -> BoxFuture<io::Result<Box<dyn stn_driver::tls::TlsIo>>> {
        tls::start_tls(stream, tls)
    }

    fn resolve(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            // lookup_host needs a port; only the addresses matter.
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A `Sleep` boxed so the timer is `Unpin` (no pin projection needed).
#[derive(Debug)]
struct Timer(Pin<Box<tokio::time::Sleep>>);

impl AsyncTimer for Timer {
    fn reset(self: Pin<&mut Self>, deadline: Instant) {
        self.get_mut().0.as_mut().reset(deadline.into());
    }

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().0.as_mut().poll(cx)
    }
}

/// A tokio stream (the TCP socket, or TLS over it) as the driver's stream.
struct Stream<S>(S);

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> AsyncStream for Stream<S> {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut buf = ReadBuf::new(buf);
        match Pin::new(&mut self.0).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(buf.filled().len())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
}
