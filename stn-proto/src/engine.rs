//! The engine: stn's top-level sans-IO machine.
//!
//! An [`Engine`] takes tasks ([`Engine::submit`]), decides how to carry them —
//! a short-link HTTP exchange ([`crate::short_link`]) or a frame on the long
//! link ([`crate::long_link`]) — and says what it needs as [`Output`]s, typed
//! by who consumes them: I/O for the adapter ([`Output::Io`]: open, write and
//! close connections; [`Output::Resolve`]: resolve host names) and
//! [`Event`]s for the app (each attempt's report, each task's end, pushes,
//! identify, verdict requests, link status). The driver feeds back what the sockets and
//! the resolver did ([`Engine::handle_input`]) and wakes the engine at
//! [`Engine::poll_timeout`] ([`Engine::handle_timeout`]).
//!
//! **The drain rule: after every call — a command (`submit`, `cancel`,
//! `network_*`, `set_*`, `identify_answer`, `judge`, `shutdown`), an input
//! (`handle_input`) or a timeout (`handle_timeout`) — drain
//! [`Engine::poll_output`] until it returns `None`, then read
//! [`Engine::poll_timeout`] and call `handle_timeout` no later than that.**
//!
//! What it does (docs/mars-stn.md; the section numbers are there):
//!
//! - **Queue** (§2.1): tasks wait in priority order (0 first), FIFO within a
//!   priority. Many short-link attempts run in parallel (one connection each);
//!   many tasks are pipelined on the long link at once.
//! - **Channel** (§1): `Short`, `Long`, or `Both` — the long link when it is
//!   connected (with [`ChannelStrategy::Fast`]: connected and idle), else the
//!   short link ([`ChannelChoice`]).
//! - **Deadlines and retries** (§2.2–2.4): each task has a deadline
//!   ([`crate::timeout::task_timeout`], measured from submission); a failed
//!   attempt is retried while retries remain, after
//!   [`Config::retry_interval`]; the deadline ends the task with
//!   [`TimeoutKind::Task`], never retried. Per-attempt timeouts come from
//!   [`AdaptiveTimeouts`].
//! - **Candidates** (§4.1): the debug address, else resolved hosts
//!   ([`Output::Resolve`] answered by [`Input::Resolved`]) and fixed IPs
//!   ordered by the [`EndpointHistory`] (bans applied), then backup IPs.
//!   Every connect outcome is recorded into the history.
//! - **Anti-avalanche** (§7): every attempt passes the frequency and flow
//!   limits; a rejection ends the task with [`Error::Rejected`].
//! - **Network changes** (§8): bans and dynamic timeouts reset, the long link
//!   reconnects at once, running attempts are redone, parked tasks (Mars's
//!   zombies, [`ZombiePolicy`]) replayed.
//! - **Response verdicts** (§6, Mars `Buf2Resp`): a task with
//!   [`Task::judge`] is held after its response ([`Event::Judge`]) until the
//!   app decodes it and answers [`Engine::judge`] with a [`Verdict`]: accept,
//!   retry (the endpoint counts as failed; the long link is dropped), end
//!   with [`Error::Decode`], session timeout (the task's host and user
//!   unauthenticated until [`Engine::set_authed`] or
//!   [`Engine::set_host_authed`], one free retry for the task, running
//!   need-auth tasks redone: on the long link those of the same
//!   [`Task::user_id`], on the short link all, as Mars does) or retry every
//!   running task. Differences from Mars: the
//!   batch verdicts touch only tasks with an attempt running or a response
//!   awaiting a verdict (Mars's short-link manager also charges a retry to
//!   queued ones); Mars's long link redoes every task on the link once one
//!   of the user's tasks is there, stn only that user's need-auth tasks
//!   (the link drop then interrupts the others); the other tasks in flight on a dropped long link
//!   are redone as interrupted, not charged a retry; Mars's silent end
//!   (-16) is [`Verdict::End`].
//! - **Runtime controls**: [`Engine::redo_tasks`], [`Engine::clear_tasks`],
//!   [`Engine::make_sure_long_link_connected`] and
//!   [`Engine::set_long_link_enabled`] (Mars `DisableLongLink`, with a way
//!   back).
//! - **Every task ends exactly once** with [`Event::TaskFinished`]: on
//!   success, failure, cancel, deadline or [`Engine::shutdown`].
//!
//! # Profiles
//!
//! [`Config::for_profile`] gives `Mars2017` (the constants of the 2017
//! benchmark: 4 s racing stagger, v1.3 ban and reconnect tables), `Mars`
//! (today's Mars) and `Stn` (the default). The engine-level differences of
//! `Stn` from Mars, each documented on [`Config::for_profile`] with its
//! reason: faster retries (0 s after a timeout, 250 ms otherwise, Mars 1 s);
//! a network change does not use up a retry; `Both` tasks pick their link at
//! every attempt; without network tasks wait instead of failing or burning
//! attempts; parked tasks (Mars's rule) replayed on any sign of connectivity
//! (or after 1 s idle); resolve answers reused for 30 s (until an attempt fails to connect);
//! lost SYNs abandoned and replaced for the whole race
//! ([`STN_MAX_ABANDONS`]); an RTT hint that backs off after failed races; at
//! most 64 short-link attempts in flight; a short-link request that gets
//! no answer for about 4 RTTs hedged on a fresh connection ([`HedgePolicy`]);
//! on the long link, Mars's timeouts,
//! noop timeout and reconnect tables (measured better there under loss), and
//! one more attempt, using no retry, for a task with no retry left whose
//! first-packet or read-write timer dropped the link (if it may be hedged:
//! [`Task::hedge`]); [`Engine::identify_verdict`]
//! rejecting a connection drops it. The building blocks add their own
//! (adaptive racing stagger, adaptive timeouts, gentler bans, reconnect
//! back-off, RTT-scaled heartbeat timeout); see their modules.
//! `stn-proto/tests/profiles.rs` compares the profiles on a lossy and an
//! outage model.
//!
//! Time never goes back: `now` is clamped to the latest value seen
//! ([`MonotonicClock`]). Every random choice comes from [`Config::seed`]. No
//! input makes it panic, and memory is bounded: [`Config::max_queued_tasks`]
//! tasks at most (more → [`SubmitError::QueueFull`]), the codecs' caps on
//! buffered bytes, a bounded resolver table.
//!
//! # Example: the drain rule against a fake server
//!
//! ```
//! use std::collections::{BTreeMap, VecDeque};
//!
//! use bytes::Bytes;
//! use stn_proto::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
//! use stn_proto::{Config, Engine, Event, Input, Output};
//! use stn_proto::{ConnEvent, ConnId, IoAction};
//! use stn_proto::IdentifyDecision;
//! use stn_proto::{Channel, Task};
//! use stn_proto::Instant;
//! use stn_proto::Profile;
//!
//! /// An in-memory server: every connect succeeds; an HTTP POST gets a 200;
//! /// every long-link frame (heartbeat noops included) is answered in kind.
//! #[derive(Default)]
//! struct FakeServer {
//!     long_conns: BTreeMap<ConnId, FrameDecoder>,
//! }
//!
//! impl FakeServer {
//!     fn serve(&mut self, io: IoAction, replies: &mut VecDeque<Input>) {
//!         match io {
//!             IoAction::Connect { conn, addr } => {
//!                 if addr.port() == 8081 {
//!                     self.long_conns.insert(conn, FrameDecoder::new(CodecConfig::default()));
//!                 }
//!                 replies.push_back(Input::Conn { conn, event: ConnEvent::Connected });
//!             }
//!             IoAction::Send { conn, data } => {
//!                 let reply = match self.long_conns.get_mut(&conn) {
//!                     Some(decoder) => {
//!                         let mut buf = &data[..];
//!                         let mut out = Vec::new();
//!                         while let Ok(Some(frame)) = decoder.decode(&mut buf) {
//!                             let answer = Frame::new(frame.cmd_id, frame.seq, "pong");
//!                             out.extend_from_slice(&encode_to_bytes(&answer, 0).unwrap());
//!                         }
//!                         Bytes::from(out)
//!                     }
//!                     None => Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
//!                 };
//!                 replies.push_back(Input::Conn { conn, event: ConnEvent::Received(reply) });
//!             }
//!             _ => {}
//!         }
//!     }
//! }
//!
//! let ip = "192.0.2.7".parse().unwrap();
//! let config = Config::for_profile(Profile::Stn)
//!     .short_link_ips([ip], 8080)
//!     .long_link_ips([ip], 8081);
//! let mut now = Instant::from_secs(1);
//! let mut engine = Engine::new(now, config);
//! let mut server = FakeServer::default();
//! let mut replies = VecDeque::new();
//! let mut finished = BTreeMap::new();
//!
//! let short = engine.submit(now, Task::new(0, "/hello", "hi").channel(Channel::Short)).unwrap();
//! let long = engine.submit(now, Task::new(7, "", "hi").channel(Channel::Long)).unwrap();
//!
//! while finished.len() < 2 {
//!     // The drain rule: after every call, drain the actions...
//!     let mut ask_identify = false;
//!     while let Some(output) = engine.poll_output() {
//!         match output {
//!             Output::Event(Event::TaskFinished { id, outcome, .. }) => {
//!                 finished.insert(id, outcome);
//!             }
//!             Output::Event(Event::AskIdentify) => ask_identify = true,
//!             Output::Io(io) => server.serve(io, &mut replies),
//!             _ => {}
//!         }
//!     }
//!     // ...then make the next call: an answer to the engine's question, what
//!     // the "sockets" did, or — nothing else to do — sleep until poll_timeout.
//!     if ask_identify {
//!         engine.identify_answer(now, IdentifyDecision::Never);
//!     } else if let Some(reply) = replies.pop_front() {
//!         engine.handle_input(now, reply);
//!     } else {
//!         now = engine.poll_timeout().expect("tasks are pending, so a timer is armed");
//!         engine.handle_timeout(now);
//!     }
//! }
//! assert_eq!(finished[&short].as_ref().unwrap().body, &b"hello"[..]);
//! assert_eq!(finished[&long].as_ref().unwrap().body, &b"pong"[..]);
//! assert!(engine.poll_timeout().map_or(true, |t| t >= now));
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::ban::EndpointHistory;
use crate::error::{Error, LimitKind as ErrorLimit, LocalError, Response, TimeoutKind};
use crate::io::{ConnEvent, ConnId, ConnIds, IoAction};
use crate::limit::{payload_digest, AntiAvalanche, CheckInput, LimitKind};
use crate::long_link::{DisconnectReason, IdentifyDecision, LongLink};
use crate::monitor::Activity;
use crate::net::{IpAddr, NetworkKind, SocketAddr};
use crate::rng::Rng;
use crate::short_link::ShortLinkExchange;
use crate::task::{Channel, ChannelStrategy, Task, TaskId, TaskTable};
use crate::time::{Duration, Instant, MonotonicClock};
use crate::timeout::{
    task_timeout, AdaptiveTimeouts, AttemptInput, RttConfig, RttEstimator, TaskTimeoutInput,
    TimeoutKind as AttemptTimeoutKind,
};

