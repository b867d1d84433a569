//! The side-by-side report of a scenario: per client, real and simulated
//! figures as median [range] over runs, and the real/sim ratio.

use std::fmt::Write as _;
use std::time::Duration;

use super::super::emulator::{DirectionStats, EmulatorStats};
use super::summary::{RunSummary, Spread};

/// One real run: the client's figures and what the emulator did.
#[derive(Clone, Debug, PartialEq)]
pub struct RealRunStats {
    /// The client's figures.
    pub summary: RunSummary,
    /// Packets the emulator carried, lost and delayed.
    pub emulator: EmulatorStats,
    /// Every call's duration in ms, when an external client gave them.
    pub calls_ms: Option<Vec<f64>>,
}

impl RealRunStats {
    pub(super) fn new(summary: RunSummary, emulator: &EmulatorStats) -> Self {
        RealRunStats {
            summary,
            emulator: *emulator,
            calls_ms: None,
        }
    }
}

/// A real run that gave no figures: an external client's program failed.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedRun {
    /// Run index.
    pub run: u32,
    /// What went wrong (exit status, bad output, killed at its bound).
    pub reason: String,
    /// What the emulator carried meanwhile.
    pub emulator: EmulatorStats,
}

/// One client: its real runs and its simulated runs.
#[derive(Clone, Debug, PartialEq)]
pub struct AgreementRow {
    /// The scenario's client name, or an external client's
    /// (`--client NAME=COMMAND`).
    pub client: String,
    /// An external client's command (`None` for the scenario's clients).
    pub command: Option<String>,
    /// Runs on the kernel (empty for the oracle, a bound with no real
    /// counterpart).
    pub real: Vec<RealRunStats>,
    /// Real runs without figures (an external program that failed).
    pub failed: Vec<FailedRun>,
    /// Runs in the simulator (empty for an external client).
    pub sim: Vec<RunSummary>,
}

impl AgreementRow {
    pub(super) fn new(client: &str) -> Self {
        AgreementRow {
            client: client.to_owned(),
            command: None,
            real: Vec::new(),
            failed: Vec::new(),
            sim: Vec::new(),
        }
    }

    pub(super) fn external(client: &str, command: &str) -> Self {
        AgreementRow {
            command: Some(command.to_owned()),
            ..AgreementRow::new(client)
        }
    }

    /// Every real run's emulator counters, with or without figures.
    fn emulator_runs(&self) -> impl Iterator<Item = &EmulatorStats> {
        self.real
            .iter()
            .map(|r| &r.emulator)
            .chain(self.failed.iter().map(|f| &f.emulator))
    }

    fn real_summaries(&self) -> impl Iterator<Item = &RunSummary> {
        self.real.iter().map(|r| &r.summary)
    }

    /// Median and range of the real totals.
    pub fn real_total(&self) -> Option<Spread> {
        Spread::of(self.real_summaries().map(|s| s.total_s))
    }

    /// Median and range of the simulated totals.
    pub fn sim_total(&self) -> Option<Spread> {
        Spread::of(self.sim.iter().map(|s| s.total_s))
    }

    /// Real median total over simulated median total.
    pub fn ratio(&self) -> Option<f64> {
        let (r, s) = (self.real_total()?, self.sim_total()?);
        (s.median > 0.0).then(|| r.median / s.median)
    }
}

/// Everything `stn lab --scenario` measured.
#[derive(Clone, Debug, PartialEq)]
pub struct AgreementReport {
    /// The scenario's name.
    pub scenario: String,
    /// `uname -r` of the kernel that ran the real side.
    pub kernel: String,
    /// The simulator's TCP model.
    pub sim_stack: String,
    /// Root seed.
    pub seed: u64,
    /// Runs per client.
    pub runs: u32,
    /// One row per client, in the scenario's order.
    pub rows: Vec<AgreementRow>,
}

fn fmt_spread(s: Option<Spread>, digits: usize) -> String {
    match s {
        Some(s) => format!("{:.d$} [{:.d$}–{:.d$}]", s.median, s.min, s.max, d = digits),
        None => "–".to_owned(),
    }
}

fn fmt_median(s: Option<Spread>, digits: usize) -> String {
    s.map_or_else(|| "–".to_owned(), |s| format!("{:.digits$}", s.median))
}

/// Medians closer than this fraction are a tie: on a shared, loaded
/// machine a few percent between two real runs is noise, not an order.
pub const TIE: f64 = 0.05;

