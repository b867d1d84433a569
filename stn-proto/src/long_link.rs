//! The long link: one persistent TCP connection carrying pipelined tasks,
//! server pushes and a heartbeat (Mars `LongLink` + `LongLinkTaskManager` +
//! `LongLinkConnectMonitor`; docs/mars-stn.md §5, §2.3, §8).
//!
//! [`LongLink`] is a sans-IO machine. It
//! - connects by racing the candidates the engine gives it ([`Race`]), each
//!   racing attempt on its own [`ConnId`];
//! - frames tasks with the long-link codec (seq = task id) and writes them at
//!   once, many in flight ([`LongLinkConfig::max_in_flight_tasks`]);
//! - decodes the received bytes incrementally (memory bounded by
//!   [`CodecConfig`]): seq 0 is a server push, noop and identify responses are
//!   consumed, every other frame is matched by seq to a running task;
//! - keeps the connection alive with noops and asks the app for an identify
//!   packet at the first noop slot ([`HeartbeatConfig`], §5.3–5.4);
//! - times every running task from the moment its frame is written
//!   (first-packet, packet-gap, read-write; [`ExchangeTimeouts`]); under
//!   stn, a task still waiting for its first byte is timed from the later of
//!   its write and the last byte of any task's response, so a pipelined
//!   queue behind a link that keeps answering does not read as a dead link
//!   ([`LongLinkConfig::wait_follows_link_progress`]);
//! - decides when to reconnect with the [`ConnectMonitor`] (§5.5), asking the
//!   engine for candidates with [`LongLinkEvent::WantConnect`].
//!
//! # Failure rules
//!
//! | cause | the link | running tasks get |
//! |---|---|---|
//! | a task's first-packet / packet-gap / read-write / long-polling timer | closed, endpoint reported failed | every timed-out task its own [`Error::Timeout`]; every other task [`LocalError::Interrupted`] (Mars §2.3 batch error: "src task gets the code, others code 0") |
//! | a task's deadline | stn: only that task fails ([`TimeoutKind::Task`]); Mars profiles: batch error as above ([`LongLinkConfig::batch_on_task_deadline`]) | |
//! | decode error | closed, endpoint failed | [`Error::Protocol`] each |
//! | noop / identify response timeout | closed, endpoint failed | [`TimeoutKind::Heartbeat`] each (Mars `kEctSocketRecvErr`) |
//! | remote close / reset | already closed, endpoint failed | [`SocketError::ClosedByPeer`] / [`SocketError::Reset`] each |
//! | [`LongLink::disconnect`], [`LongLink::on_network_change`] | closed | [`LocalError::Interrupted`] each (Mars `kEctLocalCancel`); [`Error::Shutdown`] for [`DisconnectReason::Shutdown`] |
//!
//! Bystanders of a batch failure get [`LocalError::Interrupted`] because Mars
//! gives them no error code of their own (code 0 under `kEctNetMsgXP`): the
//! error is retryable and says "this attempt was cut short, not failed on its
//! own merits", so the engine retries them without blaming them.
//!
//! A connect that fails ends with [`LongLinkEvent::Disconnected`] carrying
//! [`Error::Connect`] (the last address tried and its error), or
//! [`DnsError::NoCandidates`] for an empty list, and says whether every
//! candidate failed deterministically (refused, or a permanent TLS failure).
//!
//! # Heartbeat and identify
//!
//! The [`Heartbeat`] machine decides; this link writes the frames. At connect
//! the first slot asks the app ([`LongLinkEvent::AskIdentify`]); the identify
//! packet goes out when the app answers with [`LongLink::identify_answer`].
//! The first noop comes at the next slot, one interval after connect, as in
//! Mars (an app that never answers gets it too): stn never writes a noop
//! right behind or before the first request on a new link. Every task write re-arms the 3.5 min interval. The
//! connect time is given to the heartbeat as its RTT (stn scales the noop
//! timeout from it). A received identify response completes identify for the
//! connection and is handed to the app as [`LongLinkEvent::IdentifyResponse`].
//!
//! Every task accepted by [`LongLink::send_task`] gets exactly one terminal
//! event — [`LongLinkEvent::TaskResponse`], [`LongLinkEvent::TaskFailed`] or
//! (send-only tasks) [`LongLinkEvent::TaskSent`] — unless it is cancelled
//! first with [`LongLink::cancel_task`]. Every [`ConnId`] in an
//! [`IoAction::Connect`] is eventually named in an [`IoAction::Close`] or
//! answered by its terminal event (`ConnectFailed` or `Closed`); no
//! [`IoAction`] names a connection after that. Events for old connections are
//! ignored.
//!
//! **After every call, drain [`LongLink::poll_event`] until `None`, then read
//! [`LongLink::poll_timeout`].** Answer every [`LongLinkEvent::WantConnect`]
//! with [`LongLink::connect`] (an empty candidate list is fine: the attempt
//! fails at once and the monitor schedules the next).
//!
//! (The example runs as the unit test `examples::long_link`.)

use std::collections::{BTreeMap, VecDeque};

use bytes::{Bytes, BytesMut};

use crate::codec::longlink::{CodecConfig, DecodeError, Frame, FrameDecoder, IDENTIFY_SEQ};
use crate::codec::{LongLinkCodec, MarsCodec, SharedCodec};
use crate::error::{DnsError, Error, LocalError, ProtocolError, SocketError, TimeoutKind};
use crate::io::{CloseReason, ConnEvent, ConnId, ConnIds, IoAction};
use crate::monitor::{ConnectMonitor, ConnectMonitorConfig, MonitorAction};
use crate::net::{ConnectError, SocketAddr};
use crate::race::{AttemptId, FailReason, Race, RaceAction, RaceConfig};
use crate::task::TaskId;
use crate::time::{Duration, Instant, MonotonicClock};

mod in_flight;
#[cfg(test)]
mod tests;

