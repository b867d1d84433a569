//! The task queue (reference §2.1): tasks waiting for their turn, in
//! priority order (0 first), FIFO within a priority.
//!
//! A task waits first for its not-before time (a retry interval) in a
//! time index, then in one of six ready sets — by the link it may take
//! ([`Class`]) and whether it needs an authenticated session — so dispatch
//! visits only tasks that can start now and stops when the links are full,
//! instead of walking the whole queue.

use std::collections::{BTreeMap, BTreeSet};

use crate::task::{Channel, TaskId};
use crate::time::Instant;

/// Queue order: (priority, submission counter).
pub(super) type Order = (u8, u64);

/// Which link a queued task can take; fixed at submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// The long link only (or Mars's choice at submit picked it).
    LongOnly,
    /// The short link only (or Mars's choice at submit picked it).
    ShortOnly,
    /// Either, chosen at each attempt.
    Both,
}

impl Class {
    /// The class of a task with `channel` and Mars's submit-time choice.
    pub(super) fn of(channel: Channel, frozen: Option<Channel>) -> Class {
        match frozen {
            Some(Channel::Long) => Class::LongOnly,
            Some(_) => Class::ShortOnly,
            None => match channel {
                Channel::Long => Class::LongOnly,
                Channel::Short => Class::ShortOnly,
                Channel::Both => Class::Both,
            },
        }
    }

    fn index(self) -> usize {
        match self {
            Class::LongOnly => 0,
            Class::ShortOnly => 1,
            Class::Both => 2,
        }
    }
}

/// Which classes dispatch can still start (or must look at) in this pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct Active {
    pub(super) long_only: bool,
    pub(super) short_only: bool,
    pub(super) both: bool,
}

impl Active {
    fn get(self, class: usize) -> bool {
        [self.long_only, self.short_only, self.both][class]
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    order: Order,
    class: Class,
    needs_auth: bool,
    /// Still waiting for its not-before time.
    waiting_until: Option<Instant>,
    /// The dispatch pass during which it was queued: a pass visits only
    /// tasks queued before it began.
    pass: u64,
}

/// The queue. Holds ids only; the tasks live in the engine's table.
#[derive(Clone, Debug, Default)]
pub(super) struct Queue {
    slots: BTreeMap<TaskId, Slot>,
    /// `[class][needs_auth]`, by queue order.
    ready: [[BTreeSet<(Order, TaskId)>; 2]; 3],
    waiting: BTreeSet<(Instant, TaskId)>,
    pass: u64,
}

impl Queue {
    /// Queues `id` (again: a queued task is moved), ready at `not_before`.
    pub(super) fn insert(
        &mut self,
        id: TaskId,
        order: Order,
        class: Class,
        needs_auth: bool,
        not_before: Instant,
        now: Instant,
    ) {
        self.remove(id);
        let waiting_until = (not_before > now).then_some(not_before);
        let slot = Slot {
            order,
            class,
            needs_auth,
            waiting_until,
            pass: self.pass,
        };
        match waiting_until {
            Some(t) => {
                self.waiting.insert((t, id));
            }
            None => {
                self.ready_set(&slot).insert((order, id));
            }
        }
        self.slots.insert(id, slot);
    }

    /// Takes `id` out of the queue (no-op if it is not queued).
    pub(super) fn remove(&mut self, id: TaskId) {
        let Some(slot) = self.slots.remove(&id) else {
            return;
        };
        match slot.waiting_until {
            Some(t) => {
                self.waiting.remove(&(t, id));
            }
            None => {
                self.ready_set(&slot).remove(&(slot.order, id));
            }
        }
    }

    /// The earliest not-before time of a waiting task.
    pub(super) fn next_ready_at(&self) -> Option<Instant> {
        self.waiting.first().map(|(t, _)| *t)
    }

    /// Every waiting task is ready now (the network came back).
    pub(super) fn release_waiting(&mut self) {
        while let Some((_, id)) = self.waiting.pop_first() {
            self.make_ready(id);
        }
    }

    /// Starts a dispatch pass at `now`: tasks whose not-before time has come
    /// are ready; tasks queued from here on wait for the next pass.
    pub(super) fn begin_pass(&mut self, now: Instant) -> u64 {
        self.pass += 1;
        while let Some(&(t, id)) = self.waiting.first() {
            if t > now {
                break;
            }
            self.waiting.pop_first();
            self.make_ready(id);
        }
        self.pass
    }

    /// The first ready task after `cursor` in queue order among the
    /// `active` classes (need-auth tasks only if `authed`), queued before
    /// `pass` began.
    pub(super) fn next_after(
        &self,
        cursor: Option<(Order, TaskId)>,
        active: Active,
        authed: bool,
        pass: u64,
    ) -> Option<((Order, TaskId), Class)> {
        let mut best: Option<((Order, TaskId), Class)> = None;
        for (class, sets) in self.ready.iter().enumerate() {
            if !active.get(class) {
                continue;
            }
            for set in sets.iter().take(if authed { 2 } else { 1 }) {
                let mut range = match cursor {
                    Some(c) => {
                        set.range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                    }
                    None => set.range(..),
                };
                let first =
                    range.find(|(_, id)| self.slots.get(id).is_some_and(|s| s.pass != pass));
                if let Some(&key) = first {
                    if best.is_none_or(|(b, _)| key < b) {
                        let class = self.slots.get(&key.1).map_or(Class::Both, |s| s.class);
                        best = Some((key, class));
                    }
                }
            }
        }
        best
    }

    fn make_ready(&mut self, id: TaskId) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        slot.waiting_until = None;
        let slot = *slot;
        self.ready_set(&slot).insert((slot.order, id));
    }

    fn ready_set(&mut self, slot: &Slot) -> &mut BTreeSet<(Order, TaskId)> {
        &mut self.ready[slot.class.index()][usize::from(slot.needs_auth)]
    }
}
