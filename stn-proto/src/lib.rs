//! # stn-proto — the sans-IO core of stn
//!
//! stn makes an app's small request/response calls ("tasks", Mars's CGIs)
//! survive bad networks, the way Tencent Mars STN does: racing connections,
//! escalating timeouts, banning bad endpoints, short and long links. This crate
//! holds every decision and no I/O: no sockets, no clock, no threads, no global
//! state. Time is a value ([`time::Instant`]) passed in by the caller; every
//! random choice comes from a PRNG seeded through the configuration
//! ([`rng::Rng`]). The same inputs give the same outputs, bit for bit.
//!
//! Each concern is a small machine of the same shape — commands and I/O
//! results in, actions out, and a next deadline:
//!
//! - [`race`]: connection racing (Mars's complex connect, RFC 8305 Happy Eyeballs);
//! - [`timeout`]: task, first-packet, read-write and packet-gap timeouts and
//!   their escalation;
//! - [`ban`]: endpoint history, banning and candidate ordering;
//! - [`codec`]: the long-link frame codec and the short-link HTTP codec;
//! - [`task`] and [`error`]: what a task is and how it can end.
//!
//! **The drain rule: after every command, input or timeout given to a
//! machine, drain its `poll_action` until `None`, then read `poll_timeout`.**
#![forbid(unsafe_code)]

pub mod ban;
pub mod codec;
pub mod engine;
pub mod error;
pub mod heartbeat;
pub mod io;
pub mod limit;
pub mod long_link;
pub mod monitor;
pub mod net;
pub mod profile;
pub mod race;
pub mod rng;
pub mod short_link;
pub mod task;
pub mod time;
pub mod timeout;

pub use profile::Profile;
