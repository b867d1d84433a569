//! Auth per host and user, session timeouts that de-auth one host, and the
//! long link's run-time switch, through the public `Client` API with the
//! reference server on loopback; one body for every adapter
//! (`stn-tokio/tests/auth_controls.rs`, `stn-asyncstd/tests/auth_controls.rs`).
//!
//! The short link goes to the server through the engine's debug address
//! (`Builder::configure`), so tasks can name any host (`a.test`, `b.test`)
//! for auth and the `Host` header without a resolver.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stn_driver::proto::{
    Channel, Error as ProtoError, JudgeRequest, LinkStatus, LocalError, Task, Verdict,
};
use stn_driver::{BoxFuture, Builder, Client, Error, Events, Finished, Runtime};
use stn_server::ServerConfig;

use crate::client_suite::{bounded, builder, stats_eventually, Harness, ServerHost};

mod holding;
use holding::HoldingServer;

/// How long a task that must wait is watched before the test says it
/// waited (it must never end before the app's answer, so a longer watch
/// only makes the test slower, never flaky).
const WATCH: Duration = Duration::from_millis(300);

fn debug_short<H: Harness>(server: &ServerHost) -> Builder<H::Rt> {
    let short = server.short();
    builder::<H>(server).configure(move |c| c.short_link_mut().debug = Some(short))
}

fn on_host(host: &str, body: &str) -> Task {
    Task::new(8, "/mars/hello2", body.to_owned())
        .channel(Channel::Short)
        .host(host)
        .need_authed(true)
        .limit_frequency(false)
}

fn spawn_send<H: Harness, R: Runtime>(client: &Client<R>, task: Task) -> BoxFuture<Finished> {
    let c = client.clone();
    H::spawn(async move { c.send_detailed(task).await })
}

/// Asserts that `pending` has not ended within [`WATCH`].
async fn still_waiting<H: Harness>(pending: &mut BoxFuture<Finished>, what: &str) {
    let early = bounded::<H, _>(WATCH, pending).await;
    assert!(early.is_none(), "{what} ended before its auth: {early:?}");
}

async fn done<H: Harness>(pending: BoxFuture<Finished>) -> Finished {
    bounded::<H, _>(Duration::from_secs(20), pending)
        .await
        .expect("the task ends in time")
}

/// A need-auth task waits only for its own host and user; `set_authed` is
/// every host and user.
pub async fn auth_per_host_and_user<H: Harness>() {
    let server = ServerHost::healthy();
    let client = debug_short::<H>(&server).build().expect("client");
    client.set_host_authed("a.test", Some("alice"), true);
    let alice = done::<H>(spawn_send::<H, _>(
        &client,
        on_host("a.test", "alice on a").user_id("alice"),
    ))
    .await;
    assert_eq!(alice.outcome.expect("alice is authed").body, "alice on a");
    let mut bob = spawn_send::<H, _>(&client, on_host("a.test", "bob on a").user_id("bob"));
    let mut b = spawn_send::<H, _>(&client, on_host("b.test", "b"));
    still_waiting::<H>(&mut bob, "bob on a.test").await;
    still_waiting::<H>(&mut b, "b.test").await;
    client.set_host_authed("b.test", None, true);
    assert_eq!(done::<H>(b).await.outcome.expect("b authed").body, "b");
    still_waiting::<H>(&mut bob, "bob on a.test").await;
    client.set_authed(true);
    assert_eq!(
        done::<H>(bob).await.outcome.expect("everyone authed").body,
        "bob on a"
    );
    stats_eventually::<H>(&server, |s| s.short_requests_served == 3).await;
    client.shutdown().await;
}

/// A control the app sends before a task applies before it, though the
/// two travel on separate queues: after `set_host_authed(host, false)`, a
/// need-auth task for that host waits, however the driver's polls fall.
pub async fn controls_apply_before_later_tasks<H: Harness>() {
    let server = ServerHost::healthy();
    let client = debug_short::<H>(&server).build().expect("client");
    let mut pending = Vec::new();
    for i in 0..40 {
        let host = format!("h{i}.test");
        client.set_host_authed(&host, None, true);
        // A round trip through the driver: the `true` has been applied.
        client.snapshot().await.expect("running");
        client.set_host_authed(&host, None, false);
        pending.push(spawn_send::<H, _>(&client, on_host(&host, "held")));
    }
    H::sleep(WATCH).await;
    assert_eq!(
        server.stats().short_requests_served,
        0,
        "a task went out unauthed"
    );
    client.set_authed(true);
    for p in pending {
        assert_eq!(done::<H>(p).await.outcome.expect("authed").body, "held");
    }
    client.shutdown().await;
}

