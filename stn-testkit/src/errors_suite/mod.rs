//! Errors that name what happened, through the Client's public API, written
//! once for every adapter (the [`client_suite`](super::client_suite)'s
//! [`Harness`]): a task out of time names its last attempt; the `io::Error`
//! behind a failure is its `source()`; a server's refusal arrives as itself;
//! the HTTP-status retry policy of each profile; a frequency-limit rejection
//! that says which limit, its numbers and the opt-out; an unknown host as a
//! DNS error naming it; a 404 that keeps its reply; tasks and clients that
//! cannot work refused at submit or build with their message; the client's
//! default total timeout.
//!
//! Real sockets on loopback: a port nothing listens on (refused), the
//! reference server on its own runtime. Every test is bounded by the
//! suite's `TEST_BOUND`; nothing asserts a duration.
use std::error::Error as _;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use stn_driver::proto::ConnectError;
use stn_driver::proto::Profile;
use stn_driver::proto::{Channel, Task};
use stn_driver::proto::{DnsError, Error as ProtoError, LimitKind, SubmitError, TimeoutKind};
use stn_driver::{Client, Error, ErrorKind};
use stn_server::ServerConfig;

use crate::client_suite::{builder, Harness, ServerHost};

fn short_task(body: impl Into<bytes::Bytes>) -> Task {
    Task::new(8, "/mars/hello2", body).channel(Channel::Short)
}

/// A loopback port nothing listens on: connects to it are refused.
fn refusing_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// A client of the short link on `addr` alone, under `profile`.
fn refused_client<H: Harness>(addr: SocketAddr, profile: Profile) -> Client<H::Rt> {
    Client::<H::Rt>::builder()
        .endpoint(addr.to_string())
        .profile(profile)
        .seed(7)
        .build()
        .expect("client")
}

/// Sends a short-link task with `retries` and a `total` timeout.
async fn send_refused<R: stn_driver::Runtime>(
    client: &Client<R>,
    retries: u8,
    total: Duration,
) -> stn_driver::Finished {
    let task = short_task("x").retry_count(retries).total_timeout(total);
    client.send_detailed(task).await
}

/// A refusing endpoint, `retry_count(1)` and a total timeout under the
/// Mars profile, which retries a refusal and parks the task until its
/// budget ends: the error says it ran out of time and what every attempt
/// ran into. (Under stn the refusal ends it at once:
/// [`refusal_is_the_error`].)
pub async fn timeout_names_the_last_attempt<H: Harness>() {
    let addr = refusing_port();
    let client = refused_client::<H>(addr, Profile::Mars);
    let finished = send_refused(&client, 1, Duration::from_millis(1500)).await;
    let err = finished.outcome.expect_err("nothing listens");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Timeout(TimeoutKind::Task)),
        "{err}"
    );
    assert!(
        finished.attempts >= 2,
        "retried: {} attempts",
        finished.attempts
    );
    assert_eq!(
        err.last_attempt(),
        Some(&ProtoError::Connect {
            addr: Some(addr),
            error: ConnectError::Refused
        })
    );
    assert_eq!(
        err.to_string(),
        format!("task timed out; last attempt: could not connect to {addr}: connection refused")
    );
    assert_refusal_is_the_source(&err);
    assert_eq!(
        err.io_error().map(io::Error::kind),
        Some(io::ErrorKind::ConnectionRefused)
    );
    client.shutdown().await;
}

/// Under stn a refusal of every candidate ends the task with the refusal
/// itself, its retries and its total timeout unused (no separate last
/// attempt), and keeps the io::Error.
pub async fn refusal_is_the_error<H: Harness>() {
    let addr = refusing_port();
    let client = refused_client::<H>(addr, Profile::Stn);
    let finished = send_refused(&client, 3, Duration::from_secs(60)).await;
    assert_eq!(finished.attempts, 1, "not retried");
    let err = finished.outcome.expect_err("nothing listens");
    assert_refused_at(&err, addr);
    assert_eq!(err.last_attempt(), None);
    assert_eq!(
        err.io_error().map(io::Error::kind),
        Some(io::ErrorKind::ConnectionRefused)
    );
    // Every error type on the way is a std error with a message.
    let engine: &dyn std::error::Error = err.task_error().expect("task error");
    assert!(!engine.to_string().is_empty());
    let connect: &dyn std::error::Error = &ConnectError::Refused;
    assert_eq!(connect.to_string(), "connection refused");
    client.shutdown().await;
}

