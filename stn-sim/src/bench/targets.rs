//! Issue point 7 ("winning"): the targets, evaluated on records. Nothing
//! here bends a scenario; a missed target is reported with its figure.
//!
//! - loss suite, 30 % loss and above: `client`'s total time for the
//!   successes ≤ 0.75 × mars-2017's and ≤ 0.5 × the peer's (as benchmarked;
//!   and the recommended peers when the `recommended` suite ran), with at
//!   most 1.25 × mars-2017's attempts (calls started, the benchmark's
//!   "attempts");
//! - sensitivity: completion within 1.0 s of the oracle for every outage
//!   shorter than the task's deadline (40 s: the harness's default retry
//!   count 1), in the nominal and the fitted scenarios, and 20 s in the
//!   `/retry0` scenarios;
//! - clean 3G and 2G: total time ≤ 1.02 × mars-2017's;
//! - issue #3 point 6, in every suite and scenario where today's Mars
//!   profile (`mars`) ran too: at least as good as it — no fewer successes,
//!   total time (sensitivity: completion time) no longer.

use std::fmt::Write as _;

use crate::bench::record::RunRecord;

/// The task deadline in the sensitivity suite: (15 s + 5 s) × 2 tries.
pub const SENSITIVITY_DEADLINE_S: f64 = 40.0;

/// The task deadline of the `/retry0` sensitivity scenarios: 15 s + 5 s.
pub const RETRY0_DEADLINE_S: f64 = 20.0;

/// One evaluated target.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetCheck {
    /// What is compared, e.g. `total vs mars-2017`.
    pub target: String,
    /// Suite.
    pub suite: String,
    /// Scenario.
    pub scenario: String,
    /// Platform.
    pub platform: String,
    /// The client evaluated (`stn`, `stn-tuned`).
    pub client: String,
    /// The measured figure (a ratio, or seconds behind the oracle).
    pub measured: f64,
    /// The bound it must not exceed.
    pub bound: f64,
    /// `measured <= bound` (and the run succeeded where that matters).
    pub met: bool,
    /// Extra context (the raw figures).
    pub detail: String,
}

fn find<'a>(
    records: &'a [RunRecord],
    suite: &str,
    scenario: &str,
    platform: &str,
    client: &str,
    run: u32,
) -> Option<&'a RunRecord> {
    records.iter().find(|r| {
        r.suite == suite
            && r.scenario == scenario
            && r.platform == platform
            && r.client == client
            && r.run == run
    })
}

