//! The data retransmission timeout: its estimator, its clamps, its
//! back-off and when a stack gives up.

use stn_proto::{Duration, Instant};

use super::rtt::{LinuxRtt, RttEstimator};

/// How a stack turns RTT samples into a retransmission timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoPolicy {
    /// Linux: [`LinuxRtt`]; RTO = srtt + rttvar (so at least srtt +
    /// `TCP_RTO_MIN`), bounded by `TCP_RTO_MAX` (120 s, `tcp_bound_rto`;
    /// 6.15 made the bound a sysctl, `tcp_rto_max_ms`, default unchanged);
    /// initial 1 s (`TCP_TIMEOUT_INIT`), 3 s when the handshake gave no
    /// sample (`TCP_TIMEOUT_FALLBACK`); doubled per timeout
    /// (`tcp_retransmit_timer`), reset by the next sample; gives up when
    /// the time since the first retransmission reaches what 15 doublings
    /// from 200 ms would take (`tcp_retries2`, `retransmits_timed_out`,
    /// `tcp_model_timeout`: 924.6 s).
    Linux,
    /// xnu (`bsd/netinet/tcp_input.c`, `tcp_xmit_timer`;
    /// `tcp_timer.h`, `TCPT_RANGESET`): RFC 6298 [`RttEstimator`]; RTO =
    /// 200 ms slop + max(100 ms, srtt + 4·rttvar) × `tcp_backoff`
    /// {1, 2, 4, …, 64} (capped multiplier), within [100 ms, 64 s]
    /// (`TCPTV_REXMTMAX`); the first after a sample is at least that
    /// sample + 2 ms; initial 1 s; after four back-offs srtt is forgotten
    /// (`TCPT_REXMT`: "our srtt estimate is probably bogus"); drops the
    /// connection at the 13th timeout (`TCP_MAXRXTSHIFT` 12).
    Xnu,
}

/// `TCP_RTO_MIN` (HZ/5).
pub(crate) const LINUX_RTO_MIN: Duration = Duration::from_millis(200);
/// `TCP_RTO_MAX`.
pub(crate) const LINUX_RTO_MAX: Duration = Duration::from_secs(120);
/// `TCP_TIMEOUT_INIT` (RFC 6298 §2.1), both stacks.
pub(crate) const INITIAL_RTO: Duration = Duration::from_secs(1);
/// `TCP_TIMEOUT_FALLBACK` (RFC 6298 §5.7).
pub(crate) const LINUX_RTO_FALLBACK: Duration = Duration::from_secs(3);
/// `tcp_retries2`.
const LINUX_RETRIES2: u32 = 15;
/// `TCPTV_REXMTSLOP`.
const XNU_SLOP: Duration = Duration::from_millis(200);
/// `tcp_TCPTV_MIN` (xnu's `t_rttmin` on non-local paths).
const XNU_RTT_MIN: Duration = Duration::from_millis(100);
/// `TCPTV_REXMTMAX`.
const XNU_RTO_MAX: Duration = Duration::from_secs(64);
/// `TCP_MAXRXTSHIFT`.
const XNU_MAX_SHIFT: u32 = 12;

impl RtoPolicy {
    /// The RTO this stack's formula gives an RFC 6298 estimate (a first
    /// sample: 3 × RTT on Linux, at least its 200 ms floor above srtt; xnu's
    /// with its slop), or the initial 1 s without a sample. The peers use it
    /// for their own estimates; connections use [`RtoState`].
    pub fn base_rto(self, est: &RttEstimator) -> Duration {
        let Some(srtt) = est.srtt() else {
            return INITIAL_RTO;
        };
        let var4 = est.rttvar() * 4;
        match self {
            RtoPolicy::Linux => (srtt + var4.max(LINUX_RTO_MIN)).min(LINUX_RTO_MAX),
            RtoPolicy::Xnu => (XNU_SLOP + (srtt + var4).max(XNU_RTT_MIN)).min(XNU_RTO_MAX),
        }
    }

    /// The cap.
    pub fn max_rto(self) -> Duration {
        match self {
            RtoPolicy::Linux => LINUX_RTO_MAX,
            RtoPolicy::Xnu => XNU_RTO_MAX,
        }
    }

