//! `stn-sim run` on the committed example scenario.

use std::process::Command;

fn example() -> String {
    format!("{}/scenarios/example.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn example_scenario_prints_its_tables() {
    let dir = std::env::temp_dir().join(format!("stn-sim-run-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .args(["run", &example(), "--seed", "2", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("# Scenario `3g-bursty-outage`"),
        "{stdout}"
    );
    assert!(stdout.contains("### scenario — android: total time, s (attempts)"));
    let header = stdout.lines().find(|l| l.starts_with("| Config")).unwrap();
    for client in ["stn", "mars-2017", "okhttp-2017", "oracle"] {
        assert!(header.contains(client), "{header}");
    }
    assert!(stdout.contains("| 3g-bursty-outage |"));
    assert!(stderr.contains("simulated s per wall-clock s"));
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    let report: stn_sim::bench::record::Report = serde_json::from_str(&json).unwrap();
    assert_eq!(report.runs.len(), 4);
    // Nothing can finish before the first outage ends at 12.5 s.
    for r in &report.runs {
        assert!(r.successes > 0 && r.total_s > 12.5, "{r:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).unwrap(),
        stdout
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
