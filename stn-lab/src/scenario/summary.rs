//! One run of one client, summarised the same way for the kernel and the
//! simulator, and the median and range over several runs.

use std::time::Duration;

use stn_sim::workload::nearest_rank;

/// One run of one client (a sequential series or a single call), in the
/// simulator's terms (`stn_sim::workload::WorkloadStats`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunSummary {
    /// Calls started (the benchmark's "attempts": a failed call counts one).
    pub attempts: u64,
    /// Calls that got the right response.
    pub successes: u64,
    /// Whether the workload's target was met (every success it asked for).
    pub ok: bool,
    /// From the first call's start to the last call's end, seconds.
    pub total_s: f64,
    /// Median successful call, seconds (nearest rank).
    pub p50_s: Option<f64>,
    /// 95th percentile successful call, seconds (nearest rank).
    pub p95_s: Option<f64>,
    /// TCP connection attempts (real: distinct SYNs the emulator carried;
    /// simulated: the model's count); `None` where not counted (the oracle).
    pub connects: Option<u64>,
}

impl RunSummary {
    /// A summary from the successful calls' durations (any order).
    pub(super) fn new(
        attempts: u64,
        mut ok_durations: Vec<Duration>,
        total: Duration,
        target: u64,
        connects: Option<u64>,
    ) -> Self {
        ok_durations.sort_unstable();
        let pct = |p| nearest_rank(&ok_durations, p).map(|d| d.as_secs_f64());
        let successes = ok_durations.len() as u64;
        RunSummary {
            attempts,
            successes,
            ok: successes >= target,
            total_s: total.as_secs_f64(),
            p50_s: pct(50),
            p95_s: pct(95),
            connects,
        }
    }
}

/// Median and range of one figure over runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_and_range() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of([4.0, 1.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of([]), None);
        assert_eq!(Spread::of([f64::NAN]), None);
    }

    #[test]
    fn summary_uses_nearest_rank_and_the_target() {
        let ms = Duration::from_millis;
        let s = RunSummary::new(3, vec![ms(300), ms(100)], ms(900), 2, Some(4));
        assert_eq!((s.attempts, s.successes, s.ok), (3, 2, true));
        assert_eq!(s.p50_s, Some(0.1));
        assert_eq!(s.p95_s, Some(0.3));
        assert!((s.total_s - 0.9).abs() < 1e-12);
        let none = RunSummary::new(1, Vec::new(), ms(10), 1, None);
        assert!(!none.ok);
        assert_eq!(none.p50_s, None);
    }
}
