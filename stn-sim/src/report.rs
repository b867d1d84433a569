//! Benchmark reports: the Markdown tables of the published benchmark
//! ([`table`]), `report.json` ([`crate::bench::record::Report`] through
//! serde) and SVG charts ([`chart`]).
//!
//! Everything here is a pure function of the records, so a report is as
//! reproducible as the runs: no dates, no host names, no wall-clock times
//! (the CLI prints its speed line to stderr/stdout, never into the files).
//!
//! ```
//! use stn_sim::bench::record::Report;
//! use stn_sim::report::report_markdown;
//! let mut report = Report::new(1);
//! report.runs.push(serde_json::from_str(r#"{
//!     "suite": "loss", "scenario": "3g+30%", "platform": "android", "client": "stn",
//!     "channel": "short", "run": 0, "successes": 500, "attempts": 512, "total_s": 321.0,
//!     "mean_s": 0.64, "p50_s": 0.41, "p95_s": 2.1, "p99_s": 4.2, "completion_s": null,
//!     "ok": true }"#).unwrap());
//! let md = report_markdown(&report, "stn-sim bench --seed 1");
//! assert!(md.contains("| 3g+30% | 321.00 (512) |"));
//! ```

pub mod chart;
pub mod cost;
pub mod heatmap;
pub mod summary;
pub mod table;

use std::path::{Path, PathBuf};

use crate::bench::record::{Report, RunRecord};

/// Width and height of every chart, in pixels.
pub const CHART_SIZE: (u32, u32) = (900, 560);

/// The whole `report.md`: a header (command, seed, schema, run count) and
/// [`table::all_tables`].
pub fn report_markdown(report: &Report, command: &str) -> String {
    let mut out = String::from("# stn benchmark report\n\n");
    out.push_str(&format!("- command: `{command}`\n"));
    out.push_str(&format!("- seed: {}\n", report.seed));
    out.push_str(&format!("- schema: {}\n", report.schema));
    out.push_str(&format!("- runs: {}\n\n", report.runs.len()));
    out.push_str(
        "Times are seconds of virtual (simulated) time. The same command gives the same \
         numbers, bit for bit. Reference: `docs/stn-benchmark.md`.\n\n",
    );
    out.push_str(&table::all_tables(&report.runs));
    for suite in crate::bench::suites::ALL {
        out.push_str(&suite.closing_section(&report.runs));
    }
    out.push_str(&targets_section(&report.runs));
    out
}

/// The targets ([`crate::bench::targets`]) for `stn` and, when it ran,
/// `stn-tuned`, misses first; `""` when no target applies.
pub fn targets_section(runs: &[RunRecord]) -> String {
    let mut out = String::new();
    for client in ["stn", "stn-tuned"] {
        let checks = crate::bench::targets::evaluate(runs, client);
        if checks.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str("## Targets\n\n");
        }
        let met = checks.iter().filter(|c| c.met).count();
        out.push_str(&format!(
            "### `{client}`: {met} of {} met\n\n{}\n",
            checks.len(),
            crate::bench::targets::table(&checks)
        ));
    }
    out
}

/// `report.json`: the report through serde, pretty-printed.
pub fn report_json(report: &Report) -> String {
    // Serializing plain strings, integers and floats cannot fail.
    let mut s = serde_json::to_string_pretty(report).unwrap_or_default();
    s.push('\n');
    s
}

/// A file name made of `[a-z0-9-]` from `parts`.
pub(crate) fn file_stem(parts: &[&str]) -> String {
    let joined = parts.join("-").to_lowercase();
    let mut s: String = joined
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').to_owned()
}

/// Every chart the records allow, as `(file name, chart)`, suite by suite
/// in the order the records name them ([`crate::bench::Suite::charts`]; a
/// suite that is not registered gets [`chart::loss_charts`]).
pub fn charts(runs: &[RunRecord]) -> Vec<(String, chart::LineChart)> {
    let all: Vec<&RunRecord> = runs.iter().collect();
    table::ordered(&all, |r| r.suite.as_str())
        .into_iter()
        .flat_map(|name| match crate::bench::suites::named(name) {
            Some(suite) => suite.charts(runs),
            None => chart::loss_charts(runs, name),
        })
        .collect()
}

