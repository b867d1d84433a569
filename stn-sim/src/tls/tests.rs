//! Early data (0-RTT) between [`TlsSession`] and [`TlsServer`]: accepted,
//! rejected and resent, single-use tickets, a lost early-data segment.
//!
//! Most tests join the two ends with an in-memory wire (every byte
//! delivered at once, in order), so a "flight" is one delivery each way;
//! the loss test runs the simulated TCP.

use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::apps::EchoApp;
use crate::host::{ServerAction, ServerApp, ServerConnId, ServerReplies};
use crate::socket::SocketEvent;
use crate::tls::client::{SessionOutput, TicketStore, TlsSession};
use crate::tls::{TlsClientConfig, TlsServer, MAX_EARLY_DATA};

const NAME: &str = "hello.example";
const REQUEST: &[u8] = b"GET /profile HTTP/1.1\r\n\r\n";

fn peer() -> SocketAddr {
    "10.0.0.1:40000".parse().unwrap()
}

fn now() -> Instant {
    Instant::ZERO
}

/// An echo app behind TLS (its answer proves what it read, and how often).
fn server(early: bool) -> TlsServer {
    let s = TlsServer::new(Box::new(EchoApp::default()));
    if early {
        s.with_early_data(1)
    } else {
        s
    }
}

/// The bytes of every `Send` in `r`, in order.
fn sent(r: &ServerReplies) -> Vec<u8> {
    r.actions()
        .iter()
        .filter_map(|(_, a)| match a {
            ServerAction::Send(b) => Some(b.to_vec()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// What one connection showed: the client's events per server delivery
/// (index 0: TCP up; 1: the server's answer to the client's first flight;
/// 2: its answer to the second) and the application bytes received.
#[derive(Debug, Default)]
struct Seen {
    events: Vec<Vec<SocketEvent>>,
    app: Vec<u8>,
}

impl Seen {
    fn offered(&self) -> Option<u32> {
        self.events[0].iter().find_map(|e| match e {
            SocketEvent::EarlyData { max } => Some(*max),
            _ => None,
        })
    }

    /// The delivery in which the answer arrived.
    fn answered_in(&self) -> Option<usize> {
        self.events
            .iter()
            .position(|d| d.iter().any(|e| matches!(e, SocketEvent::Data(_))))
    }
}

/// One connection from `cfg`'s client to `srv`: the request is written on
/// the early-data offer when there is one, at TCP up otherwise (held until
/// the handshake), and the two ends exchange flights until nothing moves.
fn connect(
    srv: &mut TlsServer,
    conn: u64,
    cfg: &TlsClientConfig,
    tickets: &mut TicketStore,
) -> Seen {
    let conn = ServerConnId(conn);
    let mut client = TlsSession::new(cfg);
    let mut replies = ServerReplies::default();
    srv.on_accept(now(), conn, peer(), &mut replies);
    let mut out = SessionOutput::default();
    client.on_event(now(), SocketEvent::Connected, tickets, &mut out);
    client.write(REQUEST, &mut out.send);
    let mut seen = Seen {
        events: vec![out.events],
        app: Vec::new(),
    };
    let mut up = out.send;
    while !up.is_empty() {
        let mut replies = ServerReplies::default();
        srv.on_data(now(), conn, &up, &mut replies);
        let down = sent(&replies);
        let mut out = SessionOutput::default();
        if !down.is_empty() {
            client.on_event(
                now(),
                SocketEvent::Data(Bytes::from(down)),
                tickets,
                &mut out,
            );
        }
        for e in &out.events {
            if let SocketEvent::Data(d) = e {
                seen.app.extend_from_slice(d);
            }
        }
        seen.events.push(out.events);
        up = out.send;
    }
    seen
}

/// The early request was offered, skipped by the server and sent again
/// after the handshake: answered one flight later, once, in full.
fn assert_rejected_and_resent(seen: &Seen) {
    assert_eq!(seen.offered(), Some(MAX_EARLY_DATA));
    assert_eq!(seen.answered_in(), Some(2));
    assert_eq!(seen.app, REQUEST);
}

/// A client whose store holds two early-data tickets from `srv` (after one
/// full handshake).
fn warmed(srv: &mut TlsServer) -> (TlsClientConfig, TicketStore) {
    let cfg = TlsClientConfig::stn(NAME);
    let mut tickets = TicketStore::default();
    let first = connect(srv, 1, &cfg, &mut tickets);
    assert_eq!(first.offered(), None, "no ticket yet, no early data");
    assert_eq!(first.app, REQUEST);
    assert_eq!(tickets.count(NAME), 2);
    (cfg, tickets)
}

#[test]
fn an_accepted_early_request_is_answered_with_the_servers_flight() {
    let mut srv = server(true);
    let (cfg, mut tickets) = warmed(&mut srv);
    let seen = connect(&mut srv, 2, &cfg, &mut tickets);
    assert_eq!(seen.offered(), Some(MAX_EARLY_DATA));
    // The answer comes with the flight, before the client's Finished: one
    // flight sooner than a resumption without early data.
    assert_eq!(seen.answered_in(), Some(1));
    assert_eq!(seen.app, REQUEST, "read once");
    assert_eq!(srv.early_data(), (1, 0));
    assert_eq!(srv.handshakes(), (1, 1));
    // The accepting server's tickets came half-RTT; one spent, two new.
    assert_eq!(tickets.count(NAME), 3);
}

#[test]
fn without_early_data_on_the_client_the_request_waits_for_the_handshake() {
    let mut srv = server(true);
    let (mut cfg, mut tickets) = warmed(&mut srv);
    cfg.early_data = false;
    let seen = connect(&mut srv, 2, &cfg, &mut tickets);
    assert_eq!(seen.offered(), None);
    assert_eq!(seen.answered_in(), Some(2));
    assert_eq!(seen.app, REQUEST);
    assert_eq!(srv.early_data(), (0, 0));
    assert_eq!(srv.handshakes(), (1, 1), "resumed all the same");
}

#[test]
fn a_server_that_lost_its_sessions_skips_the_early_data_and_the_client_resends() {
    let mut first = server(true);
    let (cfg, mut tickets) = warmed(&mut first);
    // Another server (a restart: its sessions are gone).
    let mut srv = server(true);
    let seen = connect(&mut srv, 2, &cfg, &mut tickets);
    // A full handshake; the request goes again after it.
    assert_eq!(srv.handshakes(), (1, 0));
    assert_eq!(srv.early_data(), (0, 1));
    assert_rejected_and_resent(&seen);
}

#[test]
fn a_server_with_early_data_off_resumes_but_rejects_the_early_data() {
    let mut first = server(true);
    let (cfg, mut tickets) = warmed(&mut first);
    let mut srv = server(false);
    let seen = connect(&mut srv, 2, &cfg, &mut tickets);
    assert_eq!(srv.handshakes(), (0, 1), "stateless tickets resume");
    assert_rejected_and_resent(&seen);
    // Its own tickets allow no early data, and the newest is spent first.
    let next = connect(&mut srv, 3, &cfg, &mut tickets);
    assert_eq!(next.offered(), None);
}

#[test]
fn tickets_are_single_use_a_replayed_one_gets_a_full_handshake() {
    let mut srv = server(true);
    let (cfg, mut tickets) = warmed(&mut srv);
    // The same ticket twice (a copy of the store before its use).
    let mut replay = tickets.clone();
    let once = connect(&mut srv, 2, &cfg, &mut tickets);
    assert_eq!(once.answered_in(), Some(1));
    let again = connect(&mut srv, 3, &cfg, &mut replay);
    assert_eq!(again.offered(), Some(MAX_EARLY_DATA));
    assert_eq!(srv.early_data(), (1, 1));
    assert_eq!(srv.handshakes(), (2, 1), "the replay pays the full flight");
    assert_eq!(again.answered_in(), Some(2));
    assert_eq!(again.app, REQUEST);
    // The client spends a ticket once: two kept, two used, none reused.
    let mut fresh = TicketStore::default();
    let none = connect(&mut srv, 4, &cfg, &mut fresh);
    assert_eq!(none.offered(), None);
}

#[test]
fn a_ticket_offered_for_another_server_name_is_not_resumed() {
    let mut srv = server(true);
    let (_, mut tickets) = warmed(&mut srv);
    // This server's tickets, offered in hellos that name another server.
    let mut moved = TicketStore::default();
    while let Some(t) = tickets.take(NAME) {
        moved.add("other.example", t);
    }
    let other = TlsClientConfig::stn("other.example");
    let seen = connect(&mut srv, 2, &other, &mut moved);
    assert_eq!(srv.handshakes(), (2, 0), "a full handshake");
    assert_eq!(srv.early_data(), (0, 1));
    assert_rejected_and_resent(&seen);
}

#[test]
fn a_request_larger_than_the_offer_is_held_for_the_handshake() {
    let mut srv = server(true);
    let (cfg, mut tickets) = warmed(&mut srv);
    let conn = ServerConnId(9);
    let mut client = TlsSession::new(&cfg);
    let mut r = ServerReplies::default();
    srv.on_accept(now(), conn, peer(), &mut r);
    let mut out = SessionOutput::default();
    client.on_event(now(), SocketEvent::Connected, &mut tickets, &mut out);
    let hello = out.send.len();
    let big = vec![1u8; MAX_EARLY_DATA as usize + 1];
    client.write(&big, &mut out.send);
    assert_eq!(out.send.len(), hello, "nothing sent early");
    let mut r = ServerReplies::default();
    srv.on_data(now(), conn, &out.send, &mut r);
    let mut out = SessionOutput::default();
    client.on_event(
        now(),
        SocketEvent::Data(Bytes::from(sent(&r))),
        &mut tickets,
        &mut out,
    );
    assert!(out.events.contains(&SocketEvent::Connected));
    let mut r = ServerReplies::default();
    srv.on_data(now(), conn, &out.send, &mut r);
    // Echoed in full after the handshake (records of at most 16 KiB).
    let mut out = SessionOutput::default();
    client.on_event(
        now(),
        SocketEvent::Data(Bytes::from(sent(&r))),
        &mut tickets,
        &mut out,
    );
    let got: usize = out
        .events
        .iter()
        .map(|e| match e {
            SocketEvent::Data(d) => d.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(got, big.len());
    // Offered and accepted, though nothing came early.
    assert_eq!(srv.early_data(), (1, 0));
}

#[test]
fn the_server_forgets_its_oldest_sessions_first() {
    let mut srv = server(true);
    let cfg = TlsClientConfig::stn(NAME);
    let mut oldest = TicketStore::default();
    connect(&mut srv, 1, &cfg, &mut oldest);
    // Enough other handshakes to push the first tickets out of the cache.
    let rounds = crate::tls::SERVER_SESSION_CACHE / crate::tls::TICKETS_PER_HANDSHAKE;
    for i in 0..rounds {
        let mut t = TicketStore::default();
        connect(&mut srv, 10 + i as u64, &cfg, &mut t);
    }
    let seen = connect(&mut srv, 5, &cfg, &mut oldest);
    assert_eq!(seen.offered(), Some(MAX_EARLY_DATA));
    assert_eq!(seen.answered_in(), Some(2), "forgotten: full handshake");
    assert_eq!(seen.app, REQUEST);
}

// ---- over the simulated TCP --------------------------------------------

mod over_tcp {
    use super::*;
    use crate::client::{ClientCx, SimClient};
    use crate::host::PortMode;
    use crate::ids::ClientId;
    use crate::link::LinkConditions;
    use crate::path::{Direction, PathConditions, PathSchedule};
    use crate::socket::SocketId;
    use crate::tcp::TcpStack;
    use crate::trace::TraceEvent;
    use crate::Simulation;

    const OWD: Duration = Duration::from_millis(50);
    /// How long after the offer the client writes its early request (so
    /// that a loss window can take its segment and not the ClientHello).
    const EARLY_AFTER: Duration = Duration::from_millis(10);

    fn target() -> SocketAddr {
        "10.0.0.2:443".parse().unwrap()
    }

    /// Two calls, one connection each: the first a full handshake, the
    /// second writes its request as early data [`EARLY_AFTER`] the offer.
    #[derive(Debug, Default)]
    struct TwoCalls {
        socket: Option<SocketId>,
        call: usize,
        write_at: Option<Instant>,
        sent: bool,
        got: Vec<u8>,
        answered: Vec<Instant>,
        connected: Vec<Instant>,
        failed: bool,
    }

    impl SimClient for TwoCalls {
        fn start(&mut self, cx: &mut ClientCx<'_>) {
            self.socket = Some(cx.connect(target()));
        }

        fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, s: SocketId, ev: SocketEvent) {
            if Some(s) != self.socket {
                return;
            }
            match ev {
                SocketEvent::TcpConnected => {}
                SocketEvent::EarlyData { .. } => {
                    self.write_at = Some(cx.now() + EARLY_AFTER);
                    cx.set_wakeup(self.write_at);
                }
                SocketEvent::Connected => {
                    self.connected.push(cx.now());
                    if self.write_at.is_none() {
                        self.sent = true;
                        let _ = cx.send(s, REQUEST);
                    }
                }
                SocketEvent::Data(d) => {
                    self.got.extend_from_slice(&d);
                    if self.got.len() >= REQUEST.len() * (self.call + 1) {
                        self.answered.push(cx.now());
                        let _ = cx.close(s);
                        self.call += 1;
                        self.write_at = None;
                        self.sent = false;
                        self.socket = (self.call < 2).then(|| cx.connect(target()));
                    }
                }
                _ => self.failed = true,
            }
        }

        fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
            // Early while the handshake runs, held by TLS otherwise.
            if let (Some(s), Some(at)) = (self.socket, self.write_at) {
                if cx.now() >= at && !self.sent {
                    self.sent = true;
                    let _ = cx.send(s, REQUEST);
                }
            }
        }

        fn is_finished(&self) -> bool {
            self.failed || self.call >= 2
        }
    }

    fn clean() -> PathConditions {
        PathConditions::symmetric(LinkConditions::with_delay(OWD))
    }

    /// Runs [`TwoCalls`] against an early-data echo server on `path`.
    fn run(path: PathSchedule) -> (Simulation<TwoCalls>, ClientId) {
        let mut sim = Simulation::new(3);
        sim.keep_trace_events(true);
        sim.add_host(target().ip(), path)
            .set_port(target().port(), PortMode::Listen(Box::new(server(true))));
        let id = sim.add_client(TwoCalls::default(), TcpStack::linux_classic());
        sim.set_client_tls(id, Some(TlsClientConfig::stn(NAME)));
        sim.run_until_finished(Instant::from_secs(30));
        (sim, id)
    }

    #[test]
    fn a_lost_early_data_segment_is_retransmitted_and_the_answer_is_whole() {
        let (clean_run, id) = run(PathSchedule::constant(clean()));
        let c = clean_run.client(id);
        assert!(!c.failed && c.answered.len() == 2, "{c:?}");
        // The second call connects when the first is answered; its early
        // request leaves when TCP is up plus the write's delay.
        let early_at = c.answered[0] + OWD * 2 + EARLY_AFTER;
        // Clean: the early request arrives with the ClientHello's flight,
        // the answer follows the server's flight: TCP + 1 RTT + the write's
        // delay.
        let second_start = c.answered[0];
        assert_eq!(c.answered[1], second_start + OWD * 4 + EARLY_AFTER);
        // Now lose every uplink segment around the early write only.
        let mut path = PathSchedule::constant(clean());
        path.up
            .set_at(early_at - Duration::from_millis(2), clean().outage().up);
        path.up
            .set_at(early_at + Duration::from_millis(2), clean().up);
        let (lossy, id) = run(path);
        let l = lossy.client(id);
        assert!(!l.failed && l.answered.len() == 2, "{l:?}");
        // The answer is complete (each call echoed once) ...
        assert_eq!(l.got, [REQUEST, REQUEST].concat());
        // ... and later: the server read the early data only once TCP
        // retransmitted it.
        assert!(
            l.answered[1] > c.answered[1],
            "{:?} vs {:?}",
            l.answered,
            c.answered
        );
        let dropped_up = lossy
            .trace()
            .events()
            .iter()
            .filter(|e| {
                matches!(e, TraceEvent::Dropped { dir: Direction::Up, packet, at, .. }
                    if packet.len > 0 && *at >= early_at - Duration::from_millis(2))
            })
            .count();
        assert_eq!(dropped_up, 1, "the early-data segment alone");
    }
}
