//! Swarm: every peer model over many seeds and link shapes. Invariants:
//! every call ends once, calls are back to back, each failure happens at the
//! deadline that defines it, and no call beats the physical limit of the
//! oracle. A failure message names peer, shape and seed, which replays the
//! run exactly.

mod common;

use std::net::SocketAddr;

use common::{add_servers, hard_networks, nth_server};
use stn_proto::{Duration, Instant};

use stn_sim::clients::oracle::{fresh_tcp_call, long_link_call, PhysicalLimit};
use stn_sim::clients::peers::{Kernel, NsUrlSession, OkHttp2017, OkHttp5};
use stn_sim::link::LossModel;
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::workload::{
    CallClient, CallFailure, CallRecord, SequentialConfig, SequentialWorkload,
};
use stn_sim::Simulation;

fn shapes() -> Vec<(&'static str, PathConditions)> {
    let mut v = vec![(
        "3G + 30%",
        Preset::ThreeG.conditions().with_loss_percent(30.0),
    )];
    v.extend(hard_networks());
    v
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peer {
    OkHttp2017,
    OkHttpSensitivity,
    OkHttp5,
    NsUrlBenchmarked,
    NsUrlRecommended,
}

fn build(peer: Peer) -> (Box<dyn CallClient>, TcpStack, u8, bool) {
    let three: Vec<SocketAddr> = (0..3).map(nth_server).collect();
    match peer {
        Peer::OkHttp2017 => (
            Box::new(OkHttp2017::benchmarked(nth_server(0), Kernel::LinuxClassic)),
            TcpStack::linux_classic(),
            1,
            false,
        ),
        Peer::OkHttpSensitivity => (
            Box::new(OkHttp2017::sensitivity(nth_server(0), Kernel::Linux65)),
            TcpStack::linux_6_5(),
            1,
            false,
        ),
        Peer::OkHttp5 => (
            Box::new(OkHttp5::recommended(three, Kernel::LinuxClassic)),
            TcpStack::linux_classic(),
            3,
            true,
        ),
        Peer::NsUrlBenchmarked => (
            Box::new(NsUrlSession::benchmarked(nth_server(0))),
            TcpStack::xnu(),
            1,
            false,
        ),
        Peer::NsUrlRecommended => (
            Box::new(NsUrlSession::recommended(three)),
            TcpStack::xnu(),
            3,
            true,
        ),
    }
}

fn run(peer: Peer, shape: PathConditions, seed: u64) -> Vec<CallRecord> {
    let (client, stack, hosts, keep_alive) = build(peer);
    let mut sim = Simulation::new(seed);
    sim.keep_trace_events(false);
    add_servers(
        &mut sim,
        hosts,
        &PathSchedule::constant(shape),
        keep_alive,
        100,
    );
    let cfg = SequentialConfig {
        request_len: 64,
        target_successes: 8,
        max_calls: 40,
    };
    let id = sim.add_client(SequentialWorkload::new(client, cfg), stack);
    sim.run_until_finished(Instant::from_secs(100_000));
    sim.client(id).records().to_vec()
}

#[test]
fn peer_invariants_hold_across_seeds_and_shapes() {
    let peers = [
        Peer::OkHttp2017,
        Peer::OkHttpSensitivity,
        Peer::OkHttp5,
        Peer::NsUrlBenchmarked,
        Peer::NsUrlRecommended,
    ];
    for (name, shape) in shapes() {
        // The physical limit of one call on this shape, without any loss:
        // no client can be faster than its clairvoyant oracle.
        let lossless = PathSchedule::constant(shape.with_loss(LossModel::None));
        let oracle = PhysicalLimit::new(&lossless, 0, "10.0.0.2".parse().unwrap());
        let floor = |msgs: Vec<stn_sim::clients::oracle::Message>| {
            oracle
                .run(Instant::ZERO, &msgs, Instant::MAX)
                .unwrap()
                .completed
                - Instant::ZERO
        };
        // Request/response sizes do not matter much; take the smallest
        // possible. (The oracle already takes each delay at `delay − jitter`.)
        let floor_fresh = floor(fresh_tcp_call(64, 100, Duration::ZERO));
        let floor_warm = floor(long_link_call(64, 100, Duration::ZERO));
        for seed in 0..6u64 {
            for peer in peers {
                let what = format!("{peer:?} on {name}, seed {seed}");
                let recs = run(peer, shape, seed);
                assert!(!recs.is_empty(), "{what}");
                let ok = recs.iter().filter(|r| r.is_ok()).count();
                assert!(ok == 8 || recs.len() == 40, "{what}: stopped early");
                for (i, r) in recs.iter().enumerate() {
                    assert_eq!(r.id.0, i as u64, "{what}");
                    if i > 0 {
                        assert_eq!(r.started, recs[i - 1].finished, "{what}");
                    }
                    let d = r.duration();
                    match r.result {
                        Ok(_) if r.cost.reused => assert!(
                            d >= floor_warm,
                            "{what}: {r:?} beats the limit {floor_warm:?}"
                        ),
                        Ok(_) => assert!(
                            d >= floor_fresh,
                            "{what}: {r:?} beats the limit {floor_fresh:?}"
                        ),
                        Err(CallFailure::ConnectTimeout) => match peer {
                            Peer::OkHttp2017 => assert_eq!(d, Duration::from_secs(10), "{what}"),
                            Peer::OkHttpSensitivity => {
                                assert_eq!(d, Duration::from_secs(60), "{what}")
                            }
                            // The last of three staggered routes times out 10 s after its launch.
                            Peer::OkHttp5 => assert!(
                                d >= Duration::from_secs(10) && d <= Duration::from_millis(10_500),
                                "{what}: {d:?}"
                            ),
                            _ => panic!("{what}: NSURLSession has no connect timeout"),
                        },
                        Err(CallFailure::ReadTimeout) => {
                            // From the request's send: at once on a pooled connection.
                            assert!(d >= Duration::from_secs(10), "{what}: {d:?}");
                            assert!(
                                r.cost.reused || d > Duration::from_secs(10),
                                "{what}: {d:?}"
                            );
                            assert!(
                                matches!(
                                    peer,
                                    Peer::OkHttp2017 | Peer::OkHttpSensitivity | Peer::OkHttp5
                                ),
                                "{what}"
                            );
                        }
                        Err(CallFailure::RequestTimeout) => {
                            assert!(d >= Duration::from_secs(60), "{what}: {d:?}");
                            assert!(
                                matches!(peer, Peer::NsUrlBenchmarked | Peer::NsUrlRecommended),
                                "{what}"
                            );
                        }
                        Err(e) => {
                            // Resets and EOFs only come from the OS giving up or a server close.
                            assert!(
                                matches!(
                                    e,
                                    CallFailure::Reset
                                        | CallFailure::UnexpectedEof
                                        | CallFailure::ConnectFailed(_)
                                ),
                                "{what}: {e:?}"
                            );
                        }
                    }
                    if !r.cost.reused {
                        assert!(r.cost.connects >= 1, "{what}: {r:?}");
                    }
                    assert!(r.cost.syns >= r.cost.connects, "{what}: {r:?}");
                }
            }
        }
    }
}
