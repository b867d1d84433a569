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

use std::sync::Arc;

use bytes::Bytes;

use crate::ban::{parse_history, EndpointHistory, ImportError, SECTION_HEARTBEAT};
use crate::error::{Error, Headers, LocalError, ProtocolError, Response, TimeoutKind};
use crate::io::{ConnEvent, ConnId, ConnIds};
use crate::limit::{payload_digest, AntiAvalanche, CheckInput};
use crate::link_name::LinkName;
use crate::long_link::{DisconnectReason, IdentifyDecision, LongLink, LongLinkEvent, SendError};
use crate::monitor::Activity;
use crate::net::{IpAddr, NetworkKind, SocketAddr};
use crate::rng::Rng;
use crate::short_link::{
    EndpointReport, ExchangeAction, ExchangeRequest, ExchangeResult, ExchangeTimeouts,
};
use crate::smart_heartbeat::{HeartbeatState, SmartHeartbeat};
use crate::task::{Channel, ChannelStrategy, Task, TaskId};
use crate::time::{Duration, Instant, MonotonicClock};
use crate::timeout::{
    task_timeout, AdaptiveTimeouts, AttemptInput, AttemptSample, TaskTimeoutInput,
};

mod auth;
mod candidates;
// The invariant checker of the proptest and the `engine_ops` fuzz target.
#[cfg(any(test, fuzzing))]
pub(crate) mod check;
mod config;
mod conns;
mod dns;
mod hedge;
mod judge;
mod links;
mod long_slot;
mod outbox;
mod pool;
mod probes;
mod queue;
mod rtt_hint;
mod short;
mod stage;
mod tasks;
mod timer_set;
mod types;
mod zombies;

#[cfg(test)]
mod tests;

pub use config::{
    ChannelChoice, Config, HttpRetry, LongLinkEndpoints, NoNetworkPolicy, ShortLinkEndpoints,
    ZombiePolicy, STN_MAX_ABANDONS,
};
pub use hedge::HedgePolicy;
pub use links::{LinkError, LinkSpec, MAX_LINKS};
pub use pool::PoolConfig;
pub use types::{Event, Input, JudgeRequest, LinkStatus, Output, Report, SubmitError, Verdict};

use auth::{Auth, AuthKey};
use candidates::{Candidates, Sources};
use conns::Owner;
use judge::Scope;
use links::Links;
use long_slot::LongSlot;
use outbox::Outbox;
use pool::Pool;
use probes::Probes;
use queue::{Active, Class};
use rtt_hint::RttHint;
use short::{AttemptAction, ShortAttempt};
use stage::{Entry, On, Pending, Stage};
use tasks::{Stopped, Tasks};

