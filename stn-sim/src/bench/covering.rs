//! Pairwise covering designs: a set of rows (one value index per axis) in
//! which every pair of values of every two axes appears in some row, with
//! far fewer rows than the full product (AETG-style greedy construction).
//!
//! ```
//! use stn_sim::bench::covering::{covering_design, uncovered_pairs};
//! let sizes = [5, 10, 4, 2, 5, 3, 3, 3, 2];
//! let rows = covering_design(&sizes, 1);
//! assert!(uncovered_pairs(&sizes, &rows).is_empty());
//! assert!(rows.len() < 80, "{} rows", rows.len()); // the full product has 108 000
//! ```

use stn_proto::Rng;

/// Candidate rows tried per row kept.
const CANDIDATES: usize = 24;

/// Index of the pair (axis `i` value `a`, axis `j` value `b`), `i < j`.
fn pair_index(
    offsets: &[Vec<usize>],
    sizes: &[usize],
    i: usize,
    a: usize,
    j: usize,
    b: usize,
) -> usize {
    offsets[i][j] + a * sizes[j] + b
}

/// Offsets of each axis pair's block in the flat pair table, and its size.
fn pair_offsets(sizes: &[usize]) -> (Vec<Vec<usize>>, usize) {
    let n = sizes.len();
    let mut offsets = vec![vec![0; n]; n];
    let mut total = 0;
    for i in 0..n {
        for j in i + 1..n {
            offsets[i][j] = total;
            total += sizes[i] * sizes[j];
        }
    }
    (offsets, total)
}

/// A row set covering every pair of values of every two axes of `sizes`
/// (each size at least 1). Deterministic for a given `seed`: the seed only
/// breaks ties. Each row is chosen greedily from 24 candidates,
/// each seeded with an uncovered pair and completed axis by axis with the
/// value that covers the most still-uncovered pairs.
pub fn covering_design(sizes: &[usize], seed: u64) -> Vec<Vec<usize>> {
    let n = sizes.len();
    if n == 0 || sizes.contains(&0) {
        return Vec::new();
    }
    if n == 1 {
        return (0..sizes[0]).map(|v| vec![v]).collect();
    }
    let (offsets, total) = pair_offsets(sizes);
    let mut covered = vec![false; total];
    let mut left = total;
    let mut rng = Rng::derive(seed, 0x00C0_BE12);
    let mut rows = Vec::new();
    let gain = |row: &[Option<usize>], axis: usize, v: usize, covered: &[bool]| -> usize {
        row.iter()
            .enumerate()
            .filter_map(|(k, x)| x.map(|x| (k, x)))
            .filter(|&(k, x)| {
                let idx = if k < axis {
                    pair_index(&offsets, sizes, k, x, axis, v)
                } else {
                    pair_index(&offsets, sizes, axis, v, k, x)
                };
                !covered[idx]
            })
            .count()
    };
    while left > 0 {
        let mut best: Option<(usize, Vec<usize>)> = None;
        // The uncovered pairs, to seed candidates from.
        let open: Vec<(usize, usize, usize, usize)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .flat_map(|(i, j)| {
                (0..sizes[i]).flat_map(move |a| (0..sizes[j]).map(move |b| (i, a, j, b)))
            })
            .filter(|&(i, a, j, b)| !covered[pair_index(&offsets, sizes, i, a, j, b)])
            .collect();
        for _ in 0..CANDIDATES {
            let (i, a, j, b) = open[usize::try_from(rng.below(open.len() as u64)).unwrap_or(0)];
            let mut row: Vec<Option<usize>> = vec![None; n];
            row[i] = Some(a);
            row[j] = Some(b);
            let mut order: Vec<usize> = (0..n).filter(|k| *k != i && *k != j).collect();
            rng.shuffle(&mut order);
            for axis in order {
                let start = usize::try_from(rng.below(sizes[axis] as u64)).unwrap_or(0);
                // Ties go to the first value from a random start, so the
                // leftover pairs do not all land on value 0.
                let v = (0..sizes[axis])
                    .max_by_key(|&d| {
                        let v = (start + d) % sizes[axis];
                        (gain(&row, axis, v, &covered), usize::MAX - d)
                    })
                    .map_or(0, |d| (start + d) % sizes[axis]);
                row[axis] = Some(v);
            }
            let row: Vec<usize> = row.into_iter().map(|x| x.unwrap_or(0)).collect();
            let g = new_pairs(&offsets, sizes, &row, &covered);
            if best.as_ref().is_none_or(|(bg, _)| g > *bg) {
                best = Some((g, row));
            }
        }
        let Some((_, row)) = best else { break };
        for i in 0..n {
            for j in i + 1..n {
                let idx = pair_index(&offsets, sizes, i, row[i], j, row[j]);
                if !covered[idx] {
                    covered[idx] = true;
                    left -= 1;
                }
            }
        }
        rows.push(row);
    }
    rows
}

fn new_pairs(offsets: &[Vec<usize>], sizes: &[usize], row: &[usize], covered: &[bool]) -> usize {
    let n = row.len();
    (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .filter(|&(i, j)| !covered[pair_index(offsets, sizes, i, row[i], j, row[j])])
        .count()
}

/// The pairs `(axis i, value a, axis j, value b)` that no row of `rows`
/// covers (empty for a covering design). Rows with a wrong length or an
/// out-of-range value cover nothing.
pub fn uncovered_pairs(sizes: &[usize], rows: &[Vec<usize>]) -> Vec<(usize, usize, usize, usize)> {
    let n = sizes.len();
    let valid = |r: &&Vec<usize>| r.len() == n && r.iter().zip(sizes).all(|(v, s)| v < s);
    let rows: Vec<&Vec<usize>> = rows.iter().filter(valid).collect();
    let mut out = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            for a in 0..sizes[i] {
                for b in 0..sizes[j] {
                    if !rows.iter().any(|r| r[i] == a && r[j] == b) {
                        out.push((i, a, j, b));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The law: every pair of values of every two axes is in some row,
        /// every row is in range, and no more rows than the full product.
        #[test]
        fn every_pair_is_covered(sizes in proptest::collection::vec(1usize..7, 0..7), seed: u64) {
            let rows = covering_design(&sizes, seed);
            prop_assert!(uncovered_pairs(&sizes, &rows).is_empty());
            for r in &rows {
                prop_assert_eq!(r.len(), sizes.len());
                prop_assert!(r.iter().zip(&sizes).all(|(v, s)| v < s));
            }
            let product: usize = sizes.iter().product();
            prop_assert!(rows.len() <= product.max(1));
            // At least the largest two axes' product is needed.
            let mut s = sizes.clone();
            s.sort_unstable();
            if s.len() >= 2 {
                prop_assert!(rows.len() >= s[s.len() - 1] * s[s.len() - 2]);
            }
        }

        /// Same seed, same design.
        #[test]
        fn deterministic(sizes in proptest::collection::vec(1usize..6, 2..6), seed: u64) {
            prop_assert_eq!(covering_design(&sizes, seed), covering_design(&sizes, seed));
        }
    }

    #[test]
    fn missing_pairs_are_reported() {
        let sizes = [2, 2];
        let rows = vec![vec![0, 0], vec![1, 1]];
        assert_eq!(
            uncovered_pairs(&sizes, &rows),
            vec![(0, 0, 1, 1), (0, 1, 1, 0)]
        );
    }
}
