//! Hedged short-link requests (stn only); see [`HedgePolicy`].

use super::*;

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
/// `max_in_flight_short`; the attempt's [`Report::hedges`] counts them.
/// A request the server must not see twice: [`Task::hedge`] `false` (or
/// [`Config::hedge`] `None` for every task).
///
/// Measured when hedging was added, before the race floor and Karn's rule
/// (`cargo run --release -p stn-sim -- bench`, seed 1, 500 calls, retry
/// count 0): at 30 % loss each way stn's total fell from 534 s to 421 s on
/// iOS TCP and from 470 s to 417 s on Linux TCP; at 70 % from 8469 s to
/// 6126 s and 8929 s to 5907 s; clean 3G/2G unchanged. The README has
/// today's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    pub(super) running: Option<ShortLinkExchange>,
    /// Hedges started in this attempt.
    pub(super) started: u32,
    /// Connects started by exchanges of this attempt that ended without
    /// deciding it.
    pub(super) spent_connects: u32,
}

impl Engine {
    /// When the attempt of `id` should start its next hedge, if it may.
    pub(super) fn hedge_due(&self, id: TaskId) -> Option<Instant> {
        let policy = self.config.hedge?;
        let state = self.hedges.get(&id)?;
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
        let rtt = self.rtt_hint().unwrap_or(Duration::from_millis(250));
        let delay = rtt
            .saturating_mul(policy.rtt_factor)
            .max(policy.min_delay)
            .min(policy.max_delay);
        let task = &self.tasks.get(&id)?.task;
        if !task.hedge {
            return None;
        }
        let server = task.server_process_cost.unwrap_or(Duration::ZERO);
        // Each further hedge waits one more delay.
        Some(sent + delay.saturating_mul(state.started + 1) + server)
    }

    /// Starts the hedges that are due at `now`.
    pub(super) fn start_due_hedges(&mut self, now: Instant) {
        let due: Vec<TaskId> = self
            .hedges
            .keys()
            .copied()
            .filter(|id| self.hedge_due(*id).is_some_and(|t| t <= now))
            .collect();
        for id in due {
            let rtt = self.rtt_hint();
            let Some(state) = self.hedges.get_mut(&id) else {
                continue;
            };
            let mut request = state.request.clone();
            request.rtt_hint = rtt;
            let ex = ShortLinkExchange::start(now, &self.config.exchange, request, &mut self.ids);
            state.running = Some(ex);
            state.started += 1;
            self.pump_hedge(now, id);
        }
    }

    /// Drains the running hedge of `id`. A hedge that fails just ends (the
    /// first exchange runs on); one that succeeds decides the attempt.
    pub(super) fn pump_hedge(&mut self, now: Instant, id: TaskId) {
        loop {
            let Some(action) = self
                .hedges
                .get_mut(&id)
                .and_then(|h| h.running.as_mut())
                .and_then(ShortLinkExchange::poll_action)
            else {
                return;
            };
            match action {
                ExchangeAction::Io(io) => self.emit_io(Owner::Short(id), io),
                ExchangeAction::Endpoint(r) => self.endpoint_report(now, r),
                ExchangeAction::Finished(result) => {
                    let Some(state) = self.hedges.get_mut(&id) else {
                        return;
                    };
                    state.running = None;
                    if result.outcome.is_ok() {
                        // The hedge won: stop the first exchange, then settle
                        // the attempt with the hedge's result.
                        if let Some(first) = self.short.remove(&id) {
                            let spent = self.cancel_exchange(now, id, first);
                            if let Some(h) = self.hedges.get_mut(&id) {
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
        let Some(state) = self.hedges.get_mut(&id) else {
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
        let Some(mut state) = self.hedges.remove(&id) else {
            return (0, 0);
        };
        if let Some(ex) = state.running.take() {
            state.spent_connects += self.cancel_exchange(now, id, ex);
        }
        (state.started, state.spent_connects)
    }
}
