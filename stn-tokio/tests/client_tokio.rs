//! The client suite (`stn_testkit::client_suite`) on tokio.

mod tokio_harness;

use std::time::Duration;

use tokio_harness::TokioHarness;

stn_testkit::client_suite!(TokioHarness);

/// If the runtime running the driver goes away (the driver task is dropped
/// without a shutdown), a pending `send` on another runtime still ends, with
/// `Error::Shutdown`.
#[test]
fn driver_dropped_ends_pending_sends() {
    use stn_server::ServerConfig;
    use stn_tokio::proto::{Channel, Task};
    use stn_tokio::{Client, Error};

    let server = stn_testkit::ServerHost::start(ServerConfig {
        delay: Duration::from_secs(10),
        ..ServerConfig::default()
    });
    let driver_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let client = {
        let _enter = driver_rt.enter();
        Client::builder()
            .endpoint("127.0.0.1")
            .short_link_port(server.short().port())
            .build()
            .expect("client")
    };
    let caller_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    caller_rt.block_on(async {
        let c = client.clone();
        let pending = tokio::spawn(async move {
            c.send(Task::new(8, "/mars/hello2", "never answered").channel(Channel::Short))
                .await
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        driver_rt.shutdown_background(); // drops the driver task mid-flight
        let result = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("the send resolves")
            .expect("no panic");
        assert_eq!(result, Err(Error::Shutdown));
    });
}
