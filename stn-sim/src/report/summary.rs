//! The short summary `stn-sim bench` prints on stdout: a headline table of stn against the best other client per suite and
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

/// A scenario where stn was slower than the best other client.
struct Lost {
    suite: String,
    platform: String,
    scenario: String,
    ratio: f64,
    winner: String,
}

/// One headline row: stn against the best other client (lowest total) in
/// each scenario of `suite` on `platform`, as the range of the ratios and
/// the count of scenarios where stn is at or below the best; the scenarios
/// it lost go to `lost`.
fn headline_row(
    suite: &str,
    platform: &str,
    runs: &[&RunRecord],
    lost: &mut Vec<Lost>,
) -> Option<String> {
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
            .min_by(|a, b| time(a).total_cmp(&time(b)));
        if let Some(best) = best.filter(|b| time(b) > 0.0) {
            let ratio = time(stn) / time(best);
            if ratio > 1.0 {
                lost.push(Lost {
                    suite: suite.to_owned(),
                    platform: platform.to_owned(),
                    scenario: scenario.to_owned(),
                    ratio,
                    winner: best.client.clone(),
                });
            }
            ratios.push(ratio);
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

fn gate_lines(out: &mut String, runs: &[RunRecord], name: &str, verdicts: &[CellVerdict]) {
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
    let checks: Vec<_> = verdicts
        .iter()
        .filter_map(CellVerdict::cost_check)
        .collect();
    let whole = crate::bench::gate::ConnectCheck::of(runs, name)
        .map_or_else(|| "no connects for stn and mars".to_owned(), |c| c.text());
    let _ = writeln!(
        out,
        "  - cost criteria (reported, not gated yet): {} of {} cells met; whole suite: {whole}",
        checks.iter().filter(|c| c.met()).count(),
        checks.len()
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

/// The cost per success of every client in every suite, summed over the
/// suite's runs, or `""` without runs.
fn cost_section(runs: &[&RunRecord]) -> String {
    let Some(t) = crate::report::cost::grouped_table("suite", runs, |r| r.suite.as_str()) else {
        return String::new();
    };
    format!(
        "## Cost per success (each suite's runs summed; SYNs at server and wasted handshakes as the simulated server counts them)\n\n{}\n",
        t.to_markdown()
    )
}

/// The summary of `report`, run as `command`, whose files are in `dir`.
pub fn summary(report: &Report, command: &str, dir: &str) -> String {
    let runs: Vec<&RunRecord> = report.runs.iter().collect();
    let mut out = format!(
        "# stn benchmark summary\n\n`{command}`: {} runs, virtual time (same command, same numbers).\n\n",
        runs.len()
    );
    let mut rows = Vec::new();
    let mut lost = Vec::new();
    for suite in ordered(&runs, |r| r.suite.as_str()) {
        if crate::bench::suites::named(suite).is_some_and(|s| !s.in_headline()) {
            continue; // gated per cell below, or no comparable time
        }
        let these: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.suite == suite).collect();
        for platform in ordered(&these, |r| r.platform.as_str()) {
            rows.extend(headline_row(suite, platform, &these, &mut lost));
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
        if lost.is_empty() {
            out.push_str(
                "lost: none (stn at or below the best other client in every scenario above)\n\n",
            );
        } else {
            let _ = writeln!(
                out,
                "lost: {} {} where stn was slower than the best other client:",
                lost.len(),
                if lost.len() == 1 {
                    "scenario"
                } else {
                    "scenarios"
                }
            );
            list_some(
                &mut out,
                lost.iter()
                    .map(|l| {
                        format!(
                            "{} {} {}: {:.3}× {}",
                            l.suite, l.platform, l.scenario, l.ratio, l.winner
                        )
                    })
                    .collect(),
            );
            out.push('\n');
        }
    }
    for suite in ordered(&runs, |r| r.suite.as_str()) {
        let section = crate::bench::suites::named(suite)
            .map(|s| s.summary_section(&report.runs))
            .unwrap_or_default();
        if !section.is_empty() {
            let _ = write!(out, "## Suite `{suite}`\n\n{section}");
        }
    }
    out.push_str(&cost_section(&runs));
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
    for (suite, verdicts) in crate::bench::suites::gate_verdicts(&report.runs) {
        any = true;
        gate_lines(&mut out, &report.runs, suite.name(), &verdicts);
    }
    if !any {
        out.push_str("- none apply to the suites that ran\n");
    }
    if runs.iter().any(|r| r.client == "stn-tuned") {
        let _ = writeln!(
            out,
            "\n`stn-tuned` is not the default profile: stn with one constant overridden to show \
             what it would change ({}); `--no-tuned` leaves it out.",
            crate::bench::client_kind::STN_TUNED_NOTE
                .trim_start_matches("TUNED, not the default: ")
        );
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
        assert!(s.contains("lost: none"), "{s}");
        assert!(s.contains("`out/report.md`"), "{s}");
        // The cost table: one row per suite and client.
        assert!(s.contains("## Cost per success"), "{s}");
        assert!(s.contains("| loss        | `stn`"), "{s}");
        // Far shorter than the full report.
        assert!(s.lines().count() < 40);
    }

    #[test]
    fn the_summary_names_the_scenarios_stn_lost_and_says_what_stn_tuned_is() {
        let mut report = Report::new(1);
        let mut a = rec("loss", "3g", "android", "stn", 0);
        a.total_s = 101.0;
        let mut b = rec("loss", "3g", "android", "okhttp-2017", 0);
        b.total_s = 100.0;
        let mut c = rec("loss", "3g", "android", "stn-tuned", 0);
        c.total_s = 90.0;
        report.runs.extend([a, b, c]);
        let s = summary(&report, "stn-sim bench", "out");
        assert!(s.contains("lost: 1 scenario where"), "{s}");
        assert!(s.contains("  - loss android 3g: 1.010× okhttp-2017"), "{s}");
        assert!(s.contains("`stn-tuned` is not the default profile"), "{s}");
    }
}
