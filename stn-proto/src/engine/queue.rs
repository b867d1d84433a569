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

/// Where a queued task stands in the queue, kept in its stage
/// ([`Stage::Queued`](super::stage::Stage::Queued)); its order, class and
/// auth key are in its record ([`Keys`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Place {
    /// Still waiting for its not-before time.
    waiting_until: Option<Instant>,
    /// The dispatch pass during which it was queued: a pass visits only
    /// tasks queued before it began.
    pass: u64,
}

impl Place {
    /// Whether a dispatch pass `pass` may visit it.
    pub(super) fn before(&self, pass: u64) -> bool {
        self.pass != pass
    }
}

/// A queued task's keys in the queue's indexes, as its record holds them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Keys<'a> {
    pub(super) order: Order,
    pub(super) class: Class,
    /// What it waits for if it needs auth.
    pub(super) gate: Option<&'a Arc<AuthKey>>,
}

type ReadySet = BTreeSet<(Order, TaskId)>;

/// The queue's indexes. Holds ids only: each queued task keeps its own
/// [`Place`] and [`Keys`] and says what they are when it moves or leaves.
#[derive(Clone, Debug, Default)]
pub(super) struct Queue {
    /// Tasks that need no auth, `[class]`, by queue order.
    open: [ReadySet; 3],
    /// Need-auth tasks by what they wait for, `[class]`; a key with no task
    /// is removed, so dispatch looks at the keys in use only.
    gated: BTreeMap<Arc<AuthKey>, [ReadySet; 3]>,
    waiting: BTreeSet<(Instant, TaskId)>,
    pass: u64,
}

impl Queue {
    /// Queues `id`, ready at `not_before`: the place to keep in its stage.
    pub(super) fn insert(
        &mut self,
        id: TaskId,
        keys: Keys<'_>,
        not_before: Instant,
        now: Instant,
    ) -> Place {
        let place = Place {
            waiting_until: (not_before > now).then_some(not_before),
            pass: self.pass,
        };
        self.put(id, keys, &place);
        place
    }

    /// Indexes `id` at `place` under `keys`.
    pub(super) fn put(&mut self, id: TaskId, keys: Keys<'_>, place: &Place) {
        match place.waiting_until {
            Some(t) => {
                self.waiting.insert((t, id));
            }
            None => self.add_ready(id, keys),
        }
    }

    /// Takes `id`, at `place` under `keys`, out of the indexes.
    pub(super) fn remove(&mut self, id: TaskId, keys: Keys<'_>, place: &Place) {
        match place.waiting_until {
            Some(t) => {
                self.waiting.remove(&(t, id));
            }
            None => self.remove_ready(id, keys),
        }
    }

    /// Whether `id` is indexed at `place` under `keys`.
    #[cfg(any(test, fuzzing))]
    pub(super) fn contains(&self, id: TaskId, keys: Keys<'_>, place: &Place) -> bool {
        match place.waiting_until {
            Some(t) => self.waiting.contains(&(t, id)),
            None => {
                let sets = match keys.gate {
                    None => Some(&self.open),
                    Some(key) => self.gated.get(key),
                };
                sets.is_some_and(|s| s[keys.class.index()].contains(&(keys.order, id)))
            }
        }
    }

    /// Tasks indexed.
    #[cfg(any(test, fuzzing))]
    pub(super) fn len(&self) -> usize {
        let ready = |sets: &[ReadySet; 3]| sets.iter().map(BTreeSet::len).sum::<usize>();
        self.waiting.len() + ready(&self.open) + self.gated.values().map(ready).sum::<usize>()
    }

    /// The earliest not-before time of a waiting task.
    pub(super) fn next_ready_at(&self) -> Option<Instant> {
        self.waiting.first().map(|(t, _)| *t)
    }

    /// Takes the earliest waiting task out of the time index if its
    /// not-before time is at or before `until` (`None`: whenever it is), for
    /// the caller to make it ready ([`Queue::make_ready`]).
    pub(super) fn pop_waiting(&mut self, until: Option<Instant>) -> Option<TaskId> {
        let &(t, id) = self.waiting.first()?;
        if until.is_some_and(|u| t > u) {
            return None;
        }
        self.waiting.pop_first();
        Some(id)
    }

    /// `id`, taken out of the time index, is ready.
    pub(super) fn make_ready(&mut self, id: TaskId, keys: Keys<'_>, place: &mut Place) {
        place.waiting_until = None;
        self.add_ready(id, keys);
    }

    /// Starts a dispatch pass: tasks queued from here on wait for the next
    /// one.
    pub(super) fn begin_pass(&mut self) -> u64 {
        self.pass += 1;
        self.pass
    }

    /// The first ready task after `cursor` in queue order among the
    /// `active` classes (need-auth tasks only if `authed` says their key
    /// may go) that `visit` lets the pass start, with the class `visit`
    /// gives it.
    pub(super) fn next_after(
        &self,
        cursor: Option<(Order, TaskId)>,
        active: Active,
        authed: impl Fn(&AuthKey) -> bool,
        visit: impl Fn(TaskId) -> Option<Class>,
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
                let first = range.find_map(|&key| visit(key.1).map(|class| (key, class)));
                if let Some((key, class)) = first {
                    if best.is_none_or(|(b, _)| key < b) {
                        best = Some((key, class));
                    }
                }
            }
        }
        best
    }

    fn add_ready(&mut self, id: TaskId, keys: Keys<'_>) {
        let sets = match keys.gate {
            None => &mut self.open,
            Some(key) => self.gated.entry(key.clone()).or_default(),
        };
        sets[keys.class.index()].insert((keys.order, id));
    }

    fn remove_ready(&mut self, id: TaskId, keys: Keys<'_>) {
        let class = keys.class.index();
        match keys.gate {
            None => {
                self.open[class].remove(&(keys.order, id));
            }
            Some(key) => {
                if let Some(sets) = self.gated.get_mut(key) {
                    sets[class].remove(&(keys.order, id));
                    if sets.iter().all(BTreeSet::is_empty) {
                        self.gated.remove(key);
                    }
                }
            }
        }
    }
}
