//! A middlebox at the client's edge of every path: a NAT (or a stateful
//! firewall) that forgets a TCP flow idle longer than its timeout.
//!
//! A flow's binding is made by its first outbound SYN and refreshed by
//! every packet that passes, either way. Once a flow has been idle (no
//! packet either way) for longer than the idle timeout, its binding is gone:
//! the next packet of the flow, in either direction, is dropped silently;
//! each later one is dropped too, and either answered with an RST to its
//! sender ([`AfterExpiry::Reset`], a firewall's `reject-with tcp-reset`, or
//! a NAT whose new mapping reaches a server that no longer knows the
//! 4-tuple) or not ([`AfterExpiry::BlackHole`]). A new connection (a new
//! SYN) gets a new binding. Neither end is told anything.
//!
//! The conditions may change over time ([`NatSchedule`]): a network change
//! moves the client to another path, so every binding made before it is
//! gone at once (the old flows' packets leave by another interface).
//!
//! Memory: one entry per flow the client opened, dropped once the flow has
//! been silent for [`FORGET_AFTER`] (a packet after that is treated as one of
//! a forgotten flow whose first packet was already dropped).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use stn_proto::{Duration, Instant};

use crate::tcp::{Flags, Segment};

/// A flow silent this long is dropped from the table.
pub const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// What happens to a forgotten flow's packets after the first, dropped one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AfterExpiry {
    /// Each is answered with an RST to its sender.
    Reset,
    /// Each is dropped silently.
    BlackHole,
}

impl AfterExpiry {
    /// `rst` / `black-hole`.
    pub fn name(self) -> &'static str {
        match self {
            AfterExpiry::Reset => "rst",
            AfterExpiry::BlackHole => "black-hole",
        }
    }
}

/// The middlebox's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NatConfig {
    /// A flow idle longer than this loses its binding.
    pub idle_timeout: Duration,
    /// What the later packets of a forgotten flow meet.
    pub after_expiry: AfterExpiry,
}

/// The middlebox's conditions over time: from each instant on, its config
/// (`None`: no middlebox); every binding is lost at each change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatSchedule {
    changes: Vec<(Instant, Option<NatConfig>)>,
}

impl NatSchedule {
    /// `config` from the start, for ever.
    pub fn constant(config: NatConfig) -> Self {
        NatSchedule {
            changes: vec![(Instant::ZERO, Some(config))],
        }
    }

    /// From `at` on, `config` (changes must be given in time order).
    #[must_use]
    pub fn then_at(mut self, at: Instant, config: Option<NatConfig>) -> Self {
        self.changes.push((at, config));
        self
    }

    /// The config at `t` and the instant it took effect.
    fn at(&self, t: Instant) -> (Instant, Option<NatConfig>) {
        self.changes
            .iter()
            .rev()
            .find(|(from, _)| *from <= t)
            .copied()
            .unwrap_or((Instant::ZERO, None))
    }
}

/// What the middlebox does with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It passes (and refreshes its flow's binding).
    Pass,
    /// It is dropped silently.
    Drop,
    /// It is dropped and its sender gets an RST.
    DropAndReset,
}

/// (client port, remote address): one flow of the client host.
type FlowKey = (u16, SocketAddr);

#[derive(Clone, Copy, Debug)]
struct Flow {
    /// The last packet of the flow, either way (passed or not).
    last_packet: Instant,
    /// Bound: packets pass. Not bound: the binding is gone.
    bound: bool,
    /// When the binding was made or last refreshed.
    refreshed: Instant,
    /// A forgotten flow's first packet was dropped already.
    first_dropped: bool,
}

/// Counters of what the middlebox did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NatStats {
    /// Bindings that timed out (counted when the next packet found them gone).
    pub expired: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// RSTs sent.
    pub resets: u64,
}

/// The middlebox. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Nat {
    schedule: NatSchedule,
    flows: BTreeMap<FlowKey, Flow>,
    stats: NatStats,
}

