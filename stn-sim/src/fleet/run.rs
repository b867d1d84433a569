//! One fleet through one scenario: the clients built as the bench builds
//! them, each on a host of its own, against one server with finite
//! capacity, sampled into time bins.

use std::net::{IpAddr, Ipv4Addr};

use stn_proto::{Duration, Instant, Rng};

use crate::bench::client_kind::{
    engine_client, engine_tls, peer_client, tls_config, ClientKind, TlsOf,
};
use crate::bench::platform::Platform;
use crate::bench::run_spec::{simulation, RunSpec, SERVER};
use crate::bench::suites::matrix::{self, BANDWIDTHS, JITTER_PCT, LOSSES, RTT_MS};
use crate::fleet::caller::Caller;
use crate::fleet::scenario::{FleetScenario, OutageKind};
use crate::path::{PathConditions, PathSchedule};
use crate::workload::{CallClient, CallRecord};
use crate::Simulation;

/// The platform every fleet client runs on (its TCP stack and peers).
const PLATFORM: Platform = Platform::Android;

/// Stream ids of the per-client draws (network, call time, mixed kind);
/// they depend on the client's index only, so every fleet meets the same
/// phones on the same links calling at the same times.
const STREAM_DRAW: u64 = 0x464C_4545_0000_0000;

/// What the server saw and the clients did during one time bin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Bin {
    /// SYNs that arrived at the server.
    pub syns: u64,
    /// Connections the server's application accepted.
    pub accepted: u64,
    /// SYNs and handshake ACKs the full queues dropped.
    pub overflows: u64,
    /// Calls that succeeded.
    pub served: u64,
}

/// What one client's app did.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientCalls {
    /// When its first call started.
    pub first_call: Instant,
    /// Every call that ended, in order (retries after failures).
    pub records: Vec<CallRecord>,
    /// Still calling when the run stopped.
    pub calling: bool,
}

impl ClientCalls {
    /// The successful call, if any.
    pub fn served(&self) -> Option<&CallRecord> {
        self.records.iter().find(|r| r.is_ok())
    }
}

/// One client as drawn for the scenario (the same in every fleet).
#[derive(Clone, Debug)]
struct Draw {
    conditions: PathConditions,
    call_at: Instant,
    ip: IpAddr,
    /// Its kind in the mixed fleet.
    mixed_kind: &'static str,
}

/// The result of one fleet: its time series and every client's call.
#[derive(Debug)]
pub struct FleetRun {
    /// `stn`, `mars`, `mars-2017`, `okhttp-5` or `mixed`.
    pub fleet: String,
    /// Width of a bin.
    pub bin: Duration,
    /// The bins from t = 0.
    pub bins: Vec<Bin>,
    /// Each client's calls, in client order.
    pub clients: Vec<ClientCalls>,
    /// What the server's capacity did over the whole run.
    pub capacity: crate::listen::CapacityStats,
    /// What connection attempts cost the server.
    pub server: crate::host::ServerCost,
    /// Virtual time when the run stopped.
    pub end: Instant,
    /// The trace hash (events are not kept).
    pub trace_hash: u64,
    /// Events the run processed.
    pub events: u64,
}

fn kind_of(name: &str) -> ClientKind {
    match name {
        "stn" => ClientKind::STN,
        "mars" => ClientKind::MARS,
        "mars-2017" => ClientKind::MARS_2017,
        _ => ClientKind::PeerRecommended,
    }
}

/// The source address of client `i` on its own (`11.0.0.0/8` on).
fn own_address(i: u64) -> IpAddr {
    let n = 0x0B00_0000u32.wrapping_add(u32::try_from(i + 1).unwrap_or(u32::MAX));
    IpAddr::V4(Ipv4Addr::from(n))
}

/// The address of carrier-grade NAT `g` (`100.64.0.0/10`, as carriers use).
fn nat_address(g: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x6440_0001u32.wrapping_add(g)))
}

