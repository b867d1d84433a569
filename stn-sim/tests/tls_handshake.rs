//! The TLS 1.3 model (`stn_sim::tls`) as script tests: a full handshake
//! costs one round trip after TCP's with the certificate flight, a resumed
//! one the same round trip without it; loss on the certificate flight
//! delays the handshake by the server TCP's RTO; a stalled handshake fails
//! at the handshake timeout.

mod common;

use std::net::SocketAddr;

use common::*;
use stn_proto::ConnectError;
use stn_proto::TlsFailure;
use stn_proto::{Duration, Instant};
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::host::PortMode;
use stn_sim::link::LinkConditions;
use stn_sim::path::{Direction, PathConditions, PathSchedule};
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::{TcpStack, TimerPolicy};
use stn_sim::tls::{TlsClientConfig, TlsServer, CLIENT_HELLO_LEN, SERVER_FLIGHT_FULL_LEN};
use stn_sim::trace::TraceEvent;
use stn_sim::{RunOutcome, Simulation};

const OWD: Duration = Duration::from_millis(50);
const REQUEST: usize = 64;
const REPLY: usize = 100;

/// Makes `calls` calls one after another, each on a new connection opened
/// `gap` after the previous reply; records every event with its time and
/// connection number.
#[derive(Debug)]
struct Calls {
    target: SocketAddr,
    calls: usize,
    gap: Duration,
    socket: Option<SocketId>,
    received: usize,
    events: Vec<(usize, Instant, SocketEvent)>,
    done: usize,
    failed: bool,
}

impl Calls {
    fn new(calls: usize, gap: Duration) -> Self {
        Calls {
            target: server(),
            calls,
            gap,
            socket: None,
            received: 0,
            events: Vec::new(),
            done: 0,
            failed: false,
        }
    }

    fn time_of(&self, conn: usize, f: impl Fn(&SocketEvent) -> bool) -> Option<Instant> {
        self.events
            .iter()
            .find(|(c, _, e)| *c == conn && f(e))
            .map(|(_, t, _)| *t)
    }
}

impl SimClient for Calls {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        self.socket = Some(cx.connect(self.target));
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        if Some(socket) != self.socket {
            return;
        }
        self.events.push((self.done, cx.now(), event.clone()));
        match event {
            SocketEvent::TcpConnected => {}
            SocketEvent::Connected => cx.send(socket, &[7u8; REQUEST]).unwrap(),
            SocketEvent::Data(d) => {
                self.received += d.len();
                if self.received >= REPLY {
                    self.received = 0;
                    let _ = cx.close(socket);
                    self.socket = None;
                    self.done += 1;
                    if self.done < self.calls {
                        cx.set_wakeup(Some(cx.now() + self.gap));
                    }
                }
            }
            _ => {
                self.failed = true;
                self.socket = None;
            }
        }
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        if self.socket.is_none() && !self.is_finished() {
            self.socket = Some(cx.connect(self.target));
        }
    }

    fn is_finished(&self) -> bool {
        self.failed || self.done >= self.calls
    }
}

fn clean() -> PathConditions {
    PathConditions::symmetric(LinkConditions::with_delay(OWD))
}

fn tls_sim(path: PathSchedule) -> Simulation<Calls> {
    let mut sim = Simulation::new(1);
    sim.add_host(server().ip(), path).set_port(
        8080,
        PortMode::Listen(Box::new(TlsServer::new(Box::new(SinkApp {
            expect: REQUEST,
            reply_len: REPLY,
            got: 0,
        })))),
    );
    sim.keep_trace_events(true);
    sim
}

/// Data segments (payload bytes) delivered server → client in `[from, to]`.
fn down_data(events: &[TraceEvent], from: Instant, to: Instant) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Delivered {
                at,
                dir: Direction::Down,
                packet,
            } if *at >= from && *at <= to && packet.len > 0 => Some(packet.len),
            _ => None,
        })
        .collect()
}

#[test]
fn full_then_resumed_handshake_each_cost_one_round_trip_after_tcp() {
    let rtt = OWD * 2;
    let mut sim = tls_sim(PathSchedule::constant(clean()));
    let gap = Duration::from_secs(1);
    let id = sim.add_client(Calls::new(2, gap), TcpStack::linux_classic());
    sim.set_client_tls(id, Some(TlsClientConfig::stn("hello.example")));
    assert_eq!(
        sim.run_until_finished(Instant::from_secs(10)),
        RunOutcome::AllFinished
    );
    let c = sim.client(id);
    assert!(!c.failed, "{:?}", c.events);
    let is = |want: SocketEvent| move |e: &SocketEvent| *e == want;
    let data = |e: &SocketEvent| matches!(e, SocketEvent::Data(_));
    // First connection: TCP in one RTT, the full handshake in one more, the
    // request and its response in a third.
    let t0 = Instant::ZERO;
    assert_eq!(c.time_of(0, is(SocketEvent::TcpConnected)), Some(t0 + rtt));
    assert_eq!(c.time_of(0, is(SocketEvent::Connected)), Some(t0 + rtt * 2));
    assert_eq!(c.time_of(0, data), Some(t0 + rtt * 3));
    // Second connection: resumed with the ticket the first one received;
    // still one round trip, but no certificate flight.
    let t1 = t0 + rtt * 3 + gap;
    assert_eq!(c.time_of(1, is(SocketEvent::TcpConnected)), Some(t1 + rtt));
    assert_eq!(c.time_of(1, is(SocketEvent::Connected)), Some(t1 + rtt * 2));
    assert_eq!(c.time_of(1, data), Some(t1 + rtt * 3));
    let ev = sim.trace().events();
    let full = down_data(ev, t0 + rtt, t0 + rtt * 2);
    let resumed = down_data(ev, t1 + rtt, t1 + rtt * 2);
    // The certificate flight spans several segments; the resumed one fits in one.
    assert_eq!(full.iter().sum::<usize>(), SERVER_FLIGHT_FULL_LEN);
    assert_eq!(full.len(), SERVER_FLIGHT_FULL_LEN.div_ceil(1460));
    assert_eq!(resumed.len(), 1);
    assert!(resumed[0] < 400, "{resumed:?}");
}