impl Nat {
    /// A middlebox following `schedule`.
    pub fn new(schedule: NatSchedule) -> Self {
        Nat {
            schedule,
            flows: BTreeMap::new(),
            stats: NatStats::default(),
        }
    }

    /// What it did so far.
    pub fn stats(&self) -> NatStats {
        self.stats
    }

    /// A packet from the client (`seg.src` is the client) at `now`.
    pub fn outbound(&mut self, now: Instant, seg: &Segment) -> Verdict {
        let key = (seg.src.port(), seg.dst);
        let v = self.packet(now, key, seg.is_syn_only());
        self.counted(never_reset_a_reset(v, seg))
    }

    /// A packet to the client (`seg.dst` is the client) at `now`.
    pub fn inbound(&mut self, now: Instant, seg: &Segment) -> Verdict {
        let key = (seg.dst.port(), seg.src);
        let v = self.packet(now, key, false);
        self.counted(never_reset_a_reset(v, seg))
    }

    fn counted(&mut self, v: Verdict) -> Verdict {
        if v == Verdict::DropAndReset {
            self.stats.resets += 1;
        }
        v
    }

    /// Whether the flow (client port, remote) would pass a packet at `now`
    /// (`None`: no middlebox then).
    pub fn is_bound(&self, now: Instant, port: u16, remote: SocketAddr) -> Option<bool> {
        let (since, config) = self.schedule.at(now);
        let config = config?;
        Some(self.flows.get(&(port, remote)).is_some_and(|f| {
            f.bound && f.refreshed >= since && now - f.refreshed <= config.idle_timeout
        }))
    }

    fn packet(&mut self, now: Instant, key: FlowKey, syn: bool) -> Verdict {
        let (since, config) = self.schedule.at(now);
        let Some(config) = config else {
            // No middlebox: nothing is tracked (flows made now start fresh
            // when one comes).
            return Verdict::Pass;
        };
        if syn {
            if !self.flows.contains_key(&key) {
                self.forget_silent(now);
            }
            self.flows.insert(
                key,
                Flow {
                    last_packet: now,
                    bound: true,
                    refreshed: now,
                    first_dropped: false,
                },
            );
            return Verdict::Pass;
        }
        let flow = self.flows.entry(key).or_insert(Flow {
            last_packet: now,
            bound: false,
            refreshed: now,
            first_dropped: true,
        });
        flow.last_packet = now;
        if flow.bound && (flow.refreshed < since || now - flow.refreshed > config.idle_timeout) {
            flow.bound = false;
            flow.first_dropped = false;
            self.stats.expired += 1;
        }
        if flow.bound {
            flow.refreshed = now;
            return Verdict::Pass;
        }
        self.stats.dropped += 1;
        if !flow.first_dropped {
            flow.first_dropped = true;
            return Verdict::Drop;
        }
        match config.after_expiry {
            AfterExpiry::Reset => Verdict::DropAndReset,
            AfterExpiry::BlackHole => Verdict::Drop,
        }
    }

    /// Drops the flows silent for [`FORGET_AFTER`].
    fn forget_silent(&mut self, now: Instant) {
        self.flows.retain(|_, f| now - f.last_packet < FORGET_AFTER);
    }
}

