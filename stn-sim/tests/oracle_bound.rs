//! The oracle is a true lower bound: no client finishes before it in any
//! run. Checked call by call on the matrix (every design cell and every
//! 15th sweep cell, two root seeds, quick size) and on every cell of the
//! `tls` and `tls_idempotent` suites (two root seeds, quick size), and run
//! by run on every other suite at quick size.

use stn_sim::bench::cell::Cell;
use stn_sim::bench::client_kind::ClientKind;
use stn_sim::bench::runner::{run_sequential, run_single, RunResult};
use stn_sim::bench::suites::matrix::{design_cells, sweep_cells};
use stn_sim::bench::suites::{self, Tls, TlsIdempotent};
use stn_sim::bench::{run_suite, BenchOptions, RunRecord, Suite};

/// When each successful call of a run finished, s, in order (a sweep
/// cell's run has one call, and its record has the completion).
fn finishes(cell: &Cell, r: &RunResult) -> Vec<f64> {
    if cell.calls.is_none() {
        return r.record.completion_s.into_iter().collect();
    }
    let mut v: Vec<f64> = r
        .calls
        .iter()
        .filter(|c| c.is_ok())
        .map(|c| c.finished.as_secs_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn check_cell(cell: &Cell, seed: u64) {
    let clients = cell.clients();
    let run = |client: &ClientKind| {
        let spec = cell.spec(client, seed, 0);
        match cell.calls {
            Some(n) => run_sequential(client, cell.platform, &spec, n),
            None => run_single(client, cell.platform, &spec),
        }
    };
    let oracle = run(&ClientKind::Oracle);
    let bound = finishes(cell, &oracle);
    for client in clients.iter().filter(|c| **c != ClientKind::Oracle) {
        let r = run(client);
        let got = finishes(cell, &r);
        for (k, (t, o)) in got.iter().zip(&bound).enumerate() {
            assert!(
                t >= o,
                "{} beat the oracle in `{} {}` (root seed {seed}): success {} at {t:.6} s, oracle {o:.6} s",
                r.record.client,
                cell.platform.name(),
                cell.name,
                k + 1
            );
        }
        // The oracle never gives up where a client got through.
        assert!(
            bound.len() >= got.len().min(1),
            "{} completed a call in `{}` and the oracle none",
            r.record.client,
            cell.name
        );
    }
}

#[test]
fn no_client_beats_the_oracle_in_any_matrix_cell() {
    let (design, sweep) = (design_cells(true), sweep_cells());
    let cells: Vec<&Cell> = design.iter().chain(sweep.iter().step_by(15)).collect();
    assert!(cells.len() > 100, "{} cells", cells.len());
    for seed in [1u64, 2] {
        for cell in &cells {
            check_cell(cell, seed);
        }
    }
}

#[test]
fn no_client_beats_the_oracle_in_any_tls_cell() {
    // The opt-in early-data variant too: 0-RTT still pays TCP per call.
    let mut cells = Tls.cells(true);
    cells.extend(TlsIdempotent.cells(true));
    for seed in [1u64, 2] {
        for cell in &cells {
            check_cell(cell, seed);
        }
    }
}

/// The oracle's record of the same scenario run as `r`.
fn oracle_of<'a>(records: &'a [RunRecord], r: &RunRecord) -> Option<&'a RunRecord> {
    records.iter().find(|o| {
        o.client == "oracle"
            && o.suite == r.suite
            && o.scenario == r.scenario
            && o.platform == r.platform
            && o.run == r.run
    })
}

#[test]
fn no_client_beats_the_oracle_in_any_other_suite() {
    let opts = BenchOptions::new(3, true);
    // The suites gated per cell are checked call by call above.
    for suite in suites::default_run().filter(|s| !s.is_gated()) {
        let records = run_suite(suite, &opts);
        let mut compared = 0;
        for r in records.iter().filter(|r| r.client != "oracle") {
            let Some(o) = oracle_of(&records, r) else {
                continue;
            };
            let what = format!(
                "{} {} {} {} run {}",
                r.suite, r.scenario, r.platform, r.client, r.run
            );
            match (r.completion_s, o.completion_s) {
                (Some(c), Some(oc)) => assert!(c >= oc, "{what}: {c} s < oracle {oc} s"),
                (Some(c), None) => panic!("{what}: completed at {c} s, the oracle never"),
                _ if r.ok && r.completion_s.is_none() && o.completion_s.is_none() => {
                    assert!(
                        r.successes < o.successes || r.total_s >= o.total_s,
                        "{what}: {} s < oracle {} s",
                        r.total_s,
                        o.total_s
                    );
                }
                _ => continue,
            }
            compared += 1;
        }
        assert!(compared > 0, "suite {suite} had nothing to compare");
    }
}
