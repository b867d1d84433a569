//! stn on a long, lossy path (600 ms RTT, 10% loss), against the same
//! engine with one rule changed back:
//! - the keep-alive pool: a first-packet timeout on a pooled connection does
//!   not turn the pool off, so later calls keep reusing connections instead
//!   of paying a fresh handshake each (Mars's rule:
//!   `PoolConfig::stale_on_timeout`);
//! - the first-packet floor follows the RTT (5 smoothed RTTs when that is
//!   more than 2 s), so at retry 0 calls do not fail while TCP is still
//!   repairing a loss (`AdaptiveConfig::first_packet_floor_rtts = 0`: a
//!   fixed 2 s floor).

use stn_proto::Config;
use stn_proto::Duration;
use stn_proto::Profile;
use stn_sim::bench::client_kind::{engine_client, EngineVariant};
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::RunSpec;
use stn_sim::bench::runner::run_engine_sequential;
use stn_sim::clients::stn::StnClient;
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};

fn spec(seed: u64, retry_count: Option<u8>, keep_alive_server: bool) -> RunSpec {
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
        retry_count,
        dns_copies: 1,
        candidates: Vec::new(),
        keep_alive_server,
        tls: false,
        early_data: false,
        seed,
        run: 0,
    }
}

/// (total seconds, connects, failed calls) of 100 successful calls by stn
/// with `edit` applied to its configuration, summed over seeds 1–5.
fn run(sp: impl Fn(u64) -> RunSpec, edit: impl Fn(&mut Config)) -> (f64, u64, usize) {
    let mut sum = (0.0, 0, 0);
    for seed in 1..=5 {
        let sp = sp(seed);
        let platform = Platform::Android;
        let client = engine_client(&EngineVariant::Profile(Profile::Stn), platform, &sp);
        let mut cfg = client.config().clone();
        edit(&mut cfg.engine);
        let (r, _) = run_engine_sequential(StnClient::new(cfg), platform, &sp, 100);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        sum.0 += r.record.total_s;
        sum.1 += r.record.connects.expect("engine runs count connects");
        sum.2 += r.calls.iter().filter(|c| !c.is_ok()).count();
    }
    sum
}

/// A fixed 2 s first-packet floor (the rule before it followed the RTT).
fn fixed_floor(c: &mut Config) {
    let adaptive = c.timeouts_mut().adaptive.as_mut().expect("stn adapts");
    adaptive.first_packet_floor_rtts = 0;
}

#[test]
fn a_timeout_on_a_pooled_connection_keeps_the_pool_on() {
    // With a fixed 2 s first-packet floor, so that pooled connections do
    // time out on this path: the two runs differ in the pool rule alone.
    let sp = |seed| spec(seed, None, true);
    let kept = run(sp, fixed_floor);
    let off = run(sp, |c| {
        fixed_floor(c);
        c.socket_pool_mut().expect("stn pools").stale_on_timeout = true;
    });
    assert!(
        kept.1 < off.1,
        "fewer connects with the pool kept on: {kept:?} vs {off:?}"
    );
    assert!(
        kept.0 < off.0,
        "less time with the pool kept on: {kept:?} vs {off:?}"
    );
}

#[test]
fn the_first_packet_floor_follows_the_rtt() {
    let sp = |seed| spec(seed, Some(0), false);
    let following = run(sp, |_| {});
    let fixed = run(sp, fixed_floor);
    assert!(
        following.2 < fixed.2,
        "fewer failed calls: {following:?} vs {fixed:?}"
    );
    assert!(
        following.0 < fixed.0,
        "less time: {following:?} vs {fixed:?}"
    );
}
