//! A held task and where it stands: each stage holds what only it has, so a
//! running attempt's exchange exists exactly while the attempt runs.

use std::sync::Arc;

use crate::error::{Error, Response};
use crate::net::SocketAddr;
use crate::short_link::ExchangeResult;
use crate::task::{BodyRequest, Channel, Task, TaskId};
use crate::time::Instant;

use super::auth::AuthKey;
use super::queue::{Class, Keys, Order, Place};
use super::short::{Hedged, ShortAttempt};
use super::types::Report;

/// Where a task stands. Only [`Tasks`](super::tasks::Tasks) moves a task
/// from one stage to another.
#[derive(Debug)]
pub(super) enum Stage {
    /// In the queue, waiting for its turn (or its retry time, the network,
    /// authentication, the long link, a resolve answer), at the place it
    /// holds; the queue's indexes find it by that place and its [`Keys`].
    Queued(Place),
    /// An attempt is running.
    Running(Attempt),
    /// A response arrived and waits for the app's verdict
    /// ([`Task::judge`]); no connection is held for it.
    Judging(Box<Pending>),
    /// Failed and parked until a sign of connectivity (Mars's zombie),
    /// since the time it holds; the zombie indexes find it by that time and
    /// by its budget end.
    Parked { since: Instant },
    /// Out of the queue with no attempt: its attempt just ended or was
    /// stopped, and the engine decides in the same call whether it is
    /// queued again, parked or finished. No task is left here between calls.
    Settling,
}

/// A running attempt.
#[derive(Debug)]
pub(super) struct Attempt {
    pub(super) started: Instant,
    pub(super) on: On,
}

/// The link a running attempt is on, with what it holds there.
#[derive(Debug)]
pub(super) enum On {
    /// A short-link exchange (and its hedges).
    Short(Box<ShortAttempt>),
    /// A frame on the long link, which holds the attempt's state.
    Long,
}

impl Attempt {
    pub(super) fn channel(&self) -> Channel {
        match self.on {
            On::Short(_) => Channel::Short,
            On::Long => Channel::Long,
        }
    }
}

/// A response held until the app judges it.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) response: Response,
    /// The attempt's report, emitted once the verdict is known.
    pub(super) report: Report,
}

/// A held task.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) task: Task,
    /// Queue order key: (priority, submission counter).
    pub(super) order: Order,
    /// Which link it may take: from the channel after the task's own rules
    /// ([`Task::effective_channel`]) and Mars's choice at submit
    /// ([`ChannelChoice::AtSubmit`](super::ChannelChoice::AtSubmit)).
    pub(super) class: Class,
    pub(super) deadline: Instant,
    /// End of the zombie budget, if the task may be parked.
    pub(super) budget_end: Option<Instant>,
    pub(super) retries_left: u8,
    pub(super) attempts: u32,
    pub(super) stage: Stage,
    pub(super) last_error: Option<Error>,
    /// The once-per-task free retry after a session timeout is used.
    pub(super) session_retry_used: bool,
    /// The once-per-task long-link rescue is used
    /// ([`Config::long_link_rescue`](super::Config::long_link_rescue)).
    pub(super) rescue_used: bool,
    /// The attempt [`Task::body`] was last built for by its
    /// [`Task::body_source`] (0: never).
    pub(super) body_attempt: u32,
    /// What it waits for, if it needs auth ([`Task::need_authed`]).
    pub(super) gate: Option<Arc<AuthKey>>,
}

impl Entry {
    /// Its keys in the queue's indexes.
    pub(super) fn queue_keys(&self) -> Keys<'_> {
        Keys {
            order: self.order,
            class: self.class,
            gate: self.gate.as_ref(),
        }
    }

    /// The running attempt, if that is where the task stands.
    pub(super) fn running(&self) -> Option<&Attempt> {
        match &self.stage {
            Stage::Running(a) => Some(a),
            _ => None,
        }
    }

    /// The running short-link attempt.
    pub(super) fn short_attempt(&self) -> Option<&ShortAttempt> {
        match &self.stage {
            Stage::Running(Attempt {
                on: On::Short(a), ..
            }) => Some(a),
            _ => None,
        }
    }

    pub(super) fn short_attempt_mut(&mut self) -> Option<&mut ShortAttempt> {
        match &mut self.stage {
            Stage::Running(Attempt {
                on: On::Short(a), ..
            }) => Some(a),
            _ => None,
        }
    }

    /// The link of the attempt in flight or awaiting a verdict.
    pub(super) fn busy_channel(&self) -> Option<Channel> {
        match &self.stage {
            Stage::Running(a) => Some(a.channel()),
            Stage::Judging(p) => Some(p.report.channel),
            Stage::Queued(_) | Stage::Parked { .. } | Stage::Settling => None,
        }
    }

    /// Builds the body of the next attempt of `id` on `channel` (Mars
    /// `Req2Buf`), if the task has a [`BodySource`](crate::task::BodySource)
    /// and the body was not built for that attempt yet (an attempt that had
    /// to wait, e.g. for the long link's room, is not asked twice).
    pub(super) fn build_attempt_body(&mut self, id: TaskId, channel: Channel) {
        let attempt = self.attempts + 1;
        if self.body_attempt == attempt {
            return;
        }
        let Some(source) = self.task.body_source.clone() else {
            return;
        };
        self.task.body = source.body(&BodyRequest {
            task: id,
            attempt,
            channel,
        });
        self.body_attempt = attempt;
    }

    /// The report of an attempt started at `started` on `channel`, ended at
    /// `now` before it could say more (stopped, interrupted, out of time):
    /// everything but its times and error empty.
    pub(super) fn bare_report(
        &self,
        id: TaskId,
        channel: Channel,
        started: Instant,
        now: Instant,
        error: Option<Error>,
    ) -> Report {
        Report {
            task: id,
            attempt: self.attempts,
            channel,
            link: None,
            started,
            ended: now,
            endpoint: None,
            connect_time: None,
            handshake_time: None,
            early_data: false,
            first_packet_after: None,
            connect_attempts: 0,
            bytes_sent: 0,
            bytes_received: 0,
            hedges: 0,
            error,
            timeout: None,
            http_reply: None,
        }
    }

    /// The report of a short-link attempt that ended with its exchange's
    /// `result`, with what its hedges cost.
    pub(super) fn short_report(
        &self,
        id: TaskId,
        started: Instant,
        now: Instant,
        result: &ExchangeResult,
        hedged: Hedged,
    ) -> Report {
        Report {
            endpoint: result.endpoint,
            connect_time: result.connect_time,
            handshake_time: result.handshake_time,
            early_data: result.early_data,
            first_packet_after: result.first_packet_after,
            connect_attempts: result.connect_attempts + hedged.spent_connects,
            bytes_sent: result.bytes_sent,
            bytes_received: result.bytes_received,
            hedges: hedged.hedges,
            timeout: result.timeout,
            http_reply: result.http_reply.clone(),
            ..self.bare_report(
                id,
                Channel::Short,
                started,
                now,
                result.outcome.as_ref().err().cloned(),
            )
        }
    }

    /// The report of a long-link attempt on the link to `endpoint`: the
    /// frame's bytes (the body and its 20-byte header) beside the bare one.
    pub(super) fn long_report(
        &self,
        id: TaskId,
        started: Instant,
        now: Instant,
        endpoint: Option<SocketAddr>,
        error: Option<Error>,
    ) -> Report {
        Report {
            endpoint,
            bytes_sent: u64::try_from(self.task.body.len()).unwrap_or(u64::MAX) + 20,
            ..self.bare_report(id, Channel::Long, started, now, error)
        }
    }
}
