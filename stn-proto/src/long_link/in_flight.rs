//! The tasks awaiting a response on an established long link, with their
//! timers in one index so the next deadline and the expired tasks are found
//! without visiting every task.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::TimeoutKind;
use crate::short_link::ExchangeTimeouts;
use crate::task::TaskId;
use crate::time::Instant;

/// A task awaiting its response.
#[derive(Clone, Debug)]
pub(super) struct Running {
    pub(super) timeouts: ExchangeTimeouts,
    pub(super) deadline: Option<Instant>,
    pub(super) written_at: Instant,
    pub(super) first_byte_at: Option<Instant>,
    pub(super) last_byte_at: Option<Instant>,
}

impl Running {
    /// The earliest instant at which one of its timers fires.
    fn next_deadline(&self) -> Instant {
        let rw = self.written_at + self.timeouts.read_write;
        let wait = match self.last_byte_at {
            None => {
                self.written_at
                    + self
                        .timeouts
                        .long_polling
                        .unwrap_or(self.timeouts.first_packet)
            }
            Some(last) => last + self.timeouts.packet_gap,
        };
        rw.min(wait).min(self.deadline.unwrap_or(Instant::MAX))
    }

    /// Which timer has fired at `now`, if any (exactly when
    /// `next_deadline() <= now`). The task deadline wins, then read-write
    /// (Mars: RW overrides), then first-packet or packet-gap.
    fn expired(&self, now: Instant) -> Option<TimeoutKind> {
        if self.deadline.is_some_and(|d| d <= now) {
            return Some(TimeoutKind::Task);
        }
        if now >= self.written_at + self.timeouts.read_write {
            return Some(TimeoutKind::ReadWrite);
        }
        match self.last_byte_at {
            None => match self.timeouts.long_polling {
                Some(lp) if now >= self.written_at + lp => Some(TimeoutKind::LongPolling),
                None if now >= self.written_at + self.timeouts.first_packet => {
                    Some(TimeoutKind::FirstPacket)
                }
                _ => None,
            },
            Some(last) if now >= last + self.timeouts.packet_gap => Some(TimeoutKind::PacketGap),
            Some(_) => None,
        }
    }
}

/// Running tasks by id, and `(next deadline, id)` for each of them.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    tasks: BTreeMap<TaskId, Running>,
    timers: BTreeSet<(Instant, TaskId)>,
}

impl InFlight {
    pub(super) fn len(&self) -> usize {
        self.tasks.len()
    }

    pub(super) fn contains(&self, task: TaskId) -> bool {
        self.tasks.contains_key(&task)
    }

    pub(super) fn insert(&mut self, task: TaskId, run: Running) {
        if let Some(old) = self.tasks.remove(&task) {
            self.timers.remove(&(old.next_deadline(), task));
        }
        self.timers.insert((run.next_deadline(), task));
        self.tasks.insert(task, run);
    }

    pub(super) fn remove(&mut self, task: TaskId) -> Option<Running> {
        let run = self.tasks.remove(&task)?;
        self.timers.remove(&(run.next_deadline(), task));
        Some(run)
    }

    /// Bytes of `task`'s response arrived at `now`: the first-packet and
    /// packet-gap timers see them.
    pub(super) fn note_progress(&mut self, task: TaskId, now: Instant) {
        let Some(run) = self.tasks.get_mut(&task) else {
            return;
        };
        self.timers.remove(&(run.next_deadline(), task));
        run.first_byte_at.get_or_insert(now);
        run.last_byte_at = Some(now);
        self.timers.insert((run.next_deadline(), task));
    }

    /// The earliest timer of any running task.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// Every task whose timer has fired at `now`, in id order, with the
    /// timer that fired.
    pub(super) fn expired(&self, now: Instant) -> Vec<(TaskId, TimeoutKind)> {
        let mut out: Vec<(TaskId, TimeoutKind)> = self
            .timers
            .iter()
            .take_while(|(t, _)| *t <= now)
            .filter_map(|(_, id)| Some((*id, self.tasks.get(id)?.expired(now)?)))
            .collect();
        out.sort_unstable_by_key(|(id, _)| *id);
        out
    }

    /// The running tasks' ids, in order, leaving nothing behind.
    pub(super) fn into_ids(self) -> impl Iterator<Item = TaskId> {
        self.tasks.into_keys()
    }
}