/// A task that can only use the long link, whose one endpoint refuses,
/// ends with that refusal, its address and the OS's error as the source,
/// without waiting for a reconnect or its deadline.
pub async fn long_link_refusal_is_the_error<H: Harness>() {
    let addr = refusing_port();
    let client = Client::<H::Rt>::builder()
        .ip(addr.ip())
        .long_link_port(addr.port())
        .seed(7)
        .build()
        .expect("client");
    let err = client
        .send(Task::new(8, "", "x").channel(Channel::Long))
        .await
        .expect_err("nothing listens");
    assert_refused_at(&err, addr);
    assert_eq!(
        err.to_string(),
        format!("could not connect to {addr}: connection refused")
    );
    client.shutdown().await;
}

/// `err` is the refusal of `addr`, with the OS's error as its source.
fn assert_refused_at(err: &stn_driver::Error, addr: SocketAddr) {
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Connect {
            addr: Some(addr),
            error: ConnectError::Refused
        }),
        "{err}"
    );
    assert_refusal_is_the_source(err);
}

/// The OS's error, kind and message, is the source of `err`.
fn assert_refusal_is_the_source(err: &stn_driver::Error) {
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused, "{io}");
}

/// A body over the server's cap is refused at once with 413 while the client
/// is still writing it: the client reads the answer before the failed write
/// closes the connection, and the task ends with HTTP 413 after one attempt
/// (a 4xx is not retried under the stn profile).
pub async fn server_refusal_arrives_as_itself<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        max_http_body: 64 * 1024,
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server).build().expect("client");
    let finished = client
        .send_detailed(short_task(vec![7u8; 4 * 1024 * 1024]).hedge(false))
        .await;
    let err = finished.outcome.expect_err("too large");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Http { status: 413 }),
        "{err}"
    );
    assert_eq!(finished.attempts, 1, "{err}");
    client.shutdown().await;
}

/// The HTTP-status retry policy: a 404 (an unknown CGI on the reference
/// server) is asked once under stn and `1 + retry_count` times under Mars.
pub async fn http_status_retries_follow_the_profile<H: Harness>() {
    let server = ServerHost::healthy();
    for (profile, attempts) in [(Profile::Stn, 1), (Profile::Mars, 3)] {
        let client = builder::<H>(&server)
            .profile(profile)
            .configure(|c| {
                c.set_retry_interval(Duration::from_millis(10));
            })
            .build()
            .expect("client");
        let finished = client
            .send_detailed(
                Task::new(8, "/no/such/cgi", "x")
                    .channel(Channel::Short)
                    .retry_count(2),
            )
            .await;
        let err = finished.outcome.expect_err("404");
        assert_eq!(
            err.task_error(),
            Some(&ProtoError::Http { status: 404 }),
            "{err}"
        );
        assert_eq!(finished.attempts, attempts, "{profile:?}: {err}");
        client.shutdown().await;
    }
}

/// The 106th identical body is refused by the frequency limit, with an
/// error that names the limit, its numbers and the opt-out; the opt-out
/// works.
pub async fn frequency_limit_says_why_and_how_to_opt_out<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server).build().expect("client");
    for i in 0..105 {
        client
            .send(short_task("poll").retry_count(0))
            .await
            .unwrap_or_else(|e| panic!("request {i}: {e}"));
    }
    let err = client
        .send(short_task("poll").retry_count(0))
        .await
        .expect_err("the 106th is refused");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Rejected(LimitKind::Frequency))
    );
    let text = err.to_string();
    for part in [
        "frequency limit",
        "more than 105 times",
        "Task::limit_frequency(false)",
        "Config::limits.frequency",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    client
        .send(short_task("poll").retry_count(0).limit_frequency(false))
        .await
        .expect("opted out");
    client.shutdown().await;
}

/// An unknown host fails as a DNS error that names the host, with the
/// resolver's own error as the source (not "no addresses to connect to").
pub async fn unknown_host_is_a_dns_error_naming_it<H: Harness>() {
    let client = Client::<H::Rt>::builder()
        .endpoint("no-such-host.invalid:18080")
        .seed(7)
        .build()
        .expect("client");
    let err = client
        .send(short_task("x").retry_count(0))
        .await
        .expect_err("does not resolve");
    assert!(err.is_dns(), "{err}");
    assert_eq!(err.kind(), ErrorKind::Dns);
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Dns(DnsError::ResolveFailed {
            host: "no-such-host.invalid".into()
        })),
        "{err}"
    );
    assert!(err.to_string().contains("no-such-host.invalid"), "{err}");
    let resolver = err.source().expect("the resolver's error is the source");
    assert!(!resolver.to_string().is_empty());
    client.shutdown().await;
}

