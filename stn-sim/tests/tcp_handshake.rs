//! Connection establishment: SYN schedules, outages, refused and black-holed ports.

mod common;

use common::*;
use stn_proto::ConnectError;
use stn_proto::{Duration, Instant};
use stn_sim::host::PortMode;
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::socket::SocketEvent;
use stn_sim::tcp::{SynSchedule, TcpStack};
use stn_sim::{RunOutcome, Simulation};

fn stacks() -> [(TcpStack, &'static str); 3] {
    [
        (TcpStack::linux_classic(), "linux<6.5"),
        (TcpStack::linux_6_5(), "linux>=6.5"),
        (TcpStack::xnu(), "xnu"),
    ]
}

#[test]
fn syn_schedules_against_a_black_hole() {
    let expected: [(&[u64], u64); 3] = [
        (&[0, 1, 3, 7, 15, 31, 63], 127),
        (&[0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67], 131),
        (&[0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67], 75),
    ];
    for ((stack, name), (syns, give_up)) in stacks().into_iter().zip(expected) {
        let owd = Duration::from_millis(30);
        let mut sim = Simulation::new(1);
        sim.add_host(
            server().ip(),
            PathSchedule::constant(PathConditions::symmetric(LinkConditions::with_delay(owd))),
        )
        .set_port(8080, PortMode::BlackHole);
        let id = sim.add_client(OneShot::new(server(), vec![], 0), stack.clone());
        assert_eq!(
            sim.run_until_finished(Instant::from_secs(300)),
            RunOutcome::AllFinished
        );
        // The nominal schedule; Linux's timer wheel fires each gap up to a
        // granule late, so its SYNs drift later (`TcpStack::syn_times`).
        let nominal: Vec<Duration> = syns.iter().map(|s| Duration::from_secs(*s)).collect();
        assert_eq!(stack.syn_schedule.syn_offsets(), nominal, "{name}");
        assert_eq!(stack.syn_schedule.give_up(), Duration::from_secs(give_up));
        let (want, failed_at) = stack.syn_times(Instant::ZERO);
        let sends = uplink_times(sim.trace().events(), owd, is_syn);
        assert_eq!(sends, want, "{name}");
        for (t, o) in want.iter().zip(&nominal) {
            let late = *t - (Instant::ZERO + *o);
            let bound = if name == "xnu" { 0 } else { 3000 };
            assert!(late <= Duration::from_millis(bound), "{name}: {late:?}");
        }
        let c = sim.client(id);
        assert_eq!(
            c.events,
            vec![(
                failed_at,
                SocketEvent::ConnectFailed(ConnectError::TimedOut)
            )],
            "{name}"
        );
    }
}

#[test]
fn outage_then_recovery_connects_at_the_first_syn_after_the_outage() {
    // Base path: the "N% Loss" shape with 0% loss: 30 ms each way, unlimited.
    let base = Preset::LossPercent(0.0).conditions();
    let rtt = base.base_rtt();
    for (stack, name) in stacks() {
        let (syns, _) = stack.syn_times(Instant::ZERO);
        for r in [5u64, 10, 15, 20, 25, 30] {
            let mut sim = Simulation::new(r);
            sim.add_host(
                server().ip(),
                PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(r)),
            )
            .set_port(8080, PortMode::Listen(Box::new(SilentApp)));
            let id = sim.add_client(OneShot::new(server(), vec![], 0), stack.clone());
            sim.run_until_finished(Instant::from_secs(200));
            let first_after = syns
                .iter()
                .copied()
                .find(|t| *t >= Instant::from_secs(r))
                .unwrap();
            let c = sim.client(id);
            assert_eq!(
                c.events,
                vec![(first_after + rtt, SocketEvent::Connected)],
                "{name}, outage {r} s"
            );
        }
    }
}

