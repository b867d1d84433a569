//! The async-std [`Runtime`].

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::time::Instant;

use async_std::net::ToSocketAddrs;
use stn_driver::{AsyncStream, AsyncTimer, BoxFuture, Runtime};

use crate::io::Timer;

/// The async-std [`Runtime`]: `async_std::task::spawn`, async-io's
/// resettable `Timer` (async-std's timers are async-io's),
/// async-io's TCP connect, which `async_std::net::TcpStream::connect` is
/// underneath (with `TCP_NODELAY`), and
/// `async_std::net::ToSocketAddrs` for host names.
///
/// Needs no runtime context: async-std's global executor and async-io's
/// reactor start on first use, so a client can be built from any thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncStdRuntime;

impl Runtime for AsyncStdRuntime {
    fn spawn(&self, future: BoxFuture<()>) {
        // Dropping async-std's JoinHandle detaches the task.
        drop(async_std::task::spawn(future));
    }

    fn new_timer(&self, deadline: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(Timer::at(deadline))
    }

    fn connect(&self, addr: SocketAddr) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
        crate::io::connect(addr)
    }

    #[cfg(feature = "tls")]
    fn start_tls(
        &self,
        stream: Box<dyn AsyncStream>,
        tls: stn_driver::tls::TlsStart,
    ) -> BoxFuture<io::Result<Box<dyn stn_driver::tls::TlsIo>>> {
        crate::tls_io::start_tls(stream, tls)
    }

    fn resolve(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            // A lookup needs a port; only the addresses matter.
            let addrs = (host.as_str(), 0).to_socket_addrs().await?;
            Ok(addrs.into_iter().map(|a| a.ip()).collect())
        })
    }
}
