//! The runners that turn one (client, run) pair into a [`RunRecord`]: the
//! benchmark loop ([`run_sequential`]), one call at t = 0 ([`run_single`]),
//! the same with every trace event kept ([`run_traced`]), and the oracle's
//! bound for either shape.

use stn_proto::{Duration, Instant};

use crate::bench::client_kind::{
    engine_client, engine_tls, peer_client, tls_config, ClientKind, TlsOf,
};
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::{simulation, RunSpec, SERVER};
use crate::client::SimClient;
use crate::clients::oracle::{fresh_tcp_call, long_link_call, Message, PhysicalLimit};
use crate::clients::stn::StnClient;
use crate::host::ServerCost;
use crate::tcp::TcpStack;

use crate::workload::{
    CallClient, CallRecord, SequentialConfig, SequentialWorkload, SingleShot, WorkloadStats,
};
use crate::{RunOutcome, Simulation};

/// Virtual time a run may last at most.
const HORIZON: Instant = Instant::from_secs(500_000);
/// Virtual time a single call (the sensitivity test) may last.
const SINGLE_LIMIT: Instant = Instant::from_secs(300);

/// What a simulated run leaves besides its client's records.
#[derive(Clone, Copy, Debug)]
struct RunEnd {
    /// Virtual seconds simulated.
    sim_s: f64,
    /// The trace hash.
    trace_hash: u64,
    /// What the run's connection attempts cost the server hosts.
    server: ServerCost,
    /// The run used TLS.
    tls: bool,
}

impl RunEnd {
    /// Fills `rec`'s simulated seconds and server-side cost.
    fn fill(&self, rec: &mut RunRecord) {
        rec.sim_s = Some(self.sim_s);
        rec.server_syns = Some(self.server.syns);
        rec.server_handshakes = Some(self.server.tcp_handshakes);
        rec.server_tls_handshakes = self.tls.then_some(self.server.tls_handshakes);
        rec.wasted_handshakes = Some(self.server.wasted_handshakes);
    }
}

/// Runs `workload` alone on a fresh simulation of `spec` (no trace events
/// kept) until it finishes or `limit`, and returns what `read` takes from
/// it and how the run ended. One runner for every client kind and workload
/// shape.
fn run_workload<W: SimClient, R>(
    spec: &RunSpec,
    workload: W,
    (stack, tls): (TcpStack, TlsOf),
    limit: Instant,
    read: impl FnOnce(&W) -> R,
) -> (R, RunEnd) {
    let mut sim = simulation(spec, false);
    let id = add_client(&mut sim, spec, workload, (stack, tls));
    sim.run_until_finished(limit);
    (
        read(sim.client(id)),
        RunEnd {
            sim_s: secs(sim.now() - Instant::ZERO),
            trace_hash: sim.trace().hash(),
            server: sim.server_cost(),
            tls: spec.tls,
        },
    )
}

/// Adds `client` to `sim` on `stack`, with its TLS when `spec` runs TLS.
fn add_client<C: SimClient>(
    sim: &mut Simulation<C>,
    spec: &RunSpec,
    client: C,
    (stack, tls): (TcpStack, TlsOf),
) -> crate::client::ClientId {
    let id = sim.add_client(client, stack);
    if spec.tls {
        sim.set_client_tls(id, Some(tls_config(tls)));
    }
    id
}

/// A finished run's records and how much virtual time it simulated.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The record.
    pub record: RunRecord,
    /// Every call.
    pub calls: Vec<CallRecord>,
    /// Virtual seconds simulated.
    pub sim_s: f64,
    /// Trace hash of the simulation (0 for the oracle).
    pub trace_hash: u64,
    /// Contract violations the engine adapter saw (engine clients).
    pub violations: Vec<String>,
}

fn secs(d: Duration) -> f64 {
    crate::units::duration_nanos_saturating(d) as f64 / 1e9
}

