//! The engine's invariant checker, shared by the state-machine proptest
//! (`tests/prop.rs`) and the `engine_ops` fuzz target
//! (`crate::fuzzing`): a [`World`] holds an [`Engine`] and a model of what it
//! may do, drives it (each caller maps its own op type onto these methods)
//! and checks every action and, after every drain, the state:
//!
//! - every accepted task ends exactly once (a refused submit never);
//! - a judged task is asked for one verdict per response, only while held,
//!   and a verdict is accepted exactly when one is awaited;
//! - no action names a connection that is closed or was never opened, and
//!   every `Connect` uses a fresh id; nothing connects after shutdown;
//! - `poll_timeout` is never earlier than `now` after a drain;
//! - `handle_timeout` at the deadline always makes progress (an action, or a
//!   later deadline), within a bounded number of steps;
//! - queues, connections and buffers stay within their caps.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
use crate::engine::{
    Config, Engine, Event, Input, LinkError, LinkSpec, LongLinkEndpoints, Output, SubmitError,
    Verdict, MAX_LINKS,
};
use crate::error::{Error, LocalError};
use crate::io::{CloseReason, ConnEvent, ConnId, IoAction};
use crate::link_name::LinkName;
use crate::long_link::IdentifyDecision;
use crate::net::{ConnectError, IpAddr};
use crate::profile::Profile;
use crate::task::{Channel, ChannelStrategy, Task, TaskId};
use crate::time::{Duration, Instant};

/// Where every run starts (far from 0 so a `now` in the past has room).
pub(crate) const T0: Instant = Instant::from_secs(1_000);
/// Most `handle_timeout` steps of one [`World::advance_to`] before the engine
/// is declared busy-looping.
const MAX_STEPS: u32 = 10_000;
/// Short-link port (long link: `LONG_PORT`), so the model knows which is which.
const SHORT_PORT: u16 = 80;
const LONG_PORT: u16 = 8080;

/// Something that happens on one connection.
#[derive(Clone, Debug)]
#[cfg_attr(any(test, fuzzing), derive(arbitrary::Arbitrary))]
pub(crate) enum ConnOp {
    Connected,
    Failed(u8),
    /// A valid answer (long link: to one of the frames sent, or a push),
    /// delivered in two parts cut at `split`.
    Valid {
        split: u16,
    },
    Garbage(Vec<u8>),
    Closed(u8),
    /// TCP connects and the TLS session offers `max * 8` bytes of early data
    /// (the handshake's end is a later `Connected`, `Failed` or `Closed`).
    Early(u16),
}

/// The name of the model's named link `k` (three names, so that ops meet).
fn link_name(k: u8) -> LinkName {
    LinkName::new(["l0", "l1", "l2"][usize::from(k % 3)]).unwrap_or_else(|e| panic!("{e}"))
}

fn ip(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::from([a, b, c, d])
}

/// A complete 200 response carrying `body`.
pub(crate) fn ok_http(body: &str) -> Bytes {
    Bytes::from(format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        body
    ))
}

#[derive(Debug)]
pub(crate) struct OpenConn {
    long: bool,
    connected: bool,
    /// Early-data bytes the connection still allows before `Connected`.
    early_room: Option<u32>,
    decoder: FrameDecoder,
    /// Frames the engine sent on this connection, not yet answered.
    unanswered: Vec<Frame>,
}

/// The engine plus the oracle's model of what it may do.
pub(crate) struct World {
    pub(crate) e: Engine,
    pub(crate) now: Instant,
    config: Config,
    /// Ids of accepted submits.
    submitted: Vec<TaskId>,
    finished: BTreeMap<TaskId, u32>,
    /// Tasks whose response awaits a verdict.
    judging: BTreeSet<TaskId>,
    /// Connections the engine opened and that have not ended.
    open: BTreeMap<ConnId, OpenConn>,
    /// Every connection ever opened.
    ever: BTreeSet<ConnId>,
    /// Hosts the engine asked to resolve, not yet answered.
    resolves: Vec<String>,
    /// Accepted tasks that named a link, and the link.
    on_link: BTreeMap<TaskId, LinkName>,
    /// Tasks that ended because their link was removed, and the link.
    removed_ends: BTreeMap<TaskId, LinkName>,
    shut_down: bool,
    /// Every action, in order (for the determinism checks).
    pub(crate) trace: Vec<Output>,
}