/// A network point of the matrix's axes, drawn uniformly.
fn matrix_point(rng: &mut Rng) -> PathConditions {
    let pick = |rng: &mut Rng, n: usize| rng.below(n as u64) as usize;
    let rtt = RTT_MS[pick(rng, RTT_MS.len())];
    let loss = LOSSES[pick(rng, LOSSES.len())];
    let bw = BANDWIDTHS[pick(rng, BANDWIDTHS.len())];
    let jitter = JITTER_PCT[pick(rng, JITTER_PCT.len())];
    matrix::conditions(rtt, loss, bw, jitter)
}

fn weighted(rng: &mut Rng, weights: &[(&'static str, u32)]) -> &'static str {
    let total: u64 = weights.iter().map(|w| u64::from(w.1)).sum();
    let mut x = rng.below(total.max(1));
    for (k, w) in weights {
        if x < u64::from(*w) {
            return k;
        }
        x -= u64::from(*w);
    }
    weights.first().map_or("stn", |w| w.0)
}

/// Every client of `sc`, drawn from its seed.
fn draws(sc: &FleetScenario) -> Vec<Draw> {
    let (from, until) = sc.call_window();
    let span = crate::units::duration_nanos_saturating(until - from);
    let weights = sc.mix_weights();
    let mut out = Vec::new();
    let mut nats = 0u32;
    for g in &sc.groups {
        let nat = g.cgnat.then(|| {
            nats += 1;
            nat_address(nats - 1)
        });
        for _ in 0..g.clients {
            let i = out.len() as u64;
            let mut rng = Rng::derive(sc.seed, STREAM_DRAW | i);
            let conditions = matrix_point(&mut rng);
            let call_at = from + Duration::from_nanos(rng.below(span.max(1)));
            let drawn = weighted(&mut rng, &weights);
            let mixed_kind = match g.mixed_kind.as_deref() {
                Some(k) => crate::fleet::scenario::KINDS
                    .into_iter()
                    .find(|x| *x == k)
                    .unwrap_or(drawn),
                None => drawn,
            };
            out.push(Draw {
                conditions,
                call_at,
                ip: nat.unwrap_or_else(|| own_address(i)),
                mixed_kind,
            });
        }
    }
    out
}

/// The run's spec for client `i` (what the bench's client builders read).
fn client_spec(sc: &FleetScenario, i: u64) -> RunSpec {
    let mut spec = RunSpec::published(
        "fleet",
        &sc.name,
        PathSchedule::constant(crate::bench::run_spec::normal_network()),
        Rng::derive(sc.seed, STREAM_DRAW ^ (1 << 46) ^ i).next_u64(),
    );
    spec.retry_count = None;
    spec.dns_copies = sc.dns_copies.max(1);
    spec.keep_alive_server = sc.keep_alive_server;
    spec.long_link = sc.long_link;
    spec.tls = sc.tls;
    spec
}

type FleetClient = Caller<Box<dyn CallClient>>;

/// Builds client `kind` as the bench does; returns it with its stack and
/// TLS side.
fn build(
    kind: &str,
    sc: &FleetScenario,
    spec: &RunSpec,
) -> (FleetClient, crate::tcp::TcpStack, TlsOf) {
    let (client, stack, tls): (Box<dyn CallClient>, _, _) = match kind_of(kind) {
        ClientKind::Engine(v) => {
            let c = engine_client(&v, PLATFORM, spec);
            let (stack, tls) = (c.stack(), engine_tls(&c));
            (Box::new(c), stack, tls)
        }
        peer => (
            peer_client(&peer, PLATFORM, spec),
            PLATFORM.stack(),
            TlsOf::Peer,
        ),
    };
    let retry = Duration::from_secs_f64(sc.calls.retry_after_s.max(0.0));
    let caller = Caller::new(client, spec.request_len, retry, sc.calls.max_calls);
    (caller, stack, tls)
}

/// Runs fleet `fleet` (a kind of [`crate::fleet::scenario::KINDS`] or
/// `mixed`) through `sc`.
pub fn run_fleet(sc: &FleetScenario, fleet: &str) -> FleetRun {
    let base = client_spec(sc, 0);
    let mut sim: Simulation<FleetClient> = {
        let mut spec = base.clone();
        spec.seed = sc.seed;
        simulation(&spec, false)
    };
    if let Some(h) = sim.host_mut(SERVER.ip()) {
        h.set_capacity(sc.capacity());
    }
    let (t0, t1) = sc.outage_window();
    let partition = sc.outage.kind == OutageKind::Partition;
    let drawn = draws(sc);
    let first_calls: Vec<Instant> = drawn.iter().map(|d| d.call_at).collect();
    for (i, d) in drawn.into_iter().enumerate() {
        let kind = if fleet == "mixed" {
            d.mixed_kind
        } else {
            fleet
        };
        let spec = client_spec(sc, i as u64);
        let (client, stack, tls) = build(kind, sc, &spec);
        let path = if partition && t0 < t1 {
            PathSchedule::outage(d.conditions, t0, t1)
        } else {
            PathSchedule::constant(d.conditions)
        };
        let id = sim.add_client_host(client, stack, (d.ip, &path), d.call_at);
        if sc.tls {
            sim.set_client_tls(id, Some(tls_config(tls)));
        }
    }
    let bin = Duration::from_millis(sc.bin_ms);
    let mut bins = Vec::new();
    let mut transitions: Vec<(Instant, bool)> = if partition {
        Vec::new()
    } else {
        vec![(t0, true), (t1, false)]
    };
    let mut last = Counters::default();
    let mut t = Instant::ZERO;
    let horizon = sc.horizon();
    while t < horizon {
        let next = (t + bin).min(horizon);
        while let Some(&(at, down)) = transitions.first().filter(|(at, _)| *at <= next) {
            sim.run_until(at);
            if let Some(h) = sim.host_mut(SERVER.ip()) {
                h.set_down(at, down);
            }
            transitions.remove(0);
        }
        let outcome = sim.run_until(next);
        let now = Counters::of(&sim);
        bins.push(now.since(&last));
        last = now;
        t = next;
        let finished = (0..sim.client_count()).all(|i| {
            let id = crate::client::ClientId(u32::try_from(i).unwrap_or(u32::MAX));
            crate::client::SimClient::is_finished(sim.client(id))
        });
        if (finished && t >= t1) || outcome == crate::RunOutcome::Idle {
            break;
        }
    }
    let clients: Vec<ClientCalls> = first_calls
        .into_iter()
        .enumerate()
        .map(|(i, first_call)| {
            let id = crate::client::ClientId(u32::try_from(i).unwrap_or(u32::MAX));
            let c = sim.client(id);
            ClientCalls {
                first_call,
                records: c.records().to_vec(),
                calling: !crate::client::SimClient::is_finished(c),
            }
        })
        .collect();
    for c in clients.iter().filter_map(ClientCalls::served) {
        let k = crate::units::duration_nanos_saturating(c.finished - Instant::ZERO)
            / crate::units::duration_nanos_saturating(bin).max(1);
        if let Some(b) = bins.get_mut(usize::try_from(k).unwrap_or(usize::MAX)) {
            b.served += 1;
        }
    }
    let host = sim.host(SERVER.ip());
    FleetRun {
        fleet: fleet.to_owned(),
        bin,
        bins,
        clients,
        capacity: host.and_then(|h| h.capacity_stats()).unwrap_or_default(),
        server: sim.server_cost(),
        end: sim.now(),
        trace_hash: sim.trace().hash(),
        events: sim.trace().len(),
    }
}

/// The server's cumulative counters at one moment.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    syns: u64,
    accepted: u64,
    overflows: u64,
}

impl Counters {
    fn of(sim: &Simulation<FleetClient>) -> Self {
        let Some(h) = sim.host(SERVER.ip()) else {
            return Counters::default();
        };
        let cap = h.capacity_stats().unwrap_or_default();
        Counters {
            syns: h.cost().syns,
            accepted: cap.accepted,
            overflows: cap.overflows(),
        }
    }

    fn since(&self, before: &Counters) -> Bin {
        Bin {
            syns: self.syns - before.syns,
            accepted: self.accepted - before.accepted,
            overflows: self.overflows - before.overflows,
            served: 0,
        }
    }
}
