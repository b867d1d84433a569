//! A map for a handful of entries (an exchange's connections, its race's
//! attempts): a sorted `Vec`, so it costs one small allocation where a
//! B-tree costs a node of eleven slots, and it iterates in key order like one.

/// A sorted vector of `(key, value)` pairs with unique keys.
#[derive(Clone, Debug)]
pub(crate) struct SmallMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    fn find(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Sets `key`'s value, returning the old one.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use quickcheck::quickcheck;

    use super::SmallMap;

    quickcheck! {
        /// Any sequence of inserts leaves it equal to a B-tree map given the
        /// same inserts: same lookups, same old values, same order.
        fn agrees_with_a_btree_map(ops: Vec<(u8, u16)>, probe: u8) -> bool {
            let mut map = SmallMap::default();
            let mut model = BTreeMap::new();
            for (k, v) in ops {
                if map.insert(k, v) != model.insert(k, v) {
                    return false;
                }
            }
            if let (Some(a), Some(b)) = (map.get_mut(&probe), model.get_mut(&probe)) {
                *a = a.wrapping_add(1);
                *b = b.wrapping_add(1);
            }
            map.get(&probe) == model.get(&probe) && map.iter().eq(model.iter())
        }
    }
}
