//! The tokio runtime a client owns, and the blocking calls' executor.
//!
//! The client's driver is the only task on the runtime (one worker thread:
//! the driver polls its own sockets, so more workers would idle). The
//! calls the bindings make need no runtime: `send` and the other futures
//! are plain channel waits that Kotlin's coroutines, Python's asyncio or
//! Swift's tasks poll themselves, and the blocking variants park the
//! calling thread ([`block_on`]).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use crate::error::{ErrorKind, StnError};

/// A multi-thread tokio runtime with one worker, shut down in the background
/// when dropped (so that dropping it from any thread, the foreign garbage
/// collector's included, never blocks or panics).
pub(crate) struct OwnedRuntime {
    handle: tokio::runtime::Handle,
    /// Taken only by `drop`.
    runtime: Option<tokio::runtime::Runtime>,
}

impl OwnedRuntime {
    /// Starts the runtime.
    pub(crate) fn start() -> Result<Self, StnError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("stn-driver")
            .enable_all()
            .build()
            .map(|rt| OwnedRuntime {
                handle: rt.handle().clone(),
                runtime: Some(rt),
            })
            .map_err(|e| {
                StnError::new(
                    ErrorKind::Other,
                    format!("could not start the client's runtime: {e}"),
                )
            })
    }

    /// Its handle.
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on this thread, parking between polls.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// [`block_on`] for a blocking call of the API, refused on a runtime thread:
/// there it would be the client's own driver (a judge, identify or body
/// callback calling back in), which would wait for itself forever.
pub(crate) fn block_on_api<T>(
    call: &str,
    future: impl Future<Output = Result<T, StnError>>,
) -> Result<T, StnError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(StnError::new(
            ErrorKind::Usage,
            format!("{call} was called on the client's driver thread (from a judge, identify or body callback); it would wait for itself: use the async form or call it from another thread"),
        ));
    }
    block_on(future)
}
