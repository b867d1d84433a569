//! The physical limit (peers.md §8.3): the earliest a call could possibly
//! complete on a given network realisation, to report every client
//! against. It is a **true lower bound**: no client finishes a call before
//! it in any run (`tests/oracle_bound.rs` checks it over seeds, suites and
//! matrix cells).
//!
//! **Why it is a bound, by construction.** The oracle is not a
//! [`crate::client::SimClient`] (the client seam offers only TCP sockets);
//! it walks the simulator's own links, built by the same function from the
//! same seed and host address ([`PhysicalLimit::new`]), so it meets the
//! same outages and the same Gilbert–Elliott burst timeline (bursts are in
//! time, [`crate::link::GilbertElliott`]). For each one-way message it
//! takes the earliest instant at or after the message may leave at which a
//! packet has any chance to pass (loss probability below 1), and lets it
//! arrive after the serialization of all its segments and the smallest
//! delay the link can give (`delay − jitter`, no queue, no FIFO hold-back).
//! Per-packet (Bernoulli) losses cost it nothing: a sender that knows the
//! draws re-sends in the same instant, and every client's packets meet the
//! draws of the same stream in the order they send. Any client's message
//! leaves no earlier than the message it answers arrived, at an instant
//! that passes, and so arrives no earlier than the oracle's. Calls are
//! chained the same way: call `i + 1` starts when call `i` completed.
//!
//! A call is a chain of one-way messages: [`fresh_tcp_call`] — SYN,
//! SYN-ACK, request, response (k = 4); [`long_link_call`] — request,
//! response on an established connection (k = 2).
//! [`PhysicalLimit::run_sequence`] takes a *setup* chain (the handshake)
//! once at the start and then each call's exchange: a client may open a
//! connection ahead of the call that uses it (a pool, a long link, a
//! spare connection), so only the first call is bound to wait for one.
//!
//! The bound uses the conditions in force at the send instant (a schedule
//! that later lowers the delay or raises the bandwidth is tried at its
//! change instants too). It never times out; it gives up at the horizon.

use std::net::IpAddr;

use stn_proto::{Duration, Instant};

use crate::link::{Link, LinkConditions};
use crate::path::{Direction, PathSchedule};
use crate::tcp::HEADER_BYTES;

/// One protocol message of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Which way it travels.
    pub dir: Direction,
    /// Payload bytes (0 for a bare SYN / SYN-ACK); each segment also carries
    /// [`HEADER_BYTES`].
    pub payload: usize,
    /// Processing delay at the sender between the previous message's arrival
    /// and this message's first send.
    pub after: Duration,
}

/// The messages of a call on a fresh TCP connection (k = 4): SYN, SYN-ACK,
/// request (+ACK), response after `server_delay`.
pub fn fresh_tcp_call(
    request_len: usize,
    response_len: usize,
    server_delay: Duration,
) -> Vec<Message> {
    let mut v = vec![
        Message {
            dir: Direction::Up,
            payload: 0,
            after: Duration::ZERO,
        },
        Message {
            dir: Direction::Down,
            payload: 0,
            after: Duration::ZERO,
        },
    ];
    v.extend(long_link_call(request_len, response_len, server_delay));
    v
}

/// The TLS 1.3 handshake after the TCP one (RFC 8446 §2): the
/// ClientHello, then the server's flight (`flight_len` bytes: the
/// certificate chain of a full handshake). The client's Finished travels
/// with its first request, so a call on a fresh TLS connection is k = 6
/// (peers.md §8.3).
pub fn tls_handshake(client_hello_len: usize, flight_len: usize) -> Vec<Message> {
    vec![
        Message {
            dir: Direction::Up,
            payload: client_hello_len,
            after: Duration::ZERO,
        },
        Message {
            dir: Direction::Down,
            payload: flight_len,
            after: Duration::ZERO,
        },
    ]
}

