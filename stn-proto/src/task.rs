//! What a task is: one request/response call (Mars's "CGI") and every option
//! that changes how stn carries it.
//!
//! A [`Task`] is built with [`Task::new`] and chained setters, then checked with
//! [`Task::validate`], which applies Mars's parameter limits (`NetCore::StartTask`)
//! and its channel rules (`NetCore::__ValidAndInitDefault`). The engine assigns
//! each accepted task a [`TaskId`], which is also the `seq` of its long-link frames.

use core::fmt;

use bytes::Bytes;

use crate::id_map::DenseId;
use crate::time::Duration;

mod body_source;
mod table;
pub use body_source::{BodyRequest, BodySource};
pub(crate) use table::TaskTable;

/// Highest accepted [`Task::priority`] value (lowest urgency). Mars: 0 ..= 5.
pub(crate) const MAX_PRIORITY: u8 = 5;
/// Default priority, Mars's `kTaskPriorityNormal`.
pub(crate) const DEFAULT_PRIORITY: u8 = 3;
/// Largest accepted [`Task::retry_count`]; Mars rejects `retry_count > 30`.
pub(crate) const MAX_RETRY_COUNT: u8 = 30;
/// Retries used when [`Task::retry_count`] is `None` (Mars's `DEF_TASK_RETRY_COUNT`).
pub(crate) const DEFAULT_RETRY_COUNT: u8 = 1;
/// Largest accepted [`Task::server_process_cost`]; Mars rejects more than 120 000 ms.
pub(crate) const MAX_SERVER_PROCESS_COST: Duration = Duration::from_secs(120);
/// Largest accepted [`Task::total_timeout`]; Mars rejects more than 600 000 ms.
pub(crate) const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);

/// Identifies a submitted task. On the long link it is the frame's `seq`, which
/// is how responses find their task (`seq` 0 marks a server push).
///
/// A few values are reserved, as in Mars: [`TaskId::INVALID`] and everything
/// from [`TaskId::RESERVED_START`] up (noop, identify, signalling keeper).
/// [`TaskId::next`] never yields a reserved id.
///
/// ```
/// use stn_proto::TaskId;
/// let id = TaskId::FIRST;
/// assert_eq!(id.get(), 1);
/// assert_eq!(TaskId::new(0xFFFF_FFEF).next(), TaskId::FIRST); // wraps past the reserved ids
/// assert!(TaskId::NOOP.is_reserved());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(u32);

impl TaskId {
    /// Never a real task (Mars `kInvalidTaskID`); long-link `seq` 0 means "server push".
    pub const INVALID: TaskId = TaskId(0);
    /// The heartbeat frame's `seq` (Mars `kNoopTaskID`).
    pub const NOOP: TaskId = TaskId(0xFFFF_FFFF);
    /// The identify (auth handshake) frame's `seq` (Mars `kLongLinkIdentifyCheckerTaskID`).
    pub const IDENTIFY: TaskId = TaskId(0xFFFF_FFFE);
    /// The signalling-keeper frame's `seq` (Mars `kSignallingKeeperTaskID`).
    pub const SIGNALLING_KEEPER: TaskId = TaskId(0xFFFF_FFFD);
    /// First reserved id (Mars `kReservedTaskIDStart`); ids from here up are never assigned.
    pub const RESERVED_START: TaskId = TaskId(0xFFFF_FFF0);
    /// The first id an engine hands out.
    pub const FIRST: TaskId = TaskId(1);

