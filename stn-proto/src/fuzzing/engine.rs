//! The engine op-sequence target (issue #6): submits, cancels, connection
//! results, received bytes (valid, split anywhere, garbage), late events for
//! closed or unknown connections, resolve answers, network / app-state
//! changes and time advances, against a whole [`Engine`] of every profile.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;

use crate::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
use crate::engine::{Action, Config, Engine, Input};
use crate::io::{CloseReason, ConnEvent, ConnId};
use crate::long_link::IdentifyDecision;
use crate::net::{ConnectError, IpAddr, NetworkKind};
use crate::profile::Profile;
use crate::task::{Channel, Task, TaskId};
use crate::time::{Duration, Instant};

/// Where every run starts (any fixed time; far from 0 so `Backwards` has room).
const T0: Instant = Instant::from_secs(1_000);
/// Most ops of one input that are run.
const MAX_OPS: usize = 200;
/// Most `handle_timeout` steps of one `Advance` before the engine is declared
/// busy-looping.
const MAX_STEPS: u32 = 10_000;
/// Short-link port (long link: `LONG_PORT`), so the model knows which is which.
const SHORT_PORT: u16 = 80;
const LONG_PORT: u16 = 8080;

/// The input: a profile, engine set-up, and ops.
#[derive(Debug)]
struct EngineInput {
    setup: Setup,
    ops: Vec<Op>,
}

impl EngineInput {
    /// The set-up, then ops until the bytes run out (not `Vec`'s
    /// continue-flag encoding, under which random bytes give one or two ops).
    fn parse(data: &[u8]) -> Option<Self> {
        let mut u = Unstructured::new(data);
        let setup = Setup::arbitrary(&mut u).ok()?;
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::arbitrary(&mut u).ok()?);
        }
        Some(EngineInput { setup, ops })
    }
}

/// Engine set-up.
#[derive(Arbitrary, Debug)]
struct Setup {
    profile: ProfileChoice,
    seed: u64,
    /// Short link by host name (resolved) instead of IPs.
    hosts: bool,
    /// A long link is configured.
    long: bool,
    /// `max_queued_tasks` = 1 + this % 16 (small, so the cap is hit).
    max_queued: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ProfileChoice {
    Mars2017,
    Mars,
    Stn,
}

/// One thing the application, the network or the clock does.
#[derive(Arbitrary, Debug, Clone)]
enum Op {
    Submit {
        channel: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    },
    /// Cancels the `n`-th submitted task (held or already finished).
    Cancel(u16),
    /// Something happens on the `pick`-th open connection.
    Conn {
        pick: u16,
        what: ConnOp,
    },
    /// A late event for a connection that ended (or was never opened): it
    /// must be ignored.
    Stale {
        pick: u16,
        what: ConnOp,
    },
    /// Connects every pending connection and answers every connected one.
    ServeAll,
    Resolve {
        pick: u16,
        fail: bool,
        n: u8,
    },
    Network(u8),
    Lost,
    Available(u8),
    Foreground(bool),
    Authed(bool),
    Identify(u8),
    /// Steps through every deadline up to `ms` * 4 from now.
    Advance(u16),
    /// Calls `handle_timeout` late, at an arbitrary time, without stepping.
    Jump(u16),
    /// Calls `handle_timeout` with a `now` in the past (must be clamped).
    Backwards(u16),
    Shutdown,
}

#[derive(Arbitrary, Debug, Clone)]
enum ConnOp {
    Connected,
    Failed(u8),
    /// A valid answer (long link: to one of the frames sent, or a push),
    /// delivered in two parts cut at `split`.
    Valid {
        split: u16,
    },
    Garbage(Vec<u8>),
    Closed(u8),
}

fn profile(p: ProfileChoice) -> Profile {
    match p {
        ProfileChoice::Mars2017 => Profile::Mars2017,
        ProfileChoice::Mars => Profile::Mars,
        ProfileChoice::Stn => Profile::Stn,
    }
}

fn network(n: u8) -> NetworkKind {
    match n % 4 {
        0 => NetworkKind::Wifi,
        1 => NetworkKind::Mobile,
        2 => NetworkKind::Other,
        _ => NetworkKind::None,
    }
}

fn ip(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::from([a, b, c, d])
}

fn ok_http(body: &str) -> Bytes {
    Bytes::from(format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        body
    ))
}

