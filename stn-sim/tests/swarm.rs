//! Swarm: many seeds over many link shapes; invariants of the
//! fresh-connection client and the network must hold in every run. A failure
//! names the seed and preset, which replays the run exactly.

mod common;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{FreshConnClient, FreshConnConfig};
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::{RunOutcome, Simulation};

fn shapes() -> Vec<(&'static str, PathConditions)> {
    let mut v = vec![("3G", Preset::ThreeG.conditions())];
    v.extend(hard_networks());
    v
}

#[test]
fn fresh_connection_client_invariants_hold_across_seeds() {
    for (name, shape) in shapes() {
        for seed in 0..12u64 {
            let mut sim = Simulation::new(seed);
            sim.keep_trace_events(false);
            sim.add_host(server().ip(), PathSchedule::constant(shape));
            let app = FixedResponseApp::new(300, Duration::from_millis(2));
            let response_len = app.response_len();
            sim.listen(server(), app).unwrap();
            let mut cfg = FreshConnConfig::okhttp_2017(server());
            cfg.max_calls = 8;
            let stack = [
                TcpStack::linux_classic(),
                TcpStack::linux_6_5(),
                TcpStack::xnu(),
            ][seed as usize % 3]
                .clone();
            let id = sim.add_client(FreshConnClient::new(cfg), stack);
            let outcome = sim.run_until_finished(Instant::from_secs(3600));
            let ctx = format!("replay: seed {seed}, shape {name}");
            assert_eq!(outcome, RunOutcome::AllFinished, "{ctx}");
            let c = sim.client(id);
            assert_eq!(c.calls().len(), 8, "{ctx}");
            let ok = c.calls().iter().filter(|r| r.result.is_ok()).count() as u64;
            assert_eq!(ok, c.successes(), "{ctx}");
            let mut prev_end = Instant::ZERO;
            for call in c.calls() {
                // Sequential, back to back, each ending once.
                assert_eq!(call.started, prev_end, "{ctx}");
                assert!(call.finished >= call.started, "{ctx}");
                prev_end = call.finished;
                // Connect ≤ 10 s, then the 1-segment response within one
                // 10 s idle read window (a FIN may end the call earlier).
                assert!(
                    call.duration() <= Duration::from_secs(20),
                    "{ctx}: {call:?}"
                );
                if let Ok((status, len)) = call.result {
                    assert_eq!((status, len), (200, response_len), "{ctx}");
                }
            }
            let (up, down) = sim.link_stats(server().ip()).unwrap();
            for s in [up, down] {
                assert_eq!(s.offered, s.delivered + s.lost + s.queue_drops, "{ctx}");
            }
        }
    }
}
