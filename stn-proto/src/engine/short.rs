//! Short-link attempts: start a [`ShortLinkExchange`] for a task, relay its
//! actions, settle the task when it finishes.

use crate::error::{Error, Response, TimeoutKind};
use crate::io::IoAction;
use crate::short_link::{
    EndpointReport, ExchangeAction, ExchangeRequest, ExchangeResult, ExchangeTimeouts,
    ShortLinkExchange,
};
use crate::task::{Channel, TaskId};
use crate::time::{Duration, Instant};
use crate::timeout::AttemptSample;

use super::candidates::Sources;
use super::conns::Owner;
use super::{Engine, Link, Report, Retry};

impl Engine {
    /// Starts a short-link attempt. Returns whether the task left the queue
    /// (started, or ended by a limit).
    pub(super) fn start_short(&mut self, now: Instant, id: TaskId) -> bool {
        if !self.tasks.contains_key(&id) {
            return false;
        }
        let ep = self.config.short_link.clone();
        // A task's own host replaces the configured hosts (with or without
        // their own ports).
        let (hosts, host_ports) = match self.tasks.get(&id).and_then(|e| e.task.host.clone()) {
            Some(h) => (vec![h], Vec::new()),
            None => (ep.hosts.clone(), ep.host_ports.clone()),
        };
        let host_header = hosts
            .first()
            .or(host_ports.first().map(|(h, _)| h))
            .cloned();
        let sources = Sources {
            debug: ep.debug,
            hosts: &hosts,
            host_ports: &host_ports,
            ips: &ep.ips,
            addrs: &ep.addrs,
            backups: &ep.backup_ips,
            ports: &[ep.port],
        };
        let cycling = self.config.exchange.race.max_rounds.is_none();
        let width = self.short_race_width();
        let Some(candidates) = self.candidates(now, &sources, width, cycling) else {
            return false; // waiting for a resolve answer
        };
        self.build_attempt_body(id, Channel::Short);
        if !self.pass_limits(now, id) {
            return true;
        }
        let Some(e) = self.tasks.get(&id) else {
            return true;
        };
        let input = self.attempt_input(e, self.short.len());
        let timeouts = ExchangeTimeouts {
            first_packet: self.timeouts.first_packet_timeout(&input),
            read_write: self.timeouts.read_write_timeout(&input),
            packet_gap: self.timeouts.packet_gap_timeout(input.net),
            long_polling: e.task.long_polling,
        };
        let req = ExchangeRequest {
            candidates,
            host: host_header,
            cgi: e.task.cgi.clone(),
            headers: e.task.headers.clone(),
            body: e.task.body.clone(),
            rtt_hint: self.rtt_hint(),
            timeouts,
            deadline: Some(e.deadline),
            early_data: self.config.early_data && e.task.early_data,
        };
        if self.config.hedge.is_some() {
            let state = super::hedge::HedgeState {
                request: req.clone(),
                running: None,
                started: 0,
                spent_connects: 0,
            };
            self.hedges.insert(id, state);
        }
        let pooled = if e.task.headers.is_empty() || !super::pool::wants_keep_alive(&e.task) {
            None
        } else {
            self.pool_take(now, &req.candidates)
        };
        let ex = match pooled {
            Some((conn, addr)) => {
                self.conns.insert(conn, Owner::Short(id));
                ShortLinkExchange::start_reused(now, &self.config.exchange, req, conn, addr)
            }
            None => ShortLinkExchange::start(now, &self.config.exchange, req, &mut self.ids),
        };
        self.begin_attempt(now, id, Link::Short);
        self.short.insert(id, ex);
        self.pump_short(now, id);
        true
    }

    /// How many candidates a short-link race gets. A race that goes round
    /// again until the task's deadline (stn: `max_rounds` unset) gets every
    /// candidate: over a list cut to [`Config::max_candidates`] its later
    /// rounds retry the candidates that failed before it ever tries one cut
    /// off, and the pool is only searched for the race's own candidates.
    /// (Matrix cell `android-6.5 rtt150 ge10%/300ms 3g jit0 brbbbl out-none
    /// keepalive`: the one live endpoint of six, known good and with an
    /// idle pooled connection, was ordered sixth — history and new
    /// endpoints are merged at random, Mars's rule — and a call raced the
    /// five dead ones for its whole 40 s deadline.) A race of one pass
    /// (Mars) keeps Mars's cut.
    ///
    /// [`Config::max_candidates`]: crate::Config::max_candidates
    fn short_race_width(&self) -> usize {
        if self.config.exchange.race.max_rounds.is_none() {
            usize::MAX
        } else {
            self.config.max_candidates
        }
    }

    /// Drains a short exchange's actions.
    pub(super) fn pump_short(&mut self, now: Instant, id: TaskId) {
        self.drain_short(now, id);
        self.refresh_attempt_timers(id);
    }