mod auth;
mod body;
mod candidates;
mod conns;
// The invariant checker of the proptest and the `engine_ops` fuzz target.
#[cfg(any(test, fuzzing))]
pub(crate) mod check;
mod config;
mod controls;
mod hedge;
mod judge;
mod long;
mod pool;
mod queue;
mod short;
mod timer_set;
mod types;
mod verdicts;
mod zombies;

#[cfg(test)]
mod tests;

pub use config::{
    ChannelChoice, Config, HttpRetry, LongLinkEndpoints, NoNetworkPolicy, ShortLinkEndpoints,
    ZombiePolicy, STN_MAX_ABANDONS,
};
pub use hedge::HedgePolicy;
pub use pool::PoolConfig;
pub use types::{Event, Input, JudgeRequest, LinkStatus, Output, Report, SubmitError, Verdict};

use auth::{Auth, AuthKey};
use conns::{ConnTable, Owner};
use queue::{Active, Class, Queue};
use timer_set::TimerSet;
use zombies::Zombies;

/// The OS's initial SYN retransmission timeout (Linux, xnu: 1 s): connect
/// times at or above it are not RTT samples (Karn's rule).
pub(crate) const KARN_SYN_RTO: Duration = Duration::from_secs(1);

/// Most host names whose resolve answers are remembered.
const MAX_DNS_ENTRIES: usize = 64;

/// The long-link machine for `config` (which has a long link).
fn long_link_machine(config: &Config, now: Instant, foreground: bool) -> LongLink {
    let mut cfg = config.long.clone();
    cfg.foreground = foreground;
    cfg.monitor.seed = Rng::derive(config.seed, 2).next_u64();
    LongLink::new(now, cfg)
}

/// Where a task stands. Each stage holds what only it has; an attempt is
/// started by [`Engine::begin_attempt`] and ended by [`Engine::end_attempt`],
/// nowhere else.
#[derive(Clone, Debug)]
enum Stage {
    /// In the queue, waiting for its turn (or its retry time, the network,
    /// authentication, the long link, a resolve answer); the queue holds its
    /// order and not-before time.
    Queued,
    /// An attempt is running.
    Running(Attempt),
    /// A response arrived and waits for the app's [`Verdict`]
    /// ([`Task::judge`]); no connection is held for it.
    Judging(Box<Pending>),
    /// Failed and parked until a sign of connectivity (Mars zombie).
    Parked,
}

/// The link an attempt runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Short,
    Long,
}

impl Link {
    fn channel(self) -> Channel {
        match self {
            Link::Short => Channel::Short,
            Link::Long => Channel::Long,
        }
    }
}

/// A running attempt.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    link: Link,
    started: Instant,
}

/// A response held until the app judges it.
#[derive(Clone, Debug)]
struct Pending {
    response: Response,
    /// The attempt's report, emitted once the verdict is known.
    report: Report,
}

