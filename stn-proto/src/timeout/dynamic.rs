//! Mars's dynamic timeout (`mars/stn/src/dynamic_timeout.cc`).

use crate::net::NetworkKind;
use crate::time::{Duration, Instant, MonotonicClock};

/// Slots in the outcome window (the size of Mars's
/// `dyntime_failed_normal_count_` bitset).
pub(crate) const DYN_WINDOW_LEN: usize = 10;

/// The dynamic-timeout state (`kEValuating` = 1, `kExcellent` = 2, `kBad` = 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum DynState {
    /// Not enough evidence either way (the initial state).
    #[default]
    Evaluating,
    /// The network has been fast: the first-packet base drops to 7 s / 10 s
    /// (only for tasks with an explicit server cost of 0).
    Excellent,
    /// Four or more of the recent attempts failed.
    Bad,
}

/// "Meets expectation" cost limits per size class, for one network column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SizeClassCosts {
    /// Size < `small_package_len`: `kDynTimeSmallPackage{Wifi,GPRS}Costtime`
    /// 500 ms / 1000 ms.
    pub small: Duration,
    /// Size ≤ `middle_package_len`: `kDynTimeMiddlePackage{Wifi,GPRS}Costtime`
    /// 2000 ms / 3000 ms.
    pub middle: Duration,
    /// Size ≤ `big_package_len`: `kDynTimeBigPackage{Wifi,GPRS}Costtime`
    /// 4000 ms / 5000 ms.
    pub big: Duration,
    /// Larger: `kDynTimeBiggerPackage{Wifi,GPRS}Costtime` 6000 ms / 7000 ms.
    pub bigger: Duration,
}

/// Constants of the dynamic timeout (`mars/stn/config.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DynamicTimeoutConfig {
    /// `kDynTimeSmallPackageLen` = 3 KiB (exclusive bound of "small").
    pub small_package_len: usize,
    /// `kDynTimeMiddlePackageLen` = 10 KiB (inclusive bound of "middle").
    pub middle_package_len: usize,
    /// `kDynTimeBigPackageLen` = 30 KiB (inclusive bound of "big").
    pub big_package_len: usize,
    /// The "W" column of cost limits.
    pub wifi: SizeClassCosts,
    /// The "M" column of cost limits.
    pub mobile: SizeClassCosts,
    /// `kDynTimeMaxContinuousExcellentCount` = 10: consecutive met
    /// expectations needed for Excellent.
    pub excellent_after: u32,
    /// `kDynTimeMinNormalPkgCount` = 6: at most this many non-failed slots in
    /// the window means Bad.
    pub min_normal_count: u32,
    /// `kDynTimeCountExpireTime` = 5 min: window refill period, and how
    /// recent the last middle/big success must be for Excellent.
    pub expire: Duration,
}

impl DynamicTimeoutConfig {
    /// Mars's constants (identical in 2017, v1.3 and HEAD).
    pub const MARS: DynamicTimeoutConfig = DynamicTimeoutConfig {
        small_package_len: 3 * 1024,
        middle_package_len: 10 * 1024,
        big_package_len: 30 * 1024,
        wifi: SizeClassCosts {
            small: Duration::from_millis(500),
            middle: Duration::from_millis(2_000),
            big: Duration::from_millis(4_000),
            bigger: Duration::from_millis(6_000),
        },
        mobile: SizeClassCosts {
            small: Duration::from_millis(1_000),
            middle: Duration::from_millis(3_000),
            big: Duration::from_millis(5_000),
            bigger: Duration::from_millis(7_000),
        },
        excellent_after: 10,
        min_normal_count: 6,
        expire: Duration::from_secs(300),
    };
}

impl Default for DynamicTimeoutConfig {
    fn default() -> Self {
        Self::MARS
    }
}

/// One finished attempt, as the dynamic timeout sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttemptSample {
    /// Request + response bytes.
    pub bytes: usize,
    /// From the start of sending (Mars `start_send_time`) to completion.
    pub cost: Duration,
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttemptOutcome {
    /// It completed; classified by size and cost.
    Completed(AttemptSample),
    /// It failed (a timeout, a connect failure): Mars's tag −1.
    Failed,
}

/// Classification of one outcome (Mars's task tags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Failed,
    /// Completed but slower than expected for its size.
    Normal,
    /// A small package met expectation.
    SmallMet,
    /// A middle, big or bigger package met expectation.
    LargerMet,
}

