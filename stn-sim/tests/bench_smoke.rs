//! Smoke: every engine profile completes calls on a clean and a lossy link.

use stn_proto::time::Instant;
use stn_sim::bench::scenario::{
    normal_network, run_sequential, run_single, ClientKind, Platform, RunSpec,
};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;

fn spec(path: PathSchedule, long: bool) -> RunSpec {
    RunSpec {
        suite: "loss".into(),
        scenario: "x".into(),
        path,
        request_len: 64,
        response_len: 100,
        long_link: long,
        retry_count: Some(0),
        dns_copies: 4,
        keep_alive_server: long,
        seed: 3,
        run: 0,
    }
}

#[test]
fn smoke() {
    for cond in [
        Preset::ThreeG.conditions(),
        Preset::LossPercent(30.0).conditions(),
    ] {
        for long in [false, true] {
            for platform in Platform::ALL {
                for c in [
                    ClientKind::STN,
                    ClientKind::MARS_2017,
                    ClientKind::MARS,
                    ClientKind::PeerBenchmarked,
                    ClientKind::Oracle,
                ] {
                    let r =
                        run_sequential(&c, platform, &spec(PathSchedule::constant(cond), long), 20);
                    println!("{long} {:?} {:>12} succ {} att {} total {:.2} mean {:.3} p95 {:.3} conns {:?} viol {:?}",
                        platform, r.record.client, r.record.successes, r.record.attempts, r.record.total_s, r.record.mean_s, r.record.p95_s, r.record.connects, r.violations);
                }
            }
        }
    }
    for r in [5u64, 20, 35] {
        let path = PathSchedule::outage(normal_network(), Instant::ZERO, Instant::from_secs(r));
        for platform in Platform::ALL {
            for c in [
                ClientKind::STN,
                ClientKind::MARS_2017,
                ClientKind::PeerSensitivity,
                ClientKind::Oracle,
            ] {
                let mut s = spec(path.clone(), false);
                s.retry_count = None;
                let x = run_single(&c, platform, &s);
                println!(
                    "R={r} {:?} {:>12} ok {} end {:.2}",
                    platform, x.record.client, x.record.ok, x.record.total_s
                );
            }
        }
    }
}