#[test]
fn outage_predictions_match_the_published_table() {
    // peers.md §3.3 (connect part): classic Linux connects at 7/15/31 s,
    // xnu at 5/11/19/35 s for outages of 5/10/15/20..30 s.
    let classic: Vec<u64> = [5u64, 10, 15, 20, 25, 30]
        .iter()
        .map(|r| {
            SynSchedule::LinuxClassic
                .syn_offsets_secs()
                .iter()
                .copied()
                .find(|o| o >= r)
                .unwrap()
        })
        .collect();
    assert_eq!(classic, vec![7, 15, 15, 31, 31, 31]);
    let xnu: Vec<u64> = [5u64, 10, 15, 20, 25, 30]
        .iter()
        .map(|r| {
            SynSchedule::Xnu
                .syn_offsets_secs()
                .iter()
                .copied()
                .find(|o| o >= r)
                .unwrap()
        })
        .collect();
    assert_eq!(xnu, vec![5, 11, 19, 35, 35, 35]);
}

#[test]
fn refused_port_fails_after_one_rtt() {
    let base = Preset::ThreeG.conditions();
    let mut sim = Simulation::new(3);
    sim.add_host(server().ip(), PathSchedule::constant(base))
        .set_port(8080, PortMode::Refuse);
    let id = sim.add_client(OneShot::new(server(), vec![], 0), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(10));
    // SYN up, RST down: one RTT plus 40-byte serialization each way.
    let expected =
        Instant::ZERO + base.base_rtt() + base.up.serialization(40) + base.down.serialization(40);
    assert_eq!(
        sim.client(id).events,
        vec![(expected, SocketEvent::ConnectFailed(ConnectError::Refused))]
    );
}

#[test]
fn unconfigured_port_refuses_and_unknown_host_times_out() {
    let mut sim = Simulation::new(4);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(Preset::LossPercent(0.0).conditions()),
    );
    let refused = sim.add_client(
        OneShot::new("10.0.0.2:9999".parse().unwrap(), vec![], 0),
        TcpStack::xnu(),
    );
    let nowhere = sim.add_client(
        OneShot::new("10.9.9.9:80".parse().unwrap(), vec![], 0),
        TcpStack::xnu(),
    );
    sim.run_until_finished(Instant::from_secs(100));
    assert_eq!(
        sim.client(refused).events,
        vec![(
            Instant::from_millis(60),
            SocketEvent::ConnectFailed(ConnectError::Refused)
        )]
    );
    assert_eq!(
        sim.client(nowhere).events,
        vec![(
            Instant::from_secs(75),
            SocketEvent::ConnectFailed(ConnectError::TimedOut)
        )]
    );
}

#[test]
fn server_retransmits_syn_ack_when_it_is_lost() {
    // Downlink dead for the first 2.5 s and a client that sends one SYN only:
    // the SYN arrives at 30 ms, the SYN-ACK and its first retransmission
    // are lost, the second gets through. On the timer wheel: the first
    // retransmission armed at 30 ms (jiffy 7) for 1 s expires at jiffy 257,
    // bucket 264 (1.056 s); the second armed there for 2 s at jiffy 764,
    // bucket 768 (3.072 s), arriving at 3.102 s.
    let base = Preset::LossPercent(0.0).conditions();
    let mut path = PathSchedule::constant(base);
    path.down = stn_sim::link::LinkSchedule::constant(base.down.outage())
        .then_at(Instant::from_millis(2500), base.down);
    let mut sim = Simulation::new(5);
    sim.add_host(server().ip(), path)
        .set_port(8080, PortMode::Listen(Box::new(SilentApp)));
    let stack = TcpStack {
        syn_schedule: SynSchedule::Custom {
            syn_offsets_ms: vec![0],
            give_up_ms: 60_000,
        },
        ..TcpStack::linux_classic()
    };
    let id = sim.add_client(OneShot::new(server(), vec![], 0), stack);
    sim.run_until_finished(Instant::from_secs(100));
    assert_eq!(
        sim.client(id).events,
        vec![(Instant::from_millis(3102), SocketEvent::Connected)]
    );
}
