//! The long link: send tasks on it, connect it when its monitor asks, turn
//! its events into task outcomes, pushes and reports.

use bytes::Bytes;

use crate::error::{Error, LocalError, Response, TimeoutKind};
use crate::long_link::{LongLink, LongLinkEvent, SendError};
use crate::short_link::ExchangeTimeouts;
use crate::task::{Channel, TaskId};
use crate::time::{Duration, Instant};
use crate::timeout::AttemptSample;

use super::candidates::Sources;
use super::conns::Owner;
use super::queue::Class;
use super::{Attempt, Engine, Entry, Event, Link, LinkStatus, Report, Stage};

impl Engine {
    /// Sends a task on the (connected) long link.
    pub(super) fn start_long(&mut self, now: Instant, id: TaskId) -> bool {
        self.build_attempt_body(id, Channel::Long);
        if !self.pass_limits(now, id) {
            return true;
        }
        let Some(e) = self.tasks.get(&id) else {
            return true;
        };
        let input = self.attempt_input(e, self.long_in_flight());
        let timeouts = if self.config.long_link_adaptive_timeouts {
            ExchangeTimeouts {
                first_packet: self.timeouts.first_packet_timeout(&input),
                read_write: self.timeouts.read_write_timeout(&input),
                packet_gap: self.timeouts.packet_gap_timeout(input.net),
                long_polling: None,
            }
        } else {
            // Mars's formulas, with the machine's dynamic-timeout state.
            let cfg = self.timeouts.config();
            let f = crate::timeout::first_packet_timeout(cfg, &input);
            ExchangeTimeouts {
                first_packet: f,
                read_write: crate::timeout::read_write_timeout(cfg, input.net, f),
                packet_gap: crate::timeout::packet_gap_timeout(cfg, input.net),
                long_polling: None,
            }
        };
        let (cmd_id, body, deadline, send_only) = (
            e.task.cmd_id,
            e.task.body.clone(),
            e.deadline,
            e.task.send_only,
        );
        let Some(long) = self.long.as_mut() else {
            return false;
        };
        match long.send_task(now, id, cmd_id, body, timeouts, Some(deadline), send_only) {
            Ok(()) => {
                self.begin_attempt(now, id, Link::Long);
                self.pump_long(now);
                true
            }
            Err(SendError::NotConnected | SendError::TooManyInFlight) => false,
            Err(SendError::TooLarge { .. }) => {
                self.finish(id, Err(crate::error::ProtocolError::FrameTooLarge.into()));
                true
            }
            Err(SendError::ReservedId(_) | SendError::Duplicate(_)) => {
                // Cannot happen: ids are allocated outside the reserved range
                // and a task runs at most once. End it rather than loop.
                self.finish(id, Err(LocalError::LongLinkUnavailable.into()));
                true
            }
        }
    }

    pub(super) fn long_connect(&mut self, now: Instant) {
        let Some(ep) = self.config.long_link.clone() else {
            return;
        };
        let max = if self.config.long_link_races_every_candidate {
            usize::MAX
        } else {
            self.config.max_candidates
        };
        let sources = Sources {
            debug: ep.debug,
            hosts: &ep.hosts,
            host_ports: &[],
            ips: &ep.ips,
            addrs: &[],
            backups: &ep.backup_ips,
            ports: &ep.ports,
        };
        let cycling = self.config.long.race.max_rounds.is_none();
        let Some(candidates) = self.candidates(now, &sources, max, cycling) else {
            self.long_wants_connect = true;
            return;
        };
        self.long_wants_connect = false;
        let rtt = self.rtt_hint();
        if let Some(long) = self.long.as_mut() {
            long.connect(now, candidates, rtt, &mut self.ids);
            self.emit(Event::LongLink(LinkStatus::Connecting));
        }
        self.pump_long(now);
    }

