//! The smol [`Runtime`].

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Instant;

use stn_driver::{AsyncStream, AsyncTimer, BoxFuture, Runtime};

use crate::io::Timer;

/// The smol [`Runtime`]: tasks on smol's global executor (`smol::spawn`,
/// threads from `SMOL_THREADS`, default 1) or on an executor of your own
/// ([`SmolRuntime::with_executor`]); async-io's `Timer`,
/// async-io's TCP connect, which `smol::net::TcpStream::connect` is
/// underneath (with `TCP_NODELAY`), and
/// `smol::net::resolve` for host names.
///
/// The sockets and timers are the same async-io ones async-std uses, so an
/// app moving from async-std to smol keeps the same behaviour.
#[derive(Clone, Debug, Default)]
pub struct SmolRuntime {
    // Weak: the driver task (inside the executor) holds the runtime, so a
    // strong reference would keep the executor alive forever.
    executor: Option<Weak<smol::Executor<'static>>>,
}

impl SmolRuntime {
    /// Spawns the client's tasks on `executor` instead of smol's global one.
    ///
    /// The runtime keeps only a weak reference: the app owns the executor
    /// and keeps running it (`executor.run(..)`). Dropping its last `Arc`
    /// drops the client's driver, which ends every pending `send` with
    /// [`Error::Shutdown`](stn_driver::Error::Shutdown) (as does building a
    /// client on an executor that is already gone).
    pub fn with_executor(executor: &Arc<smol::Executor<'static>>) -> Self {
        SmolRuntime {
            executor: Some(Arc::downgrade(executor)),
        }
    }
}

impl Runtime for SmolRuntime {
    fn spawn(&self, future: BoxFuture<()>) {
        // smol cancels a task whose handle is dropped: detach it instead.
        match &self.executor {
            None => smol::spawn(future).detach(),
            Some(ex) => {
                // An executor that is gone drops the future, as it would
                // have had it been spawned just before.
                if let Some(ex) = ex.upgrade() {
                    ex.spawn(future).detach();
                }
            }
        }
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
            let addrs = smol::net::resolve((host.as_str(), 0)).await?;
            Ok(addrs.into_iter().map(|a| a.ip()).collect())
        })
    }
}