/// A judge that answers the first response starting with `expire` with a
/// session timeout (and sets `expired`), and accepts everything else.
fn session_expires_once(expired: Arc<AtomicBool>) -> impl Fn(&JudgeRequest) -> Verdict {
    move |req| {
        if req.response.body.starts_with(b"expire") && !expired.swap(true, Ordering::SeqCst) {
            Verdict::SessionTimeout
        } else {
            Verdict::Accept
        }
    }
}

/// A session timeout on a.test de-auths a.test only: b.test's need-auth
/// tasks go on; the expired task's free retry waits for a.test's re-login.
pub async fn session_timeout_deauths_its_host_only<H: Harness>() {
    let server = ServerHost::healthy();
    let expired_once = Arc::new(AtomicBool::new(false));
    let client = debug_short::<H>(&server)
        .judge(session_expires_once(expired_once.clone()))
        .build()
        .expect("client");
    client.set_authed(true);
    let judged = |t: Task| t.retry_count(0);
    let mut src = spawn_send::<H, _>(&client, judged(on_host("a.test", "expire me")));
    while !expired_once.load(Ordering::SeqCst) {
        H::sleep(Duration::from_millis(5)).await;
    }
    still_waiting::<H>(&mut src, "the expired task").await;
    let on_b = done::<H>(spawn_send::<H, _>(&client, on_host("b.test", "b"))).await;
    assert_eq!(on_b.outcome.expect("b.test still authed").body, "b");
    let mut on_a = spawn_send::<H, _>(&client, on_host("a.test", "a2"));
    still_waiting::<H>(&mut on_a, "a new a.test task").await;
    client.set_host_authed("a.test", None, true);
    let src = done::<H>(src).await;
    assert_eq!(
        src.outcome.expect("retried after re-login").body,
        "expire me"
    );
    assert_eq!(src.attempts, 2, "one free retry after the session timeout");
    assert_eq!(done::<H>(on_a).await.outcome.expect("a2").body, "a2");
    client.shutdown().await;
}

fn long_need_auth(body: &str, user: &str) -> Task {
    Task::new(8, "", body.to_owned())
        .channel(Channel::Long)
        .need_authed(true)
        .user_id(user)
        .retry_count(0)
        .limit_frequency(false)
}

/// A session timeout on the long link redoes only the running need-auth
/// tasks of its own user (Mars's `LongLinkTaskManager::RetryTasks` with the
/// user id): the same user's task in flight is redone with a retry (it has
/// none, so it ends), another user's task in flight is only interrupted when
/// the link drops after the redo, and is sent again for free. The server
/// holds both answers until the verdict is in, so both are in flight at the
/// session timeout whatever the timing.
pub async fn session_timeout_redo_is_scoped_to_its_user_on_the_long_link<H: Harness>() {
    let server = HoldingServer::start();
    let expired_once = Arc::new(AtomicBool::new(false));
    let client = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .long_link_port(server.addr().port())
        .seed(7)
        .judge(session_expires_once(expired_once.clone()))
        .build()
        .expect("client");
    client.set_authed(true);
    let same = spawn_send::<H, _>(&client, long_need_auth("hold alice", "alice"));
    let other = spawn_send::<H, _>(&client, long_need_auth("hold bob", "bob"));
    while server.received("hold alice") + server.received("hold bob") < 2 {
        H::sleep(Duration::from_millis(5)).await;
    }
    let mut src = spawn_send::<H, _>(&client, long_need_auth("expire", "alice"));
    let same = done::<H>(same).await;
    let err = same.outcome.expect_err("alice's task in flight is redone");
    assert_eq!(err.task_error(), Some(&ProtoError::Decode), "{err}");
    assert_eq!(same.attempts, 1, "redone with a retry it does not have");
    assert!(expired_once.load(Ordering::SeqCst));
    // Bob's task goes out again on the new link and waits there.
    while server.received("hold bob") < 2 {
        H::sleep(Duration::from_millis(5)).await;
    }
    // Alice's expired task waits for her re-login.
    still_waiting::<H>(&mut src, "alice's expired task").await;
    server.release();
    let other = done::<H>(other).await;
    assert_eq!(other.outcome.expect("bob's task").body, "hold bob");
    assert_eq!(other.attempts, 2, "interrupted, then sent again for free");
    client.set_authed(true);
    let src = done::<H>(src).await;
    assert_eq!(src.outcome.expect("after re-login").body, "expire");
    assert_eq!(src.attempts, 2, "one free retry after the session timeout");
    assert_eq!(server.received("hold alice"), 1);
    assert_eq!(server.received("expire"), 2);
    client.shutdown().await;
}

