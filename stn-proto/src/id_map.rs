//! A map keyed by ids the engine hands out in order: task ids, connection
//! ids.
//!
//! Most entries end roughly in the order they started, so a table's live ids
//! are nearly contiguous. The map keeps them in a window of slots indexed by
//! `id - base`: a lookup is one bounds check and one load, and neighbouring
//! ids sit in neighbouring slots, where a hash map scatters them (at 100,000
//! tasks every hash probe was a cache miss). Ids the window cannot hold
//! densely (one that outlives thousands of younger ones, a retry of an old
//! id, an id far ahead) go to a hash map beside it, so memory stays
//! proportional to the live entries whatever the ids. Passes over every
//! entry are for rare events and sort what they collect, so they visit ids
//! in order, as determinism needs.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;

/// An id with a position on a line: consecutive ids are consecutive raws.
pub(crate) trait DenseId: Copy + Ord + Hash {
    fn to_raw(self) -> u64;
    fn from_raw(raw: u64) -> Self;
}

/// The window holds at most this many slots per live entry in it, plus
/// [`SLACK`]: memory stays within a few slots per entry while interleaved ids
/// (tasks of another link in between) still fit in the window.
const SPREAD: usize = 8;
/// Slots the window may hold beyond `SPREAD` per live entry, so a small map
/// does not shuffle entries out on every gap.
const SLACK: usize = 64;

/// A value per id.
#[derive(Clone, Debug)]
pub(crate) struct IdMap<K: DenseId, V> {
    /// `window[i]` is the value of the id whose raw is `base + i`.
    window: VecDeque<Option<V>>,
    base: u64,
    /// Values present in `window`.
    in_window: usize,
    /// Every value whose id is outside the window. The hasher is fixed (no
    /// per-process seed): the map behaves the same in every run.
    outliers: FxHashMap<K, V>,
}

impl<K: DenseId, V> Default for IdMap<K, V> {
    fn default() -> Self {
        Self {
            window: VecDeque::new(),
            base: 0,
            in_window: 0,
            outliers: FxHashMap::default(),
        }
    }
}