#[derive(Clone, Debug)]
struct Entry {
    task: Task,
    /// Queue order key: (priority, submission counter).
    order: (u8, u64),
    /// Which link it may take: from the channel after the task's own rules
    /// ([`Task::effective_channel`]) and Mars's choice at submit
    /// ([`ChannelChoice::AtSubmit`]).
    class: Class,
    deadline: Instant,
    /// End of the zombie budget, if the task may be parked.
    budget_end: Option<Instant>,
    retries_left: u8,
    attempts: u32,
    stage: Stage,
    last_error: Option<Error>,
    /// The once-per-task free retry after a session timeout is used.
    session_retry_used: bool,
    /// The once-per-task long-link rescue is used
    /// ([`Engine::long_link_rescue`]).
    rescue_used: bool,
    /// The attempt [`Task::body`] was last built for by its
    /// [`Task::body_source`] (0: never).
    body_attempt: u32,
    /// What it waits for, if it needs auth ([`Task::need_authed`]).
    gate: Option<Arc<AuthKey>>,
}

impl Entry {
    /// The running attempt on `link`, if that is where the task stands.
    fn running_on(&self, link: Link) -> Option<Attempt> {
        match self.stage {
            Stage::Running(a) if a.link == link => Some(a),
            _ => None,
        }
    }