/// Every heatmap the records allow, as `(file name, heatmap)`, in report
/// order ([`crate::bench::Suite::heatmaps`]: the matrix's
/// `matrix-heatmap.svg` and `matrix-sweep.svg`).
pub fn heatmaps(runs: &[RunRecord]) -> Vec<(String, heatmap::Heatmap)> {
    crate::bench::suites::ALL
        .iter()
        .flat_map(|s| s.heatmaps(runs))
        .collect()
}

/// The list of the files the last run wrote, kept in the output folder so
/// the next run removes exactly those.
pub const WRITTEN_LIST: &str = ".stn-sim-bench-files";

/// Whether `name` is a file some bench run writes: `report.md`,
/// `report.json`, [`WRITTEN_LIST`], or an SVG whose name starts with a
/// suite's name (every chart and heatmap does).
pub fn is_bench_file(name: &str) -> bool {
    if matches!(name, "report.md" | "report.json" | WRITTEN_LIST) {
        return true;
    }
    name.ends_with(".svg")
        && crate::bench::suites::ALL
            .iter()
            .any(|s| name.starts_with(&format!("{}-", file_stem(&[s.name()]))))
}

/// Removes what an earlier run left in `dir` (the files its list names and
/// any other file [`is_bench_file`] recognises; nothing else), so the
/// folder holds one run only.
pub fn clear_previous_run(dir: &Path) -> std::io::Result<()> {
    let listed = std::fs::read_to_string(dir.join(WRITTEN_LIST)).unwrap_or_default();
    for name in listed.lines().map(str::trim).filter(|n| !n.is_empty()) {
        // Only plain names in the folder itself.
        if !name.contains(['/', '\\']) && name != ".." {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries {
        let e = e?;
        if e.file_type()?.is_file() && e.file_name().to_str().is_some_and(is_bench_file) {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

/// Writes `report.md`, `report.json` and the charts into `dir` (created if
/// missing) after removing the previous run's files
/// ([`clear_previous_run`]); returns the paths written, in that order.
pub fn write_report_dir(
    dir: &Path,
    report: &Report,
    command: &str,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    clear_previous_run(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: &str| -> std::io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    put("report.md", &report_markdown(report, command))?;
    put("report.json", &report_json(report))?;
    for (name, c) in charts(&report.runs) {
        let svg = c
            .to_svg(CHART_SIZE.0, CHART_SIZE.1)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        put(&name, &svg)?;
    }
    for (name, h) in heatmaps(&report.runs) {
        let svg = h
            .to_svg(CHART_SIZE.0, CHART_SIZE.1)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        put(&name, &svg)?;
    }
    let names: Vec<String> = written
        .iter()
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    std::fs::write(dir.join(WRITTEN_LIST), names.join("\n") + "\n")?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::{rec, single};

    #[test]
    fn writes_every_file_and_json_round_trips() {
        let dir = std::env::temp_dir().join(format!("stn-sim-report-test-{}", std::process::id()));
        let mut report = Report::new(9);
        report.runs.push(rec("loss", "3g+30%", "android", "stn", 0));
        report
            .runs
            .push(single("outage-5s", "ios", "stn", 0, Some(5.4), 0.0));
        let files = write_report_dir(&dir, &report, "stn-sim bench --seed 9").unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "report.md",
                "report.json",
                "loss-android.svg",
                "sensitivity-ios.svg"
            ]
        );
        let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.starts_with(
            "# stn benchmark report\n\n- command: `stn-sim bench --seed 9`\n- seed: 9\n"
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_run_leaves_only_its_own_files_and_nothing_else_is_touched() {
        let dir = std::env::temp_dir().join(format!("stn-sim-one-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // An older full run's charts, and a file of the user's.
        for stale in [
            "matrix-heatmap.svg",
            "loss-android.svg",
            "long-link-ios.svg",
        ] {
            std::fs::write(dir.join(stale), "<svg/>").unwrap();
        }
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        std::fs::write(dir.join("logo.svg"), "<svg/>").unwrap();
        let mut report = Report::new(9);
        report
            .runs
            .push(single("outage-5s", "ios", "stn", 0, Some(5.4), 0.0));
        write_report_dir(&dir, &report, "stn-sim bench --suite sensitivity").unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                WRITTEN_LIST,
                "logo.svg",
                "notes.txt",
                "report.json",
                "report.md",
                "sensitivity-ios.svg"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_stems_are_plain() {
        assert_eq!(file_stem(&["loss", "iOS / 3G+30%"]), "loss-ios-3g-30");
    }
}