#[test]
fn a_resumption_needs_a_ticket_so_a_client_without_one_pays_the_full_flight() {
    let rtt = OWD * 2;
    let mut sim = tls_sim(PathSchedule::constant(clean()));
    let id = sim.add_client(Calls::new(2, Duration::from_secs(1)), TcpStack::xnu());
    let mut cfg = TlsClientConfig::peer("hello.example");
    cfg.resumption = false;
    sim.set_client_tls(id, Some(cfg));
    sim.run_until_finished(Instant::from_secs(10));
    let t1 = Instant::ZERO + rtt * 3 + Duration::from_secs(1);
    let full = down_data(sim.trace().events(), t1 + rtt, t1 + rtt * 2);
    assert_eq!(full.iter().sum::<usize>(), SERVER_FLIGHT_FULL_LEN);
}

#[test]
fn loss_on_the_certificate_flight_is_repaired_by_the_servers_loss_probe() {
    // The server sends its flight when the ClientHello arrives (1.5 RTT);
    // every segment sent around then is lost.
    let rtt = OWD * 2;
    let flight_sent = Instant::ZERO + rtt + OWD;
    let mut path = PathSchedule::constant(clean());
    path.down.set_at(
        flight_sent - Duration::from_millis(5),
        clean().outage().down,
    );
    path.down
        .set_at(flight_sent + Duration::from_millis(5), clean().down);
    let mut sim = tls_sim(path);
    let id = sim.add_client(Calls::new(1, Duration::ZERO), TcpStack::linux_classic());
    sim.set_client_tls(id, Some(TlsClientConfig::stn("hello.example")));
    sim.run_until_finished(Instant::from_secs(10));
    let c = sim.client(id);
    assert!(!c.failed, "{:?}", c.events);
    // Three segments out and nothing back: the server's tail loss probe
    // after 2·srtt + 2 ms (its srtt is the handshake's one RTT) resends the
    // last segment; its SACK, one RTT later, makes RACK mark the other two
    // lost; proportional rate reduction lets one go at once and the other
    // when that one's ACK returns; the flight is complete one way later.
    assert_eq!(SERVER_FLIGHT_FULL_LEN.div_ceil(1460), 3);
    // The probe's timer fires on Linux's timer wheel (a jiffy late here).
    let pto = rtt * 2 + Duration::from_millis(2);
    let probe_at = TimerPolicy::LinuxHz250.expiry(flight_sent, pto);
    assert_eq!(
        c.time_of(0, |e| *e == SocketEvent::Connected),
        Some(probe_at + rtt + rtt + OWD)
    );
    let lost = sim
        .trace()
        .events()
        .iter()
        .filter(|e| {
            matches!(e, TraceEvent::Dropped { dir: Direction::Down, packet, .. } if packet.len > 0)
        })
        .count();
    assert_eq!(lost, SERVER_FLIGHT_FULL_LEN.div_ceil(1460));
}

#[test]
fn a_stalled_handshake_fails_the_connect_at_the_handshake_timeout() {
    // A server that accepts TCP and never answers the ClientHello.
    let rtt = OWD * 2;
    let mut sim = Simulation::new(1);
    sim.add_host(server().ip(), PathSchedule::constant(clean()))
        .set_port(8080, PortMode::Listen(Box::new(SilentApp)));
    let id = sim.add_client(Calls::new(1, Duration::ZERO), TcpStack::linux_6_5());
    let cfg = TlsClientConfig::stn("hello.example");
    let timeout = cfg.handshake_timeout.unwrap();
    sim.set_client_tls(id, Some(cfg));
    sim.run_until_finished(Instant::from_secs(60));
    let c = sim.client(id);
    assert_eq!(
        c.events,
        vec![
            (0, Instant::ZERO + rtt, SocketEvent::TcpConnected),
            (
                0,
                Instant::ZERO + rtt + timeout,
                SocketEvent::ConnectFailed(ConnectError::tls(TlsFailure::HandshakeTimeout))
            ),
        ]
    );
    // The ClientHello went out once TCP was up, and nothing was sent as
    // application data before the handshake.
    let up_payload: usize = sim
        .trace()
        .events()
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Delivered {
                dir: Direction::Up,
                packet,
                ..
            } => Some(packet.len),
            _ => None,
        })
        .sum();
    assert_eq!(up_payload, CLIENT_HELLO_LEN);
}

#[test]
fn a_plaintext_server_fails_the_handshake_with_not_tls() {
    // An HTTP server answers the ClientHello with bytes that are no record.
    let mut sim = Simulation::new(1);
    sim.add_host(server().ip(), PathSchedule::constant(clean()))
        .set_port(
            8080,
            PortMode::Listen(Box::new(SinkApp {
                expect: 1,
                reply_len: 20,
                got: 0,
            })),
        );
    let id = sim.add_client(Calls::new(1, Duration::ZERO), TcpStack::xnu());
    sim.set_client_tls(id, Some(TlsClientConfig::stn("hello.example")));
    sim.run_until_finished(Instant::from_secs(60));
    let c = sim.client(id);
    assert_eq!(
        c.events.last().map(|(_, _, e)| e.clone()),
        Some(SocketEvent::ConnectFailed(ConnectError::tls(
            TlsFailure::NotTls
        )))
    );
}
