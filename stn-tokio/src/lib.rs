//! stn over tokio: Mars-STN-style tasks (short-link HTTP and a framed long
//! link) with connection racing, escalating timeouts and IP banning.
//!
//! [`Client`] runs an [`stn_proto`] engine through the runtime-agnostic
//! [`stn_driver`] with tokio sockets, DNS (`tokio::net::lookup_host`) and
//! timers ([`TokioRuntime`]). Every decision (which IP, when to retry, when
//! to give up) is the engine's; this crate only binds it to tokio.
//!
//! # Quick start
//!
//! ```
//! use stn_tokio::Client;
//! use stn_tokio::proto::{Channel, Task};
//! # use stn_tokio::server::{Server, ServerConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A local reference server stands in for your own.
//! # let server = Server::start(ServerConfig::default()).await?;
//! # let short_port = server.short_addr().unwrap().port();
//! # let long_port = server.long_addr().unwrap().port();
//! let client = Client::builder()
//!     .endpoint("127.0.0.1") // an IP, or a host name resolved with tokio's resolver
//!     .short_link_port(short_port)
//!     .long_link_port(long_port)
//!     .build()?;
//! // A short-link task: an HTTP POST of the body to the CGI path.
//! let reply = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
//! assert_eq!(reply.body, "hi");
//! // A long-link task: one frame with command id 8 on the persistent link.
//! let reply = client.send(Task::new(8, "", "hello").channel(Channel::Long)).await?;
//! assert_eq!(reply.body, "hello");
//! client.shutdown().await;
//! # server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! [`stn_driver::Client`] documents every method and
//! [`stn_driver::Builder`] every option; [`stn_proto::Task`] the
//! per-task settings (channel, retries, timeouts, priority).
//!
//! # Features
//!
//! - default `cli`: the `stn` binary (`stn serve`, `stn send`, `stn lab`)
//!   and the `lab` module; implies `server`.
//! - `server`: the reference `server` module, which speaks the Mars
//!   sample protocol (long link: 20-byte header frames, noop echo, hello;
//!   short link: HTTP POST to a CGI path), for examples, tests and
//!   benchmarks.
//!
//! A library that only needs the client turns them off:
//! `stn-tokio = { version = "0.1", default-features = false }` needs tokio's
//! `rt`, `net` and `time` features only, and compiles no server or CLI code.
#![forbid(unsafe_code)]

pub use stn_driver::tls;
pub use stn_proto as proto;

pub mod client;
#[cfg(feature = "cli")]
pub mod lab;
#[cfg(feature = "server")]
pub mod server;

pub use client::{
    BuildError, Client, ClientBuilder, Endpoint, Error, Finished, Push, Pushes, Snapshot,
    TokioRuntime,
};
#[cfg(feature = "server")]
pub use server::{Fault, Server, ServerConfig, ServerHandle, Stats};