impl<K: DenseId, V> IdMap<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.in_window + self.outliers.len()
    }

    /// `id`'s slot index, if the window covers it.
    fn slot(&self, id: K) -> Option<usize> {
        let offset = id.to_raw().checked_sub(self.base)?;
        (offset < self.window.len() as u64).then_some(offset as usize)
    }

    // An outlier's id may lie inside the window (the window grew over it
    // later): an empty slot is not proof of absence while there are
    // outliers. An id is never in both.

    pub(crate) fn get(&self, id: &K) -> Option<&V> {
        if let Some(v) = self.slot(*id).and_then(|i| self.window[i].as_ref()) {
            return Some(v);
        }
        if self.outliers.is_empty() {
            return None;
        }
        self.outliers.get(id)
    }

    pub(crate) fn get_mut(&mut self, id: &K) -> Option<&mut V> {
        if let Some(i) = self.slot(*id) {
            if self.window[i].is_some() {
                return self.window[i].as_mut();
            }
        }
        if self.outliers.is_empty() {
            return None;
        }
        self.outliers.get_mut(id)
    }

    pub(crate) fn contains_key(&self, id: &K) -> bool {
        self.get(id).is_some()
    }

    /// The most slots the window may span with `live` values in it.
    fn max_span(live: usize) -> usize {
        live.saturating_mul(SPREAD).saturating_add(SLACK)
    }

    /// Sets `id`'s value, returning the one it replaces.
    pub(crate) fn insert(&mut self, id: K, value: V) -> Option<V> {
        let old = if self.outliers.is_empty() {
            None
        } else {
            self.outliers.remove(&id)
        };
        if let Some(i) = self.slot(id) {
            let replaced = self.window[i].replace(value);
            if replaced.is_none() {
                self.in_window += 1;
            }
            return replaced.or(old);
        }
        let raw = id.to_raw();
        if self.window.is_empty() {
            self.base = raw;
            self.window.push_back(Some(value));
            self.in_window = 1;
            return old;
        }
        let budget = Self::max_span(self.in_window + 1) as u64;
        let len = self.window.len() as u64;
        if raw >= self.base {
            // Past the back: extend if the window stays dense, else the
            // window's values become outliers and a new window starts here.
            let gap = raw - (self.base + len);
            if len + gap < budget {
                self.window.extend((0..gap).map(|_| None));
                self.window.push_back(Some(value));
                self.in_window += 1;
                self.shed_front();
            } else {
                self.flush_to_outliers();
                self.base = raw;
                self.window.push_back(Some(value));
                self.in_window = 1;
            }
        } else {
            // Before the front: extend there only if it stays dense.
            let gap = self.base - raw - 1;
            if len + gap < budget {
                for _ in 0..gap {
                    self.window.push_front(None);
                }
                self.window.push_front(Some(value));
                self.base = raw;
                self.in_window += 1;
            } else {
                self.outliers.insert(id, value);
            }
        }
        old
    }

    pub(crate) fn remove(&mut self, id: &K) -> Option<V> {
        let taken = self.slot(*id).and_then(|i| self.window[i].take());
        let Some(value) = taken else {
            if self.outliers.is_empty() {
                return None;
            }
            return self.outliers.remove(id);
        };
        self.in_window -= 1;
        while self.window.back().is_some_and(Option::is_none) {
            self.window.pop_back();
        }
        self.shed_front();
        Some(value)
    }

    /// Moves the oldest values to the outliers until the window is dense
    /// again (each value moves at most once, so this is O(1) amortized),
    /// then drops the empty slots at its front.
    fn shed_front(&mut self) {
        while self.window.len() > Self::max_span(self.in_window) {
            let Some(slot) = self.window.pop_front() else {
                break;
            };
            if let Some(value) = slot {
                self.in_window -= 1;
                self.outliers.insert(K::from_raw(self.base), value);
            }
            self.base += 1;
        }
        while self.window.front().is_some_and(Option::is_none) {
            self.window.pop_front();
            self.base += 1;
        }
    }

    fn flush_to_outliers(&mut self) {
        let base = self.base;
        for (i, slot) in std::mem::take(&mut self.window).into_iter().enumerate() {
            if let Some(value) = slot {
                self.outliers.insert(K::from_raw(base + i as u64), value);
            }
        }
        self.in_window = 0;
    }

    /// Every entry, in id order (one pass and a sort: for rare events).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        let window = self.window.iter().enumerate().filter_map(|(i, slot)| {
            slot.as_ref()
                .map(|v| (K::from_raw(self.base + i as u64), v))
        });
        let mut all: Vec<(K, &V)> = window
            .chain(self.outliers.iter().map(|(id, v)| (*id, v)))
            .collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all.into_iter()
    }

    /// Every id, in order (one pass and a sort: for rare events).
    pub(crate) fn keys(&self) -> impl Iterator<Item = K> + '_ {
        self.iter().map(|(id, _)| id)
    }

    /// Every id, in order, leaving the map empty.
    pub(crate) fn drain_keys(&mut self) -> Vec<K> {
        let ids: Vec<K> = self.keys().collect();
        *self = Self::default();
        ids
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use quickcheck::quickcheck;

    use super::IdMap;
    use crate::task::TaskId;

    /// An op on a table: insert, remove or look up an id derived from the
    /// previous one (`step` apart, so runs of near ids alternate with jumps).
    #[derive(Clone, Debug)]
    enum Op {
        Insert(i32),
        Remove(i32),
        Get(i32),
    }

    impl quickcheck::Arbitrary for Op {
        fn arbitrary(g: &mut quickcheck::Gen) -> Self {
            // Mostly small steps, sometimes a jump past the window's slack.
            let step = match u8::arbitrary(g) % 8 {
                0 => i32::from(i16::arbitrary(g)),
                1 => -i32::from(u8::arbitrary(g)),
                _ => i32::from(u8::arbitrary(g) % 4),
            };
            match u8::arbitrary(g) % 3 {
                0 => Op::Insert(step),
                1 => Op::Remove(step),
                _ => Op::Get(step),
            }
        }
    }

    /// Runs `ops` from `start` on a table and on a `BTreeMap`, checking
    /// after every op that both agree and that the window stays dense.
    fn agrees(start: u32, ops: Vec<Op>) -> bool {
        let mut raw = start;
        let ops = ops.into_iter().map(|op| {
            let (step, kind) = match op {
                Op::Insert(s) => (s, 0),
                Op::Remove(s) => (s, 1),
                Op::Get(s) => (s, 2),
            };
            raw = raw.wrapping_add_signed(step);
            (raw, kind)
        });
        agrees_on(ops)
    }

    /// Runs `(raw id, op)` pairs (0 insert, 1 remove, else get).
    fn agrees_on(ops: impl IntoIterator<Item = (u32, u8)>) -> bool {
        let mut table = IdMap::<TaskId, u32>::default();
        let mut model = BTreeMap::new();
        for (raw, kind) in ops {
            let id = TaskId::new(raw);
            let ok = match kind {
                0 => table.insert(id, raw) == model.insert(id, raw),
                1 => table.remove(&id) == model.remove(&id),
                _ => table.get(&id).copied() == model.get(&id).copied(),
            };
            let dense = table.window.len() <= IdMap::<TaskId, u32>::max_span(table.in_window)
                && table.window.front().is_none_or(Option::is_some)
                && table.window.back().is_none_or(Option::is_some)
                && table
                    .outliers
                    .keys()
                    .all(|id| table.slot(*id).is_none_or(|i| table.window[i].is_none()));
            if !ok || !dense || table.len() != model.len() {
                return false;
            }
        }
        table
            .iter()
            .map(|(id, v)| (id, *v))
            .eq(model.iter().map(|(id, v)| (*id, *v)))
            && table.drain_keys().into_iter().eq(model.into_keys())
            && table.len() == 0
    }

    quickcheck! {
        /// The table agrees with a map op by op, its passes visit ids in
        /// ascending order, and the window never spans more than its bound.
        fn agrees_with_a_map(start: u32, ops: Vec<Op>) -> bool {
            agrees(start, ops)
        }

        /// The same near the top of the id space, where raw ids wrap.
        fn agrees_with_a_map_across_the_wrap(back: u8, ops: Vec<Op>) -> bool {
            agrees(u32::MAX - u32::from(back), ops)
        }

        /// The same on ids anywhere in 0..256 (windows grow over outliers).
        fn agrees_with_a_map_on_small_ids(ops: Vec<(u8, u8)>) -> bool {
            agrees_on(ops.into_iter().map(|(raw, kind)| (u32::from(raw), kind % 3)))
        }
    }

    /// An id kept outside the window and then covered by a new window is
    /// stored once: re-inserting it replaces it.
    #[test]
    fn an_outlier_covered_by_a_new_window_is_replaced_not_duplicated() {
        let ops = [
            Op::Insert(0),    // 10
            Op::Insert(990),  // 1000: too far, 10 becomes an outlier
            Op::Remove(0),    // the window is empty, 10 is still an outlier
            Op::Insert(-995), // 5: a new window
            Op::Insert(5),    // 10 again, now inside the window's reach
            Op::Remove(0),
            Op::Get(0),
        ];
        assert!(agrees(10, ops.to_vec()));
    }

    /// A task that outlives 100,000 younger ones does not keep their slots.
    #[test]
    fn a_long_lived_task_does_not_pin_the_window() {
        let mut table = IdMap::<TaskId, u32>::default();
        table.insert(TaskId::new(1), 1);
        for raw in 2..=100_001 {
            table.insert(TaskId::new(raw), raw);
            if raw > 2 {
                table.remove(&TaskId::new(raw - 1));
            }
        }
        assert_eq!(table.len(), 2);
        assert!(table.window.len() <= IdMap::<TaskId, u32>::max_span(table.in_window));
        assert_eq!(table.get(&TaskId::new(1)), Some(&1));
        assert_eq!(table.get(&TaskId::new(100_001)), Some(&100_001));
    }
}
