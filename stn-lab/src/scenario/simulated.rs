//! The simulator's side of a scenario: every client of the scenario on
//! stn-sim with its Linux ≥ 6.5 TCP model (the stack of the kernel the lab
//! runs on), not the scenario platform's Android (Linux < 6.5) model.

use stn_proto::{Duration, Instant};
use stn_sim::bench::client_kind::{engine_client, ClientKind};
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::{server_apps, RunSpec, SERVER};
use stn_sim::bench::runner::{
    run_engine_sequential, run_engine_single, run_sequential, run_single,
};
use stn_sim::client::SimClient;
use stn_sim::clients::peers::{Kernel, OkHttp2017, OkHttp5};
use stn_sim::clients::stn::StnClient;
use stn_sim::host::PortMode;
use stn_sim::scenario::{client_kind, Scenario, WorkloadKind};
use stn_sim::workload::{CallClient, CallRecord, SequentialConfig, SequentialWorkload, SingleShot};
use stn_sim::Simulation;

use super::summary::RunSummary;

/// Virtual time a sequential run may last (the bench's horizon).
const HORIZON: Instant = Instant::from_secs(500_000);
/// Virtual time a single call may last (the bench's sensitivity limit).
const SINGLE_LIMIT: Instant = Instant::from_secs(300);

/// The kernel the lab's TCP runs on, as the simulator models it.
const KERNEL: Kernel = Kernel::Linux65;

/// Runs `client` (a validated name of `scenario`) once, run `run` of root
/// seed `seed`, on the Linux ≥ 6.5 stack; `None` for a client with no
/// Android/Linux model (the iOS peers).
pub(super) fn simulate(
    scenario: &Scenario,
    client: &str,
    seed: u64,
    run: u32,
) -> Option<RunSummary> {
    let (kind, _) = client_kind(client, "android")?;
    let spec = scenario.run_spec(seed, run);
    let calls = match (&kind, scenario.workload.kind) {
        (ClientKind::Oracle, WorkloadKind::Sequential { successes }) => {
            run_sequential(&kind, Platform::Android, &spec, successes).calls
        }
        (ClientKind::Oracle, WorkloadKind::Single) => {
            // The oracle's single call is a record without call records.
            let r = run_single(&kind, Platform::Android, &spec).record;
            let t = std::time::Duration::from_secs_f64(r.total_s);
            return Some(RunSummary::new(
                1,
                r.ok.then_some(t).into_iter().collect(),
                t,
                1,
                None,
            ));
        }
        (ClientKind::Engine(variant), workload) => {
            let linux = engine_client(variant, Platform::Android, &spec);
            let mut cfg = linux.config().clone();
            cfg.stack = KERNEL.stack();
            let client = StnClient::new(cfg);
            match workload {
                WorkloadKind::Sequential { successes } => {
                    run_engine_sequential(client, Platform::Android, &spec, successes)
                        .0
                        .calls
                }
                WorkloadKind::Single => run_engine_single(client, Platform::Android, &spec).calls,
            }
        }
        (peer, WorkloadKind::Sequential { successes }) => {
            let workload = SequentialWorkload::new(
                peer_client(peer, &spec),
                SequentialConfig {
                    request_len: spec.request_len,
                    target_successes: successes,
                    max_calls: successes.saturating_mul(10),
                },
            );
            run_peer(&spec, workload, HORIZON, |w| w.records().to_vec())
        }
        (peer, WorkloadKind::Single) => {
            let workload = SingleShot::new(peer_client(peer, &spec), spec.request_len);
            run_peer(&spec, workload, SINGLE_LIMIT, |w| {
                w.record().copied().into_iter().collect()
            })
        }
    };
    let counted = kind != ClientKind::Oracle;
    Some(match scenario.workload.kind {
        WorkloadKind::Sequential { successes } => summarise(&calls, successes, counted),
        // A single call that never ended counts to the limit, as in the bench.
        WorkloadKind::Single if calls.is_empty() => {
            RunSummary::new(1, Vec::new(), SINGLE_LIMIT.since_origin(), 1, None)
        }
        WorkloadKind::Single => summarise(&calls, 1, counted),
    })
}

/// The Android peer of `kind` on the Linux ≥ 6.5 stack (the bench's
/// `peer_client` fixes Linux < 6.5).
fn peer_client(kind: &ClientKind, spec: &RunSpec) -> Box<dyn CallClient> {
    let routes = vec![SERVER; spec.dns_copies.max(1)];
    match kind {
        ClientKind::PeerSensitivity => Box::new(OkHttp2017::sensitivity(SERVER, KERNEL)),
        ClientKind::PeerRecommended => Box::new(OkHttp5::recommended(routes, KERNEL)),
        _ => Box::new(OkHttp2017::benchmarked(SERVER, KERNEL)),
    }
}

/// Runs `workload` alone on the scenario's network with the Linux ≥ 6.5
/// client stack, as the bench's runner does with its platform's stack.
fn run_peer<W: SimClient>(
    spec: &RunSpec,
    workload: W,
    limit: Instant,
    read: impl FnOnce(&W) -> Vec<CallRecord>,
) -> Vec<CallRecord> {
    let mut sim = Simulation::new(spec.seed);
    sim.keep_trace_events(false);
    sim.add_host(SERVER.ip(), spec.path.clone());
    for (addr, app) in server_apps(spec) {
        sim.set_port(addr, PortMode::Listen(app)).ok();
    }
    let id = sim.add_client(workload, KERNEL.stack());
    sim.run_until_finished(limit);
    read(sim.client(id))
}

fn summarise(calls: &[CallRecord], target: u64, count_connects: bool) -> RunSummary {
    let first = calls.iter().map(|c| c.started).min();
    let last = calls.iter().map(|c| c.finished).max();
    let total = match (first, last) {
        (Some(a), Some(b)) => b - a,
        _ => Duration::ZERO,
    };
    let connects: u64 = calls.iter().map(|c| u64::from(c.cost.connects)).sum();
    RunSummary::new(
        calls.len() as u64,
        calls
            .iter()
            .filter(|c| c.is_ok())
            .map(CallRecord::duration)
            .collect(),
        total,
        target,
        count_connects.then_some(connects),
    )
}

/// The TCP stack the simulated side runs (for the report).
pub(super) const STACK_NAME: &str = "Linux >= 6.5";
