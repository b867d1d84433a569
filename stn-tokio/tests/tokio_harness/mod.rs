//! The suites' [`Harness`](stn_testkit::Harness) on tokio, shared by
//! the test binaries that run them (`client_tokio`, `hostile_servers`).

use std::future::Future;
use std::time::Duration;

use stn_driver::BoxFuture;
use stn_tokio::TokioRuntime;

/// Runs a suite on a multi-threaded tokio runtime.
pub(crate) struct TokioHarness;

impl stn_testkit::Harness for TokioHarness {
    type Rt = TokioRuntime;

    fn run(test: BoxFuture<()>) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(test);
    }

    fn spawn<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> BoxFuture<T> {
        let handle = tokio::spawn(fut);
        Box::pin(async move { handle.await.expect("spawned task panicked") })
    }

    fn sleep(d: Duration) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(d))
    }
}