    /// Wraps a raw id (for example a long-link `seq` read off the wire).
    pub const fn new(raw: u32) -> Self {
        TaskId(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// True for [`TaskId::INVALID`] and every id from [`TaskId::RESERVED_START`] up.
    pub const fn is_reserved(self) -> bool {
        self.0 == 0 || self.0 >= Self::RESERVED_START.0
    }

    /// The next assignable id after `self`, wrapping around past the reserved
    /// range to [`TaskId::FIRST`]. An engine that outlives 4 billion tasks must
    /// still skip ids that are in flight.
    pub const fn next(self) -> TaskId {
        let n = self.0.wrapping_add(1);
        if n == 0 || n >= Self::RESERVED_START.0 {
            Self::FIRST
        } else {
            TaskId(n)
        }
    }
}

impl From<TaskId> for u32 {
    fn from(id: TaskId) -> u32 {
        id.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Which link may carry a task (Mars `channel_select`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Channel {
    /// A fresh HTTP/1.1 POST to the task's cgi path (Mars `kChannelShort`).
    Short,
    /// A frame on the persistent long link (Mars `kChannelLong`).
    Long,
    /// The long link if it is connected when the task is dispatched, else the
    /// short link (Mars `kChannelBoth`; no later migration). See [`Channel::pick`].
    #[default]
    Both,
}

/// How a [`Channel::Both`] task picks its link (Mars `channel_strategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChannelStrategy {
    /// The long link whenever it is connected (Mars `kChannelNormalStrategy`).
    #[default]
    Normal,
    /// The long link only when it is connected *and* idle — no task in flight
    /// on it (Mars `kChannelFastStrategy` with
    /// `kFastSendUseLonglinkTaskCntLimit = 0`); otherwise the short link, so
    /// an urgent task never queues behind a busy long link.
    Fast,
}

impl Channel {
    /// The short link is allowed.
    pub const fn allows_short(self) -> bool {
        matches!(self, Channel::Short | Channel::Both)
    }

    /// The long link is allowed.
    pub const fn allows_long(self) -> bool {
        matches!(self, Channel::Long | Channel::Both)
    }

    /// The single link to use now: `Both` becomes `Long` if the long link is
    /// connected, else `Short`; `Short` and `Long` are returned unchanged.
    pub const fn pick(self, long_link_connected: bool) -> Channel {
        match self {
            Channel::Both if long_link_connected => Channel::Long,
            Channel::Both => Channel::Short,
            c => c,
        }
    }

    /// [`Channel::pick`] under a [`ChannelStrategy`]: with
    /// [`ChannelStrategy::Fast`], `Both` takes the long link only while it has
    /// no task in flight.
    pub const fn pick_with(
        self,
        strategy: ChannelStrategy,
        long_link_connected: bool,
        long_link_in_flight: usize,
    ) -> Channel {
        let long_ok = match strategy {
            ChannelStrategy::Normal => long_link_connected,
            ChannelStrategy::Fast => long_link_connected && long_link_in_flight == 0,
        };
        self.pick(long_ok)
    }

    /// Builds a channel from "short allowed" and "long allowed"; `None` if neither.
    const fn from_bits(short: bool, long: bool) -> Option<Channel> {
        match (short, long) {
            (true, true) => Some(Channel::Both),
            (true, false) => Some(Channel::Short),
            (false, true) => Some(Channel::Long),
            (false, false) => None,
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Channel::Short => "short link",
            Channel::Long => "long link",
            Channel::Both => "long or short link",
        })
    }
}

/// Why a [`Task`] was refused before it started. Rules are checked in the
/// order of the variants; [`Task::validate`] reports the first one broken.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// `priority` above `MAX_PRIORITY`.
    #[error("priority {priority} is out of range (0 highest ..= 5 lowest)")]
    PriorityOutOfRange {
        /// The value given.
        priority: u8,
    },
    /// `retry_count` above `MAX_RETRY_COUNT`.
    #[error("retry count {retry_count} exceeds the maximum of 30")]
    TooManyRetries {
        /// The value given.
        retry_count: u8,
    },
    /// `server_process_cost` above `MAX_SERVER_PROCESS_COST`.
    #[error("server process cost {cost:?} exceeds the maximum of 120s")]
    ServerProcessCostTooLarge {
        /// The value given.
        cost: Duration,
    },
    /// `total_timeout` above `MAX_TOTAL_TIMEOUT`.
    #[error("total timeout {timeout:?} exceeds the maximum of 600s")]
    TotalTimeoutTooLarge {
        /// The value given.
        timeout: Duration,
    },
    /// `long_polling` set to zero, which would time out before any reply.
    #[error("long-polling timeout must be greater than zero")]
    ZeroLongPollingTimeout,
    /// After clearing the long link (cmd_id 0) and the short link (empty cgi)
    /// nothing is left (Mars `kEctLocalChannelSelect`).
    #[error(
        "no usable channel for a task asking for the {requested}: \
         the long link needs a non-zero cmd_id and the short link a cgi path"
    )]
    NoChannel {
        /// The channel the task asked for.
        requested: Channel,
    },
    /// `send_only` together with `long_polling`: the first needs the long link,
    /// the second the short link.
    #[error("send_only (long link only) cannot be combined with long polling (short link only)")]
    SendOnlyWithLongPolling,
    /// `send_only` on a task that can only use the short link (Mars's short link
    /// refuses it: `kEctLocalStartTaskFail`).
    #[error("send_only needs the long link, but this task can only use the short link")]
    SendOnlyNeedsLongLink,
    /// `long_polling` on a task that can only use the long link.
    #[error("long polling needs the short link, but this task can only use the long link")]
    LongPollingNeedsShortLink,
    /// The short-link request cannot be encoded (checked only for a task
    /// that may use the short link): a cgi path that does not start with `/`
    /// or holds a byte outside visible ASCII, an empty or non-ASCII host, an
    /// extra header with a non-token name, a control character in a value
    /// (which would inject headers), or a header that changes the framing
    /// (`Transfer-Encoding`, a wrong `Content-Length`). The message is the
    /// HTTP codec's own ([`codec::http::check_request`](crate::codec::http::check_request)).
    #[error(transparent)]
    InvalidRequest(#[from] crate::codec::http::RequestError),
}

impl TaskError {
    /// Mars's `kEctLocal` code for this refusal:
    /// - `-5` (`kEctLocalChannelSelect`) for [`TaskError::NoChannel`];
    /// - `-3` (`kEctLocalStartTaskFail`) for [`TaskError::SendOnlyNeedsLongLink`]
    ///   (Mars's short link refuses to start a send-only task);
    /// - `-12` (`kEctLocalTaskParam`) for everything else (the limits, and
    ///   stn's own extra checks, which Mars lacks).
    pub const fn mars_code(&self) -> i32 {
        match self {
            TaskError::NoChannel { .. } => -5,
            TaskError::SendOnlyNeedsLongLink => -3,
            _ => -12,
        }
    }
}

/// One request/response call and how to carry it (Mars `Task`).
///
/// Fields are public for reading; build with [`Task::new`] and the chained
/// setters of the same names, then [`Task::validate`].
///
/// **A short-link request may reach the server more than once.** Under the
/// stn profile (the default) a short-link attempt that has sent its request
/// (of at most 8 KiB) and heard nothing for about 4 RTTs (0.6–3 s) is
/// *hedged*: the same request goes out once more on a fresh connection, up
/// to twice per attempt, and the first complete response wins
/// ([`HedgePolicy`](crate::engine::HedgePolicy)), but only for a task that
/// says its replay is harmless with [`hedge(true)`](Task::hedge): by default
/// a request is not hedged. Retries after a timeout resend it, under every
/// profile, as Mars does: for a request the server must not see twice, keep
/// `hedge` off and set `retry_count(0)`; hedging can also be turned off for
/// every task with [`Config::hedge`](crate::engine::Config::hedge) `= None`.
///
/// ```
/// use stn_proto::{Channel, Task};
/// use stn_proto::Duration;
///
/// let task = Task::new(1001, "/cgi-bin/hello", &b"payload"[..])
///     .channel(Channel::Both)
///     .priority(1)
///     .retry_count(2)
///     .total_timeout(Duration::from_secs(30))
///     .header("X-Trace", "abc");
/// assert!(task.validate().is_ok());
/// assert_eq!(task.attempts(), 3);
/// assert_eq!(task.effective_channel(), Ok(Channel::Both));
///
/// // cmd_id 0 cannot go on the long link, so a Long-only task has no channel left.
/// assert!(Task::new(0, "/cgi", "x").channel(Channel::Long).validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Task {
    /// Long-link frame `cmdid`. 0 means "no long-link command": the long link is
    /// not allowed.
    pub cmd_id: u32,
    /// Short-link URL path (the POST target), also the label in logs and
    /// reports. Empty means the short link is not allowed.
    pub cgi: String,
    /// Host for the short link's `Host` header (and the DNS name when the
    /// engine resolves per task); `None` uses the engine's configured host.
    pub host: Option<String>,
    /// Request body, already in the app's own framing (Mars `Req2Buf` output).
    pub body: Bytes,
    /// Which link may carry the task. Default [`Channel::Both`].
    pub channel: Channel,
    /// The named long link the task runs on (Mars's `channel_id`); `None`
    /// (the default) is the main long link or the short link, as
    /// [`channel`](Self::channel) says. A task on a named link uses that
    /// link only: its channel must allow the long link.
    pub link: Option<crate::LinkName>,
    /// How a `Both` task picks its link. Default [`ChannelStrategy::Normal`].
    pub channel_strategy: ChannelStrategy,
    /// 0 (highest) ..= 5 (lowest); the queue is FIFO within a priority.
    /// Default `DEFAULT_PRIORITY`.
    pub priority: u8,
    /// Retries after the first attempt; `None` = Mars default
    /// (`DEFAULT_RETRY_COUNT`). At most `MAX_RETRY_COUNT`.
    pub retry_count: Option<u8>,
    /// Expected server processing time; lengthens the first-packet and task
    /// timeouts. `None` = unknown (Mars -1). At most `MAX_SERVER_PROCESS_COST`.
    pub server_process_cost: Option<Duration>,
    /// How long to keep trying, all attempts included, measured from
    /// submission (Mars's task timeout set by the app): within it a task
    /// whose attempts fail may be parked and replayed (Mars's zombie
    /// tasks). Under the Mars profiles a link that refuses at once is
    /// retried until it ends; under the stn profile a task whose every
    /// candidate refused (or failed TLS for good) ends in that connect
    /// round with the refusal. `None` (or zero) = computed from the other fields (Mars's
    /// formula). At most [`Task::MAX_TOTAL_TIMEOUT`].
    pub total_timeout: Option<Duration>,
    /// Long link only: the task succeeds once its frame is queued for writing,
    /// without waiting for a response.
    pub send_only: bool,
    /// Wait for the app to confirm authentication (Mars `MakesureAuthed`)
    /// before each attempt: for this task's host and
    /// [`user_id`](Self::user_id), see
    /// [`Engine::set_host_authed`](crate::engine::Engine::set_host_authed).
    pub need_authed: bool,
    /// The user the task is sent for (Mars `Task::user_id`), for apps with
    /// several accounts. A need-auth task waits for its own user's session;
    /// a session timeout on the long link redoes only the running need-auth
    /// tasks of the same user (on the short link, Mars's rule: every running
    /// need-auth task). `None` (the default) is one user like any other.
    pub user_id: Option<String>,
    /// Subject to the identical-request frequency limit. Default true.
    pub limit_frequency: bool,
    /// Subject to the mobile flow limit. Default true.
    pub limit_flow: bool,
    /// Fail at once with "no network" when there is no network and the long
    /// link is down, instead of waiting.
    pub network_status_sensitive: bool,
    /// Short link only: long polling with this timeout, which replaces the
    /// first-packet timeout (the task timeout becomes this + 5 s in Mars).
    pub long_polling: Option<Duration>,
    /// Extra HTTP headers for the short link, in order (they may override the
    /// fixed ones; `Connection: Keep-Alive` enables socket reuse in Mars).
    pub headers: Vec<(String, String)>,
    /// Opaque value for the caller, handed back untouched (Mars `user_context`).
    pub user_tag: u64,
    /// Ask the app to judge each response before the task ends (Mars
    /// `Buf2Resp`): the engine emits
    /// [`Action::Judge`](crate::Event::Judge) and waits for
    /// [`Engine::judge`](crate::engine::Engine::judge), which may accept the
    /// response, retry, end the task or report an expired session. Off by
    /// default: the response ends the task as soon as it arrives.
    pub judge: bool,
    /// May the engine hedge this task's short-link request — send it once
    /// more on a fresh connection while the first goes unanswered
    /// ([`HedgePolicy`](crate::engine::HedgePolicy), stn profile)? The same
    /// switch allows the long link's rescue (stn profile): a task with no
    /// retry left whose link stalled is sent once more on the next
    /// connection. Default false: set it only for a request whose replay is
    /// harmless (a read, an idempotent call), because a hedged request can
    /// reach the server twice.
    pub hedge: bool,
    /// May the short link send this request as TLS 1.3 early data (0-RTT)
    /// on a connection that resumes a session, one round trip before the
    /// handshake completes? Early data can be replayed by an attacker
    /// (RFC 8446 §8): set it only for a request whose replay is harmless (a
    /// read, an idempotent call). The engine uses it under the stn profile
    /// (`engine.early_data` in `docs/profiles.md`) when the executor offers it
    /// ([`ConnEvent::EarlyData`](crate::ConnEvent::EarlyData)) and the whole
    /// request fits. Default false.
    pub early_data: bool,
    /// Builds the body anew for every attempt (Mars `Req2Buf`), replacing
    /// [`body`](Self::body); `None` (the default) sends `body` every time.
    pub body_source: Option<BodySource>,
}

