//! Deadlines indexed by time: the earliest is O(log n) to find, and the due
//! keys are found without visiting the others.
//!
//! A [`TimeIndex`] holds only the order; whoever owns a key's record keeps
//! its current deadline there and says what it was when it changes (the
//! engine's tasks keep theirs in their own record: one record per task). A
//! [`TimerSet`] keeps the deadlines beside the index, for keys with no record
//! of their own.

use std::collections::BTreeSet;

use crate::id_map::{DenseId, IdMap};
use crate::time::Instant;

/// Keys by deadline.
#[derive(Clone, Debug)]
pub(super) struct TimeIndex<K: Ord> {
    index: BTreeSet<(Instant, K)>,
}

impl<K: Ord> Default for TimeIndex<K> {
    fn default() -> Self {
        TimeIndex {
            index: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Copy> TimeIndex<K> {
    /// `key`'s deadline goes from `old` to `new` (`None`: none).
    pub(super) fn update(&mut self, key: K, old: Option<Instant>, new: Option<Instant>) {
        if old == new {
            return;
        }
        if let Some(t) = old {
            self.index.remove(&(t, key));
        }
        if let Some(t) = new {
            self.index.insert((t, key));
        }
    }

    /// The earliest deadline.
    pub(super) fn first(&self) -> Option<Instant> {
        self.index.first().map(|(t, _)| *t)
    }

    /// The keys due at `now` (deadline at or before it), in key order.
    pub(super) fn due(&self, now: Instant) -> Vec<K> {
        let mut keys: Vec<K> = self
            .index
            .iter()
            .take_while(|(t, _)| *t <= now)
            .map(|(_, k)| *k)
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Whether `key` is indexed at `at`.
    #[cfg(any(test, fuzzing))]
    pub(super) fn contains(&self, key: K, at: Instant) -> bool {
        self.index.contains(&(at, key))
    }

    /// Keys indexed.
    #[cfg(any(test, fuzzing))]
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }
}

/// Deadlines by key (`set` replaces a key's deadline, `None` removes it).
#[derive(Clone, Debug)]
pub(super) struct TimerSet<K: DenseId> {
    /// Only looked up, never walked.
    at: IdMap<K, Instant>,
    index: TimeIndex<K>,
}

impl<K: DenseId> Default for TimerSet<K> {
    fn default() -> Self {
        TimerSet {
            at: IdMap::default(),
            index: TimeIndex::default(),
        }
    }
}

impl<K: DenseId> TimerSet<K> {
    /// Sets (or, with `None`, clears) `key`'s deadline.
    pub(super) fn set(&mut self, key: K, when: Option<Instant>) {
        let old = match when {
            Some(t) => self.at.insert(key, t),
            None => self.at.remove(&key),
        };
        self.index.update(key, old, when);
    }

    /// `key`'s deadline.
    #[cfg(any(test, fuzzing))]
    pub(super) fn get(&self, key: K) -> Option<Instant> {
        self.at.get(&key).copied()
    }

    /// The earliest deadline.
    pub(super) fn first(&self) -> Option<Instant> {
        self.index.first()
    }

    /// The keys due at `now` (deadline at or before it), in key order.
    pub(super) fn due(&self, now: Instant) -> Vec<K> {
        self.index.due(now)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::task::TaskId;
    use crate::time::Duration;
    use quickcheck::quickcheck;

    quickcheck! {
        /// After any sequence of sets, `first` and `due` agree with a plain
        /// map of the latest deadline per key.
        fn agrees_with_a_map(ops: Vec<(u8, Option<u16>)>, probe: u16) -> bool {
            let mut timers = TimerSet::default();
            let mut model = BTreeMap::new();
            let t = |ms: u16| Instant::ZERO + Duration::from_millis(u64::from(ms));
            for (raw, when) in ops {
                let key = TaskId::new(u32::from(raw));
                timers.set(key, when.map(t));
                match when {
                    Some(ms) => { model.insert(key, t(ms)); }
                    None => { model.remove(&key); }
                }
            }
            let first = model.values().min().copied();
            let due: Vec<TaskId> = model.iter().filter(|(_, at)| **at <= t(probe)).map(|(k, _)| *k).collect();
            timers.first() == first && timers.due(t(probe)) == due
        }
    }
}