impl World {
    /// An engine with two short-link IPs (or, with `hosts`, a host name to
    /// resolve and a backup IP), a long link if `long`, and small caps.
    pub(crate) fn new(
        profile: Profile,
        seed: u64,
        hosts: bool,
        long: bool,
        max_queued_tasks: usize,
    ) -> Self {
        let mut config = Config::for_profile(profile)
            .seed(seed)
            .short_link_ips([ip(10, 0, 0, 1), ip(10, 0, 0, 2)], SHORT_PORT);
        if long {
            config = config.long_link_ips([ip(10, 0, 1, 1)], LONG_PORT);
        }
        if hosts {
            config.short_link.hosts = vec!["a.example".into()];
            config.short_link.ips.clear();
            config.short_link.backup_ips = vec![ip(10, 0, 9, 9)];
        }
        config.max_queued_tasks = max_queued_tasks;
        config.max_in_flight_short = config.max_in_flight_short.min(4);
        config.long.max_in_flight_tasks = 3;
        let mut w = World {
            e: Engine::new(T0, config.clone()),
            now: T0,
            config,
            submitted: Vec::new(),
            finished: Default::default(),
            judging: Default::default(),
            open: Default::default(),
            ever: Default::default(),
            resolves: Vec::new(),
            on_link: BTreeMap::new(),
            removed_ends: BTreeMap::new(),
            shut_down: false,
            trace: Vec::new(),
        };
        w.drain();
        w
    }

