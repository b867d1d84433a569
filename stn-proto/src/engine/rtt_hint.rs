//! The RTT hint connection races start from: TCP connect times only (the
//! timeout machine's RTT also learns server latency), backed off after
//! failed races.

use crate::time::Duration;
use crate::timeout::{RttConfig, RttEstimator};

/// The OS's initial SYN retransmission timeout (Linux, xnu: 1 s): connect
/// times at or above it are not RTT samples (Karn's rule).
const KARN_SYN_RTO: Duration = Duration::from_secs(1);

/// Connect RTTs and the races failed since the last connect.
#[derive(Clone, Debug)]
pub(super) struct RttHint {
    connect_rtt: RttEstimator,
    /// Races failed in a row (reset by a successful connect); from the
    /// second one on, the hint is scaled up (see [`RttHint::hint`]).
    failed_races: u32,
}

impl Default for RttHint {
    fn default() -> Self {
        RttHint {
            connect_rtt: RttEstimator::new(RttConfig::STN),
            failed_races: 0,
        }
    }
}

impl RttHint {
    /// A connect succeeded after `t`. Returns `t` if it is an RTT sample.
    ///
    /// Karn's rule: a handshake slower than the OS's initial SYN
    /// retransmission timeout ([`KARN_SYN_RTO`]) most likely had its SYN
    /// retransmitted (or won as one of stn's passive probes), so `t`
    /// measures the loss, not the round trip, and is not sampled — it would
    /// inflate the racing stagger and the adaptive timeouts. (On a path
    /// whose real RTT exceeds 1 s the timeouts then learn from first-packet
    /// times only.)
    pub(super) fn connected(&mut self, t: Duration) -> Option<Duration> {
        self.failed_races = 0;
        if t < KARN_SYN_RTO {
            self.connect_rtt.sample(t);
            Some(t)
        } else {
            None
        }
    }

    /// A race failed to connect.
    pub(super) fn race_failed(&mut self) {
        self.failed_races = self.failed_races.saturating_add(1);
    }

    /// A new network: nothing measured so far applies.
    pub(super) fn reset(&mut self) {
        self.connect_rtt.reset();
        self.failed_races = 0;
    }

    /// The hint for a race: the connect RTT; after two or more failed races
    /// in a row, scaled up ×2, ×4, ×8, so attempts are not abandoned forever
    /// on a path that became slower than the estimate. Not after the first
    /// failure: an outage also fails a race, and a larger hint slows the
    /// refresh of attempts that gets the first one through when it ends.
    pub(super) fn hint(&self) -> Option<Duration> {
        let rtt = self.connect_rtt.srtt();
        if self.failed_races < 2 {
            return rtt;
        }
        let k = 1u32 << (self.failed_races - 1).min(3);
        Some(rtt.unwrap_or(Duration::from_millis(500)).saturating_mul(k))
    }
}
