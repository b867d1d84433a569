//! Wall-clock speed of the bench and the measured tables.
//! Ignored by default: run in release with
//! `cargo test --release -p stn-sim --test bench_speed -- --ignored --nocapture`.
#![allow(clippy::print_stdout, clippy::disallowed_methods)]

use stn_sim::bench::{run_suite, suites, BenchOptions, RunRecord};

fn run(quick: bool) -> (Vec<RunRecord>, f64) {
    let opts = BenchOptions::new(1, quick);
    // Wall-clock time is only read here, to report speed; nothing depends on it.
    let t0 = std::time::Instant::now();
    let mut all = Vec::new();
    for suite in suites::default_run() {
        let t = std::time::Instant::now();
        let recs = run_suite(suite, &opts);
        let sim: f64 = recs.iter().filter_map(|r| r.sim_s).sum();
        let wall = t.elapsed().as_secs_f64();
        println!(
            "{:>14}: {:>4} records, {:>9.0} simulated s in {:>6.2} wall s ({:>8.0} sim-s/s)",
            suite.name(),
            recs.len(),
            sim,
            wall,
            sim / wall.max(1e-9)
        );
        all.extend(recs);
    }
    (all, t0.elapsed().as_secs_f64())
}

fn print(recs: &[RunRecord]) {
    println!("| suite | scenario | platform | client | ch | run | succ | att | total s | mean | p50 | p95 | p99 | completion | connects |");
    for r in recs {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} |",
            r.suite,
            r.scenario,
            r.platform,
            r.client,
            r.channel,
            r.run,
            r.successes,
            r.attempts,
            r.total_s,
            r.mean_s,
            r.p50_s,
            r.p95_s,
            r.p99_s,
            r.completion_s.map_or("fail".to_owned(), |c| format!("{c:.2}")),
            r.connects.map_or("-".to_owned(), |c| c.to_string()),
        );
    }
}

#[test]
#[ignore = "speed measurement; run in release"]
fn quick_bench() {
    let (recs, wall) = run(true);
    let sim: f64 = recs.iter().filter_map(|r| r.sim_s).sum();
    println!(
        "quick: {} records, {sim:.0} sim s in {wall:.2} wall s = {:.0} sim-s/s",
        recs.len(),
        sim / wall
    );
    print(&recs);
}

#[test]
#[ignore = "speed measurement; run in release"]
fn full_bench() {
    let (recs, wall) = run(false);
    let sim: f64 = recs.iter().filter_map(|r| r.sim_s).sum();
    println!(
        "full: {} records, {sim:.0} sim s in {wall:.2} wall s = {:.0} sim-s/s",
        recs.len(),
        sim / wall
    );
    print(&recs);
}

#[test]
#[ignore = "targets report; run in release"]
fn targets_report() {
    let (recs, wall) = run(false);
    println!("full bench wall {wall:.2} s");
    for client in ["stn", "stn-tuned"] {
        let checks = stn_sim::bench::targets::evaluate(&recs, client);
        let met = checks.iter().filter(|c| c.met).count();
        println!(
            "## {client}: {met}/{} targets met\n{}",
            checks.len(),
            stn_sim::bench::targets::table(&checks)
        );
    }
}
