//! The engine's public vocabulary: what goes in, what comes out.

use bytes::Bytes;

use crate::error::{HttpReply, Outcome, Response};
use crate::io::{ConnEvent, ConnId, IoAction};
use crate::link_name::LinkName;
use crate::net::{IpAddr, SocketAddr};
use crate::task::{Channel, TaskError, TaskId};
use crate::time::{Duration, Instant};

use crate::error::Error;

/// An I/O result the adapter feeds to [`Engine::handle_input`](super::Engine::handle_input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Something happened on a connection the engine asked for.
    Conn {
        /// The connection (from an [`IoAction::Connect`]).
        conn: ConnId,
        /// What happened.
        event: ConnEvent,
    },
    /// The answer to [`Output::Resolve`] (Mars `OnNewDns`). Duplicates are
    /// kept: the same IP several times races it against itself.
    Resolved {
        /// The host asked about.
        host: String,
        /// Its addresses, in the app's order.
        addrs: Vec<IpAddr>,
    },
    /// The host could not be resolved.
    ResolveFailed {
        /// The host asked about.
        host: String,
    },
}

/// Where the long link stands, as reported by [`Event::LongLink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkStatus {
    /// A connect started.
    Connecting,
    /// The link is up.
    Connected {
        /// The endpoint it connected to.
        addr: SocketAddr,
    },
    /// The link is down (or a connect failed).
    Disconnected,
    /// The app disabled the long link
    /// ([`Engine::set_long_link_enabled`](super::Engine::set_long_link_enabled)):
    /// it is closed and does not reconnect until enabled again.
    Disabled,
}

/// Mars's task profile of one attempt (`ReportTaskProfile`): what it cost and
/// how it ended. One is emitted for every attempt that started, before the
/// task's [`Event::TaskFinished`] or its next attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The task.
    pub task: TaskId,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The link used: [`Channel::Short`] or [`Channel::Long`].
    pub channel: Channel,
    /// The named long link used ([`Task::link`](crate::Task::link)); `None`
    /// for the main long link and the short link.
    pub link: Option<LinkName>,
    /// When the attempt started.
    pub started: Instant,
    /// When it ended.
    pub ended: Instant,
    /// The endpoint that carried it, if a connection was made.
    pub endpoint: Option<SocketAddr>,
    /// The TCP connect time of that endpoint (short link: this attempt's
    /// connect; long link: `None`, the link was already up).
    pub connect_time: Option<Duration>,
    /// The TLS handshake of that connection, from its TCP connect to the
    /// end of the handshake (short link, this attempt's connect; `None`
    /// without TLS, on a pooled connection, or on the long link). Kept out
    /// of `connect_time` and of the RTT samples the timeouts follow: a
    /// handshake costs round trips a bare connect does not.
    pub handshake_time: Option<Duration>,
    /// The request went as TLS 1.3 early data (0-RTT) in the handshake's
    /// first flight ([`Task::early_data`](crate::Task::early_data)); had the
    /// server rejected it, the executor sent it again after the handshake.
    pub early_data: bool,
    /// From sending the request to the first response byte.
    pub first_packet_after: Option<Duration>,
    /// TCP connects started for this attempt (short link).
    pub connect_attempts: u32,
    /// Request bytes written (HTTP head and body, or the frame).
    pub bytes_sent: u64,
    /// Response bytes received.
    pub bytes_received: u64,
    /// Hedged exchanges started for this attempt (short link, stn's
    /// [`HedgePolicy`](super::HedgePolicy)): each sent the request once more.
    pub hedges: u32,
    /// Why it failed; `None` for success.
    pub error: Option<Error>,
    /// When one of the attempt's own timers ended it (first packet, packet
    /// gap, read-write, long poll: [`Error::Timeout`]), that timer's value.
    pub timeout: Option<Duration>,
    /// A short-link reply with a status other than 200 ([`Error::Http`]):
    /// its status, headers and body.
    pub http_reply: Option<HttpReply>,
}

