//! The physical limit (peers.md §8.3): the earliest a call could possibly
//! complete on a given path, to report every client against.
//!
//! **What this runs on.** The client seam ([`crate::client::ClientCx`])
//! offers only TCP sockets, so the oracle is not a [`crate::client::SimClient`].
//! Instead it drives its own copies of the simulator's link model — two
//! [`Link`]s (up and down) built from the same [`PathSchedule`] as the
//! scenario, with loss and jitter streams derived from the scenario seed
//! (stream family [`PhysicalLimit::STREAM`], distinct from the simulation's
//! own streams). So delay, jitter, serialization, queueing, outages and the
//! loss *process* are exactly the simulation's; the individual loss draws are
//! the oracle's own (its packets are not the clients' packets anyway).
//!
//! A call is a chain of one-way messages, each sent when the previous one
//! arrived (plus the server's processing delay before the response):
//! [`fresh_tcp_call`] — SYN, SYN-ACK, request, response (k = 4);
//! [`long_link_call`] — request, response on an established connection
//! (k = 2). A message larger than one MSS is cut into segments sent back to
//! back; it arrives when its last segment has.
//!
//! Two senders ([`Knowledge`]):
//! - [`Knowledge::Clairvoyant`] knows every loss draw: it never waits for a
//!   lost copy — a copy the link will drop is immediately followed by
//!   another (draws are per packet, so a draw can only be used up by
//!   sending), and it sends nothing while the schedule says the link is down;
//! - [`Knowledge::LinkSchedule`] (non-clairvoyant) knows only when the link
//!   is up (loss < 100 %): it sends at the first up instant and re-sends
//!   every `min_rtt` (the smallest round-trip propagation delay in the
//!   schedule) until a copy is delivered. Copies after the first delivered
//!   one are not sent (a simplification: a real sender would stop only when
//!   the acknowledgement arrives; with i.i.d. loss this changes no result).
//!
//! Neither ever times out; both give up at the `horizon`.

use stn_proto::rng::Rng;
use stn_proto::time::{Duration, Instant};

use crate::link::{Link, LinkConditions, LinkSchedule, LinkVerdict, LossModel};
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

/// What the oracle's sender knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knowledge {
    /// Every per-packet loss draw and the schedule.
    Clairvoyant,
    /// Only the schedule's up/down intervals; re-sends every `min_rtt`.
    LinkSchedule,
}

/// The result of one oracle run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OracleRun {
    /// When the last message arrived: the call's completion.
    pub completed: Instant,
    /// Arrival time of each message.
    pub arrivals: Vec<Instant>,
    /// Packets offered to the links (copies and segments), as wire cost.
    pub packets_sent: u64,
}

/// The physical-limit oracle for one path.
///
/// ```
/// use stn_sim::oracle::{fresh_tcp_call, Knowledge, PhysicalLimit};
/// use stn_sim::{path::PathSchedule, preset::Preset};
/// use stn_proto::time::{Duration, Instant};
///
/// // 100% loss for 20 s, then the loss-free "N% Loss" base path (30 ms each way).
/// let base = Preset::LossPercent(0.0).conditions();
/// let path = PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(20));
/// let oracle = PhysicalLimit::new(&path, 1);
/// let run = oracle.run(Knowledge::LinkSchedule, Instant::ZERO,
///     &fresh_tcp_call(100, 100, Duration::ZERO), Instant::from_secs(100)).unwrap();
/// assert_eq!(run.completed, Instant::from_secs(20) + 4 * Duration::from_millis(30));
/// ```
#[derive(Clone, Debug)]
pub struct PhysicalLimit {
    up: Link,
    down: Link,
    min_rtt: Duration,
    mss: usize,
}

impl PhysicalLimit {
    /// The stream family of the oracle's random streams
    /// ([`Rng::derive`]`(seed, STREAM | n)`).
    pub const STREAM: u64 = 0x4F52_4143_0000_0000;

    /// Tries per segment before a run gives up (guards loss rates near 100 %).
    const MAX_TRIES: u32 = 1_000_000;