impl Task {
    /// Highest [`priority`](Self::priority) [`validate`](Self::validate)
    /// accepts (lowest urgency; Mars: 0 ..= 5).
    pub const MAX_PRIORITY: u8 = MAX_PRIORITY;
    /// Largest [`retry_count`](Self::retry_count) accepted (Mars: 30).
    pub const MAX_RETRY_COUNT: u8 = MAX_RETRY_COUNT;
    /// Largest [`server_process_cost`](Self::server_process_cost) accepted
    /// (Mars: 120 s).
    pub const MAX_SERVER_PROCESS_COST: Duration = MAX_SERVER_PROCESS_COST;
    /// Largest [`total_timeout`](Self::total_timeout) accepted (Mars: 600 s).
    pub const MAX_TOTAL_TIMEOUT: Duration = MAX_TOTAL_TIMEOUT;

    /// A task with Mars's defaults: channel `Both`, priority 3, default
    /// retries, no server cost or total timeout, frequency and flow limits on,
    /// every other flag off.
    pub fn new(cmd_id: u32, cgi: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Task {
            cmd_id,
            cgi: cgi.into(),
            host: None,
            body: body.into(),
            channel: Channel::Both,
            link: None,
            channel_strategy: ChannelStrategy::Normal,
            priority: DEFAULT_PRIORITY,
            retry_count: None,
            server_process_cost: None,
            total_timeout: None,
            send_only: false,
            need_authed: false,
            user_id: None,
            limit_frequency: true,
            limit_flow: true,
            network_status_sensitive: false,
            long_polling: None,
            headers: Vec::new(),
            user_tag: 0,
            judge: false,
            hedge: false,
            early_data: false,
            body_source: None,
        }
    }

    /// Sets [`Task::cmd_id`].
    #[must_use]
    pub fn cmd_id(mut self, cmd_id: u32) -> Self {
        self.cmd_id = cmd_id;
        self
    }

    /// Sets [`Task::cgi`].
    #[must_use]
    pub fn cgi(mut self, cgi: impl Into<String>) -> Self {
        self.cgi = cgi.into();
        self
    }

    /// Sets [`Task::host`].
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// Sets [`Task::body`].
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets [`Task::body_source`]: the body is built for each attempt.
    #[must_use]
    pub fn body_source(mut self, source: BodySource) -> Self {
        self.body_source = Some(source);
        self
    }

    /// Sets [`Task::channel`].
    #[must_use]
    pub fn channel(mut self, channel: Channel) -> Self {
        self.channel = channel;
        self
    }

    /// Sets [`Task::link`]: the task runs on the named long link.
    #[must_use]
    pub fn on_link(mut self, link: crate::LinkName) -> Self {
        self.link = Some(link);
        self
    }

    /// Sets [`Task::channel_strategy`].
    #[must_use]
    pub fn channel_strategy(mut self, strategy: ChannelStrategy) -> Self {
        self.channel_strategy = strategy;
        self
    }

    /// Sets [`Task::priority`].
    #[must_use]
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// Sets [`Task::retry_count`] (retries after the first attempt).
    #[must_use]
    pub fn retry_count(mut self, retries: u8) -> Self {
        self.retry_count = Some(retries);
        self
    }

