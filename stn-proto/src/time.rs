//! Time as a value.
//!
//! stn-proto never reads a clock. Every call that depends on time takes a
//! `now: Instant` argument; adapters convert from `std::time::Instant` through a
//! fixed origin ([`Instant::from_nanos`]) and the simulator passes virtual time.
//! Durations are plain [`core::time::Duration`]s.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in time: nanoseconds since an arbitrary origin chosen by the caller.
///
/// Arithmetic saturates instead of overflowing or panicking: adding a huge
/// duration gives [`Instant::MAX`] (a deadline that never fires), subtracting a
/// later instant gives [`Duration::ZERO`].
///
/// ```
/// use stn_proto::{Duration, Instant};
/// let t0 = Instant::from_millis(1_000);
/// let t1 = t0 + Duration::from_millis(250);
/// assert_eq!(t1 - t0, Duration::from_millis(250));
/// assert_eq!(t0 - t1, Duration::ZERO); // saturating
/// assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
/// assert_eq!(format!("{t1:?}"), "1.25s");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);
    /// The largest representable instant; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the origin (saturating).
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the origin (saturating).
    pub const fn from_secs(secs: u64) -> Self {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time since the origin as a duration.
    pub const fn since_origin(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Seconds since the origin as a float (for reports and charts only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// `self - earlier`, or zero when `earlier` is later than `self`.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        let nanos = u64::try_from(d.as_nanos()).ok()?;
        self.0.checked_add(nanos).map(Instant)
    }

    /// `self - d`, saturating at the origin.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_sub(nanos))
    }
}

/// Converts a duration to whole nanoseconds, saturating at `u64::MAX` (≈ 584 years).
pub(crate) fn duration_nanos_saturating(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos_saturating(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        self.saturating_sub(d)
    }
}

impl fmt::Debug for Instant {
    /// Prints the elapsed time since the origin, e.g. `12.5s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Instant::MAX {
            return f.write_str("never");
        }
        write!(f, "{:?}", Duration::from_nanos(self.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A clamp that keeps `now` monotonic: machines remember the largest `now` they
/// have been given and use that, so a caller that passes a slightly older value
/// (two threads, a coarse clock) cannot move time backwards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MonotonicClock {
    latest: Instant,
}

impl MonotonicClock {
    /// A clock that has seen nothing yet (origin).
    pub(crate) const fn new() -> Self {
        MonotonicClock {
            latest: Instant::ZERO,
        }
    }

    /// Records `now` and returns the largest instant seen so far.
    pub(crate) fn observe(&mut self, now: Instant) -> Instant {
        if now > self.latest {
            self.latest = now;
        }
        self.latest
    }

    /// The largest instant seen so far.
    pub(crate) const fn latest(&self) -> Instant {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    fn dur(n: u64) -> Duration {
        Duration::from_nanos(n)
    }

    quickcheck! {
        fn add_then_sub_roundtrips_without_saturation(t: u64, d: u64) -> bool {
            let t = Instant::from_nanos(t);
            match t.0.checked_add(d) {
                Some(_) => (t + dur(d)) - t == dur(d),
                None => t + dur(d) == Instant::MAX,
            }
        }

        fn add_is_monotone(t: u64, a: u64, b: u64) -> bool {
            let t = Instant::from_nanos(t);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            t + dur(lo) <= t + dur(hi)
        }

        fn never_before_start(t: u64, d: u64) -> bool {
            let t = Instant::from_nanos(t);
            t + dur(d) >= t && t - dur(d) <= t
        }

        fn ordering_consistent_with_duration(a: u64, b: u64) -> bool {
            let (a, b) = (Instant::from_nanos(a), Instant::from_nanos(b));
            // a <= b exactly when b - a is the distance and a - b is zero.
            if a <= b {
                a - b == Duration::ZERO && a + (b - a) == b
            } else {
                b - a == Duration::ZERO && b + (a - b) == a
            }
        }

        fn sub_duration_saturates_at_origin(t: u64, d: u64) -> bool {
            let t = Instant::from_nanos(t);
            (t - dur(d)).0 == t.0.saturating_sub(d)
        }

        fn checked_add_agrees_with_add(t: u64, d: u64) -> bool {
            let t = Instant::from_nanos(t);
            match t.checked_add(dur(d)) {
                Some(x) => x == t + dur(d),
                None => t + dur(d) == Instant::MAX,
            }
        }

        fn monotonic_clock_never_goes_back(xs: Vec<u64>) -> bool {
            let mut c = MonotonicClock::new();
            let mut last = Instant::ZERO;
            xs.into_iter().all(|x| {
                let v = c.observe(Instant::from_nanos(x));
                let ok = v >= last && v >= Instant::from_nanos(x);
                last = v;
                ok
            })
        }
    }

    #[test]
    fn huge_durations_saturate() {
        assert_eq!(Instant::from_secs(1) + Duration::MAX, Instant::MAX);
        assert_eq!(Instant::from_secs(u64::MAX), Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::MAX, Instant::ZERO);
        assert_eq!(Instant::from_secs(5).checked_add(Duration::MAX), None);
    }

    #[test]
    fn debug_prints_elapsed() {
        assert_eq!(format!("{:?}", Instant::from_millis(1500)), "1.5s");
        assert_eq!(format!("{:?}", Instant::MAX), "never");
    }
}
