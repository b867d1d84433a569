//! Suite `tls` (beyond the published benchmark): the loss and sensitivity
//! suites with TLS 1.3 on every connection ([`crate::tls`]), gated per
//! cell like the condition matrix ([`crate::bench::gate`]).
//!
//! - **loss cells** (`tls loss-P% LINK`): the "N% Loss" path (60 ms RTT)
//!   at 0 / 10 / 30 / 50 % loss both ways, [`loss_calls`] sequential
//!   successes at retry 0 (as in the loss suite);
//! - **sensitivity cells** (`tls outage-Rs LINK`): one call at t = 0
//!   through 100 % loss for R = 5 … 40 s, then the normal network, at the
//!   default retry count (as in the sensitivity suite);
//!
//! each on the three TCP stacks and, for LINK, a fresh connection per call
//! (`fresh`: every call pays TCP and a TLS handshake, resumed from the
//! second call on), keep-alive (`keepalive`: a reused connection pays no
//! handshake) and the long link (`long`: the engines' one connection; the
//! peers keep-alive). Clients: `stn`, `mars-2017`, `mars`, the platform's
//! peer as benchmarked and as recommended, and the oracle (whose first
//! call pays the full handshake, as every client's does), over
//! [`crate::bench::cell::SEEDS`] seeds.

use std::fmt::Write as _;

use stn_proto::Instant;

use crate::bench::cell::{Cell, LinkKind};
use crate::bench::gate::{
    cost_paragraph, evidence_and_cause, miss_line, verdict_header, verdict_row, CellVerdict,
    FAIL_ALLOWANCE_PER_100,
};
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::{normal_network, Candidate};
use crate::bench::suite::{run_cells, BenchOptions, Suite};
use crate::bench::suites::matrix::{LINKS, PLATFORMS};
use crate::bench::targets::TargetCheck;
use crate::path::PathSchedule;
use crate::preset::Preset;
use crate::report::chart::LineChart;

/// Suite `tls`.
#[derive(Clone, Copy, Debug)]
pub struct Tls;

/// Loss rates of the loss cells, %.
pub const LOSS_PCT: [u32; 4] = [0, 10, 30, 50];

/// Outage lengths of the sensitivity cells, s.
pub const OUTAGE_S: [u64; 8] = [5, 10, 15, 20, 25, 30, 35, 40];

/// Successes per loss cell and seed.
pub fn loss_calls(quick: bool) -> u64 {
    if quick {
        10
    } else {
        20
    }
}

fn cell(name: String, path: PathSchedule, platform: Platform) -> Cell {
    Cell {
        row: None,
        rtt: normal_network().base_rtt(),
        path,
        candidates: vec![Candidate::Live],
        platform,
        link: LinkKind::Fresh,
        retry: None,
        name,
        calls: None,
        suite: Tls.name(),
        tls: true,
        early_data: false,
        twin: None,
    }
}

/// The loss cells.
pub fn loss_cells(quick: bool) -> Vec<Cell> {
    let mut v = Vec::new();
    for p in LOSS_PCT {
        for link in LINKS {
            for platform in PLATFORMS {
                let cond = Preset::LossPercent(f64::from(p)).conditions();
                let mut c = cell(
                    format!("tls loss-{p}% {}", link.label()),
                    PathSchedule::constant(cond),
                    platform,
                );
                c.link = link;
                c.retry = Some(0);
                c.calls = Some(loss_calls(quick));
                v.push(c);
            }
        }
    }
    v
}

/// The sensitivity cells (the keep-alive link is left out: a single call
/// has no connection to reuse, so it is the fresh cell again).
pub fn sensitivity_cells() -> Vec<Cell> {
    let mut v = Vec::new();
    for r in OUTAGE_S {
        for link in [LinkKind::Fresh, LinkKind::Long] {
            for platform in PLATFORMS {
                let path =
                    PathSchedule::outage(normal_network(), Instant::ZERO, Instant::from_secs(r));
                let mut c = cell(format!("tls outage-{r}s {}", link.label()), path, platform);
                c.link = link;
                v.push(c);
            }
        }
    }
    v
}

/// Every cell of the suite: the loss cells, then the sensitivity cells.
pub fn cells(quick: bool) -> Vec<Cell> {
    let mut v = loss_cells(quick);
    v.extend(sensitivity_cells());
    v
}