fn base_record(spec: &RunSpec, platform: Platform, client: &str) -> RunRecord {
    RunRecord {
        suite: spec.suite.clone(),
        scenario: spec.scenario.clone(),
        platform: platform.name().to_owned(),
        client: client.to_owned(),
        channel: if spec.long_link { "long" } else { "short" }.to_owned(),
        run: spec.run,
        successes: 0,
        attempts: 0,
        total_s: 0.0,
        mean_s: 0.0,
        p50_s: 0.0,
        p95_s: 0.0,
        p99_s: 0.0,
        completion_s: None,
        ok: false,
        connects: None,
        syns: None,
        server_syns: None,
        server_handshakes: None,
        server_tls_handshakes: None,
        wasted_handshakes: None,
        sim_s: None,
        note: None,
        early_sends: None,
        heartbeat: None,
    }
}

fn fill_stats(rec: &mut RunRecord, s: &WorkloadStats) {
    let f = |d: Option<Duration>| d.map_or(0.0, secs);
    rec.successes = s.successes;
    rec.attempts = s.attempts;
    rec.total_s = secs(s.total_time);
    rec.mean_s = f(s.mean_ok);
    rec.p50_s = f(s.p50_ok);
    rec.p95_s = f(s.p95_ok);
    rec.p99_s = f(s.p99_ok);
    rec.connects = Some(u64::from(s.cost.connects));
    rec.syns = Some(u64::from(s.cost.syns));
}

/// The oracle's messages for `spec`: the handshake (once per run) and each
/// call's exchange. Sizes are the bodies alone — every client's request
/// and response carry at least those bytes — so the bound holds whatever
/// heads or frame headers a client adds.
fn oracle_messages(spec: &RunSpec) -> (Vec<Message>, Vec<Message>) {
    let mut handshake = fresh_tcp_call(0, 0, Duration::ZERO);
    handshake.truncate(2);
    if spec.tls {
        // Every client's first connection of a run is a full handshake
        // (no ticket yet): ClientHello, then the certificate flight.
        handshake.extend(crate::clients::oracle::tls_handshake(
            crate::tls::CLIENT_HELLO_LEN,
            crate::tls::SERVER_FLIGHT_FULL_LEN,
        ));
    }
    (
        handshake,
        long_link_call(spec.request_len, spec.response_len, Duration::ZERO),
    )
}

/// The oracle's calls of `spec`: `calls` back to back from t = 0, on the
/// simulation's own links to the server.
fn oracle_calls(
    spec: &RunSpec,
    calls: u64,
    horizon: Instant,
) -> Vec<crate::clients::oracle::OracleRun> {
    let oracle = PhysicalLimit::new(&spec.path, spec.seed, SERVER.ip());
    let (setup, call) = oracle_messages(spec);
    oracle.run_sequence(
        Instant::ZERO,
        &setup,
        &call,
        usize::try_from(calls).unwrap_or(usize::MAX),
        horizon,
    )
}

/// The benchmark loop (one call at a time until `successes` successes, at
/// most 10× as many calls) for one client.
pub fn run_sequential(
    kind: &ClientKind,
    platform: Platform,
    spec: &RunSpec,
    successes: u64,
) -> RunResult {
    let name = kind.name(platform);
    let mut rec = base_record(spec, platform, name);
    if *kind == ClientKind::Oracle {
        let runs = oracle_calls(spec, successes, HORIZON);
        let mut start = Instant::ZERO;
        let calls: Vec<CallRecord> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let c = CallRecord {
                    id: crate::workload::CallId(i as u64),
                    started: start,
                    finished: r.completed,
                    result: Ok(crate::workload::CallSuccess {
                        status: 200,
                        response_len: spec.response_len,
                    }),
                    cost: crate::workload::CallCost {
                        connects: u32::from(!spec.long_link),
                        syns: 0,
                        requests: 1,
                        reused: spec.long_link,
                    },
                };
                start = r.completed;
                c
            })
            .collect();
        let stats = WorkloadStats::from_records(&calls);
        fill_stats(&mut rec, &stats);
        rec.syns = None;
        rec.ok = stats.successes >= successes;
        rec.sim_s = Some(rec.total_s);
        return RunResult {
            record: rec,
            calls,
            sim_s: secs(start - Instant::ZERO),
            trace_hash: 0,
            violations: Vec::new(),
        };
    }
    if let ClientKind::Engine(v) = kind {
        return run_engine_sequential(engine_client(v, platform, spec), platform, spec, successes)
            .0;
    }
    let client = peer_client(kind, platform, spec);
    let workload = SequentialWorkload::new(client, sequential_config(spec, successes));
    let (calls, end) = run_workload(
        spec,
        workload,
        (platform.stack(), TlsOf::Peer),
        HORIZON,
        |w| w.records().to_vec(),
    );
    sequential_result(rec, calls, Vec::new(), end, successes)
}

