//! The keep-alive pool on a slow, lossy path (600 ms RTT, 10% loss): under
//! stn a first-packet timeout on a pooled connection does not turn the pool
//! off, so later calls keep reusing connections instead of paying a fresh
//! handshake each. Compared with the same engine taking a timeout for a stale
//! connection (Mars's rule, `PoolConfig::stale_on_timeout`).

use stn_proto::time::Duration;
use stn_proto::Profile;
use stn_sim::bench::scenario::{
    engine_client, run_engine_sequential, EngineVariant, Platform, RunSpec,
};
use stn_sim::bench::stn_client::StnClient;
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};

fn spec(seed: u64) -> RunSpec {
    let link = LinkConditions {
        delay: Duration::from_millis(300),
        ..LinkConditions::default()
    };
    let path = PathConditions::symmetric(link).with_loss_percent(10.0);
    RunSpec {
        suite: "pool".into(),
        scenario: "600ms-10%".into(),
        path: PathSchedule::constant(path),
        request_len: 64,
        response_len: 100,
        long_link: false,
        retry_count: None,
        dns_copies: 1,
        keep_alive_server: true,
        seed,
        run: 0,
    }
}

/// (total seconds, connects) of 100 calls.
fn run(seed: u64, stale_on_timeout: bool) -> (f64, u64) {
    let sp = spec(seed);
    let platform = Platform::Android;
    let client = engine_client(&EngineVariant::Profile(Profile::Stn), platform, &sp);
    let mut cfg = client.config().clone();
    let pool = cfg
        .engine
        .socket_pool
        .as_mut()
        .expect("stn pools keep-alive connections");
    pool.stale_on_timeout = stale_on_timeout;
    let (r, _) = run_engine_sequential(StnClient::new(cfg), platform, &sp, 100);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    (
        r.record.total_s,
        r.record.connects.expect("engine runs count connects"),
    )
}

#[test]
fn a_timeout_on_a_pooled_connection_keeps_the_pool_on() {
    let (mut kept, mut off) = ((0.0, 0), (0.0, 0));
    for seed in 1..=5 {
        let a = run(seed, false);
        let b = run(seed, true);
        kept = (kept.0 + a.0, kept.1 + a.1);
        off = (off.0 + b.0, off.1 + b.1);
    }
    assert!(
        kept.1 < off.1,
        "fewer connects with the pool kept on: {kept:?} vs {off:?}"
    );
    assert!(
        kept.0 < off.0,
        "less time with the pool kept on: {kept:?} vs {off:?}"
    );
}