    /// Drains and checks every action; returns how many there were.
    pub(crate) fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(a) = self.e.poll_output() {
            n += 1;
            match &a {
                Output::Io(IoAction::Connect { conn, addr }) => {
                    assert!(!self.shut_down, "connect {conn} after shutdown");
                    assert!(self.ever.insert(*conn), "connect reuses {conn}");
                    assert!(
                        addr.port() == SHORT_PORT || addr.port() == LONG_PORT,
                        "connect to {addr}"
                    );
                    self.open.insert(
                        *conn,
                        OpenConn {
                            long: addr.port() == LONG_PORT,
                            connected: false,
                            early_room: None,
                            decoder: FrameDecoder::new(CodecConfig::default()),
                            unanswered: Vec::new(),
                        },
                    );
                }
                Output::Io(IoAction::Send { conn, data }) => {
                    let c = self
                        .open
                        .get_mut(conn)
                        .unwrap_or_else(|| panic!("send on closed or unknown {conn}"));
                    if !c.connected {
                        // Only a short-link request, as early data, within
                        // what the session offered.
                        let room = c
                            .early_room
                            .unwrap_or_else(|| panic!("send on {conn} before it connected"));
                        assert!(!c.long, "long-link send as early data on {conn}");
                        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
                        assert!(len <= room, "early data of {len} B on {conn} over {room}");
                        c.early_room = Some(room - len);
                    }
                    if c.long {
                        let mut buf = &data[..];
                        while let Ok(Some(f)) = c.decoder.decode(&mut buf) {
                            c.unanswered.push(f);
                        }
                    }
                }
                Output::Io(IoAction::Close { conn }) => {
                    assert!(
                        self.open.remove(conn).is_some(),
                        "close of closed or unknown {conn}"
                    );
                }
                Output::Resolve { host } => self.resolves.push(host.clone()),
                Output::Event(Event::TaskFinished { id, outcome, .. }) => {
                    assert!(
                        self.submitted.contains(id),
                        "task {id} finished but was never accepted"
                    );
                    if let Err(Error::Local(LocalError::LinkRemoved { link })) = outcome {
                        assert_eq!(
                            self.on_link.get(id),
                            Some(link),
                            "task {id} ended by {link}"
                        );
                        self.removed_ends.insert(*id, link.clone());
                    }
                    let n = self.finished.entry(*id).or_insert(0);
                    *n += 1;
                    assert_eq!(*n, 1, "task {id} finished twice");
                    self.judging.remove(id);
                }
                Output::Event(Event::Judge(j)) => {
                    assert!(
                        self.submitted.contains(&j.id) && !self.finished.contains_key(&j.id),
                        "judge asked for task {} that is not held",
                        j.id
                    );
                    assert!(
                        self.judging.insert(j.id),
                        "judge asked twice for task {}",
                        j.id
                    );
                }
                Output::Event(Event::Push { .. })
                | Output::Event(Event::AskIdentify)
                | Output::Event(Event::IdentifyResponse { .. }) => {}
                // A judged response's attempt is reported once it is settled
                // (by a verdict, a cancel, the deadline or another task's
                // verdict): no verdict is awaited after it.
                Output::Event(Event::Report(r)) => {
                    assert_eq!(r.link.as_ref(), self.on_link.get(&r.task), "report's link");
                    self.judging.remove(&r.task);
                }
                Output::Event(Event::LongLink(_) | Event::Link { .. }) => {}
            }
            self.trace.push(a);
        }
        self.check();
        n
    }

    /// The state invariants after a drain.
    fn check(&self) {
        if let Some(t) = self.e.poll_timeout() {
            assert!(!self.shut_down, "a deadline after shutdown");
            assert!(
                t >= self.now,
                "poll_timeout {t:?} before now {:?}",
                self.now
            );
        }
        // Each named link holds its own queue and link under the same caps.
        let links: Vec<LinkName> = self.e.links().cloned().collect();
        assert!(links.len() <= MAX_LINKS);
        assert!(self.e.task_count() <= self.config.max_queued_tasks * (1 + links.len()));
        assert!(self.e.short_in_flight() <= self.config.max_in_flight_short);
        assert!(self.e.long_in_flight() <= self.config.long.max_in_flight_tasks);
        for l in &links {
            let in_flight = self.e.link_in_flight(l).unwrap_or(0);
            assert!(in_flight <= self.config.long.max_in_flight_tasks);
        }
        // Each short attempt races at most `RaceConfig::max_open`
        // connections (stn: 3 slots + 3 floor + 6 probes), and so does its
        // hedge (stn), beside its first exchange's connection; the long link
        // too; the keep-alive pool holds at most its `max_idle_conns`.
        let per_race = |r: &crate::race::RaceConfig| r.max_open();
        let short = per_race(&self.config.exchange.race);
        let per_short = if self.config.hedge.is_some() {
            2 * short + 1
        } else {
            short
        };
        let pooled = self.config.socket_pool.map_or(0, |p| p.max_idle_conns);
        // Verdict probes: capped, owned by the engine alone, judged when
        // due, and due by their attempt's own deadline (started before now).
        let probes = self.e.probes.len();
        assert!(probes <= self.e.probes.max());
        let longest = self.config.exchange.race.attempt_timeout;
        for (conn, until) in self.e.probes.iter() {
            assert_eq!(self.e.out.owner(conn), Some(super::conns::Owner::Verdict));
            let until =
                until.unwrap_or_else(|| panic!("verdict probe {conn:?} without a due time"));
            assert!(until > self.now, "verdict probe {conn:?} overdue");
            assert!(
                until <= self.now + longest,
                "verdict probe {conn:?} due too late"
            );
        }
        assert!(
            self.e.open_connections()
                <= self.e.short_in_flight() * per_short
                    + per_race(&self.config.long.race) * (1 + links.len())
                    + pooled
                    + probes
        );
        assert_eq!(self.e.open_connections(), self.open.len());
        if let Some(l) = self.e.long.get() {
            assert!(l.decoder_buffered_len() <= 20 + 64 + CodecConfig::default().max_body_len);
        }
        // Every index agrees with the tasks' stages.
        self.e.tasks.check();
        assert_eq!(
            self.submitted.len() - self.finished.len(),
            self.e.task_count(),
            "held tasks != submitted - finished"
        );
    }

    /// Feeds an input at `now` and drains.
    pub(crate) fn input(&mut self, input: Input) {
        self.e.handle_input(self.now, input);
        self.drain();
    }

    /// Steps through every deadline up to `t`, checking progress at each.
    pub(crate) fn advance_to(&mut self, t: Instant) {
        let mut steps = 0u32;
        while let Some(x) = self.e.poll_timeout() {
            if x > t {
                break;
            }
            steps += 1;
            assert!(steps < MAX_STEPS, "busy loop at {x:?}");
            self.now = x;
            self.e.handle_timeout(x);
            let n = self.drain();
            assert!(
                n > 0 || self.e.poll_timeout() != Some(x),
                "handle_timeout at the deadline {x:?} made no progress"
            );
        }
        self.now = t;
        self.e.handle_timeout(t);
        self.drain();
    }

    /// Calls `f` on the engine at `now`, then drains.
    pub(crate) fn call(&mut self, f: impl FnOnce(&mut Engine, Instant)) {
        f(&mut self.e, self.now);
        self.drain();
    }

    /// `handle_timeout` late, at `t`, without stepping through the deadlines
    /// in between (`t` in the past: the engine must clamp it).
    pub(crate) fn jump_to(&mut self, t: Instant) {
        self.now = self.now.max(t);
        self.e.handle_timeout(t);
        self.drain();
    }

    /// Shuts the engine down.
    pub(crate) fn shutdown(&mut self) {
        self.e.shutdown(self.now);
        self.shut_down = true;
        self.drain();
    }

    /// Gives `verdict` (Mars code order: accept, retry, end, session
    /// timeout, retry all) on the `pick`-th awaited response, or, for every
    /// fourth `pick` or when none is awaited, on a task that awaits none
    /// (which must be refused and change nothing).
    pub(crate) fn judge(&mut self, pick: usize, verdict: u8) {
        let verdict = match verdict % 5 {
            0 => Verdict::Accept,
            1 => Verdict::Retry,
            2 => Verdict::End,
            3 => Verdict::SessionTimeout,
            _ => Verdict::RetryAll,
        };
        let awaited = self
            .judging
            .iter()
            .nth(pick % self.judging.len().max(1))
            .copied();
        match awaited {
            Some(id) if pick % 4 != 0 => {
                self.judging.remove(&id);
                let now = self.now;
                assert!(self.e.judge(now, id, verdict), "verdict on {id} refused");
                self.drain();
            }
            _ => {
                let id = self
                    .submitted
                    .iter()
                    .copied()
                    .find(|id| !self.judging.contains(id))
                    .unwrap_or(TaskId::INVALID);
                let held = self.e.task_count();
                let now = self.now;
                assert!(
                    !self.e.judge(now, id, verdict),
                    "verdict on {id}, which awaits none, accepted"
                );
                assert_eq!(self.e.task_count(), held);
                assert_eq!(self.drain(), 0, "a refused verdict did something");
            }
        }
    }

    /// Cancels the `i`-th submitted task (held or already finished).
    pub(crate) fn cancel(&mut self, i: usize) {
        if !self.submitted.is_empty() {
            let id = self.submitted[i % self.submitted.len()];
            self.call(|e, now| e.cancel(now, id));
        }
    }

    /// `what` happens on the `pick`-th open connection.
    pub(crate) fn conn(&mut self, pick: usize, what: ConnOp) {
        if let Some(&conn) = self.open.keys().nth(pick % self.open.len().max(1)) {
            self.conn_op(conn, what);
        }
    }

    /// A late event for a connection that ended (or, for every fourth
    /// `pick`, one never opened): it must be ignored.
    pub(crate) fn stale(&mut self, pick: usize, what: &ConnOp) {
        let ended: Vec<ConnId> = self
            .ever
            .iter()
            .filter(|c| !self.open.contains_key(c))
            .copied()
            .collect();
        let conn = match ended.get(pick % ended.len().max(1)) {
            Some(&c) if pick % 4 != 0 => c,
            _ => ConnId(u64::MAX - pick as u64),
        };
        let event = match what {
            ConnOp::Connected => ConnEvent::Connected,
            ConnOp::Failed(_) => ConnEvent::ConnectFailed(ConnectError::Refused),
            ConnOp::Valid { .. } => ConnEvent::Received(ok_http("late")),
            ConnOp::Garbage(b) => ConnEvent::Received(Bytes::from(b.clone())),
            ConnOp::Closed(_) => ConnEvent::Closed(CloseReason::Eof),
            ConnOp::Early(max) => ConnEvent::EarlyData {
                max: u32::from(*max) * 8,
            },
        };
        self.input(Input::Conn { conn, event });
    }

    /// Connects every pending connection and answers every connected one.
    pub(crate) fn serve_all(&mut self) {
        let conns: Vec<ConnId> = self.open.keys().copied().collect();
        for conn in conns {
            let what = match self.open.get(&conn) {
                Some(c) if c.connected => ConnOp::Valid { split: 7 },
                Some(_) => ConnOp::Connected,
                None => continue,
            };
            self.conn_op(conn, what);
        }
    }

    /// Answers the `pick`-th pending resolve (with `n % 5` addresses, or a
    /// failure); with none pending, an answer nobody asked for.
    pub(crate) fn resolve(&mut self, pick: usize, fail: bool, n: u8) {
        if self.resolves.is_empty() {
            self.input(Input::Resolved {
                host: "unasked.example".into(),
                addrs: vec![ip(10, 0, 0, 9)],
            });
            return;
        }
        let host = self.resolves.remove(pick % self.resolves.len());
        let input = if fail {
            Input::ResolveFailed { host }
        } else {
            Input::Resolved {
                host,
                addrs: vec![ip(10, 0, 0, 5 + n % 3); usize::from(n % 5)],
            }
        };
        self.input(input);
    }

    /// Submits a task built from small numbers: `channel` (short, long,
    /// both), priority, retry count, flags (bit 0 total timeout from the
    /// high bits, 1 network-sensitive, 3 judged, 4 own host, 5 needs auth,
    /// 6 send-only, 7 long-polling) and `body` (bits 0–1 a size class, bit 0
    /// also the Fast strategy, bit 2 `Connection: Keep-Alive`, bit 3 early
    /// data allowed).
    pub(crate) fn submit(
        &mut self,
        channel: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    ) {
        let t = Self::task(channel, priority, retries, flags, body);
        self.submit_task(t);
    }

    /// [`submit`](Self::submit) on the named link `k` (of three names).
    pub(crate) fn submit_on_link(
        &mut self,
        k: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    ) {
        let t = Self::task(1, priority, retries, flags, body).on_link(link_name(k));
        self.submit_task(t);
    }

    /// Adds the named link `k` (of three names), at its own IP.
    pub(crate) fn add_link(&mut self, k: u8) {
        let k = k % 3;
        let ep = LongLinkEndpoints {
            ips: vec![ip(10, 0, 2, k + 1)],
            ports: vec![LONG_PORT],
            ..LongLinkEndpoints::default()
        };
        let spec = LinkSpec::new(ep, self.config.long.clone());
        let name = link_name(k);
        let exists = self.e.links().any(|l| *l == name);
        let expected = match (self.shut_down, exists) {
            (true, _) => Err(LinkError::ShutDown),
            (false, true) => Err(LinkError::Exists(name.clone())),
            (false, false) => Ok(()),
        };
        assert_eq!(self.e.add_link(self.now, name, spec), expected);
        self.drain();
    }

    /// Removes the named link `k`: every task held on it ends, with the
    /// link named.
    pub(crate) fn remove_link(&mut self, k: u8) {
        let name = link_name(k);
        let held: Vec<TaskId> = (self.on_link.iter())
            .filter(|(id, l)| **l == name && !self.finished.contains_key(id))
            .map(|(id, _)| *id)
            .collect();
        let known = self.e.links().any(|l| *l == name);
        assert_eq!(self.e.remove_link(self.now, &name).is_ok(), known);
        self.drain();
        if known {
            for id in held {
                assert_eq!(
                    self.removed_ends.get(&id),
                    Some(&name),
                    "task {id} on {name}"
                );
            }
        }
    }

    /// The app answers the identify question of the named link `k`.
    pub(crate) fn link_identify(&mut self, k: u8, decision: IdentifyDecision) {
        let name = link_name(k);
        self.call(|e, now| e.link_identify_answer(now, &name, decision));
    }

    fn task(channel: u8, priority: u8, retries: Option<u8>, flags: u8, body: u8) -> Task {
        let channel = channel % 3;
        let keep_alive = body & 4 != 0;
        let early_data = body & 8 != 0;
        let body = body % 4;
        let mut t = Task::new(
            if channel == 0 {
                0
            } else {
                10 + u32::from(body)
            },
            if channel == 1 { "" } else { "/cgi" },
            Bytes::from(vec![b'a' + body; 1 + usize::from(body) * 7]),
        )
        .channel(match channel {
            0 => Channel::Short,
            1 => Channel::Long,
            _ => Channel::Both,
        })
        .priority(priority % 6);
        if let Some(r) = retries {
            t = t.retry_count(r % 4);
        }
        if body & 1 == 1 {
            t = t.channel_strategy(ChannelStrategy::Fast);
        }
        if flags & 1 != 0 {
            t = t.total_timeout(Duration::from_secs(u64::from(flags >> 2) + 1));
        }
        if flags & 2 != 0 {
            t = t.network_status_sensitive(true);
        }
        if flags & 0x40 != 0 && channel == 1 {
            t = t.send_only(true);
        }
        if flags & 0x80 != 0 && channel == 0 {
            t = t.long_polling(Duration::from_secs(20));
        }
        if flags & 0x20 != 0 {
            t = t.need_authed(true);
        }
        if flags & 0x08 != 0 {
            t = t.judge(true);
        }
        if keep_alive {
            t = t.header("Connection", "Keep-Alive");
        }
        if early_data {
            t = t.early_data(true);
        }
        if flags & 0x10 != 0 && channel != 1 {
            // A task naming its own host: resolved per task.
            t = t.host(if body % 2 == 0 {
                "b.example"
            } else {
                "c.example"
            });
        }
        t
    }

    fn submit_task(&mut self, t: Task) {
        let held = self.e.task_count();
        let link = t.link.clone();
        match self.e.submit(self.now, t) {
            Ok(id) => {
                assert!(!self.shut_down, "submit accepted after shutdown");
                assert!(!self.submitted.contains(&id), "id {id} reused");
                self.submitted.push(id);
                if let Some(l) = link {
                    self.on_link.insert(id, l);
                }
            }
            Err(SubmitError::UnknownLink(l)) => {
                assert!(!self.e.links().any(|x| *x == l), "{l} exists");
                assert_eq!(self.e.task_count(), held, "refused task held");
            }
            // A refused task gets no id, holds nothing, and (checked by the
            // drain) produces no TaskFinished.
            Err(_) => assert_eq!(self.e.task_count(), held, "refused task held"),
        }
        self.drain();
    }

    fn conn_op(&mut self, conn: ConnId, what: ConnOp) {
        let Some(c) = self.open.get_mut(&conn) else {
            return;
        };
        match what {
            ConnOp::Connected => {
                c.connected = true;
                self.input(Input::Conn {
                    conn,
                    event: ConnEvent::Connected,
                });
            }
            ConnOp::Early(max) => {
                let connected = c.connected;
                if !connected {
                    c.early_room = Some(u32::from(max) * 8);
                    self.input(Input::Conn {
                        conn,
                        event: ConnEvent::TcpConnected,
                    });
                    self.input(Input::Conn {
                        conn,
                        event: ConnEvent::EarlyData {
                            max: u32::from(max) * 8,
                        },
                    });
                }
            }
            ConnOp::Failed(k) => {
                self.open.remove(&conn);
                let err = match k % 6 {
                    0 => ConnectError::Refused,
                    1 => ConnectError::Reset,
                    2 => ConnectError::TimedOut,
                    3 => ConnectError::Unreachable,
                    4 => ConnectError::AttemptTimeout,
                    _ => ConnectError::Other(i32::from(k)),
                };
                self.input(Input::Conn {
                    conn,
                    event: ConnEvent::ConnectFailed(err),
                });
            }
            ConnOp::Closed(k) => {
                self.open.remove(&conn);
                let reason = match k % 3 {
                    0 => CloseReason::Eof,
                    1 => CloseReason::Reset,
                    _ => CloseReason::Error(104),
                };
                self.input(Input::Conn {
                    conn,
                    event: ConnEvent::Closed(reason),
                });
            }
            ConnOp::Garbage(mut bytes) => {
                if c.connected && !bytes.is_empty() {
                    bytes.truncate(256);
                    self.input(Input::Conn {
                        conn,
                        event: ConnEvent::Received(Bytes::from(bytes)),
                    });
                }
            }
            ConnOp::Valid { split } => {
                if !c.connected {
                    return;
                }
                let data = if c.long {
                    let f = if c.unanswered.is_empty() {
                        Frame::new(77, 0, "push")
                    } else {
                        let f = c.unanswered.remove(usize::from(split) % c.unanswered.len());
                        Frame::new(f.cmd_id, f.seq, "resp")
                    };
                    match encode_to_bytes(&f, 0) {
                        Ok(b) => b,
                        Err(e) => panic!("encoding a small frame failed: {e:?}"),
                    }
                } else {
                    ok_http("resp")
                };
                let at = usize::from(split) % (data.len() + 1);
                for part in [data.slice(..at), data.slice(at..)] {
                    // The first part may have made the engine close it.
                    if !part.is_empty() && self.open.contains_key(&conn) {
                        self.input(Input::Conn {
                            conn,
                            event: ConnEvent::Received(part),
                        });
                    }
                }
            }
        }
    }

    /// Shuts down and checks that every accepted task ended exactly once and
    /// every connection was closed.
    pub(crate) fn finish(&mut self) {
        self.shutdown();
        for id in &self.submitted {
            assert_eq!(
                self.finished.get(id),
                Some(&1),
                "task {id} did not end exactly once"
            );
        }
        assert!(
            self.open.is_empty(),
            "connections left open: {:?}",
            self.open.keys()
        );
        assert_eq!(self.e.task_count(), 0);
        assert_eq!(self.e.poll_timeout(), None);
    }
}