/// The benchmark loop's workload: until `successes` successes, at most 10×
/// as many calls.
fn sequential_config(spec: &RunSpec, successes: u64) -> SequentialConfig {
    SequentialConfig {
        request_len: spec.request_len,
        target_successes: successes,
        max_calls: successes.saturating_mul(10),
    }
}

/// The result of a sequential run: `rec` filled from `calls`.
fn sequential_result(
    mut rec: RunRecord,
    calls: Vec<CallRecord>,
    violations: Vec<String>,
    end: RunEnd,
    successes: u64,
) -> RunResult {
    let stats = WorkloadStats::from_records(&calls);
    fill_stats(&mut rec, &stats);
    rec.ok = stats.successes >= successes;
    end.fill(&mut rec);
    RunResult {
        record: rec,
        calls,
        sim_s: end.sim_s,
        trace_hash: end.trace_hash,
        violations,
    }
}

/// The result of a single-call run ended by `limit`: `total_s` is the call's
/// end (success or failure), `completion_s` its success.
fn single_result(
    mut rec: RunRecord,
    call: Option<CallRecord>,
    violations: Vec<String>,
    end: RunEnd,
    limit: Instant,
) -> RunResult {
    let calls: Vec<CallRecord> = call.into_iter().collect();
    let stats = WorkloadStats::from_records(&calls);
    fill_stats(&mut rec, &stats);
    let ended = call.map_or(secs(limit - Instant::ZERO), |c| {
        secs(c.finished - Instant::ZERO)
    });
    rec.total_s = ended;
    rec.completion_s = call.filter(CallRecord::is_ok).map(|_| ended);
    rec.ok = rec.completion_s.is_some();
    end.fill(&mut rec);
    RunResult {
        record: rec,
        calls,
        sim_s: end.sim_s,
        trace_hash: end.trace_hash,
        violations,
    }
}

/// [`run_sequential`] for an engine client built by the caller (any
/// configuration); also returns the client's kept attempt reports.
pub fn run_engine_sequential(
    client: StnClient,
    platform: Platform,
    spec: &RunSpec,
    successes: u64,
) -> (RunResult, Vec<stn_proto::Report>) {
    let rec = base_record(spec, platform, &client.config().name.clone());
    let stack = client.stack();
    let tls = engine_tls(&client);
    let workload = SequentialWorkload::new(client, sequential_config(spec, successes));
    let ((calls, violations, reports), end) =
        run_workload(spec, workload, (stack, tls), HORIZON, |w| {
            (
                w.records().to_vec(),
                w.client().violations().to_vec(),
                w.client().reports().to_vec(),
            )
        });
    let mut res = sequential_result(rec, calls, violations, end, successes);
    if spec.early_data {
        let early = reports.iter().filter(|r| r.early_data).count();
        res.record.early_sends = Some(early as u64);
    }
    (res, reports)
}

/// [`run_single`] for an engine client built by the caller.
pub fn run_engine_single(client: StnClient, platform: Platform, spec: &RunSpec) -> RunResult {
    let rec = base_record(spec, platform, &client.config().name.clone());
    let stack = client.stack();
    let tls = engine_tls(&client);
    let workload = SingleShot::new(client, spec.request_len);
    let ((call, violations), end) = run_workload(spec, workload, (stack, tls), SINGLE_LIMIT, |w| {
        (w.record().copied(), w.client().violations().to_vec())
    });
    single_result(rec, call, violations, end, SINGLE_LIMIT)
}

