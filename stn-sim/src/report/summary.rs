//! The short summary `stn-sim bench` prints on stdout (issue 13 point 9):
//! a headline table of stn against the best other client per suite and
//! platform, the targets met and missed, each per-cell gate's count and
//! misses, and where the full report is. Like every report, a pure
//! function of the records.

use std::fmt::Write as _;

use crate::bench::gate::CellVerdict;
use crate::bench::record::{Report, RunRecord};
use crate::report::table::ordered;

/// Clients that are not "another client" to compare stn with.
fn is_other(client: &str) -> bool {
    !matches!(client, "stn" | "stn-tuned" | "oracle")
}

/// Misses listed by name before the rest are only counted.
const LISTED: usize = 8;

/// One headline row: stn against the best other client (lowest total) in
/// each scenario of `suite` on `platform`, as the range of the ratios and
/// the count of scenarios where stn is at or below the best.
fn headline_row(suite: &str, platform: &str, runs: &[&RunRecord]) -> Option<String> {
    let mine: Vec<&RunRecord> = runs
        .iter()
        .copied()
        .filter(|r| r.suite == suite && r.platform == platform)
        .collect();
    let time = |r: &RunRecord| r.completion_s.unwrap_or(r.total_s);
    let mut ratios = Vec::new();
    for scenario in ordered(&mine, |r| r.scenario.as_str()) {
        let here: Vec<&RunRecord> = mine
            .iter()
            .copied()
            .filter(|r| r.scenario == scenario && r.run == 0)
            .collect();
        let Some(stn) = here.iter().find(|r| r.client == "stn") else {
            continue;
        };
        let best = here
            .iter()
            .filter(|r| is_other(&r.client) && r.ok)
            .map(|r| time(r))
            .fold(f64::INFINITY, f64::min);
        if best.is_finite() && best > 0.0 {
            ratios.push(time(stn) / best);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    let wins = ratios.iter().filter(|r| **r <= 1.0).count();
    Some(format!(
        "| {suite} | {platform} | {lo:.3}–{hi:.3}× | {wins} of {} |",
        ratios.len()
    ))
}

/// The first [`LISTED`] of `items` as sub-items, then how many more.
fn list_some(out: &mut String, items: Vec<String>) {
    for i in items.iter().take(LISTED) {
        let _ = writeln!(out, "  - {i}");
    }
    if items.len() > LISTED {
        let _ = writeln!(out, "  - … and {} more", items.len() - LISTED);
    }
}

fn gate_lines(out: &mut String, name: &str, verdicts: &[CellVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let misses: Vec<&CellVerdict> = verdicts.iter().filter(|v| !v.met()).collect();
    let _ = writeln!(
        out,
        "- **{name} gate**: {} of {} cells met, {} missed",
        verdicts.len() - misses.len(),
        verdicts.len(),
        misses.len()
    );
    list_some(
        out,
        misses
            .iter()
            .map(|v| {
                let fails = if v.fail_ok {
                    String::new()
                } else {
                    format!(
                        "; fails {:.1} vs {:.1} per 100 at retry 0",
                        v.stn.fail_per_100, v.best_fail_per_100
                    )
                };
                format!(
                    "`{}`: {:.2}× (allowed {:.2}×){fails}; {}",
                    v.key(),
                    v.ratio,
                    v.allowed,
                    crate::bench::gate::cause_text(v)
                )
            })
            .collect(),
    );
}

/// The summary of `report`, run as `command`, whose files are in `dir`.
pub fn summary(report: &Report, command: &str, dir: &str) -> String {
    let runs: Vec<&RunRecord> = report.runs.iter().collect();
    let mut out = format!(
        "# stn benchmark summary\n\n`{command}`: {} runs, virtual time (same command, same numbers).\n\n",
        runs.len()
    );
    let mut rows = Vec::new();
    for suite in ordered(&runs, |r| r.suite.as_str()) {
        if matches!(suite, "matrix" | "tls" | "tls_idempotent") {
            continue; // gated per cell below
        }
        let these: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.suite == suite).collect();
        for platform in ordered(&these, |r| r.platform.as_str()) {
            rows.extend(headline_row(suite, platform, &these));
        }
    }
    if !rows.is_empty() {
        out.push_str(
            "## stn against the best other client (time; < 1 = stn faster; the first run of each scenario)\n\n",
        );
        out.push_str("| suite | platform | stn / best other | scenarios where stn ≤ best |\n|---|---|---|---|\n");
        for r in rows {
            out.push_str(&r);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str("## Targets and gates\n\n");
    let mut any = false;
    for client in ["stn", "stn-tuned"] {
        let checks = crate::bench::targets::evaluate(&report.runs, client);
        if checks.is_empty() {
            continue;
        }
        any = true;
        let missed: Vec<_> = checks.iter().filter(|c| !c.met).collect();
        let _ = writeln!(
            out,
            "- **`{client}` targets**: {} of {} met, {} missed",
            checks.len() - missed.len(),
            checks.len(),
            missed.len()
        );
        list_some(
            &mut out,
            missed
                .iter()
                .map(|c| {
                    format!(
                        "{} {} {}: {} {:.2} (bound {:.2})",
                        c.suite, c.platform, c.scenario, c.target, c.measured, c.bound
                    )
                })
                .collect(),
        );
    }
    let matrix = crate::bench::gate::verdicts(&report.runs);
    let tls = crate::bench::tls_suite::verdicts(&report.runs);
    let idempotent = crate::bench::tls_suite::idempotent_verdicts(&report.runs);
    any |= !matrix.is_empty() || !tls.is_empty() || !idempotent.is_empty();
    gate_lines(&mut out, "matrix", &matrix);
    gate_lines(&mut out, "tls", &tls);
    gate_lines(&mut out, "tls_idempotent", &idempotent);
    if !any {
        out.push_str("- none apply to the suites that ran\n");
    }
    let _ = writeln!(
        out,
        "\nFull report (every table, the fidelity section, every target and cell): `{dir}/report.md`; \
         records: `{dir}/report.json`; charts beside them."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::{rec, single};

    #[test]
    fn the_summary_has_the_headline_the_targets_and_the_report_path() {
        let mut report = Report::new(1);
        let mut a = rec("loss", "loss-30%", "ios", "stn", 0);
        a.total_s = 50.0;
        let mut b = rec("loss", "loss-30%", "ios", "mars-2017", 0);
        b.total_s = 100.0;
        let mut c = rec("loss", "loss-30%", "ios", "nsurlsession", 0);
        c.total_s = 80.0;
        report.runs.extend([a, b, c]);
        report
            .runs
            .push(single("outage-5s", "ios", "stn", 0, Some(5.4), 0.0));
        let s = summary(&report, "stn-sim bench --seed 1", "out");
        assert!(s.starts_with("# stn benchmark summary\n\n`stn-sim bench --seed 1`: 4 runs"));
        assert!(s.contains("| loss | ios | 0.625–0.625× | 1 of 1 |"), "{s}");
        assert!(s.contains("- **`stn` targets**: "), "{s}");
        assert!(s.contains("`out/report.md`"), "{s}");
        // Far shorter than the full report.
        assert!(s.lines().count() < 30);
    }
}
