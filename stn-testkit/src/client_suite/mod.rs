//! The client test suite, written once for every runtime adapter.
//!
//! Each test is an `async fn` generic over a [`Harness`] (how to run, spawn
//! and sleep on one runtime, and which [`Runtime`] the client uses).
//! [`client_suite!`](crate::client_suite!) turns the list into `#[test]`s
//! for one harness: `stn_testkit::client_suite!(TokioHarness);` in
//! stn-tokio's `tests/client_tokio.rs`. Another adapter does the same:
//!
//! ```text
//! // stn-asyncstd/tests/client_asyncstd.rs
//! struct AsyncStdHarness; // impl stn_testkit::Harness (run = block_on, spawn, sleep)
//! stn_testkit::client_suite!(AsyncStdHarness);
//! // dev-dependencies: stn-testkit
//! ```
//!
//! The reference server runs on its own tokio runtime thread
//! ([`ServerHost`]), so the client side can be any runtime. Everything is on
//! loopback with real sockets, and every test is bounded by [`TEST_BOUND`].

use std::future::{poll_fn, Future};
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use stn_driver::proto::config::LoserReports;
use stn_driver::proto::{config::ZombiePolicy, Config};
use stn_driver::proto::{Channel, Task};
use stn_driver::proto::{Error as ProtoError, ErrorFamily, ProtocolError, TimeoutKind};
use stn_driver::{BoxFuture, Builder, Client, Error, Runtime};
use stn_server::{Fault, Server, ServerConfig, ServerHandle, Stats};

mod hooks;
mod mars;
pub use hooks::{
    hook_ban_history, hook_body_per_attempt, hook_clear_and_redo,
    hook_identify_rotates_and_rejects, hook_reports_stream,
};
pub use mars::{mars_no_noop_behind_a_request, mars_sample_long_link, mars_sample_short_link};

/// Upper bound for any one test.
pub const TEST_BOUND: Duration = Duration::from_secs(30);

/// How to run the suite on one runtime.
pub trait Harness: 'static {
    /// The client's runtime.
    type Rt: Runtime + Default;
    /// Runs `test` to completion on a fresh runtime.
    fn run(test: BoxFuture<()>);
    /// Spawns `fut`; the returned future is its result.
    fn spawn<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> BoxFuture<T>;
    /// Sleeps.
    fn sleep(d: Duration) -> BoxFuture<()>;
}

