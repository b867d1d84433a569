//! Swarm runs of the stn engine client over many seeds: random networks
//! (Bernoulli and bursty loss, outages, 3G/Edge shapes), profiles, channels,
//! retry counts and body sizes. After **every** event the adapter checks the
//! engine's invariants (tasks held = tasks awaited, connections agree,
//! `poll_timeout` never in the past); at the end every started call has
//! exactly one outcome.
//!
//! Replay one seed: `STN_SWARM_SEED=<seed> cargo test -p stn-sim --test bench_swarm -- --nocapture`.

use stn_proto::rng::Rng;
use stn_proto::time::{Duration, Instant};
use stn_proto::Profile;
use stn_sim::bench::scenario::{
    engine_client, run_engine_sequential, EngineVariant, Platform, RunSpec,
};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;

fn scenario(seed: u64) -> (EngineVariant, Platform, RunSpec, u64) {
    let mut rng = Rng::new(seed);
    let variant = match rng.below(4) {
        0 => EngineVariant::Profile(Profile::Stn),
        1 => EngineVariant::Profile(Profile::Mars2017),
        2 => EngineVariant::Profile(Profile::Mars),
        _ => EngineVariant::StnTuned,
    };
    let platform = if rng.chance(0.5) {
        Platform::Ios
    } else {
        Platform::Android
    };
    let mut cond = match rng.below(3) {
        0 => Preset::ThreeG.conditions(),
        1 => Preset::Edge.conditions(),
        _ => Preset::LossPercent(0.0).conditions(),
    };
    let loss = rng.below(8) as f64 * 10.0;
    cond = if rng.chance(0.3) {
        cond.with_bursty_loss((loss / 100.0).max(0.05), 2.0 + rng.below(6) as f64)
    } else {
        cond.with_loss_percent(loss)
    };
    let mut path = PathSchedule::constant(cond);
    if rng.chance(0.4) {
        let from = Instant::from_millis(rng.below(20_000));
        let until = from + Duration::from_millis(1 + rng.below(45_000));
        path = PathSchedule::outage(cond, from, until);
    }
    let spec = RunSpec {
        suite: "swarm".into(),
        scenario: format!("seed-{seed}"),
        path,
        request_len: if rng.chance(0.2) { 16 * 1024 } else { 64 },
        response_len: if rng.chance(0.2) { 20 * 1024 } else { 100 },
        long_link: rng.chance(0.3),
        retry_count: match rng.below(3) {
            0 => None,
            n => Some(u8::try_from(n - 1).unwrap_or(0)),
        },
        dns_copies: 1 + usize::try_from(rng.below(5)).unwrap_or(0),
        keep_alive_server: rng.chance(0.5),
        seed,
        run: 0,
    };
    let calls = 3 + rng.below(12);
    (variant, platform, spec, calls)
}

fn check(seed: u64) {
    let (variant, platform, spec, calls) = scenario(seed);
    let client = engine_client(&variant, platform, &spec);
    let (r, _) = run_engine_sequential(client, platform, &spec, calls);
    let replay = format!(
        "replay: STN_SWARM_SEED={seed} cargo test -p stn-sim --test bench_swarm -- --nocapture ({variant:?}, {platform:?}, long {})",
        spec.long_link
    );
    assert!(r.violations.is_empty(), "{replay}: {:?}", r.violations);
    // Every started call ended exactly once, in order.
    for (i, c) in r.calls.iter().enumerate() {
        assert_eq!(c.id.0, i as u64, "{replay}: calls out of order");
        assert!(c.finished >= c.started, "{replay}");
    }
    let ok = r.calls.iter().filter(|c| c.is_ok()).count() as u64;
    assert!(
        ok >= calls || r.calls.len() as u64 >= calls * 10,
        "{replay}: workload stopped early: {ok} successes in {} calls",
        r.calls.len()
    );
}

#[test]
fn swarm_engine_invariants_hold_and_every_call_ends_once() {
    if let Ok(s) = std::env::var("STN_SWARM_SEED") {
        check(s.parse().expect("STN_SWARM_SEED is a u64"));
        return;
    }
    for seed in 0..300 {
        check(seed);
    }
}

#[test]
fn quick_suites_show_no_engine_contract_violation() {
    use stn_sim::bench::{run_suite, BenchOptions, Suite};
    let opts = BenchOptions::new(9, true);
    for suite in Suite::ALL {
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
