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
use stn_driver::tls::{TlsIo, TlsStart, TlsState};
use stn_driver::{AsyncStream, BoxFuture};

use crate::io::Stream;

/// Runs futures-rustls' client handshake on `stream` (for both runtimes'
/// [`Runtime::start_tls`](stn_driver::Runtime::start_tls)).
/// With early data enabled in the configuration and a session that allows
/// it, it returns before the handshake is done (futures-rustls' early-data
/// mode; see [`TlsIo`]).
pub(crate) fn start_tls(
    stream: Box<dyn AsyncStream>,
    tls: TlsStart,
) -> BoxFuture<io::Result<Box<dyn TlsIo>>> {
    Box::pin(async move {
        let early = tls.config.enable_early_data;
        let connector = futures_rustls::TlsConnector::from(tls.config).early_data(early);
        let stream = connector
            .connect(tls.server_name, FuturesIo(stream))
            .await?;
        Ok(Box::new(Stream(stream)) as Box<dyn TlsIo>)
    })
}

impl TlsIo for Stream<futures_rustls::client::TlsStream<FuturesIo>> {
    fn tls_state(&mut self) -> TlsState {
        TlsState::of(self.0.get_mut().1)
    }
}

/// The driver's stream with futures-io's traits.
pub(crate) struct FuturesIo(Box<dyn AsyncStream>);

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