use in_flight::{Fired, InFlight, Running};

use crate::heartbeat::{Heartbeat, HeartbeatAction, IdentifyState};
pub(crate) use crate::heartbeat::{HeartbeatConfig, IdentifyDecision};
pub(crate) use crate::short_link::{EndpointReport, ExchangeTimeouts};
use crate::smart_heartbeat::{AppState, LinkLoss, SmartHeartbeat};

/// Configuration of a `LongLink`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongLinkConfig {
    /// How to race the candidates when connecting.
    pub race: RaceConfig,
    /// Framing caps and the default codec's settings: `max_body_len` bounds
    /// every codec's decoder (and refuses larger task bodies);
    /// `client_version` and `max_head_len` are Mars's 20-byte header's own.
    pub codec: CodecConfig,
    /// The frame format: `None` (the default) is Mars's 20-byte header
    /// ([`MarsCodec`]) with the settings in [`codec`](Self::codec); `Some`
    /// plugs in a deployment's own packer (Mars `LongLinkEncoder`), which
    /// also says which frames are noops, pushes and identify answers.
    pub frame_codec: Option<SharedCodec>,
    /// Noop interval and timeouts, identify.
    pub heartbeat: HeartbeatConfig,
    /// When to reconnect.
    pub monitor: ConnectMonitorConfig,
    /// Most tasks awaiting a response at once; `LongLink::send_task`
    /// refuses more with `SendError::TooManyInFlight`. Mars has no limit;
    /// one bounds memory and the size of a batch failure.
    pub max_in_flight_tasks: usize,
    /// Whether a task whose own deadline passes while it runs fails every
    /// running task and drops the link (Mars: its task-timeout check triggers
    /// the batch error) or only itself (stn: the deadline is the app's budget,
    /// not evidence against the link — the per-attempt timers are).
    pub batch_on_task_deadline: bool,
    /// Whether a task that has no byte of its response yet is timed
    /// (first-packet, long-polling, read-write) from the later of its write
    /// and the last response byte of any task on the link (stn), or from its
    /// write alone (Mars). Tasks pipelined behind others wait for the server
    /// to get to them: while responses keep arriving the link is alive, and
    /// timing the last task of a deep queue from its write would tear down a
    /// healthy link and redo every task on it. A link that stops answering
    /// still times out one first-packet timeout after its last response; a
    /// task's own deadline still ends it.
    pub wait_follows_link_progress: bool,
    // Whether the app starts in the foreground (for the monitor): the engine
    // sets it from `Config::foreground`, so it is not a knob of its own.
    pub(crate) foreground: bool,
}

impl LongLinkConfig {
    /// The codec in use: [`frame_codec`](Self::frame_codec), or Mars's
    /// header with [`codec`](Self::codec)'s settings.
    pub fn shared_codec(&self) -> SharedCodec {
        self.frame_codec
            .clone()
            .unwrap_or_else(|| SharedCodec::new(MarsCodec::new(self.codec)))
    }
}

/// Where the long link stands (Mars `kConnectIdle`, `kConnecting`,
/// `kConnected`, `kDisConnected`/`kConnectFailed`).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum LinkState {
    /// Never connected.
    Idle,
    /// Racing the candidates.
    Connecting,
    /// Connected: tasks may be sent.
    Connected,
    /// The last connect failed or the link went down.
    Disconnected,
    /// [`DisconnectReason::Shutdown`]: down for good.
    Shutdown,
}

/// Why the caller takes the link down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum DisconnectReason {
    /// The app or engine asked (Mars user break); the monitor reconnects later.
    User,
    /// The network changed: same as `LongLink::on_network_change`.
    NetworkChange,
    /// Every task is being redone (Mars `RedoTasks`, `Disconnect(kReset)`);
    /// the monitor reconnects later.
    Reset,
    /// The engine shuts down: running tasks fail with [`Error::Shutdown`] and
    /// the link never connects again.
    Shutdown,
}

/// Why [`LongLink::send_task`] refused a task (nothing was written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SendError {
    /// The link is not connected.
    #[error("the long link is not connected")]
    NotConnected,
    /// [`LongLinkConfig::max_in_flight_tasks`] tasks are already running.
    #[error("too many tasks in flight on the long link")]
    TooManyInFlight,
    /// The id is reserved (0, noop, identify, ...).
    #[error("task id {0} is reserved")]
    ReservedId(TaskId),
    /// A task with this id is already running.
    #[error("task {0} is already running on the long link")]
    Duplicate(TaskId),
    /// The body exceeds the codec's cap (a peer with the same limits would
    /// drop the connection).
    #[error("task body of {len} bytes exceeds the long-link limit")]
    TooLarge {
        /// The body's length.
        len: usize,
    },
}

/// What the long link tells its owner; drain with `LongLink::poll_event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LongLinkEvent {
    /// A socket operation to perform.
    Io(IoAction),
    /// The monitor wants a connect: answer with `LongLink::connect`.
    WantConnect,
    /// The link is up.
    Connected {
        /// The endpoint.
        addr: SocketAddr,
        /// How long its TCP connect took.
        connect_time: Duration,
    },
    /// The link is down (or the connect failed). `error` is `None` when the
    /// caller took it down.
    Disconnected {
        /// Why, unless the caller asked.
        error: Option<Error>,
        /// The connect failed and its race tried every candidate and met
        /// only refusals and permanent TLS failures
        /// ([`ConnectError::is_deterministic`]): reconnecting at once would
        /// meet the same answers.
        deterministic: bool,
    },
    /// Feed the endpoint history: every racing attempt that ended with a
    /// verdict, and a failure of the established link caused by the peer.
    Endpoint(EndpointReport),
    /// A send-only task was written (Mars: OK once queued to the writer).
    TaskSent {
        /// The task.
        task: TaskId,
    },
    /// A task's response arrived.
    TaskResponse {
        /// The task.
        task: TaskId,
        /// The response frame's command id.
        cmd_id: u32,
        /// The response body.
        body: Bytes,
        /// From the write to the response's first byte (its header).
        first_packet_after: Option<Duration>,
        /// Bytes of the response frame (20-byte header plus body).
        bytes_received: u64,
    },
    /// A running task failed (see the module's failure rules).
    TaskFailed {
        /// The task.
        task: TaskId,
        /// Why.
        error: Error,
        /// When one of its own timers fired (first packet, packet gap,
        /// read-write, long poll), that timer's value.
        timeout: Option<Duration>,
    },
    /// A server push (seq 0).
    Push {
        /// Its command id.
        cmd_id: u32,
        /// Its body.
        body: Bytes,
    },
    /// The first noop slot of the connection: ask the app for an identify
    /// packet and answer with `LongLink::identify_answer`.
    AskIdentify,
    /// The response to the identify packet (Mars
    /// `OnLonglinkIdentifyResponse`), for the app.
    IdentifyResponse {
        /// Its command id.
        cmd_id: u32,
        /// Its body.
        body: Bytes,
    },
}