/// A 404 keeps what the server said: status, headers and body; under the
/// stn profile it is not worth retrying.
pub async fn a_404_keeps_its_reply<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server).build().expect("client");
    let err = client
        .send(Task::new(8, "/no/such/cgi", "x").channel(Channel::Short))
        .await
        .expect_err("404");
    assert!(err.is_http(), "{err}");
    assert_eq!(err.status(), Some(404));
    assert!(!err.is_retryable(), "a 4xx is not retried under stn");
    assert_eq!(err.addr(), Some(server.short()));
    let reply = err.http_reply().expect("the reply is kept");
    assert_eq!(reply.status, 404);
    assert_eq!(
        &reply.body[..],
        b"no CGI at /no/such/cgi; this server answers /mars/hello2\n"
    );
    assert!(reply.headers.get("content-length").is_some());
    // A success carries its headers too.
    let ok = client.send(short_task("hi")).await.expect("200");
    assert_eq!(ok.headers.get("content-length"), Some("2"));
    client.shutdown().await;
}

/// Tasks and clients that cannot work fail at submit or build, with a
/// message that says what is wrong, before any connect.
pub async fn invalid_tasks_and_clients_fail_early_with_their_message<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server).build().expect("client");
    // A cgi without its slash: the HTTP codec's own message, at submit.
    let finished = client
        .send_detailed(Task::new(8, "mars/hello2", "x").channel(Channel::Short))
        .await;
    let err = finished.outcome.expect_err("invalid cgi");
    assert!(
        matches!(err, Error::Refused(SubmitError::Invalid(_))),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "task refused: invalid cgi path \"mars/hello2\": must start with '/' and hold only \
         visible ASCII"
    );
    assert_eq!((finished.id, finished.attempts), (None, 0));
    client.shutdown().await;

    // A short task on a client with only a long-link port.
    let long_only = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .long_link_port(server.long().port())
        .build()
        .expect("client");
    let err = long_only
        .send(short_task("x"))
        .await
        .expect_err("no short link");
    assert_eq!(err, Error::Refused(SubmitError::NoShortLink), "{err}");
    assert!(err.to_string().contains("needs the short link"), "{err}");
    // A task that may use either link takes the long one.
    let r = long_only
        .send(Task::new(8, "/mars/hello2", "both").channel(Channel::Both))
        .await
        .expect("went long");
    assert_eq!((r.body, r.status), ("both".into(), None));
    long_only.shutdown().await;

    // At build: a URL, port 0.
    for (endpoint, part) in [
        ("http://127.0.0.1:18080", "a URL is not an endpoint"),
        ("127.0.0.1:0", "port 0"),
    ] {
        let err = Client::<H::Rt>::builder()
            .endpoint(endpoint)
            .build()
            .expect_err("refused at build");
        assert!(err.to_string().contains(part), "{endpoint}: {err}");
    }
}

/// `Builder::timeout` is every task's "keep trying until": a task without
/// its own total timeout is retried against a refusing port until then
/// (under the Mars profile: the stn profile ends a refused task at once).
pub async fn client_timeout_is_the_default_total_timeout<H: Harness>() {
    let addr = refusing_port();
    let client = Client::<H::Rt>::builder()
        .endpoint(addr.to_string())
        .profile(Profile::Mars)
        .timeout(Duration::from_millis(1500))
        .seed(7)
        .build()
        .expect("client");
    let finished = client.send_detailed(short_task("x").retry_count(1)).await;
    let err = finished.outcome.expect_err("nothing listens");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Timeout(TimeoutKind::Task)),
        "{err}"
    );
    assert!(finished.attempts >= 2, "{} attempts", finished.attempts);
    // The deadline ended it; the refusal is what it is.
    assert!(err.is_connect() && !err.is_timeout(), "{err}");
    assert_eq!(err.addr(), Some(addr));
    client.shutdown().await;
}

/// One `#[test]` per suite function for harness `$h`.
#[macro_export]
macro_rules! errors_suite {
    ($h:ty) => {
        $crate::errors_suite!(@tests $h;
            timeout_names_the_last_attempt, refusal_is_the_error,
            long_link_refusal_is_the_error,
            server_refusal_arrives_as_itself, http_status_retries_follow_the_profile,
            frequency_limit_says_why_and_how_to_opt_out, unknown_host_is_a_dns_error_naming_it,
            a_404_keeps_its_reply, invalid_tasks_and_clients_fail_early_with_their_message,
            client_timeout_is_the_default_total_timeout);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::client_suite::run::<$h>($crate::errors_suite::$name::<$h>());
            }
        )*
    };
}
