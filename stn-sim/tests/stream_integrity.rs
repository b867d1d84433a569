//! Property: whatever the loss, jitter and bandwidth, TCP delivers the byte
//! stream in order, without gaps or duplicates, or ends with one clear
//! failure; and the same inputs give the same trace.

mod common;

use common::*;
use proptest::prelude::*;
use stn_proto::{Duration, Instant};
use stn_sim::apps::EchoApp;
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::link::{GilbertElliott, LinkConditions, LossModel};
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

#[derive(Debug, Default)]
struct EchoCheck {
    payload: Vec<u8>,
    received: Vec<u8>,
    terminal: Vec<SocketEvent>,
}

impl SimClient for EchoCheck {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        let s = cx.connect(server());
        // Queued before the handshake completes: sent once connected.
        cx.send(s, &self.payload).unwrap();
    }

    fn on_socket_event(&mut self, _cx: &mut ClientCx<'_>, _socket: SocketId, event: SocketEvent) {
        match event {
            SocketEvent::Data(d) => self.received.extend_from_slice(&d),
            SocketEvent::Connected => {}
            other => self.terminal.push(other),
        }
    }

    fn on_wakeup(&mut self, _cx: &mut ClientCx<'_>) {}

    fn is_finished(&self) -> bool {
        self.received.len() >= self.payload.len() || !self.terminal.is_empty()
    }
}

fn conditions(loss_pct: u8, bursty: bool, jitter_ms: u64, bps: Option<u64>) -> LinkConditions {
    let loss = if bursty {
        LossModel::GilbertElliott(GilbertElliott::with_rate_and_burst(
            f64::from(loss_pct) / 100.0,
            stn_proto::Duration::from_millis(100),
        ))
    } else {
        LossModel::percent(f64::from(loss_pct))
    };
    LinkConditions {
        delay: Duration::from_millis(40),
        jitter: Duration::from_millis(jitter_ms),
        bandwidth_bps: bps,
        loss,
        ..LinkConditions::default()
    }
}

fn run(seed: u64, size: usize, link: LinkConditions, stack: TcpStack) -> (EchoCheck, u64) {
    let mut sim = Simulation::new(seed);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(PathConditions::symmetric(link)),
    );
    sim.listen(
        server(),
        EchoApp {
            delay: Duration::from_millis(3),
        },
    )
    .unwrap();
    let payload: Vec<u8> = (0..size).map(|i| (i * 7 % 256) as u8).collect();
    let id = sim.add_client(
        EchoCheck {
            payload,
            ..Default::default()
        },
        stack,
    );
    sim.run_until_finished(Instant::from_secs(7200));
    let hash = sim.trace().hash();
    let c = std::mem::take(sim.client_mut(id));
    (c, hash)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn echo_is_exact_or_fails_cleanly(
        seed in any::<u64>(),
        size in 1usize..40_000,
        loss_pct in 0u8..=25,
        bursty in any::<bool>(),
        jitter_ms in 0u64..30,
        bps in prop::option::of(100_000u64..2_000_000),
        stack_kind in 0u8..3,
    ) {
        let stack = match stack_kind {
            0 => TcpStack::linux_classic(),
            1 => TcpStack::linux_6_5(),
            _ => TcpStack::xnu(),
        };
        let link = conditions(loss_pct, bursty, jitter_ms, bps);
        let (c, hash) = run(seed, size, link, stack.clone());
        // Whatever arrived is a prefix of what was sent: in order, no gaps,
        // no duplicates, no corruption.
        prop_assert!(c.received.len() <= c.payload.len());
        prop_assert_eq!(&c.received[..], &c.payload[..c.received.len()]);
        if c.received.len() < c.payload.len() {
            // Only a clear failure may stop the stream early.
            prop_assert_eq!(c.terminal.len(), 1, "stalled without an error");
            prop_assert!(matches!(c.terminal[0], SocketEvent::ConnectFailed(_) | SocketEvent::TimedOut));
        } else {
            prop_assert!(c.terminal.is_empty(), "{:?}", c.terminal);
        }
        // Deterministic.
        let (c2, hash2) = run(seed, size, link, stack);
        prop_assert_eq!(hash, hash2);
        prop_assert_eq!(c.received, c2.received);
    }
}