    /// The link of the attempt in flight or awaiting a verdict.
    fn busy_channel(&self) -> Option<Channel> {
        match &self.stage {
            Stage::Running(a) => Some(a.link.channel()),
            Stage::Judging(p) => Some(p.report.channel),
            Stage::Queued | Stage::Parked => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct HostDns {
    addrs: Vec<IpAddr>,
    answered_at: Option<Instant>,
    pending_until: Option<Instant>,
}

/// What [`Engine::stop_attempt`] stopped.
#[derive(Debug)]
enum Stopped {
    /// A running attempt.
    Running(Attempt),
    /// A response held for the app's verdict.
    Judged(Box<Pending>),
}

/// How [`Engine::retry_or_end`] treats a failed attempt.
#[derive(Clone, Copy, Debug)]
struct Retry {
    /// The link the attempt used (sets the default delay).
    channel: Channel,
    /// Whether the error allows a retry at all.
    retryable: bool,
    /// The retry does not use up one of the task's retries.
    free: bool,
    /// Overrides the usual delay before the retry.
    delay: Option<Duration>,
}

/// The top-level sans-IO machine. See the crate docs for what it
/// does and the drain rule.
#[derive(Debug)]
pub struct Engine {
    config: Config,
    clock: MonotonicClock,
    rng: Rng,
    ids: ConnIds,
    next_id: TaskId,
    counter: u64,
    tasks: TaskTable<Entry>,
    /// Task deadlines, of every task not parked.
    deadlines: TimerSet<TaskId>,
    queue: Queue,
    zombies: Zombies,
    /// Running short-link exchanges (boxed: they are large, and a map
    /// moves its values as it grows).
    short: TaskTable<ShortLinkExchange>,
    /// The short exchanges' own timers.
    short_timers: TimerSet<TaskId>,
    /// Hedging state of running short-link attempts ([`HedgePolicy`]).
    hedges: hedge::Hedges,
    /// Idle keep-alive connections ([`PoolConfig`]).
    pool: BTreeMap<ConnId, pool::Idle>,
    /// The pool is off until then (after a stale reuse).
    pool_off_until: Instant,
    /// Short-link race losers kept open until their verdict is due.
    verdicts: verdicts::Probes,
    conns: ConnTable,
    history: EndpointHistory,
    timeouts: AdaptiveTimeouts,
    /// TCP connect times only (the racing stagger's RTT hint; the timeout
    /// machine's RTT also learns server latency).
    connect_rtt: RttEstimator,
    /// Races failed in a row (reset by a successful connect); from the second
    /// one on, the RTT hint is scaled up (see `rtt_hint`).
    failed_races: u32,
    limits: AntiAvalanche,
    activity: Activity,
    dns: BTreeMap<String, HostDns>,
    long: Option<LongLink>,
    /// The long link's endpoint since its last connect (kept after a
    /// disconnect: the failures of its tasks are reported after it).
    long_endpoint: Option<SocketAddr>,
    /// The long link asked for a connect that waits for resolve answers.
    long_wants_connect: bool,
    network: NetworkKind,
    /// The last network that was not `None`.
    last_network: NetworkKind,
    auth: Auth,
    /// The app disabled the long link ([`Engine::set_long_link_enabled`]):
    /// `long` is `None` though the config has one.
    long_disabled: bool,
    last_task_start: Instant,
    shut_down: bool,
    actions: VecDeque<Output>,
}

impl Engine {
    /// A fresh engine at `now`. The long link (if configured) starts
    /// connecting on the first [`handle_timeout`](Self::handle_timeout).
    pub fn new(now: Instant, config: Config) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        let long = config
            .long_link
            .as_ref()
            .map(|_| long_link_machine(&config, now, config.foreground));
        let network = config.network;
        let timeouts_net = if network == NetworkKind::None {
            NetworkKind::Wifi
        } else {
            network
        };
        Engine {
            rng: Rng::derive(config.seed, 1),
            ids: ConnIds::new(),
            next_id: TaskId::FIRST,
            counter: 0,
            tasks: TaskTable::default(),
            deadlines: TimerSet::default(),
            queue: Queue::default(),
            zombies: Zombies::default(),
            short: TaskTable::default(),
            short_timers: TimerSet::default(),
            hedges: hedge::Hedges::default(),
            pool: BTreeMap::new(),
            pool_off_until: now,
            verdicts: verdicts::Probes::default(),
            conns: ConnTable::default(),
            history: EndpointHistory::new(config.ban.clone()),
            timeouts: AdaptiveTimeouts::new(config.timeouts, timeouts_net),
            connect_rtt: RttEstimator::new(RttConfig::STN),
            failed_races: 0,
            limits: AntiAvalanche::new(now, config.limits.clone(), config.foreground),
            activity: Activity::new(now, config.long.monitor.activity.clone(), config.foreground),
            dns: BTreeMap::new(),
            long,
            long_endpoint: None,
            long_wants_connect: false,
            network,
            last_network: timeouts_net,
            auth: Auth::default(),
            long_disabled: false,
            last_task_start: now,
            shut_down: false,
            actions: VecDeque::new(),
            clock,
            config,
        }
    }

    /// A new long-link machine, as [`new`](Self::new) makes (the app
    /// enabled the long link again).
    fn fresh_long_link(&self, now: Instant) -> LongLink {
        long_link_machine(&self.config, now, self.activity.is_foreground())
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Tasks held (queued, running or parked).
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the task is still held (it has not finished).
    pub fn has_task(&self, id: TaskId) -> bool {
        self.tasks.contains_key(&id)
    }

    /// Short-link attempts running.
    pub fn short_in_flight(&self) -> usize {
        self.short.len()
    }

    /// Tasks awaiting a response on the long link.
    pub fn long_in_flight(&self) -> usize {
        self.long.as_ref().map_or(0, LongLink::in_flight)
    }

    /// Whether the long link is connected.
    pub fn long_link_connected(&self) -> bool {
        self.long.as_ref().is_some_and(LongLink::is_connected)
    }

    /// Connections the engine considers open (asked for, not yet closed).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// The network the engine believes it is on.
    pub fn network(&self) -> NetworkKind {
        self.network
    }

    /// The endpoint history (bans and ordering).
    pub fn endpoint_history(&self) -> &EndpointHistory {
        &self.history
    }

    /// The endpoint history, to import saved history
    /// ([`EndpointHistory::import`]) or switch its network label.
    pub fn endpoint_history_mut(&mut self) -> &mut EndpointHistory {
        &mut self.history
    }

    /// Submits a task. It gets an id and ends exactly once with
    /// [`Event::TaskFinished`].
    ///
    /// # Errors
    ///
    /// [`SubmitError`] if the task is invalid, needs a long link that is not
    /// configured, the queue is full, or the engine is shut down. A refused
    /// task gets no id and no `TaskFinished`.
    pub fn submit(&mut self, now: Instant, task: Task) -> Result<TaskId, SubmitError> {
        let now = self.clock.observe(now);
        if self.shut_down {
            return Err(SubmitError::ShutDown);
        }
        task.validate()?;
        let mut channel = task.effective_channel()?;
        // A disabled long link is still configured: its tasks are accepted
        // and dispatch ends the long-only ones with the cause.
        if self.long.is_none() && !self.long_disabled {
            channel = match channel {
                Channel::Long => return Err(SubmitError::NoLongLink),
                Channel::Both => Channel::Short,
                Channel::Short => Channel::Short,
            };
        }
        if self.tasks.len() >= self.config.max_queued_tasks {
            return Err(SubmitError::QueueFull);
        }
        let id = self.allocate_id();
        let timeout = task_timeout(
            &self.config.timeouts,
            &TaskTimeoutInput {
                server_cost: task.server_process_cost,
                retry_count: u32::from(task.retries()),
                total_timeout: task.total_timeout,
                long_polling: task.long_polling,
            },
        );
        let deadline = now + timeout;
        let total_end = task.total_timeout.filter(|t| !t.is_zero()).map(|t| now + t);
        let budget_end = match self.config.zombies {
            ZombiePolicy::Off => None,
            ZombiePolicy::TotalTimeoutOnly => total_end,
            ZombiePolicy::UntilDeadline => total_end.or(Some(deadline)),
        }
        .filter(|_| !task.network_status_sensitive);
        let frozen = match self.config.channel_choice {
            ChannelChoice::AtSubmit => Some(channel.pick_with(
                task.channel_strategy,
                self.long_link_connected(),
                self.long_in_flight(),
            )),
            ChannelChoice::PerAttempt => None,
        };
        self.counter += 1;
        let order = (task.priority, self.counter);
        let sensitive_fail = task.network_status_sensitive
            && self.config.no_network == NoNetworkPolicy::FailSensitive
            && self.network == NetworkKind::None
            && !self.long_link_connected();
        let class = Class::of(channel, frozen);
        let gate = task
            .need_authed
            .then(|| Arc::new(self.auth_key(&task, class)));
        let entry = Entry {
            retries_left: task.retries(),
            task,
            order,
            class,
            deadline,
            budget_end,
            attempts: 0,
            stage: Stage::Queued,
            last_error: None,
            session_retry_used: false,
            rescue_used: false,
            body_attempt: 0,
            gate: gate.clone(),
        };
        self.tasks.insert(id, entry);
        self.deadlines.set(id, Some(deadline));
        if sensitive_fail {
            // Mars `kEctLocalNoNet`: refused at start, never parked.
            self.finish(id, Err(LocalError::NoNetwork.into()));
        } else {
            self.queue.insert(id, order, class, gate, now, now);
            // Mars `StartTask`: a task that may use the long link, submitted
            // in the foreground while the link is down, asks the monitor for
            // it (`MakeSureConnected`), even if it then goes short.
            if channel.allows_long() && self.activity.is_foreground() {
                if let Some(long) = self.long.as_mut().filter(|l| !l.is_connected()) {
                    long.task_needs_link(now);
                }
            }
        }
        self.run(now);
        Ok(id)
    }

    /// Cancels a task: it ends with [`Error::Cancelled`] (exactly once; an
    /// unknown or finished id is ignored). Its connections are closed.
    pub fn cancel(&mut self, now: Instant, id: TaskId) {
        let now = self.clock.observe(now);
        if self.tasks.contains_key(&id) {
            self.stop_with_report(now, id, Error::Cancelled);
            self.finish(id, Err(Error::Cancelled));
        }
        self.run(now);
    }

    /// The network changed (Mars `OnNetworkChange`, §8): bans and dynamic
    /// timeouts reset, the long link reconnects at once, running attempts are
    /// redone and parked tasks replayed. `NetworkKind::None` is a loss.
    pub fn network_changed(&mut self, now: Instant, kind: NetworkKind) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        self.network = kind;
        if kind != NetworkKind::None {
            self.last_network = kind;
        }
        self.history.reset(now);
        self.timeouts.reset(self.last_network);
        self.connect_rtt.reset();
        self.failed_races = 0;
        self.dns.clear();
        self.long_wants_connect = false;
        // Mars clears the socket pool on a network change.
        self.pool_clear();
        // The history was just reset: a probe's verdict would be about the
        // old network.
        self.verdict_clear();
        self.redo_short_attempts(now);
        if let Some(long) = self.long.as_mut() {
            long.on_network_change(now);
        }
        self.pump_long(now);
        if kind != NetworkKind::None {
            self.replay_zombies(now);
        }
        self.run(now);
    }

    /// The network went away. Mars treats this as a network change; stn keeps
    /// running attempts (a short outage may not break them) and holds new
    /// ones until the network is back ([`NoNetworkPolicy::WaitAll`]).
    pub fn network_lost(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.config.no_network == NoNetworkPolicy::WaitAll {
            self.network = NetworkKind::None;
            self.run(now);
        } else {
            self.network_changed(now, NetworkKind::None);
        }
    }

    /// The network is available. If it is a different network than before
    /// (or under the Mars profiles) this is a [network change](Self::network_changed);
    /// otherwise (stn, the same network back after a loss) waiting tasks
    /// and parked ones go at once and the long link reconnects now.
    pub fn network_available(&mut self, now: Instant, kind: NetworkKind) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        let same = kind == self.last_network && kind != NetworkKind::None;
        if self.config.no_network != NoNetworkPolicy::WaitAll || !same {
            self.network_changed(now, kind);
            return;
        }
        let was_down = self.network == NetworkKind::None;
        self.network = kind;
        if was_down {
            self.queue.release_waiting();
            if let Some(long) = self.long.as_mut() {
                if !long.is_connected() {
                    long.on_network_change(now);
                }
            }
            self.pump_long(now);
            self.replay_zombies(now);
        }
        self.run(now);
    }

    /// The app went to the foreground or the background (reconnect schedule,
    /// flow-limit drain rate).
    pub fn set_foreground(&mut self, now: Instant, foreground: bool) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        self.activity.set_foreground(now, foreground);
        self.limits.set_active(now, self.activity.is_active(now));
        if let Some(long) = self.long.as_mut() {
            long.set_foreground(now, foreground);
        }
        self.pump_long(now);
        self.run(now);
    }

