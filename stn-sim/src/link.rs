//! One direction of a network path: delay, jitter, a bandwidth bottleneck
//! with a bounded drop-tail queue, and a loss model, all of which may change
//! over time ([`LinkSchedule`]).
//!
//! Processing order for a packet offered at time `t` (the order of dummynet,
//! on which Apple's Network Link Conditioner is built):
//! 1. conditions are those in force at `t` (a packet sent during an outage is
//!    lost even if the outage ends while it would be in flight);
//! 2. the loss model draws (lost packets never occupy the queue);
//! 3. drop-tail: if `queue_packets` packets are already waiting or being
//!    serialized, the packet is dropped;
//! 4. serialization at `bandwidth_bps` behind the packets already queued;
//! 5. propagation: `delay` plus a uniform jitter in `[-jitter, +jitter]`
//!    (never below zero), then clamped to be no earlier than the previous
//!    arrival: **a direction never reorders packets** (FIFO, like dummynet).

use std::collections::VecDeque;

use stn_proto::rng::Rng;
use stn_proto::time::{duration_nanos_saturating, Duration, Instant};

/// How a link loses packets.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum LossModel {
    /// Never loses a packet.
    #[default]
    None,
    /// Each packet is lost independently with probability `p` (`1.0` = outage).
    Bernoulli {
        /// Loss probability in `[0, 1]`.
        p: f64,
    },
    /// Two-state bursty loss.
    GilbertElliott(GilbertElliott),
}

/// Gilbert–Elliott bursty loss: a Markov chain over a good and a bad state,
/// stepped once per packet, each state with its own loss probability.
///
/// The loss decision uses the current state; the state then moves. Mean bad
/// burst length is `1 / p_leave_bad` packets; stationary loss rate is
/// `(p_enter_bad·loss_bad + p_leave_bad·loss_good) / (p_enter_bad + p_leave_bad)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability, per packet, of moving from good to bad.
    pub p_enter_bad: f64,
    /// Probability, per packet, of moving from bad to good.
    pub p_leave_bad: f64,
    /// Loss probability while good.
    pub loss_good: f64,
    /// Loss probability while bad.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The classic Gilbert model with a lossless good state and a fully lossy
    /// bad state, tuned to an average `loss_rate` and `mean_burst` lost
    /// packets per burst (`mean_burst >= 1`).
    pub fn with_rate_and_burst(loss_rate: f64, mean_burst: f64) -> Self {
        let r = 1.0 / mean_burst.max(1.0);
        let rate = loss_rate.clamp(0.0, 0.999_999);
        // Stationary P(bad) = p / (p + r) = rate  =>  p = r·rate / (1 − rate).
        let p = (r * rate / (1.0 - rate)).min(1.0);
        GilbertElliott {
            p_enter_bad: p,
            p_leave_bad: r,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// The long-run loss rate.
    pub fn stationary_loss(&self) -> f64 {
        let s = self.p_enter_bad + self.p_leave_bad;
        if s <= 0.0 {
            return self.loss_good;
        }
        (self.p_enter_bad * self.loss_bad + self.p_leave_bad * self.loss_good) / s
    }
}

impl LossModel {
    /// Bernoulli loss of `percent` percent.
    pub fn percent(percent: f64) -> Self {
        LossModel::Bernoulli {
            p: (percent / 100.0).clamp(0.0, 1.0),
        }
    }

    /// Every packet lost: an outage.
    pub const OUTAGE: LossModel = LossModel::Bernoulli { p: 1.0 };
}

/// The conditions of one link direction at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConditions {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Half-width of the uniform delay jitter (`delay ± jitter`).
    pub jitter: Duration,
    /// Bottleneck rate in bits per second; `None` (or `Some(0)`) = unlimited
    /// (no serialization delay, no queue).
    pub bandwidth_bps: Option<u64>,
    /// Capacity of the bottleneck queue in packets, counting the one being
    /// serialized (dummynet's default is 50 slots).
    pub queue_packets: usize,
    /// The loss model.
    pub loss: LossModel,
}

impl Default for LinkConditions {
    /// A perfect link: no delay, unlimited bandwidth, no loss.
    fn default() -> Self {
        LinkConditions {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            bandwidth_bps: None,
            queue_packets: Self::DEFAULT_QUEUE_PACKETS,
            loss: LossModel::None,
        }
    }
}

