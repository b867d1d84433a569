//! The shared client suite (`stn_testkit::client_suite`, one copy for
//! both adapters) on stn-asyncstd: once under async-std's executor
//! ([`AsyncStdRuntime`]) and once under smol's ([`SmolRuntime`]). The
//! reference server runs on a tokio runtime thread of its own
//! (`stn_testkit::ServerHost`); every test is bounded by
//! `stn_testkit::TEST_BOUND`.
//!
//! ```text
//! cargo test -p stn-asyncstd --test client_asyncstd            # both executors
//! cargo test -p stn-asyncstd --test client_asyncstd smol::     # smol only
//! ```

mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::client_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use std::sync::Arc;
    use std::time::Duration;

    use stn_asyncstd::proto::{Channel, Task};
    use stn_asyncstd::{Error, SmolClientBuilder, SmolRuntime};
    use stn_server::ServerConfig;

    use crate::harness::SmolHarness;

    stn_testkit::client_suite!(SmolHarness);

    /// On an executor the app owns (`SmolRuntime::with_executor`): tasks
    /// work while it runs; when it is dropped with a task pending (the
    /// driver goes with it, no shutdown), the pending `send` still ends,
    /// with `Error::Shutdown`.
    #[test]
    fn own_executor_then_dropped() {
        stn_testkit::run::<SmolHarness>(async {
            let healthy = stn_testkit::ServerHost::healthy();
            let stalled = stn_testkit::ServerHost::start(ServerConfig {
                long_addr: None,
                delay: Duration::from_secs(10),
                ..ServerConfig::default()
            });
            let ex = Arc::new(::smol::Executor::new());
            let client = SmolClientBuilder::with_runtime(SmolRuntime::with_executor(&ex))
                .endpoint("127.0.0.1")
                .short_link_port(stalled.short().port())
                .long_link_port(healthy.long().port())
                .build()
                .expect("client");
            // The executor runs on its own thread until told to stop.
            let (stop_tx, stop_rx) = ::smol::channel::bounded::<()>(1);
            let runner = {
                let ex = ex.clone();
                std::thread::spawn(move || ::smol::block_on(ex.run(stop_rx.recv())))
            };

            let ok = client
                .send(Task::new(8, "", "on my executor").channel(Channel::Long))
                .await
                .expect("long ok");
            assert_eq!(ok.body, "on my executor");

            let c = client.clone();
            let pending = ::smol::spawn(async move {
                // The server delays 10 s; the executor is gone before then.
                c.send(Task::new(8, "/mars/hello2", "orphaned").channel(Channel::Short))
                    .await
            });
            ::smol::Timer::after(Duration::from_millis(200)).await;
            stop_tx.send(()).await.expect("runner alive");
            ::smol::unblock(move || runner.join())
                .await
                .expect("runner thread")
                .expect("stopped");
            drop(ex); // the last owner: drops the driver and connection tasks
            let result = stn_testkit::bounded::<SmolHarness, _>(Duration::from_secs(5), pending)
                .await
                .expect("the send resolves");
            assert_eq!(result, Err(Error::Shutdown));
        });
    }
}
