//! stn's estimators: RTT/RTO (RFC 6298), throughput (EWMA), and backoff.

use crate::time::{duration_nanos_saturating, Duration};

/// Constants of `RttEstimator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RttConfig {
    /// RTO before any sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// `G` in `rto = srtt + max(G, 4·rttvar)`. stn uses 200 ms, Linux's
    /// `TCP_RTO_MIN`, which plays this role in Linux's RTO (peers.md §3.1).
    pub granularity: Duration,
    /// Lower clamp of the RTO (200 ms, as Linux).
    pub min_rto: Duration,
    /// Upper clamp of the RTO (60 s, RFC 6298 §2.5's "at least 60 s").
    pub max_rto: Duration,
}

impl RttConfig {
    /// stn's defaults (see the fields).
    pub const STN: RttConfig = RttConfig {
        initial_rto: Duration::from_secs(1),
        granularity: Duration::from_millis(200),
        min_rto: Duration::from_millis(200),
        max_rto: Duration::from_secs(60),
    };
}

impl Default for RttConfig {
    fn default() -> Self {
        Self::STN
    }
}

/// RFC 6298 round-trip estimator: `srtt`, `rttvar`, and
/// `rto = clamp(srtt + max(G, 4·rttvar), min_rto, max_rto)`.
///
/// The first sample `r` sets `srtt = r`, `rttvar = r/2`; later ones use
/// α = 1/8, β = 1/4. Integer nanosecond arithmetic, so results are exact and
/// deterministic.
///
/// (The example runs as the unit test `examples::timeout_estimate_rttestimator`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RttEstimator {
    config: RttConfig,
    srtt: Option<u64>,
    rttvar: u64,
    samples: u64,
}

impl RttEstimator {
    /// An estimator with no samples.
    pub(crate) fn new(config: RttConfig) -> Self {
        RttEstimator {
            config,
            srtt: None,
            rttvar: 0,
            samples: 0,
        }
    }

    /// Feeds one round-trip measurement.
    pub(crate) fn sample(&mut self, rtt: Duration) {
        let r = duration_nanos_saturating(rtt);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                // rttvar first, from the old srtt (RFC 6298 §2.3).
                self.rttvar = self.rttvar - self.rttvar / 4 + s.abs_diff(r) / 4;
                self.srtt = Some(s - s / 8 + r / 8);
            }
        }
        self.samples = self.samples.saturating_add(1);
    }

    /// Smoothed RTT, `None` before any sample.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    #[cfg(test)]
    /// RTT variation (zero before any sample).
    pub(crate) fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    #[cfg(test)]
    /// Number of samples fed.
    pub(crate) fn samples(&self) -> u64 {
        self.samples
    }

    /// Whether at least one sample was fed.
    pub(crate) fn has_samples(&self) -> bool {
        self.srtt.is_some()
    }

    /// The retransmission-style timeout (`initial_rto` before any sample).
    pub(crate) fn rto(&self) -> Duration {
        let Some(s) = self.srtt else {
            return self.config.initial_rto;
        };
        let var = Duration::from_nanos(self.rttvar.saturating_mul(4));
        let rto = Duration::from_nanos(s).saturating_add(var.max(self.config.granularity));
        rto.clamp(
            self.config.min_rto,
            self.config.max_rto.max(self.config.min_rto),
        )
    }

    /// Forgets every sample (network change).
    pub(crate) fn reset(&mut self) {
        *self = RttEstimator::new(self.config);
    }
}

/// Throughput estimate in bytes per second: an EWMA with weight 1/4 on the
/// newest sample. Samples with no bytes are ignored; a zero duration counts
/// as 1 ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThroughputEstimator {
    estimate: Option<u64>,
}

impl ThroughputEstimator {
    /// An estimator with no samples.
    pub(crate) fn new() -> Self {
        ThroughputEstimator { estimate: None }
    }

    #[cfg(test)]
    /// Feeds `bytes` moved in `dur`.
    pub(crate) fn sample(&mut self, bytes: usize, dur: Duration) {
        if bytes == 0 {
            return;
        }
        let nanos = duration_nanos_saturating(dur).max(1_000_000);
        let rate = (bytes as u128 * 1_000_000_000) / u128::from(nanos);
        let rate = u64::try_from(rate).unwrap_or(u64::MAX).max(1);
        self.estimate = Some(match self.estimate {
            None => rate,
            Some(e) => {
                let mixed = (u128::from(e) * 3 + u128::from(rate)) / 4;
                u64::try_from(mixed).unwrap_or(u64::MAX).max(1)
            }
        });
    }

    /// Bytes per second, `None` before any sample.
    pub(crate) fn estimate(&self) -> Option<u64> {
        self.estimate
    }

    /// Forgets every sample.
    pub(crate) fn reset(&mut self) {
        self.estimate = None;
    }
}