/// The messages of a call on an established connection (k = 2): request,
/// response after `server_delay`.
pub fn long_link_call(
    request_len: usize,
    response_len: usize,
    server_delay: Duration,
) -> Vec<Message> {
    vec![
        Message {
            dir: Direction::Up,
            payload: request_len,
            after: Duration::ZERO,
        },
        Message {
            dir: Direction::Down,
            payload: response_len,
            after: server_delay,
        },
    ]
}

/// The result of one oracle run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OracleRun {
    /// When the last message arrived: the call's completion.
    pub completed: Instant,
    /// Arrival time of each message of the call.
    pub arrivals: Vec<Instant>,
    /// Segments the messages consist of (one copy each), as wire cost.
    pub packets_sent: u64,
}

/// The physical-limit oracle for one path.
///
/// ```
/// use stn_sim::clients::oracle::{fresh_tcp_call, PhysicalLimit};
/// use stn_sim::{path::PathSchedule, preset::Preset};
/// use stn_proto::{Duration, Instant};
///
/// // 100% loss for 20 s, then the loss-free "N% Loss" base path (30 ms each way).
/// let base = Preset::LossPercent(0.0).conditions();
/// let path = PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(20));
/// let oracle = PhysicalLimit::new(&path, 1, "10.0.0.2".parse().unwrap());
/// let run = oracle.run(Instant::ZERO,
///     &fresh_tcp_call(100, 100, Duration::ZERO), Instant::from_secs(100)).unwrap();
/// assert_eq!(run.completed, Instant::from_secs(20) + 4 * Duration::from_millis(30));
/// ```
#[derive(Clone, Debug)]
pub struct PhysicalLimit {
    up: Link,
    down: Link,
    mss: usize,
}

impl PhysicalLimit {
    /// The oracle of the path to `host` in a simulation with root `seed`
    /// ([`crate::Simulation::new`]`(seed)`, the host added with `path`):
    /// the same links, the same burst timeline.
    pub fn new(path: &PathSchedule, seed: u64, host: IpAddr) -> Self {
        let (up, down) = crate::network::path_links(seed, host, path);
        PhysicalLimit {
            up,
            down,
            mss: 1460,
        }
    }

    /// The earliest completion of `messages` starting at `t0`, or `None` if
    /// some message cannot be delivered by `horizon`. Each run starts from
    /// the initial link state, so runs are repeatable.
    pub fn run(&self, t0: Instant, messages: &[Message], horizon: Instant) -> Option<OracleRun> {
        let (mut up, mut down) = (self.up.clone(), self.down.clone());
        self.run_on(&mut up, &mut down, t0, messages, horizon)
    }

    /// `calls` calls back to back from `t0` (the benchmark loop: each starts
    /// when the previous completed), after `setup` (the connection's
    /// handshake) once from `t0`: call `i` sends its first message at the
    /// later of its start and the end of `setup`. Stops early at the first
    /// call that cannot complete by `horizon`.
    pub fn run_sequence(
        &self,
        t0: Instant,
        setup: &[Message],
        call: &[Message],
        calls: usize,
        horizon: Instant,
    ) -> Vec<OracleRun> {
        let (mut up, mut down) = (self.up.clone(), self.down.clone());
        let mut runs = Vec::with_capacity(calls.min(1 << 16));
        let Some(ready) = self.run_on(&mut up, &mut down, t0, setup, horizon) else {
            return runs;
        };
        let mut start = t0;
        for i in 0..calls {
            let from = start.max(ready.completed);
            let Some(mut run) = self.run_on(&mut up, &mut down, from, call, horizon) else {
                break;
            };
            if i == 0 {
                run.packets_sent += ready.packets_sent;
            }
            start = run.completed;
            runs.push(run);
        }
        runs
    }

