//! The replay of the committed fuzz corpus (`fuzz/corpus/<target>/*`) on
//! stable Rust, shared by the `tests/fuzz_replay.rs` of stn-proto, stn-sim and stn-tokio
//! (the others include this file with `#[path]`). Each crate sits one level
//! below the workspace root, so `CARGO_MANIFEST_DIR/../fuzz/corpus` is the
//! corpus for each.

use std::path::{Path, PathBuf};

use stn_proto::fuzzing::Target;

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

/// Runs every committed corpus file of every target through its body.
pub(crate) fn replay_committed_corpus(targets: &[Target]) {
    for target in targets {
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

/// Checks that the committed `seed_*` files are what the targets generate.
pub(crate) fn committed_seeds_are_current(targets: &[Target]) {
    for target in targets {
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

/// Writes every target's seeds into its corpus folder, if `STN_WRITE_SEEDS`
/// is set.
pub(crate) fn write_seed_corpus(targets: &[Target]) {
    if std::env::var_os("STN_WRITE_SEEDS").is_none() {
        return;
    }
    for target in targets {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).expect("create corpus folder");
        for (name, data) in (target.seeds)() {
            std::fs::write(dir.join(format!("seed_{name}")), data).expect("write seed");
        }
    }
}

/// The corpus tests of a crate's `tests/fuzz_replay.rs`, over `$targets`:
/// replay every committed input, check the committed seeds are current, and
/// (ignored, on demand) write the seeds.
macro_rules! corpus_tests {
    ($targets:expr) => {
        #[test]
        fn replay_committed_corpus() {
            crate::replay::replay_committed_corpus($targets);
        }

        #[test]
        fn committed_seeds_are_current() {
            crate::replay::committed_seeds_are_current($targets);
        }

        /// Writes every target's seeds into its corpus folder (run on demand).
        #[test]
        #[ignore = "writes files; run with STN_WRITE_SEEDS=1 to regenerate the seed corpus"]
        fn write_seed_corpus() {
            crate::replay::write_seed_corpus($targets);
        }
    };
}
pub(crate) use corpus_tests;