/// Waits until the server's counters satisfy `check` (the test's own bound
/// ends a wait that never succeeds): the server counts a request after its
/// write completes, which may be just after the client has its response.
pub async fn stats_eventually<H: Harness>(
    server: &ServerHost,
    check: impl Fn(&stn_server::Stats) -> bool,
) {
    while !check(&server.stats()) {
        H::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs `fut` on `H`, bounded by [`TEST_BOUND`].
pub fn run<H: Harness>(fut: impl Future<Output = ()> + Send + 'static) {
    H::run(Box::pin(async move {
        bounded::<H, _>(TEST_BOUND, fut)
            .await
            .expect("test exceeded its time bound");
    }));
}

/// `fut`, or `None` if `d` passes first (a runtime-agnostic timeout).
pub async fn bounded<H: Harness, T>(d: Duration, fut: impl Future<Output = T>) -> Option<T> {
    let mut fut = pin!(fut);
    let mut sleep = H::sleep(d);
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        sleep.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// The reference server on a tokio runtime of its own.
pub struct ServerHost {
    rt: Option<tokio::runtime::Runtime>,
    handle: Option<ServerHandle>,
}

impl ServerHost {
    /// Starts a server with `config` (from any runtime or none).
    pub fn start(config: ServerConfig) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("server runtime");
        let handle = std::thread::scope(|s| {
            s.spawn(|| rt.block_on(Server::start(config)).expect("server starts"))
                .join()
                .expect("server start thread")
        });
        ServerHost {
            rt: Some(rt),
            handle: Some(handle),
        }
    }

    /// A healthy server on both links.
    pub fn healthy() -> Self {
        Self::start(ServerConfig::default())
    }

    fn handle(&self) -> &ServerHandle {
        self.handle.as_ref().expect("running")
    }

    /// The short-link address.
    pub fn short(&self) -> SocketAddr {
        self.handle().short_addr().expect("short link")
    }

    /// The long-link address.
    pub fn long(&self) -> SocketAddr {
        self.handle().long_addr().expect("long link")
    }

    /// The server's counters.
    pub fn stats(&self) -> Stats {
        self.handle().stats()
    }

    /// Sends a push to every long-link client.
    pub fn push(&self, cmd_id: u32, body: &'static [u8]) -> usize {
        self.handle().push(cmd_id, body)
    }
}

impl Drop for ServerHost {
    fn drop(&mut self) {
        // Drop the handle inside the server's runtime, then stop it without blocking.
        if let (Some(rt), Some(handle)) = (self.rt.as_ref(), self.handle.take()) {
            let _guard = rt.enter();
            drop(handle);
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A builder aimed at `server`'s two links on 127.0.0.1.
pub fn builder<H: Harness>(server: &ServerHost) -> Builder<H::Rt> {
    Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .short_link_port(server.short().port())
        .long_link_port(server.long().port())
        .seed(7)
}

fn short_task(body: impl Into<bytes::Bytes>) -> Task {
    Task::new(8, "/mars/hello2", body).channel(Channel::Short)
}

fn long_task(body: impl Into<bytes::Bytes>) -> Task {
    Task::new(8, "", body).channel(Channel::Long)
}

/// Fast per-attempt timeouts for fault tests (1 s to the first byte), no zombies.
pub fn fast_timeouts(c: &mut Config) {
    let timeouts = c.timeouts_mut();
    for net in [&mut timeouts.wifi, &mut timeouts.mobile] {
        net.base_first_packet = Duration::from_secs(1);
        net.max_first_packet = Duration::from_secs(1);
        net.excellent_first_packet = Duration::from_secs(1);
        net.task_delay = Duration::ZERO;
        net.packet_interval = Duration::from_secs(1);
    }
    c.timeouts_mut().adaptive = None;
    // Surface the attempt's own error: stn's default parks a failed task
    // (zombie) until its deadline, which then ends it with Timeout(Task).
    c.set_zombies(ZombiePolicy::Off);
}

/// Waits (up to 5 s) until the snapshot satisfies `ok`; returns the last one.
async fn settle<H: Harness, R: Runtime>(
    client: &Client<R>,
    ok: impl Fn(&stn_driver::Snapshot) -> bool,
) -> stn_driver::Snapshot {
    let start = Instant::now();
    loop {
        let snap = client.snapshot().await.expect("driver running");
        if ok(&snap) || start.elapsed() > Duration::from_secs(5) {
            return snap;
        }
        H::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------- the tests

/// Both channels answer, pushes arrive, and nothing is left behind.
pub async fn happy_path<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server).build().expect("client");
    let mut pushes = client.pushes();

    let r = client.send(short_task("hi short")).await.expect("short ok");
    assert_eq!(r.body, "hi short");
    assert_eq!(r.status, Some(200));
    let d = client.send_detailed(long_task("hi long")).await;
    assert_eq!(d.outcome.expect("long ok").body, "hi long");
    assert!(d.attempts >= 1);
    assert!(d.id.is_some());

    // The long link is up: a server push reaches the stream.
    assert_eq!(server.push(10001, b"pushed"), 1);
    let push = bounded::<H, _>(Duration::from_secs(5), pushes.next())
        .await
        .expect("push in time")
        .expect("stream open");
    assert_eq!((push.cmd_id, &push.body[..]), (10001, &b"pushed"[..]));

    // Both again, concurrently from clones.
    let (a, b) = (client.clone(), client.clone());
    let ja = H::spawn(async move { a.send(short_task("x")).await });
    let jb = H::spawn(async move { b.send(long_task("y")).await });
    assert_eq!(ja.await.expect("short").body, "x");
    assert_eq!(jb.await.expect("long").body, "y");

    let snap = settle::<H, _>(&client, |s| s.engine_tasks == 0 && s.waiting == 0).await;
    assert_eq!((snap.engine_tasks, snap.waiting), (0, 0), "{snap:?}");
    // The server counts a request once its response is fully written, which
    // can be just after the client has read it: wait for the counters.
    stats_eventually::<H>(&server, |s| {
        s.short_requests_served >= 2 && s.long_requests_served >= 2
    })
    .await;
    client.shutdown().await;
    assert!(client.is_shut_down());
    assert_eq!(client.send(short_task("late")).await, Err(Error::Shutdown));
    assert!(
        pushes.next().await.is_none(),
        "push stream ends on shutdown"
    );
}

/// Hints are accepted at any time and the client keeps working.
pub async fn hints<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server).build().expect("client");
    client.set_foreground(false);
    client.set_foreground(true);
    client.network_changed(stn_driver::proto::NetworkKind::Mobile);
    assert_eq!(client.send(short_task("a")).await.expect("ok").body, "a");
    assert_eq!(client.send(long_task("b")).await.expect("ok").body, "b");
    client.shutdown().await;
}

/// Endpoints given as a host name are resolved with the runtime's resolver
/// when the engine asks ("localhost" may also yield ::1, which refuses:
/// racing moves on to 127.0.0.1).
pub async fn host_name_endpoint<H: Harness>() {
    let server = ServerHost::healthy();
    let short_port = server.short().port();
    // A host name with the port beside it or in it, and a SocketAddr.
    let builders = [
        Client::<H::Rt>::builder()
            .endpoint("localhost")
            .short_link_port(short_port),
        Client::<H::Rt>::builder().endpoint(format!("localhost:{short_port}")),
        Client::<H::Rt>::builder().socket_addr(server.short()),
    ];
    for builder in builders {
        let client = builder
            .long_link_port(server.long().port())
            .build()
            .expect("client");
        assert_eq!(
            client
                .send(short_task("by name"))
                .await
                .expect("short")
                .body,
            "by name"
        );
        assert_eq!(
            client.send(long_task("by name")).await.expect("long").body,
            "by name"
        );
        client.shutdown().await;
    }
    // Malformed text is refused by build(), naming it.
    let err = Client::<H::Rt>::builder()
        .endpoint("localhost:80:81")
        .build()
        .expect_err("malformed");
    assert!(err.to_string().contains("\"localhost:80:81\""), "{err}");
}

/// A listener whose accept queue is full: SYNs to it are dropped, so a
/// connect hangs. Keep the returned values alive.
pub fn hanging_listener(addr: SocketAddr) -> (socket2::Socket, Vec<std::net::TcpStream>) {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.bind(&addr.into()).expect("bind hanging listener");
    socket.listen(1).expect("listen");
    let mut fillers = Vec::new();
    for _ in 0..16 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => fillers.push(s),
            Err(_) => break,
        }
    }
    assert!(
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err(),
        "the accept queue should be full"
    );
    (socket, fillers)
}

/// Candidates that refuse (nothing listening), hang (full accept queue) and
/// one that works: every task succeeds through the working one, and the bad
/// ones end up banned.
pub async fn racing_bans_bad_endpoints<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        long_addr: None,
        ..ServerConfig::default()
    });
    let port = server.short().port();
    let refusing: IpAddr = "127.0.0.2".parse().expect("ip");
    let hanging: IpAddr = "127.0.0.3".parse().expect("ip");
    let working: IpAddr = "127.0.0.1".parse().expect("ip");
    let _hang = hanging_listener(SocketAddr::new(hanging, port));

    let client = Client::<H::Rt>::builder()
        .ips([refusing, hanging, working])
        .short_link_port(port)
        .seed(3)
        .configure(|c| {
            // Ban after one failure, without Mars's 10 s between recorded failures.
            c.ban_mut().enabled = true;
            c.ban_mut().fail_count = 1;
            c.ban_mut().fail_update_interval = Duration::ZERO;
            // Stagger the race quickly so the hanging candidate cannot stall it.
            c.exchange_mut().race.stagger = Duration::from_millis(100);
            c.exchange_mut().race.attempt_timeout = Duration::from_millis(500);
            c.exchange_mut().race.adaptive_stagger = None;
            // Report a hanging loser started before the winner as timed out
            // (Mars's rule; stn's default gives losers no verdict).
            c.exchange_mut().race.loser_reports = LoserReports::MarsLowerIndexTimedOut;
        })
        .build()
        .expect("client");
    for i in 0..6 {
        let d = client.send_detailed(short_task(format!("race {i}"))).await;
        assert_eq!(
            d.outcome.expect("served by the working endpoint").body,
            format!("race {i}")
        );
    }
    let snap = settle::<H, _>(&client, |s| {
        s.endpoints.iter().filter(|e| e.banned).count() == 2
    })
    .await;
    let state = |ip: IpAddr| {
        snap.endpoints
            .iter()
            .find(|e| e.addr == SocketAddr::new(ip, port))
            .map(|e| e.banned)
    };
    assert_eq!(state(working), Some(false), "{snap:?}");
    assert_eq!(state(refusing), Some(true), "{snap:?}");
    assert_eq!(state(hanging), Some(true), "{snap:?}");
    client.shutdown().await;
}

