//! Per-network records, keyed by the network's label, at most
//! [`MAX_RECORDS`] of them (Mars's `Heartbeat.ini` sections and
//! `__LimitINISize`).

use std::collections::BTreeMap;

use super::MAX_RECORDS;
use crate::time::Instant;

/// A record that knows when it last changed (Mars `modifyTime`).
pub(crate) trait Stamped {
    /// When the record was last written.
    fn changed(&self) -> Instant;
}

/// Records by label, bounded (deterministic: a `BTreeMap`).
#[derive(Clone, Debug)]
pub(crate) struct Records<R> {
    map: BTreeMap<String, R>,
}

impl<R> Default for Records<R> {
    fn default() -> Self {
        Records {
            map: BTreeMap::new(),
        }
    }
}

impl<R: Stamped> Records<R> {
    pub(crate) fn get(&self, label: &str) -> Option<&R> {
        self.map.get(label)
    }

    pub(crate) fn get_mut(&mut self, label: &str) -> Option<&mut R> {
        self.map.get_mut(label)
    }

    pub(crate) fn contains(&self, label: &str) -> bool {
        self.map.contains_key(label)
    }

    /// Stores `record` under `label`. A new label in a full store first
    /// evicts the least recently changed record (the lowest label on a tie).
    pub(crate) fn insert(&mut self, label: &str, record: R) {
        if !self.map.contains_key(label) && self.map.len() >= MAX_RECORDS {
            let stalest = self
                .map
                .iter()
                .min_by_key(|(l, r)| (r.changed(), (*l).clone()))
                .map(|(l, _)| l.clone());
            if let Some(l) = stalest {
                self.map.remove(&l);
            }
        }
        self.map.insert(label.to_owned(), record);
    }

    /// Stores an imported `record` unless a record changed more recently is
    /// already there. Returns whether it was taken.
    pub(crate) fn merge(&mut self, label: &str, record: R) -> bool {
        if self
            .map
            .get(label)
            .is_some_and(|r| r.changed() >= record.changed())
        {
            return false;
        }
        self.insert(label, record);
        true
    }

    pub(crate) fn remove(&mut self, label: &str) {
        self.map.remove(label);
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &R)> {
        self.map.iter().map(|(l, r)| (l.as_str(), r))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}
