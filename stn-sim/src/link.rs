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

use stn_proto::Rng;
use stn_proto::{Duration, Instant};

use crate::units::duration_nanos_saturating;

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

/// Gilbert–Elliott bursty loss **in time**: the link alternates between a
/// good and a bad state whose sojourns are exponentially distributed with
/// the given means, each state with its own per-packet loss probability.
///
/// The state is a function of time alone (its own random stream, drawn
/// lazily as time advances), not of the packets sent: a client that sends
/// more packets does not leave a burst sooner, and every client of a run
/// meets the same bad periods. Stationary loss rate:
/// `(mean_bad·loss_bad + mean_good·loss_good) / (mean_bad + mean_good)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Mean time in the bad state (a burst).
    pub mean_bad: Duration,
    /// Mean time in the good state between bursts; `Duration::MAX`: never bad.
    pub mean_good: Duration,
    /// Loss probability while good.
    pub loss_good: f64,
    /// Loss probability while bad.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The classic Gilbert model with a lossless good state and a fully lossy
    /// bad state, tuned to an average `loss_rate` (the fraction of time in
    /// the bad state) and bursts of `mean_burst` on average.
    pub fn with_rate_and_burst(loss_rate: f64, mean_burst: Duration) -> Self {
        let rate = loss_rate.clamp(0.0, 0.999_999);
        let mean_bad = mean_burst.max(Duration::from_nanos(1));
        // Stationary P(bad) = bad / (bad + good) = rate  =>  good = bad·(1 − rate)/rate.
        let mean_good = if rate <= 0.0 {
            Duration::MAX
        } else {
            Duration::from_secs_f64((mean_bad.as_secs_f64() * (1.0 - rate) / rate).min(1e12))
        };
        GilbertElliott {
            mean_bad,
            mean_good,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// The long-run loss rate.
    pub fn stationary_loss(&self) -> f64 {
        if self.mean_good == Duration::MAX {
            return self.loss_good;
        }
        let (b, g) = (self.mean_bad.as_secs_f64(), self.mean_good.as_secs_f64());
        if b + g <= 0.0 {
            return self.loss_good;
        }
        (b * self.loss_bad + g * self.loss_good) / (b + g)
    }

    /// The long-run fraction of time in the bad state.
    fn bad_fraction(&self) -> f64 {
        if self.mean_good == Duration::MAX {
            return 0.0;
        }
        let (b, g) = (self.mean_bad.as_secs_f64(), self.mean_good.as_secs_f64());
        b / (b + g).max(f64::MIN_POSITIVE)
    }
}

/// The realised good/bad timeline of a [`GilbertElliott`] link: drawn
/// lazily, forward only, from its own stream.
#[derive(Clone, Debug)]
struct BurstClock {
    rng: Rng,
    /// `None` until the first query draws the state at that instant.
    state: Option<(bool, Instant)>,
}

impl BurstClock {
    /// Stream id derived from the link's loss stream, so a path's bursts
    /// depend only on the root seed and the host address.
    const STREAM: u64 = 0x4255_5253_5400_0000;

    fn new(loss_rng: &Rng) -> Self {
        BurstClock {
            rng: Rng::derive(loss_rng.clone().next_u64(), Self::STREAM),
            state: None,
        }
    }

    fn sojourn(&mut self, ge: &GilbertElliott, bad: bool) -> Duration {
        let mean = if bad { ge.mean_bad } else { ge.mean_good };
        if mean == Duration::MAX {
            return Duration::MAX;
        }
        // Exponential by inversion; at least 1 ns so time always advances.
        let u = 1.0 - self.rng.unit_f64();
        let s = -u.ln() * mean.as_secs_f64();
        Duration::from_secs_f64(s.min(1e12)).max(Duration::from_nanos(1))
    }

    /// Whether the link is bad at `t` and until when that state lasts
    /// (`t` never decreases between calls).
    fn at(&mut self, ge: &GilbertElliott, t: Instant) -> (bool, Instant) {
        let (mut bad, mut until) = match self.state {
            Some(s) => s,
            None => {
                // The timeline starts at time zero in the stationary
                // distribution, whenever the first packet comes, so it is
                // the same for every client. (A schedule that switches
                // between two different bursty models draws each sojourn
                // with the model in force when it is drawn.)
                let bad = self.rng.chance(ge.bad_fraction());
                (bad, Instant::ZERO + self.sojourn(ge, bad))
            }
        };
        while until <= t {
            bad = !bad;
            until += self.sojourn(ge, bad);
        }
        self.state = Some((bad, until));
        (bad, until)
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
    bursts: BurstClock,
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
            bursts: BurstClock::new(&loss_rng),
            loss_rng,
            jitter_rng,
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
        if self.draw_loss(now, &c.loss) {
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

    fn draw_loss(&mut self, now: Instant, loss: &LossModel) -> bool {
        if *loss == LossModel::None {
            return false;
        }
        // One draw per packet whatever the probability, so an outage moves
        // the stream exactly as many packets as it eats.
        let p = self.loss_probability(now, loss).0;
        self.loss_rng.chance(p)
    }

    /// The loss probability of a packet offered at `t` under `loss`, and the
    /// instant it holds until at least (for bursty loss, the end of the
    /// current state; otherwise `Instant::MAX`). `t` must not decrease.
    fn loss_probability(&mut self, t: Instant, loss: &LossModel) -> (f64, Instant) {
        match *loss {
            LossModel::None => (0.0, Instant::MAX),
            LossModel::Bernoulli { p } => (p, Instant::MAX),
            LossModel::GilbertElliott(ge) => {
                let (bad, until) = self.bursts.at(&ge, t);
                (if bad { ge.loss_bad } else { ge.loss_good }, until)
            }
        }
    }

    /// The first instant at or after `t` when a packet offered has a chance
    /// to get through (loss probability below 1: not an outage, not a fully
    /// lossy burst), if any before `horizon`. Walks the schedule's changes
    /// and the burst timeline; `t` must not decrease between calls (it
    /// advances the burst timeline like [`Link::offer`]).
    pub fn next_passable(&mut self, mut t: Instant, horizon: Instant) -> Option<Instant> {
        while t <= horizon {
            let c = *self.schedule.at(t);
            let (p, until) = self.loss_probability(t, &c.loss);
            if p < 1.0 {
                return Some(t);
            }
            let next_change = self
                .schedule
                .changes()
                .iter()
                .map(|(at, _)| *at)
                .find(|at| *at > t)
                .unwrap_or(Instant::MAX);
            let next = until.min(next_change);
            if next == Instant::MAX {
                return None;
            }
            t = next;
        }
        None
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
    fn gilbert_elliott_bursts_are_in_time_at_the_configured_rate() {
        let ge = GilbertElliott::with_rate_and_burst(0.2, Duration::from_millis(200));
        assert!((ge.stationary_loss() - 0.2).abs() < 1e-9);
        let cond = LinkConditions {
            loss: LossModel::GilbertElliott(ge),
            ..LinkConditions::default()
        };
        // One packet per millisecond for 2000 s: the lost fraction is the
        // time fraction in bursts, and a burst lasts 200 ms on average.
        let mut l = link(cond, 7);
        let n = 2_000_000u64;
        let out: Vec<bool> = (0..n)
            .map(|i| l.offer(Instant::from_millis(i), 100) == LinkVerdict::Lost)
            .collect();
        let rate = out.iter().filter(|&&x| x).count() as f64 / n as f64;
        assert!((rate - 0.2).abs() < 0.02, "rate {rate}");
        let burst_ms = mean_burst(&out);
        assert!((burst_ms - 200.0).abs() < 25.0, "mean burst {burst_ms} ms");

        // The burst timeline is a function of time, not of packets: a link
        // offered ten times as many packets sees the same bad periods.
        let mut sparse = link(cond, 7);
        let mut dense = link(cond, 7);
        for ms in 0..20_000u64 {
            let t = Instant::from_millis(ms * 10);
            for k in 0..10 {
                let v = dense.offer(t + Duration::from_micros(k), 100);
                if k == 0 {
                    assert_eq!(sparse.offer(t, 100), v, "at {t:?}");
                }
            }
        }
    }

    #[test]
    fn next_passable_skips_outages_and_full_bursts() {
        let ge = GilbertElliott::with_rate_and_burst(0.5, Duration::from_millis(300));
        let s = LinkSchedule::constant(LinkConditions::default().outage()).then_at(
            Instant::from_secs(5),
            LinkConditions {
                loss: LossModel::GilbertElliott(ge),
                ..LinkConditions::default()
            },
        );
        let mut probe = Link::new(s.clone(), Rng::new(3), Rng::new(4));
        let mut l = Link::new(s, Rng::new(3), Rng::new(4));
        let mut t = Instant::ZERO;
        for _ in 0..200 {
            let up = probe.next_passable(t, Instant::from_secs(1000)).unwrap();
            assert!(up >= Instant::from_secs(5));
            // Nothing gets through before `up`; at `up` it does.
            let mut x = t;
            while x < up {
                assert_eq!(l.offer(x, 10), LinkVerdict::Lost, "{x:?} < {up:?}");
                x += Duration::from_millis(7);
            }
            assert!(matches!(l.offer(up, 10), LinkVerdict::Deliver(_)));
            t = up + Duration::from_millis(150);
        }
        let mut dead = link(LinkConditions::default().outage(), 1);
        assert_eq!(
            dead.next_passable(Instant::ZERO, Instant::from_secs(9)),
            None
        );
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