    /// An oracle over `path` whose loss and jitter draws derive from `seed`.
    pub fn new(path: &PathSchedule, seed: u64) -> Self {
        let min_delay = |s: &LinkSchedule| {
            s.changes()
                .iter()
                .map(|(_, c)| c.delay)
                .fold(s.at(Instant::ZERO).delay, Duration::min)
        };
        let min_rtt = (min_delay(&path.up) + min_delay(&path.down)).max(Duration::from_millis(1));
        PhysicalLimit {
            up: Link::new(
                path.up.clone(),
                Rng::derive(seed, Self::STREAM),
                Rng::derive(seed, Self::STREAM | 1),
            ),
            down: Link::new(
                path.down.clone(),
                Rng::derive(seed, Self::STREAM | 2),
                Rng::derive(seed, Self::STREAM | 3),
            ),
            min_rtt,
            mss: 1460,
        }
    }

    /// The re-send interval of the non-clairvoyant sender.
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }

    /// The earliest completion of `messages` starting at `t0`, or `None` if
    /// some message cannot be delivered by `horizon`. Each run starts from
    /// the oracle's initial link state, so runs are repeatable.
    pub fn run(
        &self,
        knowledge: Knowledge,
        t0: Instant,
        messages: &[Message],
        horizon: Instant,
    ) -> Option<OracleRun> {
        let (mut up, mut down) = (self.up.clone(), self.down.clone());
        self.run_on(&mut up, &mut down, knowledge, t0, messages, horizon)
    }

    /// `calls` calls back to back from `t0` (the benchmark loop: each starts
    /// when the previous completed), on one continuing link state, so every
    /// call meets fresh loss draws. Stops early at the first call that
    /// cannot complete by `horizon`.
    pub fn run_sequence(
        &self,
        knowledge: Knowledge,
        t0: Instant,
        messages: &[Message],
        calls: usize,
        horizon: Instant,
    ) -> Vec<OracleRun> {
        let (mut up, mut down) = (self.up.clone(), self.down.clone());
        let mut runs = Vec::with_capacity(calls);
        let mut start = t0;
        for _ in 0..calls {
            let Some(run) = self.run_on(&mut up, &mut down, knowledge, start, messages, horizon)
            else {
                break;
            };
            start = run.completed;
            runs.push(run);
        }
        runs
    }

    fn run_on(
        &self,
        up: &mut Link,
        down: &mut Link,
        knowledge: Knowledge,
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
            let start = ready + m.after;
            let arrival = self.deliver(
                link,
                knowledge,
                start,
                m.payload,
                horizon,
                &mut packets_sent,
            )?;
            arrivals.push(arrival);
            ready = arrival;
        }
        Some(OracleRun {
            completed: ready,
            arrivals,
            packets_sent,
        })
    }

    /// Delivers one message's segments; returns when the last one arrived.
    fn deliver(
        &self,
        link: &mut Link,
        knowledge: Knowledge,
        start: Instant,
        payload: usize,
        horizon: Instant,
        packets_sent: &mut u64,
    ) -> Option<Instant> {
        let n = payload.div_ceil(self.mss).max(1);
        let wire: Vec<usize> = (0..n)
            .map(|i| HEADER_BYTES + (payload - i * self.mss).min(self.mss))
            .collect();
        // Next try time per undelivered segment; offers must go in time order.
        let mut next: Vec<Option<Instant>> = vec![Some(start); n];
        let mut tries = vec![0u32; n];
        let mut last = start;
        while let Some((i, t)) = next
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i, t)))
            .min_by_key(|(i, t)| (*t, *i))
        {
            let t = next_up(link.schedule(), t)?;
            if t > horizon || tries[i] >= Self::MAX_TRIES {
                return None;
            }
            tries[i] += 1;
            *packets_sent += 1;
            match link.offer(t, wire[i]) {
                LinkVerdict::Deliver(at) => {
                    last = last.max(at);
                    next[i] = None;
                }
                LinkVerdict::Lost => {
                    next[i] = Some(match knowledge {
                        Knowledge::Clairvoyant => t,
                        Knowledge::LinkSchedule => t + self.min_rtt,
                    });
                }
                LinkVerdict::QueueFull => {
                    let c = link.schedule().at(t);
                    next[i] = Some(t + c.serialization(wire[i]).max(Duration::from_nanos(1)));
                }
            }
        }
        Some(last)
    }
}

