//! Data transfer: bandwidth, retransmission with back-off.

mod common;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{FreshConnClient, FreshConnConfig};
use stn_sim::host::PortMode;
use stn_sim::link::LinkSchedule;
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::socket::SocketEvent;
use stn_sim::tcp::{TcpStack, HEADER_BYTES};
use stn_sim::trace::{DropReason, TraceEvent};
use stn_sim::Simulation;

#[test]
fn upload_64k_on_3g_takes_serialization_plus_propagation() {
    const SIZE: usize = 64 * 1024;
    let c = Preset::ThreeG.conditions();
    let mut sim = Simulation::new(11);
    sim.add_host(server().ip(), PathSchedule::constant(c))
        .set_port(
            8080,
            PortMode::Listen(Box::new(SinkApp {
                expect: SIZE,
                reply_len: 1,
                got: 0,
            })),
        );
    let id = sim.add_client(
        OneShot::new(server(), vec![0x5a; SIZE], 1),
        TcpStack::linux_classic(),
    );
    sim.run_until_finished(Instant::from_secs(30));
    let client = sim.client(id);
    let connected = client.time_of(|e| *e == SocketEvent::Connected).unwrap();
    let replied = client
        .time_of(|e| matches!(e, SocketEvent::Data(_)))
        .unwrap();

    // The model's own analytic value. Handshake: SYN up, SYN-ACK down.
    let hs = c.up.serialization(HEADER_BYTES)
        + c.up.delay
        + c.down.serialization(HEADER_BYTES)
        + c.down.delay;
    assert_eq!(connected, Instant::ZERO + hs);
    // Then the uplink never idles: the window (10 × 1460 B ≈ 354 ms of
    // serialization at 330 kbit/s) outlasts the 200 ms RTT, so the final ACK
    // and the 45 data segments serialize back to back.
    let mss = 1460;
    let mut up = c.up.serialization(HEADER_BYTES);
    for i in 0..SIZE.div_ceil(mss) {
        let len = mss.min(SIZE - i * mss);
        up += c.up.serialization(HEADER_BYTES + len);
    }
    // The server ACKs the last segment, then sends the 1-byte reply.
    let down =
        c.down.serialization(HEADER_BYTES) + c.down.serialization(HEADER_BYTES + 1) + c.down.delay;
    let expected = connected + up + c.up.delay + down;
    assert_eq!(replied, expected, "connected {connected:?}");
    // And it is what a back-of-envelope estimate says: size/bandwidth plus
    // two RTTs (handshake; last segment up and the reply down), the rest
    // being header bytes.
    let rough = Duration::from_secs_f64(SIZE as f64 * 8.0 / 330_000.0) + 2 * c.base_rtt();
    let diff = if replied.since_origin() > rough {
        replied.since_origin() - rough
    } else {
        rough - replied.since_origin()
    };
    assert!(
        diff < Duration::from_millis(100),
        "{replied:?} vs {rough:?}"
    );
    assert_eq!(sim.link_stats(server().ip()).unwrap().0.queue_drops, 0);
}

