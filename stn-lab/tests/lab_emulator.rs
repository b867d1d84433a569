//! The link emulator, short versions, on the real kernel through TUN
//! devices and stn-sim's link model, beside the simulator: one delayed
//! scenario (50 ms each way, 5% loss, a 1 s outage at the start), 3 runs of
//! 3 successful calls for stn and the OkHttp-2017-like peer; the long link
//! under each engine profile; and external programs as clients
//! (`stn-lab/clients/curl.sh`, and programs that fail). Each skips
//! (passing, with a message) where not root, `ip` is missing or there is no
//! `/dev/net/tun` (and the last where there is no curl).

mod lab_support;

use std::net::Ipv4Addr;
use std::time::Duration;

use stn_lab::scenario::{self, AgreementReport, ExternalClient, Scenario, ScenarioLabConfig};
use stn_lab::{self as lab, NetSpec};

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

/// Runs `toml` in the lab with names of its own (`short` prefix, the /30 of
/// `10.231.<subnet>.0`) and `external` clients; `None` (with the skip line)
/// where the lab cannot run.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn run_lab(
    toml: &str,
    short: &str,
    subnet: u8,
    external: &[&str],
    tweak: impl FnOnce(&mut ScenarioLabConfig),
) -> Option<AgreementReport> {
    if let Err(why) = lab::scenario_preflight() {
        eprintln!("{}", lab::scenario_skip_message(&why));
        return None;
    }
    let prefix = lab_support::unique_prefix(short);
    let s = Scenario::from_toml(toml, "ci.toml").expect("scenario");
    let mut config = ScenarioLabConfig::for_scenario(&s);
    config.net = NetSpec {
        prefix: prefix.clone(),
        client_ip: Ipv4Addr::new(10, 231, subnet, 1),
        server_ip: Ipv4Addr::new(10, 231, subnet, 2),
    };
    config.call_cap = Duration::from_secs(30);
    config.run_budget = Duration::from_secs(60);
    config.external = external
        .iter()
        .map(|e| e.parse::<ExternalClient>().expect("NAME=COMMAND"))
        .collect();
    tweak(&mut config);
    let report = lab_support::runtime()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(150), scenario::run(&s, &config)).await
        })
        .expect("the short scenario lab ends within 150 s")
        .expect("the scenario lab runs");
    println!("{}", report.markdown());
    lab_support::assert_namespaces_gone(&prefix);
    Some(report)
}

/// Three calls on the long link of a server that closes every short-link
/// connection: one connection per run shows the calls went long.
const LONG_LINK: &str = r#"
name = "ci-long-link"
clients = ["stn", "mars", "mars-2017"]
[link]
preset = "lossy"
[link.up]
delay_ms = 20
[link.down]
delay_ms = 20
[workload]
kind = "sequential"
successes = 3
channel = "long"
keep_alive_server = false
retry_count = 0
"#;

#[test]
fn long_link_through_the_emulator() {
    let Some(report) = run_lab(LONG_LINK, "stnll", 3, &[], |_| {}) else {
        return;
    };
    let names: Vec<&str> = report.rows.iter().map(|r| r.client.as_str()).collect();
    assert_eq!(names, ["stn", "mars", "mars-2017"]);
    for row in &report.rows {
        assert_eq!((row.real.len(), row.sim.len()), (3, 3), "{}", row.client);
        for (real, sim) in row.real.iter().zip(&row.sim) {
            let s = &real.summary;
            assert!(s.ok && sim.ok, "{}: {s:?} / {sim:?}", row.client);
            assert_eq!((s.attempts, sim.attempts), (3, 3), "{}", row.client);
            // One long-link connection carried the three calls, on the
            // kernel as in the simulator (the short link would need three).
            assert_eq!(s.connects, Some(1), "{}: {:?}", row.client, real.emulator);
            assert_eq!(sim.connects, Some(1), "{}", row.client);
            // A call is at least the 40 ms round trip.
            assert!(s.p50_s.expect("a median") >= 0.04, "{s:?}");
        }
    }
}

/// A clean delayed link for the external clients: every call succeeds.
const EXTERNAL: &str = r#"
name = "ci-external"
clients = ["okhttp-2017"]
[link]
preset = "lossy"
[link.up]
delay_ms = 20
[link.down]
delay_ms = 20
[workload]
kind = "sequential"
successes = 3
retry_count = 0
"#;

#[test]
#[allow(clippy::print_stderr)]
fn external_clients_get_rows_of_their_own() {
    let curl_found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !curl_found {
        eprintln!("skipping the external-client lab test: no curl (.ci/lab-setup.sh installs it)");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/curl.sh");
    let curl = format!("curl={script}");
    let external = [
        curl.as_str(),
        "garbled=echo not json",
        "exits=echo gave up >&2; exit 3",
        "slow=sleep 60",
    ];
    // A short bound, so the program that overruns it costs seconds.
    let Some(report) = run_lab(EXTERNAL, "stnlx", 4, &external, |c| {
        c.run_budget = Duration::from_secs(2);
        c.call_cap = Duration::from_secs(1);
    }) else {
        return;
    };
    let names: Vec<&str> = report.rows.iter().map(|r| r.client.as_str()).collect();
    assert_eq!(names, ["okhttp-2017", "curl", "garbled", "exits", "slow"]);
    let row = |name: &str| report.rows.iter().find(|r| r.client == name).unwrap();

    let curl = row("curl");
    assert_eq!(curl.command.as_deref(), Some(script));
    assert!(curl.failed.is_empty(), "{:?}", curl.failed);
    assert!(curl.sim.is_empty(), "no simulated side");
    assert_eq!(curl.real.len(), 3);
    for run in &curl.real {
        let s = &run.summary;
        assert!(s.ok, "{s:?}");
        assert_eq!((s.successes, s.attempts), (3, 3), "{s:?}");
        // A fresh connection per call, each seen by the emulator.
        assert_eq!(s.connects, Some(3), "{:?}", run.emulator);
        assert_eq!(run.calls_ms.as_ref().map(Vec::len), Some(3));
    }
    // The same count as the built-in client it imitates.
    for run in &row("okhttp-2017").real {
        assert_eq!(run.summary.connects, Some(3));
    }

    for (name, reason) in [
        ("garbled", "bad output: not JSON"),
        ("exits", "exit status: 3; stderr: gave up"),
        ("slow", "killed after its bound"),
    ] {
        let r = row(name);
        assert!(r.real.is_empty(), "{name}");
        assert_eq!(r.failed.len(), 3, "{name}: every run reported");
        for f in &r.failed {
            assert!(f.reason.contains(reason), "{name}: {}", f.reason);
        }
    }
    let md = report.markdown();
    assert!(md.contains("| slow | – | – | – |"), "{md}");
    assert!(
        md.contains("  - run 0 failed: killed after its bound of 3 s"),
        "{md}"
    );
}