    /// Linux's `tcp_model_timeout(sk, 15, TCP_RTO_MIN)`: how long after the
    /// first retransmission the connection times out.
    pub fn linux_give_up_after() -> Duration {
        let thresh = (LINUX_RTO_MAX.as_millis() / LINUX_RTO_MIN.as_millis()).ilog2();
        let base = LINUX_RTO_MIN;
        if LINUX_RETRIES2 <= thresh {
            base * ((2u32 << LINUX_RETRIES2) - 1)
        } else {
            base * ((2u32 << thresh) - 1) + LINUX_RTO_MAX * (LINUX_RETRIES2 - thresh)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Estimator {
    Linux(LinuxRtt),
    Rfc6298(RttEstimator),
}

/// One connection's RTO: the estimator, the current (backed-off) value and
/// the retransmission count that decides when to give up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtoState {
    policy: RtoPolicy,
    est: Estimator,
    /// Consecutive timeouts since the last valid sample.
    backoff: u32,
    /// The current RTO, back-off included (`icsk_rto`, xnu's `t_rxtcur`).
    current: Duration,
    /// The latest sample (xnu's `t_rttcur`).
    last_sample: Duration,
    /// When the first retransmission of the current episode was sent (the
    /// start of Linux's give-up clock, `retrans_stamp`).
    first_retransmit: Option<Instant>,
}

impl RtoState {
    pub(crate) fn new(policy: RtoPolicy) -> Self {
        RtoState {
            policy,
            est: match policy {
                RtoPolicy::Linux => Estimator::Linux(LinuxRtt::new(LINUX_RTO_MIN)),
                RtoPolicy::Xnu => Estimator::Rfc6298(RttEstimator::new()),
            },
            backoff: 0,
            current: INITIAL_RTO,
            last_sample: Duration::ZERO,
            first_retransmit: None,
        }
    }

    /// A valid RTT sample (`tcp_ack_update_rtt` / `tcp_xmit_timer`): the
    /// estimator moves, the RTO is recomputed and the back-off reset.
    pub(crate) fn sample(&mut self, rtt: Duration, snd_una: u64, snd_nxt: u64) {
        self.last_sample = rtt;
        match &mut self.est {
            Estimator::Linux(e) => e.sample(rtt, snd_una, snd_nxt),
            Estimator::Rfc6298(e) => e.sample(rtt),
        }
        self.backoff = 0;
        self.current = self.unbacked();
        if self.policy == RtoPolicy::Xnu {
            // TCPT_RANGESET's floor after a sample: the sample + 2 ms.
            self.current = self
                .current
                .max(XNU_RTT_MIN.max(rtt + Duration::from_millis(2)));
        }
    }

    /// Linux's `tcp_init_metrics` when the handshake left no sample.
    pub(crate) fn fall_back(&mut self) {
        if let Estimator::Linux(e) = &mut self.est {
            if !e.has_sample() {
                e.fall_back(LINUX_RTO_FALLBACK);
                self.current = LINUX_RTO_FALLBACK;
            }
        }
    }

    /// Linux's `tcp_init_metrics` with a cached RTT above the handshake's
    /// srtt: the first RTO comes from the cache; the estimator is left
    /// alone, so the first data sample recomputes it.
    pub(crate) fn seed_linux_rto(&mut self, crtt: Duration) {
        if let Estimator::Linux(_) = self.est {
            self.current =
                super::metrics::linux_rto_from_cache(crtt, LINUX_RTO_MIN).min(LINUX_RTO_MAX);
        }
    }

    /// xnu's `tcp_getrt_rtt`: srtt and rttvar from the route entry (the
    /// variation ± one srtt when none is cached), the RTO from them.
    pub(crate) fn seed_xnu(&mut self, srtt: Duration, rttvar: Option<Duration>) {
        if let Estimator::Rfc6298(e) = &mut self.est {
            if e.srtt().is_none() {
                *e = RttEstimator::seeded(srtt, rttvar.unwrap_or(srtt));
                self.current = self.unbacked().clamp(XNU_RTT_MIN, XNU_RTO_MAX);
            }
        }
    }

    /// The RTT variation (xnu's, for its route cache).
    pub(crate) fn rttvar(&self) -> Duration {
        match &self.est {
            Estimator::Linux(e) => e.rttvar(),
            Estimator::Rfc6298(e) => e.rttvar(),
        }
    }

    /// The RTO before back-off from the estimator (1 s without a sample).
    fn unbacked(&self) -> Duration {
        match &self.est {
            Estimator::Linux(e) if e.has_sample() => e.rto().min(LINUX_RTO_MAX),
            Estimator::Linux(e) if !e.rttvar().is_zero() => e.rttvar(),
            Estimator::Linux(_) => INITIAL_RTO,
            Estimator::Rfc6298(_) => XNU_SLOP + self.xnu_rexmtval(),
        }
        .min(self.policy.max_rto())
    }

    /// xnu's `TCP_REXMTVAL`: max(100 ms, srtt + 4·rttvar), without slop;
    /// before a sample (or after srtt was forgotten) from the variance
    /// alone, initially 1 s − slop so the first RTO is 1 s.
    pub(crate) fn xnu_rexmtval(&self) -> Duration {
        match &self.est {
            Estimator::Rfc6298(e) => match e.srtt() {
                Some(s) => (s + e.rttvar() * 4).max(XNU_RTT_MIN),
                None if e.rttvar().is_zero() => INITIAL_RTO - XNU_SLOP,
                None => (e.rttvar() * 4).max(XNU_RTT_MIN),
            },
            Estimator::Linux(_) => self.unbacked(),
        }
    }

    /// The current RTO, back-off included.
    pub(crate) fn rto(&self) -> Duration {
        self.current
    }

    /// The smoothed RTT, if any.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        match &self.est {
            Estimator::Linux(e) => e.srtt(),
            Estimator::Rfc6298(e) => e.srtt(),
        }
    }