impl LinkConditions {
    /// Default queue capacity (dummynet's 50 slots).
    pub const DEFAULT_QUEUE_PACKETS: usize = 50;

    /// A lossless, unlimited link with the given one-way delay.
    pub fn with_delay(delay: Duration) -> Self {
        LinkConditions {
            delay,
            ..Self::default()
        }
    }

    /// The same link losing every packet (an outage).
    pub fn outage(self) -> Self {
        LinkConditions {
            loss: LossModel::OUTAGE,
            ..self
        }
    }

    /// Time to serialize `bytes` at this link's bandwidth (zero when unlimited),
    /// rounded up to the nanosecond.
    pub fn serialization(&self, bytes: usize) -> Duration {
        match self.bandwidth_bps {
            None | Some(0) => Duration::ZERO,
            Some(bps) => {
                let bits = bytes as u128 * 8 * 1_000_000_000;
                let ns = bits.div_ceil(u128::from(bps));
                Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
            }
        }
    }
}

/// Conditions of one direction over time: an initial state plus changes
/// taking effect at given instants (sorted; a later change at the same
/// instant wins).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSchedule {
    initial: LinkConditions,
    changes: Vec<(Instant, LinkConditions)>,
}

impl LinkSchedule {
    /// The same conditions forever.
    pub fn constant(c: LinkConditions) -> Self {
        LinkSchedule {
            initial: c,
            changes: Vec::new(),
        }
    }

    /// Adds a change: from `at` on, the conditions are `c`.
    pub fn set_at(&mut self, at: Instant, c: LinkConditions) {
        let idx = self.changes.partition_point(|(t, _)| *t <= at);
        self.changes.insert(idx, (at, c));
    }

    /// Builder form of [`LinkSchedule::set_at`].
    pub fn then_at(mut self, at: Instant, c: LinkConditions) -> Self {
        self.set_at(at, c);
        self
    }

    /// The conditions in force at `t` (a change at exactly `t` applies).
    pub fn at(&self, t: Instant) -> &LinkConditions {
        let idx = self.changes.partition_point(|(at, _)| *at <= t);
        if idx == 0 {
            &self.initial
        } else {
            &self.changes[idx - 1].1
        }
    }

    /// The scripted changes, in time order.
    pub fn changes(&self) -> &[(Instant, LinkConditions)] {
        &self.changes
    }
}

/// What the link did with an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkVerdict {
    /// The packet arrives at the far end at this instant.
    Deliver(Instant),
    /// The loss model dropped it.
    Lost,
    /// The bottleneck queue was full.
    QueueFull,
}

/// Counters for one link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets offered.
    pub offered: u64,
    /// Packets that will be (or were) delivered.
    pub delivered: u64,
    /// Packets dropped by the loss model.
    pub lost: u64,
    /// Packets dropped because the queue was full.
    pub queue_drops: u64,
    /// Most packets ever waiting in (or being serialized by) the bottleneck
    /// at once: never more than the largest `queue_packets` in force.
    pub peak_queue: usize,
}

/// The running state of one link direction.
#[derive(Clone, Debug)]
pub struct Link {
    schedule: LinkSchedule,
    loss_rng: Rng,
    jitter_rng: Rng,
    ge_bad: bool,
    /// Finish-of-serialization times of packets still in the bottleneck.
    in_queue: VecDeque<Instant>,
    busy_until: Instant,
    last_arrival: Instant,
    stats: LinkStats,
}

impl Link {
    /// A link following `schedule`. Loss and jitter use separate streams so
    /// that adding jitter does not change which packets are lost.
    pub fn new(schedule: LinkSchedule, loss_rng: Rng, jitter_rng: Rng) -> Self {
        Link {
            schedule,
            loss_rng,
            jitter_rng,
            ge_bad: false,
            in_queue: VecDeque::new(),
            busy_until: Instant::ZERO,
            last_arrival: Instant::ZERO,
            stats: LinkStats::default(),
        }
    }