/// Mars's dynamic timeout: classifies finished attempts and keeps a state
/// whose only effect is the Excellent branch of [`first_packet_timeout`].
///
/// Faithful details (from `dynamic_timeout.cc`):
/// - a completed attempt whose cost is under 1 ms counts as a failure (Mars
///   measures in whole milliseconds and treats a cost of 0 as failed);
/// - size classes are exclusive, as in mars-stn.md §2.5's table: a small
///   package slower than 500 ms (W) is "normal" even if it took less than the
///   middle limit (one stored revision of `dynamic_timeout.cc` chains the
///   conditions so that such a package falls through to the larger classes'
///   limits; the nested form is the one implemented here);
/// - the window is refilled (all ones, or all zeros when Bad) on the first
///   sample after creation, [`reset`](Self::reset) or a Bad↔Evaluating
///   transition, and on the first sample more than 5 min after the previous
///   refill — Mars stamps the window only when refilling, so this is a
///   refill period rather than an idle timer;
/// - Excellent needs `excellent_after` consecutive met expectations while
///   Evaluating *and* a middle/big package that met expectation (while
///   Evaluating) in the last 5 min and no normal/failed sample since;
/// - Excellent → Evaluating on any failure; Evaluating → Bad when at most 6
///   of the 10 slots are ones; Bad → Evaluating when more than 6 are.
///
/// [`first_packet_timeout`]: super::first_packet_timeout
///
/// (The example runs as the unit test `examples::timeout_dynamic_dynamictimeout`.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DynamicTimeout {
    config: DynamicTimeoutConfig,
    clock: MonotonicClock,
    state: DynState,
    continuous_good: u32,
    latest_larger_good: Option<Instant>,
    /// `true` = that attempt did not fail.
    window: [bool; DYN_WINDOW_LEN],
    /// Last written slot; `None` right after a refill (Mars's −1).
    cursor: Option<usize>,
    /// When the window was last refilled; `None` forces a refill.
    window_epoch: Option<Instant>,
}

impl DynamicTimeout {
    /// A fresh machine: Evaluating, window all ones.
    pub(crate) fn new(config: DynamicTimeoutConfig) -> Self {
        DynamicTimeout {
            config,
            clock: MonotonicClock::new(),
            state: DynState::Evaluating,
            continuous_good: 0,
            latest_larger_good: None,
            window: [true; DYN_WINDOW_LEN],
            cursor: None,
            window_epoch: None,
        }
    }

    /// Back to the initial state (Mars `ResetStatus`, on network change). The
    /// monotonic clock is kept.
    pub(crate) fn reset(&mut self) {
        let clock = self.clock;
        *self = DynamicTimeout::new(self.config);
        self.clock = clock;
    }

    /// The current state.
    pub(crate) fn state(&self) -> DynState {
        self.state
    }

    /// Non-failed slots in the window.
    pub(crate) fn window_ones(&self) -> u32 {
        self.window.iter().filter(|&&b| b).count() as u32
    }

    #[cfg(test)]
    /// Consecutive met expectations counted while Evaluating.
    pub(crate) fn continuous_good(&self) -> u32 {
        self.continuous_good
    }

    fn classify(&self, net: NetworkKind, outcome: AttemptOutcome) -> Tag {
        let sample = match outcome {
            AttemptOutcome::Failed => return Tag::Failed,
            AttemptOutcome::Completed(s) => s,
        };
        if sample.cost < Duration::from_millis(1) {
            return Tag::Failed;
        }
        let c = &self.config;
        let limits = if net.is_mobile() { &c.mobile } else { &c.wifi };
        let (limit, tag) = if sample.bytes < c.small_package_len {
            (limits.small, Tag::SmallMet)
        } else if sample.bytes <= c.middle_package_len {
            (limits.middle, Tag::LargerMet)
        } else if sample.bytes <= c.big_package_len {
            (limits.big, Tag::LargerMet)
        } else {
            (limits.bigger, Tag::LargerMet)
        };
        if sample.cost <= limit {
            tag
        } else {
            Tag::Normal
        }
    }

