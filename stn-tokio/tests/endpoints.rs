//! Endpoints as an app writes them, through the public API: `host:port`,
//! `IP:port`, `SocketAddr`, a short-link port per endpoint, malformed text
//! refused by `build()`, and
//! `build()` outside a tokio runtime returning an error instead of panicking.

use std::time::Duration;

use stn_server::{Server, ServerConfig};
use stn_tokio::proto::{Channel, Task};
use stn_tokio::{BuildError, Client};

#[test]
fn build_outside_a_runtime_is_an_error_not_a_panic() {
    let err = Client::builder()
        .endpoint("127.0.0.1:8080")
        .build()
        .expect_err("no tokio runtime here");
    assert!(matches!(err, BuildError::NoRuntime(_)), "{err}");
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

#[tokio::test]
async fn malformed_endpoints_are_refused_by_build_naming_the_input() {
    for bad in ["127.0.0.1:80:90", "localhost:http", "a b", "[::1]:"] {
        let err = Client::builder()
            .endpoint(bad)
            .long_link_port(1)
            .build()
            .expect_err(bad);
        assert!(
            matches!(err, BuildError::InvalidEndpoint(_)),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
}

/// Each endpoint keeps its own short-link port: a refusing `IP:port` and the
/// server's `IP:port` on another port, in one client; the task reaches the
/// server through the second.
#[tokio::test]
async fn short_link_ports_are_per_endpoint() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let short = server.short_addr().expect("short");
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    assert_ne!(dead.port(), short.port());
    let client = Client::builder()
        .endpoint(dead.to_string())
        .socket_addr(short)
        .seed(3)
        .build()
        .expect("different ports are fine");
    let task = Task::new(8, "/mars/hello2", "hi")
        .channel(Channel::Short)
        .retry_count(0);
    let reply = tokio::time::timeout(Duration::from_secs(10), client.send(task))
        .await
        .expect("bounded")
        .expect("reached through the endpoint with the right port");
    assert_eq!(reply.body, "hi");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn host_port_ip_port_and_socket_addr_endpoints_reach_the_server() {
    let server = Server::start(ServerConfig::default())
        .await
        .expect("server");
    let short = server.short_addr().expect("short");
    let long = server.long_addr().expect("long").port();
    let clients = [
        Client::builder().endpoint(format!("localhost:{}", short.port())),
        Client::builder().endpoint(short.to_string()),
        Client::builder().socket_addr(short),
    ];
    for builder in clients {
        let client = builder.long_link_port(long).build().expect("build");
        let task = |channel| Task::new(8, "/mars/hello2", "hi").channel(channel);
        let reply =
            tokio::time::timeout(Duration::from_secs(10), client.send(task(Channel::Short)))
                .await
                .expect("bounded")
                .expect("short reply");
        assert_eq!(reply.body, "hi");
        let reply = tokio::time::timeout(Duration::from_secs(10), client.send(task(Channel::Long)))
            .await
            .expect("bounded")
            .expect("long reply");
        assert_eq!(reply.body, "hi");
        client.shutdown().await;
    }
    assert_eq!(server.stats().short_requests_served, 3);
    server.shutdown().await;
}
