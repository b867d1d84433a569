//! # stn-sim — a deterministic lossy-network simulator for stn
//!
//! A single-threaded discrete-event simulator in virtual time
//! ([`stn_proto::time::Instant`]). One root seed fixes everything: each
//! path direction and each client draws from its own stream derived with
//! [`stn_proto::rng::Rng::derive`], and every delivered or dropped packet and
//! every socket event is folded into a stable [`trace::Trace`] hash — same
//! seed, same hash, bit for bit.
//!
//! Pieces, each in its own module:
//! - [`event`]: the event queue, ordered by (time, insertion sequence);
//! - [`link`], [`path`], [`preset`]: per-direction links (delay, jitter,
//!   bandwidth with a drop-tail queue, Bernoulli and Gilbert–Elliott loss,
//!   scripted changes and outages) and the Network Link Conditioner presets;
//! - [`tcp`]: the TCP model (OS SYN schedules, RTO, segmenting, ACKs, FIN);
//! - [`host`] and [`apps`]: server hosts with listening / refusing /
//!   black-holed ports and pluggable [`host::ServerApp`]s;
//! - [`client`] and [`socket`]: the seam through which client models
//!   (stn-proto's engine, peer models) act — [`client::SimClient`];
//! - [`fresh_conn`]: the "fresh connection per request" HTTP client, the
//!   skeleton of the OkHttp-2017 peer;
//! - [`sim`]: the [`Simulation`] event loop; [`trace`]: the trace and hash.
#![forbid(unsafe_code)]

pub mod apps;
pub mod client;
pub mod event;
pub mod fresh_conn;
pub mod host;
pub mod http;
pub mod link;
mod network;
pub mod oracle;
pub mod path;
pub mod peers;
pub mod preset;
pub mod sim;
pub mod socket;
pub mod tcp;
pub mod trace;
pub mod workload;

pub use sim::{RunOutcome, SimError, Simulation};
pub use stn_proto as proto;