/// `(median, client)` by median total, fastest first (only those with a
/// median).
fn order(
    rows: &[AgreementRow],
    total: impl Fn(&AgreementRow) -> Option<Spread>,
) -> Vec<(f64, &str)> {
    let mut v: Vec<(f64, &str)> = rows
        .iter()
        .filter_map(|r| Some((total(r)?.median, r.client.as_str())))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// `a < b ≈ c`: `≈` between neighbours within [`TIE`] of each other.
fn order_text(order: &[(f64, &str)]) -> String {
    let mut out = String::new();
    for (i, (t, c)) in order.iter().enumerate() {
        if i > 0 {
            let prev = order[i - 1].0;
            out.push_str(if *t - prev <= TIE * prev {
                " ≈ "
            } else {
                " < "
            });
        }
        out.push_str(c);
    }
    out
}

/// -1, 0 (a tie within [`TIE`]) or 1: how `a` compares with `b`.
fn compare(a: f64, b: f64) -> i8 {
    if (a - b).abs() <= TIE * a.min(b) {
        0
    } else if a < b {
        -1
    } else {
        1
    }
}

/// Summed counters of one direction over every real run.
fn direction_totals(
    rows: &[AgreementRow],
    pick: impl Fn(&EmulatorStats) -> DirectionStats,
) -> DirectionStats {
    let mut t = DirectionStats::default();
    for d in rows.iter().flat_map(AgreementRow::emulator_runs).map(pick) {
        t.link.offered += d.link.offered;
        t.link.delivered += d.link.delivered;
        t.link.lost += d.link.lost;
        t.link.queue_drops += d.link.queue_drops;
        t.link.peak_queue = t.link.peak_queue.max(d.link.peak_queue);
        t.syns += d.syns;
        t.connects += d.connects;
        t.not_ipv4 += d.not_ipv4;
        t.overflow_drops += d.overflow_drops;
        t.written += d.written;
        t.write_errors += d.write_errors;
        t.max_late = t.max_late.max(d.max_late);
        t.total_late += d.total_late;
    }
    t
}

fn mean_late(d: &DirectionStats) -> Duration {
    if d.written == 0 {
        Duration::ZERO
    } else {
        d.total_late / u32::try_from(d.written).unwrap_or(u32::MAX)
    }
}

impl AgreementReport {
    /// Whether the kernel and the simulator put the clients in the same
    /// order: no pair of clients (with both sides) that one side ranks one
    /// way and the other side the other way, ties within [`TIE`] agreeing
    /// with anything.
    pub fn same_order(&self) -> bool {
        let both: Vec<(f64, f64)> = self
            .rows
            .iter()
            .filter_map(|r| Some((r.real_total()?.median, r.sim_total()?.median)))
            .collect();
        both.iter().enumerate().all(|(i, a)| {
            both[i + 1..]
                .iter()
                .all(|b| compare(a.0, b.0) * compare(a.1, b.1) >= 0)
        })
    }

    /// The report as Markdown: the side-by-side table, the orders, and the
    /// emulator's counters.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### {} — kernel {} vs stn-sim ({} TCP), {} runs, seed {}\n",
            self.scenario, self.kernel, self.sim_stack, self.runs, self.seed
        );
        out.push_str(
            "median [min–max] over runs; attempts = calls made (a failed call counts one); \
             connects = TCP connection attempts (real: distinct SYNs the emulator carried)\n\n",
        );
        out.push_str(
            "| client | real total s | sim total s | real/sim | attempts real / sim | connects real / sim | p50 s real / sim | p95 s real / sim | runs ok real / sim |\n\
             |---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let real = |f: &dyn Fn(&RunSummary) -> Option<f64>| {
                Spread::of(r.real_summaries().filter_map(f))
            };
            let sim =
                |f: &dyn Fn(&RunSummary) -> Option<f64>| Spread::of(r.sim.iter().filter_map(f));
            let attempts = |s: &RunSummary| Some(s.attempts as f64);
            let connects = |s: &RunSummary| s.connects.map(|c| c as f64);
            let p50 = |s: &RunSummary| s.p50_s;
            let p95 = |s: &RunSummary| s.p95_s;
            let real_runs = r.real.len() + r.failed.len();
            let ok_real = if real_runs == 0 {
                "–".to_owned()
            } else {
                let ok = r.real_summaries().filter(|s| s.ok).count();
                format!("{ok}/{real_runs}")
            };
            let ok_sim = if r.sim.is_empty() {
                "–".to_owned()
            } else {
                let ok = r.sim.iter().filter(|s| s.ok).count();
                format!("{ok}/{}", r.sim.len())
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} / {} | {} / {} | {} / {} | {} / {} | {ok_real} / {ok_sim} |",
                r.client,
                fmt_spread(r.real_total(), 2),
                fmt_spread(r.sim_total(), 2),
                r.ratio().map_or_else(|| "–".to_owned(), |x| format!("{x:.2}")),
                fmt_median(real(&attempts), 0),
                fmt_median(sim(&attempts), 0),
                fmt_median(real(&connects), 0),
                fmt_median(sim(&connects), 0),
                fmt_median(real(&p50), 3),
                fmt_median(sim(&p50), 3),
                fmt_median(real(&p95), 3),
                fmt_median(sim(&p95), 3),
            );
        }
        let external: Vec<&AgreementRow> =
            self.rows.iter().filter(|r| r.command.is_some()).collect();
        if !external.is_empty() {
            out.push_str(
                "\nexternal clients (no simulated side; connects = distinct SYNs the emulator carried):\n",
            );
            for r in external {
                let _ = writeln!(
                    out,
                    "- {}: `{}`",
                    r.client,
                    r.command.as_deref().unwrap_or_default()
                );
                for f in &r.failed {
                    let _ = writeln!(out, "  - run {} failed: {}", f.run, f.reason);
                }
            }
        }
        let _ =
            writeln!(
            out,
            "\norder by median total, fastest first (≈: within {:.0}%) — real: {}; sim: {} ({})",
            TIE * 100.0,
            order_text(&order(&self.rows, AgreementRow::real_total)),
            order_text(&order(&self.rows, AgreementRow::sim_total)),
            if self.same_order() { "same order" } else { "ORDER DIFFERS" }
        );
        for (dir, d) in [
            ("up", direction_totals(&self.rows, |e| e.up)),
            ("down", direction_totals(&self.rows, |e| e.down)),
        ] {
            let loss = if d.link.offered == 0 {
                0.0
            } else {
                100.0 * d.link.lost as f64 / d.link.offered as f64
            };
            let _ = writeln!(
                out,
                "emulator {dir}: {} packets offered, {} lost ({loss:.1}%), {} queue drops (peak queue {}), \
                 {} overflow drops, {} write errors; lateness mean {:.2} ms, max {:.2} ms",
                d.link.offered,
                d.link.lost,
                d.link.queue_drops,
                d.link.peak_queue,
                d.overflow_drops,
                d.write_errors,
                mean_late(&d).as_secs_f64() * 1e3,
                d.max_late.as_secs_f64() * 1e3,
            );
        }
        out
    }

    /// The report as JSON (every run of every row).
    pub fn to_json(&self) -> String {
        use serde_json::json;
        let summary = |s: &RunSummary| {
            json!({
                "attempts": s.attempts,
                "successes": s.successes,
                "ok": s.ok,
                "total_s": s.total_s,
                "p50_s": s.p50_s,
                "p95_s": s.p95_s,
                "connects": s.connects,
            })
        };
        let direction = |d: &DirectionStats| {
            json!({
                "offered": d.link.offered,
                "delivered": d.link.delivered,
                "lost": d.link.lost,
                "queue_drops": d.link.queue_drops,
                "peak_queue": d.link.peak_queue,
                "syns": d.syns,
                "connects": d.connects,
                "overflow_drops": d.overflow_drops,
                "write_errors": d.write_errors,
                "mean_late_ms": mean_late(d).as_secs_f64() * 1e3,
                "max_late_ms": d.max_late.as_secs_f64() * 1e3,
            })
        };
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "client": r.client,
                    "command": r.command,
                    "ratio": r.ratio(),
                    "real": r.real.iter().map(|x| json!({
                        "summary": summary(&x.summary),
                        "calls_ms": x.calls_ms,
                        "emulator": { "up": direction(&x.emulator.up), "down": direction(&x.emulator.down) },
                    })).collect::<Vec<_>>(),
                    "failed": r.failed.iter().map(|f| json!({
                        "run": f.run,
                        "reason": f.reason,
                        "emulator": { "up": direction(&f.emulator.up), "down": direction(&f.emulator.down) },
                    })).collect::<Vec<_>>(),
                    "sim": r.sim.iter().map(summary).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "scenario": self.scenario,
            "kernel": self.kernel,
            "sim_stack": self.sim_stack,
            "seed": self.seed,
            "runs": self.runs,
            "same_order": self.same_order(),
            "rows": rows,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(total_s: f64) -> RunSummary {
        RunSummary {
            attempts: 2,
            successes: 2,
            ok: true,
            total_s,
            p50_s: Some(total_s / 2.0),
            p95_s: Some(total_s / 2.0),
            connects: Some(2),
        }
    }

    fn row(client: &str, real: &[f64], sim: &[f64]) -> AgreementRow {
        AgreementRow {
            real: real
                .iter()
                .map(|&t| RealRunStats::new(summary(t), &EmulatorStats::default()))
                .collect(),
            sim: sim.iter().map(|&t| summary(t)).collect(),
            ..AgreementRow::new(client)
        }
    }

    fn report(rows: Vec<AgreementRow>) -> AgreementReport {
        AgreementReport {
            scenario: "s".into(),
            kernel: "k".into(),
            sim_stack: "Linux >= 6.5".into(),
            seed: 1,
            runs: 3,
            rows,
        }
    }

    #[test]
    fn ratio_order_and_table() {
        let report = report(vec![
            row("stn", &[1.0, 1.2, 1.1], &[1.0, 1.0, 1.0]),
            row("okhttp-2017", &[3.0, 2.0, 4.0], &[2.0, 2.5, 3.0]),
            row("oracle", &[], &[0.5, 0.5, 0.5]),
        ]);
        let stn = &report.rows[0];
        assert!((stn.ratio().unwrap() - 1.1).abs() < 1e-9);
        assert!((report.rows[1].ratio().unwrap() - 1.2).abs() < 1e-9);
        assert_eq!(report.rows[2].ratio(), None);
        assert!(report.same_order());
        let md = report.markdown();
        assert!(
            md.contains("| stn | 1.10 [1.00–1.20] | 1.00 [1.00–1.00] | 1.10 |"),
            "{md}"
        );
        assert!(
            md.contains("real: stn < okhttp-2017; sim: oracle < stn < okhttp-2017 (same order)"),
            "{md}"
        );
        // Within 5% is a tie, which agrees with either order.
        let mut tied = report.clone();
        tied.rows[1].real = row("okhttp-2017", &[1.12, 1.12, 1.12], &[]).real;
        assert!(tied.same_order());
        assert!(tied.markdown().contains("real: stn ≈ okhttp-2017;"));
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["rows"][1]["sim"].as_array().unwrap().len(), 3);

        let mut swapped = report;
        swapped.rows[0].real = row("stn", &[5.0, 5.0, 5.0], &[]).real;
        assert!(!swapped.same_order());
        assert!(swapped.markdown().contains("ORDER DIFFERS"));
    }

    #[test]
    fn an_external_row_stands_beside_the_others() {
        let mut curl = AgreementRow {
            real: row("curl", &[2.5, 3.5], &[]).real,
            ..AgreementRow::external("curl", "stn-lab/clients/curl.sh")
        };
        let mut emulator = EmulatorStats::default();
        emulator.up.link.offered = 7;
        curl.failed.push(FailedRun {
            run: 2,
            reason: "exit status: 3".into(),
            emulator,
        });
        let report = report(vec![row("stn", &[1.0, 1.2, 1.1], &[1.0, 1.0, 1.0]), curl]);
        assert_eq!(report.rows[1].ratio(), None);
        // No simulated side: the order check compares only clients with both.
        assert!(report.same_order());
        let md = report.markdown();
        assert!(
            md.contains(
                "| curl | 3.00 [2.50–3.50] | – | – | 2 / – | 2 / – | 1.500 / – | 1.500 / – | 2/3 / – |"
            ),
            "{md}"
        );
        // The existing rows keep their shape.
        assert!(md.contains("| 3/3 / 3/3 |"), "{md}");
        assert!(md.contains("real: stn < curl;"), "{md}");
        assert!(
            md.contains("- curl: `stn-lab/clients/curl.sh`\n  - run 2 failed: exit status: 3"),
            "{md}"
        );
        // The failed run's packets count in the emulator's totals.
        assert!(md.contains("emulator up: 7 packets offered"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["rows"][1]["command"], "stn-lab/clients/curl.sh");
        assert_eq!(json["rows"][1]["failed"][0]["run"], 2);
        assert_eq!(json["rows"][0]["command"], serde_json::Value::Null);
    }
}