/// `true` when a link in these conditions can deliver anything.
fn is_up(c: &LinkConditions) -> bool {
    !matches!(c.loss, LossModel::Bernoulli { p } if p >= 1.0)
}

/// The first instant at or after `t` when the link is up, if any.
fn next_up(s: &LinkSchedule, t: Instant) -> Option<Instant> {
    if is_up(s.at(t)) {
        return Some(t);
    }
    s.changes()
        .iter()
        .filter(|(at, _)| *at > t)
        .map(|(at, _)| *at)
        .find(|at| is_up(s.at(*at)))
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
    use crate::preset::Preset;

    fn oracle(path: PathSchedule) -> PhysicalLimit {
        PhysicalLimit::new(&path, 7)
    }

    #[test]
    fn clean_path_is_k_one_way_delays() {
        let base = Preset::LossPercent(0.0).conditions();
        let o = oracle(PathSchedule::constant(base));
        for k in [Knowledge::Clairvoyant, Knowledge::LinkSchedule] {
            let fresh = o
                .run(
                    k,
                    Instant::from_secs(1),
                    &fresh_tcp_call(10, 10, Duration::ZERO),
                    Instant::MAX,
                )
                .unwrap();
            assert_eq!(fresh.completed, Instant::from_millis(1120));
            assert_eq!(fresh.packets_sent, 4);
            let long = o
                .run(
                    k,
                    Instant::from_secs(1),
                    &long_link_call(10, 10, Duration::from_millis(5)),
                    Instant::MAX,
                )
                .unwrap();
            assert_eq!(long.completed, Instant::from_millis(1065));
        }
    }

    #[test]
    fn outage_starts_at_link_up() {
        let base = Preset::ThreeG.conditions();
        let path = PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(12));
        let o = oracle(path);
        let run = o
            .run(
                Knowledge::LinkSchedule,
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
                Knowledge::Clairvoyant,
                Instant::ZERO,
                &fresh_tcp_call(1, 1, Duration::ZERO),
                Instant::from_secs(50)
            ),
            None
        );
    }

    #[test]
    fn clairvoyant_never_loses_time_to_loss_and_beats_the_scheduled_sender() {
        let c = Preset::LossPercent(50.0).conditions();
        let o = oracle(PathSchedule::constant(c));
        let msgs = fresh_tcp_call(100, 3000, Duration::ZERO);
        let (mut sum_c, mut sum_s) = (Duration::ZERO, Duration::ZERO);
        for i in 0..50u64 {
            let t0 = Instant::from_secs(i);
            let cv = o
                .run(Knowledge::Clairvoyant, t0, &msgs, Instant::MAX)
                .unwrap();
            let sc = o
                .run(Knowledge::LinkSchedule, t0, &msgs, Instant::MAX)
                .unwrap();
            // Unlimited bandwidth: the clairvoyant sender pays only delay.
            assert_eq!(cv.completed - t0, 4 * Duration::from_millis(30));
            assert!(sc.completed >= cv.completed);
            sum_c += cv.completed - t0;
            sum_s += sc.completed - t0;
        }
        assert!(
            sum_s > sum_c,
            "loss must cost the non-clairvoyant sender time"
        );
    }

    #[test]
    fn runs_are_repeatable() {
        let o = oracle(PathSchedule::constant(
            Preset::LossPercent(30.0).conditions(),
        ));
        let msgs = fresh_tcp_call(100, 100, Duration::ZERO);
        let a = o.run(Knowledge::LinkSchedule, Instant::ZERO, &msgs, Instant::MAX);
        let b = o.run(Knowledge::LinkSchedule, Instant::ZERO, &msgs, Instant::MAX);
        assert_eq!(a, b);
    }
}
