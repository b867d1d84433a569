//! Fidelity (issue point 6): with the mars_2017 profile, the sensitivity
//! differences against NSURLSession and OkHttp match the published rows for
//! 5–30 s within ±1.0 s, and the longest published outages show Mars
//! succeeding where the peer fails — in the fitted scenario (network back
//! 0.5 s / 1.5 s after nominal, 5 candidates; see `stn_sim::bench::fidelity`
//! for why). The nominal scenario is printed too, with its unmatched rows.
//! Print the tables: `cargo test -p stn-sim --test bench_fidelity -- --nocapture`.
#![allow(clippy::print_stdout)]

use stn_sim::bench::fidelity::{compare, table, FidelityRow};
use stn_sim::bench::{run_suite, BenchOptions, Suite};

#[test]
fn mars_2017_matches_the_published_sensitivity_rows_in_the_fitted_scenario() {
    let mut opts = BenchOptions::new(1, false);
    opts.tuned = false;
    let records = run_suite(Suite::Sensitivity, &opts);
    let fit = compare(&records, true);
    let nominal = compare(&records, false);
    println!("Fitted scenario:\n{}", table(&fit));
    println!(
        "Nominal scenario (network back at exactly R, 4 DNS copies):\n{}",
        table(&nominal)
    );
    let unmatched: Vec<String> = nominal
        .iter()
        .filter(|r| !r.matched)
        .map(|r| format!("{} {} s", r.platform.name(), r.outage_s))
        .collect();
    println!("Nominal rows not matched: {unmatched:?}");
    assert_eq!(fit.len(), 13, "every published row was compared");
    let missed: Vec<&FidelityRow> = fit.iter().filter(|r| !r.matched).collect();
    assert!(missed.is_empty(), "fitted rows missed: {missed:#?}");
    // The same in every run of the three (the model has no run-to-run noise
    // on a loss-free path; the seeds only move jitter-free draws).
    for run in 0..3 {
        let recs: Vec<_> = records
            .iter()
            .filter(|r| r.run == run)
            .cloned()
            .map(|mut r| {
                r.run = 0;
                r
            })
            .collect();
        assert!(compare(&recs, true).iter().all(|r| r.matched), "run {run}");
    }
    // What the nominal scenario honestly gives: the rows that need a later
    // restore or a fifth candidate do not match.
    assert!(!unmatched.is_empty());
}
