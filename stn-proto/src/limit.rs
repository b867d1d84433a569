//! Anti-avalanche limits (Mars `anti_avalanche.cc`, `frequency_limit.cc`,
//! `flow_limit.cc`; reference §7).
//!
//! Two guards keep a buggy app (a retry loop, a runaway upload) from
//! flooding the servers and the user's data plan:
//!
//! - [`FrequencyLimit`]: the same request payload (by digest) may be sent at
//!   most 105 times; the table is pruned every hour.
//! - [`FlowLimit`]: a leaky bucket of request bytes on mobile networks.
//!
//! [`AntiAvalanche`] combines them the way Mars checks every task after
//! `Req2Buf`. All three are sans-IO: `now` is passed in, nothing is read from a
//! clock, and the same inputs always give the same answers.
//!
//! The constants are the same in every profile: they are protective (they
//! stop pathological loops), not a performance lever, so stn keeps Mars's.
//!
//! (The example runs as the unit test `examples::limit`.)

use crate::net::NetworkKind;
use crate::time::{Duration, Instant, MonotonicClock};

/// Adler-32 of `data` (RFC 1950), the key Mars uses for the frequency table.
///
/// Provided here because stn-proto has no checksum dependency; the engine may
/// switch to the `adler2` crate, which computes the same value.
///
/// (The example runs as the unit test `examples::limit_payload_digest`.)
pub(crate) fn payload_digest(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    // 5552 is the largest n for which the sums cannot overflow a u32 before reducing.
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Which anti-avalanche limit refused a task (Mars `ReportTaskLimited`
/// type: `kFrequencyLimit = 1`, `kFlowLimit = 2`): the frequency limit
/// ([`FrequencyLimitConfig`]) or the flow limit ([`FlowLimitConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LimitKind {
    /// Too many identical requests (Mars `kFrequencyLimit`).
    Frequency,
    /// Too many request bytes on a mobile network (Mars `kFlowLimit`).
    Flow,
}

impl core::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LimitKind::Frequency => {
                "frequency limit (too many identical request bodies; \
                 opt out per task with Task::limit_frequency(false))"
            }
            LimitKind::Flow => {
                "flow limit (too many request bytes on a mobile network; \
                 opt out per task with Task::limit_flow(false))"
            }
        })
    }
}

/// Constants of the `FrequencyLimit`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrequencyLimitConfig {
    /// Most records kept; the least recently updated one is evicted (Mars: 30).
    pub max_records: usize,
    /// A payload is allowed while its count is at most this (Mars: 105, so the
    /// 106th identical request is rejected).
    pub max_count: u32,
    /// How often the table is pruned (Mars: 60 min).
    pub clear_interval: Duration,
    /// A record updated at most this long before a prune may survive it (Mars: 10 min).
    pub keep_window: Duration,
    /// ... if its count is at least this (Mars: 75).
    pub keep_min_count: u32,
    /// A surviving record's count is capped at this (Mars: 99).
    pub keep_count_cap: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    digest: u32,
    count: u32,
    last_update: Instant,
}

/// Rejects a payload seen too often (Mars `FrequencyLimit`).
///
/// Records live in insertion order; when the table is full the record with
/// the oldest last update is evicted (the first one on a tie). Every
/// `clear_interval` (checked lazily at the next [`check`](Self::check)) all
/// records are dropped except the recently hammered ones, which survive with
/// their count capped, so a loop that keeps going is rejected again soon.
#[derive(Clone, Debug)]
pub(crate) struct FrequencyLimit {
    config: FrequencyLimitConfig,
    records: Vec<Record>,
    last_clear: Instant,
    clock: MonotonicClock,
}