    /// Records one finished attempt at `now` on network `net` (which selects
    /// the W/M cost limits) and returns the new state. All transitions live
    /// here.
    pub(crate) fn record(
        &mut self,
        now: Instant,
        net: NetworkKind,
        outcome: AttemptOutcome,
    ) -> DynState {
        let now = self.clock.observe(now);
        let tag = self.classify(net, outcome);
        let expired = match self.window_epoch {
            None => true,
            Some(epoch) => now - epoch > self.config.expire,
        };
        if expired {
            self.window_epoch = Some(now);
            self.cursor = None;
            self.window = [self.state != DynState::Bad; DYN_WINDOW_LEN];
        }
        let slot = match self.cursor {
            Some(c) if c + 1 < DYN_WINDOW_LEN => c + 1,
            _ => 0,
        };
        self.cursor = Some(slot);

        let evaluating = self.state == DynState::Evaluating;
        match tag {
            Tag::LargerMet | Tag::SmallMet => {
                if evaluating {
                    if tag == Tag::LargerMet {
                        self.latest_larger_good = Some(now);
                    }
                    self.continuous_good = self.continuous_good.saturating_add(1);
                }
                self.window[slot] = true;
            }
            Tag::Normal => {
                if evaluating {
                    self.continuous_good = 0;
                    self.latest_larger_good = None;
                }
                self.window[slot] = true;
            }
            Tag::Failed => {
                self.continuous_good = 0;
                self.latest_larger_good = None;
                self.window[slot] = false;
            }
        }

        let ones = self.window_ones();
        match self.state {
            DynState::Evaluating => {
                let recent_larger = self
                    .latest_larger_good
                    .is_some_and(|t| now - t <= self.config.expire);
                if self.continuous_good >= self.config.excellent_after && recent_larger {
                    self.state = DynState::Excellent;
                } else if ones <= self.config.min_normal_count {
                    self.state = DynState::Bad;
                    self.window_epoch = None;
                }
            }
            DynState::Excellent => {
                if self.continuous_good == 0 && self.latest_larger_good.is_none() {
                    self.state = DynState::Evaluating;
                }
            }
            DynState::Bad => {
                if ones > self.config.min_normal_count {
                    self.state = DynState::Evaluating;
                    self.window_epoch = None;
                }
            }
        }
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: NetworkKind = NetworkKind::Wifi;
    const M: NetworkKind = NetworkKind::Mobile;

    fn ok(bytes: usize, ms: u64) -> AttemptOutcome {
        AttemptOutcome::Completed(AttemptSample {
            bytes,
            cost: Duration::from_millis(ms),
        })
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn classification_follows_the_table() {
        let dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        // (bytes, cost ms, W tag, M tag)
        let cases = [
            (100, 500, Tag::SmallMet, Tag::SmallMet),
            (100, 501, Tag::Normal, Tag::SmallMet),
            (100, 1001, Tag::Normal, Tag::Normal),
            (3071, 900, Tag::Normal, Tag::SmallMet),
            (3072, 2000, Tag::LargerMet, Tag::LargerMet),
            (10 * 1024, 2001, Tag::Normal, Tag::LargerMet),
            (10 * 1024, 3001, Tag::Normal, Tag::Normal),
            (10 * 1024 + 1, 4000, Tag::LargerMet, Tag::LargerMet),
            (30 * 1024, 5000, Tag::Normal, Tag::LargerMet),
            (30 * 1024 + 1, 6000, Tag::LargerMet, Tag::LargerMet),
            (30 * 1024 + 1, 7000, Tag::Normal, Tag::LargerMet),
            (30 * 1024 + 1, 7001, Tag::Normal, Tag::Normal),
            (100, 0, Tag::Failed, Tag::Failed),
        ];
        for (bytes, ms, w, m) in cases {
            assert_eq!(dt.classify(W, ok(bytes, ms)), w, "W {bytes} B {ms} ms");
            assert_eq!(dt.classify(M, ok(bytes, ms)), m, "M {bytes} B {ms} ms");
        }
        assert_eq!(dt.classify(W, AttemptOutcome::Failed), Tag::Failed);
        // Other and None use the W column.
        assert_eq!(dt.classify(NetworkKind::Other, ok(100, 501)), Tag::Normal);
    }

    #[test]
    fn excellent_needs_ten_good_and_a_recent_larger_package() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        // Ten fast small packages are not enough: no middle/big package.
        for i in 0..12 {
            assert_eq!(
                dt.record(at(i * 1000), W, ok(200, 100)),
                DynState::Evaluating
            );
        }
        assert_eq!(dt.continuous_good(), 12);
        // One fast middle package completes the condition.
        assert_eq!(
            dt.record(at(13_000), W, ok(5_000, 1_000)),
            DynState::Excellent
        );
        // Normal samples do not leave Excellent.
        assert_eq!(
            dt.record(at(14_000), W, ok(200, 3_000)),
            DynState::Excellent
        );
        // Any failure does.
        assert_eq!(
            dt.record(at(15_000), W, AttemptOutcome::Failed),
            DynState::Evaluating
        );
        assert_eq!(dt.continuous_good(), 0);
    }

    #[test]
    fn larger_package_older_than_five_minutes_does_not_count() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        dt.record(at(0), W, ok(5_000, 100));
        for i in 1..9 {
            dt.record(at(i * 1000), W, ok(200, 100));
        }
        // 10th good sample arrives 5 min + 1 ms after the middle package.
        assert_eq!(
            dt.record(at(300_001), W, ok(200, 100)),
            DynState::Evaluating
        );
        assert_eq!(dt.continuous_good(), 10);
        // A fresh middle one makes it Excellent.
        assert_eq!(
            dt.record(at(300_002), W, ok(5_000, 100)),
            DynState::Excellent
        );
    }