/// A short-link server that accepts and never answers: the task fails with a
/// first-packet timeout; long-link tasks meanwhile are unaffected.
pub async fn never_respond_times_out<H: Harness>() {
    let stalled = ServerHost::start(ServerConfig {
        long_addr: None,
        fault: Fault::NeverRespond,
        ..ServerConfig::default()
    });
    let healthy = ServerHost::healthy();
    let client = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .short_link_port(stalled.short().port())
        .long_link_port(healthy.long().port())
        .configure(fast_timeouts)
        .build()
        .expect("client");
    let c = client.clone();
    let stuck = H::spawn(async move { c.send(short_task("stall").retry_count(0)).await });
    for i in 0..5 {
        let body = format!("fine {i}");
        assert_eq!(
            client
                .send(long_task(body.clone()))
                .await
                .expect("long ok")
                .body,
            body
        );
    }
    let err = stuck.await.expect_err("no answer");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Timeout(TimeoutKind::FirstPacket)),
        "{err}"
    );
    // It names the timer, its value, the endpoint and the link.
    assert!(err.is_timeout() && err.is_retryable(), "{err}");
    assert_eq!(err.addr(), Some(stalled.short()), "{err}");
    assert_eq!(err.timeout(), Some(Duration::from_secs(1)), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "no reply within the first-packet timeout (after 1 s, from {}, short link)",
            stalled.short()
        )
    );
    client.shutdown().await;
}

