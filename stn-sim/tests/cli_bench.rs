//! `stn-sim bench` end to end: files, schema, charts, tables.

use std::path::PathBuf;
use std::process::Command;

use stn_sim::bench::record::{Report, SCHEMA};

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stn-sim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn bench(out: &PathBuf, extra: &[&str]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .args(["bench", "--quick", "--suite", "sensitivity", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "stderr:\n{stderr}");
    (stdout, stderr)
}

#[test]
fn quick_sensitivity_writes_the_report_files() {
    let dir = out_dir("bench-sens");
    let (stdout, stderr) = bench(&dir, &["--seed", "3"]);

    // report.json: exactly the record schema.
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    let report: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(report.schema, SCHEMA);
    assert_eq!(report.seed, 3);
    assert!(!report.runs.is_empty());
    assert!(report.runs.iter().all(|r| r.suite == "sensitivity"));
    for client in [
        "stn",
        "mars-2017",
        "nsurlsession",
        "okhttp-2017-60s",
        "oracle",
    ] {
        assert!(
            report.runs.iter().any(|r| r.client == client),
            "no {client}"
        );
    }
    let raw: serde_json::Value = serde_json::from_str(&json).unwrap();
    for key in [
        "suite",
        "scenario",
        "platform",
        "client",
        "channel",
        "run",
        "successes",
        "attempts",
        "total_s",
        "mean_s",
        "p50_s",
        "p95_s",
        "p99_s",
        "completion_s",
        "ok",
    ] {
        assert!(raw["runs"][0].get(key).is_some(), "missing {key}");
    }

    // stdout: the short summary (headline, targets, where the report is).
    assert!(stdout.starts_with(
        "# stn benchmark summary\n\n`stn-sim bench --quick --seed 3 --suite sensitivity`: "
    ));
    assert!(stdout.contains("| sensitivity | ios | "), "{stdout}");
    assert!(stdout.contains("- **`stn` targets**: "), "{stdout}");
    assert!(
        stdout.contains(&format!("`{}/report.md`", dir.display())),
        "{stdout}"
    );
    assert!(stdout.lines().count() < 40, "{stdout}");

    // report.md: every table, under a reproducible header.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.starts_with(
        "# stn benchmark report\n\n- command: `stn-sim bench --quick --seed 3 --suite sensitivity`\n"
    ));
    assert!(md.contains("### sensitivity — ios: completion time, s"));
    assert!(md.contains("### sensitivity — android: mars-2017 VS okhttp-2017-60s (s; positive = mars-2017 finished first)"));
    assert!(md.contains("| 20s 100% Loss |"));
    assert!(md.contains("## Fidelity: the published sensitivity tables against the model"));
    assert!(md.contains("## Targets\n\n### `stn`: "));

    // Charts: one per platform and variant, SVG documents with axes and legend.
    for name in ["sensitivity-ios.svg", "sensitivity-android.svg"] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(
            svg.contains("outage length R (s)") && svg.contains("oracle"),
            "{name}"
        );
        assert_eq!(svg.matches("<svg").count(), 1);
    }

    // Progress and the speed line go to stderr.
    assert!(
        stderr.contains("sensitivity outage-20s ios stn r1:"),
        "{stderr}"
    );
    assert!(stderr.contains("simulated s per wall-clock s"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn same_seed_same_report() {
    let (a, b) = (out_dir("bench-a"), out_dir("bench-b"));
    let (out_a, _) = bench(&a, &["--no-tuned"]);
    let (out_b, _) = bench(&b, &["--no-tuned"]);
    // The summary names its folder; otherwise the same bytes.
    assert_eq!(
        out_a.replace(&a.display().to_string(), "DIR"),
        out_b.replace(&b.display().to_string(), "DIR")
    );
    assert!(!out_a.contains("stn-tuned"));
    for f in ["report.json", "report.md", "sensitivity-ios.svg"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}

#[test]
fn full_prints_the_report_and_the_folder_holds_one_run() {
    let dir = out_dir("bench-one-run");
    std::fs::create_dir_all(&dir).unwrap();
    // What an older run of other suites left, and a file that is not the bench's.
    for stale in ["matrix-heatmap.svg", "loss-ios.svg", "bursty-android.svg"] {
        std::fs::write(dir.join(stale), "<svg/>").unwrap();
    }
    std::fs::write(dir.join("keep.txt"), "not the bench's").unwrap();
    let (stdout, _) = bench(&dir, &["--no-tuned", "--full"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert_eq!(md, stdout);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.contains(&"keep.txt".to_owned()), "{names:?}");
    for stale in ["matrix-heatmap.svg", "loss-ios.svg", "bursty-android.svg"] {
        assert!(
            !names.contains(&stale.to_owned()),
            "{stale} left: {names:?}"
        );
    }
    assert!(names.iter().all(|n| n == "keep.txt"
        || n == ".stn-sim-bench-files"
        || n.starts_with("report.")
        || n.starts_with("sensitivity-")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn known_misses_needs_the_matrix_and_a_readable_list() {
    let dir = out_dir("bench-known");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_stn-sim"))
            .args(["bench", "--quick", "--suite", "sensitivity", "--out"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--known-misses", "/nonexistent/known.txt"]);
    assert!(!o.status.success());
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        stderr.contains("reading the known-misses list /nonexistent/known.txt"),
        "{stderr}"
    );
    let list = dir.join("known.txt");
    std::fs::write(&list, "# none\n").unwrap();
    let o = run(&["--known-misses", list.to_str().unwrap()]);
    assert!(!o.status.success());
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("the matrix suite did not run"), "{stderr}");
}