impl FrequencyLimit {
    /// An empty table; the first prune is due `clear_interval` after `now`.
    pub(crate) fn new(now: Instant, config: FrequencyLimitConfig) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        FrequencyLimit {
            config,
            records: Vec::new(),
            last_clear: now,
            clock,
        }
    }

    /// Counts one request with payload `digest` and says whether it may go.
    ///
    /// A rejected request still counts and refreshes its record (as in Mars),
    /// so a loop that keeps retrying stays rejected.
    pub(crate) fn check(&mut self, now: Instant, digest: u32) -> bool {
        let now = self.clock.observe(now);
        if now - self.last_clear >= self.config.clear_interval {
            self.last_clear = now;
            self.prune(now);
        }
        if let Some(record) = self.records.iter_mut().find(|r| r.digest == digest) {
            record.count = record.count.saturating_add(1);
            record.last_update = now;
            return record.count <= self.config.max_count;
        }
        if self.config.max_records == 0 {
            // A zero-sized table tracks nothing, so it can reject nothing.
            return true;
        }
        if self.records.len() >= self.config.max_records {
            let oldest = self
                .records
                .iter()
                .enumerate()
                .min_by_key(|(i, r)| (r.last_update, *i))
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.records.remove(i);
            }
        }
        self.records.push(Record {
            digest,
            count: 1,
            last_update: now,
        });
        1 <= self.config.max_count
    }

    #[cfg(test)]
    /// The current count for `digest`, if it has a record.
    pub(crate) fn count(&self, digest: u32) -> Option<u32> {
        self.records
            .iter()
            .find(|r| r.digest == digest)
            .map(|r| r.count)
    }

    #[cfg(test)]
    /// How many records the table holds.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    fn prune(&mut self, now: Instant) {
        let c = &self.config;
        self.records
            .retain(|r| now - r.last_update <= c.keep_window && r.count >= c.keep_min_count);
        for r in &mut self.records {
            r.count = r.count.min(c.keep_count_cap);
        }
    }
}

/// Constants of the `FlowLimit` bucket (bytes and bytes per second).
///
/// The values follow reference §7 (80 MiB, 80 MiB/h, 20 MiB/h, 60 MiB). Some
/// Mars revisions of `flow_limit.cc` use a tenth of each (8 MiB, 8 MiB/h,
/// 2 MiB/h, 6 MiB); set the fields to reproduce those.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowLimitConfig {
    /// Bucket capacity (Mars `kMaxVol`: 80 MiB).
    pub capacity: u64,
    /// Drain per whole second while the app is active (Mars: 80 MiB/h = 23 301 B/s).
    pub active_drain_per_sec: u64,
    /// Drain per whole second while inactive (Mars: 20 MiB/h = 5 825 B/s).
    pub inactive_drain_per_sec: u64,
    /// On becoming inactive the level is clamped to this (Mars `kInactiveMinvol`: 60 MiB).
    pub inactive_level_cap: u64,
}

/// A leaky bucket of request bytes (Mars `FlowLimit`).
///
/// Each accepted request adds its length; the level drains at the active or
/// inactive rate, in whole seconds. Unlike Mars, the sub-second remainder is
/// carried over instead of dropped, so frequent checks still drain the bucket.
#[derive(Clone, Debug)]
pub(crate) struct FlowLimit {
    config: FlowLimitConfig,
    level: u64,
    drained_until: Instant,
    active: bool,
    clock: MonotonicClock,
}

impl FlowLimit {
    /// An empty bucket; `active` picks the initial drain rate.
    pub(crate) fn new(now: Instant, config: FlowLimitConfig, active: bool) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        FlowLimit {
            config,
            level: 0,
            drained_until: now,
            active,
            clock,
        }
    }

    /// The app became active or inactive. Drains at the old rate first; on
    /// becoming inactive the level is clamped to `inactive_level_cap`.
    pub(crate) fn set_active(&mut self, now: Instant, active: bool) {
        let now = self.clock.observe(now);
        self.drain(now);
        if self.active && !active {
            self.level = self.level.min(self.config.inactive_level_cap);
        }
        self.active = active;
    }

    /// Adds a request of `len` bytes if it fits; `false` (and nothing added) if
    /// `level + len` would exceed the capacity.
    pub(crate) fn check(&mut self, now: Instant, len: u64) -> bool {
        let now = self.clock.observe(now);
        self.drain(now);
        match self.level.checked_add(len) {
            Some(level) if level <= self.config.capacity => {
                self.level = level;
                true
            }
            _ => false,
        }
    }

    #[cfg(test)]
    /// The bucket level after draining up to `now` (read-only: the level a
    /// [`check`](Self::check) at `now` would start from).
    pub(crate) fn level(&self, now: Instant) -> u64 {
        let now = now.max(self.clock.latest());
        let secs = (now - self.drained_until).as_secs();
        self.level
            .saturating_sub(secs.saturating_mul(self.drain_rate()))
    }

    /// Whether the bucket drains at the active rate.
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    fn drain(&mut self, now: Instant) {
        let secs = (now - self.drained_until).as_secs();
        if secs == 0 {
            return;
        }
        self.drained_until += Duration::from_secs(secs);
        self.level = self
            .level
            .saturating_sub(secs.saturating_mul(self.drain_rate()));
    }

    fn drain_rate(&self) -> u64 {
        if self.active {
            self.config.active_drain_per_sec
        } else {
            self.config.inactive_drain_per_sec
        }
    }
}