/// Runs one task against a server with `fault` on `channel`; returns its error.
async fn faulty<H: Harness>(fault: Fault, channel: Channel) -> Error {
    let server = ServerHost::start(ServerConfig {
        fault,
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server)
        .configure(fast_timeouts)
        .build()
        .expect("client");
    let task = match channel {
        Channel::Long => long_task("boom"),
        _ => short_task("boom"),
    };
    let err = client
        .send(task.retry_count(0))
        .await
        .expect_err("the fault breaks the task");
    // The connection is gone and nothing is held.
    let snap = settle::<H, _>(&client, |s| {
        s.engine_tasks == 0
            && s.waiting == 0
            && s.driver_connections <= usize::from(channel == Channel::Long)
    })
    .await;
    assert_eq!((snap.engine_tasks, snap.waiting), (0, 0), "{snap:?}");
    client.shutdown().await;
    err
}

/// A reset in the middle of the response: a socket error.
pub async fn reset_mid_response<H: Harness>() {
    for channel in [Channel::Short, Channel::Long] {
        let err = faulty::<H>(Fault::ResetMidResponse, channel).await;
        let family = err.task_error().map(ProtoError::family);
        assert_eq!(family, Some(ErrorFamily::Socket), "{channel:?}: {err:?}");
    }
}

/// Garbage instead of a response: a protocol (decode) error.
pub async fn garbage_response<H: Harness>() {
    for channel in [Channel::Short, Channel::Long] {
        let err = faulty::<H>(Fault::Garbage, channel).await;
        assert!(
            matches!(
                err,
                Error::Task {
                    error: ProtoError::Protocol(_) | ProtoError::Decode,
                    ..
                }
            ),
            "{channel:?}: {err:?}"
        );
    }
}

/// A length field announcing a huge body: refused before reading it.
pub async fn oversize_length<H: Harness>() {
    let short = faulty::<H>(Fault::OversizeLength, Channel::Short).await;
    assert_eq!(
        short.task_error(),
        Some(&ProtoError::Protocol(ProtocolError::BodyTooLarge)),
        "{short:?}"
    );
    let long = faulty::<H>(Fault::OversizeLength, Channel::Long).await;
    assert_eq!(
        long.task_error(),
        Some(&ProtoError::Protocol(ProtocolError::FrameTooLarge)),
        "{long:?}"
    );
}

/// The app's response judge (Mars `Buf2Resp`) over real sockets: accepted
/// responses are delivered; an expired session makes the need-auth task wait
/// for the app's re-login (`set_authed`), then retries it for free; "end"
/// fails a task with a decode error; a panicking judge ends only its task.
pub async fn response_judge<H: Harness>() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use stn_driver::proto::Verdict;

    let server = ServerHost::healthy();
    let expired = Arc::new(AtomicBool::new(false));
    let judged = Arc::new(AtomicUsize::new(0));
    let (e, j) = (expired.clone(), judged.clone());
    let client = builder::<H>(&server)
        .judge(move |req| {
            j.fetch_add(1, Ordering::SeqCst);
            match &req.response.body[..] {
                b"expire-once" if !e.swap(true, Ordering::SeqCst) => Verdict::SessionTimeout,
                b"undecodable" => Verdict::End,
                b"panic" => panic!("the judge cannot read this"),
                _ => Verdict::Accept,
            }
        })
        .build()
        .expect("client");
    client.set_authed(true);

    let r = client.send(short_task("plain")).await.expect("accepted");
    assert_eq!(r.body, "plain");
    assert_eq!(judged.load(Ordering::SeqCst), 1);

    // The session expires on the first answer: the task waits for re-login.
    let c = client.clone();
    let pending = H::spawn(async move {
        c.send_detailed(short_task("expire-once").need_authed(true).retry_count(0))
            .await
    });
    while judged.load(Ordering::SeqCst) < 2 {
        H::sleep(Duration::from_millis(5)).await;
    }
    H::sleep(Duration::from_millis(200)).await;
    let snap = client.snapshot().await.expect("driver running");
    assert_eq!(
        (snap.engine_tasks, snap.short_in_flight),
        (1, 0),
        "{snap:?}"
    );
    assert_eq!(
        server.stats().short_requests_served,
        2,
        "no retry before re-login"
    );
    client.set_authed(true);
    let done = pending.await;
    assert_eq!(
        done.outcome.expect("retried after re-login").body,
        "expire-once"
    );
    assert_eq!(done.attempts, 2, "the session-timeout retry is free");
    assert!(expired.load(Ordering::SeqCst));

    for task in [long_task("undecodable"), short_task("panic").retry_count(0)] {
        let err = client.send(task).await.expect_err("not decodable");
        assert_eq!(err.task_error(), Some(&ProtoError::Decode), "{err}");
        assert_eq!(err.kind(), stn_driver::ErrorKind::Decode);
    }
    // The driver survived the panic.
    assert_eq!(
        client.send(long_task("after")).await.expect("ok").body,
        "after"
    );
    client.shutdown().await;
}

