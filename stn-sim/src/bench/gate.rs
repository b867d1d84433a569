//! The matrix gate (issue 11 point 2), evaluated on records.
//!
//! Per cell of [`crate::bench::matrix`], over its seeds: stn's mean time
//! must be at most the best other client's (mars-2017, mars, the peers as
//! benchmarked and as recommended, on the same TCP) plus a tolerance of the
//! larger of 2 % and one RTT per call; at retry 0, stn's failed calls per
//! 100 successes must be at most the best other's + 1. The time is a
//! design cell's total (first call's start to last call's end) and a sweep
//! cell's completion (a failed call counts as the whole 300 s window).
//!
//! Every miss carries its evidence: the figures of the runs that show where
//! stn's time went against the best other client (failures, connects per
//! call, slow calls), and its cause as traced (`docs/matrix.md` says how to
//! replay a cell): one line per cell in `stn-sim/miss-reasons.txt`, embedded
//! here ([`REASONS`]), or "cause not traced".

use std::fmt::Write as _;

use crate::bench::matrix::{cells, Cell};
use crate::bench::record::{GateMiss, RunRecord};

/// The traced cause of each missed cell, `platform scenario | cause` per
/// line (`stn-sim/miss-reasons.txt`, the one place these causes live).
pub const REASONS: &str = include_str!("../../miss-reasons.txt");

/// What a miss whose cell has no line in [`REASONS`] prints.
pub const NOT_TRACED: &str = "cause not traced";

/// Reads a reasons file: `key | cause` per line; lines starting with `#`
/// and blank lines are skipped, as is a line without ` | `.
pub fn parse_reasons(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(" | "))
        .map(|(k, c)| (k.trim(), c.trim()))
        .collect()
}

/// The traced cause of the cell `key`, from [`REASONS`].
pub fn cause(key: &str) -> Option<&'static str> {
    parse_reasons(REASONS)
        .into_iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| c)
}

/// What counts as a failure-gate allowance: calls per 100 successes.
pub const FAIL_ALLOWANCE_PER_100: f64 = 1.0;

/// The smallest relative tolerance on time.
pub const MIN_TOLERANCE: f64 = 0.02;

/// A sweep call that failed counts as this many seconds (the run window).
const FAILED_SINGLE_S: f64 = 300.0;

/// One client's figures in one cell, means over its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientFigures {
    /// Client name.
    pub client: String,
    /// Mean time (see the module docs), s.
    pub time_s: f64,
    /// Mean failed calls per 100 successes.
    pub fail_per_100: f64,
    /// Mean connection attempts per call, when known.
    pub connects_per_call: Option<f64>,
    /// Mean p95 of successful calls, s.
    pub p95_s: f64,
    /// Seeds seen.
    pub seeds: usize,
}

/// The verdict on one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct CellVerdict {
    /// TCP platform (`ios`, `android`, `android-6.5`).
    pub platform: String,
    /// The cell's scenario name.
    pub scenario: String,
    /// The design row, `None` for a sweep cell.
    pub row: Option<Vec<usize>>,
    /// stn's figures.
    pub stn: ClientFigures,
    /// The best other client's figures (lowest mean time).
    pub best: ClientFigures,
    /// The lowest failure rate among the other clients.
    pub best_fail_per_100: f64,
    /// The oracle's mean time, s.
    pub oracle_s: Option<f64>,
    /// stn / best other.
    pub ratio: f64,
    /// The largest ratio that passes (1 + tolerance / best).
    pub allowed: f64,
    /// The failure gate applies (retry 0).
    pub retry0: bool,
    /// stn's time within tolerance.
    pub time_ok: bool,
    /// stn's failures within the allowance (always true above retry 0).
    pub fail_ok: bool,
}

impl CellVerdict {
    /// `platform scenario`: the key of the known-misses list.
    pub fn key(&self) -> String {
        format!("{} {}", self.platform, self.scenario)
    }

    /// Whether the cell passes the gate.
    pub fn met(&self) -> bool {
        self.time_ok && self.fail_ok
    }

