//! Suite `heartbeat` at the quick size, on a selection of its cells: stn
//! meets its targets against Mars's smart heartbeat (no more drops or
//! dead-link tasks, an interval within 30 s below the NAT timeout, reached
//! in at most a third of Mars's time), Mars behaves as its source says, and
//! every run keeps the engine's contract. The whole suite is
//! `stn-sim bench --suite heartbeat`.

use stn_proto::Profile;
use stn_sim::bench::platform::Platform;
use stn_sim::bench::record::RunRecord;
use stn_sim::bench::suites::heartbeat::{cells, run};
use stn_sim::bench::suites::Heartbeat;
use stn_sim::bench::Suite;

fn runs(names: &[&str]) -> Vec<RunRecord> {
    let mut out = Vec::new();
    for cell in cells(true)
        .into_iter()
        .filter(|c| names.contains(&c.name.as_str()))
    {
        for platform in Platform::ALL {
            for profile in [Profile::Mars, Profile::Stn] {
                out.push(run(&cell, profile, platform, 11, true));
            }
        }
    }
    assert_eq!(out.len(), names.len() * 4);
    out
}

#[test]
fn stn_meets_its_targets_on_the_hard_cells() {
    let records = runs(&[
        "nat-120s rst",
        "nat-300s black-hole",
        "nat-600s rst",
        "switch home-900s/cell-300s rst",
    ]);
    for r in &records {
        assert!(
            r.ok,
            "{} {} {}: {:?}",
            r.client, r.scenario, r.platform, r.note
        );
    }
    let mut checked = 0;
    for r in records.iter().filter(|r| r.client == "stn") {
        for t in Heartbeat.targets(r, &records) {
            assert!(
                t.met,
                "{} {} {}: {} {} > {} ({})",
                t.platform, t.scenario, t.client, t.target, t.measured, t.bound, t.detail
            );
            checked += 1;
        }
    }
    assert!(checked >= 24, "{checked} targets");
    // Mars, as its source has it: below 3.5 min every heartbeat is lost; at
    // 300 s it settles 50 s below.
    let mars = |scenario: &str, platform: &str| {
        records
            .iter()
            .find(|r| r.client == "mars" && r.scenario == scenario && r.platform == platform)
            .and_then(|r| r.heartbeat.clone())
            .expect("a mars run")
    };
    let short = mars("nat-120s rst", "android");
    assert!(short.drops > 20 && short.dead_link_tasks > 0, "{short:?}");
    assert_eq!(
        mars("nat-300s black-hole", "android").networks[0].final_s,
        Some(250.0)
    );
    assert_eq!(
        mars("nat-600s rst", "ios").networks[0].final_s,
        None,
        "fixed on iOS"
    );
}
