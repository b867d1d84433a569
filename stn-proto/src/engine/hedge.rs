//! Hedged short-link requests (stn only): the policy ([`HedgePolicy`]) and
//! the index of the attempts that may start a hedge, by when.

use std::collections::BTreeSet;

use crate::task::TaskId;
use crate::time::{Duration, Instant};

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
/// Only a task that says its replay is harmless is hedged
/// ([`Task::hedge`](crate::Task::hedge), off by default); [`Config::hedge`](crate::Config::hedge)
/// `None` hedges no task.
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

impl HedgePolicy {
    /// The delay of one hedge with RTT hint `rtt` (250 ms while none is
    /// known): `clamp(rtt_factor · rtt, min_delay, max_delay)`.
    pub(super) fn delay(&self, rtt: Option<Duration>) -> Duration {
        rtt.unwrap_or(Duration::from_millis(250))
            .saturating_mul(self.rtt_factor)
            .max(self.min_delay)
            .min(self.max_delay)
    }
}

/// The attempts that may start a hedge, as (k, request sent + server cost,
/// task) for their k-th hedge. The k-th hedge is due k delays after that
/// instant, and the delay is the same for all (it follows the RTT hint at
/// the time it is read), so within one k the keys are in due order. Each
/// attempt keeps its own key ([`AttemptTimers::start`](super::short::AttemptTimers::start)).
#[derive(Clone, Debug, Default)]
pub(super) struct HedgeStarts {
    starts: BTreeSet<(u32, Instant, TaskId)>,
}

impl HedgeStarts {
    /// `id`'s key goes from `old` to `new`.
    pub(super) fn update(
        &mut self,
        id: TaskId,
        old: Option<(u32, Instant)>,
        new: Option<(u32, Instant)>,
    ) {
        if old == new {
            return;
        }
        if let Some((k, at)) = old {
            self.starts.remove(&(k, at, id));
        }
        if let Some((k, at)) = new {
            self.starts.insert((k, at, id));
        }
    }

    /// The attempts that may start their `k`-th hedge with when it is due
    /// under a hedge delay of `delay`, earliest first.
    pub(super) fn for_hedge(
        &self,
        k: u32,
        delay: Duration,
    ) -> impl Iterator<Item = (TaskId, Instant)> + '_ {
        self.starts
            .range((k, Instant::ZERO, TaskId::FIRST)..)
            .take_while(move |(kk, _, _)| *kk == k)
            // Each further hedge waits one more delay.
            .map(move |(_, at, id)| (*id, *at + delay.saturating_mul(k)))
    }

    #[cfg(any(test, fuzzing))]
    pub(super) fn contains(&self, id: TaskId, key: (u32, Instant)) -> bool {
        self.starts.contains(&(key.0, key.1, id))
    }

    #[cfg(any(test, fuzzing))]
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }
}
