//! The TLS handshake on tokio: tokio-rustls over the driver's stream.
//!
//! The driver hands over the TCP connection as its own [`AsyncStream`];
//! [`Tokio`] lends it tokio's I/O traits so tokio-rustls can run on it, and
//! the encrypted stream goes back to the driver as an `AsyncStream` again.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use stn_driver::tls::{TlsIo, TlsStart, TlsState};
use stn_driver::{AsyncStream, BoxFuture};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::Stream;

/// Runs tokio-rustls' client handshake on `stream`. With early data
/// enabled in the configuration and a session that allows it, it returns
/// before the handshake is done (tokio-rustls' early-data mode; see
/// [`TlsIo`]).
pub(super) fn start_tls(
    stream: Box<dyn AsyncStream>,
    tls: TlsStart,
) -> BoxFuture<io::Result<Box<dyn TlsIo>>> {
    Box::pin(async move {
        let early = tls.config.enable_early_data;
        let connector = tokio_rustls::TlsConnector::from(tls.config).early_data(early);
        let stream = connector.connect(tls.server_name, Tokio(stream)).await?;
        Ok(Box::new(Stream(stream)) as Box<dyn TlsIo>)
    })
}

impl TlsIo for Stream<tokio_rustls::client::TlsStream<Tokio>> {
    fn tls_state(&mut self) -> TlsState {
        TlsState::of(self.0.get_mut().1)
    }
}

/// The driver's stream with tokio's I/O traits.
pub(super) struct Tokio(Box<dyn AsyncStream>);

impl AsyncRead for Tokio {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = match self.get_mut().0.poll_read(cx, buf.initialize_unfilled()) {
            Poll::Ready(Ok(n)) => n,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        };
        buf.advance(n.min(buf.remaining()));
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tokio {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().0.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().0.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The driver closes a connection by dropping it.
        Poll::Ready(Ok(()))
    }
}
