//! Parked tasks (Mars's zombies, [`ZombiePolicy`](super::ZombiePolicy)):
//! failed tasks that wait for a sign of connectivity, their budget's end,
//! or an idle restart.

use std::collections::BTreeSet;

use super::timer_set::TimeIndex;
use crate::task::TaskId;
use crate::time::{Duration, Instant};

/// The parked tasks by parking time and by budget end. Each parked task
/// keeps its own parking time ([`Stage::Parked`](super::stage::Stage::Parked))
/// and budget end ([`Entry::budget_end`](super::stage::Entry::budget_end)),
/// and says what they were when it leaves.
#[derive(Clone, Debug, Default)]
pub(super) struct Zombies {
    by_time: BTreeSet<(Instant, TaskId)>,
    budgets: TimeIndex<TaskId>,
}

impl Zombies {
    /// Parks `id` at `now`, until `budget_end`.
    pub(super) fn park(&mut self, id: TaskId, now: Instant, budget_end: Option<Instant>) {
        self.by_time.insert((now, id));
        self.budgets.update(id, None, budget_end);
    }

    /// Takes `id`, parked at `since` until `budget_end`, out.
    pub(super) fn unpark(&mut self, id: TaskId, since: Instant, budget_end: Option<Instant>) {
        self.by_time.remove(&(since, id));
        self.budgets.update(id, budget_end, None);
    }

    /// Whether `id` is parked at `since` until `budget_end`.
    #[cfg(any(test, fuzzing))]
    pub(super) fn contains(&self, id: TaskId, since: Instant, budget_end: Option<Instant>) -> bool {
        self.by_time.contains(&(since, id))
            && budget_end.is_none_or(|at| self.budgets.contains(id, at))
    }

    /// Parked tasks, and those with a budget end.
    #[cfg(any(test, fuzzing))]
    pub(super) fn len(&self) -> (usize, usize) {
        (self.by_time.len(), self.budgets.len())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }

    /// Every parked task, in id order.
    pub(super) fn ids(&self) -> Vec<TaskId> {
        let mut ids: Vec<TaskId> = self.by_time.iter().map(|(_, id)| *id).collect();
        ids.sort_unstable();
        ids
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
