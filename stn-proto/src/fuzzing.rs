//! Fuzz target bodies, shared by the cargo-fuzz targets in `fuzz/` and the
//! stable corpus replay of `cargo test` ([`crate::fuzz_corpus`]). Built only under
//! `cfg(fuzzing)` (cargo-fuzz sets it) and in this crate's own tests: never
//! part of a production build, as in quinn-proto.
//!
//! Each body takes the fuzzer's raw bytes, builds its input from them (a short
//! fixed prefix for the decoders, [`arbitrary::Unstructured`] for the op-list
//! targets), drives one stn-proto machine and **asserts oracles**, not just the
//! absence of panics: a failed assertion is a finding. The bodies never read
//! the clock or any global state, so an input replays identically anywhere.
//!
//! | target | machine | oracles |
//! |---|---|---|
//! | [`longlink_decoder`] | [`crate::codec::longlink::FrameDecoder`] | memory bound, chunking invariance, re-encode round trip, poisoning |
//! | [`http_response`] | [`crate::codec::http::ResponseParser`] | memory bound, chunking invariance (byte-at-a-time = whole buffer), limits honoured, generated-valid-response round trip |
//! | [`race_ops`] | [`crate::race::Race`] | every Connect answered exactly once, Won xor Failed at most once, in-flight ≤ max, `poll_timeout` after a drain later than `now`, termination, determinism |
//! | [`ban_ops`] | [`crate::ban::EndpointHistory`] | `order` never empty for a non-empty input and exactly the unbanned multiset, bans expire, export→import round trip, failed imports change nothing |
//! | [`engine_ops`] | [`crate::engine::Engine`] | every accepted task ends exactly once (refused: never), no action names a closed or unknown connection, `poll_timeout` after a drain not before `now`, `handle_timeout` at the deadline makes progress, held tasks and connections bounded, determinism |
//!
//! [`TARGETS`] lists them with their seed inputs (the committed corpus under
//! `fuzz/corpus/<target>/` is generated from [`Target::seeds`]). To add a
//! target (the simulator is next; it lives in stn-sim, so not here): write its body in a new
//! submodule, add it to [`TARGETS`], add a one-line `fuzz/fuzz_targets/<name>.rs`
//! and a `[[bin]]` in `fuzz/Cargo.toml`, and regenerate the corpus.

mod ban;
mod engine;
mod http;
mod longlink;
mod race;

pub use ban::ban_ops;
pub use engine::engine_ops;
pub use http::http_response;
pub use longlink::longlink_decoder;
pub use race::race_ops;

pub use crate::fuzz_corpus::Target;

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "longlink_decoder",
        run: longlink_decoder,
        seeds: longlink::seeds,
    },
    Target {
        name: "http_response",
        run: http_response,
        seeds: http::seeds,
    },
    Target {
        name: "race_ops",
        run: race_ops,
        seeds: race::seeds,
    },
    Target {
        name: "ban_ops",
        run: ban_ops,
        seeds: ban::seeds,
    },
    Target {
        name: "engine_ops",
        run: engine_ops,
        seeds: engine::seeds,
    },
];

crate::corpus_tests!(super::TARGETS);

/// Splits a fixed-size prefix off `data`, zero-padded when `data` is shorter,
/// so every byte string is a valid input.
fn split_prefix<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let n = N.min(data.len());
    let mut prefix = [0u8; N];
    prefix[..n].copy_from_slice(&data[..n]);
    (prefix, &data[n..])
}

/// Cuts `data` into chunks of 1..=max bytes chosen by a PRNG seeded from the
/// input (deterministic per input).
fn random_chunks(data: &[u8], seed: u64, max: usize) -> Vec<&[u8]> {
    let mut rng = crate::rng::Rng::new(seed);
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = 1 + rng.below(max.max(1) as u64) as usize;
        let (head, tail) = rest.split_at(n.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

/// Byte strings from a PRNG, for finding seeds of the op-list targets by what
/// they exercise (any byte string is a valid op list).
fn random_inputs(seed: u64, count: usize, max_len: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut rng = crate::rng::Rng::new(seed);
    (0..count).map(move |_| {
        let len = 8 + rng.below(max_len as u64) as usize;
        (0..len).map(|_| rng.next_u64() as u8).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_runs_its_seeds() {
        for target in TARGETS {
            let seeds = (target.seeds)();
            assert!(seeds.len() >= 3, "{}: too few seeds", target.name);
            for (_, input) in seeds {
                (target.run)(&input);
            }
            // Degenerate inputs are valid too.
            (target.run)(&[]);
            (target.run)(&[0xFF; 64]);
        }
    }

    #[test]
    fn prefix_is_zero_padded() {
        let (p, rest) = split_prefix::<4>(&[1, 2]);
        assert_eq!((p, rest), ([1, 2, 0, 0], &[][..]));
        let (p, rest) = split_prefix::<2>(&[1, 2, 3]);
        assert_eq!((p, rest), ([1, 2], &[3][..]));
    }

    #[test]
    fn chunks_cover_the_input() {
        let data: Vec<u8> = (0..=255).collect();
        let chunks = random_chunks(&data, 9, 7);
        assert!(chunks.iter().all(|c| (1..=7).contains(&c.len())));
        assert_eq!(chunks.concat(), data);
    }
}
