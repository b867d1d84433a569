//! Errors that name what happened, through the Client's public API, written
//! once for every adapter (the [`client_suite`](super::client_suite)'s
//! [`Harness`]): a task out of time names its last attempt; the `io::Error`
//! behind a failure is its `source()`; a server's refusal arrives as itself;
//! the HTTP-status retry policy of each profile; a frequency-limit rejection
//! that says which limit, its numbers and the opt-out.
//!
//! Real sockets on loopback: a port nothing listens on (refused), the
//! reference server on its own runtime. Every test is bounded by the
//! suite's `TEST_BOUND`; nothing asserts a duration.
#![allow(dead_code)]

use std::error::Error as _;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use stn_driver::proto::ConnectError;
use stn_driver::proto::Profile;
use stn_driver::proto::{Channel, Task};
use stn_driver::proto::{Error as ProtoError, LimitKind, TimeoutKind};
use stn_driver::Client;
use stn_tokio::server::ServerConfig;

use crate::client_suite::{builder, Harness, ServerHost};

fn short_task(body: impl Into<bytes::Bytes>) -> Task {
    Task::new(8, "/mars/hello2", body).channel(Channel::Short)
}

/// A loopback port nothing listens on: connects to it are refused.
fn refusing_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// A client of the short link on `addr` alone.
fn refused_client<H: Harness>(addr: SocketAddr) -> Client<H::Rt> {
    Client::<H::Rt>::builder()
        .endpoint(addr.to_string())
        .seed(7)
        .build()
        .expect("client")
}

/// The repro: a refusing endpoint, `retry_count(1)` and a total
/// timeout. The task parks and replays until its budget ends; the error
/// says it ran out of time and what every attempt ran into.
pub(crate) async fn timeout_names_the_last_attempt<H: Harness>() {
    let addr = refusing_port();
    let client = refused_client::<H>(addr);
    let finished = client
        .send_detailed(
            short_task("x")
                .retry_count(1)
                .total_timeout(Duration::from_millis(1500)),
        )
        .await;
    let err = finished.outcome.expect_err("nothing listens");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Timeout(TimeoutKind::Task)),
        "{err}"
    );
    assert!(
        finished.attempts > 2,
        "parked and replayed: {} attempts",
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
    // The OS's error, kind and message, is the source.
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused, "{io}");
    assert_eq!(
        err.io_error().map(io::Error::kind),
        Some(io::ErrorKind::ConnectionRefused)
    );
    client.shutdown().await;
}

/// Without a total timeout the same task ends with the refusal itself (no
/// separate last attempt), and keeps the io::Error.
pub(crate) async fn refusal_is_the_error<H: Harness>() {
    let addr = refusing_port();
    let client = refused_client::<H>(addr);
    let err = client
        .send(short_task("x").retry_count(1))
        .await
        .expect_err("nothing listens");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Connect {
            addr: Some(addr),
            error: ConnectError::Refused
        }),
        "{err}"
    );
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

/// A body over the server's cap is refused at once with 413 while the client
/// is still writing it: the client reads the answer before the failed write
/// closes the connection, and the task ends with HTTP 413 after one attempt
/// (a 4xx is not retried under the stn profile).
pub(crate) async fn server_refusal_arrives_as_itself<H: Harness>() {
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
pub(crate) async fn http_status_retries_follow_the_profile<H: Harness>() {
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
pub(crate) async fn frequency_limit_says_why_and_how_to_opt_out<H: Harness>() {
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

/// One `#[test]` per suite function for harness `$h`.
#[macro_export]
macro_rules! errors_suite {
    ($h:ty) => {
        $crate::errors_suite!(@tests $h;
            timeout_names_the_last_attempt, refusal_is_the_error,
            server_refusal_arrives_as_itself, http_status_retries_follow_the_profile,
            frequency_limit_says_why_and_how_to_opt_out);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                client_suite::run::<$h>(errors_suite::$name::<$h>());
            }
        )*
    };
}
