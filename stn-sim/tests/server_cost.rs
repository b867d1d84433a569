//! What connection attempts cost the server, as the simulated server host
//! counts them (`ServerHost::cost`, `Simulation::server_cost`): SYNs that
//! reached a listening port, handshakes completed (TCP, TLS), and
//! handshakes wasted on a race's loser that closed without a request.

mod common;

use std::net::SocketAddr;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::host::{PortMode, ServerCost};
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::TcpStack;
use stn_sim::tls::{TlsClientConfig, TlsServer};
use stn_sim::Simulation;

const OWD: Duration = Duration::from_millis(50);
const REQUEST: usize = 64;
const REPLY: usize = 100;

/// When the race's loser gives up its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoserCloses {
    /// Once its TCP handshake is done, before TLS (TLS sockets only).
    AtTcp,
    /// Once the socket is ready (after TLS, when the socket has it).
    AtReady,
}

/// Races two connections to the server: the first carries the request, the
/// second, the loser, is closed without one (`loser_closes`).
#[derive(Debug)]
struct Race {
    target: SocketAddr,
    loser_closes: LoserCloses,
    sockets: Vec<SocketId>,
    received: usize,
}

impl Race {
    fn new(loser_closes: LoserCloses) -> Self {
        Race {
            target: server(),
            loser_closes,
            sockets: Vec::new(),
            received: 0,
        }
    }
}

impl SimClient for Race {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        self.sockets = vec![cx.connect(self.target), cx.connect(self.target)];
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        let winner = self.sockets.first() == Some(&socket);
        match (winner, event, self.loser_closes) {
            (true, SocketEvent::Connected, _) => cx.send(socket, &[b'q'; REQUEST]).unwrap(),
            (true, SocketEvent::Data(d), _) => self.received += d.len(),
            (false, SocketEvent::TcpConnected, LoserCloses::AtTcp)
            | (false, SocketEvent::Connected, LoserCloses::AtReady) => cx.close(socket).unwrap(),
            _ => {}
        }
    }

    fn on_wakeup(&mut self, _cx: &mut ClientCx<'_>) {}

    fn is_finished(&self) -> bool {
        self.received >= REPLY
    }
}

fn clean() -> PathSchedule {
    PathSchedule::constant(PathConditions::symmetric(LinkConditions::with_delay(OWD)))
}

fn sink() -> SinkApp {
    SinkApp {
        expect: REQUEST,
        reply_len: REPLY,
        got: 0,
    }
}

/// Runs `client` for 5 s (long past the last close) against the server
/// behind `path`, listening with `app` (behind TLS when `tls`), and
/// returns whether it finished, the SYNs it sent and what it cost the
/// server.
fn run<C: SimClient>(
    client: C,
    path: PathSchedule,
    app: PortMode,
    tls: bool,
) -> (bool, usize, ServerCost) {
    let mut sim = Simulation::new(1);
    sim.keep_trace_events(true);
    sim.add_host(server().ip(), path)
        .set_port(server().port(), app);
    let id = sim.add_client(client, TcpStack::linux_classic());
    if tls {
        sim.set_client_tls(id, Some(TlsClientConfig::stn("hello.example")));
    }
    sim.run_until(Instant::from_secs(5));
    let cost = sim.server_cost();
    assert_eq!(sim.host(server().ip()).map(|h| h.cost()), Some(cost));
    let sent = uplink_times(sim.trace().events(), OWD, is_syn).len();
    (sim.client(id).is_finished(), sent, cost)
}

#[test]
fn a_race_loser_that_completed_its_handshake_is_a_wasted_server_handshake() {
    let listen = || PortMode::Listen(Box::new(sink()));
    // Without TLS the socket is ready once TCP is.
    let (done, sent, cost) = run(Race::new(LoserCloses::AtReady), clean(), listen(), false);
    assert!(done);
    assert_eq!(sent, 2);
    // Both handshakes completed; the winner carried the request, the
    // loser closed without one.
    assert_eq!(
        cost,
        ServerCost {
            syns: 2,
            tcp_handshakes: 2,
            tls_handshakes: 0,
            wasted_handshakes: 1,
        }
    );
    // One connection that carries its request wastes nothing.
    let one = OneShot::new(server(), vec![b'q'; REQUEST], REPLY);
    let (done, _, cost) = run(one, clean(), listen(), false);
    assert!(done);
    assert_eq!((cost.tcp_handshakes, cost.wasted_handshakes), (1, 0));
}

#[test]
fn a_syn_lost_on_the_link_is_sent_but_does_not_reach_the_server() {
    // The path is down for the first 2 s: Linux's SYNs at 0 s and 1 s are
    // lost, the one at 3 s gets through.
    let base = PathConditions::symmetric(LinkConditions::with_delay(OWD));
    let path = PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(2));
    let one = OneShot::new(server(), vec![b'q'; REQUEST], REPLY);
    let (done, sent, cost) = run(one, path, PortMode::Listen(Box::new(sink())), false);
    assert!(done);
    assert_eq!(sent, 3);
    assert_eq!(
        cost,
        ServerCost {
            syns: 1,
            tcp_handshakes: 1,
            tls_handshakes: 0,
            wasted_handshakes: 0,
        }
    );
    // A black-holed port is not a listener: its SYNs reach no server.
    let one = OneShot::new(server(), vec![b'q'; REQUEST], REPLY);
    let (_, sent, cost) = run(one, clean(), PortMode::BlackHole, false);
    assert!(sent >= 3, "{sent}");
    assert_eq!(cost, ServerCost::default());
}

#[test]
fn with_tls_the_server_counts_tls_handshakes_and_the_losers_wasted_ones() {
    let tls = || PortMode::Listen(Box::new(TlsServer::new(Box::new(sink()))));
    // The loser closes once its TLS handshake is done: two TLS handshakes,
    // one wasted.
    let (done, _, cost) = run(Race::new(LoserCloses::AtReady), clean(), tls(), true);
    assert!(done);
    assert_eq!(
        cost,
        ServerCost {
            syns: 2,
            tcp_handshakes: 2,
            tls_handshakes: 2,
            wasted_handshakes: 1,
        }
    );
    // The loser closes after TCP, before its ClientHello is answered: its
    // TLS handshake never completes, its TCP handshake is still wasted.
    let (done, _, cost) = run(Race::new(LoserCloses::AtTcp), clean(), tls(), true);
    assert!(done);
    assert_eq!((cost.tcp_handshakes, cost.tls_handshakes), (2, 1));
    assert_eq!(cost.wasted_handshakes, 1);
}