    /// The evidence line of a miss (empty for a pass): the runs' figures
    /// that locate stn's loss against the best other client.
    pub fn evidence(&self) -> String {
        if self.met() {
            return String::new();
        }
        let (s, b) = (&self.stn, &self.best);
        let mut parts = Vec::new();
        if !self.fail_ok {
            parts.push(format!(
                "fails {:.1}/100 calls vs {:.1}/100 for the best other",
                s.fail_per_100, self.best_fail_per_100
            ));
        }
        if !self.time_ok {
            parts.push(format!(
                "{:.2} s vs {} {:.2} s",
                s.time_s, b.client, b.time_s
            ));
            if s.fail_per_100 > b.fail_per_100 + 0.5 {
                parts.push(format!(
                    "failures {:.1} vs {:.1}/100",
                    s.fail_per_100, b.fail_per_100
                ));
            }
            if let (Some(x), Some(y)) = (s.connects_per_call, b.connects_per_call) {
                if x > y * 1.1 {
                    parts.push(format!("connects/call {x:.2} vs {y:.2}"));
                }
            }
            if s.p95_s > b.p95_s * 1.1 && s.p95_s > 0.0 {
                parts.push(format!("p95 {:.2} s vs {:.2} s", s.p95_s, b.p95_s));
            }
        }
        parts.join("; ")
    }
}

fn figures(client: &str, runs: &[&RunRecord], single: bool) -> ClientFigures {
    let n = runs.len().max(1) as f64;
    let time = |r: &RunRecord| {
        if single {
            r.completion_s.unwrap_or(FAILED_SINGLE_S)
        } else {
            r.total_s
        }
    };
    let fail = |r: &RunRecord| {
        let failed = r.attempts.saturating_sub(r.successes) as f64;
        failed * 100.0 / (r.successes.max(1) as f64)
    };
    let connects: Option<Vec<f64>> = runs
        .iter()
        .map(|r| r.connects.map(|c| c as f64 / r.attempts.max(1) as f64))
        .collect();
    ClientFigures {
        client: client.to_owned(),
        time_s: runs.iter().map(|r| time(r)).sum::<f64>() / n,
        fail_per_100: runs.iter().map(|r| fail(r)).sum::<f64>() / n,
        connects_per_call: connects.map(|v| v.iter().sum::<f64>() / n),
        p95_s: runs.iter().map(|r| r.p95_s).sum::<f64>() / n,
        seeds: runs.len(),
    }
}

/// The verdict on `cell` from its records (`None` when stn or every other
/// client is missing).
pub fn verdict(cell: &Cell, records: &[&RunRecord]) -> Option<CellVerdict> {
    let single = cell.calls.is_none();
    let mut by_client: Vec<(&str, Vec<&RunRecord>)> = Vec::new();
    for r in records {
        match by_client.iter_mut().find(|(c, _)| *c == r.client) {
            Some((_, v)) => v.push(r),
            None => by_client.push((r.client.as_str(), vec![r])),
        }
    }
    let fig = |name: &str| {
        by_client
            .iter()
            .find(|(c, _)| *c == name)
            .map(|(c, v)| figures(c, v, single))
    };
    let stn = fig("stn")?;
    let others: Vec<ClientFigures> = by_client
        .iter()
        .filter(|(c, _)| !matches!(*c, "stn" | "stn-tuned" | "oracle"))
        .map(|(c, v)| figures(c, v, single))
        .collect();
    let best = others
        .iter()
        .min_by(|a, b| a.time_s.total_cmp(&b.time_s))?
        .clone();
    let best_fail = others
        .iter()
        .map(|o| o.fail_per_100)
        .fold(f64::INFINITY, f64::min);
    let calls = records
        .iter()
        .filter(|r| r.client == "oracle")
        .map(|r| r.successes.max(1))
        .max()
        .or(cell.calls)
        .unwrap_or(1) as f64;
    let tol = (MIN_TOLERANCE * best.time_s).max(calls * cell.rtt.as_secs_f64());
    let retry0 = cell.retry == Some(0) && !single;
    let ratio = if best.time_s > 0.0 {
        stn.time_s / best.time_s
    } else {
        f64::INFINITY
    };
    Some(CellVerdict {
        platform: cell.platform.name().to_owned(),
        scenario: cell.name.clone(),
        row: cell.row.clone(),
        time_ok: stn.time_s <= best.time_s + tol,
        fail_ok: !retry0 || stn.fail_per_100 <= best_fail + FAIL_ALLOWANCE_PER_100,
        allowed: if best.time_s > 0.0 {
            1.0 + tol / best.time_s
        } else {
            f64::INFINITY
        },
        ratio,
        retry0,
        oracle_s: fig("oracle").map(|o| o.time_s),
        stn,
        best,
        best_fail_per_100: best_fail,
    })
}

