//! Seeded randomness.
//!
//! Every random choice in stn-proto (candidate shuffles, jitter) comes from a
//! [`Rng`] seeded through the configuration, so the same inputs give the same
//! outputs bit for bit. The generator is xoshiro256++ from `rand_xoshiro`.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A small deterministic PRNG. Cloning it clones its state.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A generator for a named sub-component, independent of the parent's
    /// later draws: `Rng::new(seed).derive(1)` and `.derive(2)` do not overlap
    /// in any practical sense.
    pub fn derive(seed: u64, stream: u64) -> Self {
        // SplitMix-style mixing of (seed, stream) into one 64-bit seed.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng::new(z ^ (z >> 31))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform value in `0..n` (`0` when `n == 0`). Uses Lemire's
    /// multiply-shift; the tiny bias for huge `n` does not matter here.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p` (clamped to `[0, 1]`).
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit_f64() < p
    }

    /// Fisher–Yates shuffle of `items`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::derive(7, 1).next_u64(), Rng::derive(7, 2).next_u64());
    }

    quickcheck! {
        fn below_is_in_range(seed: u64, n: u64) -> bool {
            let mut r = Rng::new(seed);
            let v = r.below(n);
            if n == 0 { v == 0 } else { v < n }
        }

        fn shuffle_is_a_permutation(seed: u64, xs: Vec<u8>) -> bool {
            let mut r = Rng::new(seed);
            let mut s = xs.clone();
            r.shuffle(&mut s);
            let (mut a, mut b) = (xs, s);
            a.sort_unstable();
            b.sort_unstable();
            a == b
        }

        fn unit_is_in_unit_interval(seed: u64) -> bool {
            let x = Rng::new(seed).unit_f64();
            (0.0..1.0).contains(&x)
        }
    }
}