/// The established connection.
#[derive(Debug)]
struct Link {
    conn: ConnId,
    addr: SocketAddr,
    decoder: FrameDecoder,
    heartbeat: Heartbeat,
    tasks: InFlight,
    /// The last byte written or received (the idle time a middlebox sees).
    last_activity: Instant,
    /// Tasks waiting for the answer to a noop before they are written (the
    /// smart heartbeat's probe-first rule), in order.
    held: VecDeque<Held>,
}

/// A task accepted but not yet written (see [`Link::held`]).
#[derive(Debug)]
struct Held {
    task: TaskId,
    data: Bytes,
    timeouts: ExchangeTimeouts,
    deadline: Option<Instant>,
    send_only: bool,
}

/// The race in progress and the connections of its attempts.
#[derive(Debug)]
struct Connecting {
    race: Race,
    /// Attempt → its connection, while the attempt is open.
    conns: BTreeMap<AttemptId, ConnId>,
}

impl Connecting {
    fn attempt_of(&self, conn: ConnId) -> Option<AttemptId> {
        self.conns
            .iter()
            .find_map(|(a, c)| (*c == conn).then_some(*a))
    }
}

#[derive(Debug)]
enum Phase {
    Idle,
    Connecting(Box<Connecting>),
    Connected(Box<Link>),
    Disconnected,
    Shutdown,
}

/// Why the established link ends.
#[derive(Clone, Debug)]
enum End {
    /// Per-task timers fired: these tasks, each with its kind and value.
    Timeout(Vec<Fired>),
    Heartbeat,
    Protocol(ProtocolError),
    Remote(CloseReason),
    Local(DisconnectReason),
}

/// The long-link machine. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct LongLink {
    config: LongLinkConfig,
    /// `config.shared_codec()`, resolved once.
    codec: SharedCodec,
    clock: MonotonicClock,
    phase: Phase,
    monitor: ConnectMonitor,
    /// Picks the heartbeat interval per network, across connections.
    smart: SmartHeartbeat,
    /// The last teardown lost a probe: reconnect at once.
    reconnect_at_once: bool,
    events: VecDeque<LongLinkEvent>,
    unknown_frames: u64,
}