#[derive(Debug)]
struct OpenConn {
    long: bool,
    connected: bool,
    decoder: FrameDecoder,
    /// Frames the engine sent on this connection, not yet answered.
    unanswered: Vec<Frame>,
}

/// The engine plus the oracle's model of what it may do.
struct World {
    e: Engine,
    now: Instant,
    config: Config,
    /// Ids of accepted submits.
    submitted: Vec<TaskId>,
    finished: std::collections::BTreeMap<TaskId, u32>,
    /// Connections the engine opened and that have not ended.
    open: std::collections::BTreeMap<ConnId, OpenConn>,
    /// Every connection ever opened.
    ever: std::collections::BTreeSet<ConnId>,
    resolves: Vec<String>,
    shut_down: bool,
    trace: Vec<Action>,
}

impl World {
    fn new(input: &Setup) -> Self {
        let mut config = Config::for_profile(profile(input.profile))
            .seed(input.seed)
            .short_link_ips([ip(10, 0, 0, 1), ip(10, 0, 0, 2)], SHORT_PORT);
        if input.long {
            config = config.long_link_ips([ip(10, 0, 1, 1)], LONG_PORT);
        }
        if input.hosts {
            config.short_link.hosts = vec!["a.example".into()];
            config.short_link.ips.clear();
            config.short_link.backup_ips = vec![ip(10, 0, 9, 9)];
        }
        config.max_queued_tasks = 1 + usize::from(input.max_queued % 16);
        config.max_in_flight_short = config.max_in_flight_short.min(4);
        config.long.max_in_flight_tasks = 3;
        let mut w = World {
            e: Engine::new(T0, config.clone()),
            now: T0,
            config,
            submitted: Vec::new(),
            finished: Default::default(),
            open: Default::default(),
            ever: Default::default(),
            resolves: Vec::new(),
            shut_down: false,
            trace: Vec::new(),
        };
        w.drain();
        w
    }

