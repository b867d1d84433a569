//! Replays the committed fuzz corpus of the reference server
//! (`fuzz/corpus/http_request/*`, `fuzz/corpus/long_input/*`) through the
//! fuzz target bodies on stable Rust, so every seed and every regression
//! input is checked by plain `cargo test` (the `fuzzing` feature is switched
//! on for this crate's tests by its dev-dependency on itself). The replay is
//! stn-proto's `tests/replay/mod.rs`.
//!
//! Regenerate the seed files after changing an input layout:
//! `STN_WRITE_SEEDS=1 cargo test -p stn-tokio --test fuzz_replay -- --ignored`.

#[path = "../../stn-proto/tests/replay/mod.rs"]
mod replay;

use stn_tokio::server::fuzzing::TARGETS;

#[test]
fn replay_committed_corpus() {
    replay::replay_committed_corpus(TARGETS);
}

#[test]
fn committed_seeds_are_current() {
    replay::committed_seeds_are_current(TARGETS);
}

/// Writes every target's seeds into its corpus folder (run on demand).
#[test]
#[ignore = "writes files; run with STN_WRITE_SEEDS=1 to regenerate the seed corpus"]
fn write_seed_corpus() {
    replay::write_seed_corpus(TARGETS);
}
