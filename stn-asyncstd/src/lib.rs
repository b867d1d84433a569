//! stn over async-std (and smol).
//!
//! [`Client`] runs an `stn_proto` engine through the runtime-agnostic
//! [`stn_driver`] — the same driver `stn-tokio` uses — with async-std's
//! executor, sockets and resolver and async-io's timers
//! ([`AsyncStdRuntime`]). This crate only binds the runtime: every decision
//! is the engine's, and the driver loop, connection tasks and API are
//! [`stn_driver`]'s.
//!
//! async-std is discontinued upstream and its users move to smol. Both sit on
//! async-io, so the same client also runs on smol's executor:
//! [`SmolClient`] on [`SmolRuntime`] (feature `smol`, on by default).
//! A smol-only app turns async-std off:
//! `stn-asyncstd = { version = "0.1", default-features = false, features = ["tls", "smol"] }`
//! (the async-std [`Client`] is feature `async-std`, also on by default;
//! TLS is feature `tls`, on by default, and without it no rustls is built).
//!
//! The API is the one `stn-tokio` has: `Client::builder()` … `.build()`,
//! [`send`](stn_driver::Client::send), [`pushes`](stn_driver::Client::pushes),
//! [`network_changed`](stn_driver::Client::network_changed),
//! [`set_foreground`](stn_driver::Client::set_foreground) and
//! [`shutdown`](stn_driver::Client::shutdown); see [`stn_driver::Client`].
//!
//! ```
//! use stn_asyncstd::Client;
//! use stn_asyncstd::proto::{Channel, Task};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // The reference server is tokio's: it gets a runtime of its own.
//! # let server_rt = tokio::runtime::Runtime::new()?;
//! # let server = server_rt.block_on(stn_server::Server::start(Default::default()))?;
//! # let (short_port, long_port) = (server.short_addr().unwrap().port(), server.long_addr().unwrap().port());
//! async_std::task::block_on(async {
//!     let client = Client::builder()
//!         .endpoint("127.0.0.1") // an IP, or a host name resolved with async-std's resolver
//!         .short_link_port(short_port)
//!         .long_link_port(long_port)
//!         .build()?;
//!     let short = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
//!     assert_eq!(short.body, "hi");
//!     let long = client.send(Task::new(8, "", "hello").channel(Channel::Long)).await?;
//!     assert_eq!(long.body, "hello");
//!     client.shutdown().await;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # server_rt.block_on(server.shutdown());
//! # Ok(())
//! # }
//! ```
//!
//! On smol, the same with `SmolClient` and `smol::block_on`:
//!
//! ```no_run
//! # #[cfg(feature = "smol")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use stn_asyncstd::SmolClient;
//! use stn_asyncstd::proto::{Channel, Task};
//!
//! smol::block_on(async {
//!     let client = SmolClient::builder()
//!         .endpoint("127.0.0.1")
//!         .long_link_port(8081)
//!         .build()?;
//!     let reply = client.send(Task::new(8, "", "hello").channel(Channel::Long)).await?;
//!     println!("{:?}", reply.body);
//!     client.shutdown().await;
//!     Ok(())
//! })
//! # }
//! # #[cfg(not(feature = "smol"))]
//! # fn main() {}
//! ```
//!
//! `examples/hello.rs` runs the reference server (`stn-server`, on a
//! tokio thread) and talks to it with this client.
#![forbid(unsafe_code)]

#[cfg(feature = "async-std")]
mod async_std_rt;
mod io;
#[cfg(feature = "smol")]
mod smol_rt;
#[cfg(feature = "tls")]
mod tls_io;

#[cfg(feature = "async-std")]
pub use async_std_rt::AsyncStdRuntime;
#[cfg(feature = "smol")]
pub use smol_rt::SmolRuntime;
pub use stn_driver::tls;
pub use stn_driver::{
    Attempt, BuildError, Endpoint, EndpointError, EndpointState, Error, ErrorKind, Finished,
    LinkOptions, LinkUpdate, Push, Pushes, Snapshot,
};
pub use stn_proto as proto;

/// The stn client on async-std. Build one with `Client::builder()` (from
/// any thread: async-std needs no runtime context); see the
/// [crate docs](crate) for an example and [`stn_driver::Client`] for the
/// methods.
#[cfg(feature = "async-std")]
pub type Client = stn_driver::Client<AsyncStdRuntime>;

/// The builder of a [`Client`].
#[cfg(feature = "async-std")]
pub type ClientBuilder = stn_driver::Builder<AsyncStdRuntime>;

/// The stn client on smol's executor: `SmolClient::builder()` spawns on
/// smol's global executor,
/// `SmolClientBuilder::with_runtime(SmolRuntime::with_executor(&ex))` on an
/// executor of your own.
#[cfg(feature = "smol")]
pub type SmolClient = stn_driver::Client<SmolRuntime>;

/// The builder of a [`SmolClient`].
#[cfg(feature = "smol")]
pub type SmolClientBuilder = stn_driver::Builder<SmolRuntime>;
