//! Parked tasks (Mars's zombies, [`ZombiePolicy`](super::ZombiePolicy)):
//! failed tasks that wait for a sign of connectivity, their budget's end,
//! or an idle restart.

use std::collections::{BTreeMap, BTreeSet};

use super::timer_set::TimerSet;
use crate::task::TaskId;
use crate::time::{Duration, Instant};

/// The parked tasks, by id, by parking time and by budget end.
#[derive(Clone, Debug, Default)]
pub(super) struct Zombies {
    parked_at: BTreeMap<TaskId, Instant>,
    by_time: BTreeSet<(Instant, TaskId)>,
    budgets: TimerSet<TaskId>,
}

impl Zombies {
    pub(super) fn park(&mut self, id: TaskId, now: Instant, budget_end: Option<Instant>) {
        self.unpark(id);
        self.parked_at.insert(id, now);
        self.by_time.insert((now, id));
        self.budgets.set(id, budget_end);
    }

    pub(super) fn unpark(&mut self, id: TaskId) {
        if let Some(at) = self.parked_at.remove(&id) {
            self.by_time.remove(&(at, id));
            self.budgets.set(id, None);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.parked_at.is_empty()
    }

    /// Every parked task, in id order.
    pub(super) fn ids(&self) -> Vec<TaskId> {
        self.parked_at.keys().copied().collect()
    }

    /// Parked tasks whose budget has ended at `now`.
    pub(super) fn expired(&self, now: Instant) -> Vec<TaskId> {
        self.budgets.due(now)
    }

    /// Parked tasks due for the idle restart at `now`: parked at least
    /// `idle` ago, with no task started for `idle` either.
    pub(super) fn restart_due(
        &self,
        now: Instant,
        last_task_start: Instant,
        idle: Duration,
    ) -> Vec<TaskId> {
        if last_task_start + idle > now {
            return Vec::new();
        }
        self.by_time
            .iter()
            .take_while(|(at, _)| *at + idle <= now)
            .map(|(_, id)| *id)
            .collect()
    }

    /// The next budget end or idle restart.
    pub(super) fn next_deadline(
        &self,
        last_task_start: Instant,
        idle: Duration,
    ) -> Option<Instant> {
        let restart = self
            .by_time
            .first()
            .map(|(at, _)| (*at).max(last_task_start) + idle);
        match (restart, self.budgets.first()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