    /// Sets [`Task::server_process_cost`].
    #[must_use]
    pub fn server_process_cost(mut self, cost: Duration) -> Self {
        self.server_process_cost = Some(cost);
        self
    }

    /// Sets [`Task::total_timeout`]: keep trying until `timeout` has
    /// passed since submission.
    #[must_use]
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = Some(timeout);
        self
    }

    /// Sets [`Task::send_only`].
    #[must_use]
    pub fn send_only(mut self, on: bool) -> Self {
        self.send_only = on;
        self
    }

    /// Sets [`Task::judge`].
    #[must_use]
    pub fn judge(mut self, on: bool) -> Self {
        self.judge = on;
        self
    }

    /// Sets [`Task::hedge`].
    #[must_use]
    pub fn hedge(mut self, on: bool) -> Self {
        self.hedge = on;
        self
    }

    /// Sets [`Task::early_data`]: the request may travel as TLS 0-RTT early
    /// data, so only for one whose replay is harmless.
    ///
    /// ```
    /// use stn_proto::Task;
    ///
    /// let read = Task::new(7, "/cgi-bin/profile", "uid=1").early_data(true);
    /// assert!(read.early_data);
    /// assert!(!Task::new(7, "/cgi-bin/pay", "x").early_data);
    /// ```
    #[must_use]
    pub fn early_data(mut self, on: bool) -> Self {
        self.early_data = on;
        self
    }

    /// Sets [`Task::need_authed`].
    #[must_use]
    pub fn need_authed(mut self, on: bool) -> Self {
        self.need_authed = on;
        self
    }

    /// Sets [`Task::user_id`].
    ///
    /// ```
    /// use stn_proto::Task;
    ///
    /// let task = Task::new(7, "/cgi", "x").need_authed(true).user_id("alice");
    /// assert_eq!(task.user_id.as_deref(), Some("alice"));
    /// ```
    #[must_use]
    pub fn user_id(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// Sets [`Task::limit_frequency`].
    #[must_use]
    pub fn limit_frequency(mut self, on: bool) -> Self {
        self.limit_frequency = on;
        self
    }

    /// Sets [`Task::limit_flow`].
    #[must_use]
    pub fn limit_flow(mut self, on: bool) -> Self {
        self.limit_flow = on;
        self
    }

    /// Sets [`Task::network_status_sensitive`].
    #[must_use]
    pub fn network_status_sensitive(mut self, on: bool) -> Self {
        self.network_status_sensitive = on;
        self
    }

    /// Makes the task a long-polling one with this timeout ([`Task::long_polling`]).
    #[must_use]
    pub fn long_polling(mut self, timeout: Duration) -> Self {
        self.long_polling = Some(timeout);
        self
    }

    /// Appends an extra HTTP header ([`Task::headers`]).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets [`Task::user_tag`].
    #[must_use]
    pub fn user_tag(mut self, tag: u64) -> Self {
        self.user_tag = tag;
        self
    }

    /// Retries after the first attempt, with `None` resolved to
    /// `DEFAULT_RETRY_COUNT`.
    pub fn retries(&self) -> u8 {
        self.retry_count.unwrap_or(DEFAULT_RETRY_COUNT)
    }

    /// Total attempts allowed: retries + 1 (2 with the default retry count).
    pub fn attempts(&self) -> u32 {
        u32::from(self.retries()) + 1
    }

    /// Checks every rule, in this order, and reports the first one broken:
    /// priority, retry count, server process cost, total timeout (Mars's
    /// limits, `kEctLocalTaskParam`); a non-zero long-polling timeout; the
    /// channel rules of [`Task::effective_channel`]; then, for a task that
    /// may use the short link, the request as the HTTP codec would encode
    /// it: cgi path, host and extra headers (stn's own guard against HTTP
    /// injection, reported with the codec's message).
    pub fn validate(&self) -> Result<(), TaskError> {
        if self.priority > MAX_PRIORITY {
            return Err(TaskError::PriorityOutOfRange {
                priority: self.priority,
            });
        }
        if let Some(retry_count) = self.retry_count {
            if retry_count > MAX_RETRY_COUNT {
                return Err(TaskError::TooManyRetries { retry_count });
            }
        }
        if let Some(cost) = self.server_process_cost {
            if cost > MAX_SERVER_PROCESS_COST {
                return Err(TaskError::ServerProcessCostTooLarge { cost });
            }
        }
        if let Some(timeout) = self.total_timeout {
            if timeout > MAX_TOTAL_TIMEOUT {
                return Err(TaskError::TotalTimeoutTooLarge { timeout });
            }
        }
        if self.long_polling == Some(Duration::ZERO) {
            return Err(TaskError::ZeroLongPollingTimeout);
        }
        let channel = self.effective_channel()?;
        if channel.allows_short() {
            // A body source builds each attempt's body: its length (and so a
            // `Content-Length` the app set) is checked when the attempt encodes.
            let body_len = self.body_source.is_none().then_some(self.body.len());
            crate::codec::http::check_request(
                &self.cgi,
                self.host.as_deref(),
                &self.headers,
                body_len,
            )?;
        }
        Ok(())
    }

    /// The channel the task may really use, after Mars's rules:
    /// 1. cmd_id 0 removes the long link; an empty cgi removes the short link;
    ///    nothing left → [`TaskError::NoChannel`] (Mars `kEctLocalChannelSelect`).
    /// 2. `send_only` with `long_polling` → [`TaskError::SendOnlyWithLongPolling`].
    /// 3. `send_only` needs the long link ([`TaskError::SendOnlyNeedsLongLink`]
    ///    if it is not allowed) and narrows `Both` to `Long`. Mars would send
    ///    such a `Both` task on the short link when the long link is down and
    ///    fail it there; stn waits for the long link instead.
    /// 4. `long_polling` needs the short link
    ///    ([`TaskError::LongPollingNeedsShortLink`]) and narrows `Both` to
    ///    `Short` (Mars would silently ignore long polling on the long link).
    ///
    /// Checks only the channel rules; [`Task::validate`] checks everything.
    pub fn effective_channel(&self) -> Result<Channel, TaskError> {
        let mut short = self.channel.allows_short() && !self.cgi.is_empty();
        let mut long = self.channel.allows_long() && self.cmd_id != 0;
        if !short && !long {
            return Err(TaskError::NoChannel {
                requested: self.channel,
            });
        }
        if self.send_only && self.long_polling.is_some() {
            return Err(TaskError::SendOnlyWithLongPolling);
        }
        if self.send_only {
            if !long {
                return Err(TaskError::SendOnlyNeedsLongLink);
            }
            short = false;
        }
        if self.long_polling.is_some() {
            if !short {
                return Err(TaskError::LongPollingNeedsShortLink);
            }
            long = false;
        }
        // At least one bit survives every branch above.
        Channel::from_bits(short, long).ok_or(TaskError::NoChannel {
            requested: self.channel,
        })
    }
}

