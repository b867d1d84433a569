//! The runtime-agnostic driver shared by stn's adapters (`stn-tokio`,
//! `stn-asyncstd`).
//!
//! [`stn_proto`]'s [`Engine`](stn_proto::engine::Engine) decides everything;
//! this crate runs it. One driver task owns the engine and applies its drain
//! rule after every command, input and timeout: drain
//! [`poll_action`](stn_proto::engine::Engine::poll_action), execute each
//! action, then arm a timer at
//! [`poll_timeout`](stn_proto::engine::Engine::poll_timeout). The driver
//! polls its sockets and DNS lookups itself (only those whose wakers fired):
//! a request crosses one queue in (submission) and one oneshot out (its
//! reply), with no task or channel per connection; reads go through one
//! shared buffer, allocated at the first read, straight into the engine.
//! Everything a runtime must provide
//! is the small [`Runtime`] trait: spawn, a timer, a TCP connect, a DNS lookup.
//!
//! The user-facing API is [`Client`]: [`send`](Client::send) a task and await
//! its [`Response`](stn_proto::error::Response); a stream of server
//! [`pushes`](Client::pushes); an optional response [`judge`](Builder::judge)
//! (Mars `Buf2Resp`); network, foreground and authentication hints;
//! [`shutdown`](Client::shutdown). Every `send` resolves exactly once: with
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
//! Tracing: a `stn_task` span per task (id, cmd id, CGI, channel) with an
//! event per attempt (from the engine's [`Report`](stn_proto::engine::Report))
//! and one when it ends; connects, closes, resolves and the long link's
//! status at debug level.
#![forbid(unsafe_code)]

mod client;
mod clock;
mod conn;
mod driver;
mod error;
mod outcome;
mod pushes;
mod ready;
mod runtime;
pub mod tls;

pub use client::{BuildError, Builder, Client, DEFAULT_PUSH_BYTES, DEFAULT_READ_BUDGET};
pub use clock::Clock;
pub use conn::{close_reason, connect_error, READ_CHUNK};
pub use error::Error;
pub use outcome::{EndpointState, Finished, Push, Snapshot};
pub use pushes::Pushes;
pub use runtime::{AsyncStream, AsyncTimer, BoxFuture, Runtime};
pub use stn_proto as proto;
