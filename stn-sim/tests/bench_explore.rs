//! Exploration of stn's losses against the targets: where the time goes, and which
//! overrides of the Stn profile constants help. Ignored; run in release:
//! `cargo test --release -p stn-sim --test bench_explore -- --ignored --nocapture`.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

use stn_proto::Instant;
use stn_proto::Profile;
use stn_sim::bench::client_kind::{engine_client, ClientKind, EngineVariant};
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::{normal_network, RunSpec};
use stn_sim::bench::runner::{run_engine_sequential, run_engine_single, run_single};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;

fn spec(path: PathSchedule, seed: u64) -> RunSpec {
    RunSpec::published("explore", "x", path, seed)
}

type Tweak = fn(&mut stn_proto::Config);

fn z(c: &mut stn_proto::Config, ms: u64) {
    c.set_zombie_idle_restart(stn_proto::Duration::from_millis(ms));
}

fn nb(c: &mut stn_proto::Config) {
    if let Some(a) = c.timeouts_mut().adaptive.as_mut() {
        a.backoff_percent = 100;
    }
}

fn cap(c: &mut stn_proto::Config, s: u64) {
    c.timeouts_mut().wifi.base_first_packet = stn_proto::Duration::from_secs(s);
    c.timeouts_mut().wifi.max_first_packet = stn_proto::Duration::from_secs(s);
}

fn loss_tweaks() -> Vec<(&'static str, Profile, Tweak)> {
    vec![
        ("mars-2017", Profile::Mars2017, |_| {}),
        ("stn", Profile::Stn, |_| {}),
        ("stn z250", Profile::Stn, |c| z(c, 250)),
        ("stn z0", Profile::Stn, |c| z(c, 0)),
        ("stn z250 nb", Profile::Stn, |c| {
            z(c, 250);
            nb(c);
        }),
        ("stn z250 cap6", Profile::Stn, |c| {
            z(c, 250);
            cap(c, 6);
        }),
        ("stn z250 cap4", Profile::Stn, |c| {
            z(c, 250);
            cap(c, 4);
        }),
        ("stn z250 cap4 nb", Profile::Stn, |c| {
            z(c, 250);
            cap(c, 4);
            nb(c);
        }),
        ("stn zombies=mars", Profile::Stn, |c| {
            c.set_zombies(stn_proto::config::ZombiePolicy::TotalTimeoutOnly);
        }),
        ("stn zombies=mars cap4", Profile::Stn, |c| {
            c.set_zombies(stn_proto::config::ZombiePolicy::TotalTimeoutOnly);
            cap(c, 4);
        }),
    ]
}

fn tweaks() -> Vec<(&'static str, Profile, Tweak)> {
    vec![
        ("mars-2017", Profile::Mars2017, |_| {}),
        ("stn", Profile::Stn, |_| {}),
        ("stn abandons=inf", Profile::Stn, |c| {
            if let Some(a) = c.exchange_mut().race.abandon.as_mut() {
                a.max_abandons = u32::MAX;
            }
        }),
        ("stn no-overall", Profile::Stn, |c| {
            c.exchange_mut().race.overall_timeout = None
        }),
        ("stn abandons=inf no-overall", Profile::Stn, |c| {
            c.exchange_mut().race.overall_timeout = None;
            if let Some(a) = c.exchange_mut().race.abandon.as_mut() {
                a.max_abandons = u32::MAX;
            }
        }),
    ]
}

fn s(d: stn_proto::Duration) -> f64 {
    d.as_secs_f64()
}

#[test]
#[ignore = "exploration"]
fn where_the_time_goes() {
    breakdown(false);
}

#[test]
#[ignore = "exploration"]
fn where_the_time_goes_long_link() {
    breakdown(true);
}

fn breakdown(long: bool) {
    for loss in [30.0, 50.0, 70.0] {
        for platform in Platform::ALL {
            for (name, profile, tweak) in loss_tweaks() {
                let mut sp = spec(
                    PathSchedule::constant(Preset::LossPercent(loss).conditions()),
                    11,
                );
                sp.long_link = long;
                sp.keep_alive_server = long;
                let variant = EngineVariant::Profile(profile);
                let mut client = engine_client(&variant, platform, &sp);
                let mut cfg = client.config().clone();
                cfg.name = name.to_owned();
                tweak(&mut cfg.engine);
                client = stn_sim::clients::stn::StnClient::new(cfg).keep_reports();
                let (r, reports) = run_engine_sequential(client, platform, &sp, 500);
                let mut errs: BTreeMap<String, (u32, f64)> = BTreeMap::new();
                let (mut conn_t, mut fp_t, mut ok_n) = (0.0, 0.0, 0u32);
                for rep in &reports {
                    let dur = s(rep.ended - rep.started);
                    match &rep.error {
                        None => {
                            ok_n += 1;
                            conn_t += rep.connect_time.map_or(0.0, s);
                            fp_t += dur - rep.connect_time.map_or(0.0, s);
                        }
                        Some(e) => {
                            let k = format!("{e:?}").chars().take(40).collect::<String>();
                            let x = errs.entry(k).or_default();
                            x.0 += 1;
                            x.1 += dur;
                        }
                    }
                }
                let fail_calls = r.calls.iter().filter(|c| !c.is_ok()).count();
                let fail_time: f64 = r
                    .calls
                    .iter()
                    .filter(|c| !c.is_ok())
                    .map(|c| s(c.duration()))
                    .sum();
                println!(
                    "{loss}% {:?} {name:28} total {:8.1} succ {} calls {} connects {:?} | ok attempts {ok_n}: connect {:.2} s avg, exchange {:.2} s avg | failed calls {fail_calls} cost {fail_time:.0} s | {errs:?}",
                    platform,
                    r.record.total_s,
                    r.record.successes,
                    r.record.attempts,
                    r.record.connects,
                    conn_t / f64::from(ok_n.max(1)),
                    fp_t / f64::from(ok_n.max(1)),
                );
            }
        }
    }
}

#[test]
#[ignore = "exploration"]
fn sensitivity_variants() {
    for lag_ms in [0u64, 300, 500, 700] {
        for r in (5..=35).step_by(5) {
            for platform in Platform::ALL {
                let end = Instant::from_secs(r) + stn_proto::Duration::from_millis(lag_ms);
                let mut sp = spec(
                    PathSchedule::outage(normal_network(), Instant::ZERO, end),
                    5,
                );
                sp.retry_count = None;
                let oracle = run_single(&ClientKind::Oracle, platform, &sp)
                    .record
                    .total_s;
                let mut line = format!("R={r}+{lag_ms}ms {platform:?} oracle {oracle:.2}");
                for (name, profile, tweak) in tweaks() {
                    let mut client = engine_client(&EngineVariant::Profile(profile), platform, &sp);
                    let mut cfg = client.config().clone();
                    tweak(&mut cfg.engine);
                    client = stn_sim::clients::stn::StnClient::new(cfg);
                    let x = run_engine_single(client, platform, &sp);
                    let v = if x.record.ok {
                        format!("{:+.2}", x.record.total_s - oracle)
                    } else {
                        "fail".into()
                    };
                    line.push_str(&format!(" | {name}: {v}"));
                }
                println!("{line}");
            }
        }
    }
}
