//! Hedged short-link requests (stn only); see [`HedgePolicy`].

use std::collections::BTreeSet;

use super::timer_set::TimerSet;
use crate::id_map::IdMap;

use crate::short_link::{ExchangeAction, ExchangeRequest, ExchangeResult, ShortLinkExchange};
use crate::task::TaskId;
use crate::time::{Duration, Instant};

use super::conns::Owner;
use super::Engine;

/// Hedged short-link requests (stn only): when a short-link attempt has sent
/// its request and heard nothing back for a while, a second exchange — a
/// fresh connection carrying the same request — runs beside it, and the
/// first complete response wins.
///
/// Why: under loss, most of a short-link call's time goes to exchanges stuck
/// in TCP's exponential retransmission back-off (a lost request or response
/// segment, then a lost retransmission, …), which only a per-attempt timeout
/// of many seconds ends. A fresh connection does not inherit that back-off.
/// Mars has nothing like it (its next attempt starts only after the
/// first-packet timeout).
///
/// Cost and limits: a hedge sends the request a second time, so the server
/// may see it twice — as it already may with Mars's retries after a timeout
/// (Mars apps make requests idempotent or deduplicate them). Only small
/// requests are hedged ([`HedgePolicy::max_request_len`]), never once a
/// response byte has arrived, at most [`HedgePolicy::max_hedges`] times per
/// attempt and one at a time. A hedge is part of its attempt: it does not use
/// a retry, pass the anti-avalanche limits again, or count against
/// `max_in_flight_short`; the attempt's [`Report::hedges`](crate::Report::hedges) counts them.
/// A request the server must not see twice: [`Task::hedge`](crate::Task::hedge) `false` (or
/// [`Config::hedge`](crate::Config::hedge) `None` for every task).
///
/// Measured when hedging was added, before the race floor and Karn's rule
/// (`cargo run --release -p stn-sim -- bench`, seed 1, 500 calls, retry
/// count 0): at 30 % loss each way stn's total fell from 534 s to 421 s on
/// iOS TCP and from 470 s to 417 s on Linux TCP; at 70 % from 8469 s to
/// 6126 s and 8929 s to 5907 s; clean 3G/2G unchanged. The README has
/// today's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgePolicy {
    /// A hedge starts `clamp(rtt_factor · rtt, min_delay, max_delay)` plus
    /// the task's server processing cost after the request was sent, where
    /// `rtt` is the engine's RTT hint (connect times).
    pub rtt_factor: u32,
    /// Lower bound of the delay (before the server cost).
    pub min_delay: Duration,
    /// Upper bound of the delay (before the server cost).
    pub max_delay: Duration,
    /// Hedges per attempt, one at a time.
    pub max_hedges: u32,
    /// Requests with a larger body are not hedged: their upload alone can
    /// take longer than the delay on a slow link, and sending them twice
    /// costs real bandwidth.
    pub max_request_len: usize,
}

impl Default for HedgePolicy {
    /// stn's choice: 4 RTTs (the usual data RTO is about 3), between 600 ms
    /// and 3 s; two hedges per attempt; requests up to 8 KiB.
    fn default() -> Self {
        HedgePolicy {
            rtt_factor: 4,
            min_delay: Duration::from_millis(600),
            max_delay: Duration::from_secs(3),
            max_hedges: 2,
            max_request_len: 8 * 1024,
        }
    }
}

/// The hedging state of one running short-link attempt.
#[derive(Clone, Debug)]
pub(super) struct HedgeState {
    /// The attempt's request, to send again.
    pub(super) request: ExchangeRequest,
    /// The hedge running now, if any.
    pub(super) running: Option<Box<ShortLinkExchange>>,
    /// Hedges started in this attempt.
    pub(super) started: u32,
    /// Connects started by exchanges of this attempt that ended without
    /// deciding it.
    pub(super) spent_connects: u32,
}

/// The hedging state of every running short-link attempt, with the running
/// hedges' timers and the attempts that may start one, indexed by time.
#[derive(Clone, Debug, Default)]
pub(super) struct Hedges {
    states: IdMap<TaskId, HedgeState>,
    /// The running hedges' own timers.
    timers: TimerSet<TaskId>,
    /// Attempts that may start a hedge, as (k, request sent + server cost,
    /// task) for their k-th hedge. The k-th hedge is due k delays after that
    /// instant, and the delay is the same for all, so within one k the keys
    /// are in due order.
    starts: BTreeSet<(u32, Instant, TaskId)>,
    start_keys: IdMap<TaskId, (u32, Instant)>,
}