/// `base` multiplied by `factor_percent / 100` once per consecutive timeout,
/// never above `cap` (and `min(base, cap)` with no timeouts). A factor below
/// 100 % is treated as 100 %, so the result is monotone non-decreasing in
/// `consecutive`.
///
/// (The example runs as the unit test `examples::timeout_estimate_backoff`.)
pub(crate) fn backoff(
    base: Duration,
    factor_percent: u32,
    consecutive: u32,
    cap: Duration,
) -> Duration {
    let cap = duration_nanos_saturating(cap);
    let factor = u128::from(factor_percent.max(100));
    let mut v = u128::from(duration_nanos_saturating(base));
    for _ in 0..consecutive {
        if v >= u128::from(cap) || factor == 100 {
            break;
        }
        v = v * factor / 100;
    }
    Duration::from_nanos(u64::try_from(v.min(u128::from(cap))).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::ms;
    use quickcheck::quickcheck;

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = RttEstimator::new(RttConfig::STN);
        assert!(!e.has_samples());
        assert_eq!(e.srtt(), None);
        e.sample(ms(80));
        assert_eq!(e.srtt(), Some(ms(80)));
        assert_eq!(e.rttvar(), ms(40));
        // 4·rttvar = 160 ms < G = 200 ms.
        assert_eq!(e.rto(), ms(280));
        assert_eq!(e.samples(), 1);
    }

    #[test]
    fn second_sample_follows_rfc6298() {
        let mut e = RttEstimator::new(RttConfig::STN);
        e.sample(ms(400));
        e.sample(ms(800));
        // rttvar = 3/4·200 + 1/4·|400-800| = 250; srtt = 7/8·400 + 1/8·800 = 450.
        assert_eq!(e.rttvar(), ms(250));
        assert_eq!(e.srtt(), Some(ms(450)));
        assert_eq!(e.rto(), ms(1450));
    }

    #[test]
    fn converges_to_a_constant_rtt() {
        let mut e = RttEstimator::new(RttConfig::STN);
        e.sample(ms(2_000));
        for _ in 0..200 {
            e.sample(ms(100));
        }
        let srtt = e.srtt().unwrap();
        assert!(srtt >= ms(100) && srtt < ms(101), "{srtt:?}");
        assert!(e.rttvar() < ms(1), "{:?}", e.rttvar());
        // Variance gone: rto = srtt + G.
        assert!(e.rto() >= ms(300) && e.rto() < ms(301));
    }

    #[test]
    fn rto_is_clamped() {
        let mut e = RttEstimator::new(RttConfig::STN);
        e.sample(Duration::from_micros(10));
        // srtt + G, above the min clamp.
        assert_eq!(e.rto(), ms(200) + Duration::from_micros(10));
        let tight = RttConfig {
            granularity: Duration::ZERO,
            ..RttConfig::STN
        };
        let mut e2 = RttEstimator::new(tight);
        e2.sample(Duration::from_micros(10));
        assert_eq!(e2.rto(), ms(200));
        e.reset();
        e.sample(Duration::from_secs(100));
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.sample(Duration::MAX);
        assert_eq!(e.rto(), Duration::from_secs(60));
    }

    #[test]
    fn throughput_is_an_ewma() {
        let mut t = ThroughputEstimator::new();
        assert_eq!(t.estimate(), None);
        t.sample(0, ms(10));
        assert_eq!(t.estimate(), None);
        t.sample(100_000, Duration::from_secs(1));
        assert_eq!(t.estimate(), Some(100_000));
        t.sample(20_000, Duration::from_secs(1));
        assert_eq!(t.estimate(), Some(80_000));
        t.sample(1, Duration::ZERO); // zero duration counts as 1 ms
        assert_eq!(t.estimate(), Some((3 * 80_000 + 1_000) / 4));
        t.reset();
        assert_eq!(t.estimate(), None);
    }

    #[test]
    fn backoff_scripted() {
        let cap = ms(22_000);
        let steps: Vec<_> = (0..6).map(|n| backoff(ms(3_000), 200, n, cap)).collect();
        assert_eq!(steps, [ms(3_000), ms(6_000), ms(12_000), cap, cap, cap]);
        assert_eq!(backoff(ms(3_000), 150, 1, cap), ms(4_500));
        assert_eq!(backoff(ms(3_000), 50, 5, cap), ms(3_000));
        assert_eq!(backoff(ms(30_000), 200, 0, cap), cap);
        assert_eq!(
            backoff(Duration::MAX, 200, 3, Duration::MAX),
            Duration::from_nanos(u64::MAX)
        );
    }

    quickcheck! {
        fn backoff_monotone_in_consecutive(base: u64, factor: u32, a: u8, b: u8, cap: u64) -> bool {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let f = |n: u8| backoff(Duration::from_nanos(base), factor % 1000, u32::from(n), Duration::from_nanos(cap));
            f(lo) <= f(hi) && f(hi) <= Duration::from_nanos(cap)
        }

        fn backoff_monotone_in_base(a: u64, b: u64, n: u8, cap: u64) -> bool {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let f = |x: u64| backoff(Duration::from_nanos(x), 200, u32::from(n), Duration::from_nanos(cap));
            f(lo) <= f(hi)
        }

        fn rto_within_clamps(samples: Vec<u32>) -> bool {
            let mut e = RttEstimator::new(RttConfig::STN);
            samples.into_iter().all(|s| {
                e.sample(Duration::from_micros(u64::from(s)));
                let r = e.rto();
                r >= RttConfig::STN.min_rto && r <= RttConfig::STN.max_rto
            })
        }
    }
}
