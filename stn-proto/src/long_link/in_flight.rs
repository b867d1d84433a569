//! The tasks awaiting a response on an established long link, with their
//! timers in one index so the next deadline and the expired tasks are found
//! without visiting every task.
//!
//! With [`wait_follows_link_progress`](super::LongLinkConfig::wait_follows_link_progress)
//! a waiting task's timers start at the later of its write and the link's
//! last response byte. That instant only moves forward, so a task's index
//! key (taken when it was last looked at) is a lower bound of its real
//! deadline: a key that comes due is checked and, if the task has not
//! really expired, moved to its real deadline.

use std::collections::BTreeSet;

use crate::error::TimeoutKind;
use crate::short_link::ExchangeTimeouts;
use crate::task::{TaskId, TaskTable};
use crate::time::{Duration, Instant};

/// A task whose timer fired: the task, which timer, and that timer's value
/// (`None` for the task's own deadline).
pub(super) type Fired = (TaskId, TimeoutKind, Option<Duration>);

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
    /// Where its read-write and first-packet clocks start: its write, or,
    /// while it waits for its first byte, the link's last progress if later.
    fn clock_start(&self, progress: Option<Instant>) -> Instant {
        match (self.last_byte_at, progress) {
            (None, Some(p)) => self.written_at.max(p),
            _ => self.written_at,
        }
    }

    /// The earliest instant at which one of its timers fires, given the
    /// link's last progress.
    fn next_deadline(&self, progress: Option<Instant>) -> Instant {
        let start = self.clock_start(progress);
        let rw = start + self.timeouts.read_write;
        let wait = match self.last_byte_at {
            None => {
                start
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
    /// `next_deadline(progress) <= now`), with its value. The task deadline
    /// wins, then read-write (Mars: RW overrides), then first-packet or
    /// packet-gap.
    fn expired(
        &self,
        now: Instant,
        progress: Option<Instant>,
    ) -> Option<(TimeoutKind, Option<Duration>)> {
        let start = self.clock_start(progress);
        let t = &self.timeouts;
        if self.deadline.is_some_and(|d| d <= now) {
            return Some((TimeoutKind::Task, None));
        }
        if now >= start + t.read_write {
            return Some((TimeoutKind::ReadWrite, Some(t.read_write)));
        }
        match self.last_byte_at {
            None => match t.long_polling {
                Some(lp) if now >= start + lp => Some((TimeoutKind::LongPolling, Some(lp))),
                None if now >= start + t.first_packet => {
                    Some((TimeoutKind::FirstPacket, Some(t.first_packet)))
                }
                _ => None,
            },
            Some(last) if now >= last + t.packet_gap => {
                Some((TimeoutKind::PacketGap, Some(t.packet_gap)))
            }
            Some(_) => None,
        }
    }
}

/// Running tasks by id, and `(deadline key, id)` for each of them.
#[derive(Debug)]
pub(super) struct InFlight {
    /// Running tasks, each with its key in `timers`.
    tasks: TaskTable<(Running, Instant)>,
    timers: BTreeSet<(Instant, TaskId)>,
    /// The last response byte of any task, if waiting tasks are timed from it.
    progress: Option<Instant>,
    follow_progress: bool,
}

impl InFlight {
    pub(super) fn new(follow_progress: bool) -> Self {
        InFlight {
            tasks: TaskTable::default(),
            timers: BTreeSet::new(),
            progress: None,
            follow_progress,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.tasks.len()
    }

    pub(super) fn contains(&self, task: TaskId) -> bool {
        self.tasks.contains_key(&task)
    }

    pub(super) fn insert(&mut self, task: TaskId, run: Running) {
        self.remove(task);
        let key = run.next_deadline(self.progress);
        self.timers.insert((key, task));
        self.tasks.insert(task, (run, key));
    }

    pub(super) fn remove(&mut self, task: TaskId) -> Option<Running> {
        let (run, key) = *self.tasks.remove(&task)?;
        self.timers.remove(&(key, task));
        Some(run)
    }

    /// Bytes of `task`'s response arrived at `now`: the first-packet and
    /// packet-gap timers see them.
    pub(super) fn note_progress(&mut self, task: TaskId, now: Instant) {
        let Some((run, key)) = self.tasks.get_mut(&task) else {
            return;
        };
        if self.follow_progress {
            self.progress = Some(now);
        }
        self.timers.remove(&(*key, task));
        run.first_byte_at.get_or_insert(now);
        run.last_byte_at = Some(now);
        *key = run.next_deadline(self.progress);
        self.timers.insert((*key, task));
    }

    /// The earliest timer key of any running task: a lower bound of the
    /// next deadline (exact unless waiting tasks follow the link's progress).
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// Every task whose timer has fired at `now`, in id order, with the
    /// timer that fired. Keys that came due for tasks that have not expired
    /// move to their real deadlines.
    pub(super) fn expired(&mut self, now: Instant) -> Vec<Fired> {
        let due: Vec<(Instant, TaskId)> = self
            .timers
            .iter()
            .take_while(|(t, _)| *t <= now)
            .copied()
            .collect();
        let mut out = Vec::new();
        for (key, id) in due {
            let Some((run, slot)) = self.tasks.get_mut(&id) else {
                continue;
            };
            match run.expired(now, self.progress) {
                Some((kind, value)) => out.push((id, kind, value)),
                None => {
                    self.timers.remove(&(key, id));
                    *slot = run.next_deadline(self.progress);
                    self.timers.insert((*slot, id));
                }
            }
        }
        out.sort_unstable_by_key(|(id, ..)| *id);
        out
    }

    /// The running tasks' ids, in order, leaving nothing behind.
    pub(super) fn into_ids(self) -> impl Iterator<Item = TaskId> {
        self.tasks.into_ids()
    }
}
