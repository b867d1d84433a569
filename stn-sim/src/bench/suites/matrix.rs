//! Suite `matrix` (beyond the published benchmark), the condition matrix:
//! the default profile against the best of Mars and the peers on
//! conditions real mobile networks have, not only on the published suites,
//! gated per cell ([`crate::bench::gate`]).
//!
//! Two parts:
//! - **design cells**: a pairwise covering design
//!   ([`crate::bench::covering`]) over the axes below — every pair of
//!   values of every two axes is in some cell — each run over
//!   [`crate::bench::cell::SEEDS`] seeds with [`design_calls`] sequential
//!   successes;
//! - **outage sweep**: one call at t = 0 through a single outage of
//!   0.1 s … 30.0 s in 0.1 s steps ([`SWEEP_STEPS`]), on the loss-free
//!   "N% Loss" base path, on each TCP stack.
//!
//! Axes of the design ([`AXES`]): RTT 40 / 150 / 300 / 600 / 1000 ms;
//! loss 0 / 1 / 5 / 10 / 30 / 50 % both ways, 30 % up only, 30 % down only,
//! Gilbert–Elliott 10 % in 300 ms bursts and 30 % in 1 s bursts (bursts in
//! time); bandwidth Edge / 3G / LTE / unlimited (the presets' rates); jitter
//! none / ±10 % of the one-way delay; candidate lists with k of n endpoints
//! dead (refusing, black-holed) in various positions; no outage / one
//! outage (its length walks 0.1–20 s over the cells) / flapping outages;
//! the TCP of Linux < 6.5, Linux ≥ 6.5 and xnu; short link with fresh
//! connections, short link with keep-alive, long link; retry 0 and the
//! default retry count.
//!
//! Clients of every cell: `stn`, `mars-2017`, `mars`, the platform's peer
//! as benchmarked and as recommended, and the oracle. On the long link the
//! engines use it and the peers keep-alive connections (as in the
//! `long_link` suite). The OkHttp 2017 model has one route, so it sits out
//! cells with dead endpoints; NSURLSession as benchmarked gets the whole
//! candidate list there.

use std::fmt::Write as _;

use stn_proto::{Duration, Instant};

use crate::bench::cell::{Cell, LinkKind};
use crate::bench::covering::covering_design;
use crate::bench::gate::{
    cost_paragraph, evidence_and_cause, miss_line, verdict_header, verdict_row, CellVerdict,
    FAIL_ALLOWANCE_PER_100,
};
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::{normal_network, Candidate};
use crate::bench::suite::{run_cells, BenchOptions, Suite};
use crate::bench::targets::TargetCheck;
use crate::link::{GilbertElliott, LossModel};
use crate::path::{PathConditions, PathSchedule};
use crate::preset::Preset;
use crate::report::chart::LineChart;
use crate::report::heatmap::{self, Heatmap};

/// Suite `matrix`.
#[derive(Clone, Copy, Debug)]
pub struct Matrix;

/// Outage sweep: lengths `0.1 s × k` for k = 1 ..= this.
pub const SWEEP_STEPS: u32 = 300;

/// Seed of the covering design's tie-breaks (fixed: the cells are part of
/// the suite's definition, not of a run's seed).
const DESIGN_SEED: u64 = 11;

/// Successes per design cell and seed.
pub fn design_calls(quick: bool) -> u64 {
    if quick {
        20
    } else {
        40
    }
}

/// Round-trip times of the RTT axis, ms.
pub const RTT_MS: [u64; 5] = [40, 150, 300, 600, 1000];

/// A value of the loss axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Bernoulli loss of this many percent both ways (0: none).
    Both(u32),
    /// Bernoulli loss of this many percent client → server only.
    UpOnly(u32),
    /// Bernoulli loss of this many percent server → client only.
    DownOnly(u32),
    /// Gilbert–Elliott loss, average percent, mean burst in ms, both ways.
    Bursty(u32, u64),
}

/// The loss axis.
pub const LOSSES: [Loss; 10] = [
    Loss::Both(0),
    Loss::Both(1),
    Loss::Both(5),
    Loss::Both(10),
    Loss::Both(30),
    Loss::Both(50),
    Loss::UpOnly(30),
    Loss::DownOnly(30),
    Loss::Bursty(10, 300),
    Loss::Bursty(30, 1000),
];