    fn drain_short(&mut self, now: Instant, id: TaskId) {
        loop {
            let Some(action) = self.short.get_mut(&id).and_then(|ex| ex.poll_action()) else {
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
                    self.short.remove(&id);
                    let failed = result.outcome.is_err();
                    match if failed {
                        self.hedge_takes_over(id, result)
                    } else {
                        Some(result)
                    } {
                        Some(result) => {
                            self.short_finished(now, id, result);
                            return;
                        }
                        // A hedge runs on as the attempt's exchange.
                        None => continue,
                    }
                }
            }
        }
    }

    /// Cancels an exchange of `id`'s attempt, closing its connections;
    /// returns the connects it had started. (A cancelled exchange reports
    /// nothing else: no endpoint verdict, no result.)
    pub(super) fn cancel_exchange(
        &mut self,
        now: Instant,
        id: TaskId,
        mut ex: ShortLinkExchange,
    ) -> u32 {
        let connects = ex.connect_attempts();
        ex.cancel(now);
        while let Some(a) = ex.poll_action() {
            match a {
                ExchangeAction::Io(io) => self.emit_io(Owner::Short(id), io),
                // Cancelled with the exchange: closed, no verdict.
                ExchangeAction::Linger { conn, .. } => {
                    self.emit_io(Owner::Short(id), IoAction::Close { conn });
                }
                ExchangeAction::Endpoint(_) | ExchangeAction::Finished(_) => {}
            }
        }
        connects
    }

    /// Closes every connection still owned by `id`'s short-link attempt.
    pub(super) fn close_short_conns(&mut self, id: TaskId) {
        for conn in self.conns.of_task(id) {
            self.emit_io(Owner::Short(id), IoAction::Close { conn });
        }
    }

    /// Records a short-link exchange's endpoint outcome.
    pub(super) fn endpoint_report(&mut self, now: Instant, r: EndpointReport) {
        if let Some(t) = r.connect_time.filter(|_| r.ok) {
            self.connect_sample(t);
        }
        self.record_endpoint(now, r.addr, r.ok);
        if r.ok {
            // A working connection is a sign of connectivity.
            self.replay_zombies(now);
        }
    }

    pub(super) fn short_finished(&mut self, now: Instant, id: TaskId, result: ExchangeResult) {
        if let Some(kept) = result.kept {
            self.pool_put(now, kept);
        }
        let (hedges, spent_connects) = self.end_hedging(now, id);
        // Safety net: the exchange closed its connections; drop stale entries.
        self.close_short_conns(id);
        let Some(e) = self.tasks.get(&id) else {
            return;
        };
        let Some(attempt) = e.running_on(Link::Short) else {
            return;
        };
        let report = Report {
            task: id,
            attempt: e.attempts,
            channel: Channel::Short,
            started: attempt.started,
            ended: now,
            endpoint: result.endpoint,
            connect_time: result.connect_time,
            handshake_time: result.handshake_time,
            early_data: result.early_data,
            first_packet_after: result.first_packet_after,
            connect_attempts: result.connect_attempts + spent_connects,
            bytes_sent: result.bytes_sent,
            bytes_received: result.bytes_received,
            hedges,
            error: result.outcome.as_ref().err().cloned(),
        };
        let cmd_id = e.task.cmd_id;
        let send_len = e.task.body.len();
        self.end_attempt(id);
        if let Some(fp) = result.first_packet_after {
            self.timeouts.on_first_packet(fp, send_len);
        }
        match result.outcome {
            Ok(resp) => {
                let bytes = usize::try_from(result.bytes_sent + result.bytes_received)
                    .unwrap_or(usize::MAX);
                let cost = result.request_sent_at.map_or(Duration::ZERO, |t| now - t);
                self.timeouts.on_success(now, AttemptSample { bytes, cost });
                let response = Response {
                    body: resp.body,
                    status: Some(resp.status),
                    cmd_id,
                };
                self.respond(id, response, report);
                self.replay_zombies(now);
            }
            Err(error) => {
                self.note_failure(now, &error);
                if matches!(error, Error::Connect { .. } | Error::Dns(_)) {
                    // The addresses did not work: ask again next time.
                    let hosts = self.short_hosts(id);
                    self.forget_hosts(&hosts);
                }
                let timed_out = matches!(error, Error::Timeout(_));
                let stale = result.reused
                    && result.first_packet_after.is_none()
                    && !matches!(error, Error::Timeout(TimeoutKind::Task) | Error::Cancelled);
                let pool = self.config.socket_pool;
                if let Some(cfg) = pool.filter(|c| stale && (c.stale_on_timeout || !timed_out)) {
                    // The pooled connection was dead: Mars turns the pool off.
                    self.pool_off_until = now + cfg.disable_after_stale;
                    self.pool_clear();
                    if cfg.free_retry_on_stale {
                        self.emit_report(report);
                        let how = Retry {
                            channel: Channel::Short,
                            retryable: true,
                            free: true,
                            delay: Some(Duration::ZERO),
                        };
                        self.retry_or_end(now, id, error, how);
                        return;
                    }
                }
                if error == Error::Timeout(TimeoutKind::Task) {
                    self.emit_report(report);
                    self.end_failed(now, id, error);
                } else {
                    self.attempt_failed(now, id, error, Channel::Short, Some(report));
                }
            }
        }
    }
}