/// Task ids are handed out in order: a dense key for the engine's tables.
impl DenseId for TaskId {
    fn to_raw(self) -> u64 {
        u64::from(self.get())
    }
    fn from_raw(raw: u64) -> Self {
        // Only raws of this map's own keys come back (a window never spans
        // past the largest key it was given).
        TaskId::new(raw as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::http::RequestError;
    use crate::test_util::ms;
    use proptest::prelude::*;
    use quickcheck::{Arbitrary, Gen, QuickCheck};

    fn base() -> Task {
        Task::new(7, "/cgi", "body")
    }

    #[test]
    fn defaults_match_mars() {
        let t = base();
        assert_eq!(t.cmd_id, 7);
        assert_eq!(t.cgi, "/cgi");
        assert_eq!(t.body, Bytes::from_static(b"body"));
        assert_eq!(t.channel, Channel::Both);
        assert_eq!(t.priority, 3);
        assert_eq!(t.retry_count, None);
        assert_eq!(t.retries(), 1);
        assert_eq!(t.attempts(), 2);
        assert_eq!(t.server_process_cost, None);
        assert_eq!(t.total_timeout, None);
        assert!(!t.send_only && !t.need_authed && !t.network_status_sensitive);
        assert!(t.limit_frequency && t.limit_flow);
        assert_eq!(t.long_polling, None);
        assert!(t.headers.is_empty());
        assert_eq!(t.user_tag, 0);
        assert_eq!(t.host, None);
        assert_eq!(t.validate(), Ok(()));
    }

    #[test]
    fn setters_set_their_fields() {
        let t = Task::new(0, "", Bytes::new())
            .cmd_id(9)
            .cgi("/x")
            .host("example.com")
            .body("b")
            .channel(Channel::Short)
            .priority(0)
            .retry_count(4)
            .server_process_cost(ms(100))
            .total_timeout(ms(200))
            .send_only(true)
            .need_authed(true)
            .limit_frequency(false)
            .limit_flow(false)
            .network_status_sensitive(true)
            .long_polling(ms(300))
            .header("A", "1")
            .header("B", "2")
            .user_tag(42);
        assert_eq!(t.cmd_id, 9);
        assert_eq!(t.cgi, "/x");
        assert_eq!(t.host.as_deref(), Some("example.com"));
        assert_eq!(t.body, Bytes::from_static(b"b"));
        assert_eq!(t.channel, Channel::Short);
        assert_eq!(t.priority, 0);
        assert_eq!(t.retry_count, Some(4));
        assert_eq!(t.attempts(), 5);
        assert_eq!(t.server_process_cost, Some(ms(100)));
        assert_eq!(t.total_timeout, Some(ms(200)));
        assert!(t.send_only && t.need_authed && t.network_status_sensitive);
        assert!(!t.limit_frequency && !t.limit_flow);
        assert_eq!(t.long_polling, Some(ms(300)));
        assert_eq!(
            t.headers,
            vec![("A".into(), "1".into()), ("B".into(), "2".into())]
        );
        assert_eq!(t.user_tag, 42);
    }

    #[test]
    fn attempts_is_retries_plus_one() {
        assert_eq!(base().retry_count(0).attempts(), 1);
        assert_eq!(base().retry_count(30).attempts(), 31);
        assert_eq!(base().retry_count(255).attempts(), 256);
    }

    #[test]
    fn priority_limit() {
        assert_eq!(base().priority(0).validate(), Ok(()));
        assert_eq!(base().priority(5).validate(), Ok(()));
        assert_eq!(
            base().priority(6).validate(),
            Err(TaskError::PriorityOutOfRange { priority: 6 })
        );
        assert!(base().priority(255).validate().is_err());
    }

    #[test]
    fn retry_limit() {
        assert_eq!(base().retry_count(0).validate(), Ok(()));
        assert_eq!(base().retry_count(30).validate(), Ok(()));
        assert_eq!(
            base().retry_count(31).validate(),
            Err(TaskError::TooManyRetries { retry_count: 31 })
        );
    }

    #[test]
    fn server_cost_limit() {
        assert_eq!(base().server_process_cost(ms(0)).validate(), Ok(()));
        assert_eq!(base().server_process_cost(ms(120_000)).validate(), Ok(()));
        assert_eq!(
            base().server_process_cost(ms(120_001)).validate(),
            Err(TaskError::ServerProcessCostTooLarge { cost: ms(120_001) })
        );
        // Finer than Mars's milliseconds: one nanosecond over is over.
        let just_over = MAX_SERVER_PROCESS_COST + Duration::from_nanos(1);
        assert!(base().server_process_cost(just_over).validate().is_err());
    }

    #[test]
    fn total_timeout_limit() {
        assert_eq!(base().total_timeout(ms(0)).validate(), Ok(()));
        assert_eq!(base().total_timeout(ms(600_000)).validate(), Ok(()));
        assert_eq!(
            base().total_timeout(ms(600_001)).validate(),
            Err(TaskError::TotalTimeoutTooLarge {
                timeout: ms(600_001)
            })
        );
    }

    #[test]
    fn long_polling_timeout_must_be_positive() {
        let t = Task::new(0, "/poll", "");
        assert_eq!(t.clone().long_polling(ms(1)).validate(), Ok(()));
        assert_eq!(
            t.long_polling(Duration::ZERO).validate(),
            Err(TaskError::ZeroLongPollingTimeout)
        );
    }

    #[test]
    fn cgi_host_and_headers_cannot_inject() {
        assert_eq!(
            base().cgi("/a b").validate(),
            Err(RequestError::BadCgi("/a b".into()).into())
        );
        assert!(base().cgi("/a\r\nX: y").validate().is_err());
        // The codec's rule: visible ASCII only (percent-encode the rest).
        assert!(base().cgi("/über?q=1").validate().is_err());
        assert_eq!(base().cgi("/%C3%BCber?q=1").validate(), Ok(()));
        assert_eq!(base().host("example.com:8080").validate(), Ok(()));
        assert_eq!(
            base().host("").validate(),
            Err(RequestError::BadHost(String::new()).into())
        );
        assert!(base().host("a\nb").validate().is_err());
        assert_eq!(base().header("Connection", "Keep-Alive").validate(), Ok(()));
        assert_eq!(base().header("X-A", "tab\tand space ok").validate(), Ok(()));
        assert_eq!(
            base().header("X-A", "1").header("Bad Name", "v").validate(),
            Err(RequestError::BadHeaderName("Bad Name".into()).into())
        );
        assert_eq!(
            base().header("Transfer-Encoding", "chunked").validate(),
            Err(RequestError::FramingHeader("Transfer-Encoding".into()).into())
        );
        assert_eq!(base().header("Content-Length", "4").validate(), Ok(()));
        assert!(base().header("", "v").validate().is_err());
        assert!(base().header("X-A", "v\r\nInjected: 1").validate().is_err());
        assert!(base().header("X-A", "nul\0").validate().is_err());
    }

    #[test]
    fn a_cgi_without_its_slash_is_refused_with_the_codecs_message() {
        let err = base().cgi("mars/hello2").validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid cgi path \"mars/hello2\": must start with '/' and hold only visible ASCII"
        );
        // A task that can only use the long link never sends its cgi.
        assert_eq!(
            base().cgi("mars/hello2").channel(Channel::Long).validate(),
            Ok(())
        );
    }

    #[test]
    fn limits_are_checked_before_channel_rules() {
        // Mars validates parameters (-12) before channel_select (-5).
        let t = Task::new(0, "", "").priority(9);
        assert_eq!(
            t.validate(),
            Err(TaskError::PriorityOutOfRange { priority: 9 })
        );
        assert_eq!(
            t.effective_channel(),
            Err(TaskError::NoChannel {
                requested: Channel::Both
            })
        );
    }

    #[test]
    fn channel_bits_cleared_by_cmd_id_and_cgi() {
        let ch = |cmd: u32, cgi: &str, c: Channel| {
            Task::new(cmd, cgi, "").channel(c).effective_channel()
        };
        assert_eq!(ch(1, "/c", Channel::Both), Ok(Channel::Both));
        assert_eq!(ch(0, "/c", Channel::Both), Ok(Channel::Short));
        assert_eq!(ch(1, "", Channel::Both), Ok(Channel::Long));
        assert_eq!(
            ch(0, "", Channel::Both),
            Err(TaskError::NoChannel {
                requested: Channel::Both
            })
        );
        assert_eq!(ch(1, "/c", Channel::Long), Ok(Channel::Long));
        assert_eq!(
            ch(0, "/c", Channel::Long),
            Err(TaskError::NoChannel {
                requested: Channel::Long
            })
        );
        assert_eq!(ch(1, "/c", Channel::Short), Ok(Channel::Short));
        assert_eq!(
            ch(1, "", Channel::Short),
            Err(TaskError::NoChannel {
                requested: Channel::Short
            })
        );
    }

    #[test]
    fn send_only_is_long_link_only() {
        let t = base().send_only(true);
        assert_eq!(
            t.clone().channel(Channel::Long).effective_channel(),
            Ok(Channel::Long)
        );
        assert_eq!(
            t.clone().channel(Channel::Both).effective_channel(),
            Ok(Channel::Long)
        );
        assert_eq!(
            t.clone().channel(Channel::Short).validate(),
            Err(TaskError::SendOnlyNeedsLongLink)
        );
        // Both with cmd_id 0 leaves only the short link.
        assert_eq!(
            t.cmd_id(0).validate(),
            Err(TaskError::SendOnlyNeedsLongLink)
        );
    }

    #[test]
    fn long_polling_is_short_link_only() {
        let t = base().long_polling(Duration::from_secs(60));
        assert_eq!(
            t.clone().channel(Channel::Short).effective_channel(),
            Ok(Channel::Short)
        );
        assert_eq!(
            t.clone().channel(Channel::Both).effective_channel(),
            Ok(Channel::Short)
        );
        assert_eq!(
            t.clone().channel(Channel::Long).validate(),
            Err(TaskError::LongPollingNeedsShortLink)
        );
        assert_eq!(
            t.cgi("").validate(),
            Err(TaskError::LongPollingNeedsShortLink)
        );
    }

    #[test]
    fn send_only_and_long_polling_conflict() {
        assert_eq!(
            base()
                .send_only(true)
                .long_polling(ms(1))
                .effective_channel(),
            Err(TaskError::SendOnlyWithLongPolling)
        );
    }

    #[test]
    fn channel_pick_and_bits() {
        assert_eq!(Channel::Both.pick(true), Channel::Long);
        assert_eq!(Channel::Both.pick(false), Channel::Short);
        assert_eq!(Channel::Short.pick(true), Channel::Short);
        assert_eq!(Channel::Long.pick(false), Channel::Long);
        assert!(Channel::Both.allows_long() && Channel::Both.allows_short());
        assert!(!Channel::Short.allows_long() && !Channel::Long.allows_short());
    }

    #[test]
    fn fast_strategy_takes_the_long_link_only_when_idle() {
        use ChannelStrategy::{Fast, Normal};
        assert_eq!(Channel::Both.pick_with(Normal, true, 3), Channel::Long);
        assert_eq!(Channel::Both.pick_with(Fast, true, 0), Channel::Long);
        assert_eq!(Channel::Both.pick_with(Fast, true, 1), Channel::Short);
        assert_eq!(Channel::Both.pick_with(Fast, false, 0), Channel::Short);
        // A fixed channel is never changed by the strategy.
        assert_eq!(Channel::Long.pick_with(Fast, true, 9), Channel::Long);
        assert_eq!(Channel::Short.pick_with(Fast, true, 0), Channel::Short);
        assert_eq!(Task::new(1, "/c", "").channel_strategy, Normal);
    }

    #[test]
    fn task_error_mars_codes() {
        assert_eq!(
            TaskError::NoChannel {
                requested: Channel::Both
            }
            .mars_code(),
            -5
        );
        assert_eq!(TaskError::SendOnlyNeedsLongLink.mars_code(), -3);
        assert_eq!(
            TaskError::TooManyRetries { retry_count: 31 }.mars_code(),
            -12
        );
        assert_eq!(
            TaskError::PriorityOutOfRange { priority: 6 }.mars_code(),
            -12
        );
        assert_eq!(TaskError::LongPollingNeedsShortLink.mars_code(), -12);
    }

    #[test]
    fn messages_are_clear() {
        assert_eq!(
            TaskError::TooManyRetries { retry_count: 31 }.to_string(),
            "retry count 31 exceeds the maximum of 30"
        );
        assert_eq!(
            TaskError::TotalTimeoutTooLarge {
                timeout: ms(600_001)
            }
            .to_string(),
            "total timeout 600.001s exceeds the maximum of 600s"
        );
        assert_eq!(
            TaskError::NoChannel {
                requested: Channel::Long
            }
            .to_string(),
            "no usable channel for a task asking for the long link: \
             the long link needs a non-zero cmd_id and the short link a cgi path"
        );
    }

    #[test]
    fn task_id_reserved_and_next() {
        assert!(TaskId::INVALID.is_reserved());
        assert!(TaskId::NOOP.is_reserved());
        assert!(TaskId::IDENTIFY.is_reserved());
        assert!(TaskId::SIGNALLING_KEEPER.is_reserved());
        assert!(TaskId::RESERVED_START.is_reserved());
        assert!(!TaskId::new(0xFFFF_FFEF).is_reserved());
        assert!(!TaskId::FIRST.is_reserved());
        assert_eq!(TaskId::NOOP.get(), 0xFFFF_FFFF);
        assert_eq!(TaskId::IDENTIFY.get(), 0xFFFF_FFFE);
        assert_eq!(TaskId::INVALID.get(), 0);
        assert_eq!(TaskId::FIRST.next(), TaskId::new(2));
        assert_eq!(TaskId::INVALID.next(), TaskId::FIRST);
        assert_eq!(TaskId::NOOP.next(), TaskId::FIRST);
        assert_eq!(TaskId::IDENTIFY.next(), TaskId::FIRST);
        assert_eq!(TaskId::new(0xFFFF_FFEE).next(), TaskId::new(0xFFFF_FFEF));
        assert_eq!(TaskId::new(0xFFFF_FFEF).next(), TaskId::FIRST);
        assert_eq!(u32::from(TaskId::new(5)), 5);
        assert_eq!(TaskId::new(5).to_string(), "#5");
    }

    // ---- Property tests -------------------------------------------------

    /// Raw field values, independent of the builder, so tests can state the
    /// rules over plain data.
    #[derive(Clone, Debug)]
    struct Spec {
        cmd_id: u32,
        cgi: String,
        host: Option<String>,
        channel: Channel,
        priority: u8,
        retry_count: Option<u8>,
        server_process_cost: Option<Duration>,
        total_timeout: Option<Duration>,
        send_only: bool,
        long_polling: Option<Duration>,
        headers: Vec<(String, String)>,
    }

    impl Spec {
        fn build(&self) -> Task {
            let mut t = Task::new(self.cmd_id, self.cgi.clone(), "")
                .channel(self.channel)
                .priority(self.priority)
                .send_only(self.send_only);
            t.host = self.host.clone();
            t.retry_count = self.retry_count;
            t.server_process_cost = self.server_process_cost;
            t.total_timeout = self.total_timeout;
            t.long_polling = self.long_polling;
            t.headers = self.headers.clone();
            t
        }
    }

    /// Independent restatement of the rules, as (holds, error if broken), in
    /// the documented order. The character classes are phrased differently
    /// from the implementation (header names as "visible ASCII minus the RFC
    /// delimiters" rather than a token whitelist).
    fn reference_rules(s: &Spec) -> Vec<(bool, TaskError)> {
        let visible = |x: &str| x.bytes().all(|b| (0x21..=0x7e).contains(&b));
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| (0x21..=0x7e).contains(&b) && !b"(),/:;<=>?@[\\]{}\"".contains(&b))
        };
        let value_ok = |v: &str| !v.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f);
        let short = s.channel != Channel::Long && !s.cgi.is_empty();
        let long = s.channel != Channel::Short && s.cmd_id != 0;
        let lp = s.long_polling.is_some();
        // The request is checked only when the task may use the short link.
        let sends_request = short && !s.send_only;
        let header_error = s.headers.iter().find_map(|(n, v)| {
            let framing = n.eq_ignore_ascii_case("transfer-encoding")
                || (n.eq_ignore_ascii_case("content-length") && v.trim_matches([' ', '\t']) != "0");
            if !name_ok(n) {
                Some(RequestError::BadHeaderName(n.clone()))
            } else if !value_ok(v) {
                Some(RequestError::BadHeaderValue { name: n.clone() })
            } else {
                framing.then(|| RequestError::FramingHeader(n.clone()))
            }
        });
        vec![
            (
                s.priority <= 5,
                TaskError::PriorityOutOfRange {
                    priority: s.priority,
                },
            ),
            (
                s.retry_count.is_none_or(|r| r <= 30),
                TaskError::TooManyRetries {
                    retry_count: s.retry_count.unwrap_or(0),
                },
            ),
            (
                s.server_process_cost
                    .is_none_or(|c| c.as_nanos() <= 120_000_000_000),
                TaskError::ServerProcessCostTooLarge {
                    cost: s.server_process_cost.unwrap_or_default(),
                },
            ),
            (
                s.total_timeout
                    .is_none_or(|c| c.as_nanos() <= 600_000_000_000),
                TaskError::TotalTimeoutTooLarge {
                    timeout: s.total_timeout.unwrap_or_default(),
                },
            ),
            (
                s.long_polling.is_none_or(|d| d.as_nanos() > 0),
                TaskError::ZeroLongPollingTimeout,
            ),
            (
                short || long,
                TaskError::NoChannel {
                    requested: s.channel,
                },
            ),
            (!(s.send_only && lp), TaskError::SendOnlyWithLongPolling),
            (!s.send_only || long, TaskError::SendOnlyNeedsLongLink),
            (!lp || short, TaskError::LongPollingNeedsShortLink),
            (
                !sends_request || (s.cgi.starts_with('/') && visible(&s.cgi)),
                RequestError::BadCgi(s.cgi.clone()).into(),
            ),
            (
                !sends_request
                    || s.host
                        .as_deref()
                        .is_none_or(|h| !h.is_empty() && visible(h)),
                RequestError::BadHost(s.host.clone().unwrap_or_default()).into(),
            ),
            (
                !sends_request || header_error.is_none(),
                header_error
                    .unwrap_or_else(|| RequestError::BadHeaderName(String::new()))
                    .into(),
            ),
        ]
    }

    fn reference_validate(s: &Spec) -> Result<(), TaskError> {
        match reference_rules(s).into_iter().find(|(ok, _)| !ok) {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }

    fn all_limits_hold(s: &Spec) -> bool {
        reference_rules(s).iter().all(|(ok, _)| *ok)
    }

    // Values clustered around every boundary, from a small alphabet that
    // includes the characters the syntax rules care about.
    const TEXT: &[&str] = &[
        "", "/cgi", "/a b", "/x\r\n", "h\0", "/ü", "a:b", "X-Ok", "t\tab", "del\x7f", "(x)",
    ];

    impl Arbitrary for Spec {
        fn arbitrary(g: &mut Gen) -> Self {
            let dur = |g: &mut Gen, limit_ms: u64| -> Option<Duration> {
                let choices = [0, 1, limit_ms - 1, limit_ms, limit_ms + 1, 2 * limit_ms];
                let base_ms = *g.choose(&choices).unwrap_or(&0);
                let nanos = if bool::arbitrary(g) { 0 } else { 1 };
                bool::arbitrary(g)
                    .then(|| Duration::from_millis(base_ms) + Duration::from_nanos(nanos))
            };
            let text = |g: &mut Gen| g.choose(TEXT).copied().unwrap_or("").to_string();
            let n_headers = usize::arbitrary(g) % 3;
            Spec {
                cmd_id: *g.choose(&[0, 1, u32::MAX]).unwrap_or(&0),
                cgi: text(g),
                host: bool::arbitrary(g).then(|| text(g)),
                channel: *g
                    .choose(&[Channel::Short, Channel::Long, Channel::Both])
                    .unwrap_or(&Channel::Both),
                priority: *g.choose(&[0, 3, 5, 6, 255]).unwrap_or(&0),
                retry_count: bool::arbitrary(g)
                    .then(|| *g.choose(&[0, 29, 30, 31, 255]).unwrap_or(&0)),
                server_process_cost: dur(g, 120_000),
                total_timeout: dur(g, 600_000),
                send_only: bool::arbitrary(g),
                long_polling: dur(g, 1),
                headers: (0..n_headers).map(|_| (text(g), text(g))).collect(),
            }
        }

        /// Resets one field at a time to a plain valid value, so a failure
        /// shrinks to the fields that matter (and quickcheck prints it).
        fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
            let s = self.clone();
            let mut out = Vec::new();
            let mut push = |f: &dyn Fn(&mut Spec)| {
                let mut c = s.clone();
                f(&mut c);
                if format!("{c:?}") != format!("{s:?}") {
                    out.push(c);
                }
            };
            push(&|c| c.cmd_id = 1);
            push(&|c| c.cgi = "/cgi".into());
            push(&|c| c.host = None);
            push(&|c| c.channel = Channel::Both);
            push(&|c| c.priority = 3);
            push(&|c| c.retry_count = None);
            push(&|c| c.server_process_cost = None);
            push(&|c| c.total_timeout = None);
            push(&|c| c.send_only = false);
            push(&|c| c.long_polling = None);
            push(&|c| c.headers.clear());
            Box::new(out.into_iter())
        }
    }

    #[test]
    fn quickcheck_validate_accepts_iff_all_rules_hold() {
        fn law(s: Spec) -> bool {
            s.build().validate().is_ok() == all_limits_hold(&s)
        }
        QuickCheck::new()
            .tests(2_000)
            .quickcheck(law as fn(Spec) -> bool);
    }

    #[test]
    fn quickcheck_effective_channel_never_widens() {
        fn law(s: Spec) -> bool {
            let t = s.build();
            match t.effective_channel() {
                Ok(c) => {
                    (!c.allows_long() || (t.channel.allows_long() && t.cmd_id != 0))
                        && (!c.allows_short() || (t.channel.allows_short() && !t.cgi.is_empty()))
                        && (!t.send_only || c == Channel::Long)
                        && (t.long_polling.is_none() || c == Channel::Short)
                }
                Err(_) => true,
            }
        }
        QuickCheck::new()
            .tests(2_000)
            .quickcheck(law as fn(Spec) -> bool);
    }

    // Mostly small values so later rules get exercised, sometimes anything.
    fn arb_duration(limit_ms: u64) -> impl Strategy<Value = Option<Duration>> {
        proptest::option::of(prop_oneof![
            4 => (0..=limit_ms + 1).prop_map(Duration::from_millis),
            1 => any::<u64>().prop_map(Duration::from_nanos),
            1 => Just(Duration::MAX),
        ])
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => Just(String::new()),
            6 => "/[a-zA-Z0-9_-]{1,8}",
            1 => "[ -~]{0,6}",
            1 => any::<String>(),
        ]
    }

    fn arb_spec() -> impl Strategy<Value = Spec> {
        (
            any::<u32>().prop_map(|c| if c % 4 == 0 { 0 } else { c }),
            arb_text(),
            proptest::option::of(arb_text()),
            prop_oneof![
                Just(Channel::Short),
                Just(Channel::Long),
                Just(Channel::Both)
            ],
            prop_oneof![4 => 0u8..=6, 1 => any::<u8>()],
            proptest::option::of(prop_oneof![4 => 0u8..=31, 1 => any::<u8>()]),
            arb_duration(120_000),
            arb_duration(600_000),
            any::<bool>(),
            proptest::option::of(prop_oneof![
                Just(Duration::ZERO),
                (1u64..100_000).prop_map(Duration::from_millis)
            ]),
            proptest::collection::vec(
                (
                    prop_oneof![4 => "[A-Za-z][A-Za-z0-9-]{0,7}", 1 => arb_text()],
                    prop_oneof![4 => "[ -~]{0,8}", 1 => arb_text()],
                ),
                0..3,
            ),
        )
            .prop_map(
                |(
                    cmd_id,
                    cgi,
                    host,
                    channel,
                    priority,
                    retry_count,
                    server_process_cost,
                    total_timeout,
                    send_only,
                    long_polling,
                    headers,
                )| Spec {
                    cmd_id,
                    cgi,
                    host,
                    channel,
                    priority,
                    retry_count,
                    server_process_cost,
                    total_timeout,
                    send_only,
                    long_polling,
                    headers,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Any field values: validate never panics and reports exactly the
        /// first rule broken (or Ok when none is).
        #[test]
        fn validate_reports_first_broken_rule(s in arb_spec()) {
            let t = s.build();
            prop_assert_eq!(t.validate(), reference_validate(&s));
            // The channel verdict agrees with validate's tail.
            if let Err(e @ (TaskError::NoChannel { .. }
                | TaskError::SendOnlyWithLongPolling
                | TaskError::SendOnlyNeedsLongLink
                | TaskError::LongPollingNeedsShortLink)) = t.validate()
            {
                prop_assert_eq!(t.effective_channel(), Err(e));
            }
            if t.validate().is_ok() {
                prop_assert!(t.effective_channel().is_ok());
                prop_assert!(t.attempts() >= 1 && t.attempts() <= 31);
            }
        }
    }

    /// The generator reaches every rule (otherwise the property above would
    /// prove little).
    #[test]
    fn generator_reaches_every_rule() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
        );
        let strategy = arb_spec();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            let verdict = match tree.current().build().validate() {
                Ok(()) => "ok",
                Err(TaskError::PriorityOutOfRange { .. }) => "priority",
                Err(TaskError::TooManyRetries { .. }) => "retries",
                Err(TaskError::ServerProcessCostTooLarge { .. }) => "cost",
                Err(TaskError::TotalTimeoutTooLarge { .. }) => "total",
                Err(TaskError::ZeroLongPollingTimeout) => "lp-zero",
                Err(TaskError::InvalidRequest(RequestError::BadCgi(_))) => "cgi",
                Err(TaskError::InvalidRequest(RequestError::BadHost(_))) => "host",
                Err(TaskError::InvalidRequest(_)) => "header",
                Err(TaskError::NoChannel { .. }) => "no-channel",
                Err(TaskError::SendOnlyWithLongPolling) => "so-lp",
                Err(TaskError::SendOnlyNeedsLongLink) => "so-long",
                Err(TaskError::LongPollingNeedsShortLink) => "lp-short",
            };
            seen.insert(verdict);
        }
        assert_eq!(seen.len(), 13, "reached only {seen:?}");
    }
}
