//! The table of live connections and who owns each.

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
    /// A short-link race loser awaiting its verdict (the probes).
    Verdict,
}

/// Live connections by id.
#[derive(Clone, Debug, Default)]
pub(super) struct ConnTable {
    /// Looked up on every connection event, walked only by `drain`.
    owners: IdMap<ConnId, Owner>,
}

impl ConnTable {
    pub(super) fn len(&self) -> usize {
        self.owners.len()
    }

    pub(super) fn owner(&self, conn: ConnId) -> Option<Owner> {
        self.owners.get(&conn).copied()
    }

    /// Records (or hands over) `conn` to `owner`.
    pub(super) fn insert(&mut self, conn: ConnId, owner: Owner) {
        self.owners.insert(conn, owner);
    }

    pub(super) fn remove(&mut self, conn: ConnId) -> Option<Owner> {
        self.owners.remove(&conn)
    }

    /// Every live connection, in id order, leaving the table empty.
    pub(super) fn drain(&mut self) -> Vec<ConnId> {
        self.owners.drain_keys()
    }
}