impl Loss {
    /// `loss10%`, `up30%`, `down30%`, `ge30%/1000ms`.
    pub fn label(self) -> String {
        match self {
            Loss::Both(p) => format!("loss{p}%"),
            Loss::UpOnly(p) => format!("up{p}%"),
            Loss::DownOnly(p) => format!("down{p}%"),
            Loss::Bursty(p, ms) => format!("ge{p}%/{ms}ms"),
        }
    }

    fn apply(self, c: &mut PathConditions) {
        let pct = |p: u32| LossModel::percent(f64::from(p));
        match self {
            Loss::Both(p) => *c = c.with_loss(pct(p)),
            Loss::UpOnly(p) => c.up.loss = pct(p),
            Loss::DownOnly(p) => c.down.loss = pct(p),
            Loss::Bursty(p, ms) => {
                *c = c.with_loss(LossModel::GilbertElliott(
                    GilbertElliott::with_rate_and_burst(
                        f64::from(p) / 100.0,
                        Duration::from_millis(ms),
                    ),
                ));
            }
        }
    }
}

/// The bandwidth axis: a preset's rates (its delay is the RTT axis's).
pub const BANDWIDTHS: [Option<Preset>; 4] = [
    Some(Preset::Edge),
    Some(Preset::ThreeG),
    Some(Preset::Lte),
    None,
];

fn bandwidth_label(b: Option<Preset>) -> &'static str {
    match b {
        Some(Preset::Edge) => "edge",
        Some(Preset::ThreeG) => "3g",
        Some(Preset::Lte) => "lte",
        _ => "unlimited",
    }
}

/// The jitter axis: half-width as a fraction of the one-way delay, %.
pub const JITTER_PCT: [u64; 2] = [0, 10];

/// The candidate-list axis: the resolver's answer, in order.
pub const ENDPOINTS: [&[Candidate]; 5] = {
    use Candidate::{BlackHoled as B, Live as L, Refusing as R};
    [&[L], &[R, L], &[B, B, L], &[L, B, R], &[B, R, B, B, B, L]]
};

/// `l`, `rl`, `bbl`, … (one letter per candidate, [`Candidate::letter`]).
pub fn endpoints_label(e: &[Candidate]) -> String {
    e.iter().map(|c| c.letter()).collect()
}

/// A value of the outage axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageKind {
    /// No outage.
    None,
    /// One outage from t = 1 s; its length comes from the cell index.
    Single,
    /// Outages of `down` every `period` from t = 1 s for the whole run.
    Flapping,
}

/// The outage axis.
pub const OUTAGES: [OutageKind; 3] = [OutageKind::None, OutageKind::Single, OutageKind::Flapping];

/// The TCP axis.
pub const PLATFORMS: [Platform; 3] = Platform::WITH_LINUX_6_5;

/// The link axis.
pub const LINKS: [LinkKind; 3] = [LinkKind::Fresh, LinkKind::KeepAlive, LinkKind::Long];

/// The retry axis: engine tasks' retry count (`None`: the default, 1).
pub const RETRIES: [Option<u8>; 2] = [Some(0), None];

/// The axes' names and sizes, in the order of a design row.
pub const AXES: [(&str, usize); 9] = [
    ("rtt", RTT_MS.len()),
    ("loss", LOSSES.len()),
    ("bandwidth", BANDWIDTHS.len()),
    ("jitter", JITTER_PCT.len()),
    ("endpoints", ENDPOINTS.len()),
    ("outage", OUTAGES.len()),
    ("tcp", PLATFORMS.len()),
    ("link", LINKS.len()),
    ("retry", RETRIES.len()),
];

/// The sizes of [`AXES`].
pub fn axis_sizes() -> Vec<usize> {
    AXES.iter().map(|(_, n)| *n).collect()
}

/// Length of the single outage of design cell `i`: walks 0.1 … 20.0 s.
fn single_outage(i: usize) -> Duration {
    let k = 1 + (i as u64 * 37) % 200;
    Duration::from_millis(100 * k)
}