/// Dropping a `send` future cancels its task: the engine forgets it and the
/// short-link connection is closed.
pub async fn cancel_by_drop<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        delay: Duration::from_secs(10),
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server).build().expect("client");
    for task in [short_task("slow"), long_task("slow")] {
        let sent = bounded::<H, _>(Duration::from_millis(300), client.send(task)).await;
        assert!(sent.is_none(), "the server delays 10 s");
    }
    let snap = settle::<H, _>(&client, |s| {
        s.engine_tasks == 0 && s.waiting == 0 && s.short_in_flight == 0 && s.long_in_flight == 0
    })
    .await;
    assert_eq!((snap.engine_tasks, snap.waiting), (0, 0), "{snap:?}");
    assert_eq!(
        (snap.short_in_flight, snap.long_in_flight),
        (0, 0),
        "{snap:?}"
    );
    // Only the long link may stay open.
    assert!(snap.driver_connections <= 1, "{snap:?}");
    // The client still works.
    client.shutdown().await;
}

/// Shutdown with tasks in flight on both channels: each ends with
/// `Error::Shutdown`, and later sends too.
pub async fn shutdown_in_flight<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        delay: Duration::from_secs(10),
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server).build().expect("client");
    let mut joins = Vec::new();
    for i in 0..20 {
        let c = client.clone();
        let task = if i % 2 == 0 {
            short_task(format!("s{i}"))
        } else {
            long_task(format!("l{i}"))
        };
        joins.push(H::spawn(async move { c.send(task).await }));
    }
    H::sleep(Duration::from_millis(500)).await;
    client.shutdown().await;
    for j in joins {
        assert_eq!(j.await, Err(Error::Shutdown));
    }
    assert_eq!(client.send(short_task("late")).await, Err(Error::Shutdown));
    assert!(client.snapshot().await.is_none());
}