/// An RST is never answered with one (RFC 793).
fn never_reset_a_reset(v: Verdict, seg: &Segment) -> Verdict {
    if v == Verdict::DropAndReset && seg.flags.contains(Flags::RST) {
        Verdict::Drop
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn client() -> SocketAddr {
        "10.0.0.1:40000".parse().unwrap()
    }
    fn server() -> SocketAddr {
        "10.0.0.2:8081".parse().unwrap()
    }
    fn seg(src: SocketAddr, dst: SocketAddr, flags: Flags) -> Segment {
        Segment {
            src,
            dst,
            flags,
            seq: 1,
            ack: 1,
            payload: Bytes::new(),
            ts_val: Instant::ZERO,
            ts_ecr: None,
            sack: Default::default(),
        }
    }
    fn up() -> Segment {
        seg(client(), server(), Flags::ACK)
    }
    fn down() -> Segment {
        seg(server(), client(), Flags::ACK)
    }
    fn t(s: u64) -> Instant {
        Instant::from_secs(s)
    }
    fn nat(after: AfterExpiry) -> Nat {
        Nat::new(NatSchedule::constant(NatConfig {
            idle_timeout: Duration::from_secs(300),
            after_expiry: after,
        }))
    }

    #[test]
    fn traffic_either_way_keeps_the_binding() {
        let mut n = nat(AfterExpiry::Reset);
        assert_eq!(
            n.outbound(t(0), &seg(client(), server(), Flags::SYN)),
            Verdict::Pass
        );
        assert_eq!(
            n.inbound(t(300), &down()),
            Verdict::Pass,
            "exactly the timeout"
        );
        assert_eq!(n.outbound(t(600), &up()), Verdict::Pass);
        assert_eq!(n.is_bound(t(900), client().port(), server()), Some(true));
        assert_eq!(n.is_bound(t(901), client().port(), server()), Some(false));
        assert_eq!(n.stats(), NatStats::default());
    }

    #[test]
    fn an_idle_flow_drops_its_next_packet_then_resets_or_black_holes() {
        for (after, then) in [
            (AfterExpiry::Reset, Verdict::DropAndReset),
            (AfterExpiry::BlackHole, Verdict::Drop),
        ] {
            let mut n = nat(after);
            n.outbound(t(0), &seg(client(), server(), Flags::SYN));
            assert_eq!(n.outbound(t(301), &up()), Verdict::Drop, "silently");
            assert_eq!(n.outbound(t(302), &up()), then);
            assert_eq!(n.inbound(t(303), &down()), then, "either way");
            // A new connection gets a new binding.
            assert_eq!(
                n.outbound(t(304), &seg(client(), server(), Flags::SYN)),
                Verdict::Pass
            );
            assert_eq!(n.inbound(t(305), &down()), Verdict::Pass);
            assert_eq!(n.stats().expired, 1);
        }
        // The first packet may come from the server.
        let mut n = nat(AfterExpiry::Reset);
        n.outbound(t(0), &seg(client(), server(), Flags::SYN));
        assert_eq!(n.inbound(t(400), &down()), Verdict::Drop);
        assert_eq!(n.outbound(t(401), &up()), Verdict::DropAndReset);
    }

    #[test]
    fn a_network_change_loses_every_binding() {
        let config = NatConfig {
            idle_timeout: Duration::from_secs(300),
            after_expiry: AfterExpiry::BlackHole,
        };
        let mut n = Nat::new(NatSchedule::constant(config).then_at(t(100), Some(config)));
        n.outbound(t(0), &seg(client(), server(), Flags::SYN));
        assert_eq!(n.outbound(t(50), &up()), Verdict::Pass);
        assert_eq!(n.is_bound(t(99), client().port(), server()), Some(true));
        assert_eq!(n.is_bound(t(100), client().port(), server()), Some(false));
        assert_eq!(n.outbound(t(101), &up()), Verdict::Drop);
        // Off: everything passes and nothing is bound.
        let mut off = Nat::new(NatSchedule::constant(config).then_at(t(10), None));
        assert_eq!(off.outbound(t(20), &up()), Verdict::Pass);
        assert_eq!(off.is_bound(t(20), client().port(), server()), None);
    }

    #[test]
    fn silent_flows_are_dropped_from_the_table() {
        let mut n = nat(AfterExpiry::BlackHole);
        for p in 0..100u16 {
            n.outbound(
                t(u64::from(p)),
                &seg(
                    SocketAddr::new(client().ip(), 1000 + p),
                    server(),
                    Flags::SYN,
                ),
            );
        }
        assert_eq!(n.flows.len(), 100);
        n.outbound(t(100 + 3600), &seg(client(), server(), Flags::SYN));
        assert!(n.flows.len() <= 2, "{}", n.flows.len());
    }
}
