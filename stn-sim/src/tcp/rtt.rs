//! Round-trip estimators: RFC 6298's (xnu's `tcp_xmit_timer`, and the
//! peers' own estimates) and Linux's (`tcp_rtt_estimator`, whose variance
//! term decays once per round trip, not per sample). Integer nanoseconds,
//! so deterministic on every platform.

use stn_proto::Duration;

use crate::units::duration_nanos_saturating;

/// RFC 6298 smoothed RTT estimator (§2.2/2.3, α = 1/8, β = 1/4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
}

impl RttEstimator {
    /// No sample yet.
    pub const fn new() -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
        }
    }

    /// Folds in one RTT measurement: the first sets `srtt = r`,
    /// `rttvar = r/2`; later ones smooth with α = 1/8 and β = 1/4.
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

    /// An estimator started from a cached srtt and variation (xnu's
    /// `tcp_getrt_rtt`): the next sample smooths into them.
    pub fn seeded(srtt: Duration, rttvar: Duration) -> Self {
        RttEstimator {
            srtt: Some(duration_nanos_saturating(srtt)),
            rttvar: duration_nanos_saturating(rttvar),
        }
    }

    /// Forgets the smoothed RTT but keeps the retransmission timeout it
    /// gave: xnu's RTO handler after four back-offs ("our srtt estimate is
    /// probably bogus"), which moves `srtt` into the variance so the next
    /// sample starts the estimator afresh.
    pub fn clobber(&mut self) {
        if let Some(s) = self.srtt.take() {
            // xnu adds srtt in ms to its ×16-scaled variance: srtt / 16.
            self.rttvar = self.rttvar.saturating_add(s / 16);
        }
    }

    /// The smoothed RTT, if any sample was taken (and not clobbered).
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    /// The RTT variation.
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }
}

/// Linux's estimator (`net/ipv4/tcp_input.c`, `tcp_rtt_estimator`, and
/// `tcp_set_rto`): `srtt` smoothed with gain 1/8; `mdev` (four times the
/// mean deviation) with gain 1/4, or 1/32 when the sample is below `srtt`
/// (its Eifel-like damping); `mdev_max`, the largest `mdev` of the current
/// round trip, starts each round at the minimum RTO; and `rttvar`, the
/// variance term of the RTO, follows `mdev_max` up at once but down only by
/// a quarter of the gap once per round trip (when `snd_una` passes the
/// `snd_nxt` the round started at). RTO = `srtt + rttvar`, so never below
/// `srtt` + the minimum RTO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxRtt {
    srtt: u64,
    mdev: u64,
    mdev_max: u64,
    rttvar: u64,
    rtt_seq: u64,
    rto_min: u64,
}

impl LinuxRtt {
    /// No sample yet; `rto_min` is `TCP_RTO_MIN` (200 ms).
    pub fn new(rto_min: Duration) -> Self {
        LinuxRtt {
            srtt: 0,
            mdev: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            rto_min: duration_nanos_saturating(rto_min),
        }
    }

    /// `true` once a sample was taken (`srtt_us != 0`).
    pub fn has_sample(&self) -> bool {
        self.srtt != 0
    }

    /// Folds in a measurement taken when the ACK moved `snd_una` to
    /// `snd_una`, with `snd_nxt` the next sequence number to send.
    pub fn sample(&mut self, rtt: Duration, snd_una: u64, snd_nxt: u64) {
        // Linux keeps srtt ×8 and mdev ×4 in µs; the same arithmetic on
        // unscaled nanoseconds with explicit divisions.
        let m = duration_nanos_saturating(rtt).max(1);
        if self.srtt == 0 {
            self.srtt = m;
            self.mdev = 2 * m; // "make sure rto = 3*rtt"
            self.rttvar = self.mdev.max(self.rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            return;
        }
        let err = i128::from(m) - i128::from(self.srtt);
        self.srtt = u64::try_from(i128::from(self.srtt) + err / 8)
            .unwrap_or(1)
            .max(1);
        let mdev = i128::from(self.mdev);
        let delta = if err < 0 {
            let d = -err - mdev / 4;
            // A sample below srtt moves mdev with gain 1/32 when it
            // would raise it (so a falling RTT cannot inflate the RTO).
            if d > 0 {
                d / 8
            } else {
                d
            }
        } else {
            err - mdev / 4
        };
        self.mdev = u64::try_from(mdev + delta).unwrap_or(0);
        if self.mdev > self.mdev_max {
            self.mdev_max = self.mdev;
            if self.mdev_max > self.rttvar {
                self.rttvar = self.mdev_max;
            }
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) / 4;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max = self.rto_min;
        }
    }

