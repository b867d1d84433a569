//! The link emulator, short version: one delayed scenario (50 ms each way,
//! 5% loss, a 1 s outage at the start) run on the real kernel through TUN
//! devices and stn-sim's link model, 3 runs of 3 successful calls for stn
//! and the OkHttp-2017-like peer, beside the simulator. Skips (passing,
//! with a message) where not root, `ip` is missing or there is no
//! `/dev/net/tun`.

mod lab_support;

use std::net::Ipv4Addr;
use std::time::Duration;

use stn_tokio::lab::scenario::{self, Scenario, ScenarioLabConfig};
use stn_tokio::lab::{self, NetSpec};

const SCENARIO: &str = r#"
name = "ci-delayed"
clients = ["stn", "okhttp-2017", "oracle"]
[link]
preset = "lossy"
loss_percent = 5.0
[link.up]
delay_ms = 50
[link.down]
delay_ms = 50
[[outage]]
from_s = 0.0
until_s = 1.0
[workload]
kind = "sequential"
successes = 3
retry_count = 0
"#;

#[test]
// The skip line and the measured table are this test's output.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn delayed_scenario_through_the_emulator() {
    if let Err(why) = lab::scenario_preflight() {
        // Visible with --nocapture; the test passes where it cannot run.
        eprintln!("{}", lab::scenario_skip_message(&why));
        return;
    }
    // Names of its own, so a concurrent `stn lab` or lab test is not disturbed.
    let prefix = lab_support::unique_prefix("stnle");
    let s = Scenario::from_toml(SCENARIO, "ci-delayed.toml").expect("scenario");
    let mut config = ScenarioLabConfig::for_scenario(&s);
    config.net = NetSpec {
        prefix: prefix.clone(),
        client_ip: Ipv4Addr::new(10, 231, 2, 1),
        server_ip: Ipv4Addr::new(10, 231, 2, 2),
    };
    config.call_cap = Duration::from_secs(30);
    config.run_budget = Duration::from_secs(60);
    let rt = lab_support::runtime();
    let report = rt
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(150), scenario::run(&s, &config)).await
        })
        .expect("the short scenario lab ends within 150 s")
        .expect("the scenario lab runs");
    println!("{}", report.markdown());

    // The namespaces (and with them the TUN devices) are gone.
    lab_support::assert_namespaces_gone(&prefix);

    assert_eq!(report.runs, scenario::MIN_RUNS);
    let names: Vec<&str> = report.rows.iter().map(|r| r.client.as_str()).collect();
    assert_eq!(names, ["stn", "okhttp-2017", "oracle"]);
    for row in &report.rows {
        assert_eq!(row.sim.len(), 3, "{}: every run simulated", row.client);
        if row.client == "oracle" {
            assert!(row.real.is_empty(), "the oracle has no real counterpart");
            continue;
        }
        assert_eq!(row.real.len(), 3, "{}", row.client);
        for run in &row.real {
            let (s, e) = (&run.summary, &run.emulator);
            assert!(s.ok, "{}: 3 successes within 30 calls: {s:?}", row.client);
            // The emulator carried the calls, and its delay really applied:
            // no successful call can beat the 100 ms round trip (physics,
            // not a timing budget).
            assert!(e.up.link.offered > 0 && e.down.link.delivered > 0);
            assert!(e.up.written > 0 && e.down.written > 0);
            assert!(s.p50_s.expect("successes have a median") >= 0.1, "{s:?}");
            // Nothing sent before the 1 s outage ends arrives, so the first
            // success ends after it.
            assert!(s.total_s >= 1.0, "{s:?}");
            assert!(e.up.link.lost > 0, "the outage dropped the first SYNs");
            assert_eq!(e.up.write_errors + e.down.write_errors, 0);
            // Every connection attempt was seen as a SYN.
            let connects = s.connects.expect("the emulator counts connects");
            assert!(connects >= 1 && e.up.syns >= connects, "{e:?}");
            if row.client == "okhttp-2017" {
                // A fresh connection per call.
                assert!(connects >= s.attempts, "{s:?}");
            }
        }
    }
}