/// (down, period) of the flapping outages of design cell `i`.
fn flapping(i: usize) -> (Duration, Duration) {
    let down = Duration::from_millis(500 + 250 * (i as u64 % 11));
    let period = down + Duration::from_secs(3 + i as u64 % 7);
    (down, period)
}

/// The conditions of one point of the network axes: round trip
/// `rtt_ms`, `loss`, the rates of `bw` (`None`: unlimited), jitter of
/// `jitter_pct` % of the one-way delay.
pub fn conditions(rtt_ms: u64, loss: Loss, bw: Option<Preset>, jitter_pct: u64) -> PathConditions {
    let one_way = Duration::from_millis(rtt_ms / 2);
    let mut c = normal_network();
    for (d, rate) in [(&mut c.up, false), (&mut c.down, true)] {
        d.delay = one_way;
        d.jitter = one_way * u32::try_from(jitter_pct).unwrap_or(0) / 100;
        d.bandwidth_bps = bw.and_then(|p| {
            let pc = p.conditions();
            if rate {
                pc.down.bandwidth_bps
            } else {
                pc.up.bandwidth_bps
            }
        });
    }
    loss.apply(&mut c);
    c
}

/// The design cells, in design order.
pub fn design_cells(quick: bool) -> Vec<Cell> {
    covering_design(&axis_sizes(), DESIGN_SEED)
        .into_iter()
        .enumerate()
        .map(|(i, row)| design_cell(i, row, quick))
        .collect()
}

fn design_cell(i: usize, row: Vec<usize>, quick: bool) -> Cell {
    let rtt_ms = RTT_MS[row[0]];
    let loss = LOSSES[row[1]];
    let bw = BANDWIDTHS[row[2]];
    let jitter_pct = JITTER_PCT[row[3]];
    let endpoints = ENDPOINTS[row[4]];
    let outage = OUTAGES[row[5]];
    let platform = PLATFORMS[row[6]];
    let link = LINKS[row[7]];
    let retry = RETRIES[row[8]];
    let c = conditions(rtt_ms, loss, bw, jitter_pct);
    let (path, outage_label) = match outage {
        OutageKind::None => (PathSchedule::constant(c), "out-none".to_owned()),
        OutageKind::Single => {
            let len = single_outage(i);
            let from = Instant::from_secs(1);
            (
                PathSchedule::outage(c, from, from + len),
                format!("out-{:.1}s", len.as_secs_f64()),
            )
        }
        OutageKind::Flapping => {
            let (down, period) = flapping(i);
            let mut p = PathSchedule::constant(c);
            let mut t = Instant::from_secs(1);
            // Enough cycles for the slowest client's run (bounded).
            for _ in 0..2000 {
                p = p.then_at(t, c.outage()).then_at(t + down, c);
                t += period;
            }
            (
                p,
                format!(
                    "flap-{:.2}s/{:.2}s",
                    down.as_secs_f64(),
                    period.as_secs_f64()
                ),
            )
        }
    };
    let link_label = link.label();
    let name = format!(
        "rtt{rtt_ms} {} {} jit{jitter_pct} {} {outage_label} {link_label} retry{}",
        loss.label(),
        bandwidth_label(bw),
        endpoints_label(endpoints),
        retry.map_or("-default".to_owned(), |r| r.to_string()),
    );
    Cell {
        row: Some(row),
        rtt: Duration::from_millis(rtt_ms),
        path,
        candidates: endpoints.to_vec(),
        platform,
        link,
        retry,
        name,
        calls: Some(design_calls(quick)),
        suite: Matrix.name(),
        tls: false,
        early_data: false,
        twin: None,
    }
}

/// The outage sweep cells: every 0.1 s step on every TCP stack.
pub fn sweep_cells() -> Vec<Cell> {
    let base = normal_network();
    let mut v = Vec::new();
    for platform in PLATFORMS {
        for k in 1..=SWEEP_STEPS {
            let len = Duration::from_millis(100 * u64::from(k));
            v.push(Cell {
                row: None,
                rtt: base.base_rtt(),
                path: PathSchedule::outage(base, Instant::ZERO, Instant::ZERO + len),
                candidates: vec![Candidate::Live],
                platform,
                link: LinkKind::Fresh,
                retry: None,
                name: sweep_name(len),
                calls: None,
                suite: Matrix.name(),
                tls: false,
                early_data: false,
                twin: None,
            });
        }
    }
    v
}