    #[test]
    fn normal_sample_resets_the_streak() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        for i in 0..9 {
            dt.record(at(i), W, ok(5_000, 100));
        }
        dt.record(at(10), W, ok(5_000, 2_500));
        assert_eq!(dt.continuous_good(), 0);
        for i in 0..9 {
            assert_eq!(
                dt.record(at(20 + i), W, ok(5_000, 100)),
                DynState::Evaluating
            );
        }
        assert_eq!(dt.record(at(40), W, ok(5_000, 100)), DynState::Excellent);
    }

    #[test]
    fn bad_after_four_failures_and_back_after_seven_successes() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        for i in 0..3 {
            assert_eq!(
                dt.record(at(i), W, AttemptOutcome::Failed),
                DynState::Evaluating
            );
        }
        assert_eq!(dt.window_ones(), 7);
        assert_eq!(dt.record(at(3), W, AttemptOutcome::Failed), DynState::Bad);
        // Entering Bad forces a refill with zeros at the next sample: six
        // successes are not enough, the seventh is.
        for i in 0..6 {
            assert_eq!(dt.record(at(10 + i), W, ok(200, 3_000)), DynState::Bad);
        }
        assert_eq!(dt.window_ones(), 6);
        assert_eq!(dt.record(at(20), W, ok(200, 3_000)), DynState::Evaluating);
        // Leaving Bad forces a refill with ones: three failures stay Evaluating.
        for i in 0..3 {
            assert_eq!(
                dt.record(at(30 + i), W, AttemptOutcome::Failed),
                DynState::Evaluating
            );
        }
        assert_eq!(dt.window_ones(), 7);
    }

    #[test]
    fn window_refills_every_five_minutes() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        for i in 0..3 {
            dt.record(at(i * 60_000), W, AttemptOutcome::Failed);
        }
        assert_eq!(dt.window_ones(), 7);
        // 5 min after the refill (first sample, t=0) — not yet expired.
        dt.record(at(300_000), W, ok(200, 100));
        assert_eq!(dt.window_ones(), 7);
        // Past 5 min: refilled with ones, then this failure written.
        assert_eq!(
            dt.record(at(300_001), W, AttemptOutcome::Failed),
            DynState::Evaluating
        );
        assert_eq!(dt.window_ones(), 9);
    }

    #[test]
    fn reset_returns_to_initial_state() {
        let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        for i in 0..4 {
            dt.record(at(i), W, AttemptOutcome::Failed);
        }
        assert_eq!(dt.state(), DynState::Bad);
        dt.reset();
        assert_eq!(dt.state(), DynState::Evaluating);
        assert_eq!(dt.window_ones(), 10);
        // Same behaviour as a fresh machine from here on.
        let mut fresh = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        for i in 0..5 {
            let o = if i % 2 == 0 {
                AttemptOutcome::Failed
            } else {
                ok(200, 10)
            };
            assert_eq!(
                dt.record(at(100 + i), M, o),
                fresh.record(at(100 + i), M, o)
            );
        }
    }

    #[test]
    fn time_going_backwards_is_clamped() {
        let mut a = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        let mut b = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
        a.record(at(1_000_000), W, AttemptOutcome::Failed);
        b.record(at(1_000_000), W, AttemptOutcome::Failed);
        a.record(at(0), W, AttemptOutcome::Failed);
        b.record(at(1_000_000), W, AttemptOutcome::Failed);
        assert_eq!(a, b);
    }

    // ---- state-machine test against a tiny reference model ----

    /// The window as "outcomes since the last refill, padded with the fill
    /// value" instead of a ring buffer.
    #[derive(Debug)]
    struct Model {
        state: DynState,
        since_refill: Vec<bool>,
        fill: bool,
        refill_at: Option<u64>,
        streak: u32,
        larger_at: Option<u64>,
    }

    impl Model {
        fn new() -> Self {
            Model {
                state: DynState::Evaluating,
                since_refill: Vec::new(),
                fill: true,
                refill_at: None,
                streak: 0,
                larger_at: None,
            }
        }

        fn ones(&self) -> u32 {
            let n = self.since_refill.len();
            let recent = &self.since_refill[n.saturating_sub(DYN_WINDOW_LEN)..];
            let pad = DYN_WINDOW_LEN - recent.len();
            (recent.iter().filter(|&&b| b).count() + if self.fill { pad } else { 0 }) as u32
        }

        /// `now` in ms; `bytes`/`cost` or `None` for a failure.
        fn step(&mut self, now: u64, net: NetworkKind, sample: Option<(usize, u64)>) {
            if self.refill_at.is_none_or(|t| now - t > 300_000) {
                self.refill_at = Some(now);
                self.since_refill.clear();
                self.fill = self.state != DynState::Bad;
            }
            let mobile = net.is_mobile();
            // (met, larger)
            let verdict = sample.filter(|&(_, c)| c > 0).map(|(b, c)| {
                let (limit, larger) = match b {
                    b if b < 3072 => (if mobile { 1000 } else { 500 }, false),
                    b if b <= 10240 => (if mobile { 3000 } else { 2000 }, true),
                    b if b <= 30720 => (if mobile { 5000 } else { 4000 }, true),
                    _ => (if mobile { 7000 } else { 6000 }, true),
                };
                (c <= limit, larger)
            });
            let eval = self.state == DynState::Evaluating;
            match verdict {
                None => {
                    self.streak = 0;
                    self.larger_at = None;
                }
                Some((true, larger)) if eval => {
                    self.streak += 1;
                    if larger {
                        self.larger_at = Some(now);
                    }
                }
                Some((false, _)) if eval => {
                    self.streak = 0;
                    self.larger_at = None;
                }
                Some(_) => {}
            }
            self.since_refill.push(verdict.is_some());
            let ones = self.ones();
            self.state = match self.state {
                DynState::Evaluating
                    if self.streak >= 10 && self.larger_at.is_some_and(|t| now - t <= 300_000) =>
                {
                    DynState::Excellent
                }
                DynState::Evaluating if ones <= 6 => {
                    self.refill_at = None;
                    DynState::Bad
                }
                DynState::Excellent if verdict.is_none() => DynState::Evaluating,
                DynState::Bad if ones > 6 => {
                    self.refill_at = None;
                    DynState::Evaluating
                }
                s => s,
            };
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Sample {
            gap_ms: u64,
            mobile: bool,
            bytes: usize,
            cost_ms: u64,
        },
        Fail {
            gap_ms: u64,
        },
        /// Several fast middle/big samples in a row, so Excellent is reached often.
        Burst {
            count: usize,
            bytes: usize,
        },
        Reset,
    }

    fn op() -> impl Strategy<Value = Op> {
        let gap = prop_oneof![0u64..2_000, 0u64..400_000];
        prop_oneof![
            6 => (gap.clone(), any::<bool>(), 0usize..40_000, prop_oneof![0u64..8_000, 0u64..700])
                .prop_map(|(gap_ms, mobile, bytes, cost_ms)| Op::Sample { gap_ms, mobile, bytes, cost_ms }),
            3 => gap.prop_map(|gap_ms| Op::Fail { gap_ms }),
            2 => (1usize..12, 3_072usize..30_000).prop_map(|(count, bytes)| Op::Burst { count, bytes }),
            1 => Just(Op::Reset),
        ]
    }

    proptest! {
        #[test]
        fn machine_matches_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
            let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
            let mut model = Model::new();
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Sample { gap_ms, mobile, bytes, cost_ms } => {
                        now += gap_ms;
                        let net = if mobile { M } else { W };
                        dt.record(at(now), net, ok(bytes, cost_ms));
                        model.step(now, net, Some((bytes, cost_ms)));
                    }
                    Op::Fail { gap_ms } => {
                        now += gap_ms;
                        dt.record(at(now), W, AttemptOutcome::Failed);
                        model.step(now, W, None);
                    }
                    Op::Burst { count, bytes } => {
                        for _ in 0..count {
                            now += 100;
                            dt.record(at(now), M, ok(bytes, 250));
                            model.step(now, M, Some((bytes, 250)));
                            prop_assert_eq!(dt.state(), model.state);
                        }
                    }
                    Op::Reset => {
                        dt.reset();
                        model = Model::new();
                    }
                }
                prop_assert_eq!(dt.state(), model.state);
                prop_assert_eq!(dt.window_ones(), model.ones());
            }
        }
    }
}