    fn run_on(
        &self,
        up: &mut Link,
        down: &mut Link,
        t0: Instant,
        messages: &[Message],
        horizon: Instant,
    ) -> Option<OracleRun> {
        let mut ready = t0;
        let mut arrivals = Vec::with_capacity(messages.len());
        let mut packets_sent = 0u64;
        for m in messages {
            let link = match m.dir {
                Direction::Up => &mut *up,
                Direction::Down => &mut *down,
            };
            let wire = self.segments(m.payload);
            packets_sent += wire.len() as u64;
            let arrival = earliest_arrival(link, ready + m.after, &wire, horizon)?;
            arrivals.push(arrival);
            ready = arrival;
        }
        Some(OracleRun {
            completed: ready,
            arrivals,
            packets_sent,
        })
    }

    /// Wire sizes of the segments of a `payload`-byte message.
    fn segments(&self, payload: usize) -> Vec<usize> {
        let n = payload.div_ceil(self.mss).max(1);
        (0..n)
            .map(|i| HEADER_BYTES + (payload - i * self.mss).min(self.mss))
            .collect()
    }
}

/// When the last of `wire` segments, all offered together no earlier than
/// `ready`, can arrive at the earliest: the first instant the link passes
/// anything, then serialization of every segment back to back and the
/// smallest propagation delay. Later schedule changes are tried too (one
/// may bring a shorter delay); they are evaluated on a copy, so `link`'s
/// burst timeline only advances to the chosen instant.
fn earliest_arrival(
    link: &mut Link,
    ready: Instant,
    wire: &[usize],
    horizon: Instant,
) -> Option<Instant> {
    let arrive = |t: Instant, c: &LinkConditions| {
        let ser = wire
            .iter()
            .fold(Duration::ZERO, |d, w| d + c.serialization(*w));
        t + ser + c.delay.saturating_sub(c.jitter)
    };
    let later: Vec<Instant> = link
        .schedule()
        .changes()
        .iter()
        .map(|(at, _)| *at)
        .filter(|at| *at > ready && *at <= horizon)
        .collect();
    let mut probe = (!later.is_empty()).then(|| link.clone());
    let first = link.next_passable(ready, horizon)?;
    let mut best = arrive(first, link.schedule().at(first));
    if let Some(probe) = probe.as_mut() {
        for at in later {
            if at >= best {
                break;
            }
            if let Some(t) = probe.next_passable(at, horizon) {
                best = best.min(arrive(t, probe.schedule().at(t)));
            }
        }
    }
    Some(best)
}