/// `sweep outage-12.3s`.
fn sweep_name(len: Duration) -> String {
    format!("sweep outage-{:.1}s", len.as_secs_f64())
}

/// Every cell of the suite: the design, then the sweep.
pub fn cells(quick: bool) -> Vec<Cell> {
    let mut v = design_cells(quick);
    v.extend(sweep_cells());
    v
}

impl Suite for Matrix {
    fn name(&self) -> &'static str {
        "matrix"
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

    /// `matrix-heatmap.svg` (RTT × loss) and `matrix-sweep.svg` (the
    /// outage sweep), as far as the records allow.
    fn heatmaps(&self, runs: &[RunRecord]) -> Vec<(String, Heatmap)> {
        let verdicts = self.verdicts(runs);
        let mut out = Vec::new();
        if let Some(h) = heatmap::design_heatmap(&verdicts) {
            out.push(("matrix-heatmap.svg".to_owned(), h));
        }
        if let Some(h) = heatmap::sweep_heatmap(&verdicts) {
            out.push(("matrix-sweep.svg".to_owned(), h));
        }
        out
    }

    /// None: the gate judges each cell.
    fn targets(&self, _r: &RunRecord, _records: &[RunRecord]) -> Vec<TargetCheck> {
        Vec::new()
    }

    fn cells(&self, quick: bool) -> Vec<Cell> {
        cells(quick)
    }
}

