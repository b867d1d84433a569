//! Per-task state by id: the engine's tasks, the long link's running tasks.
//!
//! An [`IdMap`] (ids are handed out in order, so live tasks sit in a dense
//! window) of boxed values: growing the window moves pointers, not values
//! of hundreds of bytes.

use crate::id_map::IdMap;

use super::TaskId;

/// A value per task, by id.
#[derive(Debug)]
pub(crate) struct TaskTable<E> {
    map: IdMap<TaskId, Box<E>>,
}

impl<E> Default for TaskTable<E> {
    fn default() -> Self {
        Self {
            map: IdMap::default(),
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
    pub(crate) fn iter(&self) -> impl Iterator<Item = (TaskId, &E)> {
        self.map.iter().map(|(id, e)| (id, &**e))
    }

    /// Every task id, in order (one pass and a sort: for rare events).
    pub(crate) fn keys(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.map.keys()
    }

    /// Every task id, in order, leaving nothing behind.
    pub(crate) fn into_ids(mut self) -> impl Iterator<Item = TaskId> {
        self.map.drain_keys().into_iter()
    }
}