    /// Consecutive timeouts since the last sample.
    pub(crate) fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The retransmission timer fired at `now` and a retransmission goes
    /// out: `false` when the stack gives up instead.
    pub(crate) fn on_timeout(&mut self, now: Instant) -> bool {
        match self.policy {
            RtoPolicy::Linux => {
                let first = *self.first_retransmit.get_or_insert(now);
                if self.backoff > 0 && now - first >= RtoPolicy::linux_give_up_after() {
                    return false;
                }
                self.backoff += 1;
                self.current = (self.current * 2).min(LINUX_RTO_MAX);
            }
            RtoPolicy::Xnu => {
                self.first_retransmit.get_or_insert(now);
                self.backoff += 1;
                if self.backoff > XNU_MAX_SHIFT {
                    return false;
                }
                let mult = 1u32 << self.backoff.min(6);
                self.current =
                    (XNU_SLOP + self.xnu_rexmtval() * mult).clamp(XNU_RTT_MIN, XNU_RTO_MAX);
                // After setting this timeout, past four back-offs.
                if self.backoff > XNU_MAX_SHIFT / 4 {
                    if let Estimator::Rfc6298(e) = &mut self.est {
                        e.clobber();
                    }
                }
            }
        }
        true
    }

    /// The connection's data was all acknowledged: the next loss starts a
    /// new give-up clock.
    pub(crate) fn on_recovered(&mut self) {
        self.first_retransmit = None;
    }