    /// Whether the app's session is authenticated, on every host and for
    /// every user (the simple form of Mars `MakesureAuthed`): tasks with
    /// `need_authed` wait until it is. Forgets every answer given by
    /// [`set_host_authed`](Self::set_host_authed) and every host a session
    /// timeout de-authenticated. Starts `false`.
    pub fn set_authed(&mut self, now: Instant, authed: bool) {
        let now = self.clock.observe(now);
        self.auth.set_all(authed);
        self.run(now);
    }

    /// Whether `user_id` is authenticated on `host` (Mars
    /// `MakesureAuthed(host, user_id)`, answered ahead of time): a need-auth
    /// task waits only for its own host and
    /// [`user_id`](crate::task::Task::user_id). Its host is the one its
    /// link goes to: the task's own [`host`](crate::task::Task::host), else
    /// the first configured short-link host, or for a task that can only
    /// use the long link the first long-link host; `""` when that link has
    /// fixed IPs only. A `Both` task is keyed by its short-link host (give
    /// both links the same host name, as Mars deployments do, and it does
    /// not matter). Overrides [`set_authed`](Self::set_authed) for that key
    /// until the next `set_authed`. A [`Verdict::SessionTimeout`] on a task
    /// revokes its key only.
    ///
    /// Returns `false` (and changes nothing) if 1024 keys already have an
    /// answer different from `set_authed`'s.
    ///
    /// ```
    /// use stn_proto::{Config, Engine, Instant, Task};
    ///
    /// let mut engine = Engine::new(Instant::ZERO, Config::default());
    /// // Only user 7's session on api.example.com is up.
    /// assert!(engine.set_host_authed(Instant::ZERO, "api.example.com", Some("7"), true));
    /// let task = Task::new(0, "/cgi", "x")
    ///     .host("api.example.com")
    ///     .user_id("7")
    ///     .need_authed(true);
    /// engine.submit(Instant::ZERO, task).unwrap();
    /// // The task may start: the engine asks to resolve its host.
    /// assert!(std::iter::from_fn(|| engine.poll_output())
    ///     .any(|o| matches!(o, stn_proto::Output::Resolve { .. })));
    /// ```
    pub fn set_host_authed(
        &mut self,
        now: Instant,
        host: &str,
        user_id: Option<&str>,
        authed: bool,
    ) -> bool {
        let now = self.clock.observe(now);
        let key = AuthKey {
            host: host.to_owned(),
            user: user_id.map(str::to_owned),
        };
        let done = self.auth.set(key, authed);
        self.run(now);
        done
    }

    /// What a need-auth task of `class` waits for (see
    /// [`set_host_authed`](Self::set_host_authed)).
    fn auth_key(&self, task: &Task, class: Class) -> AuthKey {
        let host = match (class, &task.host) {
            (Class::LongOnly, _) => self
                .config
                .long_link
                .as_ref()
                .and_then(|l| l.hosts.first().cloned()),
            (_, Some(h)) => Some(h.clone()),
            _ => {
                let ep = &self.config.short_link;
                ep.hosts
                    .first()
                    .or(ep.host_ports.first().map(|(h, _)| h))
                    .cloned()
            }
        };
        AuthKey {
            host: host.unwrap_or_default(),
            user: task.user_id.clone(),
        }
    }

    /// The app's answer to [`Event::AskIdentify`].
    pub fn identify_answer(&mut self, now: Instant, decision: IdentifyDecision) {
        let now = self.clock.observe(now);
        if let Some(long) = self.long.as_mut() {
            long.identify_answer(now, decision);
        }
        self.pump_long(now);
        self.run(now);
    }

    /// The app's verdict on an [`Event::IdentifyResponse`] (Mars
    /// `OnLonglinkIdentifyResponse`). A rejection takes the long link down
    /// (its monitor reconnects, and identify is asked again on the new
    /// connection); Mars keeps the connection and asks again at the next
    /// noop slot, 3.5 min later, while tasks keep flowing on a connection the
    /// server did not accept.
    pub fn identify_verdict(&mut self, now: Instant, accepted: bool) {
        let now = self.clock.observe(now);
        if self.shut_down || accepted {
            return;
        }
        if let Some(long) = self.long.as_mut() {
            if long.is_connected() {
                long.disconnect(now, DisconnectReason::Reset);
            }
        }
        self.pump_long(now);
        self.run(now);
    }