/// The matrix section of the report from the verdicts on its cells:
/// counts, every design cell with its ratio, the sweep as a grid of
/// ratios, and every miss with its evidence.
fn section(all: &[CellVerdict], runs: &[RunRecord]) -> String {
    let mut out = String::new();
    let misses: Vec<&CellVerdict> = all.iter().filter(|v| !v.met()).collect();
    let design: Vec<&CellVerdict> = all.iter().filter(|v| v.row.is_some()).collect();
    let sweep: Vec<&CellVerdict> = all.iter().filter(|v| v.row.is_none()).collect();
    let seeds = all.iter().map(|v| v.stn.seeds).min().unwrap_or(0);
    let _ = writeln!(
        out,
        "Gate per cell over {seeds} seeds: stn ≤ best other × (1 + max(2 %, one RTT per call)); \
         at retry 0 stn's failed calls ≤ best other's + {FAIL_ALLOWANCE_PER_100} per 100 successes. \
         **{} cells ({} design, {} outage sweep), {} misses.**\n",
        all.len(),
        design.len(),
        sweep.len(),
        misses.len()
    );
    out.push_str(&cost_paragraph(runs, "matrix", all));
    if !design.is_empty() {
        out.push_str("### Design cells (pairwise covering design)\n\n");
        out.push_str(&verdict_header(&["#"]));
        for (i, v) in design.iter().enumerate() {
            let _ = writeln!(out, "| {} {}", i + 1, verdict_row(v));
        }
        out.push('\n');
    }
    if !sweep.is_empty() {
        out.push_str(
            "### Outage sweep: one call through an outage of R s from t = 0 (stn / best other; `*` = miss; `c` = the cost criteria missed, reported only)\n\n",
        );
        let mut platforms: Vec<&str> = Vec::new();
        for v in &sweep {
            if !platforms.contains(&v.platform.as_str()) {
                platforms.push(v.platform.as_str());
            }
        }
        for p in platforms {
            let _ = writeln!(out, "#### {p}\n");
            out.push_str("| R (s) | .0 | .1 | .2 | .3 | .4 | .5 | .6 | .7 | .8 | .9 |\n");
            out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
            let mine: Vec<&&CellVerdict> = sweep.iter().filter(|v| v.platform == p).collect();
            let secs = |v: &CellVerdict| {
                crate::report::table::first_number(v.scenario.trim_start_matches("sweep outage-"))
                    .unwrap_or(0.0)
            };
            let max_whole = mine.iter().map(|v| secs(v) as u64).max().unwrap_or(0);
            for whole in 0..=max_whole {
                let mut row = format!("| {whole} |");
                for tenth in 0..10u64 {
                    let cell = mine.iter().find(|v| {
                        let tenths = (secs(v) * 10.0).round() as u64;
                        tenths == whole * 10 + tenth
                    });
                    match cell {
                        Some(v) => {
                            let cost_miss = v.cost_check().is_some_and(|c| !c.met());
                            let _ = write!(
                                row,
                                " {:.2}{}{} |",
                                v.ratio,
                                if v.met() { "" } else { "*" },
                                if cost_miss { "c" } else { "" }
                            );
                        }
                        None => row.push_str(" |"),
                    }
                }
                out.push_str(&row);
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out.push_str(&cost_by_kind(runs));
    if !misses.is_empty() {
        out.push_str(
            "### Misses (evidence from the runs; cause as traced, `stn-sim/miss-reasons.txt`)\n\n",
        );
        for v in &misses {
            let _ = writeln!(out, "{}", miss_line(v, &evidence_and_cause(v)));
        }
        out.push('\n');
    }
    out
}

/// What kind of matrix cell `scenario` names: a design cell without an
/// outage, with one, with a flapping link, or the outage sweep.
fn cell_kind(scenario: &str) -> &'static str {
    if scenario.starts_with("sweep ") {
        "outage sweep (one call)"
    } else if scenario.contains(" flap-") {
        "design, flap"
    } else if scenario.contains(" out-none") {
        "design, steady"
    } else {
        "design, outage"
    }
}

/// The matrix's cost per success by kind of cell, every cell, platform
/// and seed of a kind summed (`""` without runs).
fn cost_by_kind(runs: &[RunRecord]) -> String {
    let mine: Vec<&RunRecord> = runs.iter().filter(|r| r.suite == "matrix").collect();
    let Some(t) = crate::report::cost::grouped_table("cells", &mine, |r| cell_kind(&r.scenario))
    else {
        return String::new();
    };
    format!(
        "### Cost per success by kind of cell (every cell, platform and seed of a kind summed)\n\n{}\n",
        t.to_markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::covering::uncovered_pairs;

    #[test]
    fn cells_are_grouped_by_kind_for_their_cost() {
        let kinds: Vec<&str> = cells(true).iter().map(|c| cell_kind(&c.name)).collect();
        for kind in [
            "design, steady",
            "design, outage",
            "design, flap",
            "outage sweep (one call)",
        ] {
            assert!(kinds.contains(&kind), "no {kind} cell");
        }
    }

    #[test]
    fn the_design_covers_every_pair_of_axis_values() {
        let cells = design_cells(true);
        let rows: Vec<Vec<usize>> = cells.iter().filter_map(|c| c.row.clone()).collect();
        assert!(uncovered_pairs(&axis_sizes(), &rows).is_empty());
        // Far fewer than the product, not fewer than the two largest axes.
        assert!(rows.len() >= 50 && rows.len() <= 90, "{} cells", rows.len());
        // Names are unique per platform: they key the gate and the known misses.
        let mut names: Vec<String> = cells
            .iter()
            .chain(&sweep_cells())
            .map(|c| format!("{} {}", c.platform.name(), c.name))
            .collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn axis_values_reach_the_path() {
        let cells = design_cells(true);
        let one_way_up = cells.iter().any(|c| {
            let at = c.path.up.at(Instant::ZERO);
            matches!(at.loss, LossModel::Bernoulli { p } if (p - 0.3).abs() < 1e-9)
                && c.path.down.at(Instant::ZERO).loss == LossModel::percent(0.0)
        });
        assert!(one_way_up, "a cell with 30 % loss up only");
        assert!(cells.iter().any(|c| c.name.contains(" flap-")));
        assert!(cells
            .iter()
            .any(|c| c.name.contains(" bbrbbbl ") || c.name.contains(" brbbbl ")));
        let sweep = sweep_cells();
        assert_eq!(sweep.len(), 3 * SWEEP_STEPS as usize);
        assert_eq!(sweep[122].name, "sweep outage-12.3s");
    }
}
