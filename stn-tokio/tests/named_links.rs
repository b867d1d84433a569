//! Named long links over loopback: a client with its main long link on one
//! reference server, a named link on a second server, and a named link to a
//! port nobody listens on. Each task goes to its own link's server; the
//! refused link's tasks fail with the refusal while the others succeed; a
//! push and the identify go on their own link; removing a link ends its
//! task in flight once, naming the link.
//!
//! ```text
//! cargo test -p stn-tokio --test named_links
//! ```

use std::time::Duration;

use stn_server::{Server, ServerConfig};
use stn_tokio::proto::{Channel, ConnectError, Error as TaskError, LinkName, LocalError, Task};
use stn_tokio::{Client, LinkOptions};

const BOUND: Duration = Duration::from_secs(10);

fn name(s: &str) -> LinkName {
    LinkName::new(s).expect("a valid name")
}

/// A loopback port with no listener (bound, then released).
fn refused_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

fn long_task(body: &str) -> Task {
    Task::new(8, "", body.to_owned())
        .channel(Channel::Long)
        .retry_count(0)
}

#[tokio::test]
async fn two_named_links_one_refused_each_task_reaches_its_own_server() {
    let main = Server::start(ServerConfig::default()).await.expect("main");
    let second = Server::start(ServerConfig::default())
        .await
        .expect("second");
    let (push, bad) = (name("push"), name("bad"));
    let client = Client::builder()
        .endpoint("127.0.0.1")
        .long_link_port(main.long_addr().expect("long").port())
        .link(
            LinkOptions::new(push.clone())
                .addr(second.long_addr().expect("long"))
                .identify(9, "push-token"),
        )
        .build()
        .expect("client");
    let mut statuses = client.links_status();
    let mut pushes = client.pushes();
    // A link added at run time, to a port that refuses.
    let dead = refused_addr();
    client
        .add_link(LinkOptions::new(bad.clone()).addr(dead))
        .await
        .expect("added");
    let send = |t| tokio::time::timeout(BOUND, client.send(t));
    let on_main = send(long_task("to main")).await.expect("bounded");
    let on_push = send(long_task("to push").on_link(push.clone()))
        .await
        .expect("bounded");
    let on_bad = send(long_task("to bad").on_link(bad.clone()))
        .await
        .expect("bounded");
    assert_eq!(on_main.expect("main link answers").body, "to main");
    assert_eq!(on_push.expect("push link answers").body, "to push");
    let err = on_bad.expect_err("the refused link fails its task");
    match err.task_error() {
        Some(TaskError::Connect {
            addr: Some(a),
            error: ConnectError::Refused,
        }) => assert_eq!(*a, dead),
        other => panic!("expected the refusal of {dead}, got {other:?} ({err})"),
    }
    // Each server saw its own link's task; the named link identified itself.
    assert_eq!(main.stats().long_requests_served, 1);
    assert_eq!(second.stats().long_requests_served, 1);
    assert_eq!(second.stats().identifies_answered, 1);
    assert_eq!(main.stats().identifies_answered, 0);
    // Its status names it, with its own server's address.
    let up = tokio::time::timeout(BOUND, async {
        while let Some(u) = statuses.next().await {
            if u.link == push {
                if let stn_tokio::proto::LinkStatus::Connected { addr } = u.status {
                    return addr;
                }
            }
        }
        panic!("the status stream ended");
    })
    .await
    .expect("push reported up");
    assert_eq!(Some(up), second.long_addr());
    // A push from the second server comes named.
    assert_eq!(second.push(77, "hello"), 1);
    let p = tokio::time::timeout(BOUND, pushes.next())
        .await
        .expect("bounded")
        .expect("a push");
    assert_eq!(
        (p.cmd_id, &p.body[..], p.link),
        (77, &b"hello"[..], Some(push))
    );
    client.shutdown().await;
    main.shutdown().await;
    second.shutdown().await;
}

#[tokio::test]
async fn removing_a_link_ends_its_task_in_flight_naming_it() {
    let main = Server::start(ServerConfig::default()).await.expect("main");
    let slow = Server::start(ServerConfig {
        delay: Duration::from_secs(30),
        ..ServerConfig::default()
    })
    .await
    .expect("slow");
    let slow_link = name("slow");
    let client = Client::builder()
        .endpoint("127.0.0.1")
        .long_link_port(main.long_addr().expect("long").port())
        .build()
        .expect("client");
    client
        .add_link(LinkOptions::new(slow_link.clone()).addr(slow.long_addr().expect("long")))
        .await
        .expect("added");
    let c = client.clone();
    let in_flight =
        tokio::spawn(async move { c.send(long_task("wait").on_link(name("slow"))).await });
    // Wait until the slow server holds the task.
    tokio::time::timeout(BOUND, async {
        while slow.stats().frames_received == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task reached the slow server");
    client.remove_link(&slow_link).await.expect("removed");
    let err = tokio::time::timeout(BOUND, in_flight)
        .await
        .expect("bounded")
        .expect("no panic")
        .expect_err("ended by the removal");
    assert_eq!(
        err.task_error(),
        Some(&TaskError::Local(LocalError::LinkRemoved {
            link: slow_link.clone()
        }))
    );
    assert!(err.to_string().contains("slow"), "{err}");
    // Its name is unknown now; the main link still works.
    let unknown = client
        .send(long_task("late").on_link(slow_link.clone()))
        .await;
    assert!(unknown.is_err());
    let again = client.remove_link(&slow_link).await;
    assert!(again.is_err());
    let ok = tokio::time::timeout(BOUND, client.send(long_task("main")))
        .await
        .expect("bounded");
    assert_eq!(ok.expect("main answers").body, "main");
    client.shutdown().await;
    main.shutdown().await;
    slow.shutdown().await;
}
