//! The task queue (reference §2.1): tasks waiting for their turn, in
//! priority order (0 first), FIFO within a priority.
//!
//! A task waits first for its not-before time (a retry interval) in a
//! time index, then in a ready set — by the link it may take ([`Class`])
//! and, for a need-auth task, the (host, user id) it waits for
//! ([`AuthKey`]) — so dispatch visits only tasks that can start now and
//! stops when the links are full, instead of walking the whole queue.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::id_map::IdMap;
use crate::task::{Channel, TaskId};
use crate::time::Instant;

use super::auth::AuthKey;

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

#[derive(Clone, Debug)]
struct Slot {
    order: Order,
    class: Class,
    /// What it waits for if it needs auth.
    gate: Option<Arc<AuthKey>>,
    /// Still waiting for its not-before time.
    waiting_until: Option<Instant>,
    /// The dispatch pass during which it was queued: a pass visits only
    /// tasks queued before it began.
    pass: u64,
}

type ReadySet = BTreeSet<(Order, TaskId)>;

/// The queue. Holds ids only; the tasks live in the engine's table.
#[derive(Clone, Debug, Default)]
pub(super) struct Queue {
    slots: IdMap<TaskId, Slot>,
    /// Tasks that need no auth, `[class]`, by queue order.
    open: [ReadySet; 3],
    /// Need-auth tasks by what they wait for, `[class]`; a key with no task
    /// is removed, so dispatch looks at the keys in use only.
    gated: BTreeMap<Arc<AuthKey>, [ReadySet; 3]>,
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
        gate: Option<Arc<AuthKey>>,
        not_before: Instant,
        now: Instant,
    ) {
        self.remove(id);
        let waiting_until = (not_before > now).then_some(not_before);
        let slot = Slot {
            order,
            class,
            gate,
            waiting_until,
            pass: self.pass,
        };
        match waiting_until {
            Some(t) => {
                self.waiting.insert((t, id));
            }
            None => self.add_ready(&slot, id),
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
            None => self.remove_ready(&slot, id),
        }
    }

    /// Moves a queued `id` to another class and auth key, keeping its place
    /// and not-before time (no-op if it is not queued).
    pub(super) fn reclass(&mut self, id: TaskId, class: Class, gate: Option<Arc<AuthKey>>) {
        let Some(slot) = self.slots.get(&id).cloned() else {
            return;
        };
        if slot.waiting_until.is_none() {
            self.remove_ready(&slot, id);
        }
        let slot = Slot {
            class,
            gate,
            ..slot
        };
        if slot.waiting_until.is_none() {
            self.add_ready(&slot, id);
        }
        self.slots.insert(id, slot);
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
    /// `active` classes (need-auth tasks only if `authed` says their key
    /// may go), queued before `pass` began.
    pub(super) fn next_after(
        &self,
        cursor: Option<(Order, TaskId)>,
        active: Active,
        authed: impl Fn(&AuthKey) -> bool,
        pass: u64,
    ) -> Option<((Order, TaskId), Class)> {
        let mut best: Option<((Order, TaskId), Class)> = None;
        let gated = self
            .gated
            .iter()
            .filter(|(key, _)| authed(key))
            .map(|(_, sets)| sets);
        for sets in std::iter::once(&self.open).chain(gated) {
            for (class, set) in sets.iter().enumerate() {
                if !active.get(class) {
                    continue;
                }
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
        let slot = slot.clone();
        self.add_ready(&slot, id);
    }

    fn add_ready(&mut self, slot: &Slot, id: TaskId) {
        let sets = match &slot.gate {
            None => &mut self.open,
            Some(key) => self.gated.entry(key.clone()).or_default(),
        };
        sets[slot.class.index()].insert((slot.order, id));
    }

    fn remove_ready(&mut self, slot: &Slot, id: TaskId) {
        let class = slot.class.index();
        match &slot.gate {
            None => {
                self.open[class].remove(&(slot.order, id));
            }
            Some(key) => {
                if let Some(sets) = self.gated.get_mut(key) {
                    sets[class].remove(&(slot.order, id));
                    if sets.iter().all(BTreeSet::is_empty) {
                        self.gated.remove(key);
                    }
                }
            }
        }
    }
}
