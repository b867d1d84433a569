//! Replays the committed fuzz corpus of the simulator
//! (`fuzz/corpus/sim_scenario/*`) through the fuzz target body on stable
//! Rust, so every seed and every regression input is checked by plain
//! `cargo test` (the `fuzzing` feature is switched on for this crate's tests
//! by its dev-dependency on itself). The replay is stn-proto's
//! `tests/replay/mod.rs`.
//!
//! Regenerate the seed files after changing the input layout:
//! `STN_WRITE_SEEDS=1 cargo test -p stn-sim --test fuzz_replay -- --ignored`.

#[path = "../../stn-proto/tests/replay/mod.rs"]
mod replay;

replay::corpus_tests!(stn_sim::fuzzing::TARGETS);