    /// The schedule this link follows.
    pub fn schedule(&self) -> &LinkSchedule {
        &self.schedule
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Offers a packet of `wire_bytes` at `now` (calls must come in
    /// non-decreasing `now`).
    pub fn offer(&mut self, now: Instant, wire_bytes: usize) -> LinkVerdict {
        self.stats.offered += 1;
        let c = *self.schedule.at(now);
        if self.draw_loss(&c.loss) {
            self.stats.lost += 1;
            return LinkVerdict::Lost;
        }
        let finish = if c.bandwidth_bps.is_some_and(|b| b > 0) {
            while self.in_queue.front().is_some_and(|f| *f <= now) {
                self.in_queue.pop_front();
            }
            if self.in_queue.len() >= c.queue_packets {
                self.stats.queue_drops += 1;
                return LinkVerdict::QueueFull;
            }
            let start = now.max(self.busy_until);
            let finish = start + c.serialization(wire_bytes);
            self.busy_until = finish;
            self.in_queue.push_back(finish);
            self.stats.peak_queue = self.stats.peak_queue.max(self.in_queue.len());
            finish
        } else {
            now
        };
        let mut arrival = finish + c.delay;
        if !c.jitter.is_zero() {
            let j = duration_nanos_saturating(c.jitter);
            let span = j.saturating_mul(2).saturating_add(1);
            let draw = self.jitter_rng.below(span);
            arrival = if draw >= j {
                arrival + Duration::from_nanos(draw - j)
            } else {
                arrival
                    .saturating_sub(Duration::from_nanos(j - draw))
                    .max(finish)
            };
        }
        arrival = arrival.max(self.last_arrival);
        self.last_arrival = arrival;
        self.stats.delivered += 1;
        LinkVerdict::Deliver(arrival)
    }

    fn draw_loss(&mut self, loss: &LossModel) -> bool {
        match *loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.loss_rng.chance(p),
            LossModel::GilbertElliott(ge) => {
                let p = if self.ge_bad {
                    ge.loss_bad
                } else {
                    ge.loss_good
                };
                let lost = self.loss_rng.chance(p);
                let flip = if self.ge_bad {
                    ge.p_leave_bad
                } else {
                    ge.p_enter_bad
                };
                if self.loss_rng.chance(flip) {
                    self.ge_bad = !self.ge_bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(c: LinkConditions, seed: u64) -> Link {
        Link::new(
            LinkSchedule::constant(c),
            Rng::derive(seed, 1),
            Rng::derive(seed, 2),
        )
    }

    #[test]
    fn delay_only() {
        let mut l = link(LinkConditions::with_delay(Duration::from_millis(30)), 1);
        assert_eq!(
            l.offer(Instant::from_secs(1), 100),
            LinkVerdict::Deliver(Instant::from_millis(1030))
        );
    }

    #[test]
    fn serialization_queues_back_to_back_packets() {
        // 1 Mbit/s: 1250 bytes take exactly 10 ms.
        let c = LinkConditions {
            bandwidth_bps: Some(1_000_000),
            delay: Duration::from_millis(100),
            ..LinkConditions::default()
        };
        let mut l = link(c, 1);
        let t = Instant::from_secs(1);
        assert_eq!(
            l.offer(t, 1250),
            LinkVerdict::Deliver(Instant::from_millis(1110))
        );
        assert_eq!(
            l.offer(t, 1250),
            LinkVerdict::Deliver(Instant::from_millis(1120))
        );
        // After the queue drains, a packet starts at once again.
        assert_eq!(
            l.offer(Instant::from_secs(2), 1250),
            LinkVerdict::Deliver(Instant::from_millis(2110))
        );
    }

    #[test]
    fn drop_tail_when_queue_full() {
        let c = LinkConditions {
            bandwidth_bps: Some(8_000),
            queue_packets: 3,
            ..LinkConditions::default()
        };
        let mut l = link(c, 1);
        let t = Instant::ZERO;
        for _ in 0..3 {
            assert!(matches!(l.offer(t, 1000), LinkVerdict::Deliver(_)));
        }
        assert_eq!(l.offer(t, 1000), LinkVerdict::QueueFull);
        // 1000 bytes at 8 kbit/s = 1 s each; at t = 1 s one slot is free again.
        assert!(matches!(
            l.offer(Instant::from_secs(1), 1000),
            LinkVerdict::Deliver(_)
        ));
        assert_eq!(l.stats().queue_drops, 1);
        assert_eq!(l.stats().peak_queue, 3);
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let c = LinkConditions {
            delay: Duration::from_millis(100),
            jitter: Duration::from_millis(50),
            ..LinkConditions::default()
        };
        let mut l = link(c, 9);
        let mut last = Instant::ZERO;
        let mut spread = (u64::MAX, 0u64);
        // Packets 1 ms apart are mostly held back by the FIFO clamp; 200 ms
        // apart they show the full jitter.
        for i in 0..4000u64 {
            let now = Instant::from_millis(if i < 2000 { i } else { 2000 + (i - 2000) * 200 });
            let LinkVerdict::Deliver(at) = l.offer(now, 100) else {
                panic!("no loss configured")
            };
            assert!(at >= last, "reordered");
            assert!(at - now <= Duration::from_millis(150));
            let d = duration_nanos_saturating(at - now);
            spread = (spread.0.min(d), spread.1.max(d));
            last = at;
        }
        // Jitter really varies the delay (the FIFO clamp only raises it).
        assert!(spread.1 - spread.0 > 90_000_000, "{spread:?}");
    }

    #[test]
    fn bernoulli_rate_close_to_configured() {
        let mut l = link(
            LinkConditions {
                loss: LossModel::percent(30.0),
                ..LinkConditions::default()
            },
            42,
        );
        let n = 20_000;
        let lost = (0..n)
            .filter(|_| l.offer(Instant::ZERO, 100) == LinkVerdict::Lost)
            .count();
        let rate = lost as f64 / n as f64;
        // 4.5 standard deviations of a binomial(20000, 0.3) is about 0.0146.
        assert!((rate - 0.30).abs() < 0.015, "rate {rate}");
    }

    fn mean_burst(outcomes: &[bool]) -> f64 {
        let (mut bursts, mut lost, mut prev) = (0u64, 0u64, false);
        for &l in outcomes {
            if l {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = l;
        }
        lost as f64 / bursts.max(1) as f64
    }

    #[test]
    fn gilbert_elliott_produces_bursts_at_the_configured_rate() {
        let ge = GilbertElliott::with_rate_and_burst(0.2, 5.0);
        assert!((ge.stationary_loss() - 0.2).abs() < 1e-9);
        let mut l = link(
            LinkConditions {
                loss: LossModel::GilbertElliott(ge),
                ..LinkConditions::default()
            },
            7,
        );
        let n = 50_000;
        let out: Vec<bool> = (0..n)
            .map(|_| l.offer(Instant::ZERO, 100) == LinkVerdict::Lost)
            .collect();
        let rate = out.iter().filter(|&&x| x).count() as f64 / n as f64;
        assert!((rate - 0.2).abs() < 0.03, "rate {rate}");
        let ge_burst = mean_burst(&out);
        assert!((ge_burst - 5.0).abs() < 0.8, "mean burst {ge_burst}");

        // Bernoulli at the same rate: mean burst 1/(1-0.2) = 1.25.
        let mut b = link(
            LinkConditions {
                loss: LossModel::percent(20.0),
                ..LinkConditions::default()
            },
            7,
        );
        let out: Vec<bool> = (0..n)
            .map(|_| b.offer(Instant::ZERO, 100) == LinkVerdict::Lost)
            .collect();
        let b_burst = mean_burst(&out);
        assert!((b_burst - 1.25).abs() < 0.1, "bernoulli burst {b_burst}");
        assert!(ge_burst > 3.0 * b_burst);
    }

    #[test]
    fn schedule_changes_apply_from_their_instant() {
        let s = LinkSchedule::constant(LinkConditions {
            loss: LossModel::OUTAGE,
            ..LinkConditions::default()
        })
        .then_at(
            Instant::from_secs(5),
            LinkConditions::with_delay(Duration::from_millis(10)),
        );
        let mut l = Link::new(s, Rng::new(1), Rng::new(2));
        assert_eq!(l.offer(Instant::from_millis(4_999), 10), LinkVerdict::Lost);
        assert_eq!(
            l.offer(Instant::from_secs(5), 10),
            LinkVerdict::Deliver(Instant::from_millis(5_010))
        );
    }
}