    /// Feeds a connection event or a resolve answer.
    pub fn handle_input(&mut self, now: Instant, input: Input) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        match input {
            Input::Conn { conn, event } => self.conn_event(now, conn, event),
            Input::Resolved { host, addrs } => self.resolved(now, host, addrs),
            Input::ResolveFailed { host } => self.resolved(now, host, Vec::new()),
        }
        self.run(now);
    }

    /// Processes every timer due at `now`. Idempotent; safe to call early.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.run(now);
    }

    /// Ends every task with [`Error::Shutdown`], closes every connection and
    /// stops the long link for good. Later submits are refused.
    pub fn shutdown(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        self.shut_down = true;
        let ids: Vec<TaskId> = self.tasks.keys().collect();
        for id in &ids {
            self.stop_with_report(now, *id, Error::Shutdown);
        }
        if let Some(long) = self.long.as_mut() {
            long.disconnect(now, DisconnectReason::Shutdown);
        }
        self.pump_long(now);
        let ids: Vec<TaskId> = self.tasks.keys().collect();
        for id in ids {
            self.finish(id, Err(Error::Shutdown));
        }
        self.pool.clear();
        self.verdicts.clear();
        for conn in self.conns.drain() {
            self.actions.push_back(Output::Io(IoAction::Close { conn }));
        }
    }

    /// The next output, if any. Drain until `None` after every call.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.actions.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next. After a
    /// drain it is never earlier than the latest `now` given.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.shut_down {
            return None;
        }
        let now = self.clock.latest();
        let mut t = Instant::MAX;
        for h in self.dns.values() {
            if let Some(p) = h.pending_until {
                t = t.min(p);
            }
        }
        let idle = self.config.zombie_idle_restart;
        let timers = [
            self.deadlines.first(),
            self.queue.next_ready_at(),
            self.zombies.next_deadline(self.last_task_start, idle),
            self.short_timers.first(),
            self.pool_timeout(),
            self.verdict_timeout(),
            self.hedges.next_timer(),
            self.next_hedge_start(),
            self.long.as_ref().and_then(LongLink::poll_timeout),
        ];
        for x in timers.into_iter().flatten() {
            t = t.min(x);
        }
        (t != Instant::MAX).then_some(t.max(now))
    }

    // ---- bookkeeping ----

    fn allocate_id(&mut self) -> TaskId {
        let mut id = self.next_id;
        while self.tasks.contains_key(&id) || id.is_reserved() {
            id = id.next();
        }
        self.next_id = id.next();
        id
    }

    /// Ends a task: the one place a `TaskFinished` is emitted.
    fn finish(&mut self, id: TaskId, outcome: Result<Response, Error>) {
        let Some(entry) = self.tasks.remove(&id) else {
            return;
        };
        self.queue.remove(id);
        self.deadlines.set(id, None);
        self.zombies.unpark(id);
        self.emit(Event::TaskFinished {
            id,
            outcome,
            attempts: entry.attempts,
            user_tag: entry.task.user_tag,
        });
    }

    fn emit(&mut self, event: Event) {
        self.actions.push_back(Output::Event(event));
    }

    fn emit_report(&mut self, report: Report) {
        self.emit(Event::Report(Box::new(report)));
    }

    fn emit_link(&mut self, status: LinkStatus) {
        self.emit(Event::LongLink(status));
    }

    /// Forwards a sub-machine's socket operation, keeping the table of live
    /// connections: nothing is ever said about a connection already closed.
    fn emit_io(&mut self, owner: Owner, io: IoAction) {
        match io {
            IoAction::Connect { conn, addr } => {
                if self.shut_down {
                    return;
                }
                self.conns.insert(conn, owner);
                self.actions
                    .push_back(Output::Io(IoAction::Connect { conn, addr }));
            }
            IoAction::Send { conn, data } => {
                if self.conns.owner(conn) == Some(owner) {
                    self.actions
                        .push_back(Output::Io(IoAction::Send { conn, data }));
                }
            }
            IoAction::Close { conn } => {
                if self.conns.owner(conn) == Some(owner) {
                    self.conns.remove(conn);
                    self.actions.push_back(Output::Io(IoAction::Close { conn }));
                }
            }
        }
    }

    /// Stops the running attempt of `id` (if any) and reports it as ended by `error`.
    fn stop_with_report(&mut self, now: Instant, id: TaskId, error: Error) {
        let stopped = self.stop_attempt(now, id);
        let report = match stopped {
            Some(Stopped::Running(attempt)) => self.bare_report(id, attempt, now, &error),
            // The attempt's own report, now with how it ended.
            Some(Stopped::Judged(mut p)) => {
                p.report.ended = now;
                p.report.error = Some(error);
                Some(p.report)
            }
            None => None,
        };
        if let Some(r) = report {
            self.emit_report(r);
        }
    }

    /// Stops whatever attempt `id` has running (or the response it holds
    /// for a verdict), without deciding its fate; the task is left queued
    /// (out of the queue) unless it is parked.
    fn stop_attempt(&mut self, now: Instant, id: TaskId) -> Option<Stopped> {
        let stage = self.tasks.get(&id).map(|e| &e.stage)?;
        let stopped = match stage {
            Stage::Running(_) => self.end_attempt(id).map(Stopped::Running),
            Stage::Judging(_) => self.take_judged(id).map(Stopped::Judged),
            Stage::Queued | Stage::Parked => None,
        };
        if let Some(Stopped::Running(attempt)) = stopped {
            match attempt.link {
                Link::Short => {
                    self.end_hedging(now, id);
                    if let Some(ex) = self.short.remove(&id) {
                        self.cancel_exchange(now, id, *ex);
                    }
                    // Safety net: nothing of this attempt stays open.
                    self.close_short_conns(id);
                }
                Link::Long => {
                    if let Some(long) = self.long.as_mut() {
                        long.cancel_task(now, id);
                    }
                }
            }
        }
        self.queue.remove(id);
        self.refresh_attempt_timers(id);
        stopped
    }

    /// Starts an attempt of `id` on `link`: the one place an attempt begins.
    fn begin_attempt(&mut self, now: Instant, id: TaskId, link: Link) {
        if let Some(e) = self.tasks.get_mut(&id) {
            e.stage = Stage::Running(Attempt { link, started: now });
            e.attempts += 1;
            self.queue.remove(id);
        }
        self.last_task_start = now;
    }

    /// Ends the running attempt of `id`, if it has one: the one place an
    /// attempt ends. The task is left queued, out of the queue, for the
    /// caller to decide its fate.
    fn end_attempt(&mut self, id: TaskId) -> Option<Attempt> {
        let e = self.tasks.get_mut(&id)?;
        let Stage::Running(attempt) = e.stage else {
            return None;
        };
        e.stage = Stage::Queued;
        Some(attempt)
    }

    /// An attempt failed (and has ended): report it, then retry if the error
    /// and the budget allow, else end.
    fn attempt_failed(
        &mut self,
        now: Instant,
        id: TaskId,
        error: Error,
        channel: Channel,
        report: Option<Report>,
    ) {
        if !self.tasks.contains_key(&id) {
            return;
        }
        if let Some(r) = report {
            self.emit_report(r);
        }
        let interrupted = matches!(error, Error::Local(LocalError::Interrupted));
        let free = interrupted && self.config.free_retry_on_network_change;
        let retryable = match error {
            Error::Http { status } => self.config.http_retry.retries(status),
            _ => error.is_retryable(),
        };
        let rescue = retryable && !free && self.long_link_rescue(now, id, &error, channel);
        self.retry_or_end(
            now,
            id,
            error,
            Retry {
                channel,
                retryable,
                free: free || rescue,
                delay: None,
            },
        );
    }

    /// Whether the failed attempt of `id` is rescued: one more attempt that
    /// uses no retry, under [`Config::long_link_rescue`]. Only a long-link
    /// first-packet or read-write timeout (the link was dropped under it, so
    /// the next attempt goes on a new connection, or on the short link if the
    /// task may use it and the long link is not up yet), of a task with no
    /// retry left, time before its deadline, its rescue not used and hedging
    /// allowed (the server may see the request twice). Marks the rescue used.
    fn long_link_rescue(
        &mut self,
        now: Instant,
        id: TaskId,
        error: &Error,
        channel: Channel,
    ) -> bool {
        let hedging = self.config.hedge.is_some();
        if !self.config.long_link_rescue || channel != Channel::Long {
            return false;
        }
        if !matches!(
            error,
            Error::Timeout(TimeoutKind::FirstPacket | TimeoutKind::ReadWrite)
        ) {
            return false;
        }
        let Some(e) = self.tasks.get_mut(&id) else {
            return false;
        };
        if e.rescue_used || e.retries_left > 0 || !e.task.hedge || !hedging || e.deadline <= now {
            return false;
        }
        e.rescue_used = true;
        true
    }

    /// Re-queues a task whose attempt ended in `error` if `how` and its
    /// budget allow, else ends it (or parks it).
    fn retry_or_end(&mut self, now: Instant, id: TaskId, error: Error, how: Retry) {
        let Some(entry) = self.tasks.get_mut(&id) else {
            return;
        };
        let interrupted = matches!(error, Error::Local(LocalError::Interrupted));
        entry.last_error = Some(error.clone());
        if shutting(&error) || self.shut_down {
            self.finish(id, Err(error));
            return;
        }
        if !how.retryable || (entry.retries_left == 0 && !how.free) {
            self.end_failed(now, id, error);
            return;
        }
        if !how.free {
            entry.retries_left -= 1;
        }
        let delay = how.delay.unwrap_or(match (how.channel, &error) {
            // Mars's long link retries at once, except a task that already
            // used a retry (1 s after the batch error).
            (Channel::Long, _) if entry.attempts <= 1 || interrupted => Duration::ZERO,
            (_, Error::Local(LocalError::Interrupted)) if how.free => Duration::ZERO,
            (_, Error::Timeout(_)) => self.config.retry_interval_after_timeout,
            _ => self.config.retry_interval,
        });
        let (order, class, gate) = (entry.order, entry.class, entry.gate.clone());
        self.queue.insert(id, order, class, gate, now + delay, now);
    }

    /// The task failed for good: park it (zombie) if it may, else finish it.
    fn end_failed(&mut self, now: Instant, id: TaskId, error: Error) {
        let Some(entry) = self.tasks.get_mut(&id) else {
            return;
        };
        let parkable = !matches!(
            error,
            Error::Cancelled | Error::Shutdown | Error::Rejected(_) | Error::Decode
        ) && !matches!(error, Error::Local(LocalError::InvalidTask(_)));
        self.queue.remove(id);
        if parkable && entry.budget_end.is_some_and(|b| b > now) {
            entry.stage = Stage::Parked;
            entry.last_error = Some(error);
            let budget_end = entry.budget_end;
            self.deadlines.set(id, None);
            self.zombies.park(id, now, budget_end);
            return;
        }
        self.finish(id, Err(error));
    }

    /// Replays every parked task now (Mars: one more attempt, no retries, a
    /// fresh task timeout within the remaining budget).
    fn replay_zombies(&mut self, now: Instant) {
        if self.zombies.is_empty() {
            return;
        }
        for id in self.zombies.ids() {
            self.replay(now, id);
        }
    }

    fn replay(&mut self, now: Instant, id: TaskId) {
        let cfg = self.config.timeouts;
        let Some(e) = self.tasks.get_mut(&id) else {
            return;
        };
        let fresh = task_timeout(
            &cfg,
            &TaskTimeoutInput {
                server_cost: e.task.server_process_cost,
                retry_count: 0,
                total_timeout: None,
                long_polling: e.task.long_polling,
            },
        );
        let budget = e.budget_end.unwrap_or(now);
        e.deadline = (now + fresh).min(budget);
        e.retries_left = 0;
        e.stage = Stage::Queued;
        let (order, class, gate, deadline) = (e.order, e.class, e.gate.clone(), e.deadline);
        self.zombies.unpark(id);
        self.deadlines.set(id, Some(deadline));
        self.queue.insert(id, order, class, gate, now, now);
    }

    // ---- the run loop ----

    /// Everything due at `now`, then dispatch. Every entry point ends here.
    fn run(&mut self, now: Instant) {
        if self.shut_down {
            return;
        }
        // Resolve answers that did not come in time count as failures.
        let mut expired = false;
        for h in self.dns.values_mut() {
            if h.pending_until.is_some_and(|p| p <= now) {
                h.pending_until = None;
                h.addrs.clear();
                h.answered_at = Some(now);
                expired = true;
            }
        }
        if expired && self.long_wants_connect {
            self.long_connect(now);
        }
        // Sub-machines' own timers first: a running task's deadline is
        // theirs too, and the long link reacts to it as its profile says
        // (Mars: a batch error that drops the link).
        for id in self.short_timers.due(now) {
            if let Some(ex) = self.short.get_mut(&id) {
                ex.handle_timeout(now, &mut self.ids);
            }
            self.pump_short(now, id);
        }
        for id in self.hedges.due(now) {
            if let Some(ex) = self.hedges.running_mut(id) {
                ex.handle_timeout(now, &mut self.ids);
            }
            self.pump_hedge(now, id);
        }
        self.start_due_hedges(now);
        self.pool_expire(now);
        self.verdict_expire(now);
        if let Some(long) = self.long.as_mut() {
            long.handle_timeout(now, &mut self.ids);
        }
        self.pump_long(now);
        // Task deadlines and zombie budgets, in id order.
        let idle = self.config.zombie_idle_restart;
        let mut due: Vec<TaskId> = self.deadlines.due(now);
        due.extend(self.zombies.expired(now));
        due.extend(self.zombies.restart_due(now, self.last_task_start, idle));
        due.sort_unstable();
        due.dedup();
        let due: Vec<(TaskId, bool, bool)> = due
            .into_iter()
            .filter_map(|id| {
                let e = self.tasks.get(&id)?;
                let expired = e.budget_end.is_some_and(|b| b <= now);
                Some((id, matches!(e.stage, Stage::Parked), expired))
            })
            .collect();
        for (id, parked, expired) in due {
            if parked {
                if expired {
                    self.finish(id, Err(TimeoutKind::Task.into()));
                } else {
                    self.replay(now, id);
                }
                continue;
            }
            self.stop_with_report(now, id, TimeoutKind::Task.into());
            self.end_failed(now, id, TimeoutKind::Task.into());
        }
        self.dispatch(now);
    }

    /// The report of an attempt that ended before its exchange could say
    /// more (stopped, interrupted, out of time).
    fn bare_report(
        &self,
        id: TaskId,
        attempt: Attempt,
        now: Instant,
        error: &Error,
    ) -> Option<Report> {
        let e = self.tasks.get(&id)?;
        Some(Report {
            task: id,
            attempt: e.attempts,
            channel: attempt.link.channel(),
            started: attempt.started,
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
            error: Some(error.clone()),
        })
    }

    /// Starts every queued task that may start, in queue order. Loops until
    /// nothing changes (a rejection or an immediate failure frees a slot).
    fn dispatch(&mut self, now: Instant) {
        for _ in 0..4 {
            if !self.dispatch_pass(now) {
                break;
            }
        }
    }

    /// One pass over the ready tasks in queue order, starting each that may
    /// start. Visits only the classes of tasks that can still start (or, for
    /// the long link, ask for it), so it ends as soon as the links are full.
    fn dispatch_pass(&mut self, now: Instant) -> bool {
        if self.shut_down {
            return false;
        }
        let pass = self.queue.begin_pass(now);
        if self.network == NetworkKind::None && self.config.no_network == NoNetworkPolicy::WaitAll {
            return false;
        }
        let mut progressed = false;
        let mut need_long = false;
        let mut cursor = None;
        loop {
            let long_up = self.long_link_connected();
            let long_room = self.long.as_ref().is_some_and(|l| {
                l.is_connected() && l.in_flight() < self.config.long.max_in_flight_tasks
            });
            let long_busy = self.long.as_ref().is_some_and(|l| l.in_flight() > 0);
            let short_room = self.short.len() < self.config.max_in_flight_short;
            let active = Active {
                long_only: (long_up && long_room) || (!long_up && !need_long),
                short_only: short_room,
                both: short_room || (long_up && long_room),
            };
            let auth = &self.auth;
            let Some((key, class)) =
                self.queue
                    .next_after(cursor, active, |k| auth.is_authed(k), pass)
            else {
                break;
            };
            cursor = Some(key);
            let id = key.1;
            let Some(e) = self.tasks.get(&id) else {
                self.queue.remove(id);
                continue;
            };
            if !matches!(e.stage, Stage::Queued) {
                continue;
            }
            let channel = match class {
                Class::LongOnly => Channel::Long,
                Class::ShortOnly => Channel::Short,
                Class::Both => match e.task.channel_strategy {
                    ChannelStrategy::Fast if long_busy => Channel::Short,
                    _ if long_up && long_room => Channel::Long,
                    _ => Channel::Short,
                },
            };
            match channel {
                Channel::Long if self.long_disabled => {
                    // Disabling moved every task that may go short there:
                    // this one has nowhere to go.
                    self.finish(id, Err(LocalError::LongLinkDisabled.into()));
                    progressed = true;
                }
                Channel::Long => {
                    if !long_up {
                        need_long = true;
                        continue;
                    }
                    if !long_room {
                        continue;
                    }
                    if self.start_long(now, id) {
                        progressed = true;
                    }
                }
                _ => {
                    if !short_room {
                        continue;
                    }
                    if self.start_short(now, id) {
                        progressed = true;
                    }
                }
            }
        }
        if need_long {
            if let Some(long) = self.long.as_mut() {
                long.task_needs_link(now);
            }
            self.pump_long(now);
        }
        progressed
    }

    /// Anti-avalanche check for the next attempt of `id`; a rejection ends
    /// the task. Returns whether the attempt may go.
    fn pass_limits(&mut self, now: Instant, id: TaskId) -> bool {
        let Some(e) = self.tasks.get(&id) else {
            return false;
        };
        let input = CheckInput {
            digest: payload_digest(&e.task.body),
            len: e.task.body.len(),
            net: self.network,
            active: self.activity.is_active(now),
            limit_frequency: e.task.limit_frequency,
            limit_flow: e.task.limit_flow,
        };
        match self.limits.check(now, &input) {
            Ok(()) => true,
            Err(kind) => {
                let kind = match kind {
                    LimitKind::Frequency => ErrorLimit::Frequency,
                    LimitKind::Flow => ErrorLimit::Flow,
                };
                self.finish(id, Err(Error::Rejected(kind)));
                false
            }
        }
    }

    fn attempt_input(&self, e: &Entry, in_flight: usize) -> AttemptInput {
        AttemptInput {
            net: self.last_network,
            send_len: e.task.body.len(),
            in_flight,
            server_cost: e.task.server_process_cost,
            dyn_state: self.timeouts.dyn_state(),
            long_polling: e.task.long_polling,
        }
    }

    // ---- connection events ----

    fn conn_event(&mut self, now: Instant, conn: ConnId, event: ConnEvent) {
        let Some(owner) = self.conns.owner(conn) else {
            return; // closed by us, or never ours
        };
        if matches!(event, ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_)) {
            self.conns.remove(conn);
        }
        match owner {
            Owner::Short(id) => {
                let hedge = self.hedges.running_mut(id).filter(|ex| ex.owns(conn));
                if let Some(ex) = hedge {
                    ex.handle_event(now, conn, event, &mut self.ids);
                    self.pump_hedge(now, id);
                } else {
                    if let Some(ex) = self.short.get_mut(&id) {
                        ex.handle_event(now, conn, event, &mut self.ids);
                    }
                    self.pump_short(now, id);
                }
            }
            Owner::Long => {
                if let Some(long) = self.long.as_mut() {
                    long.handle_event(now, conn, event, &mut self.ids);
                }
                self.pump_long(now);
            }
            Owner::Pool => self.pool_event(conn, &event),
            Owner::Verdict => self.verdict_event(now, conn, &event),
        }
    }

    fn record_endpoint(&mut self, now: Instant, addr: SocketAddr, ok: bool) {
        // Mars ignores updates while there is no network (§4.2).
        if self.network != NetworkKind::None {
            self.history.record(now, addr, ok);
        }
    }

    /// The RTT hint for a race: the connect RTT; after two or more failed
    /// races in a row, scaled up ×2, ×4, ×8, so attempts are not abandoned
    /// forever on a path that became slower than the estimate. Not after the
    /// first failure: an outage also fails a race, and a larger hint slows
    /// the refresh of attempts that gets the first one through when it ends
    /// (stn-sim sensitivity suite).
    /// A connect succeeded after `t`. Karn's rule: a handshake slower than
    /// the OS's initial SYN retransmission timeout ([`KARN_SYN_RTO`]) most
    /// likely had its SYN retransmitted (or won as one of stn's passive
    /// probes), so `t` measures the loss, not the round trip, and is not
    /// sampled — it would inflate the racing stagger and the adaptive
    /// timeouts. (On a path whose real RTT exceeds 1 s the timeouts then
    /// learn from first-packet times only.)
    fn connect_sample(&mut self, t: Duration) {
        self.failed_races = 0;
        if t < KARN_SYN_RTO {
            self.timeouts.on_connect_sample(t);
            self.connect_rtt.sample(t);
        }
    }

    fn rtt_hint(&self) -> Option<Duration> {
        let rtt = self.connect_rtt.srtt();
        if self.failed_races < 2 {
            return rtt;
        }
        let k = 1u32 << (self.failed_races - 1).min(3);
        Some(rtt.unwrap_or(Duration::from_millis(500)).saturating_mul(k))
    }

    /// Feeds an attempt failure to the timeout machine.
    fn note_failure(&mut self, now: Instant, error: &Error) {
        if matches!(error, Error::Connect { .. }) {
            self.failed_races = self.failed_races.saturating_add(1);
        }
        match error {
            Error::Timeout(TimeoutKind::FirstPacket | TimeoutKind::LongPolling) => {
                self.timeouts
                    .on_timeout(now, AttemptTimeoutKind::FirstPacket);
            }
            Error::Timeout(TimeoutKind::PacketGap) => {
                self.timeouts.on_timeout(now, AttemptTimeoutKind::PacketGap);
            }
            Error::Timeout(TimeoutKind::ReadWrite) => {
                self.timeouts.on_timeout(now, AttemptTimeoutKind::ReadWrite);
            }
            Error::Timeout(TimeoutKind::Task)
            | Error::Cancelled
            | Error::Shutdown
            | Error::Local(_)
            | Error::Rejected(_) => {}
            _ => self.timeouts.on_failure(now),
        }
    }
}

/// Errors that end a task whatever its retries.
fn shutting(error: &Error) -> bool {
    matches!(error, Error::Shutdown | Error::Cancelled)
}
