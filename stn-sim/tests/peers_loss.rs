//! The loss benchmark shape (mars-stn.md §10, peers.md §3.2) on every peer
//! model: a short sequential workload on 3G + 30% loss finishes, records are
//! consistent, and a seed fixes the run bit for bit.

mod common;

use std::net::SocketAddr;

use common::{add_servers, nth_server};
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{FreshConnClient, FreshConnConfig};
use stn_sim::clients::oracle::{fresh_tcp_call, long_link_call, PhysicalLimit};
use stn_sim::clients::peers::{Kernel, NsUrlSession, OkHttp2017, OkHttp5};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::workload::{
    CallClient, CallRecord, SequentialConfig, SequentialWorkload, WorkloadStats,
};
use stn_sim::Simulation;

const SUCCESSES: u64 = 20;

#[derive(Clone, Copy, Debug)]
enum Peer {
    OkHttp2017Classic,
    OkHttp2017Linux65,
    OkHttpSensitivity,
    OkHttp5OneIp,
    OkHttp5ThreeIps,
    NsUrlBenchmarked,
    NsUrlRecommended,
}

const PEERS: [Peer; 7] = [
    Peer::OkHttp2017Classic,
    Peer::OkHttp2017Linux65,
    Peer::OkHttpSensitivity,
    Peer::OkHttp5OneIp,
    Peer::OkHttp5ThreeIps,
    Peer::NsUrlBenchmarked,
    Peer::NsUrlRecommended,
];

impl Peer {
    fn client(self) -> (Box<dyn CallClient>, TcpStack, u8, bool) {
        let three: Vec<SocketAddr> = (0..3).map(nth_server).collect();
        match self {
            Peer::OkHttp2017Classic => {
                let p = OkHttp2017::benchmarked(nth_server(0), Kernel::LinuxClassic);
                let s = p.stack();
                (Box::new(p), s, 1, false)
            }
            Peer::OkHttp2017Linux65 => {
                let p = OkHttp2017::benchmarked(nth_server(0), Kernel::Linux65);
                let s = p.stack();
                (Box::new(p), s, 1, false)
            }
            Peer::OkHttpSensitivity => {
                let p = OkHttp2017::sensitivity(nth_server(0), Kernel::LinuxClassic);
                let s = p.stack();
                (Box::new(p), s, 1, false)
            }
            Peer::OkHttp5OneIp => {
                let p = OkHttp5::recommended(vec![nth_server(0)], Kernel::LinuxClassic);
                let s = p.stack();
                (Box::new(p), s, 1, true)
            }
            Peer::OkHttp5ThreeIps => {
                let p = OkHttp5::recommended(three, Kernel::Linux65);
                let s = p.stack();
                (Box::new(p), s, 3, true)
            }
            Peer::NsUrlBenchmarked => {
                let p = NsUrlSession::benchmarked(nth_server(0));
                let s = p.stack();
                (Box::new(p), s, 1, false)
            }
            Peer::NsUrlRecommended => {
                let p = NsUrlSession::recommended(three);
                let s = p.stack();
                (Box::new(p), s, 3, true)
            }
        }
    }
}

/// Runs `peer` on 3G + `loss`% until `SUCCESSES` successes; returns the
/// records and the trace hash.
fn run(peer: Peer, seed: u64, loss: f64) -> (Vec<CallRecord>, u64) {
    let (client, stack, hosts, keep_alive) = peer.client();
    let mut sim = Simulation::new(seed);
    sim.keep_trace_events(false);
    let path = PathSchedule::constant(Preset::ThreeG.conditions().with_loss_percent(loss));
    add_servers(&mut sim, hosts, &path, keep_alive, 100);
    let cfg = SequentialConfig::until_successes(SUCCESSES);
    let id = sim.add_client(SequentialWorkload::new(client, cfg), stack);
    sim.run_until_finished(Instant::from_secs(100_000));
    let w = sim.client(id);
    assert_eq!(w.successes(), SUCCESSES, "{peer:?} did not finish");
    (w.records().to_vec(), sim.trace().hash())
}

#[test]
fn every_peer_finishes_a_short_run_at_30_percent_loss() {
    for peer in PEERS {
        let (records, _) = run(peer, 30, 30.0);
        let stats = WorkloadStats::from_records(&records);
        assert_eq!(stats.successes, SUCCESSES, "{peer:?}");
        assert_eq!(stats.attempts, records.len() as u64);
        // Sequential and back to back: each call starts when the previous ended.
        for w in records.windows(2) {
            assert_eq!(w[1].started, w[0].finished, "{peer:?}");
            assert_eq!(w[1].id.0, w[0].id.0 + 1);
        }
        assert_eq!(
            stats.total_time,
            records.last().unwrap().finished - records[0].started
        );
        let mean = stats.mean_ok.unwrap();
        // Two RTTs (0.4 s) is the floor of a fresh call; a pooled call needs one.
        assert!(
            mean >= Duration::from_millis(200) && mean < Duration::from_secs(15),
            "{peer:?}: mean {mean:?}"
        );
        assert!(stats.p50_ok.unwrap() <= stats.p95_ok.unwrap() && stats.p95_ok <= stats.p99_ok);
        assert!(stats.cost.requests as u64 >= stats.successes, "{peer:?}");
        assert!(stats.cost.syns >= stats.cost.connects, "{peer:?}");
    }
}

