//! The held tasks and their indexes: the table, the queue, the deadline and
//! zombie indexes, and the running short-link attempts' timers. The one
//! place a task changes [`Stage`], so every index agrees with the stages.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::task::{TaskId, TaskTable};
use crate::time::{Duration, Instant};

use super::auth::AuthKey;
use super::hedge::{HedgePolicy, HedgeStarts};
use super::queue::{Active, Class, Keys, Order, Queue};
use super::short::AttemptTimers;
use super::stage::{Attempt, Entry, On, Pending, Stage};
use super::timer_set::TimeIndex;
use super::zombies::Zombies;

/// What [`Tasks::stop`] stopped.
#[derive(Debug)]
pub(super) enum Stopped {
    /// A running attempt.
    Running(Attempt),
    /// A response held for the app's verdict.
    Judged(Box<Pending>),
}

/// Every held task.
#[derive(Debug)]
pub(super) struct Tasks {
    table: TaskTable<Entry>,
    /// Ids of the tasks held by the named long links (each link's engine
    /// has its own ids; these are the ones the app sees), so that no task
    /// here gets one.
    foreign: BTreeSet<TaskId>,
    next_id: TaskId,
    /// Submissions so far: the queue's FIFO order within a priority.
    counter: u64,
    queue: Queue,
    /// Task deadlines ([`Entry::deadline`]), of every task not parked.
    deadlines: TimeIndex<TaskId>,
    zombies: Zombies,
    /// The running short-link exchanges' own timers.
    exchange_timers: TimeIndex<TaskId>,
    /// The running hedges' own timers.
    hedge_timers: TimeIndex<TaskId>,
    /// The running short-link attempts that may start a hedge.
    hedge_starts: HedgeStarts,
    /// Running short-link attempts.
    short_running: usize,
    last_task_start: Instant,
}

impl Tasks {
    pub(super) fn new(now: Instant) -> Self {
        Tasks {
            table: TaskTable::default(),
            foreign: BTreeSet::new(),
            next_id: TaskId::FIRST,
            counter: 0,
            queue: Queue::default(),
            deadlines: TimeIndex::default(),
            zombies: Zombies::default(),
            exchange_timers: TimeIndex::default(),
            hedge_timers: TimeIndex::default(),
            hedge_starts: HedgeStarts::default(),
            short_running: 0,
            last_task_start: now,
        }
    }

    // ---- the table ----

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    pub(super) fn contains(&self, id: TaskId) -> bool {
        self.table.contains_key(&id)
    }

    pub(super) fn get(&self, id: TaskId) -> Option<&Entry> {
        self.table.get(&id)
    }

    pub(super) fn get_mut(&mut self, id: TaskId) -> Option<&mut Entry> {
        self.table.get_mut(&id)
    }

    /// Every task, in id order (one pass and a sort: for rare events).
    pub(super) fn iter(&self) -> impl Iterator<Item = (TaskId, &Entry)> {
        self.table.iter()
    }

    /// Every task id, in order.
    pub(super) fn ids(&self) -> Vec<TaskId> {
        self.table.keys().collect()
    }

    /// Running short-link attempts.
    pub(super) fn short_running(&self) -> usize {
        self.short_running
    }

    /// A fresh id and the queue order of a new task of `priority`.
    pub(super) fn allocate(&mut self, priority: u8) -> (TaskId, Order) {
        let id = self.next_free_id();
        self.counter += 1;
        (id, (priority, self.counter))
    }

    fn next_free_id(&mut self) -> TaskId {
        let mut id = self.next_id;
        while self.table.contains_key(&id) || self.foreign.contains(&id) || id.is_reserved() {
            id = id.next();
        }
        self.next_id = id.next();
        id
    }

    /// An id for a task a named long link holds, kept from every other
    /// task until [`release_foreign`](Self::release_foreign).
    pub(super) fn reserve_foreign(&mut self) -> TaskId {
        let id = self.next_free_id();
        self.foreign.insert(id);
        id
    }

    /// The named link's task `id` ended: its id may be used again.
    pub(super) fn release_foreign(&mut self, id: TaskId) {
        self.foreign.remove(&id);
    }

    /// Holds a new task (stage [`Stage::Settling`]: the caller queues or
    /// finishes it).
    pub(super) fn insert(&mut self, id: TaskId, entry: Entry) {
        self.deadlines.update(id, None, Some(entry.deadline));
        self.table.insert(id, entry);
    }

    /// Forgets a task that has ended. A running attempt must have been
    /// ended first.
    pub(super) fn remove(&mut self, id: TaskId) -> Option<Box<Entry>> {
        let entry = self.table.remove(&id)?;
        debug_assert!(
            !matches!(entry.stage, Stage::Running(_)),
            "task {id} removed while running"
        );
        Self::unqueue(&mut self.queue, id, &entry);
        match entry.stage {
            Stage::Parked { since } => self.zombies.unpark(id, since, entry.budget_end),
            _ => self.deadlines.update(id, Some(entry.deadline), None),
        }
        Some(entry)
    }