impl LongLink {
    /// A link that is down at `now`. The monitor wants a connect at once
    /// (Mars connects the long link at startup): the first
    /// [`handle_timeout`](Self::handle_timeout) emits
    /// [`LongLinkEvent::WantConnect`].
    pub(crate) fn new(now: Instant, config: LongLinkConfig) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        let monitor = ConnectMonitor::new(now, config.monitor.clone(), config.foreground);
        let smart = SmartHeartbeat::new(&config.heartbeat.smart, config.heartbeat.interval);
        LongLink {
            codec: config.shared_codec(),
            config,
            clock,
            phase: Phase::Idle,
            monitor,
            smart,
            reconnect_at_once: false,
            events: VecDeque::new(),
            unknown_frames: 0,
        }
    }

    /// Replaces the smart heartbeat (what an earlier long link learned).
    pub(crate) fn with_smart_heartbeat(mut self, smart: SmartHeartbeat) -> Self {
        self.smart = smart;
        self
    }

    /// The smart heartbeat, to keep when this link goes.
    pub(crate) fn into_smart_heartbeat(self) -> SmartHeartbeat {
        self.smart
    }

    /// The smart heartbeat, for its records.
    pub(crate) fn smart_heartbeat(&self) -> &SmartHeartbeat {
        &self.smart
    }

    /// The smart heartbeat, to import records.
    pub(crate) fn smart_heartbeat_mut(&mut self) -> &mut SmartHeartbeat {
        &mut self.smart
    }

    fn app_state(&self, now: Instant) -> AppState {
        let activity = self.monitor.activity();
        AppState {
            foreground: activity.is_foreground(),
            active: activity.is_active(now),
        }
    }

    /// Starts connecting: races `candidates` (in order) with the configured
    /// [`RaceConfig`]. Ignored while connecting, connected or shut down.
    pub(crate) fn connect(
        &mut self,
        now: Instant,
        candidates: Vec<SocketAddr>,
        rtt_hint: Option<Duration>,
        ids: &mut ConnIds,
    ) {
        let now = self.clock.observe(now);
        if !matches!(self.phase, Phase::Idle | Phase::Disconnected) {
            return;
        }
        self.monitor.on_connect_started(now);
        let race = Race::new(now, self.config.race, candidates, rtt_hint, None);
        self.phase = Phase::Connecting(Box::new(Connecting {
            race,
            conns: BTreeMap::new(),
        }));
        self.drain_race(now, Some(ids));
        self.drain_monitor();
    }

    /// Takes the link down (or abandons the connect in progress). Running
    /// tasks fail with [`LocalError::Interrupted`] ([`Error::Shutdown`] for
    /// [`DisconnectReason::Shutdown`]), then
    /// [`LongLinkEvent::Disconnected`] with no error. After `User` and `Reset`
    /// the monitor schedules the reconnect; `NetworkChange` reconnects at once
    /// ([`on_network_change`](Self::on_network_change)); `Shutdown` never.
    pub(crate) fn disconnect(&mut self, now: Instant, reason: DisconnectReason) {
        let now = self.clock.observe(now);
        match reason {
            DisconnectReason::NetworkChange => self.on_network_change(now),
            DisconnectReason::User | DisconnectReason::Reset => {
                if self.teardown(now, End::Local(reason)) {
                    self.monitor.on_disconnected(now);
                }
                self.drain_monitor();
            }
            DisconnectReason::Shutdown => {
                self.teardown(now, End::Local(reason));
                self.phase = Phase::Shutdown;
            }
        }
    }

    /// The network changed (Mars §8): the link (or connect) is torn down,
    /// running tasks fail with [`LocalError::Interrupted`], and
    /// [`LongLinkEvent::WantConnect`] follows at once.
    pub(crate) fn on_network_change(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Shutdown) {
            return;
        }
        self.teardown(now, End::Local(DisconnectReason::NetworkChange));
        self.monitor.on_network_change(now);
        self.drain_monitor();
    }

    #[cfg(test)]
    /// Where the link stands.
    pub(crate) fn state(&self) -> LinkState {
        match self.phase {
            Phase::Idle => LinkState::Idle,
            Phase::Connecting(_) => LinkState::Connecting,
            Phase::Connected(_) => LinkState::Connected,
            Phase::Disconnected => LinkState::Disconnected,
            Phase::Shutdown => LinkState::Shutdown,
        }
    }

    /// Whether tasks may be sent.
    pub(crate) fn is_connected(&self) -> bool {
        matches!(self.phase, Phase::Connected(_))
    }

    #[cfg(test)]
    /// The connected endpoint, if connected.
    pub(crate) fn endpoint(&self) -> Option<SocketAddr> {
        match &self.phase {
            Phase::Connected(link) => Some(link.addr),
            _ => None,
        }
    }

    #[cfg(test)]
    /// The established connection, if connected.
    pub(crate) fn conn(&self) -> Option<ConnId> {
        match &self.phase {
            Phase::Connected(link) => Some(link.conn),
            _ => None,
        }
    }

    /// Writes `task`'s frame (seq = the task id) now; its timers start now.
    /// A `send_only` task completes at once with [`LongLinkEvent::TaskSent`]
    /// and is not tracked; any other awaits its response.
    ///
    /// # Errors
    ///
    /// [`SendError`] if the link is not connected, the in-flight cap is
    /// reached, the id is reserved or already running, or the body is too
    /// large. Nothing is written then.
    #[allow(clippy::too_many_arguments)] // the design's signature: one call per task
    pub(crate) fn send_task(
        &mut self,
        now: Instant,
        task: TaskId,
        cmd_id: u32,
        body: Bytes,
        timeouts: ExchangeTimeouts,
        deadline: Option<Instant>,
        send_only: bool,
    ) -> Result<(), SendError> {
        let now = self.clock.observe(now);
        if task.is_reserved() {
            return Err(SendError::ReservedId(task));
        }
        let app = self.app_state(now);
        let Phase::Connected(link) = &mut self.phase else {
            return Err(SendError::NotConnected);
        };
        if link.tasks.contains(task) || link.held.iter().any(|h| h.task == task) {
            return Err(SendError::Duplicate(task));
        }
        if !send_only && link.tasks.len() + link.held.len() >= self.config.max_in_flight_tasks {
            return Err(SendError::TooManyInFlight);
        }
        let len = body.len();
        let frame = Frame::new(cmd_id, task.get(), body);
        let data = encode(self.codec.get(), self.config.codec.max_body_len, &frame)
            .ok_or(SendError::TooLarge { len })?;
        let held = Held {
            task,
            data,
            timeouts,
            deadline,
            send_only,
        };
        let idle = now - link.last_activity;
        if !link.held.is_empty() || self.smart.must_probe_first(idle, app) {
            // The path may have forgotten this idle link: a noop goes
            // first, the task on its answer (or on the next connection).
            link.held.push_back(held);
            self.heartbeat_step(now, |hb, now| hb.probe(now));
            return Ok(());
        }
        self.write_task(now, held);
        Ok(())
    }

    /// Writes an accepted task's frame; its timers start now.
    fn write_task(&mut self, now: Instant, t: Held) {
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        self.events.push_back(LongLinkEvent::Io(IoAction::Send {
            conn: link.conn,
            data: t.data,
        }));
        link.last_activity = now;
        if t.send_only {
            self.events
                .push_back(LongLinkEvent::TaskSent { task: t.task });
        } else {
            link.tasks.insert(
                t.task,
                Running {
                    timeouts: t.timeouts,
                    deadline: t.deadline,
                    written_at: now,
                    first_byte_at: None,
                    last_byte_at: None,
                },
            );
        }
        // Every write re-arms the noop interval (Mars). An overdue noop
        // response may time out here, failing the task just written.
        self.heartbeat_step(now, |hb, now| hb.on_write(now));
    }

    /// Writes the held tasks, in order (their noop was answered).
    fn release_held(&mut self, now: Instant) {
        loop {
            let Phase::Connected(link) = &mut self.phase else {
                return;
            };
            let Some(t) = link.held.pop_front() else {
                return;
            };
            self.write_task(now, t);
        }
    }

    /// Forgets a running task: no event for it; a late response is dropped
    /// (counted in [`unknown_frames`](Self::unknown_frames)). Unknown ids are
    /// ignored.
    pub(crate) fn cancel_task(&mut self, now: Instant, task: TaskId) {
        self.clock.observe(now);
        if let Phase::Connected(link) = &mut self.phase {
            link.tasks.remove(task);
            link.held.retain(|h| h.task != task);
        }
    }

    /// Tasks awaiting their response (held ones included).
    pub(crate) fn in_flight(&self) -> usize {
        match &self.phase {
            Phase::Connected(link) => link.tasks.len() + link.held.len(),
            _ => 0,
        }
    }

    #[cfg(test)]
    /// Whether `task` is awaiting its response.
    pub(crate) fn is_running(&self, task: TaskId) -> bool {
        match &self.phase {
            Phase::Connected(link) => {
                link.tasks.contains(task) || link.held.iter().any(|h| h.task == task)
            }
            _ => false,
        }
    }

    #[cfg(test)]
    /// Received frames that matched nothing (unknown seq, a cancelled task's
    /// late response, an unrequested identify response). Noop responses are
    /// always consumed.
    pub(crate) fn unknown_frames(&self) -> u64 {
        self.unknown_frames
    }

    #[cfg(any(test, fuzzing))]
    /// Bytes the frame decoder holds (bounded by `20 + max_body_len`).
    pub(crate) fn decoder_buffered_len(&self) -> usize {
        match &self.phase {
            Phase::Connected(link) => link.decoder.buffered_len(),
            _ => 0,
        }
    }

    /// Feeds what happened on `conn`. Events for connections this link does
    /// not own (any more) are ignored.
    pub(crate) fn handle_event(
        &mut self,
        now: Instant,
        conn: ConnId,
        ev: ConnEvent,
        ids: &mut ConnIds,
    ) {
        let now = self.clock.observe(now);
        match &mut self.phase {
            Phase::Connecting(c) => {
                let Some(attempt) = c.attempt_of(conn) else {
                    return;
                };
                match ev {
                    ConnEvent::Connected => c.race.handle_connected(now, attempt),
                    ConnEvent::TcpConnected => c.race.handle_tcp_connected(now, attempt),
                    // The long link carries many tasks and its identify; it
                    // sends nothing before the handshake completes.
                    ConnEvent::EarlyData { .. } => return,
                    ConnEvent::ConnectFailed(error) => {
                        c.conns.remove(&attempt);
                        c.race.handle_failed(now, attempt, error);
                    }
                    ConnEvent::Closed(reason) => {
                        // Closed before the handshake completed: a failed connect.
                        c.conns.remove(&attempt);
                        let error = match reason {
                            CloseReason::Eof | CloseReason::Reset => ConnectError::Reset,
                            CloseReason::Error(code) => ConnectError::Other(code),
                            CloseReason::Tls(failure) => ConnectError::Tls(failure),
                        };
                        c.race.handle_failed(now, attempt, error);
                    }
                    // No data can precede the handshake; drop it.
                    ConnEvent::Received(_) => return,
                }
                self.drain_race(now, Some(ids));
            }
            Phase::Connected(link) if link.conn == conn => match ev {
                ConnEvent::Received(data) => self.on_received(now, data),
                ConnEvent::Closed(reason) => self.link_lost(now, End::Remote(reason)),
                // Duplicates of the connect result: nothing to do.
                ConnEvent::Connected
                | ConnEvent::TcpConnected
                | ConnEvent::EarlyData { .. }
                | ConnEvent::ConnectFailed(_) => {}
            },
            _ => {}
        }
        self.drain_monitor();
    }

    /// Fires every timer due at `now`: the race's, the running tasks', the
    /// heartbeat's and the monitor's. Idempotent; safe to call early.
    pub(crate) fn handle_timeout(&mut self, now: Instant, ids: &mut ConnIds) {
        let now = self.clock.observe(now);
        match &mut self.phase {
            Phase::Shutdown => return,
            Phase::Connecting(c) => {
                c.race.handle_timeout(now);
                self.drain_race(now, Some(ids));
            }
            Phase::Connected(_) => {
                // Heartbeat first: a dead link fails its tasks with the
                // heartbeat error, not with whichever task timer is due.
                self.heartbeat_step(now, Heartbeat::handle_timeout);
                self.check_tasks(now);
            }
            Phase::Idle | Phase::Disconnected => {}
        }
        self.monitor.handle_timeout(now);
        self.drain_monitor();
    }

    /// The app's answer to [`LongLinkEvent::AskIdentify`]. Ignored unless the
    /// link is connected and waiting for it.
    pub(crate) fn identify_answer(&mut self, now: Instant, decision: IdentifyDecision) {
        let now = self.clock.observe(now);
        if !matches!(self.phase, Phase::Connected(_)) {
            return;
        }
        self.heartbeat_step(now, |hb, now| hb.identify_answer(now, decision));
    }

    /// The app moved to the foreground or background (monitor schedule).
    pub(crate) fn set_foreground(&mut self, now: Instant, fg: bool) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Shutdown) {
            return;
        }
        self.monitor.set_foreground(now, fg);
        // stn re-arms the heartbeat for the new state at once (a probe's
        // long slot is not kept into the foreground); Mars waits for the
        // next write or slot.
        if self.smart.rearms_eagerly() {
            let app = self.app_state(now);
            if let Phase::Connected(link) = &mut self.phase {
                link.heartbeat
                    .set_interval(self.smart.next_interval(now, app));
                self.heartbeat_step(now, Heartbeat::handle_timeout);
            }
        }
        self.drain_monitor();
    }

    /// A task is waiting for the link (Mars `MakeSureConnected`): the monitor
    /// asks for a connect when its task interval allows.
    pub(crate) fn task_needs_link(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Shutdown) {
            return;
        }
        self.monitor.task_needs_link(now);
        self.drain_monitor();
    }

    /// The next event, if any.
    pub(crate) fn poll_event(&mut self) -> Option<LongLinkEvent> {
        self.events.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next. Never
    /// earlier than the latest `now` given (a timer already due reads as
    /// "now").
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let mut t = match &self.phase {
            Phase::Shutdown => return None,
            Phase::Connecting(c) => c.race.poll_timeout(),
            Phase::Connected(link) => {
                let t = link.heartbeat.poll_timeout().unwrap_or(Instant::MAX);
                Some(t.min(link.tasks.next_deadline().unwrap_or(Instant::MAX)))
            }
            Phase::Idle | Phase::Disconnected => None,
        };
        if let Some(m) = self.monitor.poll_timeout() {
            t = Some(t.map_or(m, |t| t.min(m)));
        }
        t.filter(|t| *t != Instant::MAX)
            .map(|t| t.max(self.clock.latest()))
    }

    // ---- internals ----

    /// Turns the race's actions into events; on `Won` the link is up, on
    /// `Failed` it is down. `ids` is `None` only after `Race::cancel`, which
    /// starts no attempt.
    fn drain_race(&mut self, now: Instant, mut ids: Option<&mut ConnIds>) {
        let Phase::Connecting(c) = &mut self.phase else {
            return;
        };
        let mut outcome = None;
        while let Some(action) = c.race.poll_action() {
            match action {
                RaceAction::Connect { attempt, addr } => match ids.as_deref_mut() {
                    Some(ids) => {
                        let conn = ids.next_id();
                        c.conns.insert(attempt, conn);
                        self.events
                            .push_back(LongLinkEvent::Io(IoAction::Connect { conn, addr }));
                    }
                    None => c.race.handle_failed(now, attempt, ConnectError::Other(0)),
                },
                // The long link keeps no verdict probes (its race uses
                // `LoserReports::Outpaced`): a loser handed over is closed
                // without a verdict.
                RaceAction::Cancel { attempt, .. } | RaceAction::Linger { attempt, .. } => {
                    if let Some(conn) = c.conns.remove(&attempt) {
                        self.events
                            .push_back(LongLinkEvent::Io(IoAction::Close { conn }));
                    }
                }
                RaceAction::Report { addr, result, .. } => {
                    // Cancelled attempts give no verdict, as on the short link.
                    if let Some(report) = EndpointReport::from_attempt(addr, result) {
                        self.events.push_back(LongLinkEvent::Endpoint(report));
                    }
                }
                RaceAction::Won {
                    attempt,
                    addr,
                    connect_time,
                } => outcome = Some(Ok((attempt, addr, connect_time))),
                RaceAction::Failed {
                    reason, last_error, ..
                } => {
                    let error = match reason {
                        FailReason::NoCandidates => Error::Dns(DnsError::NoCandidates),
                        FailReason::Exhausted | FailReason::Deadline => Error::Connect {
                            addr: c.race.attempts().last().map(|a| a.addr),
                            error: last_error.unwrap_or(ConnectError::AttemptTimeout),
                        },
                    };
                    outcome = Some(Err(error));
                }
            }
        }
        match outcome {
            Some(Ok((attempt, addr, connect_time))) => {
                let Some(conn) = c.conns.remove(&attempt) else {
                    // Broken invariant: the winner must be open. Fail the
                    // connect rather than panic.
                    self.connect_failed(
                        now,
                        Error::Connect {
                            addr: Some(addr),
                            error: ConnectError::Other(0),
                        },
                        false,
                    );
                    return;
                };
                // Any other attempt still recorded is already cancelled.
                for (_, other) in std::mem::take(&mut c.conns) {
                    self.events
                        .push_back(LongLinkEvent::Io(IoAction::Close { conn: other }));
                }
                self.phase = Phase::Connected(Box::new(Link {
                    conn,
                    addr,
                    decoder: FrameDecoder::shared(
                        self.codec.clone(),
                        self.config.codec.max_body_len,
                    ),
                    heartbeat: Heartbeat::new(now, self.config.heartbeat.clone()),
                    tasks: InFlight::new(self.config.wait_follows_link_progress),
                    last_activity: now,
                    held: VecDeque::new(),
                }));
                self.events
                    .push_back(LongLinkEvent::Connected { addr, connect_time });
                self.monitor.on_connected(now);
                self.smart.on_established(now);
                if let Phase::Connected(link) = &mut self.phase {
                    // The handshake took about one RTT: stn scales the noop
                    // timeout from it.
                    link.heartbeat.set_rtt(connect_time);
                }
                self.heartbeat_step(now, Heartbeat::handle_timeout);
            }
            Some(Err(error)) => {
                for (_, other) in std::mem::take(&mut c.conns) {
                    self.events
                        .push_back(LongLinkEvent::Io(IoAction::Close { conn: other }));
                }
                let deterministic = c.race.failed_deterministically();
                self.connect_failed(now, error, deterministic);
            }
            None => {}
        }
    }

    fn connect_failed(&mut self, now: Instant, error: Error, deterministic: bool) {
        self.phase = Phase::Disconnected;
        self.events.push_back(LongLinkEvent::Disconnected {
            error: Some(error),
            deterministic,
        });
        self.smart.on_connect_failed(now);
        self.monitor.on_disconnected(now);
    }

    /// The established link (or the connect) ended for `end`, not by the
    /// caller: tear it down and let the monitor reconnect (at once if the
    /// smart heartbeat lost it to a probe).
    fn link_lost(&mut self, now: Instant, end: End) {
        let at_once = self.teardown(now, end) && self.reconnect_at_once;
        self.reconnect_at_once = false;
        self.monitor.on_disconnected(now);
        if at_once {
            self.monitor.reconnect_now(now);
        }
    }

    fn drain_monitor(&mut self) {
        while let Some(MonitorAction::Connect { .. }) = self.monitor.poll_action() {
            if !matches!(self.phase, Phase::Shutdown) {
                self.events.push_back(LongLinkEvent::WantConnect);
            }
        }
    }

    /// Decodes `data`, dispatching every complete frame; a decode error
    /// ends the link.
    fn on_received(&mut self, now: Instant, mut data: Bytes) {
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        if data.is_empty() {
            return;
        }
        link.last_activity = now;
        // Decode first, dispatch after: dispatching never changes the
        // decoder, and frames before a decode error are still delivered.
        let mut frames = Vec::new();
        let mut failure = None;
        loop {
            match link.decoder.decode(&mut data) {
                Ok(Some(frame)) => {
                    note_progress(link, frame.seq, now);
                    frames.push((frame, link.decoder.last_frame_len()));
                }
                Ok(None) => {
                    if let Some(p) = link.decoder.partial() {
                        note_progress(link, p.seq, now);
                    }
                    break;
                }
                Err(e) => {
                    failure = Some(match e {
                        DecodeError::HeadLength { .. } => ProtocolError::BadFrameHeader,
                        DecodeError::ClientVersion { .. } => ProtocolError::VersionMismatch,
                        DecodeError::BodyTooLarge { .. } => ProtocolError::FrameTooLarge,
                        // A custom codec's reason, kept in words.
                        other => ProtocolError::Other(other.to_string()),
                    });
                    break;
                }
            }
        }
        for (frame, wire_len) in frames {
            self.dispatch(now, frame, wire_len);
        }
        if let Some(error) = failure {
            self.link_lost(now, End::Protocol(error));
        }
    }

    /// One complete frame: noop response, identify response, push, or a
    /// task's response (Mars `__RunReadWrite` / `OnResponse` order).
    fn dispatch(&mut self, now: Instant, frame: Frame, wire_len: usize) {
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        let codec = self.codec.get();
        if codec.is_noop(&frame) {
            let waiting = link.heartbeat.is_waiting();
            link.heartbeat.on_noop_response(now);
            if waiting && !link.heartbeat.is_waiting() {
                self.heartbeat_answered(now);
            }
            return;
        }
        if codec.is_identify_response(&frame) {
            if link.heartbeat.identify_state() == IdentifyState::Sent {
                // Receiving it completes identify for this connection; the
                // app sees the body (it cannot reject it through this API).
                let waiting = link.heartbeat.is_waiting();
                link.heartbeat.on_identify_response(now, true);
                self.events.push_back(LongLinkEvent::IdentifyResponse {
                    cmd_id: frame.cmd_id,
                    body: frame.body,
                });
                if waiting && !link.heartbeat.is_waiting() {
                    self.heartbeat_answered(now);
                }
            } else {
                self.unknown_frames += 1;
            }
            return;
        }
        if codec.is_push(&frame) {
            self.events.push_back(LongLinkEvent::Push {
                cmd_id: frame.cmd_id,
                body: frame.body,
            });
            return;
        }
        let task = TaskId::new(frame.seq);
        match link.tasks.remove(task) {
            Some(run) => {
                let bytes_received = wire_len as u64;
                self.events.push_back(LongLinkEvent::TaskResponse {
                    task,
                    cmd_id: frame.cmd_id,
                    body: frame.body,
                    first_packet_after: run.first_byte_at.map(|t| t - run.written_at),
                    bytes_received,
                });
            }
            None => self.unknown_frames += 1,
        }
    }

    /// Fails the link if any running task's timer has fired.
    fn check_tasks(&mut self, now: Instant) {
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        let expired = link.tasks.expired(now);
        if expired.is_empty() {
            return;
        }
        let batch = self.config.batch_on_task_deadline
            || expired.iter().any(|(_, k, _)| *k != TimeoutKind::Task);
        if !batch {
            for (task, kind, timeout) in expired {
                link.tasks.remove(task);
                self.events.push_back(LongLinkEvent::TaskFailed {
                    task,
                    error: Error::Timeout(kind),
                    timeout,
                });
            }
            return;
        }
        self.link_lost(now, End::Timeout(expired));
    }

    /// A noop or identify answer came: the smart heartbeat learns from it,
    /// and the tasks held for it go out.
    fn heartbeat_answered(&mut self, now: Instant) {
        self.smart.on_answer(now);
        if self.smart.rearms_eagerly() {
            let app = self.app_state(now);
            if let Phase::Connected(link) = &mut self.phase {
                link.heartbeat
                    .set_interval(self.smart.next_interval(now, app));
            }
        }
        self.release_held(now);
    }

    /// Runs `step` on the heartbeat, then what follows from it: a fired
    /// slot tells the smart heartbeat, the actions are carried out, and a
    /// slot armed by the step (a fired slot, a write) gets its interval.
    fn heartbeat_step(&mut self, now: Instant, step: impl FnOnce(&mut Heartbeat, Instant)) {
        let app = self.app_state(now);
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        let (fired, arms) = (link.heartbeat.slots_fired(), link.heartbeat.arms());
        step(&mut link.heartbeat, now);
        if link.heartbeat.slots_fired() != fired {
            self.smart.on_slot(now, fired == 0, app);
        }
        let rearmed = link.heartbeat.arms() != arms;
        self.drain_heartbeat(now);
        if let Phase::Connected(link) = &mut self.phase {
            if rearmed {
                link.heartbeat
                    .set_interval(self.smart.next_interval(now, app));
            }
        }
    }

    /// Carries out the heartbeat's actions: noop and identify writes, the
    /// identify question; a response timeout ends the link.
    fn drain_heartbeat(&mut self, now: Instant) {
        let app = self.app_state(now);
        let Phase::Connected(link) = &mut self.phase else {
            return;
        };
        while let Some(action) = link.heartbeat.poll_action() {
            let frame = match action {
                HeartbeatAction::SendNoop => self.codec.get().noop_request(),
                HeartbeatAction::SendIdentify { cmd_id, body } => {
                    Frame::new(cmd_id, IDENTIFY_SEQ, body)
                }
                HeartbeatAction::AskIdentify => {
                    self.events.push_back(LongLinkEvent::AskIdentify);
                    continue;
                }
                HeartbeatAction::Timeout { .. } => {
                    self.link_lost(now, End::Heartbeat);
                    return;
                }
            };
            self.smart
                .on_heartbeat_start(now, now - link.last_activity, app);
            link.last_activity = now;
            // The app's identify body is sent even past the codec's cap: it
            // is the app's own packet, and the alternative (not sending it)
            // would time the link out anyway.
            if let Some(data) = encode(self.codec.get(), usize::MAX, &frame) {
                self.events.push_back(LongLinkEvent::Io(IoAction::Send {
                    conn: link.conn,
                    data,
                }));
            }
        }
    }

    /// Ends the race or the established link for `end`: closes what is open,
    /// fails every running task once, reports the endpoint, emits
    /// `Disconnected`. Returns whether anything was up. The monitor is the
    /// caller's business.
    fn teardown(&mut self, now: Instant, end: End) -> bool {
        match std::mem::replace(&mut self.phase, Phase::Disconnected) {
            Phase::Connecting(mut c) => {
                c.race.cancel(now);
                self.phase = Phase::Connecting(c);
                self.drain_race(now, None);
                if let Phase::Connecting(c) =
                    std::mem::replace(&mut self.phase, Phase::Disconnected)
                {
                    for (_, conn) in c.conns {
                        self.events
                            .push_back(LongLinkEvent::Io(IoAction::Close { conn }));
                    }
                }
                self.events.push_back(LongLinkEvent::Disconnected {
                    error: None,
                    deterministic: false,
                });
                self.smart.on_connect_failed(now);
                true
            }
            Phase::Connected(link) => {
                let Link {
                    conn,
                    addr,
                    tasks,
                    held,
                    last_activity: link_idle_since,
                    ..
                } = *link;
                let loss = match &end {
                    End::Heartbeat => LinkLoss::HeartbeatTimeout,
                    End::Remote(_) => LinkLoss::Peer,
                    End::Timeout(_) | End::Protocol(_) | End::Local(_) => LinkLoss::Other,
                };
                let app = self.app_state(now);
                let idle = now - link_idle_since;
                let probe_lost = self.smart.on_link_lost(now, loss, idle, app);
                self.reconnect_at_once = probe_lost;
                let (link_error, peer_fault) = match &end {
                    End::Timeout(expired) => {
                        (expired.first().map(|(_, k, _)| Error::Timeout(*k)), true)
                    }
                    End::Heartbeat => (Some(Error::Timeout(TimeoutKind::Heartbeat)), true),
                    End::Protocol(e) => (Some(Error::Protocol(e.clone())), true),
                    End::Remote(reason) => (Some(Error::Socket(socket_error(*reason))), true),
                    End::Local(_) => (None, false),
                };
                if !matches!(end, End::Remote(_)) {
                    self.events
                        .push_back(LongLinkEvent::Io(IoAction::Close { conn }));
                }
                // A lost probe is the path's idle limit, not the server's fault.
                if peer_fault && !probe_lost {
                    self.events
                        .push_back(LongLinkEvent::Endpoint(EndpointReport {
                            addr,
                            ok: false,
                            connect_time: None,
                            error: link_error.clone(),
                        }));
                }
                for task in tasks.into_ids() {
                    let mut timeout = None;
                    let error = match &end {
                        End::Timeout(expired) => match expired.iter().find(|(t, ..)| *t == task) {
                            Some((_, kind, value)) => {
                                timeout = *value;
                                Error::Timeout(*kind)
                            }
                            None => Error::Local(LocalError::Interrupted),
                        },
                        End::Heartbeat => Error::Timeout(TimeoutKind::Heartbeat),
                        End::Protocol(e) => Error::Protocol(e.clone()),
                        End::Remote(reason) => Error::Socket(socket_error(*reason)),
                        End::Local(DisconnectReason::Shutdown) => Error::Shutdown,
                        End::Local(_) => Error::Local(LocalError::Interrupted),
                    };
                    self.events.push_back(LongLinkEvent::TaskFailed {
                        task,
                        error,
                        timeout,
                    });
                }
                // Held tasks never reached the link: interrupted, not failed.
                for h in held {
                    let error = match &end {
                        End::Local(DisconnectReason::Shutdown) => Error::Shutdown,
                        _ => Error::Local(LocalError::Interrupted),
                    };
                    self.events.push_back(LongLinkEvent::TaskFailed {
                        task: h.task,
                        error,
                        timeout: None,
                    });
                }
                self.events.push_back(LongLinkEvent::Disconnected {
                    error: link_error,
                    deterministic: false,
                });
                true
            }
            Phase::Idle => {
                self.phase = Phase::Idle;
                false
            }
            Phase::Disconnected => false,
            Phase::Shutdown => {
                self.phase = Phase::Shutdown;
                false
            }
        }
    }
}

/// Records that bytes of a response frame for `seq` arrived at `now`: the
/// first-packet and packet-gap timers see them.
fn note_progress(link: &mut Link, seq: u32, now: Instant) {
    link.tasks.note_progress(TaskId::new(seq), now);
}

/// `frame` on the wire, unless its body exceeds `max_body` or the codec
/// cannot carry it.
fn encode(codec: &dyn LongLinkCodec, max_body: usize, frame: &Frame) -> Option<Bytes> {
    if frame.body.len() > max_body {
        return None;
    }
    let mut buf = BytesMut::with_capacity(frame.encoded_len());
    codec.encode(frame, &mut buf).ok()?;
    Some(buf.freeze())
}

fn socket_error(reason: CloseReason) -> SocketError {
    match reason {
        CloseReason::Eof => SocketError::ClosedByPeer,
        CloseReason::Tls(tls) => SocketError::Tls(tls),
        CloseReason::Error(_) => SocketError::Reset,
        CloseReason::Reset => SocketError::Reset,
    }
}
