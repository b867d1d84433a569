//! stn over tokio: an app's small request/response calls ("tasks") that
//! survive bad networks the way Tencent Mars's STN does it: racing
//! connections to several endpoints, escalating timeouts, banning endpoints
//! that keep failing, and two links to the server: the **short link** (an
//! HTTP/1.1 `POST` to a path) and the **long link** (one persistent
//! connection carrying framed calls and server pushes).
//!
//! This crate is what an app depends on: `stn-tokio = "0.1"` is the
//! [`Client`] over tokio and TLS (rustls with ring); with
//! `default-features = false` it is the client without TLS. Every decision
//! (which endpoint, when to retry, when to give up) is the engine's
//! ([`proto`], the sans-IO `stn-proto`); this crate runs it on tokio's
//! sockets, resolver and timers.
//!
//! # A complete program
//!
//! It starts the reference server (the `stn-server` crate, what `stn serve`
//! runs) in-process so that it runs as it is; an app points the client at
//! its own servers instead.
//!
//! ```
//! use std::time::Duration;
//!
//! use stn_server::{Server, ServerConfig};
//! use stn_tokio::{Channel, Client, Task};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = Server::start(ServerConfig::default()).await?;
//!     let (short, long) = (server.short_addr().unwrap(), server.long_addr().unwrap());
//!
//!     let client = Client::builder()
//!         .endpoint(format!("127.0.0.1:{}", short.port())) // IP or host name, with the short link's port
//!         .long_link_port(long.port())
//!         .timeout(Duration::from_secs(10)) // keep trying each task for up to 10 s
//!         .build()?;
//!
//!     // Short link: the body is POSTed to the cgi path; the reply is the response body.
//!     let reply = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
//!     assert_eq!(reply.body, "hi");
//!     assert_eq!(reply.headers.get("content-length"), Some("2"));
//!
//!     // Long link: one frame with command id 8 on the persistent connection.
//!     let reply = client.send(Task::new(8, "", "hello").channel(Channel::Long)).await?;
//!     assert_eq!(reply.body, "hello");
//!
//!     // Errors say what happened and what kind of failure it is.
//!     let err = client
//!         .send(Task::new(8, "/no/such/cgi", "x").channel(Channel::Short))
//!         .await
//!         .unwrap_err();
//!     assert!(err.is_http() && err.status() == Some(404), "{err}");
//!
//!     client.shutdown().await;
//!     server.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! # Where things are
//!
//! - [`Client`] and its [`ClientBuilder`]: endpoints, ports, profile, TLS,
//!   hooks; `send`, `pushes`, network and foreground hints, `shutdown`.
//! - [`Task`]: one call and its settings (channel, cgi, cmd id, retries,
//!   total timeout, headers, priority); [`Response`] its reply.
//! - [`Error`] and [`ErrorKind`]: how a task can fail
//!   ([`docs::errors`] is the reference).
//! - [`tls`]: client configurations (webpki or custom roots, SPKI pinning).
//! - [`proto`]: the engine's types (profiles, configuration, reports).
//! - [`docs`]: the errors reference, a glossary of Mars's terms, Mars's
//!   hooks and what stn has for each, the reference server's wire behaviour.
//!
//! Logs: every client event is under the `tracing` target `stn`; with
//! `tracing-subscriber`,
//! `tracing_subscriber::fmt().with_env_filter("stn=info").init()` shows a
//! WARN for each failed task and the long link going up and down, and
//! `stn=debug` every attempt.
#![forbid(unsafe_code)]

#[doc(inline)]
pub use stn_driver::tls;
#[doc(inline)]
pub use stn_proto as proto;

pub mod client;

#[doc(inline)]
pub use client::{
    Attempt, BuildError, Client, ClientBuilder, Endpoint, Error, ErrorKind, Finished, LinkOptions,
    LinkUpdate, Push, Pushes, Snapshot, TokioRuntime,
};
#[doc(inline)]
pub use stn_proto::{Channel, Headers, HttpReply, Response, Task};

/// Reference pages, kept in the repository's `docs/` and shown here; their
/// examples run as tests.
#[cfg(any(doc, doctest))]
pub mod docs {
    #[doc = include_str!("../../docs/errors.md")]
    pub mod errors {}

    #[doc = include_str!("../../docs/glossary.md")]
    pub mod glossary {}

    #[doc = include_str!("../../docs/hooks.md")]
    pub mod hooks {}

    #[doc = include_str!("../../docs/server.md")]
    pub mod server {}
}