    // ---- stages ----

    /// Queues `id`, ready at `not_before`.
    pub(super) fn enqueue(&mut self, now: Instant, id: TaskId, not_before: Instant) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        Self::unqueue(&mut self.queue, id, e);
        let place = self.queue.insert(id, e.queue_keys(), not_before, now);
        e.stage = Stage::Queued(place);
    }

    /// Takes `id`'s record `e` out of the queue's indexes if it is queued
    /// (its stage is left for the caller to change).
    fn unqueue(queue: &mut Queue, id: TaskId, e: &Entry) {
        if let Stage::Queued(place) = &e.stage {
            queue.remove(id, e.queue_keys(), place);
        }
    }

    /// Starts an attempt of `id` on `on`: the one place an attempt begins.
    pub(super) fn begin_attempt(&mut self, now: Instant, id: TaskId, on: On) {
        if let Some(e) = self.table.get_mut(&id) {
            if matches!(on, On::Short(_)) {
                self.short_running += 1;
            }
            Self::unqueue(&mut self.queue, id, e);
            e.stage = Stage::Running(Attempt { started: now, on });
            e.attempts += 1;
        }
        self.last_task_start = now;
    }

    /// Ends the running attempt of `id`, if it has one: the one place an
    /// attempt ends. The task is left settling, for the caller to decide its
    /// fate; what the attempt held comes back with it.
    pub(super) fn end_attempt(&mut self, id: TaskId) -> Option<Attempt> {
        let e = self.table.get_mut(&id)?;
        let attempt = match std::mem::replace(&mut e.stage, Stage::Settling) {
            Stage::Running(attempt) => attempt,
            other => {
                e.stage = other;
                return None;
            }
        };
        if let On::Short(a) = &attempt.on {
            self.short_running -= 1;
            let old = a.timers;
            self.exchange_timers.update(id, old.exchange, None);
            self.hedge_timers.update(id, old.hedge, None);
            self.hedge_starts.update(id, old.start, None);
        }
        Some(attempt)
    }

    /// Takes the response `id` holds for a verdict, leaving it settling;
    /// `None` if it holds none.
    pub(super) fn take_judged(&mut self, id: TaskId) -> Option<Box<Pending>> {
        let e = self.table.get_mut(&id)?;
        match std::mem::replace(&mut e.stage, Stage::Settling) {
            Stage::Judging(p) => Some(p),
            other => {
                e.stage = other;
                None
            }
        }
    }

    /// Holds `pending` for the app's verdict.
    pub(super) fn judging(&mut self, id: TaskId, pending: Pending) {
        if let Some(e) = self.table.get_mut(&id) {
            e.stage = Stage::Judging(Box::new(pending));
        }
    }

    /// Stops whatever `id` has running (or the response it holds for a
    /// verdict), without deciding its fate: a queued task leaves the queue
    /// and settles, a parked one stays parked.
    pub(super) fn stop(&mut self, id: TaskId) -> Option<Stopped> {
        let stage = &self.table.get(&id)?.stage;
        match stage {
            Stage::Running(_) => self.end_attempt(id).map(Stopped::Running),
            Stage::Judging(_) => self.take_judged(id).map(Stopped::Judged),
            Stage::Queued(_) => {
                self.dequeue(id);
                None
            }
            Stage::Parked { .. } | Stage::Settling => None,
        }
    }

    /// Whether `id` may be parked at `now`: its zombie budget runs on.
    pub(super) fn may_park(&self, id: TaskId, now: Instant) -> bool {
        self.table
            .get(&id)
            .is_some_and(|e| e.budget_end.is_some_and(|b| b > now))
    }

    /// Parks `id` (Mars's zombie) until a sign of connectivity, its budget's
    /// end or an idle restart.
    pub(super) fn park(&mut self, now: Instant, id: TaskId, error: crate::error::Error) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        Self::unqueue(&mut self.queue, id, e);
        match e.stage {
            Stage::Parked { since } => self.zombies.unpark(id, since, e.budget_end),
            _ => self.deadlines.update(id, Some(e.deadline), None),
        }
        e.stage = Stage::Parked { since: now };
        e.last_error = Some(error);
        self.zombies.park(id, now, e.budget_end);
    }

    /// Replays a parked task now: one more attempt, no retries, a fresh
    /// task timeout `fresh` within the remaining budget.
    pub(super) fn replay(&mut self, now: Instant, id: TaskId, fresh: Duration) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        let budget = e.budget_end.unwrap_or(now);
        let old = match e.stage {
            Stage::Parked { since } => {
                self.zombies.unpark(id, since, e.budget_end);
                None
            }
            _ => Some(e.deadline),
        };
        e.deadline = (now + fresh).min(budget);
        e.retries_left = 0;
        self.deadlines.update(id, old, Some(e.deadline));
        self.enqueue(now, id, now);
    }

    /// Every parked task, in id order.
    pub(super) fn parked(&self) -> Vec<TaskId> {
        self.zombies.ids()
    }

    pub(super) fn any_parked(&self) -> bool {
        !self.zombies.is_empty()
    }

    // ---- the queue ----

    /// Moves a queued `id` to another class and auth key, keeping its place
    /// and not-before time; any other task just changes its class.
    pub(super) fn reclass(&mut self, id: TaskId, class: Class, gate: Option<Arc<AuthKey>>) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        Self::unqueue(&mut self.queue, id, e);
        e.class = class;
        e.gate = gate;
        if let Stage::Queued(place) = &e.stage {
            self.queue.put(id, e.queue_keys(), place);
        }
    }

    /// `id`, taken out of the queue's time index, is ready.
    fn make_ready(&mut self, id: TaskId) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        if let Stage::Queued(place) = &mut e.stage {
            let keys = Keys {
                order: e.order,
                class: e.class,
                gate: e.gate.as_ref(),
            };
            self.queue.make_ready(id, keys, place);
        }
    }

    /// Every task waiting for its not-before time is ready now (the network
    /// came back).
    pub(super) fn release_waiting(&mut self) {
        while let Some(id) = self.queue.pop_waiting(None) {
            self.make_ready(id);
        }
    }

    /// Starts a dispatch pass at `now`: tasks whose not-before time has come
    /// are ready; tasks queued from here on wait for the next pass.
    pub(super) fn begin_pass(&mut self, now: Instant) -> u64 {
        let pass = self.queue.begin_pass();
        while let Some(id) = self.queue.pop_waiting(Some(now)) {
            self.make_ready(id);
        }
        pass
    }

    /// The next queued task a dispatch pass may start (see
    /// [`Queue::next_after`]).
    pub(super) fn next_ready(
        &self,
        cursor: Option<(Order, TaskId)>,
        active: Active,
        authed: impl Fn(&AuthKey) -> bool,
        pass: u64,
    ) -> Option<((Order, TaskId), Class)> {
        self.queue.next_after(cursor, active, authed, |id| {
            let e = self.table.get(&id)?;
            match &e.stage {
                Stage::Queued(place) if place.before(pass) => Some(e.class),
                _ => None,
            }
        })
    }

    /// Takes a queued `id` out of the queue, leaving it settling.
    pub(super) fn dequeue(&mut self, id: TaskId) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        if matches!(e.stage, Stage::Queued(_)) {
            Self::unqueue(&mut self.queue, id, e);
            e.stage = Stage::Settling;
        }
    }

    // ---- timers ----

    /// Tasks whose deadline or zombie budget is due at `now`, and parked
    /// tasks due for their idle restart (`idle` after parking, with no task
    /// started for as long), in id order.
    pub(super) fn due(&self, now: Instant, idle: Duration) -> Vec<TaskId> {
        let mut due: Vec<TaskId> = self.deadlines.due(now);
        due.extend(self.zombies.expired(now));
        due.extend(self.zombies.restart_due(now, self.last_task_start, idle));
        due.sort_unstable();
        due.dedup();
        due
    }

    /// Running short-link attempts whose exchange has a timer due at `now`.
    pub(super) fn exchange_timers_due(&self, now: Instant) -> Vec<TaskId> {
        self.exchange_timers.due(now)
    }

    /// Running short-link attempts whose hedge has a timer due at `now`.
    pub(super) fn hedge_timers_due(&self, now: Instant) -> Vec<TaskId> {
        self.hedge_timers.due(now)
    }

    /// The earliest deadline of the tasks, the queue, the parked tasks
    /// (`idle`: their idle restart) and the running exchanges and hedges;
    /// hedge starts are [`next_hedge_start`](Self::next_hedge_start).
    pub(super) fn next_timeout(&self, idle: Duration) -> Option<Instant> {
        [
            self.deadlines.first(),
            self.queue.next_ready_at(),
            self.zombies.next_deadline(self.last_task_start, idle),
            self.exchange_timers.first(),
            self.hedge_timers.first(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Re-reads the timers of `id`'s short-link attempt (its exchange, its
    /// running hedge, when it may start the next hedge under `policy`)
    /// after a call into it.
    pub(super) fn refresh_attempt_timers(&mut self, id: TaskId, policy: Option<&HedgePolicy>) {
        let Some(e) = self.table.get_mut(&id) else {
            return;
        };
        let task = &e.task;
        let Some(a) = (match &mut e.stage {
            Stage::Running(Attempt {
                on: On::Short(a), ..
            }) => Some(a),
            _ => None,
        }) else {
            return;
        };
        let new = AttemptTimers {
            exchange: a.next_exchange_timeout(),
            hedge: a.next_hedge_timeout(),
            start: policy
                .and_then(|p| a.hedge_basis(p, task))
                .map(|(k, sent, server)| (k, sent + server)),
        };
        let old = std::mem::replace(&mut a.timers, new);
        self.exchange_timers.update(id, old.exchange, new.exchange);
        self.hedge_timers.update(id, old.hedge, new.hedge);
        self.hedge_starts.update(id, old.start, new.start);
    }

    /// When the attempt of `id` should start its next hedge under `policy`
    /// with RTT hint `rtt`, if it may, from the attempt itself (the index's
    /// keys must agree: checked in debug builds).
    fn hedge_due(
        &self,
        id: TaskId,
        policy: &HedgePolicy,
        rtt: Option<Duration>,
    ) -> Option<Instant> {
        let e = self.table.get(&id)?;
        let (k, sent, server) = e.short_attempt()?.hedge_basis(policy, &e.task)?;
        // Each further hedge waits one more delay.
        Some(sent + policy.delay(rtt).saturating_mul(k) + server)
    }

    /// When the next hedge of any attempt is due.
    pub(super) fn next_hedge_start(
        &self,
        policy: &HedgePolicy,
        rtt: Option<Duration>,
    ) -> Option<Instant> {
        let delay = policy.delay(rtt);
        (1..=policy.max_hedges)
            .filter_map(|k| self.hedge_starts.for_hedge(k, delay).next())
            .map(|(id, due)| {
                debug_assert_eq!(Some(due), self.hedge_due(id, policy, rtt));
                due
            })
            .min()
    }

    /// The attempts whose next hedge is due at `now`, in id order.
    pub(super) fn hedges_due(
        &self,
        now: Instant,
        policy: &HedgePolicy,
        rtt: Option<Duration>,
    ) -> Vec<TaskId> {
        let delay = policy.delay(rtt);
        let mut due: Vec<TaskId> = Vec::new();
        for k in 1..=policy.max_hedges {
            for (id, at) in self.hedge_starts.for_hedge(k, delay) {
                debug_assert_eq!(Some(at), self.hedge_due(id, policy, rtt));
                if at > now {
                    break;
                }
                due.push(id);
            }
        }
        due.sort_unstable();
        due
    }

    /// Checks that every index agrees with the stages (the engine's model
    /// check and fuzzer call it after every drain).
    #[cfg(any(test, fuzzing))]
    pub(super) fn check(&self) {
        let mut short = 0;
        let (mut deadlines, mut exchange, mut hedge, mut starts) = (0, 0, 0, 0);
        let (mut parked, mut budgets, mut queued) = (0, 0, 0);
        for (id, e) in self.table.iter() {
            if !matches!(e.stage, Stage::Parked { .. }) {
                assert!(self.deadlines.contains(id, e.deadline), "{id}'s deadline");
                deadlines += 1;
            }
            if let Some(a) = e.short_attempt() {
                let t = a.timers;
                assert!(t
                    .exchange
                    .is_none_or(|at| self.exchange_timers.contains(id, at)));
                assert!(t.hedge.is_none_or(|at| self.hedge_timers.contains(id, at)));
                assert!(t
                    .start
                    .is_none_or(|key| self.hedge_starts.contains(id, key)));
                exchange += usize::from(t.exchange.is_some());
                hedge += usize::from(t.hedge.is_some());
                starts += usize::from(t.start.is_some());
            }
            match &e.stage {
                Stage::Settling => panic!("task {id} left settling"),
                Stage::Queued(place) => {
                    assert!(
                        self.queue.contains(id, e.queue_keys(), place),
                        "queued {id} not in the queue"
                    );
                    queued += 1;
                }
                Stage::Parked { since } => {
                    assert!(
                        self.zombies.contains(id, *since, e.budget_end),
                        "parked {id} not parked"
                    );
                    parked += 1;
                    budgets += usize::from(e.budget_end.is_some());
                }
                Stage::Running(a) => short += usize::from(matches!(a.on, On::Short(_))),
                Stage::Judging(_) => {}
            }
        }
        assert_eq!(short, self.short_running, "running short-link attempts");
        assert_eq!(deadlines, self.deadlines.len(), "deadline index");
        assert_eq!(exchange, self.exchange_timers.len(), "exchange timer index");
        assert_eq!(hedge, self.hedge_timers.len(), "hedge timer index");
        assert_eq!(starts, self.hedge_starts.len(), "hedge start index");
        assert_eq!((parked, budgets), self.zombies.len(), "zombie indexes");
        assert_eq!(queued, self.queue.len(), "queue indexes");
    }
}