/// Sends `n` long-link tasks at once (bodies `"{tag} {i}"`) and checks that
/// each is answered with its own body; returns how many were.
async fn all_answered<H: Harness>(client: &Client<H::Rt>, n: usize, tag: &str) -> usize {
    let mut joins = Vec::with_capacity(n);
    for i in 0..n {
        let c = client.clone();
        let body = format!("{tag} {i}");
        joins.push(H::spawn(async move {
            let r = c.send(long_task(body.clone()).limit_frequency(false)).await;
            (body, r)
        }));
    }
    let mut ok = 0;
    for j in joins {
        let (body, r) = j.await;
        let r = r.unwrap_or_else(|e| panic!("{body}: {e:?}"));
        assert_eq!(r.body, body);
        ok += 1;
    }
    ok
}

/// 10,000 concurrent tasks on the long link: every one answered, nothing
/// held afterwards, one connection.
pub async fn ten_thousand_long<H: Harness>() {
    const N: usize = 10_000;
    let server = ServerHost::healthy();
    let client = builder::<H>(&server)
        .max_queued_tasks(2 * N)
        .max_in_flight_long(1024)
        .queue_capacity(4096)
        .build()
        .expect("client");
    assert_eq!(all_answered::<H>(&client, N, "task").await, N);
    let snap = settle::<H, _>(&client, |s| s.engine_tasks == 0 && s.waiting == 0).await;
    assert_eq!((snap.engine_tasks, snap.waiting), (0, 0), "{snap:?}");
    assert_eq!(snap.long_in_flight, 0);
    assert!(snap.driver_connections <= 1, "{snap:?}");
    // Every response was consumed; at most a heartbeat echo the engine took
    // without an action is still counted.
    assert!(snap.held_bytes < 1024, "{snap:?}");
    assert!(snap.peak_held_bytes <= snap.read_budget, "{snap:?}");
    stats_eventually::<H>(&server, |s| s.long_requests_served == N as u64).await;
    client.shutdown().await;
}

/// A command queue of one slot: concurrent sends that find it full wait
/// for room, and every one is answered with its own body.
pub async fn full_queue_waits<H: Harness>() {
    const N: usize = 200;
    let server = ServerHost::healthy();
    let client = builder::<H>(&server)
        .queue_capacity(1)
        .build()
        .expect("client");
    all_answered::<H>(&client, N, "queued").await;
    stats_eventually::<H>(&server, |s| s.long_requests_served == N as u64).await;
    client.shutdown().await;
}

/// Declares the suite's `#[test]`s for one [`Harness`].
#[macro_export]
macro_rules! client_suite {
    ($h:ty) => {
        $crate::client_suite!(@tests $h;
            happy_path, hints, host_name_endpoint, racing_bans_bad_endpoints, never_respond_times_out,
            reset_mid_response, garbage_response, oversize_length, response_judge, cancel_by_drop,
            shutdown_in_flight, ten_thousand_long, full_queue_waits, mars_sample_short_link, mars_sample_long_link,
            mars_no_noop_behind_a_request, hook_body_per_attempt, hook_identify_rotates_and_rejects,
            hook_reports_stream, hook_ban_history, hook_clear_and_redo);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::client_suite::run::<$h>($crate::client_suite::$name::<$h>());
            }
        )*
    };
}
