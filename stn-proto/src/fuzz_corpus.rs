//! What a fuzz target is, and the replay of the committed corpus
//! (`fuzz/corpus/<target>/*`) on stable Rust by plain `cargo test`.
//!
//! One module for the three crates with fuzz targets (stn-proto, stn-sim,
//! stn-server): each lists its targets in its own fuzzing module and
//! expands [`corpus_tests!`](crate::corpus_tests) there. Built only under
//! `cfg(fuzzing)` (cargo-fuzz), in stn-proto's tests, or with the hidden
//! `fuzz-corpus` feature, which the other two enable for their tests only,
//! so it never reaches a production build. Each crate sits one level below
//! the workspace root, so `CARGO_MANIFEST_DIR/../fuzz/corpus` is the corpus
//! for each. A packaged crate has no corpus beside it; its replay says so
//! and checks the seeds only.

// The replay tells a packaged build why it skipped the corpus.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};

/// One fuzz target: its name (the cargo-fuzz target and corpus folder), its
/// body, and a few meaningful seed inputs.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Name of the cargo-fuzz target and of its folder under `fuzz/corpus/`.
    pub name: &'static str,
    /// The body: panics on a finding.
    pub run: fn(&[u8]),
    /// Seed inputs, each with a file name (stable, descriptive).
    pub seeds: fn() -> Vec<(String, Vec<u8>)>,
}

/// The workspace's corpus root, or `None` outside the repository (a
/// packaged crate).
fn corpus_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    root.is_dir().then_some(root)
}

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("corpus folder {} missing: {e}", dir.display()))
        .map(|entry| entry.expect("readable corpus folder").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every committed corpus file of every target through its body (in the
/// repository), and every target's seeds (everywhere).
pub fn replay_committed_corpus(targets: &[Target]) {
    for target in targets {
        for (name, data) in (target.seeds)() {
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            assert!(outcome.is_ok(), "{} failed on seed {name}", target.name);
        }
    }
    let Some(root) = corpus_root() else {
        eprintln!("no fuzz/corpus beside this crate (packaged?): replayed the seeds only");
        return;
    };
    for target in targets {
        let files = corpus_files(&root.join(target.name));
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
pub fn committed_seeds_are_current(targets: &[Target]) {
    let Some(root) = corpus_root() else {
        eprintln!("no fuzz/corpus beside this crate (packaged?): nothing to compare");
        return;
    };
    for target in targets {
        for (name, data) in (target.seeds)() {
            let file = root.join(target.name).join(format!("seed_{name}"));
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
pub fn write_seed_corpus(targets: &[Target]) {
    if std::env::var_os("STN_WRITE_SEEDS").is_none() {
        return;
    }
    let root = corpus_root().expect("run from the repository: fuzz/corpus is missing");
    for target in targets {
        let dir = root.join(target.name);
        std::fs::create_dir_all(&dir).expect("create corpus folder");
        for (name, data) in (target.seeds)() {
            std::fs::write(dir.join(format!("seed_{name}")), data).expect("write seed");
        }
    }
}

/// The corpus tests over `$targets`, expanded inside a crate's fuzzing
/// module: replay every committed input, check the
/// committed seeds are current, and (ignored, on demand) write the seeds.
/// Regenerate after changing a target's input layout:
/// `STN_WRITE_SEEDS=1 cargo test -p <crate> --lib write_seed_corpus -- --ignored`.
#[macro_export]
macro_rules! corpus_tests {
    ($targets:expr) => {
        #[cfg(test)]
        mod corpus_tests {
            #[test]
            fn replay_committed_corpus() {
                $crate::fuzz_corpus::replay_committed_corpus($targets);
            }

            #[test]
            fn committed_seeds_are_current() {
                $crate::fuzz_corpus::committed_seeds_are_current($targets);
            }

            #[test]
            #[ignore = "writes files; run with STN_WRITE_SEEDS=1 to regenerate the seed corpus"]
            fn write_seed_corpus() {
                $crate::fuzz_corpus::write_seed_corpus($targets);
            }
        }
    };
}
