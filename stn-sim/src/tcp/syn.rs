//! SYN and SYN-ACK retransmission schedules (peers.md §2, §3.1, §8).

use stn_proto::Duration;

/// When a client's TCP stack sends SYNs and when it gives up.
///
/// ```
/// use stn_sim::tcp::SynSchedule;
/// use stn_proto::Duration;
/// let s = SynSchedule::LinuxClassic;
/// assert_eq!(s.syn_offsets_secs(), &[0, 1, 3, 7, 15, 31, 63]);
/// assert_eq!(s.give_up(), Duration::from_secs(127));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SynSchedule {
    /// Linux before 6.5 (and Android GKI up to android14-6.1):
    /// `tcp_syn_retries` 6, RTO 1 s doubling: SYNs at 0, 1, 3, 7, 15, 31, 63 s;
    /// gives up at 127 s.
    LinuxClassic,
    /// Linux 6.5 and later (`tcp_syn_linear_timeouts` 4): SYNs at
    /// 0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s; gives up at 131 s.
    Linux65,
    /// iOS/macOS (xnu): backoff `{1,1,1,1,1,2,4,8,16,32,64,..}` × 1 s, so SYNs at
    /// 0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s, cut by the 75 s
    /// connection-establishment limit (`TCPTV_KEEP_INIT`).
    Xnu,
    /// Any other schedule: SYN send offsets (first should be 0) and give-up
    /// offset, in milliseconds.
    Custom {
        /// SYN send offsets from connect start, ascending.
        syn_offsets_ms: Vec<u64>,
        /// When the attempt fails with `TimedOut`.
        give_up_ms: u64,
    },
}

const LINUX_CLASSIC: &[u64] = &[0, 1, 3, 7, 15, 31, 63];
const LINUX_65: &[u64] = &[0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67];
const XNU: &[u64] = &[0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67];

impl SynSchedule {
    /// SYN send offsets in whole seconds for the built-in schedules (empty for
    /// `Custom`).
    pub fn syn_offsets_secs(&self) -> &'static [u64] {
        match self {
            SynSchedule::LinuxClassic => LINUX_CLASSIC,
            SynSchedule::Linux65 => LINUX_65,
            SynSchedule::Xnu => XNU,
            SynSchedule::Custom { .. } => &[],
        }
    }

    /// The offset from connect start of SYN number `i` (0 = the first), or
    /// `None` when the schedule sends no such SYN.
    pub fn syn_offset(&self, i: usize) -> Option<Duration> {
        match self {
            SynSchedule::Custom { syn_offsets_ms, .. } => {
                syn_offsets_ms.get(i).map(|ms| Duration::from_millis(*ms))
            }
            _ => self
                .syn_offsets_secs()
                .get(i)
                .map(|s| Duration::from_secs(*s)),
        }
    }

    /// All SYN send offsets.
    pub fn syn_offsets(&self) -> Vec<Duration> {
        (0..).map_while(|i| self.syn_offset(i)).collect()
    }

    /// When the stack reports `ConnectFailed(TimedOut)`.
    pub fn give_up(&self) -> Duration {
        match self {
            SynSchedule::LinuxClassic => Duration::from_secs(127),
            SynSchedule::Linux65 => Duration::from_secs(131),
            SynSchedule::Xnu => Duration::from_secs(75),
            SynSchedule::Custom { give_up_ms, .. } => Duration::from_millis(*give_up_ms),
        }
    }
}

/// A Linux server's SYN-ACK timer (`reqsk_timer_handler`): 1 s
/// (`TCP_TIMEOUT_INIT`), doubled at each expiry.
pub(crate) const SYNACK_TIMEOUT_INIT: Duration = Duration::from_secs(1);

/// Expiries after which a Linux server drops the half-open connection
/// (`tcp_synack_retries`).
pub(crate) const SYNACK_RETRIES: u32 = 5;

/// A Linux server's SYN-ACK retransmissions when no duplicate SYN arrives,
/// as offsets from the first SYN-ACK (`tcp_synack_retries` 5; intervals
/// 1, 2, 4, 8, 16 s). A duplicate SYN is answered at once and restarts the
/// current interval (`tcp_check_req`).
pub const SYNACK_RETRANSMIT_OFFSETS: [Duration; 5] = [
    Duration::from_secs(1),
    Duration::from_secs(3),
    Duration::from_secs(7),
    Duration::from_secs(15),
    Duration::from_secs(31),
];

/// When a Linux server drops a half-open connection that saw no duplicate
/// SYN (after the last SYN-ACK retransmission times out: 31 + 32 s).
pub const SYNACK_GIVE_UP: Duration = Duration::from_secs(63);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xnu_schedule_fits_its_limit() {
        let s = SynSchedule::Xnu;
        assert!(s.syn_offsets().iter().all(|o| *o < s.give_up()));
        assert_eq!(s.syn_offsets().len(), 11);
    }

    #[test]
    fn custom_schedule() {
        let s = SynSchedule::Custom {
            syn_offsets_ms: vec![0, 500],
            give_up_ms: 1500,
        };
        assert_eq!(
            s.syn_offsets(),
            vec![Duration::ZERO, Duration::from_millis(500)]
        );
        assert_eq!(s.give_up(), Duration::from_millis(1500));
    }
}