/// What the engine asks for, in order; drain with
/// [`Engine::poll_output`](super::Engine::poll_output) after every call.
///
/// [`Output::Io`] and [`Output::Resolve`] are the adapter's work (sockets and
/// the resolver); [`Output::Event`] is for the app. Keep the order: an event
/// may refer to a connection an earlier `Io` opened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// A socket operation: open a connection (report on it with
    /// [`Input::Conn`]), write on it, or close it (no event is expected after
    /// a close).
    Io(IoAction),
    /// Resolve a host name and answer with [`Input::Resolved`] or
    /// [`Input::ResolveFailed`] (Mars `OnNewDns`).
    Resolve {
        /// The host name.
        host: String,
    },
    /// Something for the app.
    Event(Event),
}

/// What the engine tells the app ([`Output::Event`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A task ended. Exactly once per task [`Engine::submit`](super::Engine::submit) accepted.
    TaskFinished {
        /// The task.
        id: TaskId,
        /// Its response or why it failed.
        outcome: Outcome,
        /// Attempts it made (0 if it never started one).
        attempts: u32,
        /// The task's [`Task::user_tag`](crate::task::Task::user_tag).
        user_tag: u64,
    },
    /// A server push on the long link (seq 0).
    Push {
        /// Its command id.
        cmd_id: u32,
        /// Its body.
        body: Bytes,
    },
    /// The long link asks for the identify packet (Mars
    /// `GetLonglinkIdentifyCheckBuffer`): answer with
    /// [`Engine::identify_answer`](super::Engine::identify_answer).
    AskIdentify,
    /// The server's response to the identify packet (Mars
    /// `OnLonglinkIdentifyResponse`); the app may answer with
    /// [`Engine::identify_verdict`](super::Engine::identify_verdict).
    IdentifyResponse {
        /// Its command id.
        cmd_id: u32,
        /// Its body.
        body: Bytes,
    },
    /// A response arrived for a task that asked for the app's verdict
    /// ([`Task::judge`](crate::task::Task::judge), Mars `Buf2Resp`): decode
    /// it and answer with [`Engine::judge`](super::Engine::judge). The task
    /// stays held (its deadline still runs) until then.
    Judge(Box<JudgeRequest>),
    /// One attempt's profile.
    Report(Box<Report>),
    /// The long link's status changed.
    LongLink(LinkStatus),
    /// Something on a named long link
    /// ([`Engine::add_link`](super::Engine::add_link)), said as the main
    /// link says it: [`Event::LongLink`], [`Event::Push`],
    /// [`Event::AskIdentify`] (answer with
    /// [`Engine::link_identify_answer`](super::Engine::link_identify_answer))
    /// or [`Event::IdentifyResponse`] (answer with
    /// [`Engine::link_identify_verdict`](super::Engine::link_identify_verdict)).
    Link {
        /// The link.
        link: LinkName,
        /// What happened on it (boxed: outputs stay small).
        event: Box<Event>,
    },
}

/// A response waiting for the app's verdict ([`Event::Judge`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JudgeRequest {
    /// The task.
    pub id: TaskId,
    /// Which attempt produced it (1 for the first).
    pub attempt: u32,
    /// The link that carried it.
    pub channel: Channel,
    /// The task's [`Task::user_tag`](crate::task::Task::user_tag).
    pub user_tag: u64,
    /// The response, as it would be delivered.
    pub response: Response,
}