/// Both limits' constants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AntiAvalancheConfig {
    /// The identical-payload limit.
    pub frequency: FrequencyLimitConfig,
    /// The mobile byte-rate limit.
    pub flow: FlowLimitConfig,
}

/// One request to check, as the task's encoder produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CheckInput {
    /// Digest of the encoded request, normally [`payload_digest`] of it.
    pub digest: u32,
    /// Length of the encoded request in bytes.
    pub len: usize,
    /// The network the device is on; only [`NetworkKind::Mobile`] is flow-limited.
    pub net: NetworkKind,
    /// Whether the app is active (foreground, or background for < 10 min).
    pub active: bool,
    /// The task opted into the frequency limit (Mars `Task::limit_frequency`).
    pub limit_frequency: bool,
    /// The task opted into the flow limit (Mars `Task::limit_flow`).
    pub limit_flow: bool,
}

/// Mars `AntiAvalanche`: the frequency limit, then (on mobile) the flow limit.
#[derive(Clone, Debug)]
pub(crate) struct AntiAvalanche {
    frequency: FrequencyLimit,
    flow: FlowLimit,
}

impl AntiAvalanche {
    /// Fresh limits; `active` is the app's activity at `now`.
    pub(crate) fn new(now: Instant, config: AntiAvalancheConfig, active: bool) -> Self {
        AntiAvalanche {
            frequency: FrequencyLimit::new(now, config.frequency),
            flow: FlowLimit::new(now, config.flow, active),
        }
    }

    /// The app's activity changed (also picked up from [`CheckInput::active`]).
    pub(crate) fn set_active(&mut self, now: Instant, active: bool) {
        if self.flow.is_active() != active {
            self.flow.set_active(now, active);
        }
    }

    /// Checks one request. A rejection should end the task with a local
    /// "limited" error and be reported with the returned kind.
    pub(crate) fn check(&mut self, now: Instant, input: &CheckInput) -> Result<(), LimitKind> {
        self.set_active(now, input.active);
        if input.limit_frequency && !self.frequency.check(now, input.digest) {
            return Err(LimitKind::Frequency);
        }
        if input.limit_flow && input.net.is_mobile() {
            let len = u64::try_from(input.len).unwrap_or(u64::MAX);
            if !self.flow.check(now, len) {
                return Err(LimitKind::Flow);
            }
        }
        Ok(())
    }

    #[cfg(test)]
    /// The frequency table (for inspection and reports).
    pub(crate) fn frequency(&self) -> &FrequencyLimit {
        &self.frequency
    }

