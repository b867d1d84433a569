//! When a kernel timer armed for a delay actually fires. Linux's TCP timers
//! (retransmission, loss probe, delayed ACK, SYN and SYN-ACK) are jiffy
//! timers on the timer wheel (`kernel/time/timer.c`, the non-cascading
//! wheel since 4.8): the delay is rounded up to whole jiffies
//! (`usecs_to_jiffies`), and the expiry up to the granularity of the wheel
//! level the delay falls in (`calc_wheel_index`, `calc_index`: "round up
//! with level granularity" so a timer never fires early). With HZ = 250
//! (the kernel default, `kernel/Kconfig.hz`, which Android's GKI
//! configuration keeps) a jiffy is 4 ms and the levels are 4 ms wide below
//! 252 ms, 32 ms to 2 s, 256 ms to 16 s, 2 s to 129 s: a 1 s SYN timer fires
//! 4–32 ms late, a 2.4 s loss probe up to 256 ms late.

use stn_proto::{Duration, Instant};

/// How a stack's timers round their expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerPolicy {
    /// Linux's timer wheel at HZ = 250.
    LinuxHz250,
    /// At the exact instant (xnu, whose TCP timer lists run in 10, 100 and
    /// 500 ms modes whose slack is not modelled).
    Exact,
}

/// Nanoseconds per jiffy at HZ = 250.
const JIFFY_NS: u64 = 4_000_000;
/// A jiffy at HZ = 250.
pub(crate) const JIFFY: Duration = Duration::from_nanos(JIFFY_NS);
/// `LVL_CLK_SHIFT`: each level is 8 times coarser.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_SIZE - 1`: buckets per level, less one.
const LVL_LAST: u64 = 63;
/// `LVL_DEPTH` at HZ > 100.
const LVL_DEPTH: u32 = 9;

impl TimerPolicy {
    /// When a timer armed at `now` for `delay` fires.
    pub fn expiry(self, now: Instant, delay: Duration) -> Instant {
        match self {
            TimerPolicy::Exact => now + delay,
            TimerPolicy::LinuxHz250 => {
                let clk = now.as_nanos() / JIFFY_NS;
                let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
                let delta = delay_ns.div_ceil(JIFFY_NS).max(1);
                let expires = clk.saturating_add(delta);
                // The level whose range holds the delay: level n starts at
                // LVL_START(n) = 63 << 3(n - 1) jiffies.
                let lvl = (1..LVL_DEPTH)
                    .find(|&n| delta < LVL_LAST << (LVL_CLK_SHIFT * (n - 1)))
                    .map_or(LVL_DEPTH - 1, |n| n - 1);
                let shift = LVL_CLK_SHIFT * lvl;
                let bucket = ((expires >> shift) + 1) << shift;
                Instant::from_nanos(bucket.saturating_mul(JIFFY_NS))
            }
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
    fn linux_rounds_up_by_the_level_granularity() {
        let w = TimerPolicy::LinuxHz250;
        // 40 ms (10 jiffies, level 0): one jiffy more.
        assert_eq!(w.expiry(Instant::ZERO, ms(40)), Instant::from_millis(44));
        // 260 ms (65 jiffies, level 1, 8-jiffy buckets): up to 288 ms.
        assert_eq!(w.expiry(Instant::ZERO, ms(260)), Instant::from_millis(288));
        // 1 s from 506 ms: jiffy 126, expires 376, bucket 384 = 1.536 s.
        assert_eq!(
            w.expiry(Instant::from_millis(506), ms(1000)),
            Instant::from_millis(1536)
        );
        // 2.4 s (600 jiffies, level 2, 64-jiffy buckets): 2.56 s.
        assert_eq!(
            w.expiry(Instant::ZERO, ms(2400)),
            Instant::from_millis(2560)
        );
        // Never early.
        for d in [1u64, 3, 99, 251, 256, 999, 2047, 16_000, 120_000] {
            for t in [0u64, 1, 2, 3, 777] {
                let now = Instant::from_millis(t);
                assert!(w.expiry(now, ms(d)) >= now + ms(d), "{t} {d}");
            }
        }
        assert_eq!(
            TimerPolicy::Exact.expiry(Instant::ZERO, ms(260)),
            Instant::from_millis(260)
        );
    }
}