/// One call at t = 0 (the sensitivity test) for one client; the record's
/// `completion_s` is its completion, `total_s` its end (success or failure).
pub fn run_single(kind: &ClientKind, platform: Platform, spec: &RunSpec) -> RunResult {
    let name = kind.name(platform);
    let mut rec = base_record(spec, platform, name);
    let limit = SINGLE_LIMIT;
    if *kind == ClientKind::Oracle {
        let runs = oracle_calls(spec, 1, limit);
        let done = runs.first().map(|r| secs(r.completed - Instant::ZERO));
        rec.attempts = 1;
        rec.successes = u64::from(done.is_some());
        rec.completion_s = done;
        rec.ok = done.is_some();
        let t = done.unwrap_or(300.0);
        rec.total_s = t;
        (rec.mean_s, rec.p50_s, rec.p95_s, rec.p99_s) = (t, t, t, t);
        rec.sim_s = Some(t);
        return RunResult {
            record: rec,
            calls: Vec::new(),
            sim_s: t,
            trace_hash: 0,
            violations: Vec::new(),
        };
    }
    if let ClientKind::Engine(v) = kind {
        return run_engine_single(engine_client(v, platform, spec), platform, spec);
    }
    let client = peer_client(kind, platform, spec);
    let workload = SingleShot::new(client, spec.request_len);
    let (call, end) = run_workload(
        spec,
        workload,
        (platform.stack(), TlsOf::Peer),
        limit,
        |w| w.record().copied(),
    );
    single_result(rec, call, Vec::new(), end, limit)
}

/// One run with every trace event kept.
#[derive(Clone, Debug)]
pub struct TraceRun {
    /// Every trace event, one line each ([`crate::trace::TraceEvent`]'s
    /// `Display`).
    pub events: Vec<String>,
    /// The trace hash.
    pub hash: u64,
    /// Virtual time when the run stopped.
    pub end: Instant,
    /// Why it stopped.
    pub outcome: RunOutcome,
}

/// Runs `kind` once as [`run_sequential`] (`Some(successes)`) or
/// [`run_single`] (`None`) would, with every trace event kept: the same
/// clients, server and time limit, so [`TraceRun::hash`] equals their
/// [`RunResult::trace_hash`] for the same spec.
pub fn run_traced(
    kind: &ClientKind,
    platform: Platform,
    spec: &RunSpec,
    successes: Option<u64>,
) -> Result<TraceRun, String> {
    let (client, stack, tls): (Box<dyn CallClient>, TcpStack, TlsOf) = match kind {
        ClientKind::Engine(v) => {
            let c = engine_client(v, platform, spec);
            let stack = c.stack();
            let tls = engine_tls(&c);
            (Box::new(c), stack, tls)
        }
        ClientKind::Oracle => {
            return Err(
                "the oracle has no packet trace: it is a bound, not a simulated client".into(),
            )
        }
        peer => (
            peer_client(peer, platform, spec),
            platform.stack(),
            TlsOf::Peer,
        ),
    };
    let (workload, limit): (Box<dyn SimClient>, Instant) = match successes {
        Some(successes) => (
            Box::new(SequentialWorkload::new(
                client,
                sequential_config(spec, successes),
            )),
            HORIZON,
        ),
        None => (
            Box::new(SingleShot::new(client, spec.request_len)),
            SINGLE_LIMIT,
        ),
    };
    let mut sim: Simulation<Box<dyn SimClient>> = simulation(spec, true);
    add_client(&mut sim, spec, workload, (stack, tls));
    let outcome = sim.run_until_finished(limit);
    Ok(TraceRun {
        events: sim
            .trace()
            .events()
            .iter()
            .map(ToString::to_string)
            .collect(),
        hash: sim.trace().hash(),
        end: sim.now(),
        outcome,
    })
}
