//! # stn-sim — a deterministic lossy-network simulator for stn
//!
//! A single-threaded discrete-event simulator in virtual time
//! ([`stn_proto::Instant`]). One root seed fixes everything: each
//! path direction and each client draws from its own stream derived with
//! [`stn_proto::Rng::derive`], and every delivered or dropped packet and
//! every socket event is folded into a stable [`trace::Trace`] hash — same
//! seed, same hash, bit for bit.
//!
//! Pieces, each in its own module:
//! - [`event`]: the event queue, ordered by (time, insertion sequence);
//! - [`link`], [`path`], [`preset`]: per-direction links (delay, jitter,
//!   bandwidth with a drop-tail queue, Bernoulli and Gilbert–Elliott loss,
//!   scripted changes and outages) and the Network Link Conditioner presets;
//! - [`middlebox`]: a NAT at the client's edge that forgets idle flows
//!   (off unless a simulation sets one);
//! - [`tcp`]: the TCP model (OS SYN schedules, RTO, segmenting, ACKs, FIN);
//! - [`host`] and [`apps`]: server hosts with listening / refusing /
//!   black-holed ports and pluggable [`host::ServerApp`]s;
//! - [`client`] and [`socket`]: the seam through which client models act
//!   ([`client::SimClient`]); [`workload`]: calls, the seam of call-level
//!   clients ([`workload::CallClient`]) and the loops that drive them;
//! - [`clients`]: the client models — stn-proto's engine, the peers, the
//!   oracle;
//! - [`sim`]: the [`Simulation`] event loop; [`trace`]: the trace and hash;
//! - [`http`]: just enough HTTP/1.1 framing for the simulated short link;
//! - `fuzzing` (only under `cfg(fuzzing)`, which cargo-fuzz sets, and in
//!   this crate's tests): the `sim_scenario` fuzz target body — small random
//!   scenarios of every client, link, stack and schedule, run with oracles —
//!   shared with the swarm test.
//!
//! Topology: one client host (`10.0.0.1`, ephemeral ports from 32768) and
//! any number of server hosts, each behind its own [`path::PathSchedule`]
//! (two independent directions). Clients on the client host share the paths.
//!
//! Determinism: events at the same instant run in the order they were
//! scheduled; loss and jitter of a path direction use their own streams
//! (keyed by the server address), so adding a host or jitter does not move
//! another path's losses; no hash maps, no clocks.
//!
//! What is modelled and what is not: see [`link`] (processing order,
//! FIFO jitter) and [`tcp`] (handshake, windows, timers, simplifications).
//! TLS 1.3 is in [`tls`]. Not modelled at all yet: DNS, IPv6-specific behaviour, network
//! change notifications to clients; of middleboxes only the idle-timeout
//! NAT.
//!
//! ```
//! use stn_sim::{Simulation, client::{ClientCx, SimClient}, socket::{SocketEvent, SocketId}};
//! use stn_sim::{host::PortMode, path::PathSchedule, preset::Preset, tcp::TcpStack};
//! use stn_proto::{ConnectError, Instant};
//!
//! /// Connects once and remembers how it ended.
//! struct Probe(Option<(Instant, SocketEvent)>);
//! impl SimClient for Probe {
//!     fn start(&mut self, cx: &mut ClientCx<'_>) {
//!         cx.connect("10.0.0.2:80".parse().unwrap());
//!     }
//!     fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, _s: SocketId, ev: SocketEvent) {
//!         self.0 = Some((cx.now(), ev));
//!     }
//!     fn on_wakeup(&mut self, _cx: &mut ClientCx<'_>) {}
//!     fn is_finished(&self) -> bool {
//!         self.0.is_some()
//!     }
//! }
//!
//! let mut sim = Simulation::new(1);
//! sim.add_host("10.0.0.2".parse().unwrap(), PathSchedule::constant(Preset::FullLoss.conditions()))
//!     .set_port(80, PortMode::BlackHole);
//! let id = sim.add_client(Probe(None), TcpStack::xnu());
//! sim.run_until_finished(Instant::from_secs(600));
//! // xnu gives up at its 75 s connection-establishment limit.
//! assert_eq!(
//!     sim.client(id).0,
//!     Some((Instant::from_secs(75), SocketEvent::ConnectFailed(ConnectError::TimedOut)))
//! );
//! ```
#![forbid(unsafe_code)]

pub mod apps;
pub mod bench;
pub mod client;
pub mod clients;
pub mod event;
pub mod fleet;
#[cfg(any(fuzzing, test))]
pub mod fuzzing;
pub mod host;
pub mod http;
mod ids;
pub mod link;
pub mod listen;
pub mod middlebox;
mod network;
pub mod path;
pub mod preset;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod socket;
pub mod tcp;
pub mod tls;
pub mod trace;
mod units;
pub mod workload;

pub use sim::{RunOutcome, SimError, Simulation};
pub use stn_proto as proto;
