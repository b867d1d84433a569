//! A running short-link attempt: its exchange and, when the profile hedges
//! ([`HedgePolicy`]), the hedges that race it with the same request on fresh
//! connections. The first complete response decides the attempt; a failed
//! exchange with a hedge running hands the attempt to the hedge.

use crate::io::{ConnEvent, ConnId, ConnIds};
use crate::net::SocketAddr;
use crate::short_link::{
    ExchangeAction, ExchangeConfig, ExchangeRequest, ExchangeResult, ShortLinkExchange,
};
use crate::task::Task;
use crate::time::{Duration, Instant};

use super::conns::Owner;
use super::hedge::HedgePolicy;
use super::outbox::Outbox;

/// One short-link attempt.
#[derive(Debug)]
pub(super) struct ShortAttempt {
    /// The exchange that decides the attempt: the first one, or the hedge
    /// that took over when it failed.
    exchange: ShortLinkExchange,
    /// The attempt's hedging, when the profile hedges.
    hedging: Option<Hedging>,
    /// Where the attempt stands in the engine's timer indexes.
    pub(super) timers: AttemptTimers,
}

/// An attempt's keys in the engine's timer indexes, as last set
/// ([`Tasks::refresh_attempt_timers`](super::tasks::Tasks::refresh_attempt_timers)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct AttemptTimers {
    /// The deciding exchange's next timer.
    pub(super) exchange: Option<Instant>,
    /// The running hedge's next timer.
    pub(super) hedge: Option<Instant>,
    /// (k, request sent + server cost) if the attempt may start its k-th
    /// hedge ([`HedgeStarts`](super::hedge::HedgeStarts)).
    pub(super) start: Option<(u32, Instant)>,
}

/// The hedging state of one attempt.
#[derive(Debug)]
struct Hedging {
    /// The attempt's request, to send again.
    request: ExchangeRequest,
    /// The hedge running now, if any.
    running: Option<Box<ShortLinkExchange>>,
    /// Hedges started in this attempt.
    started: u32,
    /// Connects started by exchanges of this attempt that ended without
    /// deciding it.
    spent_connects: u32,
}

/// What the engine must do for an attempt; see [`ShortAttempt::poll_action`].
#[derive(Debug)]
pub(super) enum AttemptAction {
    /// An action of the deciding exchange or a hedge;
    /// [`ExchangeAction::Finished`] ends the attempt with its result.
    Exchange(ExchangeAction),
    /// A hedge answered first: the attempt ends with its result once
    /// [`ShortAttempt::cancel_first`] has stopped the first exchange.
    HedgeWon(Box<ExchangeResult>),
}

/// How many hedges an attempt started and the connects its deciding
/// exchange did not make.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Hedged {
    pub(super) hedges: u32,
    pub(super) spent_connects: u32,
}

impl ShortAttempt {
    /// Starts the attempt: on `pooled`, a kept connection, if there is one,
    /// else racing its candidates; `hedging` keeps the request for hedges.
    pub(super) fn start(
        now: Instant,
        cfg: &ExchangeConfig,
        request: ExchangeRequest,
        hedging: bool,
        pooled: Option<(ConnId, SocketAddr)>,
        ids: &mut ConnIds,
    ) -> Self {
        let hedging = hedging.then(|| Hedging {
            request: request.clone(),
            running: None,
            started: 0,
            spent_connects: 0,
        });
        let exchange = match pooled {
            Some((conn, addr)) => ShortLinkExchange::start_reused(now, cfg, request, conn, addr),
            None => ShortLinkExchange::start(now, cfg, request, ids),
        };
        ShortAttempt {
            exchange,
            hedging,
            timers: AttemptTimers::default(),
        }
    }

    fn running_hedge(&self) -> Option<&ShortLinkExchange> {
        self.hedging.as_ref()?.running.as_deref()
    }

    /// Feeds an event on one of the attempt's connections to the exchange
    /// that owns it.
    pub(super) fn handle_event(
        &mut self,
        now: Instant,
        conn: ConnId,
        event: ConnEvent,
        ids: &mut ConnIds,
    ) {
        let hedge = self
            .hedging
            .as_mut()
            .and_then(|h| h.running.as_deref_mut())
            .filter(|ex| ex.owns(conn));
        match hedge {
            Some(ex) => ex.handle_event(now, conn, event, ids),
            None => self.exchange.handle_event(now, conn, event, ids),
        }
    }

    /// The deciding exchange's timers.
    pub(super) fn exchange_timeout(&mut self, now: Instant, ids: &mut ConnIds) {
        self.exchange.handle_timeout(now, ids);
    }

    /// The running hedge's timers.
    pub(super) fn hedge_timeout(&mut self, now: Instant, ids: &mut ConnIds) {
        if let Some(ex) = self.hedging.as_mut().and_then(|h| h.running.as_deref_mut()) {
            ex.handle_timeout(now, ids);
        }
    }

    /// When the deciding exchange wants its timers run.
    pub(super) fn next_exchange_timeout(&self) -> Option<Instant> {
        self.exchange.poll_timeout()
    }

