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
//! - [`engine`]: the top-level machine an app or adapter drives ([`Engine`]):
//!   task queue, retries, channel choice, candidates, anti-avalanche
//!   ([`limit`]), network changes, reports; it composes
//!   [`short_link`] (one HTTP exchange) and [`long_link`] (the persistent
//!   link with [`heartbeat`] and the reconnect [`monitor`]).
//!
//! **The drain rule: after every command, input or timeout given to a
//! machine, drain its output (`poll_output` on the [`Engine`], `poll_action` or
//! `poll_event` on the smaller machines) until `None`, then read `poll_timeout`**
//! (and call `handle_timeout` no later than that). For the [`Engine`]:
//!
//! ```
//! use bytes::Bytes;
//! use stn_proto::engine::{Config, Engine, Event, Input, Output};
//! use stn_proto::io::{ConnEvent, IoAction};
//! use stn_proto::task::{Channel, Task};
//! use stn_proto::time::Instant;
//! use stn_proto::Profile;
//!
//! let config = Config::for_profile(Profile::Stn).short_link_ips(["192.0.2.1".parse().unwrap()], 80);
//! let mut now = Instant::from_secs(1);
//! let mut engine = Engine::new(now, config);
//! let id = engine.submit(now, Task::new(0, "/hello", "hi").channel(Channel::Short)).unwrap();
//!
//! // A fake server: connect at once, answer the POST with a 200.
//! let mut done = None;
//! let mut inputs = Vec::new();
//! loop {
//!     // 1. Drain every output.
//!     while let Some(output) = engine.poll_output() {
//!         match output {
//!             Output::Io(IoAction::Connect { conn, .. }) => {
//!                 inputs.push(Input::Conn { conn, event: ConnEvent::Connected })
//!             }
//!             Output::Io(IoAction::Send { conn, .. }) => {
//!                 let reply = Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
//!                 inputs.push(Input::Conn { conn, event: ConnEvent::Received(reply) });
//!             }
//!             Output::Event(Event::TaskFinished { id: finished, outcome, .. }) => {
//!                 done = Some((finished, outcome))
//!             }
//!             _ => {}
//!         }
//!     }
//!     if done.is_some() { break; }
//!     // 2. Feed back what the sockets did, or sleep until poll_timeout.
//!     if inputs.is_empty() {
//!         now = engine.poll_timeout().unwrap();
//!         engine.handle_timeout(now);
//!     } else {
//!         for input in inputs.drain(..) {
//!             engine.handle_input(now, input);
//!         }
//!     }
//! }
//! let (finished, outcome) = done.unwrap();
//! assert_eq!(finished, id);
//! assert_eq!(outcome.unwrap().body, &b"ok"[..]);
//! ```
#![forbid(unsafe_code)]

pub mod ban;
pub mod codec;
pub mod engine;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
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
pub mod tls;

pub use engine::{Config, Engine, Event, Input, Output, Report, SubmitError};
pub use profile::Profile;