/// Evaluates every target for `client` on the records at hand (suites that
/// did not run are skipped).
pub fn evaluate(records: &[RunRecord], client: &str) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    // The matrix and the tls suite have their own per-cell gate
    // (`crate::bench::gate`).
    let mine: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.client == client && !matches!(r.suite.as_str(), "matrix" | "tls"))
        .collect();
    for r in &mine {
        let ratio = |other: &RunRecord, what: &str, bound: f64, out: &mut Vec<TargetCheck>| {
            let measured = if other.total_s > 0.0 {
                r.total_s / other.total_s
            } else {
                f64::INFINITY
            };
            out.push(TargetCheck {
                target: format!("total vs {what}"),
                suite: r.suite.clone(),
                scenario: r.scenario.clone(),
                platform: r.platform.clone(),
                client: client.to_owned(),
                measured,
                bound,
                met: r.ok && measured <= bound,
                detail: format!(
                    "{:.1} s vs {:.1} s ({} vs {} successes)",
                    r.total_s, other.total_s, r.successes, other.successes
                ),
            });
        };
        if let Some(m) = find(records, &r.suite, &r.scenario, &r.platform, "mars", r.run) {
            out.push(versus_mars(r, m, client));
        }
        match r.suite.as_str() {
            "loss" | "recommended" => {
                let lossy = ["loss-30%", "loss-50%", "loss-70%"].contains(&r.scenario.as_str());
                if lossy {
                    if r.suite == "loss" {
                        if let Some(m) = find(
                            records,
                            "loss",
                            &r.scenario,
                            &r.platform,
                            "mars-2017",
                            r.run,
                        ) {
                            ratio(m, "mars-2017", 0.75, &mut out);
                            let measured = r.attempts as f64 / (m.attempts.max(1)) as f64;
                            out.push(TargetCheck {
                                target: "attempts vs mars-2017".into(),
                                suite: r.suite.clone(),
                                scenario: r.scenario.clone(),
                                platform: r.platform.clone(),
                                client: client.to_owned(),
                                measured,
                                bound: 1.25,
                                met: measured <= 1.25,
                                detail: format!(
                                    "{} vs {} calls; connects {:?} vs {:?}",
                                    r.attempts, m.attempts, r.connects, m.connects
                                ),
                            });
                        }
                    }
                    for peer in [
                        "nsurlsession",
                        "okhttp-2017",
                        "nsurlsession-shared",
                        "okhttp-5",
                    ] {
                        if let Some(p) =
                            find(records, &r.suite, &r.scenario, &r.platform, peer, r.run)
                        {
                            ratio(p, peer, 0.5, &mut out);
                        }
                    }
                }
                if r.suite == "loss" && (r.scenario == "3g" || r.scenario == "2g") {
                    if let Some(m) = find(
                        records,
                        "loss",
                        &r.scenario,
                        &r.platform,
                        "mars-2017",
                        r.run,
                    ) {
                        ratio(m, "mars-2017 (clean)", 1.02, &mut out);
                    }
                }
            }
            "sensitivity" => {
                let Some(o) = find(
                    records,
                    "sensitivity",
                    &r.scenario,
                    &r.platform,
                    "oracle",
                    r.run,
                ) else {
                    continue;
                };
                let Some(oracle_done) = o.completion_s else {
                    continue;
                };
                let deadline = if r.scenario.ends_with("/retry0") {
                    RETRY0_DEADLINE_S
                } else {
                    SENSITIVITY_DEADLINE_S
                };
                if oracle_done >= deadline {
                    continue; // not shorter than the task's deadline
                }
                let behind = r.completion_s.map_or(f64::INFINITY, |c| c - oracle_done);
                out.push(TargetCheck {
                    target: "completion − oracle (s)".into(),
                    suite: r.suite.clone(),
                    scenario: r.scenario.clone(),
                    platform: r.platform.clone(),
                    client: client.to_owned(),
                    measured: behind,
                    bound: 1.0,
                    met: behind <= 1.0,
                    detail: format!(
                        "{} vs oracle {oracle_done:.2} s",
                        r.completion_s
                            .map_or("fail".to_owned(), |c| format!("{c:.2} s"))
                    ),
                });
            }
            _ => {}
        }
    }
    out
}

/// `r` against the `mars` profile's run `m` of the same scenario: the ratio
/// of completion times (sensitivity) or total times (elsewhere), ≤ 1, with
/// at least as many successes. A run that fails where Mars succeeds is
/// infinitely worse; both failing is a tie.
fn versus_mars(r: &RunRecord, m: &RunRecord, client: &str) -> TargetCheck {
    let (measured, detail) = if r.suite == "sensitivity" {
        let show = |c: Option<f64>| c.map_or("fail".to_owned(), |c| format!("{c:.2} s"));
        let measured = match (r.completion_s, m.completion_s) {
            (Some(a), Some(b)) if b > 0.0 => a / b,
            (None, None) | (Some(_), None) => 0.0,
            _ => f64::INFINITY,
        };
        let detail = format!("{} vs {}", show(r.completion_s), show(m.completion_s));
        (measured, detail)
    } else {
        let measured = if r.successes < m.successes {
            f64::INFINITY
        } else if m.total_s > 0.0 {
            r.total_s / m.total_s
        } else {
            1.0
        };
        let detail = format!(
            "{:.4} s vs {:.4} s ({} vs {} successes)",
            r.total_s, m.total_s, r.successes, m.successes
        );
        (measured, detail)
    };
    TargetCheck {
        target: "no worse than mars".into(),
        suite: r.suite.clone(),
        scenario: r.scenario.clone(),
        platform: r.platform.clone(),
        client: client.to_owned(),
        measured,
        bound: 1.0,
        met: measured <= 1.0,
        detail,
    }
}

/// The checks as a Markdown table (misses first).
pub fn table(checks: &[TargetCheck]) -> String {
    let mut v: Vec<&TargetCheck> = checks.iter().collect();
    v.sort_by_key(|c| c.met);
    let mut s = String::from(
        "| met | client | target | suite | scenario | platform | measured | bound | detail |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in v {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} |",
            if c.met { "yes" } else { "**NO**" },
            c.client,
            c.target,
            c.suite,
            c.scenario,
            c.platform,
            c.measured,
            c.bound,
            c.detail
        );
    }
    s
}
