//! Suite `tls_idempotent` (opt-in: `--suite tls_idempotent`, not in a
//! default run): the `tls` suite's fresh-connection loss cells again
//! (`tls-idempotent loss-P% fresh`) with calls that are idempotent: the
//! servers enable early data and every task allows it, so a client that
//! sends early data (stn's profile; not the Mars profiles, not the peers)
//! sends each resumed call's request with its ClientHello. Each cell runs
//! on its `tls` twin's seeds, so the two differ by early data alone. The
//! keep-alive and long-link cells are left out (a reused connection and
//! the long link never send early), and so are the sensitivity cells
//! (their one call has no ticket to resume). Besides the gate, its runs
//! keep the default target (no worse than `mars` in the same cell and
//! seed), which the `tls` suite's runs do not have.

use std::fmt::Write as _;

use crate::bench::cell::{Cell, LinkKind};
use crate::bench::gate::CellVerdict;
use crate::bench::record::RunRecord;
use crate::bench::suite::{of_suite, run_cells, BenchOptions, Suite};
use crate::bench::suites::tls::{fewest_seeds, loss_cells, misses_section, verdict_table, Tls};
use crate::report::chart::LineChart;

/// Suite `tls_idempotent`.
#[derive(Clone, Copy, Debug)]
pub struct TlsIdempotent;

/// The fresh-connection loss cells of suite `tls` with idempotent calls
/// (servers enable early data, tasks allow it), each on the seeds of its
/// `tls` twin.
pub fn cells(quick: bool) -> Vec<Cell> {
    loss_cells(quick)
        .into_iter()
        .filter(|c| c.link == LinkKind::Fresh)
        .map(|mut c| {
            let twin = c.name.clone();
            c.name = twin.replacen("tls ", "tls-idempotent ", 1);
            c.suite = TlsIdempotent.name();
            c.early_data = true;
            c.twin = Some((Tls.name(), twin));
            c
        })
        .collect()
}

impl Suite for TlsIdempotent {
    fn name(&self) -> &'static str {
        "tls_idempotent"
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        run_cells(cells(opts.quick), opts.seed, emit);
    }

    fn tables(&self, runs: &[RunRecord]) -> String {
        let verdicts = self.verdicts(runs);
        let cost = crate::bench::gate::cost_paragraph(runs, self.name(), &verdicts);
        section(&verdicts, &of_suite(runs, self.name()), &cost)
    }

    fn charts(&self, _runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        Vec::new()
    }

    fn cells(&self, quick: bool) -> Vec<Cell> {
        cells(quick)
    }
}

/// The `tls_idempotent` section from the verdicts on its cells and its
/// records: the gate per cell as in the `tls` section, then how many
/// requests each engine client sent early.
fn section(all: &[CellVerdict], records: &[&RunRecord], cost: &str) -> String {
    let seeds = fewest_seeds(all);
    let misses: Vec<&CellVerdict> = all.iter().filter(|v| !v.met()).collect();
    let mut out = format!(
        "The `tls` suite's fresh-connection loss cells with idempotent calls: servers enable \
         TLS early data (tickets allow {} B), every task allows it; stn's profile sends a \
         resumed call's request with its ClientHello, the Mars profiles and the peers send \
         none (`docs/sim-tls.md`). Each cell runs on its `tls` twin's seeds. \
         Gate per cell over {seeds} seeds as in suite `tls`. **{} cells, {} misses.**\n\n",
        crate::tls::MAX_EARLY_DATA,
        all.len(),
        misses.len()
    );
    out.push_str(cost);
    let rows: Vec<&CellVerdict> = all.iter().collect();
    verdict_table(
        &mut out,
        "tls-idempotent: sequential calls at retry 0, a fresh connection each",
        &rows,
    );
    out.push_str("### Requests sent as early data (all seeds)\n\n");
    out.push_str("| tcp | cell | client | early / calls |\n|---|---|---|---|\n");
    for v in all {
        for client in ["stn", "mars-2017", "mars"] {
            let mine = records.iter().filter(|r| {
                r.platform == v.platform && r.scenario == v.scenario && r.client == client
            });
            let (early, calls) = mine.fold((0, 0), |(e, c), r| {
                (e + r.early_sends.unwrap_or(0), c + r.attempts)
            });
            if calls > 0 {
                let _ = writeln!(
                    out,
                    "| {} | {} | {client} | {early} / {calls} |",
                    v.platform, v.scenario
                );
            }
        }
    }
    out.push('\n');
    misses_section(&mut out, &misses);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::client_kind::ClientKind;
    use crate::bench::suites::matrix::PLATFORMS;
    use crate::bench::suites::tls::LOSS_PCT;

    #[test]
    fn the_idempotent_cells_are_the_fresh_loss_cells_on_their_twins_seeds() {
        let idem = cells(true);
        assert_eq!(idem.len(), LOSS_PCT.len() * PLATFORMS.len());
        for c in &idem {
            assert!(c.early_data && c.tls && c.suite == "tls_idempotent");
            assert!(c.name.starts_with("tls-idempotent loss-") && c.name.ends_with(" fresh"));
            let twin = loss_cells(true)
                .into_iter()
                .find(|t| {
                    c.twin.as_ref() == Some(&("tls", t.name.clone())) && t.platform == c.platform
                })
                .expect("a tls twin");
            let kind = ClientKind::STN;
            let (a, b) = (c.spec(&kind, 1, 2), twin.spec(&kind, 1, 2));
            assert_eq!(a.seed, b.seed);
            assert!(a.early_data && !b.early_data);
            assert_eq!(a.suite, "tls_idempotent");
        }
        // Not part of a default run, but found by name.
        assert!(crate::bench::suites::default_run().all(|s| s.name() != "tls_idempotent"));
        assert_eq!(
            crate::bench::suites::named("tls_idempotent").map(|s| s.name()),
            Some("tls_idempotent")
        );
    }
}
