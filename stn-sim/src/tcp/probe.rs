//! Tail loss probes (RFC 8985 §7): when a sender hears nothing for about
//! two round trips it sends one segment — new data if it has some, else
//! its last segment again — so that a lost tail is repaired by the ACK the
//! probe provokes instead of by the retransmission timeout.

use stn_proto::Duration;

/// How a stack schedules its loss probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbePolicy {
    /// Linux since 4.14 (`net/ipv4/tcp_output.c`, `tcp_schedule_loss_probe`,
    /// commit bb4d991a28cc): PTO = 2·srtt + `TCP_RTO_MIN` (200 ms, room for
    /// the peer's delayed ACK) with one segment in flight, 2·srtt + 2 ms
    /// (`TCP_TIMEOUT_MIN_US`) with more, 1 s without an RTT sample; never
    /// after the RTO would fire. Re-armed whenever new data leaves and on
    /// every ACK of new data, only in the Open (or CWR) state, with SACK; at
    /// most one probe per flight (`tlp_high_seq`, since 5.9).
    Linux,
    /// xnu as in xnu-4570 (2017, `bsd/netinet/tcp_output.c`): armed only
    /// when new data leaves, PTO = max(2·srtt, 1.5·(srtt + 4·rttvar)),
    /// with exactly one full segment outstanding at least 0.75 of that +
    /// 2·`tcp_delack` (100 ms), else at least 10 ms; if the RTO is sooner,
    /// the probe takes its place and the RTO moves to after it. One probe
    /// until an ACK arrives.
    Xnu2017,
}

/// `TCP_TIMEOUT_MIN_US`.
const LINUX_PTO_SLACK: Duration = Duration::from_millis(2);
/// The PTO before any RTT sample (`TCP_TIMEOUT_INIT`).
const LINUX_PTO_NO_SAMPLE: Duration = Duration::from_secs(1);
/// xnu's `tcp_delack`.
const XNU_DELACK: Duration = Duration::from_millis(100);
/// xnu-4570's PTO floor with more than one segment out.
const XNU_PTO_FLOOR: Duration = Duration::from_millis(10);

impl ProbePolicy {
    /// Linux's probe timeout, from now, before the RTO bound:
    /// `packets_out` segments are in flight, `rto_min` is `TCP_RTO_MIN`.
    pub fn linux_pto(srtt: Option<Duration>, packets_out: usize, rto_min: Duration) -> Duration {
        match srtt {
            Some(s) if packets_out == 1 => s * 2 + rto_min,
            Some(s) => s * 2 + LINUX_PTO_SLACK,
            None => LINUX_PTO_NO_SAMPLE,
        }
    }

    /// xnu-4570's probe timeout, from now: `rexmtval` is
    /// `TCP_REXMTVAL` (max(100 ms, srtt + 4·rttvar), without the 200 ms
    /// slop), `one_full_segment` whether exactly one MSS is outstanding.
    pub fn xnu_pto(srtt: Duration, rexmtval: Duration, one_full_segment: bool) -> Duration {
        let pto = (srtt * 2).max(rexmtval * 3 / 2);
        if one_full_segment {
            pto.max(pto * 3 / 4 + XNU_DELACK * 2)
        } else {
            pto.max(XNU_PTO_FLOOR)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn linux_pto_adds_the_minimum_rto_for_a_lone_segment() {
        assert_eq!(ProbePolicy::linux_pto(Some(ms(60)), 1, ms(200)), ms(320));
        assert_eq!(ProbePolicy::linux_pto(Some(ms(600)), 1, ms(200)), ms(1400));
        assert_eq!(ProbePolicy::linux_pto(Some(ms(60)), 3, ms(200)), ms(122));
        assert_eq!(ProbePolicy::linux_pto(None, 1, ms(200)), ms(1000));
    }

    #[test]
    fn xnu_pto_follows_its_rto_estimate() {
        // srtt 100 ms, rttvar 50 ms: REXMTVAL 300 ms, PTO 450 ms.
        assert_eq!(ProbePolicy::xnu_pto(ms(100), ms(300), false), ms(450));
        // One full segment out: at least 0.75·450 + 200 = 537.5 ms.
        assert_eq!(
            ProbePolicy::xnu_pto(ms(100), ms(300), true).as_micros(),
            537_500
        );
        // A settled long path: 2·srtt dominates.
        assert_eq!(ProbePolicy::xnu_pto(ms(600), ms(700), false), ms(1200));
    }
}