    /// A stand-alone RTO for a probe that replaced it (xnu-4570's "reset
    /// the next RTO to be after PTO"): `TCPT_RANGESET` of `TCP_REXMTVAL`
    /// without slop, at least the last sample + 2 ms.
    pub(crate) fn xnu_unslopped(&self) -> Duration {
        self.xnu_rexmtval()
            .max(XNU_RTT_MIN.max(self.last_sample + Duration::from_millis(2)))
            .min(XNU_RTO_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn first_sample_gives_three_rtt_on_linux_and_the_slop_on_xnu() {
        let mut e = RttEstimator::new();
        e.sample(ms(200));
        assert_eq!(RtoPolicy::Linux.base_rto(&e), ms(600));
        assert_eq!(RtoPolicy::Xnu.base_rto(&e), ms(800));
        let mut l = RtoState::new(RtoPolicy::Linux);
        l.sample(ms(200), 1, 1);
        assert_eq!(l.rto(), ms(600));
        let mut x = RtoState::new(RtoPolicy::Xnu);
        x.sample(ms(200), 1, 1);
        assert_eq!(x.rto(), ms(800));
    }

    /// xnu's `tcp_getrt_rtt`: a cached srtt of 1 s (variation ± 1 srtt)
    /// and a 100 ms handshake sample: srtt 887.5 ms, rttvar 975 ms, RTO
    /// 200 ms slop + 887.5 + 4 × 975 ms = 4.9875 s.
    #[test]
    fn xnu_starts_from_the_route_cache() {
        let mut x = RtoState::new(RtoPolicy::Xnu);
        x.seed_xnu(ms(1000), None);
        assert_eq!(x.rto(), ms(200 + 1000 + 4000));
        x.sample(ms(100), 1, 1);
        assert_eq!(x.srtt(), Some(Duration::from_micros(887_500)));
        assert_eq!(x.rttvar(), ms(975));
        assert_eq!(x.rto(), Duration::from_micros(4_987_500));
    }

    #[test]
    fn linux_doubles_to_its_cap_and_gives_up_by_time() {
        assert_eq!(RtoPolicy::linux_give_up_after(), ms(924_600));
        let mut r = RtoState::new(RtoPolicy::Linux);
        r.sample(ms(100), 1, 1);
        assert_eq!(r.rto(), ms(300));
        let mut t = Instant::ZERO;
        let mut rtos = Vec::new();
        while r.on_timeout(t) {
            rtos.push(r.rto());
            t += r.rto();
        }
        assert_eq!(&rtos[..3], &[ms(600), ms(1200), ms(2400)]);
        assert!(rtos.iter().all(|d| *d <= LINUX_RTO_MAX));
        assert_eq!(*rtos.last().unwrap(), LINUX_RTO_MAX);
        // The give-up clock ran from the first retransmission.
        assert!(t >= Instant::ZERO + RtoPolicy::linux_give_up_after());
        // A new sample resets the back-off.
        r.sample(ms(100), 2, 2);
        assert_eq!(r.backoff(), 0);
    }

    #[test]
    fn linux_floor_applies_to_small_rtt_and_before_a_sample_it_is_one_second() {
        let mut r = RtoState::new(RtoPolicy::Linux);
        assert_eq!(r.rto(), INITIAL_RTO);
        for k in 0..50u64 {
            r.sample(ms(10), k + 1, k + 1);
        }
        assert!(r.rto() >= ms(210) && r.rto() < ms(220), "{:?}", r.rto());
    }

    #[test]
    fn linux_fallback_is_three_seconds_until_a_sample() {
        let mut r = RtoState::new(RtoPolicy::Linux);
        r.fall_back();
        assert_eq!(r.rto(), LINUX_RTO_FALLBACK);
        assert!(r.on_timeout(Instant::ZERO));
        assert_eq!(r.rto(), ms(6000));
        r.sample(ms(200), 1, 1);
        assert_eq!(r.rto(), ms(600));
    }

    #[test]
    fn xnu_backs_off_with_slop_outside_the_multiplier_and_forgets_srtt() {
        let mut r = RtoState::new(RtoPolicy::Xnu);
        r.sample(ms(100), 1, 1); // srtt 100, rttvar 50: REXMTVAL 300 ms
        assert_eq!(r.rto(), ms(500));
        let mut rtos = Vec::new();
        let mut n = 0;
        while r.on_timeout(Instant::ZERO) {
            rtos.push(r.rto().as_millis());
            n += 1;
        }
        assert_eq!(n, 12);
        // 200 ms + 300 ms × 2, 4, 8, 16; then srtt is gone and REXMTVAL is
        // 4 × (50 + 100/16) ms = 225 ms: 200 + 225 × 32.
        assert_eq!(&rtos[..5], &[800, 1400, 2600, 5000, 7400]);
        assert_eq!(*rtos.last().unwrap(), 14_600);
        assert!(rtos.iter().all(|&d| d <= 64_000));
    }

    #[test]
    fn caps() {
        assert_eq!(RtoPolicy::Linux.max_rto(), Duration::from_secs(120));
        assert_eq!(RtoPolicy::Xnu.max_rto(), Duration::from_secs(64));
    }
}
