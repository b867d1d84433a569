//! Round-trip estimation and the data retransmission timeout.

use stn_proto::Duration;

use crate::units::duration_nanos_saturating;

/// RFC 6298 smoothed RTT estimator (integer nanoseconds, so deterministic on
/// every platform).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
    /// The RTO before the first sample, when not the initial 1 s (Linux
    /// after a retransmitted SYN: [`RtoPolicy::after_syn_retransmit`]).
    no_sample_rto: Option<u64>,
}

impl RttEstimator {
    /// No sample yet.
    pub const fn new() -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            no_sample_rto: None,
        }
    }

    /// No sample yet, and an RTO of `rto` until the first one.
    pub fn with_no_sample_rto(rto: Duration) -> Self {
        RttEstimator {
            no_sample_rto: Some(duration_nanos_saturating(rto)),
            ..Self::new()
        }
    }

    /// Folds in one RTT measurement (RFC 6298 §2.2/2.3, α = 1/8, β = 1/4).
    pub fn sample(&mut self, rtt: Duration) {
        let r = duration_nanos_saturating(rtt);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// The smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    /// The RTT variation.
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }
}

/// How a stack turns RTT estimates into a retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoPolicy {
    /// Linux: `srtt + max(200 ms, 4·rttvar)`, initial 1 s, max 120 s, gives up
    /// after 15 retransmissions (`tcp_retries2`).
    Linux,
    /// xnu: `max(srtt + 4·rttvar, 100 ms) + 200 ms` slop, initial 1 s, max 64 s,
    /// gives up after 12 retransmissions (`TCP_MAXRXTSHIFT`).
    Xnu,
}

impl RtoPolicy {
    /// The un-backed-off RTO for the estimator's state (initial 1 s without a
    /// sample, or the estimator's own no-sample RTO).
    pub fn base_rto(self, est: &RttEstimator) -> Duration {
        let Some(srtt) = est.srtt() else {
            return est
                .no_sample_rto
                .map_or(Duration::from_secs(1), Duration::from_nanos);
        };
        let var4 = est.rttvar() * 4;
        let rto = match self {
            RtoPolicy::Linux => srtt + var4.max(Duration::from_millis(200)),
            RtoPolicy::Xnu => {
                (srtt + var4).max(Duration::from_millis(100)) + Duration::from_millis(200)
            }
        };
        rto.min(self.max_rto())
    }

    /// The RTO after `backoff` consecutive expirations (doubling, capped).
    pub fn rto(self, est: &RttEstimator, backoff: u32) -> Duration {
        let base = self.base_rto(est);
        let factor = 1u32.checked_shl(backoff.min(20)).unwrap_or(u32::MAX);
        base.saturating_mul(factor).min(self.max_rto())
    }

    /// What a handshake whose SYN was retransmitted leaves: `None` — the
    /// SYN-ACK gives an RTT sample as usual (xnu, as modelled); `Some(rto)`
    /// — no sample (Karn's rule) and this RTO until the first data sample.
    /// Linux: `TCP_TIMEOUT_FALLBACK`, 3 s (RFC 6298 §5.7, `tcp_init_metrics`;
    /// measured by the delay lab, docs/lab.md). The kernel's slow decay of
    /// `rttvar` after that first sample is not modelled.
    pub fn after_syn_retransmit(self) -> Option<Duration> {
        match self {
            RtoPolicy::Linux => Some(Duration::from_secs(3)),
            RtoPolicy::Xnu => None,
        }
    }

    /// The cap.
    pub fn max_rto(self) -> Duration {
        match self {
            RtoPolicy::Linux => Duration::from_secs(120),
            RtoPolicy::Xnu => Duration::from_secs(64),
        }
    }

    /// Retransmissions of the same data before the connection times out.
    pub fn max_retransmissions(self) -> u32 {
        match self {
            RtoPolicy::Linux => 15,
            RtoPolicy::Xnu => 12,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_three_rtt_on_linux_for_large_rtt() {
        let mut e = RttEstimator::new();
        e.sample(Duration::from_millis(200));
        // srtt 200, rttvar 100 → 200 + max(200, 400) = 600 ms = 3·RTT.
        assert_eq!(RtoPolicy::Linux.base_rto(&e), Duration::from_millis(600));
        assert_eq!(RtoPolicy::Xnu.base_rto(&e), Duration::from_millis(800));
        assert_eq!(RtoPolicy::Linux.rto(&e, 2), Duration::from_millis(2400));
        assert_eq!(RtoPolicy::Linux.rto(&e, 30), Duration::from_secs(120));
        assert_eq!(RtoPolicy::Xnu.rto(&e, 30), Duration::from_secs(64));
    }

    #[test]
    fn linux_floor_applies_to_small_rtt() {
        let mut e = RttEstimator::new();
        for _ in 0..50 {
            e.sample(Duration::from_millis(10));
        }
        let rto = RtoPolicy::Linux.base_rto(&e);
        assert!(
            rto >= Duration::from_millis(210) && rto < Duration::from_millis(220),
            "{rto:?}"
        );
        assert_eq!(
            RtoPolicy::Linux.base_rto(&RttEstimator::new()),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_no_sample_rto_holds_until_the_first_sample() {
        let three = RtoPolicy::Linux.after_syn_retransmit().unwrap();
        let mut e = RttEstimator::with_no_sample_rto(three);
        assert_eq!(RtoPolicy::Linux.base_rto(&e), Duration::from_secs(3));
        assert_eq!(RtoPolicy::Linux.rto(&e, 1), Duration::from_secs(6));
        e.sample(Duration::from_millis(200));
        assert_eq!(RtoPolicy::Linux.base_rto(&e), Duration::from_millis(600));
        assert_eq!(RtoPolicy::Xnu.after_syn_retransmit(), None);
    }

    #[test]
    fn estimator_converges() {
        let mut e = RttEstimator::new();
        e.sample(Duration::from_millis(100));
        for _ in 0..100 {
            e.sample(Duration::from_millis(300));
        }
        let s = e.srtt().unwrap();
        assert!(
            s > Duration::from_millis(299) && s <= Duration::from_millis(300),
            "{s:?}"
        );
    }
}