impl Hedges {
    pub(super) fn get(&self, id: TaskId) -> Option<&HedgeState> {
        self.states.get(&id)
    }

    pub(super) fn get_mut(&mut self, id: TaskId) -> Option<&mut HedgeState> {
        self.states.get_mut(&id)
    }

    pub(super) fn insert(&mut self, id: TaskId, state: HedgeState) {
        self.states.insert(id, state);
    }

    /// Forgets `id`'s hedging state and its timers.
    pub(super) fn remove(&mut self, id: TaskId) -> Option<HedgeState> {
        self.timers.set(id, None);
        self.set_start(id, None);
        self.states.remove(&id)
    }

    /// The running hedge of `id`.
    pub(super) fn running_mut(&mut self, id: TaskId) -> Option<&mut ShortLinkExchange> {
        self.states
            .get_mut(&id)
            .and_then(|h| h.running.as_deref_mut())
    }

    /// Attempts whose running hedge has a timer due at `now`, in id order.
    pub(super) fn due(&self, now: Instant) -> Vec<TaskId> {
        self.timers.due(now)
    }

    /// The running hedges' earliest timer.
    pub(super) fn next_timer(&self) -> Option<Instant> {
        self.timers.first()
    }

    /// Re-reads the timer of `id`'s running hedge after a call into it.
    fn refresh_timer(&mut self, id: TaskId) {
        let at = self
            .states
            .get(&id)
            .and_then(|h| h.running.as_ref())
            .and_then(|ex| ex.poll_timeout());
        self.timers.set(id, at);
    }

    fn set_start(&mut self, id: TaskId, key: Option<(u32, Instant)>) {
        let old = match key {
            Some(k) => self.start_keys.insert(id, k),
            None => self.start_keys.remove(&id),
        };
        if old == key {
            return;
        }
        if let Some((k, at)) = old {
            self.starts.remove(&(k, at, id));
        }
        if let Some((k, at)) = key {
            self.starts.insert((k, at, id));
        }
    }

    /// The attempts that may start their `k`-th hedge, earliest first.
    fn starts_for(&self, k: u32) -> impl Iterator<Item = TaskId> + '_ {
        self.starts
            .range((k, Instant::ZERO, TaskId::FIRST)..)
            .take_while(move |(kk, _, _)| *kk == k)
            .map(|(_, _, id)| *id)
    }
}

impl Engine {
    /// Re-reads every timer of `id`'s attempt (its exchange, its running
    /// hedge, when it may start the next hedge) after a call into them.
    pub(super) fn refresh_attempt_timers(&mut self, id: TaskId) {
        let at = self.short.get(&id).and_then(|ex| ex.poll_timeout());
        self.short_timers.set(id, at);
        self.hedges.refresh_timer(id);
        let key = self.hedge_start_key(id);
        self.hedges.set_start(id, key);
    }

    /// What `id`'s next hedge waits for, if it may start one: (k, request
    /// sent, server cost) for its k-th hedge. It is due k delays after the
    /// request was sent, plus the server cost; the delay depends on the RTT
    /// hint at the time it is read.
    fn hedge_basis(&self, id: TaskId) -> Option<(u32, Instant, Duration)> {
        let policy = self.config.hedge?;
        let state = self.hedges.get(id)?;
        if state.running.is_some()
            || state.started >= policy.max_hedges
            || state.request.body.len() > policy.max_request_len
        {
            return None;
        }
        let ex = self.short.get(&id)?;
        if ex.first_byte_at().is_some() {
            return None;
        }
        let sent = ex.request_sent_at()?;
        let task = &self.tasks.get(&id)?.task;
        if !task.hedge {
            return None;
        }
        let server = task.server_process_cost.unwrap_or(Duration::ZERO);
        Some((state.started + 1, sent, server))
    }

    /// The index key of `id`'s next hedge (see [`Hedges`]).
    fn hedge_start_key(&self, id: TaskId) -> Option<(u32, Instant)> {
        self.hedge_basis(id)
            .map(|(k, sent, server)| (k, sent + server))
    }

