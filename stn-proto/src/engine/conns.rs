//! The table of live connections and who owns each: nothing is ever said
//! about a connection that is closed, and an attempt's connections are found
//! without visiting the others.

use std::collections::BTreeSet;

use crate::id_map::IdMap;
use crate::io::ConnId;
use crate::task::TaskId;

/// Who owns a live connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    Short(TaskId),
    Long,
    /// An idle keep-alive connection in the pool.
    Pool,
    /// A short-link race loser awaiting its verdict (`verdicts`).
    Verdict,
}

/// Live connections by id, and the short-link ones by task.
#[derive(Clone, Debug, Default)]
pub(super) struct ConnTable {
    /// Looked up on every connection event, walked only by `drain`.
    owners: IdMap<ConnId, Owner>,
    by_task: BTreeSet<(TaskId, ConnId)>,
}

impl ConnTable {
    pub(super) fn len(&self) -> usize {
        self.owners.len()
    }

    pub(super) fn owner(&self, conn: ConnId) -> Option<Owner> {
        self.owners.get(&conn).copied()
    }

    #[cfg(test)]
    pub(super) fn contains(&self, conn: ConnId) -> bool {
        self.owners.contains_key(&conn)
    }

    /// Records (or hands over) `conn` to `owner`.
    pub(super) fn insert(&mut self, conn: ConnId, owner: Owner) {
        if let Some(Owner::Short(old)) = self.owners.insert(conn, owner) {
            self.by_task.remove(&(old, conn));
        }
        if let Owner::Short(task) = owner {
            self.by_task.insert((task, conn));
        }
    }

    pub(super) fn remove(&mut self, conn: ConnId) -> Option<Owner> {
        let owner = self.owners.remove(&conn)?;
        if let Owner::Short(task) = owner {
            self.by_task.remove(&(task, conn));
        }
        Some(owner)
    }

    /// `task`'s short-link connections, in id order.
    pub(super) fn of_task(&self, task: TaskId) -> Vec<ConnId> {
        self.by_task
            .range((task, ConnId(0))..)
            .take_while(|(t, _)| *t == task)
            .map(|(_, c)| *c)
            .collect()
    }

    /// Every live connection, in id order, leaving the table empty.
    pub(super) fn drain(&mut self) -> Vec<ConnId> {
        self.by_task.clear();
        self.owners.drain_keys()
    }
}