/// Every miss of the matrix and tls gates in `records`, with its evidence
/// and traced cause (the `misses` of `report.json`).
pub fn misses(records: &[RunRecord]) -> Vec<GateMiss> {
    let matrix = verdicts(records).into_iter().map(|v| ("matrix", v));
    let tls = crate::bench::tls_suite::verdicts(records)
        .into_iter()
        .map(|v| ("tls", v));
    let idempotent = crate::bench::tls_suite::idempotent_verdicts(records)
        .into_iter()
        .map(|v| ("tls_idempotent", v));
    matrix
        .chain(tls)
        .chain(idempotent)
        .filter(|(_, v)| !v.met())
        .map(|(suite, v)| GateMiss {
            suite: suite.to_owned(),
            key: v.key(),
            ratio: v.ratio,
            allowed: v.allowed,
            evidence: v.evidence(),
            cause: cause(&v.key()).map(str::to_owned),
        })
        .collect()
}

/// The verdicts on every matrix cell that has records, in cell order.
pub fn verdicts(records: &[RunRecord]) -> Vec<CellVerdict> {
    verdicts_in(records, crate::bench::Suite::Matrix, &cells(false))
}

/// The verdicts on every cell of `cells` (cells of `suite`) that has
/// records, in cell order.
pub fn verdicts_in(
    records: &[RunRecord],
    suite: crate::bench::Suite,
    cells: &[Cell],
) -> Vec<CellVerdict> {
    let matrix: Vec<&RunRecord> = records.iter().filter(|r| r.suite == suite.name()).collect();
    if matrix.is_empty() {
        return Vec::new();
    }
    let mut by_cell: std::collections::BTreeMap<(&str, &str), Vec<&RunRecord>> =
        std::collections::BTreeMap::new();
    for r in matrix {
        by_cell
            .entry((r.platform.as_str(), r.scenario.as_str()))
            .or_default()
            .push(r);
    }
    cells
        .iter()
        .filter_map(|cell| {
            let mine = by_cell.get(&(cell.platform.name(), cell.name.as_str()))?;
            verdict(cell, mine)
        })
        .collect()
}

/// Reads a known-misses list: one `platform scenario` key per line; `#`
/// starts a comment; blank lines are skipped.
pub fn parse_known_misses(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Checks `verdicts` against a known-misses list: the misses not on it
/// (a cell that passed starts to miss: CI fails) and the listed cells that
/// now pass (to be removed: the list may only shrink).
pub fn check_known(verdicts: &[CellVerdict], known: &[String]) -> (Vec<String>, Vec<String>) {
    let new_misses = verdicts
        .iter()
        .filter(|v| !v.met() && !known.contains(&v.key()))
        .map(CellVerdict::key)
        .collect();
    let fixed = verdicts
        .iter()
        .filter(|v| v.met() && known.contains(&v.key()))
        .map(CellVerdict::key)
        .collect();
    (new_misses, fixed)
}

/// The listed known misses that have no traced cause in [`REASONS`]
/// (the gate refuses a list that names a miss nobody traced).
pub fn untraced(known: &[String]) -> Vec<String> {
    known
        .iter()
        .filter(|k| cause(k).is_none())
        .cloned()
        .collect()
}

/// The known-misses file for `verdicts`: every miss, with its ratio and
/// evidence as a comment (the cause is the cell's line in [`REASONS`]).
pub fn known_misses_file(verdicts: &[CellVerdict], command: &str) -> String {
    let mut out = format!(
        "# Cells where stn misses the gate (matrix: issue 11; tls: issue 12), from `{command}`.\n\
         # CI fails when a cell not listed here misses; remove a line when its cell passes.\n\
         # Each cell's traced cause is its line in stn-sim/miss-reasons.txt (the gate requires one).\n"
    );
    for v in verdicts.iter().filter(|v| !v.met()) {
        let _ = writeln!(
            out,
            "{}  # {:.2}x (allowed {:.2}x): {}",
            v.key(),
            v.ratio,
            v.allowed,
            v.evidence()
        );
    }
    out
}

/// A cell's table row from its platform on (`| tcp | cell | best other |
/// stn s | best s | oracle s | stn / best | allowed | fail/100 | gate |`).
pub fn verdict_row(v: &CellVerdict) -> String {
    let fail = if v.retry0 {
        format!("{:.1} / {:.1}", v.stn.fail_per_100, v.best_fail_per_100)
    } else {
        "-".to_owned()
    };
    format!(
        "| {} | `{}` | {} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {fail} | {} |",
        v.platform,
        v.scenario,
        v.best.client,
        v.stn.time_s,
        v.best.time_s,
        v.oracle_s.map_or("-".to_owned(), |o| format!("{o:.2}")),
        v.ratio,
        v.allowed,
        mark(v)
    )
}

/// `cause: …` from [`REASONS`], or [`NOT_TRACED`].
pub fn cause_text(v: &CellVerdict) -> String {
    cause(&v.key()).map_or_else(|| NOT_TRACED.to_owned(), |c| format!("cause: {c}"))
}

/// A missed cell's evidence and cause, for the report's list of misses.
pub fn evidence_and_cause(v: &CellVerdict) -> String {
    format!("{}; {}", v.evidence(), cause_text(v))
}

/// A missed cell's list item: its key, ratio, allowance and `why`.
pub fn miss_line(v: &CellVerdict, why: &str) -> String {
    format!(
        "- `{}`: {:.2}× (allowed {:.2}×): {why}",
        v.key(),
        v.ratio,
        v.allowed
    )
}

fn mark(v: &CellVerdict) -> &'static str {
    if v.met() {
        "ok"
    } else {
        "**MISS**"
    }
}