/// The reference lower bound of the sensitivity test (peers.md §8.3):
/// `R + k·OWD` for an outage of `outage` from t = 0, `k` one-way deliveries
/// of `one_way` each (no serialization).
pub fn sensitivity_bound(outage: Duration, k: u32, one_way: Duration) -> Instant {
    Instant::ZERO + outage + one_way * k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{GilbertElliott, LossModel};
    use crate::preset::Preset;

    fn oracle(path: PathSchedule) -> PhysicalLimit {
        PhysicalLimit::new(&path, 7, "10.0.0.2".parse().unwrap())
    }

    #[test]
    fn clean_path_is_k_one_way_delays() {
        let base = Preset::LossPercent(0.0).conditions();
        let o = oracle(PathSchedule::constant(base));
        let fresh = o
            .run(
                Instant::from_secs(1),
                &fresh_tcp_call(10, 10, Duration::ZERO),
                Instant::MAX,
            )
            .unwrap();
        assert_eq!(fresh.completed, Instant::from_millis(1120));
        assert_eq!(fresh.packets_sent, 4);
        let long = o
            .run(
                Instant::from_secs(1),
                &long_link_call(10, 10, Duration::from_millis(5)),
                Instant::MAX,
            )
            .unwrap();
        assert_eq!(long.completed, Instant::from_millis(1065));
    }

    #[test]
    fn outage_starts_at_link_up() {
        let base = Preset::ThreeG.conditions();
        let path = PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(12));
        let o = oracle(path);
        let run = o
            .run(
                Instant::ZERO,
                &fresh_tcp_call(100, 100, Duration::ZERO),
                Instant::from_secs(100),
            )
            .unwrap();
        assert_eq!(
            run.arrivals[0],
            Instant::from_secs(12) + base.up.delay + base.up.serialization(40)
        );
        let lower = sensitivity_bound(Duration::from_secs(12), 4, Duration::from_millis(100));
        assert!(run.completed > lower && run.completed < lower + Duration::from_millis(20));
        // A permanent outage never completes.
        let dead = oracle(PathSchedule::constant(base.outage()));
        assert_eq!(
            dead.run(
                Instant::ZERO,
                &fresh_tcp_call(1, 1, Duration::ZERO),
                Instant::from_secs(50)
            ),
            None
        );
    }

    #[test]
    fn per_packet_loss_costs_nothing_and_jitter_is_taken_at_its_low_end() {
        let mut c = Preset::LossPercent(50.0).conditions();
        c.up.jitter = Duration::from_millis(10);
        c.down.jitter = Duration::from_millis(10);
        let o = oracle(PathSchedule::constant(c));
        let msgs = fresh_tcp_call(100, 3000, Duration::ZERO);
        for i in 0..20u64 {
            let t0 = Instant::from_secs(i);
            let run = o.run(t0, &msgs, Instant::MAX).unwrap();
            assert_eq!(run.completed - t0, 4 * Duration::from_millis(20));
        }
    }

    #[test]
    fn bursts_are_waited_out_on_the_simulations_own_timeline() {
        let ge = GilbertElliott::with_rate_and_burst(0.3, Duration::from_millis(500));
        let c = Preset::LossPercent(0.0)
            .conditions()
            .with_loss(LossModel::GilbertElliott(ge));
        let path = PathSchedule::constant(c);
        let o = oracle(path.clone());
        let msgs = long_link_call(10, 10, Duration::ZERO);
        let runs = o.run_sequence(Instant::ZERO, &[], &msgs, 2000, Instant::MAX);
        assert_eq!(runs.len(), 2000);
        let total = runs[1999].completed - Instant::ZERO;
        // Without bursts 2000 calls take 120 s; 30 % of the time is bad.
        assert!(total > Duration::from_secs(130), "{total:?}");
        // The simulator's link with the same seed and host agrees: each
        // message's first passable instant is when its copy got through.
        let (mut up, _) = crate::network::path_links(7, "10.0.0.2".parse().unwrap(), &path);
        let arrival = runs[0].arrivals[0];
        let sent = arrival - Duration::from_millis(30);
        if sent > Instant::ZERO {
            assert_eq!(
                up.offer(sent - Duration::from_nanos(1), 60),
                crate::link::LinkVerdict::Lost
            );
        }
        assert!(matches!(
            up.offer(sent, 60),
            crate::link::LinkVerdict::Deliver(_)
        ));
    }

    #[test]
    fn a_sequence_pays_the_handshake_once() {
        let base = Preset::LossPercent(0.0).conditions();
        let o = oracle(PathSchedule::constant(base));
        let handshake = &fresh_tcp_call(0, 0, Duration::ZERO)[..2];
        let call = long_link_call(10, 10, Duration::ZERO);
        let runs = o.run_sequence(Instant::ZERO, handshake, &call, 3, Instant::MAX);
        let ends: Vec<u64> = runs
            .iter()
            .map(|r| r.completed.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(ends, [120, 180, 240]);
    }

    #[test]
    fn runs_are_repeatable() {
        let o = oracle(PathSchedule::constant(
            Preset::LossPercent(30.0).conditions(),
        ));
        let msgs = fresh_tcp_call(100, 100, Duration::ZERO);
        let a = o.run(Instant::ZERO, &msgs, Instant::MAX);
        let b = o.run(Instant::ZERO, &msgs, Instant::MAX);
        assert_eq!(a, b);
    }
}