    /// `tcp_init_metrics` when the handshake gave no sample: RTO, `mdev`,
    /// `mdev_max` and `rttvar` all `TCP_TIMEOUT_FALLBACK` (RFC 6298 §5.7);
    /// `srtt` stays unset, so the first data sample starts afresh.
    pub fn fall_back(&mut self, fallback: Duration) {
        let f = duration_nanos_saturating(fallback);
        self.mdev = f;
        self.mdev_max = f;
        self.rttvar = f;
    }

    /// The smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<Duration> {
        (self.srtt != 0).then(|| Duration::from_nanos(self.srtt))
    }

    /// The RTO's variance term (`rttvar_us`).
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    /// `__tcp_set_rto`: `srtt + rttvar` (before the `TCP_RTO_MAX` bound).
    pub fn rto(&self) -> Duration {
        Duration::from_nanos(self.srtt.saturating_add(self.rttvar))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn rfc6298_first_sample_and_convergence() {
        let mut e = RttEstimator::new();
        e.sample(ms(200));
        assert_eq!(e.srtt(), Some(ms(200)));
        assert_eq!(e.rttvar(), ms(100));
        for _ in 0..100 {
            e.sample(ms(300));
        }
        let s = e.srtt().unwrap();
        assert!(s > ms(299) && s <= ms(300), "{s:?}");
        e.clobber();
        assert_eq!(e.srtt(), None);
    }

    #[test]
    fn linux_first_sample_gives_three_rtt_with_a_floor() {
        let mut e = LinuxRtt::new(ms(200));
        e.sample(ms(200), 1, 100);
        // mdev = 2·rtt = 400 ms > rto_min: RTO = 600 ms = 3·RTT.
        assert_eq!(e.rto(), ms(600));
        let mut e = LinuxRtt::new(ms(200));
        e.sample(ms(60), 1, 100);
        // mdev = 120 ms < rto_min: rttvar = 200 ms, RTO = 260 ms.
        assert_eq!(e.rto(), ms(260));
    }

    #[test]
    fn linux_rttvar_decays_once_per_round_trip() {
        // A settled 600 ms path: the handshake sample, then one request per
        // round trip, each sample taken as its ACK moves snd_una past the
        // snd_nxt the previous round started at.
        let mut e = LinuxRtt::new(ms(200));
        e.sample(ms(600), 1, 1);
        assert_eq!(e.rttvar(), ms(1200));
        let mut rttvars = Vec::new();
        for k in 1..=4u64 {
            e.sample(ms(600), 1 + 100 * k, 1 + 100 * k);
            rttvars.push(e.rttvar().as_millis());
        }
        // mdev falls 1200 → 900 → 675 → 506 → 380 ms; rttvar closes a
        // quarter of its gap to the round's largest mdev once per round.
        assert_eq!(rttvars, vec![1200, 1068, 928, 791]);
        // More samples within the same round do not decay it.
        let before = e.rttvar();
        for _ in 0..10 {
            e.sample(ms(600), 401, 401);
        }
        assert_eq!(e.rttvar(), before);
    }

    #[test]
    fn linux_inflated_first_sample_decays_slowly() {
        // A SYN-ACK answering a retransmitted SYN echoes the first SYN: the
        // handshake sample is 1 s + RTT. Later 60 ms samples pull srtt down
        // by an eighth of the gap each, and rttvar stays near 2 s.
        let mut e = LinuxRtt::new(ms(200));
        e.sample(ms(1060), 1, 1);
        assert_eq!(e.rto(), ms(3180));
        e.sample(ms(60), 101, 201);
        // srtt 1060 − 1000/8 = 935 ms; mdev 2120 + (1000 − 530)/8 = 2178.75
        // ms (the damped gain), so rttvar rises to it: RTO ≈ 3.11 s.
        assert_eq!(e.srtt(), Some(ms(935)));
        assert_eq!(e.rto().as_millis(), 3113);
    }

    #[test]
    fn linux_fallback_holds_until_the_first_sample_resets_it() {
        let mut e = LinuxRtt::new(ms(200));
        e.fall_back(Duration::from_secs(3));
        assert!(!e.has_sample());
        assert_eq!(e.rttvar(), Duration::from_secs(3));
        e.sample(ms(100), 101, 201);
        assert_eq!(e.rto(), ms(300));
    }
}
