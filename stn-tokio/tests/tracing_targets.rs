//! The client's tracing as an app sees it: everything under the one `stn`
//! target, a WARN when a task fails, INFO when the long link goes up and
//! down, attempt durations printed as `Duration`s.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stn_server::{Server, ServerConfig};
use stn_tokio::proto::{Channel, Task};
use stn_tokio::Client;
use tracing_subscriber::EnvFilter;

/// A `MakeWriter` into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Waits (bounded) until `needle` has been logged.
async fn logged(log: &Captured, needle: &str) -> bool {
    for _ in 0..200 {
        if log.text().contains(needle) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

#[tokio::test]
async fn one_stn_target_with_warn_on_failure_and_info_on_link_changes() {
    let log = Captured::default();
    let writer = log.clone();
    // `stn=debug` alone: nothing from `stn_driver` or other targets is
    // needed to see the client.
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new("stn=debug"))
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let long = server.long_addr().expect("long");
    let client = Client::builder()
        .socket_addr(server.short_addr().expect("short"))
        .long_link_port(long.port())
        .build()
        .expect("build");
    let reply = client
        .send(Task::new(8, "", "hi").channel(Channel::Long))
        .await
        .expect("long reply");
    assert_eq!(reply.body, "hi");
    assert!(
        logged(&log, &format!("INFO stn: long link up addr={long}")).await,
        "{}",
        log.text()
    );

    server.shutdown().await;
    assert!(
        logged(&log, "INFO stn: long link down").await,
        "{}",
        log.text()
    );

    // The server is gone: the short link is refused.
    let err = client
        .send(
            Task::new(8, "/mars/hello2", "hi")
                .channel(Channel::Short)
                .retry_count(0),
        )
        .await
        .expect_err("refused");
    assert!(logged(&log, "WARN").await, "{}", log.text());
    let text = log.text();
    let warn = text
        .lines()
        .find(|l| l.contains(" WARN "))
        .expect("a warn line");
    assert!(
        warn.contains("task failed") && warn.contains(&err.to_string()),
        "{warn}"
    );
    // Attempt durations are Duration Debug (`1.2ms`), not float milliseconds.
    let attempt = text
        .lines()
        .find(|l| l.contains("attempt succeeded"))
        .expect("an attempt line");
    let duration = attempt
        .split_whitespace()
        .find_map(|w| w.strip_prefix("duration="))
        .expect("a duration field");
    assert!(
        duration.ends_with("ms") || duration.ends_with("µs") || duration.ends_with('s'),
        "{attempt}"
    );
    assert!(!text.contains("duration_ms"), "{text}");
    client.shutdown().await;
}
