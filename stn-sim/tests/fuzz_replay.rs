//! Replays the committed fuzz corpus of the simulator
//! (`fuzz/corpus/sim_scenario/*`) through the fuzz target body on stable
//! Rust, so every seed and every regression input is checked by plain
//! `cargo test` (the `fuzzing` feature is switched on for this crate's tests
//! by its dev-dependency on itself). Same shape as stn-proto's
//! `tests/fuzz_replay.rs`.
//!
//! Regenerate the seed files after changing the input layout:
//! `STN_WRITE_SEEDS=1 cargo test -p stn-sim --test fuzz_replay -- --ignored`.

use std::path::{Path, PathBuf};

use stn_sim::fuzzing::{Target, TARGETS};

fn corpus_dir(target: &Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target.name)
}

fn corpus_files(target: &Target) -> Vec<PathBuf> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus folder {} missing: {e}", dir.display()))
        .map(|entry| entry.expect("readable corpus folder").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn replay_committed_corpus() {
    for target in TARGETS {
        let files = corpus_files(target);
        assert!(!files.is_empty(), "{}: empty corpus", target.name);
        for file in files {
            let data = std::fs::read(&file).expect("readable corpus file");
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            assert!(
                outcome.is_ok(),
                "{} failed on {} (replay: cargo +nightly fuzz run --fuzz-dir fuzz {} {})",
                target.name,
                file.display(),
                target.name,
                file.display()
            );
        }
    }
}

#[test]
fn committed_seeds_are_current() {
    for target in TARGETS {
        for (name, data) in (target.seeds)() {
            let file = corpus_dir(target).join(format!("seed_{name}"));
            let committed = std::fs::read(&file).unwrap_or_else(|e| {
                panic!("{} missing ({e}); regenerate the seeds", file.display())
            });
            assert_eq!(
                committed,
                data,
                "{} is stale; regenerate the seeds",
                file.display()
            );
        }
    }
}

/// Writes every target's seeds into its corpus folder (run on demand).
#[test]
#[ignore = "writes files; run with STN_WRITE_SEEDS=1 to regenerate the seed corpus"]
fn write_seed_corpus() {
    if std::env::var_os("STN_WRITE_SEEDS").is_none() {
        return;
    }
    for target in TARGETS {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).expect("create corpus folder");
        for (name, data) in (target.seeds)() {
            std::fs::write(dir.join(format!("seed_{name}")), data).expect("write seed");
        }
    }
}
