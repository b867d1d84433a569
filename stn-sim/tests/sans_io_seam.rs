//! The client seam driven the way stn-proto's engine will be: a sans-IO
//! machine (inputs in; `poll_action` / `poll_timeout` out) wrapped by a thin
//! adapter that maps its actions to socket operations and follows the drain
//! rule after every callback: feed the input, drain `poll_action` until
//! `None`, then set the wake-up to `poll_timeout`.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

#[derive(Debug)]
enum Action {
    Connect(u32, SocketAddr),
    Send(u32, Vec<u8>),
    Close(u32),
    Finished(bool),
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Connecting { conn: u32, deadline: Instant },
    Waiting { conn: u32, deadline: Instant },
    Pausing { until: Instant },
    Done,
}

/// A toy machine: 2 s per connect attempt, 1 s pause, at most 5 attempts.
struct Toy {
    server: SocketAddr,
    attempts: u32,
    phase: Phase,
    actions: VecDeque<Action>,
}

impl Toy {
    fn new(now: Instant, server: SocketAddr) -> Self {
        let mut t = Toy {
            server,
            attempts: 0,
            phase: Phase::Done,
            actions: VecDeque::new(),
        };
        t.start_attempt(now);
        t
    }

    fn start_attempt(&mut self, now: Instant) {
        self.attempts += 1;
        let conn = self.attempts;
        self.actions.push_back(Action::Connect(conn, self.server));
        self.phase = Phase::Connecting {
            conn,
            deadline: now + Duration::from_secs(2),
        };
    }

    fn fail_attempt(&mut self, now: Instant, conn: u32) {
        self.actions.push_back(Action::Close(conn));
        if self.attempts >= 5 {
            self.actions.push_back(Action::Finished(false));
            self.phase = Phase::Done;
        } else {
            self.phase = Phase::Pausing {
                until: now + Duration::from_secs(1),
            };
        }
    }

    fn handle_input(&mut self, now: Instant, conn: u32, ev: SocketEvent) {
        match (self.phase, ev) {
            (Phase::Connecting { conn: c, .. }, SocketEvent::Connected) if c == conn => {
                self.actions.push_back(Action::Send(
                    conn,
                    stn_sim::http::post("/mars/hello2", "s", b"hi"),
                ));
                self.phase = Phase::Waiting {
                    conn,
                    deadline: now + Duration::from_secs(5),
                };
            }
            (Phase::Waiting { conn: c, .. }, SocketEvent::Data(_)) if c == conn => {
                self.actions.push_back(Action::Close(conn));
                self.actions.push_back(Action::Finished(true));
                self.phase = Phase::Done;
            }
            (Phase::Connecting { conn: c, .. } | Phase::Waiting { conn: c, .. }, _)
                if c == conn =>
            {
                self.fail_attempt(now, conn);
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Connecting { conn, deadline } | Phase::Waiting { conn, deadline }
                if deadline <= now =>
            {
                self.fail_attempt(now, conn);
            }
            Phase::Pausing { until } if until <= now => self.start_attempt(now),
            _ => {}
        }
    }

    fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Connecting { deadline, .. } | Phase::Waiting { deadline, .. } => Some(deadline),
            Phase::Pausing { until } => Some(until),
            Phase::Done => None,
        }
    }
}

/// The adapter: owns the machine and the conn-id ↔ socket mapping.
struct Adapter {
    server: SocketAddr,
    machine: Option<Toy>,
    sockets: BTreeMap<u32, SocketId>,
    conns: BTreeMap<SocketId, u32>,
    result: Option<(Instant, bool)>,
    connects: u32,
}

impl Adapter {
    fn drain(&mut self, cx: &mut ClientCx<'_>) {
        let Some(m) = self.machine.as_mut() else {
            return;
        };
        while let Some(action) = m.poll_action() {
            match action {
                Action::Connect(conn, addr) => {
                    let s = cx.connect(addr);
                    self.connects += 1;
                    self.sockets.insert(conn, s);
                    self.conns.insert(s, conn);
                }
                Action::Send(conn, bytes) => {
                    if let Some(&s) = self.sockets.get(&conn) {
                        // A refused send shows up as a socket event later.
                        let _ = cx.send(s, &bytes);
                    }
                }
                Action::Close(conn) => {
                    if let Some(s) = self.sockets.remove(&conn) {
                        self.conns.remove(&s);
                        let _ = cx.close(s);
                    }
                }
                Action::Finished(ok) => self.result = Some((cx.now(), ok)),
            }
        }
        cx.set_wakeup(m.poll_timeout());
    }
}

impl SimClient for Adapter {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        self.machine = Some(Toy::new(cx.now(), self.server));
        self.drain(cx);
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        let (Some(m), Some(&conn)) = (self.machine.as_mut(), self.conns.get(&socket)) else {
            return;
        };
        m.handle_input(cx.now(), conn, event);
        self.drain(cx);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        if let Some(m) = self.machine.as_mut() {
            m.handle_timeout(cx.now());
        }
        self.drain(cx);
    }

    fn is_finished(&self) -> bool {
        self.result.is_some()
    }
}

#[test]
fn sans_io_machine_retries_through_an_outage() {
    // 100% loss until 6.5 s on a 60 ms RTT path; xnu SYNs at +0 s and +1 s
    // per attempt. Attempts at 0 and 3 s time out at 2 and 5 s; the third
    // starts at 6 s, its SYN at 6 s is lost, the one at 7 s connects.
    let base = Preset::LossPercent(0.0).conditions();
    let mut sim = Simulation::new(8);
    sim.add_host(
        server().ip(),
        PathSchedule::outage(base, Instant::ZERO, Instant::from_millis(6500)),
    );
    sim.listen(server(), FixedResponseApp::new(10, Duration::ZERO))
        .unwrap();
    let adapter = Adapter {
        server: server(),
        machine: None,
        sockets: BTreeMap::new(),
        conns: BTreeMap::new(),
        result: None,
        connects: 0,
    };
    let id = sim.add_client(adapter, TcpStack::xnu());
    sim.run_until_finished(Instant::from_secs(60));
    let a = sim.client(id);
    assert_eq!(a.connects, 3);
    // Connected 7.06 s, request lands 7.09 s, response back at 7.12 s.
    assert_eq!(a.result, Some((Instant::from_millis(7120), true)));
}