    #[cfg(test)]
    /// The flow bucket (for inspection and reports).
    pub(crate) fn flow(&self) -> &FlowLimit {
        &self.flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use proptest::prelude::*;

    const MIN: u64 = 60;
    const MIB: u64 = 1024 * 1024;

    fn t(secs: u64) -> Instant {
        Instant::from_secs(secs)
    }

    fn freq() -> FrequencyLimit {
        FrequencyLimit::new(t(0), FrequencyLimitConfig::default())
    }

    #[test]
    fn adler32_known_values() {
        assert_eq!(payload_digest(b"a"), 0x0062_0062);
        assert_eq!(payload_digest(b"abc"), 0x024d_0127);
        assert_eq!(payload_digest(b"Wikipedia"), 0x11e6_0398);
        // Long input crosses the 5552-byte reduction boundary.
        let long = vec![0xffu8; 100_000];
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &long {
            a = (a + u64::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        assert_eq!(u64::from(payload_digest(&long)), (b << 16) | a);
    }

    #[test]
    fn the_106th_identical_request_is_rejected() {
        let mut f = freq();
        for i in 1..=105 {
            assert!(f.check(t(1), 7), "request {i} should pass");
        }
        assert!(!f.check(t(1), 7));
        assert_eq!(f.count(7), Some(106));
        // Other payloads are unaffected.
        assert!(f.check(t(1), 8));
        // Rejected requests keep counting.
        assert!(!f.check(t(2), 7));
        assert_eq!(f.count(7), Some(107));
    }

    #[test]
    fn lru_eviction_at_31_digests() {
        let mut f = freq();
        for d in 0..30u32 {
            assert!(f.check(t(u64::from(d)), d));
        }
        // Refresh digest 0 so digest 1 is now the least recently updated.
        assert!(f.check(t(40), 0));
        assert_eq!(f.len(), 30);
        assert!(f.check(t(41), 100));
        assert_eq!(f.len(), 30);
        assert_eq!(f.count(1), None, "least recently updated record evicted");
        assert_eq!(f.count(0), Some(2));
        assert_eq!(f.count(100), Some(1));
    }

    #[test]
    fn lru_tie_evicts_the_first_inserted() {
        let mut f = freq();
        for d in 0..30u32 {
            f.check(t(5), d);
        }
        f.check(t(5), 99);
        assert_eq!(f.count(0), None);
        assert_eq!(f.count(1), Some(1));
    }

    #[test]
    fn hourly_clear_keeps_recent_hot_records_capped_at_99() {
        let mut f = freq();
        // 1: hot (120 hits) and recent; 2: warm (75) and recent; 3: 74, recent;
        // 4: hot but last updated 11 min before the clear.
        for _ in 0..100 {
            f.check(t(49 * MIN), 4);
        }
        for _ in 0..120 {
            f.check(t(55 * MIN), 1);
        }
        for _ in 0..75 {
            f.check(t(55 * MIN), 2);
        }
        for _ in 0..74 {
            f.check(t(55 * MIN), 3);
        }
        // Not yet an hour since creation: nothing cleared.
        f.check(t(60 * MIN - 1), 50);
        assert_eq!(f.len(), 5);
        // The hour has passed: the clear runs before this check counts.
        assert!(f.check(t(60 * MIN), 1), "capped at 99, so the 100th passes");
        assert_eq!(f.count(1), Some(100));
        assert_eq!(f.count(2), Some(75));
        assert_eq!(f.count(3), None);
        assert_eq!(f.count(4), None);
        assert_eq!(f.count(50), None);
        assert_eq!(f.len(), 2);
        for _ in 0..5 {
            assert!(f.check(t(60 * MIN), 1));
        }
        assert!(!f.check(t(60 * MIN), 1), "106th again rejected");
        // The next clear is an hour after the last one, not after creation.
        f.check(t(119 * MIN), 2);
        assert_eq!(f.count(1), Some(106));
        f.check(t(120 * MIN), 9);
        assert_eq!(f.count(1), None, "not updated in the last 10 min");
        assert_eq!(f.count(2), Some(76), "76 kept (under the cap)");
    }

    #[test]
    fn keep_window_is_inclusive() {
        let mut f = freq();
        for _ in 0..80 {
            f.check(t(50 * MIN), 1);
        }
        f.check(t(60 * MIN), 2);
        assert_eq!(f.count(1), Some(80));
    }

    #[test]
    fn flow_drain_math_active_and_inactive() {
        let cfg = FlowLimitConfig::default();
        assert_eq!(cfg.active_drain_per_sec, 23_301);
        assert_eq!(cfg.inactive_drain_per_sec, 5_825);
        let mut b = FlowLimit::new(t(0), cfg.clone(), true);
        assert!(b.check(t(0), 1_000_000));
        // 999 ms: no whole second yet.
        assert_eq!(b.level(Instant::from_millis(999)), 1_000_000);
        // 1.5 s: one second drained, the half second carried over.
        assert_eq!(b.level(Instant::from_millis(1_500)), 1_000_000 - 23_301);
        assert_eq!(b.level(Instant::from_millis(2_000)), 1_000_000 - 2 * 23_301);
        b.set_active(t(2), false);
        assert_eq!(b.level(t(12)), 1_000_000 - 2 * 23_301 - 10 * 5_825);
        // Drains to zero, never below.
        assert_eq!(b.level(t(100_000)), 0);
    }

    #[test]
    fn flow_capacity_and_inactive_clamp() {
        let cfg = FlowLimitConfig::default();
        let mut b = FlowLimit::new(t(0), cfg.clone(), true);
        assert!(b.check(t(0), 70 * MIB));
        assert!(b.check(t(0), 10 * MIB), "exactly full is allowed");
        assert!(!b.check(t(0), 1), "level + len > capacity is rejected");
        assert_eq!(b.level(t(0)), 80 * MIB, "a rejection adds nothing");
        b.set_active(t(0), false);
        assert_eq!(b.level(t(0)), 60 * MIB);
        // Becoming active does not clamp; staying inactive does not re-clamp.
        assert!(b.check(t(0), 20 * MIB));
        b.set_active(t(0), false);
        assert_eq!(b.level(t(0)), 80 * MIB);
        assert!(!b.check(t(0), u64::MAX), "huge lengths do not overflow");
    }

    fn input(digest: u32, len: usize, net: NetworkKind) -> CheckInput {
        CheckInput {
            digest,
            len,
            net,
            active: true,
            limit_frequency: true,
            limit_flow: true,
        }
    }

    #[test]
    fn wifi_is_never_flow_limited() {
        let mut a = AntiAvalanche::new(t(0), AntiAvalancheConfig::default(), true);
        for d in 0..20u32 {
            assert_eq!(
                a.check(t(0), &input(d, 50 * MIB as usize, NetworkKind::Wifi)),
                Ok(())
            );
        }
        assert_eq!(a.flow().level(t(0)), 0);
        assert_eq!(
            a.check(t(0), &input(100, 50 * MIB as usize, NetworkKind::Mobile)),
            Ok(())
        );
        assert_eq!(
            a.check(t(0), &input(101, 50 * MIB as usize, NetworkKind::Mobile)),
            Err(LimitKind::Flow)
        );
        assert_eq!(
            a.check(t(0), &input(102, 50 * MIB as usize, NetworkKind::Other)),
            Ok(())
        );
    }

    #[test]
    fn opt_outs_and_order() {
        let mut a = AntiAvalanche::new(t(0), AntiAvalancheConfig::default(), true);
        let mut i = input(1, 10, NetworkKind::Mobile);
        i.limit_frequency = false;
        for _ in 0..200 {
            assert_eq!(a.check(t(0), &i), Ok(()));
        }
        assert_eq!(a.frequency().count(1), None);
        i.limit_frequency = true;
        i.limit_flow = false;
        i.len = usize::MAX;
        assert_eq!(a.check(t(0), &i), Ok(()), "flow opt-out");
        // Activity changes arrive through the input: inactive clamps the bucket.
        let mut big = input(2, 79 * MIB as usize, NetworkKind::Mobile);
        assert_eq!(a.check(t(1), &big), Ok(()));
        big.digest = 3;
        big.len = 0;
        big.active = false;
        assert_eq!(a.check(t(1), &big), Ok(()));
        assert_eq!(a.flow().level(t(1)), 60 * MIB);
    }

    #[test]
    fn profiles_share_the_mars_constants() {
        for p in Profile::ALL {
            assert_eq!(
                AntiAvalancheConfig::for_profile(p),
                AntiAvalancheConfig::default()
            );
        }
    }

    /// A deliberately naive model of Mars's frequency table.
    #[derive(Default)]
    struct Model {
        // (digest, count, last_update_secs, insertion sequence)
        rows: Vec<(u32, u32, u64, u64)>,
        seq: u64,
        last_clear: u64,
    }

    impl Model {
        fn check(&mut self, now: u64, digest: u32) -> bool {
            if now - self.last_clear >= 3600 {
                self.last_clear = now;
                self.rows = self
                    .rows
                    .iter()
                    .filter(|r| now - r.2 <= 600 && r.1 >= 75)
                    .map(|&(d, c, l, s)| (d, c.min(99), l, s))
                    .collect();
            }
            if let Some(r) = self.rows.iter_mut().find(|r| r.0 == digest) {
                r.1 += 1;
                r.2 = now;
                return r.1 <= 105;
            }
            if self.rows.len() == 30 {
                let victim = *self.rows.iter().min_by_key(|r| (r.2, r.3)).unwrap();
                self.rows.retain(|r| r != &victim);
            }
            self.seq += 1;
            self.rows.push((digest, 1, now, self.seq));
            true
        }
    }

    proptest! {
        #[test]
        fn frequency_table_matches_model(
            ops in proptest::collection::vec((0u64..400, 0u32..40, 1usize..40), 1..200)
        ) {
            let mut real = freq();
            let mut model = Model::default();
            let mut now = 0;
            for (step, digest, repeat) in ops {
                now += step;
                for _ in 0..repeat {
                    prop_assert_eq!(real.check(t(now), digest), model.check(now, digest));
                }
                prop_assert!(real.len() <= 30);
                for d in 0..40 {
                    let m = model.rows.iter().find(|r| r.0 == d).map(|r| r.1);
                    prop_assert_eq!(real.count(d), m);
                }
            }
        }

        #[test]
        fn flow_level_never_exceeds_capacity(
            ops in proptest::collection::vec((0u64..5_000, 0u64..(40 * MIB), any::<bool>()), 1..100)
        ) {
            let mut b = FlowLimit::new(t(0), FlowLimitConfig::default(), true);
            let mut now = Instant::ZERO;
            for (step_ms, len, active) in ops {
                now += Duration::from_millis(step_ms * 100);
                b.set_active(now, active);
                let before = b.level(now);
                let ok = b.check(now, len);
                prop_assert_eq!(ok, before + len <= 80 * MIB);
                prop_assert!(b.level(now) <= 80 * MIB);
            }
        }
    }
}
