//! The engine's state-machine property test: random submits, cancels,
//! connects that succeed, fail or hang, received bytes (valid, split anywhere,
//! garbage), resolve answers, network and app-state changes, and time
//! advances. After every step it checks the invariants of issue #3:
//!
//! - every task ends at most once, and (after the final shutdown) exactly once;
//! - no action names a connection that is closed (or was never opened), and
//!   every `Connect` uses a fresh id;
//! - `poll_timeout` is never earlier than `now` after a drain;
//! - `handle_timeout` at the deadline always makes progress (an action, or a
//!   later deadline);
//! - queues and buffers stay within their caps.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use proptest::prelude::*;

use super::{ip, ok_http, T0};
use crate::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
use crate::engine::{Action, Config, Engine, Input};
use crate::io::{CloseReason, ConnEvent, ConnId};
use crate::long_link::IdentifyDecision;
use crate::net::{ConnectError, NetworkKind};
use crate::profile::Profile;
use crate::task::{Channel, ChannelStrategy, Task, TaskId};
use crate::time::{Duration, Instant};

#[derive(Clone, Debug)]
enum Op {
    Submit {
        channel: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    },
    Cancel(usize),
    /// Something happens on the `pick`-th open connection.
    Conn {
        pick: usize,
        what: ConnOp,
    },
    /// Connect every pending connection and answer every connected one.
    ServeAll,
    Resolve {
        pick: usize,
        fail: bool,
        n: u8,
    },
    Network(u8),
    Lost,
    Available(u8),
    Foreground(bool),
    Authed(bool),
    Identify(u8),
    /// Step through every deadline up to `ms` from now.
    Advance(u32),
    /// Call `handle_timeout` late, at an arbitrary time, without stepping.
    Jump(u32),
    /// Call `handle_timeout` with a `now` in the past (must be clamped).
    Backwards(u32),
    Shutdown,
}

#[derive(Clone, Debug)]
enum ConnOp {
    Connected,
    Failed(u8),
    Valid { split: u16 },
    Garbage(Vec<u8>),
    Closed(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let conn_op = prop_oneof![
        4 => Just(ConnOp::Connected),
        2 => (0u8..5).prop_map(ConnOp::Failed),
        5 => any::<u16>().prop_map(|split| ConnOp::Valid { split }),
        1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(ConnOp::Garbage),
        1 => (0u8..3).prop_map(ConnOp::Closed),
    ];
    prop_oneof![
        6 => (0u8..3, 0u8..6, proptest::option::of(0u8..3), any::<u8>(), 0u8..4).prop_map(
            |(channel, priority, retries, flags, body)| Op::Submit {
                channel,
                priority,
                retries,
                flags,
                body
            }
        ),
        1 => any::<usize>().prop_map(Op::Cancel),
        2 => Just(Op::ServeAll),
        10 => (any::<usize>(), conn_op).prop_map(|(pick, what)| Op::Conn { pick, what }),
        2 => (any::<usize>(), any::<bool>(), 0u8..5).prop_map(|(pick, fail, n)| Op::Resolve {
            pick,
            fail,
            n
        }),
        1 => (0u8..4).prop_map(Op::Network),
        1 => Just(Op::Lost),
        1 => (0u8..3).prop_map(Op::Available),
        1 => any::<bool>().prop_map(Op::Foreground),
        1 => any::<bool>().prop_map(Op::Authed),
        1 => (0u8..3).prop_map(Op::Identify),
        5 => (0u32..40_000).prop_map(Op::Advance),
        1 => (0u32..10_000).prop_map(Op::Backwards),
        1 => (0u32..90_000).prop_map(Op::Jump),
        1 => (0u8..20).prop_map(|k| if k == 0 { Op::Shutdown } else { Op::Jump(u32::from(k) * 10) }),
    ]
}

fn network(n: u8) -> NetworkKind {
    match n % 4 {
        0 => NetworkKind::Wifi,
        1 => NetworkKind::Mobile,
        2 => NetworkKind::Other,
        _ => NetworkKind::None,
    }
}

#[derive(Debug)]
struct OpenConn {
    long: bool,
    connected: bool,
    decoder: FrameDecoder,
    /// Frames sent by the engine on this connection, not yet answered.
    unanswered: Vec<Frame>,
}

struct World {
    e: Engine,
    now: Instant,
    config: Config,
    submitted: Vec<TaskId>,
    finished: BTreeMap<TaskId, u32>,
    open: BTreeMap<ConnId, OpenConn>,
    ever: BTreeSet<ConnId>,
    resolves: Vec<String>,
}

impl World {
    fn new(profile: Profile, seed: u64, hosts: bool, long: bool) -> Self {
        let mut config = Config::for_profile(profile)
            .seed(seed)
            .short_link_ips([ip("10.0.0.1"), ip("10.0.0.2")], 80);
        if long {
            config = config.long_link_ips([ip("10.0.1.1")], 8080);
        }
        if hosts {
            config.short_link.hosts = vec!["a.example".into()];
            config.short_link.ips.clear();
            config.short_link.backup_ips = vec![ip("10.0.9.9")];
        }
        config.max_queued_tasks = 12;
        config.max_in_flight_short = config.max_in_flight_short.min(4);
        config.long.max_in_flight_tasks = 3;
        let mut w = World {
            e: Engine::new(T0, config.clone()),
            now: T0,
            config,
            submitted: Vec::new(),
            finished: BTreeMap::new(),
            open: BTreeMap::new(),
            ever: BTreeSet::new(),
            resolves: Vec::new(),
        };
        w.drain();
        w
    }