#[test]
fn lost_request_is_probed_then_retransmitted_with_exponential_backoff() {
    // 30 ms each way; the uplink loses everything in [50 ms, 1.5 s): the
    // request sent at 60 ms (right after the handshake), its probe and its
    // first two retransmissions are lost.
    let base = Preset::LossPercent(0.0).conditions();
    let mut path = PathSchedule::constant(base);
    path.up = LinkSchedule::constant(base.up)
        .then_at(Instant::from_millis(50), base.up.outage())
        .then_at(Instant::from_millis(1500), base.up);
    let mut sim = Simulation::new(12);
    sim.add_host(server().ip(), path).set_port(
        8080,
        PortMode::Listen(Box::new(FixedResponseApp::new(10, Duration::ZERO))),
    );
    let mut cfg = FreshConnConfig::okhttp_2017(server());
    cfg.max_calls = 1;
    let id = sim.add_client(FreshConnClient::new(cfg), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(30));
    let req_len = sim.client(id).request_len();
    let sends = uplink_times(sim.trace().events(), base.up.delay, |_, len| len == req_len);
    // First RTT sample 60 ms: RTO = 60 + max(200, 2·60) = 260 ms; the tail
    // loss probe (2·60 + 200 = 320 ms) is capped at the RTO and goes
    // without backing off; the RTO then runs from the probe and doubles
    // (520 ms, 1.04 s). Each timer fires on the wheel (4 ms jiffies, 32 ms
    // buckets above 252 ms): armed at jiffy 15 for 65 jiffies, the probe
    // fires at bucket 88 (352 ms); the RTO at 160 (640 ms), 296 (1.184 s)
    // and 560 (2.24 s).
    let ms = |v: u64| Instant::from_millis(v);
    assert_eq!(sends, vec![ms(60), ms(352), ms(640), ms(1184), ms(2240)]);
    let losses = sim
        .trace()
        .events()
        .iter()
        .filter(|e| matches!(e, TraceEvent::Dropped { reason: DropReason::Loss, packet, .. } if packet.len == req_len))
        .count();
    assert_eq!(losses, 4);
    let call = sim.client(id).calls()[0];
    assert!(call.result.is_ok(), "{call:?}");
    // Request arrives at 2.27 s; the response comes straight back.
    assert_eq!(call.finished, ms(2300));
}

#[test]
fn bulk_transfer_survives_heavy_loss_both_ways() {
    let size = 40_000;
    let c = Preset::ThreeG.conditions().with_loss_percent(20.0);
    let mut sim = Simulation::new(13);
    sim.add_host(server().ip(), PathSchedule::constant(c))
        .set_port(
            8080,
            PortMode::Listen(Box::new(SinkApp {
                expect: size,
                reply_len: 5000,
                got: 0,
            })),
        );
    let id = sim.add_client(OneShot::new(server(), vec![1; size], 5000), TcpStack::xnu());
    sim.run_until_finished(Instant::from_secs(600));
    let client = sim.client(id);
    assert_eq!(client.received, 5000, "{:?}", client.events.last());
    let (up, down) = sim.link_stats(server().ip()).unwrap();
    assert!(up.lost > 0 && down.lost > 0);
}

#[test]
fn download_64k_on_3g_slow_start_leaves_one_idle_gap() {
    const SIZE: usize = 64 * 1024;
    let c = Preset::ThreeG.conditions();
    let mut sim = Simulation::new(14);
    sim.add_host(server().ip(), PathSchedule::constant(c))
        .set_port(
            8080,
            PortMode::Listen(Box::new(SinkApp {
                expect: 100,
                reply_len: SIZE,
                got: 0,
            })),
        );
    let id = sim.add_client(
        OneShot::new(server(), vec![0; 100], SIZE),
        TcpStack::linux_classic(),
    );
    sim.run_until_finished(Instant::from_secs(30));
    assert_eq!(sim.client(id).received, SIZE);
    let arrivals: Vec<Instant> = sim
        .trace()
        .events()
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Delivered {
                at,
                dir: stn_sim::path::Direction::Down,
                packet,
            } if packet.len > 0 => Some(*at),
            _ => None,
        })
        .collect();
    assert_eq!(arrivals.len(), SIZE.div_ceil(1460));
    let full = c.down.serialization(HEADER_BYTES + 1460);
    let gaps: Vec<Duration> = arrivals
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > full)
        .collect();
    // The initial window of 10 segments drains in 10 × 15.4 ms = 154 ms, less
    // than the 200 ms RTT: the link idles once until the first ACK is back;
    // from then on slow start (2 segments per ACK) keeps it busy. A fixed
    // 10-segment window would idle after every window (4 gaps).
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    // The gap: first ACK back after ser(seg) + owd + ser(ack) + owd, minus
    // the 9 segments already serialized behind the first, plus one serialization.
    let first_ack_back = full + c.down.delay + c.up.serialization(HEADER_BYTES) + c.up.delay;
    let expected_gap = first_ack_back - 9 * full;
    assert_eq!(gaps[0], expected_gap);
}