    /// When the running hedge wants its timers run.
    pub(super) fn next_hedge_timeout(&self) -> Option<Instant> {
        self.running_hedge()
            .and_then(ShortLinkExchange::poll_timeout)
    }

    /// The next action. Drain until `None` after every call into the
    /// attempt (only the exchange last called has any). A failed exchange
    /// with a hedge running hands over to it here; the attempt is over at
    /// [`AttemptAction::Finished`] or [`AttemptAction::HedgeWon`].
    pub(super) fn poll_action(&mut self) -> Option<AttemptAction> {
        loop {
            match self.exchange.poll_action() {
                Some(ExchangeAction::Finished(result)) => {
                    if result.outcome.is_err() {
                        let hedging = self.hedging.as_mut();
                        if let Some((h, hedge)) =
                            hedging.and_then(|h| h.running.take().map(|r| (h, r)))
                        {
                            // The hedge runs on as the attempt's exchange.
                            h.spent_connects += result.connect_attempts;
                            self.exchange = *hedge;
                            continue;
                        }
                    }
                    return Some(AttemptAction::Exchange(ExchangeAction::Finished(result)));
                }
                Some(action) => return Some(AttemptAction::Exchange(action)),
                None => break,
            }
        }
        let h = self.hedging.as_mut()?;
        match h.running.as_mut()?.poll_action()? {
            ExchangeAction::Finished(result) => {
                h.running = None;
                if result.outcome.is_ok() {
                    return Some(AttemptAction::HedgeWon(result));
                }
                // A hedge that fails just ends; the exchange runs on.
                h.spent_connects += result.connect_attempts;
                None
            }
            action => Some(AttemptAction::Exchange(action)),
        }
    }

    /// A hedge won: stops the first exchange, closing its connections.
    pub(super) fn cancel_first(&mut self, now: Instant, owner: Owner, out: &mut Outbox) {
        let spent = cancel(&mut self.exchange, now, owner, out);
        if let Some(h) = self.hedging.as_mut() {
            h.spent_connects += spent;
        }
    }

    /// The attempt ended with its exchange's result: stops a running hedge
    /// (closing its connections) and says what hedging cost.
    pub(super) fn close(&mut self, now: Instant, owner: Owner, out: &mut Outbox) -> Hedged {
        let Some(h) = self.hedging.as_mut() else {
            return Hedged::default();
        };
        if let Some(mut ex) = h.running.take() {
            h.spent_connects += cancel(&mut ex, now, owner, out);
        }
        Hedged {
            hedges: h.started,
            spent_connects: h.spent_connects,
        }
    }

    /// Stops the attempt before it ended: its hedge, then its exchange, each
    /// closing its connections and reporting nothing.
    pub(super) fn stop(&mut self, now: Instant, owner: Owner, out: &mut Outbox) {
        self.close(now, owner, out);
        cancel(&mut self.exchange, now, owner, out);
    }

    /// What the attempt's next hedge waits for, if it may start one: (k,
    /// request sent, server cost) for its k-th hedge under `policy`. It is
    /// due k delays after the request was sent, plus the server cost.
    pub(super) fn hedge_basis(
        &self,
        policy: &HedgePolicy,
        task: &Task,
    ) -> Option<(u32, Instant, Duration)> {
        let h = self.hedging.as_ref()?;
        if h.running.is_some()
            || h.started >= policy.max_hedges
            || h.request.body.len() > policy.max_request_len
        {
            return None;
        }
        if self.exchange.first_byte_at().is_some() {
            return None;
        }
        let sent = self.exchange.request_sent_at()?;
        if !task.hedge {
            return None;
        }
        let server = task.server_process_cost.unwrap_or(Duration::ZERO);
        Some((h.started + 1, sent, server))
    }

    /// Starts a hedge now: the attempt's request on a fresh race, with the
    /// RTT hint of now.
    pub(super) fn start_hedge(
        &mut self,
        now: Instant,
        cfg: &ExchangeConfig,
        rtt_hint: Option<Duration>,
        ids: &mut ConnIds,
    ) {
        let Some(h) = self.hedging.as_mut() else {
            return;
        };
        let mut request = h.request.clone();
        request.rtt_hint = rtt_hint;
        h.running = Some(Box::new(ShortLinkExchange::start(now, cfg, request, ids)));
        h.started += 1;
    }
}

/// Cancels `ex`, closing its connections (a loser it was handing over is
/// closed too, unjudged); returns the connects it had started. A cancelled
/// exchange reports nothing else: no endpoint verdict, no result.
fn cancel(ex: &mut ShortLinkExchange, now: Instant, owner: Owner, out: &mut Outbox) -> u32 {
    let connects = ex.connect_attempts();
    ex.cancel(now);
    while let Some(action) = ex.poll_action() {
        match action {
            ExchangeAction::Io(io) => out.io(owner, io),
            ExchangeAction::Linger { conn, .. } => out.close(owner, conn),
            ExchangeAction::Endpoint(_) | ExchangeAction::Finished(_) => {}
        }
    }
    connects
}