/// The long-link machine for `config` (which has a long link).
fn long_link_machine(config: &Config, now: Instant, foreground: bool) -> LongLink {
    let mut cfg = config.long.clone();
    cfg.foreground = foreground;
    cfg.monitor.seed = Rng::derive(config.seed, 2).next_u64();
    LongLink::new(now, cfg)
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

impl Retry {
    /// A retry on `channel`, using one of the task's retries unless `free`.
    fn on(channel: Channel, free: bool, delay: Option<Duration>) -> Self {
        Retry {
            channel,
            retryable: true,
            free,
            delay,
        }
    }
}

/// The top-level sans-IO machine. See the crate docs for what it
/// does and the drain rule.
#[derive(Debug)]
pub struct Engine {
    config: Config,
    clock: MonotonicClock,
    ids: ConnIds,
    /// Every held task, its stage (a running attempt's state included) and
    /// the indexes over them.
    tasks: Tasks,
    /// What the engine says, and the live connections it filters by.
    out: Outbox,
    /// Idle keep-alive connections ([`PoolConfig`]).
    pool: Pool,
    /// Short-link race losers kept open until their verdict is due.
    probes: Probes,
    /// Resolve answers, endpoint history and bans, candidate order.
    candidates: Candidates,
    timeouts: AdaptiveTimeouts,
    /// The racing stagger's RTT hint.
    rtt: RttHint,
    limits: AntiAvalanche,
    activity: Activity,
    long: LongSlot,
    /// The named long links besides `long`.
    links: Links,
    network: NetworkKind,
    /// The last network that was not `None`.
    last_network: NetworkKind,
    auth: Auth,
    shut_down: bool,
}

impl Engine {
    /// A fresh engine at `now`. The long link (if configured) starts
    /// connecting on the first [`handle_timeout`](Self::handle_timeout).
    pub fn new(now: Instant, config: Config) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        let network = config.network;
        let long = config.long_link.as_ref().map(|_| {
            let mut long = long_link_machine(&config, now, config.foreground);
            long.smart_heartbeat_mut().set_network(network);
            long
        });
        let timeouts_net = if network == NetworkKind::None {
            NetworkKind::Wifi
        } else {
            network
        };
        // One full race per short-link slot.
        let max_probes = config
            .max_in_flight_short
            .max(1)
            .saturating_mul(config.exchange.race.max_open());
        Engine {
            ids: ConnIds::new(),
            tasks: Tasks::new(now),
            out: Outbox::default(),
            pool: Pool::new(now, config.socket_pool),
            probes: Probes::new(max_probes),
            candidates: Candidates::new(
                EndpointHistory::new(config.ban.clone()),
                Rng::derive(config.seed, 1),
                config.resolve_ttl,
                config.resolve_timeout,
            ),
            timeouts: AdaptiveTimeouts::new(config.timeouts, timeouts_net),
            rtt: RttHint::default(),
            limits: AntiAvalanche::new(now, config.limits.clone(), config.foreground),
            activity: Activity::new(now, config.long.monitor.activity.clone(), config.foreground),
            long: LongSlot::new(long),
            links: Links::default(),
            network,
            last_network: timeouts_net,
            auth: Auth::default(),
            shut_down: false,
            clock,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Tasks held (queued, running or parked).
    pub fn task_count(&self) -> usize {
        self.tasks.len() + self.links.task_count()
    }

    /// Whether the task is still held (it has not finished).
    pub fn has_task(&self, id: TaskId) -> bool {
        self.tasks.contains(id) || self.links.has_task(id)
    }

    /// Short-link attempts running.
    pub fn short_in_flight(&self) -> usize {
        self.tasks.short_running()
    }

    /// Tasks awaiting a response on the long link.
    pub fn long_in_flight(&self) -> usize {
        self.long.in_flight()
    }

    /// Whether the long link is connected.
    pub fn long_link_connected(&self) -> bool {
        self.long.is_connected()
    }

    /// Whether the app disabled the long link
    /// ([`set_long_link_enabled`](Self::set_long_link_enabled)).
    pub fn long_link_disabled(&self) -> bool {
        self.long.is_disabled()
    }

    /// Connections the engine considers open (asked for, not yet closed).
    pub fn open_connections(&self) -> usize {
        self.out.open_connections() + self.links.open_connections()
    }

    // ---- named long links ----

    /// Adds a named long link besides the main one (Mars
    /// `CreateLonglink_ext`): its own endpoints, racing, codec, heartbeat,
    /// identify, reconnect monitor, endpoint bans and tasks in flight, as
    /// `spec` says; everything else (timeouts, limits, the network, the
    /// foreground flag, authentication) as this engine's. It connects as
    /// the main link does (on the first [`handle_timeout`](Self::handle_timeout)
    /// or a task). A task names it with [`Task::on_link`]; its status and
    /// pushes come as [`Event::Link`], its reports carry its name.
    ///
    /// # Errors
    ///
    /// [`LinkError`] if the name is taken, [`MAX_LINKS`] links exist, the
    /// endpoints give nothing to connect to, or the engine is shut down.
    ///
    /// ```
    /// use stn_proto::config::LongLinkEndpoints;
    /// use stn_proto::{Config, Engine, Instant, LinkName, LinkSpec, Task};
    ///
    /// let mut engine = Engine::new(Instant::ZERO, Config::default());
    /// let mut endpoints = LongLinkEndpoints::default();
    /// endpoints.ips = vec!["127.0.0.1".parse().unwrap()];
    /// endpoints.ports = vec![8082];
    /// let push = LinkName::new("push").unwrap();
    /// let spec = LinkSpec::new(endpoints, engine.config().long().clone());
    /// engine.add_link(Instant::ZERO, push.clone(), spec).unwrap();
    /// let task = Task::new(7, "", "hi").on_link(push.clone());
    /// let id = engine.submit(Instant::ZERO, task).unwrap();
    /// assert!(engine.has_task(id));
    /// engine.remove_link(Instant::ZERO, &push).unwrap();
    /// // The task ends with the link named as the cause.
    /// let ended = std::iter::from_fn(|| engine.poll_output()).find_map(|o| match o {
    ///     stn_proto::Output::Event(stn_proto::Event::TaskFinished { id: i, outcome, .. }) => {
    ///         Some((i, outcome.unwrap_err().to_string()))
    ///     }
    ///     _ => None,
    /// });
    /// assert_eq!(ended.map(|(i, _)| i), Some(id));
    /// ```
    pub fn add_link(
        &mut self,
        now: Instant,
        name: LinkName,
        spec: LinkSpec,
    ) -> Result<(), LinkError> {
        let now = self.clock.observe(now);
        if self.shut_down {
            return Err(LinkError::ShutDown);
        }
        let mut links = std::mem::take(&mut self.links);
        let added = links.add(now, self, name, spec);
        self.links = links;
        added
    }

    /// Removes a named long link: each task on it, queued or in flight, ends
    /// once with [`LocalError::LinkRemoved`] naming it; its connection
    /// closes. The name may be added again at once.
    ///
    /// # Errors
    ///
    /// [`LinkError::Unknown`] if there is no link of that name.
    pub fn remove_link(&mut self, now: Instant, name: &LinkName) -> Result<(), LinkError> {
        self.links.remove(now, name)
    }

    /// The named long links, in the order they were added.
    pub fn links(&self) -> impl Iterator<Item = &LinkName> {
        self.links.names()
    }

    /// Whether the named link is connected (`None`: no such link).
    pub fn link_connected(&self, name: &LinkName) -> Option<bool> {
        self.links.get(name).map(Engine::long_link_connected)
    }

    /// Tasks awaiting a response on the named link (`None`: no such link).
    pub fn link_in_flight(&self, name: &LinkName) -> Option<usize> {
        self.links.get(name).map(Engine::long_in_flight)
    }

    /// The app's answer to [`Event::AskIdentify`] of the named link ([`Event::Link`])
    /// (ignored for an unknown link).
    pub fn link_identify_answer(
        &mut self,
        now: Instant,
        name: &LinkName,
        decision: IdentifyDecision,
    ) {
        if let Some(link) = self.links.get_mut(name) {
            link.identify_answer(now, decision);
        }
    }

    /// The app's verdict on the named link's [`Event::IdentifyResponse`]
    /// (as [`identify_verdict`](Self::identify_verdict); ignored for an
    /// unknown link).
    pub fn link_identify_verdict(&mut self, now: Instant, name: &LinkName, accepted: bool) {
        if let Some(link) = self.links.get_mut(name) {
            link.identify_verdict(now, accepted);
        }
    }

    /// [`make_sure_long_link_connected`](Self::make_sure_long_link_connected)
    /// for the named link (ignored for an unknown link).
    pub fn make_sure_link_connected(&mut self, now: Instant, name: &LinkName) {
        if let Some(link) = self.links.get_mut(name) {
            link.make_sure_long_link_connected(now);
        }
    }

    /// The network the engine believes it is on.
    pub fn network(&self) -> NetworkKind {
        self.network
    }

    /// The endpoint history (bans and ordering).
    pub fn endpoint_history(&self) -> &EndpointHistory {
        self.candidates.history()
    }

    /// The endpoint history, to import saved history
    /// ([`EndpointHistory::import`]) or switch its network label.
    pub fn endpoint_history_mut(&mut self) -> &mut EndpointHistory {
        self.candidates.history_mut()
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
        if let Some(name) = task.link.clone() {
            if channel == Channel::Short {
                return Err(SubmitError::ShortOnlyOnLink(name));
            }
            let task = Task { link: None, ..task };
            return self.links.submit(now, &mut self.tasks, &name, task);
        }
        // A disabled long link is still configured: its tasks are accepted
        // and dispatch ends the long-only ones with the cause.
        if self.long.get().is_none() && !self.long.is_disabled() {
            channel = match channel {
                Channel::Long => return Err(SubmitError::NoLongLink),
                Channel::Both => Channel::Short,
                Channel::Short => Channel::Short,
            };
        }
        if !self.config.short_link.is_configured() {
            channel = match channel {
                Channel::Short => return Err(SubmitError::NoShortLink),
                Channel::Both | Channel::Long => Channel::Long,
            };
        }
        if self.tasks.len() >= self.config.max_queued_tasks {
            return Err(SubmitError::QueueFull);
        }
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
        let (id, order) = self.tasks.allocate(task.priority);
        let sensitive_fail = task.network_status_sensitive
            && self.config.no_network == NoNetworkPolicy::FailSensitive
            && self.network == NetworkKind::None
            && !self.long_link_connected();
        let class = Class::of(channel, frozen);
        let gate = task
            .need_authed
            .then(|| Arc::new(AuthKey::of(&task, class == Class::LongOnly, &self.config)));
        let entry = Entry {
            retries_left: task.retries(),
            task,
            order,
            class,
            deadline,
            budget_end,
            attempts: 0,
            stage: Stage::Settling,
            last_error: None,
            session_retry_used: false,
            rescue_used: false,
            body_attempt: 0,
            gate,
        };
        self.tasks.insert(id, entry);
        if sensitive_fail {
            // Mars `kEctLocalNoNet`: refused at start, never parked.
            self.finish(id, Err(LocalError::NoNetwork.into()));
        } else {
            self.tasks.enqueue(now, id, now);
            // Mars `StartTask`: a task that may use the long link, submitted
            // in the foreground while the link is down, asks the monitor for
            // it (`MakeSureConnected`), even if it then goes short.
            if channel.allows_long() && self.activity.is_foreground() {
                if let Some(long) = self.long.get_mut().filter(|l| !l.is_connected()) {
                    long.task_needs_link(now);
                }
            }
        }
        self.run(now);
        self.end_if_refused(id);
        Ok(id)
    }

    /// Cancels a task: it ends with [`Error::Cancelled`] (exactly once; an
    /// unknown or finished id is ignored). Its connections are closed.
    pub fn cancel(&mut self, now: Instant, id: TaskId) {
        if let Some((link, inner)) = self.links.task(id) {
            link.cancel(now, inner);
            return;
        }
        let now = self.clock.observe(now);
        if self.tasks.contains(id) {
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
        self.links.each(|e| e.network_changed(now, kind));
        // A refusal on another network says nothing about this one.
        self.long.set_refusal(None);
        if self.shut_down {
            return;
        }
        self.network = kind;
        if kind != NetworkKind::None {
            self.last_network = kind;
        }
        self.candidates.network_changed(now);
        self.timeouts.reset(self.last_network);
        self.rtt.reset();
        self.long.set_awaiting_resolve(false);
        // Mars clears the socket pool on a network change.
        self.pool.clear(&mut self.out);
        // The history was just reset: a probe's verdict would be about the
        // old network.
        self.probes.clear(&mut self.out);
        self.redo_short_attempts(now);
        if let Some(long) = self.long.get_mut() {
            long.smart_heartbeat_mut().set_network(kind);
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
        self.links.each(|e| e.network_lost(now));
        // A refusal on another network says nothing about this one.
        self.long.set_refusal(None);
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
        self.links.each(|e| e.network_available(now, kind));
        // A refusal on another network says nothing about this one.
        self.long.set_refusal(None);
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
            self.tasks.release_waiting();
            if let Some(long) = self.long.get_mut() {
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
        self.links.each(|e| e.set_foreground(now, foreground));
        if self.shut_down {
            return;
        }
        self.activity.set_foreground(now, foreground);
        self.limits.set_active(now, self.activity.is_active(now));
        if let Some(long) = self.long.get_mut() {
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
        self.links.each(|e| e.set_authed(now, authed));
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
        self.links.each(|e| {
            e.set_host_authed(now, host, user_id, authed);
        });
        let key = AuthKey {
            host: host.to_owned(),
            user: user_id.map(str::to_owned),
        };
        let done = self.auth.set(key, authed);
        self.run(now);
        done
    }

    /// The app's answer to [`Event::AskIdentify`].
    pub fn identify_answer(&mut self, now: Instant, decision: IdentifyDecision) {
        let now = self.clock.observe(now);
        if let Some(long) = self.long.get_mut() {
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
        if let Some(long) = self.long.get_mut().filter(|l| l.is_connected()) {
            long.disconnect(now, DisconnectReason::Reset);
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
            Input::Conn { conn, event } => {
                if self.links.conn_event(now, conn, event.clone()) {
                    return;
                }
                self.conn_event(now, conn, event);
            }
            Input::Resolved { host, addrs } => {
                // Each engine takes the answers it asked for.
                self.links.each(|e| {
                    let (host, addrs) = (host.clone(), addrs.clone());
                    e.handle_input(now, Input::Resolved { host, addrs });
                });
                self.resolved(now, host, addrs);
            }
            Input::ResolveFailed { host } => {
                self.links.each(|e| {
                    let host = host.clone();
                    e.handle_input(now, Input::ResolveFailed { host });
                });
                self.resolved(now, host, Vec::new());
            }
        }
        self.run(now);
    }

    /// Processes every timer due at `now`. Idempotent; safe to call early.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.links.each(|e| e.handle_timeout(now));
        self.run(now);
    }

    /// Ends every task with [`Error::Shutdown`], closes every connection and
    /// stops the long link for good. Later submits are refused.
    pub fn shutdown(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        self.links.shutdown(now);
        self.stop_all(now, Error::Shutdown);
    }

    /// Shuts down: every task ends with `error`, every connection closes.
    fn stop_all(&mut self, now: Instant, error: Error) {
        self.shut_down = true;
        self.out.refuse_connects();
        for id in self.tasks.ids() {
            self.stop_with_report(now, id, error.clone());
        }
        if let Some(long) = self.long.get_mut() {
            long.disconnect(now, DisconnectReason::Shutdown);
        }
        self.pump_long(now);
        for id in self.tasks.ids() {
            self.finish(id, Err(error.clone()));
        }
        self.pool.forget_all();
        self.probes.forget_all();
        self.out.close_all();
    }

    /// The next output, if any. Drain until `None` after every call.
    pub fn poll_output(&mut self) -> Option<Output> {
        match self.out.pop() {
            Some(out) => Some(out),
            None if self.links.is_empty() => None,
            None => self.links.poll_output(&mut self.ids, &mut self.tasks),
        }
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next. After a
    /// drain it is never earlier than the latest `now` given.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.shut_down {
            return None;
        }
        let now = self.clock.latest();
        let hedges = self.config.hedge.as_ref();
        [
            self.candidates.next_timeout(),
            self.tasks.next_timeout(self.config.zombie_idle_restart),
            self.pool.next_timeout(),
            self.probes.next_timeout(),
            hedges.and_then(|p| self.tasks.next_hedge_start(p, self.rtt.hint())),
            self.long.get().and_then(LongLink::poll_timeout),
            self.links.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
        .filter(|&t| t != Instant::MAX)
        .map(|t| t.max(now))
    }

    /// The app's verdict on the response of [`Event::Judge`] for `id`.
    ///
    /// Returns `false` (and changes nothing) if `id` is not waiting for a
    /// verdict: unknown, already ended (cancelled, timed out), judged
    /// already, or the engine is shut down. See [`Verdict`] for what each
    /// verdict does. The task's deadline keeps running while the app judges.
    pub fn judge(&mut self, now: Instant, id: TaskId, verdict: Verdict) -> bool {
        if let Some((link, inner)) = self.links.task(id) {
            return link.judge(now, inner, verdict);
        }
        let now = self.clock.observe(now);
        if self.shut_down {
            return false;
        }
        let Some(Pending {
            response,
            mut report,
        }) = self.tasks.take_judged(id).map(|p| *p)
        else {
            return false;
        };
        let channel = report.channel;
        report.ended = now;
        if verdict == Verdict::Accept {
            self.out.report(report);
            self.finish(id, Ok(response));
            self.run(now);
            return true;
        }
        report.error = Some(Error::Decode);
        let endpoint = report.endpoint;
        self.out.report(report);
        let mut drop_long = channel == Channel::Long;
        match verdict {
            Verdict::Accept => {}
            Verdict::End => self.end_failed(now, id, Error::Decode),
            Verdict::Retry => {
                // Mars: the endpoint served something the app cannot use.
                if let Some(addr) = endpoint {
                    self.record_endpoint(now, addr, false);
                }
                self.retry_or_end(now, id, Error::Decode, Retry::on(channel, false, None));
            }
            Verdict::SessionTimeout => {
                // Only the session of this task's host and user expired.
                let user = self.tasks.get(id).and_then(|e| e.task.user_id.clone());
                if let Some(key) = self.source_auth_key(id) {
                    self.auth.revoke(key);
                }
                let free = self
                    .tasks
                    .get_mut(id)
                    .map(|e| !std::mem::replace(&mut e.session_retry_used, true))
                    .unwrap_or(false);
                self.retry_or_end(
                    now,
                    id,
                    Error::Decode,
                    Retry::on(channel, free, Some(Duration::ZERO)),
                );
                let scope = Scope::NeedAuth { user };
                drop_long |= self.redo_running(now, id, &scope, Some(Duration::ZERO));
            }
            Verdict::RetryAll => {
                self.retry_or_end(now, id, Error::Decode, Retry::on(channel, false, None));
                drop_long |= self.redo_running(now, id, &Scope::All, None);
            }
        }
        if drop_long && verdict != Verdict::End {
            // Mars drops the long link after a batch error on it; the tasks
            // still in flight there are redone (Interrupted).
            if let Some(long) = self.long.get_mut().filter(|l| l.is_connected()) {
                long.disconnect(now, DisconnectReason::Reset);
            }
            self.pump_long(now);
        }
        self.run(now);
        true
    }

    /// Redoes every task (Mars `RedoTasks`): forgets resolved addresses,
    /// stops every running short-link attempt and starts it again
    /// ([`LocalError::Interrupted`]: free under the stn profile, which does
    /// not charge a retry for a network change; under the Mars profiles it
    /// uses a retry), reconnects the long link at once (its tasks in
    /// flight are redone the same way) and replays parked tasks. Bans and
    /// timeouts are kept: unlike a network change, the network is the same.
    pub fn redo_tasks(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.links.each(|e| e.redo_tasks(now));
        if self.shut_down {
            return;
        }
        self.candidates.forget_answers();
        self.redo_short_attempts(now);
        if let Some(long) = self.long.get_mut() {
            long.on_network_change(now);
        }
        self.pump_long(now);
        self.replay_zombies(now);
        self.run(now);
    }

    /// Ends every task now with [`Error::Cancelled`] (Mars `ClearTasks`,
    /// which drops them silently: here each still ends exactly once) and
    /// closes their connections. Returns how many there were.
    pub fn clear_tasks(&mut self, now: Instant) -> usize {
        let now = self.clock.observe(now);
        let mut linked = 0;
        self.links.each(|e| linked += e.clear_tasks(now));
        let ids = self.tasks.ids();
        for &id in &ids {
            self.stop_with_report(now, id, Error::Cancelled);
            self.finish(id, Err(Error::Cancelled));
        }
        self.run(now);
        ids.len() + linked
    }

    /// Asks for the long link now if it is down (Mars
    /// `MakesureLonglinkConnected`): its monitor connects as soon as its
    /// schedule allows (at once unless a connect just failed). Nothing
    /// happens if the link is up or connecting, or there is no long link.
    pub fn make_sure_long_link_connected(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        if let Some(long) = self.long.get_mut().filter(|l| !l.is_connected()) {
            long.task_needs_link(now);
        }
        self.pump_long(now);
        self.run(now);
    }

    /// Turns the long link off or back on at run time (Mars
    /// `DisableLongLink`; Mars has no way back but a restart).
    ///
    /// Disabling closes the long link (or abandons its connect) and stops
    /// reconnecting. Its tasks in flight are interrupted
    /// ([`LocalError::Interrupted`], as on a network change) and retried:
    /// a task that may use the short link goes there, now and from then on
    /// ([`Channel::Both`], and under
    /// [`ChannelChoice::AtSubmit`](ChannelChoice::AtSubmit) a task
    /// that chose the long link at submit). A task that can only use the
    /// long link ends at once with
    /// [`LocalError::LongLinkDisabled`], whether it was queued, in flight
    /// or submitted later, rather than wait for a link that will not come.
    /// Mars sends every task to its short-link manager once the long link is
    /// disabled, long-only ones too, where a task without a CGI fails; stn
    /// ends them with the long link named as the cause. Mars also leaves the
    /// connection itself open; stn closes it, so the server sees the client
    /// go. [`Event::LongLink`](super::Event::LongLink) reports
    /// [`LinkStatus::Disabled`].
    ///
    /// Enabling starts a fresh long link (identify again, the reconnect
    /// schedule from the start) and connects at once. Nothing happens if
    /// the link is already in the asked state, no long link is configured,
    /// or the engine is shut down.
    ///
    /// ```
    /// use stn_proto::{Channel, Config, Engine, Event, Instant, LocalError, Output, Task};
    /// use stn_proto::config::LongLinkEndpoints;
    ///
    /// let mut config = Config::default();
    /// let mut long = LongLinkEndpoints::default();
    /// long.ips = vec!["127.0.0.1".parse().unwrap()];
    /// long.ports = vec![8081];
    /// config.set_long_link(Some(long));
    /// let mut engine = Engine::new(Instant::ZERO, config);
    /// engine.set_long_link_enabled(Instant::ZERO, false);
    /// let id = engine.submit(Instant::ZERO, Task::new(7, "", "x").channel(Channel::Long)).unwrap();
    /// let ended = std::iter::from_fn(|| engine.poll_output()).find_map(|o| match o {
    ///     Output::Event(Event::TaskFinished { id: done, outcome, .. }) if done == id => Some(outcome),
    ///     _ => None,
    /// });
    /// assert_eq!(ended, Some(Err(LocalError::LongLinkDisabled.into())));
    /// ```
    pub fn set_long_link_enabled(&mut self, now: Instant, enabled: bool) {
        let now = self.clock.observe(now);
        if self.shut_down || self.config.long_link.is_none() || enabled != self.long.is_disabled() {
            return;
        }
        if enabled {
            let link = long_link_machine(&self.config, now, self.activity.is_foreground());
            self.long.enable(link);
        } else {
            self.leave_long_link(now);
            if let Some(long) = self.long.get_mut() {
                long.disconnect(now, DisconnectReason::User);
            }
            // Drains the closes and interrupted tasks while the link is
            // still there to say them; its monitor's timers go with it.
            self.pump_long(now);
            self.long.disable();
            self.out.link(LinkStatus::Disabled);
        }
        self.run(now);
    }

    /// The current network's label, e.g. `"wifi:<ssid>"` or
    /// `"mobile:<carrier>"` (Mars `getCurrNetLabel`): the endpoint history
    /// switches to that network's records now
    /// ([`EndpointHistory::switch_network`]), and the smart heartbeat uses
    /// that network's record from the long link's next connect. Call it with
    /// every [`network_changed`](Self::network_changed) (before or after).
    /// Without a label every network is `""`: the Mars profile then learns
    /// nothing (as Mars with an empty label), stn forgets its record at
    /// every network change.
    pub fn set_network_label(&mut self, now: Instant, label: &str) {
        let now = self.clock.observe(now);
        self.links.each(|e| e.set_network_label(now, label));
        if self.shut_down {
            return;
        }
        if self.candidates.history().network_label() != label {
            self.candidates.history_mut().switch_network(now, label);
        }
        let kind = self.network;
        if let Some(smart) = self.long.smart_heartbeat_mut() {
            smart.set_label(label);
            smart.set_network(kind);
        }
        self.run(now);
    }

    /// The smart heartbeat's record of the current network (`None` with a
    /// fixed interval, no long link, or before its first connect).
    pub fn heartbeat_state(&self) -> Option<HeartbeatState> {
        self.long.smart_heartbeat().and_then(SmartHeartbeat::state)
    }

    /// Everything learned per network, for storage: the endpoint history
    /// ([`EndpointHistory::export`]) and the smart heartbeat's records, in
    /// one file (version 2 of the history format;
    /// [`import_history`](Self::import_history) reads it, and version 1).
    /// `wall_clock_secs` is the wall-clock time (e.g. Unix seconds) of the
    /// latest `now` the engine was given.
    pub fn export_history(&self, wall_clock_secs: u64) -> Vec<u8> {
        let mut heartbeat = Vec::new();
        if let Some(smart) = self.long.smart_heartbeat() {
            smart.encode(self.clock.latest(), wall_clock_secs, &mut heartbeat);
        }
        let sections = if heartbeat.is_empty() {
            Vec::new()
        } else {
            vec![(SECTION_HEARTBEAT, heartbeat)]
        };
        self.candidates
            .history()
            .export_with_sections(wall_clock_secs, &sections)
    }

    /// Loads what [`export_history`](Self::export_history) (or
    /// `EndpointHistory::export`) wrote: endpoint records as
    /// [`EndpointHistory::import`] does, and heartbeat records of the same
    /// algorithm as this engine's (a record changed more recently here
    /// wins). Returns how many endpoint entries and heartbeat records were
    /// taken.
    ///
    /// # Errors
    ///
    /// [`ImportError`] if anything in the file is malformed; nothing
    /// changes then.
    pub fn import_history(
        &mut self,
        bytes: &[u8],
        wall_clock_secs: u64,
        now: Instant,
    ) -> Result<usize, ImportError> {
        let now = self.clock.observe(now);
        let file = parse_history(bytes)?;
        let mut heartbeat = None;
        for (kind, body) in &file.sections {
            if *kind == SECTION_HEARTBEAT {
                heartbeat = Some(
                    SmartHeartbeat::decode(body)
                        .map_err(|_| ImportError::BadSection(SECTION_HEARTBEAT))?,
                );
            }
        }
        let mut taken =
            self.candidates
                .history_mut()
                .apply_import(file.networks, wall_clock_secs, now);
        if let (Some(records), Some(smart)) = (heartbeat, self.long.smart_heartbeat_mut()) {
            taken += smart.import(records, wall_clock_secs, now);
        }
        Ok(taken)
    }

    // ---- the run loop ----

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
        if !self.tasks.contains(id) {
            return;
        }
        if let Some(r) = report {
            self.out.report(r);
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
        let Some(e) = self.tasks.get_mut(id) else {
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
        let Some(entry) = self.tasks.get_mut(id) else {
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
        self.tasks.enqueue(now, id, now + delay);
    }

    /// Everything due at `now`, then dispatch. Every entry point ends here.
    fn run(&mut self, now: Instant) {
        if self.shut_down {
            return;
        }
        // Resolve answers that did not come in time count as failures.
        if self.candidates.expire(now) && self.long.awaits_resolve() {
            self.long_connect(now);
        }
        // Sub-machines' own timers first: a running task's deadline is
        // theirs too, and the long link reacts to it as its profile says
        // (Mars: a batch error that drops the link).
        for id in self.tasks.exchange_timers_due(now) {
            if let Some(a) = self.tasks.get_mut(id).and_then(Entry::short_attempt_mut) {
                a.exchange_timeout(now, &mut self.ids);
            }
            self.pump_short(now, id);
        }
        for id in self.tasks.hedge_timers_due(now) {
            if let Some(a) = self.tasks.get_mut(id).and_then(Entry::short_attempt_mut) {
                a.hedge_timeout(now, &mut self.ids);
            }
            self.pump_short(now, id);
        }
        self.start_due_hedges(now);
        self.pool.expire(now, &mut self.out);
        for r in self.probes.expire(now, &mut self.out) {
            self.endpoint_report(now, r);
        }
        if let Some(long) = self.long.get_mut() {
            long.handle_timeout(now, &mut self.ids);
        }
        self.pump_long(now);
        // Task deadlines and zombie budgets, in id order.
        let due: Vec<(TaskId, bool, bool)> = self
            .tasks
            .due(now, self.config.zombie_idle_restart)
            .into_iter()
            .filter_map(|id| {
                let e = self.tasks.get(id)?;
                let expired = e.budget_end.is_some_and(|b| b <= now);
                Some((id, matches!(e.stage, Stage::Parked { .. }), expired))
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
        let pass = self.tasks.begin_pass(now);
        if self.network == NetworkKind::None && self.config.no_network == NoNetworkPolicy::WaitAll {
            return false;
        }
        let mut progressed = false;
        let mut need_long = false;
        let mut cursor = None;
        loop {
            let long_up = self.long.is_connected();
            let long_room = self.long.has_room(self.config.long.max_in_flight_tasks);
            let long_busy = self.long.in_flight() > 0;
            let short_room = self.tasks.short_running() < self.config.max_in_flight_short;
            let active = Active {
                long_only: (long_up && long_room) || (!long_up && !need_long),
                short_only: short_room,
                both: short_room || (long_up && long_room),
            };
            let auth = &self.auth;
            let Some((key, class)) =
                self.tasks
                    .next_ready(cursor, active, |k| auth.is_authed(k), pass)
            else {
                break;
            };
            cursor = Some(key);
            let id = key.1;
            // Only a queued task's own record puts it in the queue's indexes.
            let Some(e) = self.tasks.get(id) else {
                continue;
            };
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
                Channel::Long if self.long.is_disabled() => {
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
            if let Some(long) = self.long.get_mut() {
                long.task_needs_link(now);
            }
            self.pump_long(now);
        }
        progressed
    }

    /// Anti-avalanche check for the next attempt of `id`; a rejection ends
    /// the task. Returns whether the attempt may go.
    fn pass_limits(&mut self, now: Instant, id: TaskId) -> bool {
        let Some(e) = self.tasks.get(id) else {
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
                self.finish(id, Err(Error::Rejected(kind)));
                false
            }
        }
    }

    /// An attempt's timers: the adaptive layer's if `adaptive`, else Mars's
    /// formulas with the machine's dynamic-timeout state; a long poll's
    /// from the task.
    fn exchange_timeouts(&self, input: &AttemptInput, adaptive: bool) -> ExchangeTimeouts {
        let t = &self.timeouts;
        let (first_packet, read_write, packet_gap) = if adaptive {
            (
                t.first_packet_timeout(input),
                t.read_write_timeout(input),
                t.packet_gap_timeout(input.net),
            )
        } else {
            let cfg = t.config();
            let f = crate::timeout::first_packet_timeout(cfg, input);
            (
                f,
                crate::timeout::read_write_timeout(cfg, input.net, f),
                crate::timeout::packet_gap_timeout(cfg, input.net),
            )
        };
        ExchangeTimeouts {
            first_packet,
            read_write,
            packet_gap,
            long_polling: input.long_polling,
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

    /// Feeds an attempt failure to the timeout machine.
    fn note_failure(&mut self, now: Instant, error: &Error) {
        if matches!(error, Error::Connect { .. }) {
            self.rtt.race_failed();
        }
        match error {
            Error::Timeout(
                kind @ (TimeoutKind::FirstPacket
                | TimeoutKind::LongPolling
                | TimeoutKind::PacketGap
                | TimeoutKind::ReadWrite),
            ) => self.timeouts.on_timeout(now, *kind),
            Error::Timeout(TimeoutKind::Task)
            | Error::Cancelled
            | Error::Shutdown
            | Error::Local(_)
            | Error::Rejected(_) => {}
            _ => self.timeouts.on_failure(now),
        }
    }

    /// Starts a short-link attempt. Returns whether the task left the queue
    /// (started, or ended by a limit).
    fn start_short(&mut self, now: Instant, id: TaskId) -> bool {
        if !self.tasks.contains(id) {
            return false;
        }
        let ep = self.config.short_link.clone();
        // A task's own host replaces the configured hosts (with or without
        // their own ports).
        let (hosts, host_ports) = match self.tasks.get(id).and_then(|e| e.task.host.clone()) {
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
        let Some(candidates) = self.candidate_list(now, &sources, width, cycling) else {
            return false; // waiting for a resolve answer
        };
        if let Some(e) = self.tasks.get_mut(id) {
            e.build_attempt_body(id, Channel::Short);
        }
        if !self.pass_limits(now, id) {
            return true;
        }
        let Some(e) = self.tasks.get(id) else {
            return true;
        };
        let input = self.attempt_input(e, self.tasks.short_running());
        let timeouts = self.exchange_timeouts(&input, true);
        let req = ExchangeRequest {
            candidates,
            host: host_header,
            cgi: e.task.cgi.clone(),
            headers: e.task.headers.clone(),
            body: e.task.body.clone(),
            rtt_hint: self.rtt.hint(),
            timeouts,
            deadline: Some(e.deadline),
            early_data: self.config.early_data && e.task.early_data,
        };
        let pooled = if e.task.headers.is_empty() || !pool::wants_keep_alive(&e.task) {
            None
        } else {
            self.pool.take(now, &req.candidates)
        };
        if let Some((conn, _)) = pooled {
            self.out.hand_over(conn, Owner::Short(id));
        }
        let hedging = self.config.hedge.is_some();
        let attempt = ShortAttempt::start(
            now,
            &self.config.exchange,
            req,
            hedging,
            pooled,
            &mut self.ids,
        );
        self.tasks
            .begin_attempt(now, id, On::Short(Box::new(attempt)));
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

    fn short_finished(&mut self, now: Instant, id: TaskId, result: ExchangeResult) {
        let Some(mut attempt) = self.tasks.end_attempt(id) else {
            return;
        };
        let On::Short(short) = &mut attempt.on else {
            return;
        };
        if let Some(kept) = result.kept {
            self.pool.put(now, kept, self.shut_down, &mut self.out);
        }
        let hedged = short.close(now, Owner::Short(id), &mut self.out);
        let Some(e) = self.tasks.get(id) else {
            return;
        };
        let report = e.short_report(id, attempt.started, now, &result, hedged);
        let cmd_id = e.task.cmd_id;
        let send_len = e.task.body.len();
        let class = e.class;
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
                    headers: resp.headers.into(),
                };
                self.respond(id, response, report);
                self.replay_zombies(now);
            }
            Err(error) => {
                self.note_failure(now, &error);
                if matches!(error, Error::Connect { .. } | Error::Dns(_)) {
                    // The addresses did not work: ask again next time.
                    let hosts = self.short_hosts(id);
                    self.candidates.forget_hosts(&hosts);
                }
                let timed_out = matches!(error, Error::Timeout(_));
                let stale = result.reused
                    && result.first_packet_after.is_none()
                    && !matches!(error, Error::Timeout(TimeoutKind::Task) | Error::Cancelled);
                // A dead pooled connection: Mars turns the pool off.
                let free =
                    stale && self.pool.stale_reuse(now, timed_out, &mut self.out) == Some(true);
                if free {
                    self.out.report(report);
                    let how = Retry::on(Channel::Short, true, Some(Duration::ZERO));
                    self.retry_or_end(now, id, error, how);
                    return;
                }
                if error == Error::Timeout(TimeoutKind::Task) {
                    self.out.report(report);
                    self.end_failed(now, id, error);
                } else if result.connect_deterministic && self.refusal_ends(class) {
                    // Every candidate answered no: a retry, a replay or the
                    // rest of the deadline would meet the same answers.
                    self.out.report(report);
                    self.tasks.dequeue(id);
                    self.finish(id, Err(error));
                } else {
                    self.attempt_failed(now, id, error, Channel::Short, Some(report));
                }
            }
        }
    }

    /// Sends a task on the (connected) long link.
    fn start_long(&mut self, now: Instant, id: TaskId) -> bool {
        if let Some(e) = self.tasks.get_mut(id) {
            e.build_attempt_body(id, Channel::Long);
        }
        if !self.pass_limits(now, id) {
            return true;
        }
        let Some(e) = self.tasks.get(id) else {
            return true;
        };
        let input = self.attempt_input(e, self.long_in_flight());
        let adaptive = self.config.long_link_adaptive_timeouts;
        // A long poll has no meaning on the long link: its frame waits for
        // its answer under the usual timers.
        let timeouts = ExchangeTimeouts {
            long_polling: None,
            ..self.exchange_timeouts(&input, adaptive)
        };
        let (cmd_id, body, deadline, send_only) = (
            e.task.cmd_id,
            e.task.body.clone(),
            e.deadline,
            e.task.send_only,
        );
        let Some(long) = self.long.get_mut() else {
            return false;
        };
        match long.send_task(now, id, cmd_id, body, timeouts, Some(deadline), send_only) {
            Ok(()) => {
                self.tasks.begin_attempt(now, id, On::Long);
                self.pump_long(now);
                true
            }
            Err(SendError::NotConnected | SendError::TooManyInFlight) => false,
            Err(SendError::TooLarge { .. }) => {
                self.finish(id, Err(ProtocolError::FrameTooLarge.into()));
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

    fn long_connect(&mut self, now: Instant) {
        let Some(ep) = self.config.long_link.clone() else {
            return;
        };
        self.long.set_refusal(None);
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
        let Some(candidates) = self.candidate_list(now, &sources, max, cycling) else {
            self.long.set_awaiting_resolve(true);
            return;
        };
        self.long.set_awaiting_resolve(false);
        let rtt = self.rtt.hint();
        if let Some(long) = self.long.get_mut() {
            long.connect(now, candidates, rtt, &mut self.ids);
            self.out.event(Event::LongLink(LinkStatus::Connecting));
        }
        self.pump_long(now);
    }

    /// Drains the long link's events.
    fn pump_long(&mut self, now: Instant) {
        loop {
            let Some(event) = self.long.get_mut().and_then(LongLink::poll_event) else {
                return;
            };
            match event {
                LongLinkEvent::Io(io) => self.out.io(Owner::Long, io),
                LongLinkEvent::WantConnect => {
                    if !self.shut_down {
                        self.long_connect(now);
                    }
                }
                LongLinkEvent::Connected { addr, connect_time } => {
                    self.connect_sample(connect_time);
                    self.long.connected_to(addr);
                    self.out.link(LinkStatus::Connected { addr });
                    self.replay_zombies(now);
                }
                LongLinkEvent::Disconnected {
                    error,
                    deterministic,
                } => {
                    if matches!(error, Some(Error::Connect { .. } | Error::Dns(_))) {
                        let hosts = self
                            .config
                            .long_link
                            .as_ref()
                            .map(|l| l.hosts.clone())
                            .unwrap_or_default();
                        self.candidates.forget_hosts(&hosts);
                    }
                    self.out.link(LinkStatus::Disconnected);
                    let refused = deterministic && self.config.connect_refusal_ends_task;
                    self.long.set_refusal(error.clone().filter(|_| refused));
                    if let Some(error) = error.filter(|e| refused || ends_long_waiters(e)) {
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
                    let Some((started, e)) = self.long_attempt(task) else {
                        continue;
                    };
                    let cmd_id = e.task.cmd_id;
                    let report = e.long_report(task, started, now, self.long.endpoint(), None);
                    self.tasks.end_attempt(task);
                    self.out.report(report);
                    self.finish(
                        task,
                        Ok(Response {
                            body: Bytes::new(),
                            status: None,
                            cmd_id,
                            headers: Headers::default(),
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
                    let Some((started, e)) = self.long_attempt(task) else {
                        continue;
                    };
                    let send_len = e.task.body.len();
                    let report = Report {
                        first_packet_after,
                        bytes_received,
                        ..e.long_report(task, started, now, self.long.endpoint(), None)
                    };
                    let cost = now - started;
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
                        headers: Headers::default(),
                    };
                    self.tasks.end_attempt(task);
                    self.respond(task, response, report);
                    self.replay_zombies(now);
                }
                LongLinkEvent::TaskFailed {
                    task,
                    error,
                    timeout,
                } => {
                    let Some((started, e)) = self.long_attempt(task) else {
                        continue;
                    };
                    let report = Report {
                        timeout,
                        ..e.long_report(
                            task,
                            started,
                            now,
                            self.long.endpoint(),
                            Some(error.clone()),
                        )
                    };
                    self.note_failure(now, &error);
                    self.tasks.end_attempt(task);
                    if error == Error::Timeout(TimeoutKind::Task) {
                        self.out.report(report);
                        self.end_failed(now, task, error);
                    } else {
                        self.attempt_failed(now, task, error, Channel::Long, Some(report));
                    }
                }
                LongLinkEvent::Push { cmd_id, body } => {
                    self.out.event(Event::Push { cmd_id, body });
                }
                LongLinkEvent::AskIdentify => self.out.event(Event::AskIdentify),
                LongLinkEvent::IdentifyResponse { cmd_id, body } => {
                    self.out.event(Event::IdentifyResponse { cmd_id, body });
                }
            }
        }
    }

    /// A response arrived for `id`: end the task with it, or, if the task
    /// asked to be judged, hold it and ask the app.
    fn respond(&mut self, id: TaskId, response: Response, report: Report) {
        let Some(e) = self.tasks.get(id) else {
            return;
        };
        if !e.task.judge {
            self.out.report(report);
            self.finish(id, Ok(response));
            return;
        }
        let request = JudgeRequest {
            id,
            attempt: e.attempts,
            channel: report.channel,
            user_tag: e.task.user_tag,
            response: response.clone(),
        };
        self.tasks.judging(id, Pending { response, report });
        self.out.event(Event::Judge(Box::new(request)));
    }

    /// The auth key a session timeout on `id` revokes: the one it waits
    /// for, or (a task that needs no auth) the one it would.
    fn source_auth_key(&self, id: TaskId) -> Option<AuthKey> {
        let e = self.tasks.get(id)?;
        Some(match &e.gate {
            Some(key) => (**key).clone(),
            None => AuthKey::of(&e.task, e.class == Class::LongOnly, &self.config),
        })
    }

    /// Stops every task (but `source`) with an attempt in flight or a
    /// response awaiting a verdict, within `scope`, and retries it (using
    /// one of its retries) or ends it with [`Error::Decode`]. Returns
    /// whether any of them was on the long link.
    fn redo_running(
        &mut self,
        now: Instant,
        source: TaskId,
        scope: &Scope,
        delay: Option<Duration>,
    ) -> bool {
        let mut hit: Vec<(TaskId, Channel)> = self
            .tasks
            .iter()
            .filter(|(id, _)| *id != source)
            .filter_map(|(id, e)| Some((id, e, e.busy_channel()?)))
            .filter(|(_, e, channel)| scope.covers(&e.task, *channel))
            .map(|(id, _, channel)| (id, channel))
            .collect();
        // In id order whatever the task table's iteration order.
        hit.sort_unstable_by_key(|(id, _)| *id);
        let mut on_long = false;
        for (id, channel) in hit {
            on_long |= channel == Channel::Long;
            self.stop_with_report(now, id, Error::Decode);
            self.retry_or_end(now, id, Error::Decode, Retry::on(channel, false, delay));
        }
        on_long
    }

    /// Before the long link goes: every task that can only use it ends
    /// now (a response awaiting a verdict is left to the verdict: a retry
    /// then ends it); every other task the long link would carry is moved to
    /// the short link (one pass over the tasks: a rare command). Tasks of
    /// either link running on it are interrupted by the disconnect after.
    fn leave_long_link(&mut self, now: Instant) {
        let mut long_class: Vec<(TaskId, bool, bool)> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.class == Class::LongOnly)
            .map(|(id, e)| {
                let may_go_short = e.task.effective_channel().is_ok_and(Channel::allows_short);
                (id, may_go_short, matches!(e.stage, Stage::Judging(_)))
            })
            .collect();
        // In id order whatever the task table's iteration order.
        long_class.sort_unstable_by_key(|(id, ..)| *id);
        let gone: Error = LocalError::LongLinkDisabled.into();
        for (id, may_go_short, judging) in long_class {
            if may_go_short {
                let Some(e) = self.tasks.get(id) else {
                    continue;
                };
                let gate = e
                    .gate
                    .as_ref()
                    .map(|_| Arc::new(AuthKey::of(&e.task, false, &self.config)));
                self.tasks.reclass(id, Class::ShortOnly, gate);
            } else if !judging {
                self.stop_with_report(now, id, gone.clone());
                self.finish(id, Err(gone.clone()));
            }
        }
    }

    /// Stops every running short-link attempt as interrupted and lets each
    /// task retry or end (a network change and [`redo_tasks`](Self::redo_tasks)).
    fn redo_short_attempts(&mut self, now: Instant) {
        let running: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.short_attempt().is_some())
            .map(|(id, _)| id)
            .collect();
        for id in running {
            if let Some(Stopped::Running(attempt)) = self.stop_attempt(now, id) {
                let error: Error = LocalError::Interrupted.into();
                let report = self.tasks.get(id).map(|e| {
                    e.bare_report(
                        id,
                        attempt.channel(),
                        attempt.started,
                        now,
                        Some(error.clone()),
                    )
                });
                self.attempt_failed(now, id, error, Channel::Short, report);
            }
        }
    }

    // ---- task lifecycle ----

    /// Ends a task: the one place a `TaskFinished` is emitted.
    fn finish(&mut self, id: TaskId, outcome: Result<Response, Error>) {
        let Some(entry) = self.tasks.remove(id) else {
            return;
        };
        self.out.event(Event::TaskFinished {
            id,
            outcome,
            attempts: entry.attempts,
            user_tag: entry.task.user_tag,
        });
    }

    /// Stops the running attempt of `id` (if any) and reports it as ended by `error`.
    fn stop_with_report(&mut self, now: Instant, id: TaskId, error: Error) {
        let report = match self.stop_attempt(now, id) {
            Some(Stopped::Running(attempt)) => self
                .tasks
                .get(id)
                .map(|e| e.bare_report(id, attempt.channel(), attempt.started, now, Some(error))),
            // The attempt's own report, now with how it ended.
            Some(Stopped::Judged(mut p)) => {
                p.report.ended = now;
                p.report.error = Some(error);
                Some(p.report)
            }
            None => None,
        };
        if let Some(r) = report {
            self.out.report(r);
        }
    }

    /// Stops whatever attempt `id` has running (or the response it holds
    /// for a verdict), closing what it holds, without deciding its fate.
    fn stop_attempt(&mut self, now: Instant, id: TaskId) -> Option<Stopped> {
        let mut stopped = self.tasks.stop(id);
        if let Some(Stopped::Running(attempt)) = &mut stopped {
            match &mut attempt.on {
                On::Short(short) => short.stop(now, Owner::Short(id), &mut self.out),
                On::Long => {
                    if let Some(long) = self.long.get_mut() {
                        long.cancel_task(now, id);
                    }
                }
            }
        }
        stopped
    }

    /// The task failed for good: park it (zombie) if it may, else finish it.
    fn end_failed(&mut self, now: Instant, id: TaskId, error: Error) {
        let parkable = !matches!(
            error,
            Error::Cancelled | Error::Shutdown | Error::Rejected(_) | Error::Decode
        ) && !matches!(error, Error::Local(LocalError::InvalidTask(_)));
        if parkable && self.tasks.may_park(id, now) {
            self.tasks.park(now, id, error);
        } else {
            self.tasks.dequeue(id);
            self.finish(id, Err(error));
        }
    }

    /// Replays every parked task now (Mars: one more attempt, no retries, a
    /// fresh task timeout within the remaining budget).
    fn replay_zombies(&mut self, now: Instant) {
        if !self.tasks.any_parked() {
            return;
        }
        for id in self.tasks.parked() {
            self.replay(now, id);
        }
    }

    fn replay(&mut self, now: Instant, id: TaskId) {
        let Some(e) = self.tasks.get(id) else {
            return;
        };
        let fresh = task_timeout(
            &self.config.timeouts,
            &TaskTimeoutInput {
                server_cost: e.task.server_process_cost,
                retry_count: 0,
                total_timeout: None,
                long_polling: e.task.long_polling,
            },
        );
        self.tasks.replay(now, id, fresh);
    }

    // ---- connections and what they say ----

    fn conn_event(&mut self, now: Instant, conn: ConnId, event: ConnEvent) {
        let Some(owner) = self.out.owner(conn) else {
            return; // closed by us, or never ours
        };
        if matches!(event, ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_)) {
            self.out.ended(conn);
        }
        match owner {
            Owner::Short(id) => {
                if let Some(a) = self.tasks.get_mut(id).and_then(Entry::short_attempt_mut) {
                    a.handle_event(now, conn, event, &mut self.ids);
                }
                self.pump_short(now, id);
            }
            Owner::Long => {
                if let Some(long) = self.long.get_mut() {
                    long.handle_event(now, conn, event, &mut self.ids);
                }
                self.pump_long(now);
            }
            Owner::Pool => self.pool.event(conn, &event, &mut self.out),
            Owner::Verdict => {
                if let Some(r) = self.probes.event(conn, &event, &mut self.out) {
                    self.endpoint_report(now, r);
                }
            }
        }
    }

    fn record_endpoint(&mut self, now: Instant, addr: SocketAddr, ok: bool) {
        // Mars ignores updates while there is no network (§4.2).
        if self.network != NetworkKind::None {
            self.candidates.record(now, addr, ok);
        }
    }

    /// A connect succeeded after `t`: a sample for the RTT hint and the
    /// timeouts, unless Karn's rule says otherwise ([`RttHint::connected`]).
    fn connect_sample(&mut self, t: Duration) {
        if let Some(t) = self.rtt.connected(t) {
            self.timeouts.on_connect_sample(t);
        }
    }

    /// Records a short-link exchange's endpoint outcome.
    fn endpoint_report(&mut self, now: Instant, r: EndpointReport) {
        if let Some(t) = r.connect_time.filter(|_| r.ok) {
            self.connect_sample(t);
        }
        self.record_endpoint(now, r.addr, r.ok);
        if r.ok {
            // A working connection is a sign of connectivity.
            self.replay_zombies(now);
        }
    }

    /// The candidate list for `src`, or `None` while a resolve answer is
    /// awaited (the app is asked for the hosts it has not been yet).
    fn candidate_list(
        &mut self,
        now: Instant,
        src: &Sources<'_>,
        max: usize,
        cycling: bool,
    ) -> Option<Vec<SocketAddr>> {
        let mut ask = Vec::new();
        let list = self.candidates.list(now, src, max, cycling, &mut ask);
        for host in &ask {
            self.out.resolve(host);
        }
        list
    }

    /// The hosts a short-link task resolves: its own, else the configured
    /// ones (with and without their own ports).
    fn short_hosts(&self, id: TaskId) -> Vec<String> {
        match self.tasks.get(id).and_then(|e| e.task.host.clone()) {
            Some(h) => vec![h],
            None => {
                let ep = &self.config.short_link;
                let named = ep.host_ports.iter().map(|(h, _)| h.clone());
                ep.hosts.iter().cloned().chain(named).collect()
            }
        }
    }

    fn resolved(&mut self, now: Instant, host: String, addrs: Vec<IpAddr>) {
        // Not asked (or forgotten): ignored.
        if self.candidates.resolved(now, &host, addrs) && self.long.awaits_resolve() {
            self.long_connect(now);
        }
    }

    // ---- short-link attempts ----

    /// Drains a short attempt's actions, then re-reads its timers.
    fn pump_short(&mut self, now: Instant, id: TaskId) {
        while let Some(a) = self.tasks.get_mut(id).and_then(Entry::short_attempt_mut) {
            let Some(action) = a.poll_action() else {
                break;
            };
            match action {
                AttemptAction::Exchange(ExchangeAction::Io(io)) => {
                    self.out.io(Owner::Short(id), io)
                }
                AttemptAction::Exchange(ExchangeAction::Endpoint(r)) => {
                    self.endpoint_report(now, r)
                }
                AttemptAction::Exchange(ExchangeAction::Linger { conn, addr, until }) => {
                    let closing = self.shut_down;
                    self.probes
                        .take(now, conn, addr, until, closing, &mut self.out);
                }
                AttemptAction::Exchange(ExchangeAction::Finished(result)) => {
                    return self.short_finished(now, id, *result)
                }
                AttemptAction::HedgeWon(result) => {
                    // Stop the first exchange, then settle the attempt with
                    // the hedge's result.
                    a.cancel_first(now, Owner::Short(id), &mut self.out);
                    return self.short_finished(now, id, *result);
                }
            }
        }
        self.tasks
            .refresh_attempt_timers(id, self.config.hedge.as_ref());
    }

    /// Starts the hedges that are due at `now`.
    fn start_due_hedges(&mut self, now: Instant) {
        let Some(policy) = self.config.hedge else {
            return;
        };
        for id in self.tasks.hedges_due(now, &policy, self.rtt.hint()) {
            let rtt = self.rtt.hint();
            let Some(a) = self.tasks.get_mut(id).and_then(Entry::short_attempt_mut) else {
                continue;
            };
            a.start_hedge(now, &self.config.exchange, rtt, &mut self.ids);
            self.pump_short(now, id);
        }
    }

    // ---- long link ----

    /// The task's running long-link attempt (its start), with its entry.
    fn long_attempt(&self, task: TaskId) -> Option<(Instant, &Entry)> {
        let e = self.tasks.get(task)?;
        match e.running()? {
            a if matches!(a.on, On::Long) => Some((a.started, e)),
            _ => None,
        }
    }

    /// Ends `id`, still queued for the long link only, with the refusal the
    /// last long-link connect met when no connect has started since (the
    /// monitor did not reconnect for it): the next round is seconds away
    /// and would most likely meet the same answer, so the task is told now
    /// ([`Config::connect_refusal_ends_task`]).
    fn end_if_refused(&mut self, id: TaskId) {
        let Some(refusal) = self.long.refusal() else {
            return;
        };
        let waits = self
            .tasks
            .get(id)
            .is_some_and(|e| e.class == Class::LongOnly && matches!(e.stage, Stage::Queued(_)));
        if waits {
            let error = refusal.clone();
            self.finish(id, Err(error));
        }
    }

    /// Whether a task of `class` whose short-link connect met only
    /// deterministic failures ends now ([`Config::connect_refusal_ends_task`]):
    /// it can use no other link.
    fn refusal_ends(&self, class: Class) -> bool {
        let no_long = self.config.long_link.is_none() || self.long.is_disabled();
        self.config.connect_refusal_ends_task
            && (class == Class::ShortOnly || (class == Class::Both && no_long))
    }

    /// Ends every queued task that can only use the long link with `error`
    /// (a rare event: one pass over the tasks), and the parked ones too
    /// under [`Config::connect_refusal_ends_task`]: their replay waits for a
    /// connect that was just refused.
    fn fail_long_waiters(&mut self, error: Error) {
        let parked_too = self.config.connect_refusal_ends_task;
        let waiting: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, e)| {
                e.class == Class::LongOnly
                    && (matches!(e.stage, Stage::Queued(_))
                        || (parked_too && matches!(e.stage, Stage::Parked { .. })))
            })
            .map(|(id, _)| id)
            .collect();
        for id in waiting {
            self.finish(id, Err(error.clone()));
        }
    }
}

/// Errors that end a task whatever its retries.
fn shutting(error: &Error) -> bool {
    matches!(error, Error::Shutdown | Error::Cancelled)
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