    /// Drains and checks every action; returns how many there were.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(a) = self.e.poll_action() {
            n += 1;
            match &a {
                Action::Connect { conn, addr } => {
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
                            decoder: FrameDecoder::new(CodecConfig::default()),
                            unanswered: Vec::new(),
                        },
                    );
                }
                Action::Send { conn, data } => {
                    let c = self
                        .open
                        .get_mut(conn)
                        .unwrap_or_else(|| panic!("send on closed or unknown {conn}"));
                    assert!(c.connected, "send on {conn} before it connected");
                    if c.long {
                        let mut buf = &data[..];
                        while let Ok(Some(f)) = c.decoder.decode(&mut buf) {
                            c.unanswered.push(f);
                        }
                    }
                }
                Action::Close { conn } => {
                    assert!(
                        self.open.remove(conn).is_some(),
                        "close of closed or unknown {conn}"
                    );
                }
                Action::Resolve { host } => self.resolves.push(host.clone()),
                Action::TaskFinished { id, .. } => {
                    assert!(
                        self.submitted.contains(id),
                        "task {id} finished but was never accepted"
                    );
                    let n = self.finished.entry(*id).or_insert(0);
                    *n += 1;
                    assert_eq!(*n, 1, "task {id} finished twice");
                }
                Action::Push { .. }
                | Action::AskIdentify
                | Action::IdentifyResponse { .. }
                | Action::Report(_)
                | Action::LongLink(_) => {}
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
        assert!(self.e.task_count() <= self.config.max_queued_tasks);
        assert!(self.e.short_in_flight() <= self.config.max_in_flight_short);
        assert!(self.e.long_in_flight() <= self.config.long.max_in_flight_tasks);
        // Each short attempt races at most 3 connections; the long link too.
        assert!(self.e.open_connections() <= self.e.short_in_flight() * 3 + 3);
        assert_eq!(self.e.open_connections(), self.open.len());
        assert_eq!(
            self.submitted.len() - self.finished.len(),
            self.e.task_count(),
            "held tasks != submitted - finished"
        );
    }

    fn input(&mut self, input: Input) {
        self.e.handle_input(self.now, input);
        self.drain();
    }

    /// Steps through every deadline up to `t`, checking progress at each.
    fn advance_to(&mut self, t: Instant) {
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

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Submit {
                channel,
                priority,
                retries,
                flags,
                body,
            } => self.submit(channel, priority, retries, flags, body),
            Op::Cancel(i) => {
                if !self.submitted.is_empty() {
                    let id = self.submitted[usize::from(i) % self.submitted.len()];
                    self.e.cancel(self.now, id);
                    self.drain();
                }
            }
            Op::Conn { pick, ref what } => {
                if let Some(&conn) = self
                    .open
                    .keys()
                    .nth(usize::from(pick) % self.open.len().max(1))
                {
                    self.conn_op(conn, what.clone());
                }
            }
            Op::Stale { pick, ref what } => {
                let ended: Vec<ConnId> = self
                    .ever
                    .iter()
                    .filter(|c| !self.open.contains_key(c))
                    .copied()
                    .collect();
                // An ended connection, or one the engine never opened.
                let conn = match ended.get(usize::from(pick) % ended.len().max(1)) {
                    Some(&c) if pick % 4 != 0 => c,
                    _ => ConnId(u64::MAX - u64::from(pick)),
                };
                let event = match what {
                    ConnOp::Connected => ConnEvent::Connected,
                    ConnOp::Failed(_) => ConnEvent::ConnectFailed(ConnectError::Refused),
                    ConnOp::Valid { .. } => ConnEvent::Received(ok_http("late")),
                    ConnOp::Garbage(b) => ConnEvent::Received(Bytes::from(b.clone())),
                    ConnOp::Closed(_) => ConnEvent::Closed(CloseReason::Eof),
                };
                self.input(Input::Conn { conn, event });
            }
            Op::ServeAll => {
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
            Op::Resolve { pick, fail, n } => {
                if self.resolves.is_empty() {
                    // An answer nobody asked for is ignored.
                    self.input(Input::Resolved {
                        host: "unasked.example".into(),
                        addrs: vec![ip(10, 0, 0, 9)],
                    });
                    return;
                }
                let host = self
                    .resolves
                    .remove(usize::from(pick) % self.resolves.len());
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
            Op::Network(n) => {
                self.e.network_changed(self.now, network(n));
                self.drain();
            }
            Op::Lost => {
                self.e.network_lost(self.now);
                self.drain();
            }
            Op::Available(n) => {
                self.e.network_available(self.now, network(n));
                self.drain();
            }
            Op::Foreground(fg) => {
                self.e.set_foreground(self.now, fg);
                self.drain();
            }
            Op::Authed(a) => {
                self.e.set_authed(self.now, a);
                self.drain();
            }
            Op::Identify(k) => {
                let d = match k % 3 {
                    0 => IdentifyDecision::Never,
                    1 => IdentifyDecision::Next,
                    _ => IdentifyDecision::Now {
                        body: Bytes::from_static(b"id"),
                        cmd_id: 99,
                    },
                };
                self.e.identify_answer(self.now, d);
                self.drain();
            }
            Op::Advance(ms) => {
                self.advance_to(self.now + Duration::from_millis(4 * u64::from(ms)));
            }
            Op::Jump(ms) => {
                self.now += Duration::from_millis(2 * u64::from(ms));
                self.e.handle_timeout(self.now);
                self.drain();
            }
            Op::Backwards(ms) => {
                self.e
                    .handle_timeout(self.now - Duration::from_millis(u64::from(ms)));
                self.drain();
            }
            Op::Shutdown => {
                self.e.shutdown(self.now);
                self.shut_down = true;
                self.drain();
            }
        }
    }

    fn submit(&mut self, channel: u8, priority: u8, retries: Option<u8>, flags: u8, body: u8) {
        let channel = channel % 3;
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
        if flags & 0x10 != 0 && channel != 1 {
            // A task naming its own host: resolved per task.
            t = t.host(if body % 2 == 0 {
                "b.example"
            } else {
                "c.example"
            });
        }
        let held = self.e.task_count();
        match self.e.submit(self.now, t) {
            Ok(id) => {
                assert!(!self.shut_down, "submit accepted after shutdown");
                assert!(!self.submitted.contains(&id), "id {id} reused");
                self.submitted.push(id);
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
    fn finish(&mut self) {
        self.e.shutdown(self.now);
        self.shut_down = true;
        self.drain();
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

/// Runs an arbitrary op list against an [`Engine`] of any profile and checks:
/// - every accepted task ends exactly once (`TaskFinished`), a refused submit
///   never (no id, nothing held); after the final shutdown all have ended;
/// - no action names a closed or unknown connection: `Send` only on one the
///   engine opened, that connected and has not been closed (by the engine or
///   by a failure / close event); `Close` once; every `Connect` a fresh id;
///   late events for ended or unknown connections are ignored;
/// - after every drain `poll_timeout` is not earlier than `now`;
/// - `handle_timeout` at the deadline makes progress (an action or a later
///   deadline), within a bounded number of steps;
/// - memory: held tasks ≤ `max_queued_tasks` and = accepted − finished;
///   in-flight caps; open connections ≤ 3 per short attempt + 3;
/// - nothing happens after shutdown (no connect, no deadline);
/// - determinism: a second run gives the same action trace.
pub fn engine_ops(data: &[u8]) {
    let Some(input) = EngineInput::parse(data) else {
        return;
    };
    let first = run(&input);
    let second = run(&input);
    assert!(first == second, "same inputs, different actions");
}

fn run(input: &EngineInput) -> Vec<Action> {
    let mut w = World::new(&input.setup);
    for op in &input.ops {
        w.apply(op);
    }
    w.finish();
    w.trace
}

/// What an input makes the engine do, for choosing seeds.
fn classify(data: &[u8]) -> Option<String> {
    let input = EngineInput::parse(data)?;
    let trace = run(&input);
    let profile = format!("{:?}", input.setup.profile).to_lowercase();
    let link = if input.setup.long { "long" } else { "short" };
    let finished = trace
        .iter()
        .filter(|a| matches!(a, Action::TaskFinished { .. }))
        .count();
    let ok = trace
        .iter()
        .filter(|a| matches!(a, Action::TaskFinished { outcome, .. } if outcome.is_ok()))
        .count();
    let sends = trace
        .iter()
        .filter(|a| matches!(a, Action::Send { .. }))
        .count();
    // The final shutdown ends every held task, so "failed" is any accepted
    // task that did not succeed.
    let shape = match (ok, sends, finished) {
        (1.., _, _) => "ok",
        (0, 1.., _) => "sends",
        (0, 0, 1..) => "failed",
        (0, 0, 0) => "idle",
    };
    Some(format!("{profile}_{link}_{shape}"))
}

/// Seed inputs: byte strings chosen so that every profile, with and without
/// a long link, is seen idle, sending, failing tasks and completing them.
pub(super) fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seen = std::collections::BTreeMap::new();
    for bytes in super::random_inputs(0x454e_4749, 4000, 400) {
        if let Some(class) = classify(&bytes) {
            seen.entry(class).or_insert(bytes);
        }
    }
    seen.into_iter().collect()
}
