//! The runtime-agnostic driver shared by stn's adapters (`stn-tokio`,
//! `stn-asyncstd`).
//!
//! [`stn_proto`]'s [`Engine`](stn_proto::Engine) decides everything;
//! this crate runs it. One driver task owns the engine and applies its drain
//! rule after every command, input and timeout: drain
//! [`poll_output`](stn_proto::Engine::poll_output), execute each
//! output, then arm a timer at
//! [`poll_timeout`](stn_proto::Engine::poll_timeout). The driver
//! polls its sockets and DNS lookups itself (only those whose wakers fired):
//! a request crosses one queue in (submission) and one oneshot out (its
//! reply), with no task or channel per connection; reads go through one
//! shared buffer, allocated at the first read, straight into the engine.
//! Everything a runtime must provide
//! is the small [`Runtime`] trait: spawn, a timer, a TCP connect, a DNS lookup.
//!
//! The user-facing API is [`Client`]: [`send`](Client::send) a task and await
//! its [`Response`](stn_proto::Response); a stream of server
//! [`pushes`](Client::pushes); an optional response [`judge`](Builder::judge)
//! (Mars `Buf2Resp`); network, foreground and authentication hints;
//! [`shutdown`](Client::shutdown). Mars's other app hooks (`docs/hooks.md`
//! maps each one): a body built per attempt
//! ([`BodySource`](stn_proto::BodySource), Req2Buf), identify per
//! connection with the app's verdict ([`Builder::identify_with`],
//! [`Builder::identify_verdict`]), bounded streams of per-attempt
//! [`reports`](Client::reports) and [`link_status`](Client::link_status)
//! changes, ban-history [export](Client::export_ban_history) and
//! [import](Client::import_ban_history), and runtime controls
//! ([`redo_tasks`](Client::redo_tasks), [`clear_tasks`](Client::clear_tasks),
//! [`make_sure_long_link_connected`](Client::make_sure_long_link_connected)). Every `send` resolves exactly once: with
//! the task's outcome, or [`Error::Shutdown`] if the client stops first (even
//! if the driver task is dropped without a shutdown).
//!
//! Queues and budgets: submissions go through a bounded queue (a full one
//! makes `send` wait), control messages (cancel, hints, shutdown) through an
//! unbounded one (at most one cancel per `send`). Nothing a server sends is
//! queued in the driver: received bytes go to the engine at once, and the
//! bytes the engine may still hold across every connection stay within the
//! [read budget](Builder::read_budget) (readers wait when it is reached).
//! Pushes wait in each [`Pushes`] stream within a count and a byte budget.
//! Writes per connection are queued without a bound of their own: the
//! engine's caps (tasks held, tasks in flight, body sizes) bound them.
//!
//! # Quick start
//!
//! Apps use an adapter (`stn-tokio`, `stn-asyncstd`), which names
//! `Client<ItsRuntime>` for them; code generic over the runtime reads the same:
//!
//! ```no_run
//! use stn_driver::{Client, Runtime};
//! use stn_driver::proto::{Channel, Task};
//!
//! async fn hello<R: Runtime + Default>() -> Result<(), Box<dyn std::error::Error>> {
//!     let client = Client::<R>::builder()
//!         .endpoint("127.0.0.1:8080") // IP, host, IP:port or host:port
//!         .build()?;
//!     let reply = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
//!     println!("{:?}", reply.body);
//!     client.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! Tracing: every client event is under the one target `stn` (enable it
//! with `RUST_LOG=stn=info` or `stn=debug`, whichever adapter runs the
//! client). WARN when a task fails (with its error) or pushes are dropped;
//! INFO when the long link goes up (with its address) or down; DEBUG for a
//! `stn_task` span per task (id, cmd id, CGI, channel) with an event per
//! attempt (from the engine's [`Report`](stn_proto::Report): channel,
//! endpoint, `duration` as a `Duration`, connect attempts, bytes) and one
//! when it ends, and for connects, closes and resolves.
#![forbid(unsafe_code)]

mod client;
mod clock;
mod conn;
mod dial;
mod driver;
mod endpoint;
mod error;
mod events;
mod history;
mod hooks;
mod links;
mod outcome;
pub mod proxy;
mod pushes;
mod ready;
mod runtime;
pub mod tls;

pub use client::{
    BuildError, Builder, Client, DEFAULT_EVENT_CAPACITY, DEFAULT_PUSH_BYTES, DEFAULT_READ_BUDGET,
};
pub use clock::Clock;
pub use conn::{close_reason, connect_error, READ_CHUNK};
pub use endpoint::{Endpoint, EndpointError};
pub use error::{Attempt, Error, ErrorKind};
pub use events::Events;
pub use history::HistoryError;
pub use hooks::{IdentifyRequest, IdentifyResponse};
pub use links::{LinkOptions, LinkUpdate};
pub use outcome::{EndpointState, Finished, Push, Snapshot};
pub use proxy::{Proxy, ProxyConfigError, ProxyError};
pub use pushes::Pushes;
pub use runtime::{AsyncStream, AsyncTimer, BoxFuture, Runtime};
pub use stn_proto as proto;
