//! Swarm runs over many seeds of the small scenarios the `sim_scenario` fuzz
//! target runs ([`Scenario`], one builder for both): random
//! networks (presets or per-direction delay, jitter, bandwidth and queue;
//! Bernoulli and bursty loss; outages and scripted changes), TCP stacks, and
//! clients — the stn engine under every profile on the short and long link
//! with retry counts, DNS copies and body sizes, and the peer models. After
//! **every** event the engine adapter checks the engine's invariants (tasks
//! held = tasks awaited, connections agree, `poll_timeout` never in the past);
//! at the end every call has ended exactly once, in order, with the server's
//! body when it succeeded, within the time cap, and a second run gives the
//! same trace ([`Scenario::check`]).
//!
//! Replay one seed: `STN_SWARM_SEED=<seed> cargo test -p stn-sim --lib swarm -- --nocapture`.

use super::Scenario;

fn check(seed: u64) {
    let scenario = Scenario::from_seed(seed);
    if let Err(e) = scenario.check() {
        panic!(
            "replay: STN_SWARM_SEED={seed} cargo test -p stn-sim --lib swarm -- --nocapture\n{e}"
        );
    }
}

#[test]
fn swarm_engine_invariants_hold_and_every_call_ends_once() {
    if let Ok(s) = std::env::var("STN_SWARM_SEED") {
        check(s.parse().expect("STN_SWARM_SEED is a u64"));
        return;
    }
    for seed in 0..400 {
        check(seed);
    }
}

#[test]
fn quick_suites_show_no_engine_contract_violation() {
    use crate::bench::{run_suite, suites, BenchOptions};
    let opts = BenchOptions::new(9, true);
    for suite in suites::default_run() {
        for r in run_suite(suite, &opts) {
            let note = r.note.unwrap_or_default();
            assert!(
                !note.contains("VIOLATION"),
                "{} {} {} {}: {note}",
                r.suite,
                r.scenario,
                r.platform,
                r.client
            );
        }
    }
}
