//! Converting between `std::time::Instant` and [`stn_proto::Instant`].

use std::time::Instant as StdInstant;

use stn_proto::Instant;

/// A fixed origin: the engine's time is nanoseconds since it.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: StdInstant,
}

impl Clock {
    /// A clock whose zero is `origin`.
    pub fn new(origin: StdInstant) -> Self {
        Clock { origin }
    }

    /// The engine's time for `t` (times before the origin map to zero).
    pub fn to_proto(&self, t: StdInstant) -> Instant {
        let nanos = t.saturating_duration_since(self.origin).as_nanos();
        Instant::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The wall-clock instant of an engine time, or `None` for
    /// [`Instant::MAX`] and times too far out to represent (never).
    pub fn to_std(&self, t: Instant) -> Option<StdInstant> {
        if t == Instant::MAX {
            return None;
        }
        self.origin
            .checked_add(std::time::Duration::from_nanos(t.as_nanos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let origin = StdInstant::now();
        let clock = Clock::new(origin);
        let later = origin + std::time::Duration::from_millis(1500);
        let p = clock.to_proto(later);
        assert_eq!(p, Instant::from_millis(1500));
        assert_eq!(clock.to_std(p), Some(later));
        assert_eq!(clock.to_std(Instant::MAX), None);
        assert_eq!(clock.to_proto(origin), Instant::from_nanos(0));
    }
}
