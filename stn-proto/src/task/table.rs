//! Per-task state by id: the engine's tasks, the long link's running tasks.
//!
//! A hash map, not a B-tree: every input looks up the one task it concerns,
//! and at 100,000 tasks a B-tree walk is several cache misses where a hash
//! probe is one. Values are boxed so growing the table moves pointers, not
//! values of hundreds of bytes. The rare passes over every task (shutdown,
//! redo, a session timeout, a lost link) visit tasks in id order, as
//! determinism needs; they sort the ids they collect.

use rustc_hash::FxHashMap;

use super::TaskId;

/// A value per task, by id.
#[derive(Debug)]
pub(crate) struct TaskTable<E> {
    // The hasher is fixed (no per-process seed): the map's behaviour is the
    // same in every run, and ids are the engine's own, not the network's.
    map: FxHashMap<TaskId, Box<E>>,
}

impl<E> Default for TaskTable<E> {
    fn default() -> Self {
        Self {
            map: FxHashMap::default(),
        }
    }
}

impl<E> TaskTable<E> {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn get(&self, id: &TaskId) -> Option<&E> {
        self.map.get(id).map(|e| &**e)
    }

    pub(crate) fn get_mut(&mut self, id: &TaskId) -> Option<&mut E> {
        self.map.get_mut(id).map(|e| &mut **e)
    }

    pub(crate) fn contains_key(&self, id: &TaskId) -> bool {
        self.map.contains_key(id)
    }

    /// Adds `id`'s value (boxed here unless it already is).
    pub(crate) fn insert(&mut self, id: TaskId, value: impl Into<Box<E>>) {
        self.map.insert(id, value.into());
    }

    pub(crate) fn remove(&mut self, id: &TaskId) -> Option<Box<E>> {
        self.map.remove(id)
    }

    /// Every task, in id order (one pass and a sort: for rare events).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&TaskId, &E)> {
        let mut all: Vec<(&TaskId, &E)> = self.map.iter().map(|(id, e)| (id, &**e)).collect();
        all.sort_unstable_by_key(|(id, _)| **id);
        all.into_iter()
    }

    /// Every task id, in order (one pass and a sort: for rare events).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &TaskId> {
        self.iter().map(|(id, _)| id)
    }

    /// Every task id, in order, leaving nothing behind.
    pub(crate) fn into_ids(self) -> impl Iterator<Item = TaskId> {
        let mut ids: Vec<TaskId> = self.map.into_keys().collect();
        ids.sort_unstable();
        ids.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use quickcheck::quickcheck;

    use super::TaskTable;

    quickcheck! {
        /// Whatever the order of inserts and removes, a pass visits the
        /// live ids in ascending order.
        fn passes_are_in_id_order(ops: Vec<(u16, bool)>) -> bool {
            let mut table = TaskTable::<u16>::default();
            let mut model = std::collections::BTreeSet::new();
            for (raw, insert) in ops {
                let id = super::super::TaskId::new(u32::from(raw));
                if insert {
                    table.insert(id, raw);
                    model.insert(id);
                } else {
                    table.remove(&id);
                    model.remove(&id);
                }
            }
            table.keys().copied().eq(model.iter().copied())
                && table.iter().all(|(id, v)| id.get() == u32::from(*v))
                && table.len() == model.len()
                && table.into_ids().eq(model.into_iter())
        }
    }
}
