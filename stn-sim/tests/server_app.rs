//! Server application plumbing: processing delays, server-initiated sends.

mod common;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::host::{ServerApp, ServerConnId, ServerReplies};
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::socket::SocketEvent;
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

/// Pushes "tick" every second after accepting, three times, then closes.
struct Ticker {
    left: u32,
}

impl ServerApp for Ticker {
    fn on_accept(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        _peer: std::net::SocketAddr,
        r: &mut ServerReplies,
    ) {
        r.wake(Duration::from_secs(1));
    }
    fn on_data(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        _data: &[u8],
        _r: &mut ServerReplies,
    ) {
    }
    fn on_wakeup(&mut self, _now: Instant, _conn: ServerConnId, r: &mut ServerReplies) {
        r.send(Duration::ZERO, &b"tick"[..]);
        self.left -= 1;
        if self.left == 0 {
            r.close(Duration::ZERO);
        } else {
            r.wake(Duration::from_secs(1));
        }
    }
}

#[test]
fn server_pushes_on_its_own_timer() {
    let owd = Duration::from_millis(50);
    let mut sim = Simulation::new(1);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(PathConditions::symmetric(LinkConditions::with_delay(owd))),
    );
    sim.listen(server(), Ticker { left: 3 }).unwrap();
    let id = sim.add_client(
        OneShot::new(server(), vec![], 12),
        TcpStack::linux_classic(),
    );
    sim.run_until(Instant::from_secs(10));
    let c = sim.client(id);
    let data: Vec<Instant> = c
        .events
        .iter()
        .filter(|(_, e)| matches!(e, SocketEvent::Data(_)))
        .map(|(t, _)| *t)
        .collect();
    // Accepted when the client's ACK lands (150 ms); ticks 1, 2, 3 s later, 50 ms on the wire.
    let ms = Instant::from_millis;
    assert_eq!(data, vec![ms(1200), ms(2200), ms(3200)]);
    assert_eq!(c.received, 12);
}

#[test]
fn echo_respects_processing_delay() {
    let owd = Duration::from_millis(20);
    let mut sim = Simulation::new(2);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(PathConditions::symmetric(LinkConditions::with_delay(owd))),
    );
    sim.listen(
        server(),
        stn_sim::apps::EchoApp {
            delay: Duration::from_millis(33),
        },
    )
    .unwrap();
    let id = sim.add_client(OneShot::new(server(), b"ping".to_vec(), 4), TcpStack::xnu());
    sim.run_until_finished(Instant::from_secs(10));
    let c = sim.client(id);
    // Connected at 40 ms, request lands at 60, echo leaves at 93, lands at 113.
    assert_eq!(
        c.time_of(|e| matches!(e, SocketEvent::Data(_))),
        Some(Instant::from_millis(113))
    );
}
