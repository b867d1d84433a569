//! The suites' [`Harness`](stn_testkit::Harness) on async-std's
//! executor and on smol's, shared by the test binaries that run them
//! (`client_asyncstd`, `hostile_servers_asyncstd`).

use std::future::Future;
use std::time::Duration;

use stn_asyncstd::AsyncStdRuntime;
use stn_driver::BoxFuture;

/// `async_std::task::block_on`, `spawn` and `sleep`.
pub(crate) struct AsyncStdHarness;

impl stn_testkit::Harness for AsyncStdHarness {
    type Rt = AsyncStdRuntime;

    fn run(test: BoxFuture<()>) {
        ::async_std::task::block_on(test);
    }

    fn spawn<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> BoxFuture<T> {
        // async-std's JoinHandle detaches on drop and re-raises a panic.
        Box::pin(::async_std::task::spawn(fut))
    }

    fn sleep(d: Duration) -> BoxFuture<()> {
        Box::pin(::async_std::task::sleep(d))
    }
}

#[cfg(feature = "smol")]
pub(crate) use smol_harness::SmolHarness;

/// The harness on smol's executor.
#[cfg(feature = "smol")]
mod smol_harness {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use stn_asyncstd::SmolRuntime;
    use stn_driver::BoxFuture;

    /// `smol::block_on`, `smol::spawn` and `smol::Timer`.
    pub(crate) struct SmolHarness;

    /// A smol task that detaches when dropped (as tokio's and async-std's
    /// handles do) instead of cancelling.
    struct Detaching<T>(Option<::smol::Task<T>>);

    impl<T> Future for Detaching<T> {
        type Output = T;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
            let task = self.0.as_mut().expect("polled after completion");
            let out = Pin::new(task).poll(cx);
            if out.is_ready() {
                self.0 = None;
            }
            out
        }
    }

    impl<T> Drop for Detaching<T> {
        fn drop(&mut self) {
            if let Some(task) = self.0.take() {
                task.detach();
            }
        }
    }

    impl stn_testkit::Harness for SmolHarness {
        type Rt = SmolRuntime;

        fn run(test: BoxFuture<()>) {
            ::smol::block_on(test);
        }

        fn spawn<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> BoxFuture<T> {
            Box::pin(Detaching(Some(::smol::spawn(fut))))
        }

        fn sleep(d: Duration) -> BoxFuture<()> {
            Box::pin(async move {
                ::smol::Timer::after(d).await;
            })
        }
    }
}