    /// Drains and checks every action; returns how many there were.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(a) = self.e.poll_action() {
            n += 1;
            match a {
                Action::Connect { conn, addr } => {
                    assert!(self.ever.insert(conn), "connect reuses {conn}");
                    self.open.insert(
                        conn,
                        OpenConn {
                            long: addr.port() == 8080,
                            connected: false,
                            decoder: FrameDecoder::new(CodecConfig::default()),
                            unanswered: Vec::new(),
                        },
                    );
                }
                Action::Send { conn, data } => {
                    let c = self
                        .open
                        .get_mut(&conn)
                        .unwrap_or_else(|| panic!("send on closed {conn}"));
                    assert!(c.connected, "send on {conn} before it connected");
                    if c.long {
                        let mut buf = &data[..];
                        while let Ok(Some(f)) = c.decoder.decode(&mut buf) {
                            c.unanswered.push(f);
                        }
                    }
                }
                Action::Close { conn } => {
                    assert!(self.open.remove(&conn).is_some(), "close of closed {conn}");
                }
                Action::Resolve { host } => self.resolves.push(host),
                Action::TaskFinished { id, .. } => {
                    assert!(self.submitted.contains(&id), "unknown task {id} finished");
                    let n = self.finished.entry(id).or_insert(0);
                    *n += 1;
                    assert_eq!(*n, 1, "task {id} finished twice");
                }
                Action::Push { .. }
                | Action::AskIdentify
                | Action::IdentifyResponse { .. }
                | Action::Report(_)
                | Action::LongLink(_) => {}
            }
        }
        self.check();
        n
    }

    fn check(&self) {
        if let Some(t) = self.e.poll_timeout() {
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
        if let Some(l) = self.e.long.as_ref() {
            assert!(l.decoder_buffered_len() <= 20 + 64 + CodecConfig::default().max_body_len);
        }
        let live = self.submitted.len() - self.finished.len();
        assert_eq!(
            live,
            self.e.task_count(),
            "held tasks = submitted - finished"
        );
    }

    fn input(&mut self, input: Input) {
        self.e.handle_input(self.now, input);
        self.drain();
    }

    /// Steps through every deadline up to `t`, checking progress at each.
    fn advance_to(&mut self, t: Instant) {
        let mut guard = 0u32;
        while let Some(x) = self.e.poll_timeout() {
            if x > t {
                break;
            }
            guard += 1;
            assert!(guard < 10_000, "busy loop at {x:?}");
            self.now = x;
            self.e.handle_timeout(x);
            let n = self.drain();
            let next = self.e.poll_timeout();
            assert!(
                n > 0 || next != Some(x),
                "handle_timeout at the deadline {x:?} made no progress"
            );
        }
        self.now = t;
        self.e.handle_timeout(t);
        self.drain();
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Submit {
                channel,
                priority,
                retries,
                flags,
                body,
            } => {
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
                .priority(priority);
                if let Some(r) = retries {
                    t = t.retry_count(r);
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
                if flags & 0x10 != 0 && channel != 1 {
                    // A task naming its own host: resolved per task.
                    t = t.host(if body % 2 == 0 {
                        "b.example"
                    } else {
                        "c.example"
                    });
                }
                if let Ok(id) = self.e.submit(self.now, t) {
                    assert!(!self.submitted.contains(&id), "id {id} reused while held");
                    self.submitted.push(id);
                }
                self.drain();
            }
            Op::Cancel(i) => {
                if !self.submitted.is_empty() {
                    let id = self.submitted[i % self.submitted.len()];
                    self.e.cancel(self.now, id);
                    self.drain();
                }
            }
            Op::Conn { pick, what } => {
                if self.open.is_empty() {
                    return;
                }
                let conn = *self
                    .open
                    .keys()
                    .nth(pick % self.open.len())
                    .unwrap_or_else(|| unreachable!());
                self.conn_op(conn, what);
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
                        addrs: vec![ip("10.0.0.9")],
                    });
                    return;
                }
                let host = self.resolves.remove(pick % self.resolves.len());
                let input = if fail {
                    Input::ResolveFailed { host }
                } else {
                    Input::Resolved {
                        host,
                        addrs: vec![ip("10.0.0.5"); usize::from(n)],
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
                let d = match k {
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
            Op::Advance(ms) => self.advance_to(self.now + Duration::from_millis(u64::from(ms))),
            Op::Jump(ms) => {
                self.now += Duration::from_millis(u64::from(ms));
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
                self.drain();
            }
        }
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
                let err = match k {
                    0 => ConnectError::Refused,
                    1 => ConnectError::Reset,
                    2 => ConnectError::TimedOut,
                    3 => ConnectError::Unreachable,
                    _ => ConnectError::Other(113),
                };
                self.input(Input::Conn {
                    conn,
                    event: ConnEvent::ConnectFailed(err),
                });
            }
            ConnOp::Closed(k) => {
                self.open.remove(&conn);
                let reason = match k {
                    0 => CloseReason::Eof,
                    1 => CloseReason::Reset,
                    _ => CloseReason::Error(104),
                };
                self.input(Input::Conn {
                    conn,
                    event: ConnEvent::Closed(reason),
                });
            }
            ConnOp::Garbage(bytes) => {
                if c.connected {
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
                        Frame::new(77, 0, "push") // a push
                    } else {
                        let f = c.unanswered.remove(usize::from(split) % c.unanswered.len());
                        Frame::new(f.cmd_id, f.seq, "resp")
                    };
                    encode_to_bytes(&f, 0).unwrap_or_else(|_| unreachable!())
                } else {
                    ok_http("resp")
                };
                let at = usize::from(split) % (data.len() + 1);
                for part in [data.slice(..at), data.slice(at..)] {
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

    /// Shuts down and checks that every task ended exactly once and every
    /// connection was closed.
    fn finish(&mut self) {
        self.e.shutdown(self.now);
        self.drain();
        for id in &self.submitted {
            assert_eq!(
                self.finished.get(id),
                Some(&1),
                "task {id} did not end once"
            );
        }
        assert!(
            self.open.is_empty(),
            "connections left open: {:?}",
            self.open.keys()
        );
        assert_eq!(self.e.poll_timeout(), None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn engine_invariants_hold_under_random_inputs(
        profile in 0u8..3,
        seed in any::<u64>(),
        hosts in any::<bool>(),
        long in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let profile = Profile::ALL[usize::from(profile)];
        let mut w = World::new(profile, seed, hosts, long);
        for op in ops {
            w.apply(op);
        }
        w.finish();
    }
}

/// The same random run twice gives the same action trace.
#[test]
fn random_runs_are_deterministic() {
    fn trace(seed: u64) -> Vec<String> {
        let mut w = World::new(Profile::Stn, seed, true, true);
        let mut out = Vec::new();
        for i in 0..40u32 {
            w.apply(Op::Submit {
                channel: (i % 3) as u8,
                priority: (i % 6) as u8,
                retries: Some(1),
                flags: 0,
                body: (i % 4) as u8,
            });
            w.apply(Op::Conn {
                pick: i as usize,
                what: if i % 3 == 0 {
                    ConnOp::Failed(0)
                } else {
                    ConnOp::Connected
                },
            });
            w.apply(Op::Resolve {
                pick: 0,
                fail: false,
                n: 2,
            });
            w.apply(Op::Advance(1_500));
            out.push(format!("{:?} {:?}", w.e.poll_timeout(), w.e.task_count()));
        }
        out
    }
    assert_eq!(trace(42), trace(42));
}
