//! # stn-proto — the sans-IO core of stn
//!
//! stn makes an app's small request/response calls ("tasks", Mars's CGIs)
//! survive bad networks, the way Tencent Mars STN does: racing connections,
//! escalating timeouts, banning bad endpoints, short and long links. This crate
//! holds every decision and no I/O: no sockets, no clock, no threads, no global
//! state. Time is a value ([`Instant`]) passed in by the caller; every
//! random choice comes from a PRNG seeded through the configuration
//! ([`Rng`]). The same inputs give the same outputs, bit for bit.
//!
//! One machine is public, the [`Engine`]: tasks in ([`Engine::submit`]),
//! socket results in ([`Input`]), and out of it I/O for the adapter and events
//! for the app ([`Output`]). Inside, each concern is a small machine of the
//! same shape (connection racing as in Mars's complex connect and RFC 8305;
//! task, first-packet, read-write and packet-gap timeouts and their
//! escalation; endpoint bans and ordering; the anti-avalanche limits; the
//! short-link exchange; the long link with its heartbeat and reconnect
//! monitor), private so that they can change without breaking an app.
//!
//! What is public:
//!
//! - the engine and its traffic: [`Engine`], [`Config`] (its knobs' types in
//!   [`config`]), [`Profile`], [`Input`], [`Output`] ([`IoAction`] for the
//!   adapter, [`Event`] for the app), [`Report`];
//! - tasks and how they end: [`Task`], [`TaskId`], [`Channel`],
//!   [`Response`], [`Error`] and its parts;
//! - the adapter's side: [`ConnId`], [`ConnEvent`], [`CloseReason`],
//!   [`ConnectError`], [`TlsFailure`], [`NetworkKind`], [`Instant`];
//! - [`EndpointHistory`]: bans, candidate order, export and import;
//! - [`codec`]: the long-link frame codec and the short-link HTTP codec, for
//!   servers and tools that speak the same wire formats;
//! - [`proxy`]: the HTTP CONNECT and SOCKS5 handshakes and the proxy's own
//!   failure handling, which an executor runs beside the engine;
//! - [`nat64`]: the NAT64 prefix of an IPv6-only network (RFC 7050) and
//!   address synthesis (RFC 6052), for the executor's connects.
//!
//! **The drain rule: after every command, input or timeout given to a
//! machine, drain its output ([`Engine::poll_output`]) until `None`, then read
//! [`Engine::poll_timeout`]**
//! (and call `handle_timeout` no later than that). For the [`Engine`]:
//!
//! ```
//! use bytes::Bytes;
//! use stn_proto::{Config, Engine, Event, Input, Output};
//! use stn_proto::{ConnEvent, IoAction};
//! use stn_proto::{Channel, Task};
//! use stn_proto::Instant;
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
#![warn(unnameable_types)]
// Lets the examples of internal machines run as unit tests with the paths
// they would have from outside (`stn_proto::...`).
#[cfg(test)]
extern crate self as stn_proto;

mod ban;
pub mod codec;
pub mod config;
mod engine;
mod error;
#[cfg(test)]
mod examples;
// What a fuzz target is and the corpus replay, for every crate with fuzz
// targets (stn-sim and stn-server enable `fuzz-corpus` in their tests).
#[cfg(any(fuzzing, test, feature = "fuzz-corpus"))]
#[doc(hidden)]
pub mod fuzz_corpus;
// Fuzz target bodies: cargo-fuzz builds set `cfg(fuzzing)`; tests replay the corpus.
#[cfg(any(fuzzing, test))]
pub mod fuzzing;
mod heartbeat;
mod id_map;
mod io;
mod limit;
mod link_name;
mod long_link;
mod monitor;
pub mod nat64;
mod net;
mod profile;
pub mod proxy;
mod race;
mod rng;
mod short_link;
mod small_map;
mod smart_heartbeat;
mod task;
#[cfg(test)]
mod test_util;
mod time;
mod timeout;
mod tls;

// The engine and what flows in and out of it.
pub use engine::{
    Config, Engine, Event, Input, JudgeRequest, LinkError, LinkSpec, LinkStatus, Output, Report,
    SubmitError, Verdict, MAX_LINKS,
};
pub use profile::{Profile, UnknownProfile};
// Tasks and how they end.
pub use error::{
    DnsError, Error, ErrorFamily, Headers, HttpReply, LocalError, Outcome, ProtocolError, Response,
    SocketError, TimeoutKind,
};
pub use limit::LimitKind;
pub use link_name::{LinkName, LinkNameError, MAX_LINK_NAME_LEN};
pub use task::{BodyRequest, BodySource, Channel, ChannelStrategy, Task, TaskError, TaskId};
// The adapter's side: sockets, the network, time.
pub use io::{CloseReason, ConnEvent, ConnId, IoAction};
pub use net::{ConnectError, NetworkKind};
pub use time::{Duration, Instant};
pub use tls::TlsFailure;
// The long link's identify step.
pub use heartbeat::IdentifyDecision;
pub use smart_heartbeat::HeartbeatState;
// Endpoint history: bans, ordering, persistence.
pub use ban::{EndpointHistory, EndpointStats, ImportError};
// The deterministic PRNG every random choice comes from.
pub use rng::Rng;
