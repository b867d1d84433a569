//! The TLS handshake on async-std and smol: futures-rustls over the
//! driver's stream.
//!
//! The driver hands over the TCP connection as its own [`AsyncStream`];
//! [`FuturesIo`] lends it futures-io's traits so futures-rustls can run on
//! it, and the encrypted stream goes back to the driver as an `AsyncStream`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};
use rustls::HandshakeKind;
use stn_driver::tls::{TlsStart, TlsStream};
use stn_driver::{AsyncStream, BoxFuture};

use crate::io::Stream;

/// Runs futures-rustls' client handshake on `stream` (for both runtimes'
/// [`Runtime::start_tls`](stn_driver::Runtime::start_tls)).
pub(crate) fn start_tls(
    stream: Box<dyn AsyncStream>,
    tls: TlsStart,
) -> BoxFuture<io::Result<TlsStream>> {
    Box::pin(async move {
        let connector = futures_rustls::TlsConnector::from(tls.config);
        let stream = connector
            .connect(tls.server_name, FuturesIo(stream))
            .await?;
        let resumed = stream.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
        Ok(TlsStream {
            stream: Box::new(Stream(stream)),
            resumed,
        })
    })
}

/// The driver's stream with futures-io's traits.
struct FuturesIo(Box<dyn AsyncStream>);

impl AsyncRead for FuturesIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().0.poll_read(cx, buf)
    }
}

impl AsyncWrite for FuturesIo {
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

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The driver closes a connection by dropping it.
        Poll::Ready(Ok(()))
    }
}