async fn next_status<H: Harness>(status: &mut Events<LinkStatus>) -> LinkStatus {
    bounded::<H, _>(Duration::from_secs(20), status.next())
        .await
        .expect("a link status in time")
        .expect("stream open")
}

async fn until_status<H: Harness>(status: &mut Events<LinkStatus>, want: fn(&LinkStatus) -> bool) {
    while !want(&next_status::<H>(status).await) {}
}

fn long_only(body: &str) -> Task {
    Task::new(8, "", body.to_owned()).channel(Channel::Long)
}

fn both(body: &str) -> Task {
    Task::new(8, "/mars/hello2", body.to_owned()).channel(Channel::Both)
}

fn is_long_link_unavailable(e: &Error) -> bool {
    e.task_error() == Some(&ProtoError::Local(LocalError::LongLinkDisabled))
}

/// Disabling closes the long link with tasks of every kind in flight: the
/// long-only one ends at once with `LongLinkDisabled`, the `Both` one
/// finishes on the short link, the short one is untouched; no reconnect;
/// the status stream and the snapshot say `Disabled`; enabling reconnects.
pub async fn long_link_disable_and_enable<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        delay: Duration::from_millis(400),
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server).build().expect("client");
    let mut status = client.link_status();
    until_status::<H>(&mut status, |s| matches!(s, LinkStatus::Connected { .. })).await;
    let long = spawn_send::<H, _>(&client, long_only("long"));
    let both_task = spawn_send::<H, _>(&client, both("both"));
    let short = spawn_send::<H, _>(
        &client,
        Task::new(8, "/mars/hello2", "short").channel(Channel::Short),
    );
    // Both are on the long link (the server holds answers for 400 ms).
    while server.stats().frames_received < 2 {
        H::sleep(Duration::from_millis(5)).await;
    }
    client.set_long_link_enabled(false);
    until_status::<H>(&mut status, |s| *s == LinkStatus::Disabled).await;
    let long = done::<H>(long).await;
    let err = long.outcome.expect_err("long-only task ends");
    assert!(is_long_link_unavailable(&err), "{err}");
    let both_done = done::<H>(both_task).await;
    assert_eq!(both_done.outcome.expect("went short").body, "both");
    assert_eq!(
        both_done.attempts, 2,
        "interrupted on the long link, then short"
    );
    assert_eq!(done::<H>(short).await.outcome.expect("short").body, "short");
    // Later sends: long-only ends at once, Both goes short.
    let late = client
        .send(long_only("late"))
        .await
        .expect_err("no long link");
    assert!(is_long_link_unavailable(&late), "{late}");
    assert_eq!(
        client.send(both("late both")).await.expect("short").body,
        "late both"
    );
    let snap = client.snapshot().await.expect("running");
    assert_eq!(snap.long_link, Some(LinkStatus::Disabled));
    let connections = server.stats().long_connections;
    client.make_sure_long_link_connected();
    H::sleep(WATCH).await;
    assert_eq!(server.stats().long_connections, connections, "no reconnect");
    assert_eq!(
        server.stats().long_connections_open,
        0,
        "the link is closed"
    );
    client.set_long_link_enabled(true);
    until_status::<H>(&mut status, |s| matches!(s, LinkStatus::Connected { .. })).await;
    assert_eq!(
        client
            .send(long_only("back"))
            .await
            .expect("long again")
            .body,
        "back"
    );
    client.shutdown().await;
}

/// Declares the suite's `#[test]`s for one [`Harness`].
#[macro_export]
macro_rules! auth_controls_suite {
    ($h:ty) => {
        $crate::auth_controls_suite!(@tests $h;
            auth_per_host_and_user, controls_apply_before_later_tasks,
            session_timeout_deauths_its_host_only,
            session_timeout_redo_is_scoped_to_its_user_on_the_long_link,
            long_link_disable_and_enable);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::client_suite::run::<$h>($crate::auth_controls_suite::$name::<$h>());
            }
        )*
    };
}