/// The fewest seeds any of `verdicts` had (0 without verdicts).
pub(crate) fn fewest_seeds(verdicts: &[CellVerdict]) -> usize {
    verdicts.iter().map(|v| v.stn.seeds).min().unwrap_or(0)
}

impl Suite for Tls {
    fn name(&self) -> &'static str {
        "tls"
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        run_cells(cells(opts.quick), opts.seed, emit);
    }

    fn tables(&self, runs: &[RunRecord]) -> String {
        section(&self.verdicts(runs), runs)
    }

    fn charts(&self, _runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        Vec::new()
    }

    /// None: the gate judges each cell.
    fn targets(&self, _r: &RunRecord, _records: &[RunRecord]) -> Vec<TargetCheck> {
        Vec::new()
    }

    fn cells(&self, quick: bool) -> Vec<Cell> {
        cells(quick)
    }
}

/// A missed cell's line: the evidence from the runs (where stn's time and
/// failures went against the best other client), the traced cause
/// ([`crate::bench::gate::REASONS`]) and the command that replays stn's run
/// (a handshake timeout is `ConnectFailed(Other(-458760))`,
/// `TlsFailure::HandshakeTimeout`).
pub fn reason(v: &CellVerdict) -> String {
    format!(
        "{}; replay: `stn-sim trace --matrix-cell \"{}\" --client stn --run 0`",
        evidence_and_cause(v),
        v.key()
    )
}

/// A table of `verdicts` under `title` (nothing without verdicts).
pub(crate) fn verdict_table(out: &mut String, title: &str, verdicts: &[&CellVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let _ = writeln!(out, "### {title}\n");
    out.push_str(&verdict_header(&[]));
    for v in verdicts {
        let _ = writeln!(out, "{}", verdict_row(v));
    }
    out.push('\n');
}

/// Every miss with its one-line reason, if any.
pub(crate) fn misses_section(out: &mut String, misses: &[&CellVerdict]) {
    if misses.is_empty() {
        return;
    }
    out.push_str("### Misses\n\n");
    for v in misses {
        let _ = writeln!(out, "{}", miss_line(v, &reason(v)));
    }
    out.push('\n');
}

/// The `tls` section of the report from the verdicts on its cells: the
/// gate's counts, every cell with its ratio, and every miss with its
/// one-line reason.
fn section(all: &[CellVerdict], runs: &[RunRecord]) -> String {
    let seeds = fewest_seeds(all);
    let misses: Vec<&CellVerdict> = all.iter().filter(|v| !v.met()).collect();
    let mut out = format!(
        "TLS 1.3 on every connection (full handshake with a {} B certificate flight, \
         resumption with tickets per server name; `docs/sim-tls.md`). \
         Gate per cell over {seeds} seeds: stn ≤ best other × (1 + max(2 %, one RTT per call)); \
         at retry 0 stn's failed calls ≤ best other's + {FAIL_ALLOWANCE_PER_100} per 100 successes. \
         **{} cells, {} misses.**\n\n",
        crate::tls::SERVER_FLIGHT_FULL_LEN,
        all.len(),
        misses.len()
    );
    out.push_str(&cost_paragraph(runs, "tls", all));
    let loss: Vec<&CellVerdict> = all
        .iter()
        .filter(|v| v.scenario.contains(" loss-"))
        .collect();
    let sens: Vec<&CellVerdict> = all
        .iter()
        .filter(|v| v.scenario.contains(" outage-"))
        .collect();
    verdict_table(&mut out, "tls-loss: sequential calls at retry 0", &loss);
    verdict_table(
        &mut out,
        "tls-sensitivity: one call through an outage of R s from t = 0",
        &sens,
    );
    misses_section(&mut out, &misses);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::Duration;

    #[test]
    fn cell_names_are_unique_and_every_cell_runs_tls() {
        let cells = cells(true);
        assert_eq!(cells.len(), 4 * 3 * 3 + 8 * 2 * 3);
        let mut keys: Vec<String> = cells.iter().map(Cell::key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), cells.len());
        assert!(cells.iter().all(|c| c.tls && c.suite == "tls"));
        let spec = cells[0].spec(&crate::bench::client_kind::ClientKind::STN, 1, 0);
        assert!(spec.tls);
        assert_eq!(spec.suite, "tls");
        assert_eq!(cells[0].rtt, Duration::from_millis(60));
    }
}