    /// When the next hedge of any attempt is due.
    pub(super) fn next_hedge_start(&self) -> Option<Instant> {
        let policy = self.config.hedge?;
        (1..=policy.max_hedges)
            .filter_map(|k| self.hedges.starts_for(k).find_map(|id| self.hedge_due(id)))
            .min()
    }

    /// When the attempt of `id` should start its next hedge, if it may.
    pub(super) fn hedge_due(&self, id: TaskId) -> Option<Instant> {
        let policy = self.config.hedge?;
        let (k, sent, server) = self.hedge_basis(id)?;
        let rtt = self.rtt_hint().unwrap_or(Duration::from_millis(250));
        let delay = rtt
            .saturating_mul(policy.rtt_factor)
            .max(policy.min_delay)
            .min(policy.max_delay);
        // Each further hedge waits one more delay.
        Some(sent + delay.saturating_mul(k) + server)
    }

    /// Starts the hedges that are due at `now`.
    pub(super) fn start_due_hedges(&mut self, now: Instant) {
        let Some(policy) = self.config.hedge else {
            return;
        };
        let mut due: Vec<TaskId> = Vec::new();
        for k in 1..=policy.max_hedges {
            for id in self.hedges.starts_for(k) {
                match self.hedge_due(id) {
                    Some(t) if t <= now => due.push(id),
                    Some(_) => break,
                    None => {}
                }
            }
        }
        due.sort_unstable();
        for id in due {
            let rtt = self.rtt_hint();
            let Some(state) = self.hedges.get_mut(id) else {
                continue;
            };
            let mut request = state.request.clone();
            request.rtt_hint = rtt;
            let ex = ShortLinkExchange::start(now, &self.config.exchange, request, &mut self.ids);
            state.running = Some(Box::new(ex));
            state.started += 1;
            self.pump_hedge(now, id);
        }
    }

    /// Drains the running hedge of `id`. A hedge that fails just ends (the
    /// first exchange runs on); one that succeeds decides the attempt.
    pub(super) fn pump_hedge(&mut self, now: Instant, id: TaskId) {
        self.drain_hedge(now, id);
        self.refresh_attempt_timers(id);
    }

    fn drain_hedge(&mut self, now: Instant, id: TaskId) {
        loop {
            let Some(action) = self
                .hedges
                .running_mut(id)
                .and_then(ShortLinkExchange::poll_action)
            else {
                return;
            };
            match action {
                ExchangeAction::Io(io) => self.emit_io(Owner::Short(id), io),
                ExchangeAction::Endpoint(r) => self.endpoint_report(now, r),
                ExchangeAction::Linger { conn, addr, until } => {
                    self.verdict_take(now, conn, addr, until);
                }
                ExchangeAction::Finished(result) => {
                    let result = *result;
                    let Some(state) = self.hedges.get_mut(id) else {
                        return;
                    };
                    state.running = None;
                    if result.outcome.is_ok() {
                        // The hedge won: stop the first exchange, then settle
                        // the attempt with the hedge's result.
                        if let Some(first) = self.short.remove(&id) {
                            let spent = self.cancel_exchange(now, id, *first);
                            if let Some(h) = self.hedges.get_mut(id) {
                                h.spent_connects += spent;
                            }
                        }
                        self.short_finished(now, id, result);
                    } else {
                        state.spent_connects += result.connect_attempts;
                    }
                    return;
                }
            }
        }
    }

    /// The first exchange of `id` failed: if a hedge is running, it takes
    /// over (returns `None`); else the failure is the attempt's.
    pub(super) fn hedge_takes_over(
        &mut self,
        id: TaskId,
        result: ExchangeResult,
    ) -> Option<ExchangeResult> {
        let Some(state) = self.hedges.get_mut(id) else {
            return Some(result);
        };
        match state.running.take() {
            Some(hedge) => {
                state.spent_connects += result.connect_attempts;
                self.short.insert(id, hedge);
                None
            }
            None => Some(result),
        }
    }

    /// Stops a running hedge of `id` (closing its connections) and forgets
    /// the attempt's hedging state; returns (hedges started, connects spent).
    pub(super) fn end_hedging(&mut self, now: Instant, id: TaskId) -> (u32, u32) {
        let Some(mut state) = self.hedges.remove(id) else {
            return (0, 0);
        };
        if let Some(ex) = state.running.take() {
            state.spent_connects += self.cancel_exchange(now, id, *ex);
        }
        (state.started, state.spent_connects)
    }
}
