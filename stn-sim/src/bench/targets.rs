//! Targets, evaluated on records: what each run of `stn` (or `stn-tuned`)
//! must achieve against the others of its scenario. Nothing here bends a
//! scenario; a missed target is reported with its figure. Each suite says
//! which targets its runs are held to ([`crate::bench::Suite::targets`]);
//! the suites gated per cell hold their runs to none.
//!
//! - every suite and scenario where today's Mars profile (`mars`) ran too:
//!   at least as good as it — no fewer successes, total time (sensitivity:
//!   completion time) no longer ([`no_worse_than_mars`]);
//! - loss, 30 % loss and above: total time ≤ 0.75 × mars-2017's and ≤ 0.5
//!   × the peer's (as benchmarked; and the recommended peers' in the
//!   `recommended` suite), with at most 1.25 × mars-2017's attempts (calls
//!   started, the benchmark's "attempts"); clean 3G and 2G: total time ≤
//!   1.02 × mars-2017's ([`crate::bench::suites::loss`]);
//! - sensitivity: completion within 1.0 s of the oracle for every outage
//!   shorter than the task's deadline (40 s: the harness's default retry
//!   count 1), in the nominal and the fitted scenarios, and 20 s in the
//!   `/retry0` scenarios ([`crate::bench::suites::sensitivity`]).

use std::fmt::Write as _;

use crate::bench::record::RunRecord;

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

impl TargetCheck {
    /// The check of run `r`: met when `measured <= bound`.
    pub(crate) fn of_run(
        r: &RunRecord,
        target: String,
        measured: f64,
        bound: f64,
        detail: String,
    ) -> Self {
        TargetCheck {
            target,
            suite: r.suite.clone(),
            scenario: r.scenario.clone(),
            platform: r.platform.clone(),
            client: r.client.clone(),
            measured,
            bound,
            met: measured <= bound,
            detail,
        }
    }
}

/// The record of `client`'s run `run` in `suite`, `scenario`, `platform`.
pub(crate) fn find<'a>(
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
/// did not run are skipped), in record order; a record of a suite that is
/// not registered is held to [`no_worse_than_mars`].
pub fn evaluate(records: &[RunRecord], client: &str) -> Vec<TargetCheck> {
    records
        .iter()
        .filter(|r| r.client == client)
        .flat_map(|r| match crate::bench::suites::named(&r.suite) {
            Some(suite) => suite.targets(r, records),
            None => no_worse_than_mars(r, records, Measure::Total)
                .into_iter()
                .collect(),
        })
        .collect()
}

/// What a comparison of two runs measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Total time for the successes (no fewer successes).
    Total,
    /// The one call's completion (a failure is infinitely late).
    Completion,
}

/// `r` against the `mars` profile's run of the same scenario, when there
/// is one: the ratio of `measure`, ≤ 1, with at least as many successes.
/// A run that fails where Mars succeeds is infinitely worse; both failing
/// is a tie.
pub fn no_worse_than_mars(
    r: &RunRecord,
    records: &[RunRecord],
    measure: Measure,
) -> Option<TargetCheck> {
    let m = find(records, &r.suite, &r.scenario, &r.platform, "mars", r.run)?;
    let (measured, detail) = match measure {
        Measure::Completion => {
            let show = |c: Option<f64>| c.map_or("fail".to_owned(), |c| format!("{c:.2} s"));
            let measured = match (r.completion_s, m.completion_s) {
                (Some(a), Some(b)) if b > 0.0 => a / b,
                (None, None) | (Some(_), None) => 0.0,
                _ => f64::INFINITY,
            };
            let detail = format!("{} vs {}", show(r.completion_s), show(m.completion_s));
            (measured, detail)
        }
        Measure::Total => {
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
        }
    };
    Some(TargetCheck {
        target: "no worse than mars".into(),
        suite: r.suite.clone(),
        scenario: r.scenario.clone(),
        platform: r.platform.clone(),
        client: r.client.clone(),
        measured,
        bound: 1.0,
        met: measured <= 1.0,
        detail,
    })
}

/// `r`'s total time against `other`'s, at most `bound` × (`what` names
/// the other run); met only when `r` reached its successes.
pub(crate) fn total_vs(r: &RunRecord, other: &RunRecord, what: &str, bound: f64) -> TargetCheck {
    let measured = if other.total_s > 0.0 {
        r.total_s / other.total_s
    } else {
        f64::INFINITY
    };
    let mut t = TargetCheck::of_run(
        r,
        format!("total vs {what}"),
        measured,
        bound,
        format!(
            "{:.1} s vs {:.1} s ({} vs {} successes)",
            r.total_s, other.total_s, r.successes, other.successes
        ),
    );
    t.met &= r.ok;
    t
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