#[test]
fn same_seed_same_records_and_trace() {
    for peer in PEERS {
        let a = run(peer, 5, 30.0);
        let b = run(peer, 5, 30.0);
        assert_eq!(a, b, "{peer:?}");
        let c = run(peer, 6, 30.0);
        assert_ne!(a.1, c.1, "{peer:?}: another seed should give another run");
    }
}

#[test]
fn okhttp_2017_is_exactly_the_fresh_connection_client() {
    // The wrapper adds nothing on the wire: same seed, same calls as driving
    // `FreshConnClient` directly.
    let path = PathSchedule::constant(Preset::ThreeG.conditions().with_loss_percent(30.0));
    let mut direct = Simulation::new(11);
    direct.add_host(nth_server(0).ip(), path.clone());
    direct
        .listen(nth_server(0), FixedResponseApp::new(100, Duration::ZERO))
        .unwrap();
    let mut cfg = FreshConnConfig::okhttp_2017(nth_server(0));
    cfg.target_successes = SUCCESSES;
    let d = direct.add_client(FreshConnClient::new(cfg), TcpStack::linux_classic());
    direct.run_until_finished(Instant::from_secs(100_000));

    let mut wrapped = Simulation::new(11);
    wrapped.add_host(nth_server(0).ip(), path);
    wrapped
        .listen(nth_server(0), FixedResponseApp::new(100, Duration::ZERO))
        .unwrap();
    let peer = OkHttp2017::benchmarked(nth_server(0), Kernel::LinuxClassic);
    let w = wrapped.add_client(
        SequentialWorkload::new(peer, SequentialConfig::until_successes(SUCCESSES)),
        TcpStack::linux_classic(),
    );
    wrapped.run_until_finished(Instant::from_secs(100_000));

    let a: Vec<(Instant, Instant, bool)> = direct
        .client(d)
        .calls()
        .iter()
        .map(|c| (c.started, c.finished, c.result.is_ok()))
        .collect();
    let b: Vec<(Instant, Instant, bool)> = wrapped
        .client(w)
        .records()
        .iter()
        .map(|c| (c.started, c.finished, c.is_ok()))
        .collect();
    assert_eq!(a, b);
}

#[test]
fn higher_loss_costs_more_on_the_benchmarked_peers() {
    // peers.md §3.2: OkHttp's 10 s timeouts turn tail latency into failures.
    let (low, _) = run(Peer::OkHttp2017Classic, 3, 10.0);
    let (high, _) = run(Peer::OkHttp2017Classic, 3, 50.0);
    let (l, h) = (
        WorkloadStats::from_records(&low),
        WorkloadStats::from_records(&high),
    );
    assert!(h.total_time > l.total_time, "{l:?} vs {h:?}");
    assert!(h.cost.syns > l.cost.syns);
}

/// Prints a small loss table (run with `--nocapture`).
#[test]
#[allow(clippy::print_stdout)]
fn loss_table() {
    println!("| peer | loss | attempts | total (s) | mean ok (s) | p95 ok (s) | connects | SYNs | requests |");
    for loss in [30.0, 50.0] {
        for peer in PEERS {
            let (records, _) = run(peer, 1, loss);
            let s = WorkloadStats::from_records(&records);
            let secs = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64());
            println!(
                "| {peer:?} | {loss}% | {} | {:.1} | {:.2} | {:.2} | {} | {} | {} |",
                s.attempts,
                s.total_time.as_secs_f64(),
                secs(s.mean_ok),
                secs(s.p95_ok),
                s.cost.connects,
                s.cost.syns,
                s.cost.requests
            );
        }
        // The physical limit on the same path for the same number of calls.
        let path = PathSchedule::constant(Preset::ThreeG.conditions().with_loss_percent(loss));
        let oracle = PhysicalLimit::new(&path, 1, "10.0.0.2".parse().unwrap());
        let request = stn_sim::http::post("/mars/hello2", "10.0.0.2:8080", &[0; 64]).len();
        let response = FixedResponseApp::new(100, Duration::ZERO).response_len();
        let kinds = [
            (
                "fresh TCP",
                fresh_tcp_call(request, response, Duration::ZERO),
            ),
            (
                "established",
                long_link_call(request, response, Duration::ZERO),
            ),
        ];
        for (kind, msgs) in &kinds {
            let runs =
                oracle.run_sequence(Instant::ZERO, &[], msgs, SUCCESSES as usize, Instant::MAX);
            let mut t = Instant::ZERO;
            let mut d: Vec<Duration> = runs
                .iter()
                .map(|r| {
                    let x = r.completed - t;
                    t = r.completed;
                    x
                })
                .collect();
            d.sort();
            let total = runs.last().unwrap().completed - Instant::ZERO;
            println!(
                "| oracle ({kind}) | {loss}% | {} | {:.1} | {:.2} | {:.2} | - | - | {} packets |",
                runs.len(),
                total.as_secs_f64(),
                total.as_secs_f64() / runs.len() as f64,
                stn_sim::workload::nearest_rank(&d, 95)
                    .unwrap()
                    .as_secs_f64(),
                runs.iter().map(|r| r.packets_sent).sum::<u64>()
            );
        }
    }
}
