//! Helpers the unit tests share.

use crate::time::Duration;

/// `n` milliseconds.
pub(crate) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `n` seconds.
pub(crate) const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