    /// Drains the long link's events.
    pub(super) fn pump_long(&mut self, now: Instant) {
        loop {
            let Some(event) = self.long.as_mut().and_then(LongLink::poll_event) else {
                return;
            };
            match event {
                LongLinkEvent::Io(io) => self.emit_io(Owner::Long, io),
                LongLinkEvent::WantConnect => {
                    if !self.shut_down {
                        self.long_connect(now);
                    }
                }
                LongLinkEvent::Connected { addr, connect_time } => {
                    self.connect_sample(connect_time);
                    self.long_endpoint = Some(addr);
                    self.emit_link(LinkStatus::Connected { addr });
                    self.replay_zombies(now);
                }
                LongLinkEvent::Disconnected { error } => {
                    if matches!(error, Some(Error::Connect { .. } | Error::Dns(_))) {
                        let hosts = self
                            .config
                            .long_link
                            .as_ref()
                            .map(|l| l.hosts.clone())
                            .unwrap_or_default();
                        self.forget_hosts(&hosts);
                    }
                    self.emit_link(LinkStatus::Disconnected);
                    if let Some(error) = error.filter(ends_long_waiters) {
                        self.fail_long_waiters(error);
                    }
                }
                LongLinkEvent::Endpoint(r) => {
                    if let Some(t) = r.connect_time.filter(|_| r.ok) {
                        self.connect_sample(t);
                    }
                    self.record_endpoint(now, r.addr, r.ok);
                }
                LongLinkEvent::TaskSent { task } => {
                    let Some((attempt, e)) = self.long_attempt(task) else {
                        continue;
                    };
                    let cmd_id = e.task.cmd_id;
                    let report = self.long_report(task, attempt, now, None, 0, None);
                    self.end_attempt(task);
                    if let Some(r) = report {
                        self.emit_report(r);
                    }
                    self.finish(
                        task,
                        Ok(Response {
                            body: Bytes::new(),
                            status: None,
                            cmd_id,
                        }),
                    );
                }
                LongLinkEvent::TaskResponse {
                    task,
                    cmd_id,
                    body,
                    first_packet_after,
                    bytes_received,
                } => {
                    let Some((attempt, e)) = self.long_attempt(task) else {
                        continue;
                    };
                    let send_len = e.task.body.len();
                    let cost = now - attempt.started;
                    if let Some(fp) = first_packet_after {
                        self.timeouts.on_first_packet(fp, send_len);
                    }
                    let bytes = send_len
                        .saturating_add(usize::try_from(bytes_received).unwrap_or(usize::MAX));
                    self.timeouts.on_success(now, AttemptSample { bytes, cost });
                    let response = Response {
                        body,
                        status: None,
                        cmd_id,
                    };
                    let report = self.long_report(
                        task,
                        attempt,
                        now,
                        first_packet_after,
                        bytes_received,
                        None,
                    );
                    self.end_attempt(task);
                    if let Some(r) = report {
                        self.respond(task, response, r);
                    }
                    self.replay_zombies(now);
                }
                LongLinkEvent::TaskFailed { task, error } => {
                    let Some((attempt, _)) = self.long_attempt(task) else {
                        continue;
                    };
                    self.note_failure(now, &error);
                    let report = self.long_report(task, attempt, now, None, 0, Some(error.clone()));
                    self.end_attempt(task);
                    if error == Error::Timeout(TimeoutKind::Task) {
                        if let Some(r) = report {
                            self.emit_report(r);
                        }
                        self.end_failed(now, task, error);
                    } else {
                        self.attempt_failed(now, task, error, Channel::Long, report);
                    }
                }
                LongLinkEvent::Push { cmd_id, body } => {
                    self.emit(Event::Push { cmd_id, body });
                }
                LongLinkEvent::AskIdentify => self.emit(Event::AskIdentify),
                LongLinkEvent::IdentifyResponse { cmd_id, body } => {
                    self.emit(Event::IdentifyResponse { cmd_id, body });
                }
            }
        }
    }

    /// The task's running long-link attempt, with its entry.
    fn long_attempt(&self, task: TaskId) -> Option<(Attempt, &Entry)> {
        let e = self.tasks.get(&task)?;
        Some((e.running_on(Link::Long)?, e))
    }

    pub(super) fn long_report(
        &self,
        task: TaskId,
        attempt: Attempt,
        now: Instant,
        first_packet_after: Option<Duration>,
        bytes_received: u64,
        error: Option<Error>,
    ) -> Option<Report> {
        let e = self.tasks.get(&task)?;
        Some(Report {
            task,
            attempt: e.attempts,
            channel: Channel::Long,
            started: attempt.started,
            ended: now,
            endpoint: self.long_endpoint,
            connect_time: None,
            handshake_time: None,
            early_data: false,
            first_packet_after,
            connect_attempts: 0,
            bytes_sent: u64::try_from(e.task.body.len()).unwrap_or(u64::MAX) + 20,
            bytes_received,
            hedges: 0,
            error,
        })
    }
}

/// A failed long-link connect that no reconnect fixes: every candidate of
/// the race failed and the last one's TLS failure is permanent
/// ([`TlsFailure::is_permanent`](crate::TlsFailure::is_permanent): the
/// server's certificate, a server that does not speak TLS, no common
/// parameters). Reconnecting on the monitor's schedule will meet the same
/// failure, so the tasks that can only use the long link are told now, with
/// that cause, instead of at their deadline.
fn ends_long_waiters(error: &Error) -> bool {
    matches!(error, Error::Connect { error, .. }
        if error.tls_failure().is_some_and(crate::tls::TlsFailure::is_permanent))
}

impl Engine {
    /// Ends every queued task that can only use the long link with `error`
    /// (a rare event: one pass over the tasks).
    fn fail_long_waiters(&mut self, error: Error) {
        let waiting: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.class == Class::LongOnly && matches!(e.stage, Stage::Queued))
            .map(|(id, _)| id)
            .collect();
        for id in waiting {
            self.finish(id, Err(error.clone()));
        }
    }
}
