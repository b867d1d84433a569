//! The idle-timeout NAT on a real simulated TCP connection: an idle flow's
//! next write is lost, then answered with an RST or black-holed; traffic
//! keeps the binding; a new connection gets a new one.

use std::net::SocketAddr;

use stn_proto::codec::longlink::{encode_to_bytes, Frame};
use stn_proto::{Duration, Instant};
use stn_sim::bench::long_server::LongLinkServerApp;
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::middlebox::{AfterExpiry, Nat, NatConfig, NatSchedule};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

const SERVER: &str = "10.0.0.2:8081";

/// Connects, then writes a noop at each of `writes` (virtual seconds) and
/// records every socket event.
struct Prober {
    writes: Vec<u64>,
    socket: Option<SocketId>,
    events: Vec<(Instant, SocketEvent)>,
    alive_at_write: Vec<Option<bool>>,
}

impl Prober {
    fn new(writes: Vec<u64>) -> Self {
        Prober {
            writes,
            socket: None,
            events: Vec::new(),
            alive_at_write: Vec::new(),
        }
    }
    fn echoes(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e, SocketEvent::Data(_)))
            .count()
    }
    fn ended(&self) -> Option<&(Instant, SocketEvent)> {
        self.events.iter().find(|(_, e)| {
            matches!(
                e,
                SocketEvent::Reset | SocketEvent::TimedOut | SocketEvent::Closed
            )
        })
    }
}

fn noop() -> Vec<u8> {
    encode_to_bytes(&Frame::noop(), 0)
        .expect("encodes")
        .to_vec()
}

impl SimClient for Prober {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        let addr: SocketAddr = SERVER.parse().expect("addr");
        self.socket = Some(cx.connect(addr));
        cx.set_wakeup(self.writes.first().map(|s| Instant::from_secs(*s)));
    }
    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, _s: SocketId, ev: SocketEvent) {
        self.events.push((cx.now(), ev));
    }
    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        if let Some(s) = self.socket {
            self.alive_at_write.push(cx.binding_alive(s));
            let _ = cx.send(s, &noop());
        }
        self.writes.remove(0);
        cx.set_wakeup(self.writes.first().map(|s| Instant::from_secs(*s)));
    }
    fn is_finished(&self) -> bool {
        false
    }
}

fn run(nat: Option<NatConfig>, writes: Vec<u64>, until: u64) -> Simulation<Prober> {
    let addr: SocketAddr = SERVER.parse().expect("addr");
    let mut sim = Simulation::new(3);
    sim.add_host(
        addr.ip(),
        PathSchedule::constant(Preset::ThreeG.conditions()),
    );
    sim.listen(addr, LongLinkServerApp::new(10, Duration::ZERO))
        .expect("host");
    sim.set_middlebox(nat.map(|c| Nat::new(NatSchedule::constant(c))));
    sim.add_client(Prober::new(writes), TcpStack::linux_classic());
    sim.run_until(Instant::from_secs(until));
    sim
}

fn nat(after: AfterExpiry) -> Option<NatConfig> {
    Some(NatConfig {
        idle_timeout: Duration::from_secs(300),
        after_expiry: after,
    })
}

#[test]
fn heartbeats_inside_the_timeout_keep_the_flow() {
    let sim = run(nat(AfterExpiry::Reset), vec![250, 500, 750, 1000], 1100);
    let p = sim.client(stn_sim::client::ClientId(0));
    assert_eq!(p.echoes(), 4);
    assert!(p.ended().is_none());
    assert_eq!(p.alive_at_write, vec![Some(true); 4]);
}

#[test]
fn an_idle_flow_meets_an_rst_after_its_first_packet_is_lost() {
    let sim = run(nat(AfterExpiry::Reset), vec![100, 450], 600);
    let p = sim.client(stn_sim::client::ClientId(0));
    assert_eq!(
        p.echoes(),
        1,
        "only the write inside the timeout is answered"
    );
    assert_eq!(p.alive_at_write, vec![Some(true), Some(false)]);
    let (at, ev) = p.ended().expect("the connection ends");
    assert_eq!(*ev, SocketEvent::Reset);
    // The first copy was dropped; the retransmission after one RTO met the RST.
    assert!(
        *at > Instant::from_secs(450) && *at < Instant::from_secs(455),
        "{at:?}"
    );
    let stats = sim.middlebox().expect("middlebox").stats();
    assert_eq!((stats.expired, stats.resets), (1, 1));
}

#[test]
fn a_black_holed_flow_hears_nothing_until_tcp_gives_up() {
    let sim = run(nat(AfterExpiry::BlackHole), vec![100, 450], 2000);
    let p = sim.client(stn_sim::client::ClientId(0));
    assert_eq!(p.echoes(), 1);
    let (at, ev) = p.ended().expect("TCP gives up");
    assert_eq!(*ev, SocketEvent::TimedOut);
    assert!(*at > Instant::from_secs(600), "{at:?}");
    assert_eq!(sim.middlebox().expect("middlebox").stats().resets, 0);
}

#[test]
fn without_a_middlebox_idle_flows_live_for_ever() {
    let sim = run(None, vec![100, 5000], 5100);
    let p = sim.client(stn_sim::client::ClientId(0));
    assert_eq!(p.echoes(), 2);
    assert_eq!(p.alive_at_write, vec![None, None]);
}