/// The matrix section of the report: counts, every design cell with its
/// ratio, the sweep as a grid of ratios, and every miss with its evidence.
pub fn tables(records: &[&RunRecord]) -> String {
    let owned: Vec<RunRecord> = records.iter().map(|r| (*r).clone()).collect();
    let all = verdicts(&owned);
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
    if !design.is_empty() {
        out.push_str("### Design cells (pairwise covering design)\n\n");
        out.push_str("| # | tcp | cell | best other | stn s | best s | oracle s | stn / best | allowed | fail/100 stn / best (retry 0) | gate |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (i, v) in design.iter().enumerate() {
            let _ = writeln!(out, "| {} {}", i + 1, verdict_row(v));
        }
        out.push('\n');
    }
    if !sweep.is_empty() {
        out.push_str(
            "### Outage sweep: one call through an outage of R s from t = 0 (stn / best other; `*` = miss)\n\n",
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
                            let _ =
                                write!(row, " {:.2}{} |", v.ratio, if v.met() { "" } else { "*" });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::matrix::sweep_cells;
    use crate::report::table::tests::rec;

    fn run(client: &str, total: f64, attempts: u64, successes: u64, seed: u32) -> RunRecord {
        let mut r = rec("matrix", "x", "ios", client, seed);
        r.total_s = total;
        r.attempts = attempts;
        r.successes = successes;
        r
    }

    #[test]
    fn tolerance_is_the_larger_of_two_percent_and_one_rtt_per_call() {
        let mut cell = crate::bench::matrix::design_cells(true).remove(0);
        cell.retry = Some(0);
        cell.rtt = stn_proto::Duration::from_millis(100);
        // 10 calls: one RTT per call = 1 s on a 20 s best: 5 % > 2 %.
        let mut recs = Vec::new();
        for s in 0..5 {
            recs.push(run("stn", 20.9, 10, 10, s));
            recs.push(run("mars", 20.0, 10, 10, s));
            recs.push(run("oracle", 5.0, 10, 10, s));
        }
        let refs: Vec<&RunRecord> = recs.iter().collect();
        let v = verdict(&cell, &refs).unwrap();
        assert!(v.time_ok && v.fail_ok && v.met(), "{v:?}");
        assert!((v.allowed - 1.05).abs() < 1e-9);
        assert_eq!(v.best.client, "mars");
        // 21.1 s is beyond 20 + 1.
        for r in recs.iter_mut().filter(|r| r.client == "stn") {
            r.total_s = 21.1;
        }
        let refs: Vec<&RunRecord> = recs.iter().collect();
        let v = verdict(&cell, &refs).unwrap();
        assert!(!v.met());
        assert!(
            v.evidence().contains("21.10 s vs mars 20.00 s"),
            "{}",
            v.evidence()
        );
    }

    #[test]
    fn failures_at_retry_0_may_exceed_the_best_other_by_one_per_100() {
        let mut cell = crate::bench::matrix::design_cells(true).remove(0);
        cell.retry = Some(0);
        let mut recs = Vec::new();
        for s in 0..5 {
            recs.push(run("stn", 10.0, 102, 100, s)); // 2 per 100
            recs.push(run("okhttp-5", 50.0, 101, 100, s)); // 1 per 100
            recs.push(run("mars", 60.0, 100, 100, s)); // 0 per 100
        }
        let refs: Vec<&RunRecord> = recs.iter().collect();
        let v = verdict(&cell, &refs).unwrap();
        assert!(v.time_ok && !v.fail_ok, "{v:?}");
        assert!(v.evidence().starts_with("fails 2.0/100 calls vs 0.0/100"));
        // The same at the default retry count passes: no failure gate.
        cell.retry = None;
        assert!(verdict(&cell, &refs).unwrap().met());
    }

    #[test]
    fn known_misses_may_only_shrink() {
        let cell = &sweep_cells()[0];
        let mut recs = Vec::new();
        for s in 0..5 {
            let mut a = run("stn", 0.0, 1, 1, s);
            a.completion_s = Some(5.0);
            let mut b = run("mars", 0.0, 1, 1, s);
            b.completion_s = Some(1.0);
            recs.extend([a, b]);
        }
        let refs: Vec<&RunRecord> = recs.iter().collect();
        let miss = verdict(cell, &refs).unwrap();
        assert!(!miss.met());
        let key = miss.key();
        assert_eq!(key, "ios sweep outage-0.1s");
        let (new, fixed) = check_known(std::slice::from_ref(&miss), &[]);
        assert_eq!((new, fixed), (vec![key.clone()], vec![]));
        let listed = parse_known_misses(&format!("# comment\n\n{key}  # 5.00x\n"));
        assert_eq!(listed, vec![key.clone()]);
        assert_eq!(
            check_known(std::slice::from_ref(&miss), &listed),
            (vec![], vec![])
        );
        let mut pass = miss.clone();
        pass.time_ok = true;
        assert_eq!(check_known(&[pass], &listed), (vec![], vec![key]));
    }
    #[test]
    fn every_known_miss_has_a_traced_cause_and_every_cause_names_a_cell() {
        for list in [
            include_str!("../../matrix-known-misses.txt"),
            include_str!("../../tls-known-misses.txt"),
        ] {
            let known = parse_known_misses(list);
            assert_eq!(untraced(&known), Vec::<String>::new());
        }
        let mut keys: Vec<String> = cells(false).iter().map(Cell::key).collect();
        keys.extend(cells(true).iter().map(Cell::key));
        keys.extend(crate::bench::tls_suite::cells(false).iter().map(Cell::key));
        keys.extend(crate::bench::tls_suite::cells(true).iter().map(Cell::key));
        let reasons = parse_reasons(REASONS);
        assert!(!reasons.is_empty());
        for (key, why) in reasons {
            assert!(keys.iter().any(|k| k == key), "no cell `{key}`");
            assert!(!why.is_empty() && !why.contains('\n'), "`{key}`: {why:?}");
        }
    }

    #[test]
    fn a_miss_reports_its_traced_cause_or_says_it_is_not_traced() {
        // A design cell with a traced cause and a sweep cell without one
        // miss; the ios sweep cell passes (stn at the best other's time).
        const TRACED: &str = "rtt40 loss30% 3g jit0 bbl flap-1.75s/4.75s long retry-default";
        let mut recs = Vec::new();
        for (platform, scenario) in [
            ("ios", TRACED),
            ("android", "sweep outage-0.1s"),
            ("ios", "sweep outage-1.0s"),
        ] {
            for s in 0..5 {
                for (client, t) in [("stn", 19.23), ("mars-2017", 16.15)] {
                    let mut r = rec("matrix", scenario, platform, client, s);
                    if scenario == TRACED {
                        r.total_s = t;
                    } else {
                        r.attempts = 1;
                        r.successes = 1;
                        r.completion_s = Some(if platform == "ios" { 16.15 } else { t });
                    }
                    recs.push(r);
                }
            }
        }
        let misses = misses(&recs);
        let got: Vec<(&str, Option<&str>)> = misses
            .iter()
            .map(|m| (m.key.as_str(), m.cause.as_deref()))
            .collect();
        let traced = format!("ios {TRACED}");
        assert_eq!(
            got,
            [
                (traced.as_str(), cause(&traced)),
                ("android sweep outage-0.1s", None),
            ]
        );
        assert!(got[0].1.unwrap().contains("xnu's RTO"));
        assert!(misses
            .iter()
            .all(|m| m.suite == "matrix" && m.ratio > m.allowed));
        let refs: Vec<&RunRecord> = recs.iter().collect();
        let md = tables(&refs);
        assert!(md.contains("; cause not traced"), "{md}");
        assert!(
            md.contains(&format!("cause: {}", got[0].1.unwrap())),
            "{md}"
        );
    }
}