/// The app's verdict on a response (Mars's `Buf2Resp` return value,
/// `TaskFailHandleType`), given to [`Engine::judge`](super::Engine::judge).
///
/// ```
/// use stn_proto::Verdict;
/// assert_eq!(Verdict::from_mars_code(-13), Verdict::SessionTimeout);
/// assert_eq!(Verdict::SessionTimeout.mars_code(), -13);
/// // Codes Mars has no branch for take its default branch.
/// assert_eq!(Verdict::from_mars_code(-99), Verdict::Retry);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The response is good: the task ends with it (`kTaskFailHandleNoError`, 0).
    Accept,
    /// The response could not be decoded (`kTaskFailHandleDefault`, -1): the
    /// endpoint counts as failed and the task is retried if it has retries
    /// left, else it ends with [`Error::Decode`]. On the long link the link is
    /// dropped too (Mars: batch error, disconnect `kDecodeErr`): the other
    /// tasks in flight on it are redone.
    Retry,
    /// End the task now with [`Error::Decode`], no retry
    /// (`kTaskFailHandleTaskEnd`, -14).
    End,
    /// The server says the session expired (`kTaskFailHandleSessionTimeout`,
    /// -13). The engine marks itself unauthenticated (as if
    /// [`Engine::set_authed`](super::Engine::set_authed)`(false)`), so every
    /// `need_authed` task waits for the app to log in again and call
    /// `set_authed(true)`; the judged task gets one free retry (once per
    /// task); running `need_authed` tasks are stopped and retried at once
    /// (each uses a retry, or ends with [`Error::Decode`] without one); the
    /// long link is dropped if any of them ran on it.
    SessionTimeout,
    /// Retry every running task (`kTaskFailHandleRetryAllTasks`, -12): the
    /// judged task and every task with an attempt in flight or awaiting a
    /// verdict use a retry (or end with [`Error::Decode`]); the long link is
    /// dropped if any of them ran on it.
    RetryAll,
}

impl Verdict {
    /// Mars's `TaskFailHandleType` value.
    pub fn mars_code(self) -> i32 {
        match self {
            Verdict::Accept => 0,
            Verdict::Retry => -1,
            Verdict::RetryAll => -12,
            Verdict::SessionTimeout => -13,
            Verdict::End => -14,
        }
    }

    /// From Mars's `TaskFailHandleType` value. Mars's silent end (-16, long
    /// link only, no `OnTaskEnd`) becomes [`Verdict::End`]: here every task
    /// ends exactly once, so the app is still told. Any other unknown value
    /// takes Mars's default branch, [`Verdict::Retry`].
    pub fn from_mars_code(code: i32) -> Self {
        match code {
            0 => Verdict::Accept,
            -12 => Verdict::RetryAll,
            -13 => Verdict::SessionTimeout,
            -14 | -16 => Verdict::End,
            _ => Verdict::Retry,
        }
    }
}

/// Why [`Engine::submit`](super::Engine::submit) refused a task. A refused
/// task gets no id and no [`Event::TaskFinished`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The task breaks a rule of [`Task::validate`](crate::task::Task::validate).
    #[error(transparent)]
    Invalid(#[from] TaskError),
    /// The task can only use the long link and none is configured.
    #[error("the task needs the long link, and none is configured")]
    NoLongLink,
    /// The task can only use the short link and none is configured: no
    /// short-link port and no endpoint with a port of its own
    /// ([`ShortLinkEndpoints::is_configured`](super::ShortLinkEndpoints::is_configured)).
    #[error(
        "the task needs the short link, and none is configured \
         (no short-link port, and no endpoint with a port of its own)"
    )]
    NoShortLink,
    /// [`Config::max_queued_tasks`](super::Config::max_queued_tasks) tasks are held already.
    #[error("too many tasks queued")]
    QueueFull,
    /// [`Engine::shutdown`](super::Engine::shutdown) was called.
    #[error("the engine is shut down")]
    ShutDown,
    /// The task names a long link ([`Task::link`](crate::Task::link)) the
    /// engine does not have (never added, or removed).
    #[error("the task names the long link {0:?}, and there is no link of that name")]
    UnknownLink(LinkName),
    /// The task names a long link but may only use the short link (its
    /// channel is `Short`, or its `cmd_id` is 0).
    #[error("the task names the long link {0:?}, and may only use the short link")]
    ShortOnlyOnLink(LinkName),
}
