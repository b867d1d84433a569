//! Bad command lines and bad scenario files: a clear message and a
//! non-zero exit.

use std::process::{Command, Output};

fn stn_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .args(args)
        .output()
        .unwrap()
}

fn fails_with(args: &[&str], needle: &str) {
    let o = stn_sim(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
}

#[test]
fn bad_arguments_are_explained() {
    fails_with(&[], "Usage");
    fails_with(&["frobnicate"], "unrecognized subcommand");
    fails_with(&["bench", "--suite", "nope"], "unknown suite \"nope\"");
    fails_with(
        &["bench", "--seed", "minus-one"],
        "invalid value 'minus-one'",
    );
    fails_with(&["run"], "SCENARIO.toml");
    fails_with(&["run", "/nonexistent/x.toml"], "cannot read");
    fails_with(&["trace", "--client", "curl"], "not in this scenario");
    fails_with(
        &[
            "trace",
            "--client",
            "oracle",
            "--scenario",
            &format!("{}/scenarios/example.toml", env!("CARGO_MANIFEST_DIR")),
        ],
        "no packet trace",
    );
}

#[test]
fn bad_scenario_files_name_the_problem() {
    let path = std::env::temp_dir().join(format!("stn-sim-bad-{}.toml", std::process::id()));
    for (text, needle) in [
        (
            "clients = [\"stn\"]\n[link]\npreset = \"5g\"",
            "unknown preset \"5g\"",
        ),
        ("clients = [\"stn\"\n", "TOML parse error"),
        ("clients = [\"nsurlsession\"]", "runs on ios"),
    ] {
        std::fs::write(&path, text).unwrap();
        fails_with(&["run", path.to_str().unwrap()], needle);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn help_lists_the_subcommands() {
    let o = stn_sim(&["--help"]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for sub in ["bench", "run", "trace"] {
        assert!(s.contains(sub), "{s}");
    }
}
