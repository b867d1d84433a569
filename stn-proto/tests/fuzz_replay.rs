//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/*`) through the
//! fuzz target bodies on stable Rust, so every seed and every regression input
//! is checked by plain `cargo test` (the `fuzzing` feature is switched on for
//! this crate's tests by its dev-dependency on itself). The replay itself is
//! `tests/replay/mod.rs`, shared with stn-sim.
//!
//! Regenerate the seed files after changing a target's input layout:
//! `STN_WRITE_SEEDS=1 cargo test -p stn-proto --test fuzz_replay -- --ignored`.
//!
//! The corpus and the self dev-dependency live in the repository only: in
//! the packaged crate this test compiles to nothing.
#![cfg(feature = "fuzzing")]

mod replay;

replay::corpus_tests!(stn_proto::fuzzing::TARGETS);
