//! Time as whole nanoseconds, the unit the simulator's arithmetic uses.

use stn_proto::Duration;

/// `d` in whole nanoseconds, saturating at `u64::MAX` (≈ 584 years).
pub(crate) fn duration_nanos_saturating(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
