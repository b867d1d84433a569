//! Timeouts: how long a task may take, how long one attempt may wait for its
//! first byte, for the whole exchange, and between two packets — and how
//! these escalate.
//!
//! Three layers, one API:
//!
//! - **Mars's formulas** ([`task_timeout`], [`first_packet_timeout`],
//!   [`read_write_timeout`], [`long_polling_read_write_timeout`],
//!   [`packet_gap_timeout`]): pure functions reproducing
//!   `TaskProfile::ComputeTaskTimeout` and `mars/stn/src/task_profile.cc`
//!   exactly, with the constants of `mars/stn/config.h` held in a
//!   [`TimeoutConfig`].
//! - **Mars's dynamic timeout** ([`DynamicTimeout`]): the
//!   Evaluating / Excellent / Bad machine of `dynamic_timeout.cc`, whose only
//!   effect is the shorter "Excellent" first-packet base.
//! - **stn's adaptive layer** ([`RttEstimator`], [`ThroughputEstimator`],
//!   [`backoff`], [`AdaptiveTimeouts`]): under [`Profile::Stn`] the
//!   first-packet, read-write and packet-gap timeouts follow the measured RTT
//!   and throughput, escalate after consecutive timeouts, and are always
//!   clamped to Mars's value for the same input (never longer) and to a floor
//!   (never shorter, unless Mars's own value is shorter).
//!
//! The engine owns one [`AdaptiveTimeouts`] per network and calls
//! [`AdaptiveTimeouts::attempt_timeouts`] for every attempt under every
//! profile; for [`Profile::Mars2017`] and [`Profile::Mars`] it returns exactly
//! Mars's formulas.
//!
//! Mars's worked example (Wi-Fi, 200-byte request, first task):
//!
//! (The example runs as the unit test `examples::timeout`.)

use crate::net::NetworkKind;
use crate::time::Duration;

mod adaptive;
mod dynamic;
mod estimate;

pub use adaptive::AdaptiveConfig;
pub(crate) use adaptive::AdaptiveTimeouts;
pub(crate) use dynamic::{AttemptOutcome, AttemptSample, DynState, DynamicTimeout};
pub use dynamic::{DynamicTimeoutConfig, SizeClassCosts};
pub use estimate::RttConfig;
pub(crate) use estimate::{backoff, RttEstimator, ThroughputEstimator};

/// Mars's per-network-class constants (`mars/stn/config.h`). Mars has two
/// columns: "W" (every network that is not mobile) and "M" (mobile, "GPRS").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetworkTimeouts {
    /// First-packet base: `kBaseFirstPackageWifiTimeout` 12 s (W) /
    /// `kBaseFirstPackageGPRSTimeout` 15 s (M).
    pub base_first_packet: Duration,
    /// Cap of the base branch: `kMaxFirstPackageWifiTimeout` 22 s (W) /
    /// `kMaxFirstPackageGPRSTimeout` 30 s (M).
    pub max_first_packet: Duration,
    /// First-packet base in the dynamic "Excellent" state:
    /// `kDynTimeFirstPackageWifiTimeout` 7 s (W) /
    /// `kDynTimeFirstPackageGPRSTimeout` 10 s (M).
    pub excellent_first_packet: Duration,
    /// The slowest rate Mars plans for, in bytes per second:
    /// `kWifiMinRate` 12 KiB/s (W) / `kGPRSMinRate` 4 KiB/s (M).
    pub min_rate: u64,
    /// Longest silence between two received packets:
    /// `kWifiPackageInterval` 8 s (W) / `kGPRSPackageInterval` 12 s (M).
    pub packet_interval: Duration,
    /// Extra first-packet time per task already in flight:
    /// `kWifiTaskDelay` 1.5 s (W) / `kGPRSTaskDelay` 3 s (M).
    pub task_delay: Duration,
}

impl NetworkTimeouts {
    /// Mars's "W" column (Wi-Fi, other, none).
    pub const MARS_WIFI: NetworkTimeouts = NetworkTimeouts {
        base_first_packet: Duration::from_millis(12_000),
        max_first_packet: Duration::from_millis(22_000),
        excellent_first_packet: Duration::from_millis(7_000),
        min_rate: 12 * 1024,
        packet_interval: Duration::from_millis(8_000),
        task_delay: Duration::from_millis(1_500),
    };

    /// Mars's "M" column (mobile).
    pub const MARS_MOBILE: NetworkTimeouts = NetworkTimeouts {
        base_first_packet: Duration::from_millis(15_000),
        max_first_packet: Duration::from_millis(30_000),
        excellent_first_packet: Duration::from_millis(10_000),
        min_rate: 4 * 1024,
        packet_interval: Duration::from_millis(12_000),
        task_delay: Duration::from_millis(3_000),
    };
}

/// Every timeout constant, for one profile.
///
/// `for_profile(Mars2017)` and `for_profile(Mars)` hold Mars's constants; they
/// differ only in [`in_flight_cap`](Self::in_flight_cap) (v1.3 and the 2017
/// code had no cap, HEAD caps at 5). `for_profile(Stn)` keeps Mars's constants
/// (they are the ceiling of stn's adaptive values) and adds
/// [`adaptive`](Self::adaptive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutConfig {
    /// Task timeout: the per-attempt allowance before server cost, 15 s
    /// (the literal `15000` in `ComputeTaskTimeout`).
    pub task_read_write: Duration,
    /// Task timeout: margin added to each attempt's allowance, 5 s (literal
    /// `5000`); `(15 s + 5 s) × 2 tries` = `DEF_TASK_TIME_OUT` 40 s.
    pub task_attempt_margin: Duration,
    /// Task timeout of a long-polling task: `long_polling_timeout` + 5 s.
    pub long_polling_margin: Duration,
    /// The "W" column.
    pub wifi: NetworkTimeouts,
    /// The "M" column.
    pub mobile: NetworkTimeouts,
    /// `kMaxRecvLen` = 64 KiB: the response size the read-write timeout
    /// plans for at the minimum rate.
    pub max_recv_len: usize,
    /// Cap on `n`, the number of tasks already in flight, in the first-packet
    /// formula: `None` in v1.3 and 2017 (uncapped), `Some(5)` in HEAD.
    pub in_flight_cap: Option<usize>,
    /// Mars's dynamic-timeout thresholds.
    pub dynamic: DynamicTimeoutConfig,
    /// stn's adaptive layer; `None` means "Mars's formulas exactly".
    pub adaptive: Option<AdaptiveConfig>,
}

impl TimeoutConfig {
    /// The column that applies on `net`: "M" for mobile, "W" otherwise.
    pub fn network(&self, net: NetworkKind) -> &NetworkTimeouts {
        if net.is_mobile() {
            &self.mobile
        } else {
            &self.wifi
        }
    }

    /// `n` as the first-packet formula uses it (capped or not).
    pub fn effective_in_flight(&self, in_flight: usize) -> usize {
        match self.in_flight_cap {
            Some(cap) => in_flight.min(cap),
            None => in_flight,
        }
    }
}

/// What [`task_timeout`] needs to know about a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskTimeoutInput {
    /// Expected server processing time (Mars `server_process_cost`; `None`
    /// for Mars's default −1).
    pub server_cost: Option<Duration>,
    /// Retries allowed (attempts − 1); Mars defaults this to 1.
    pub retry_count: u32,
    /// A caller-imposed total timeout; applies when it is non-zero and
    /// shorter than the computed one.
    pub total_timeout: Option<Duration>,
    /// `Some(long_polling_timeout)` for a long-polling task.
    pub long_polling: Option<Duration>,
}

/// The overall task timeout (`TaskProfile::ComputeTaskTimeout`), measured from
/// when the task was queued:
///
/// ```text
/// rw      = 15 s + server_cost
/// timeout = (rw + 5 s) × (retry_count + 1)
/// long polling:        timeout = long_polling + 5 s
/// 0 < total < timeout: timeout = total
/// ```
/// Arithmetic saturates.
pub(crate) fn task_timeout(cfg: &TimeoutConfig, input: &TaskTimeoutInput) -> Duration {
    let rw = cfg
        .task_read_write
        .saturating_add(input.server_cost.unwrap_or(Duration::ZERO));
    let tries = input.retry_count.saturating_add(1);
    let mut timeout = rw
        .saturating_add(cfg.task_attempt_margin)
        .saturating_mul(tries);
    if let Some(lpt) = input.long_polling {
        timeout = lpt.saturating_add(cfg.long_polling_margin);
    }
    if let Some(total) = input.total_timeout {
        if !total.is_zero() && total < timeout {
            timeout = total;
        }
    }
    timeout
}

/// What the per-attempt timeouts need to know about one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttemptInput {
    /// The network the attempt runs on (selects the W or M column).
    pub net: NetworkKind,
    /// Request length in bytes (Mars: the `Req2Buf` output, before framing).
    pub send_len: usize,
    /// Tasks already in flight in the same manager when this one is sent
    /// (Mars `sent_count`).
    pub in_flight: usize,
    /// Expected server processing time: `None` = Mars's default (−1),
    /// `Some(ZERO)` = an explicit 0 (enables the Excellent branch).
    pub server_cost: Option<Duration>,
    /// The dynamic-timeout state (see [`DynamicTimeout`]). Ignored by
    /// [`AdaptiveTimeouts`], which uses its own.
    pub dyn_state: DynState,
    /// `Some(long_polling_timeout)` for a long-polling task: its first-packet
    /// deadline is that value and the read-write one
    /// [`long_polling_read_write_timeout`].
    pub long_polling: Option<Duration>,
}

impl AttemptInput {
    #[cfg(test)]
    /// A first task (nothing in flight), no server cost, Evaluating, not long
    /// polling.
    pub(crate) fn new(net: NetworkKind, send_len: usize) -> Self {
        AttemptInput {
            net,
            send_len,
            in_flight: 0,
            server_cost: None,
            dyn_state: DynState::Evaluating,
            long_polling: None,
        }
    }
}

/// `1000 × len / rate` milliseconds in integer arithmetic, as Mars computes it
/// (the division truncates). A zero rate is treated as 1 B/s.
pub(crate) fn transfer_time(len: usize, rate: u64) -> Duration {
    let ms = (1000u128 * len as u128) / u128::from(rate.max(1));
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// `d × n`, saturating.
pub(crate) fn mul_count(d: Duration, n: usize) -> Duration {
    d.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Mars's first-packet timeout `F` (`__FirstPkgTimeout`), with
/// `n = `[`TimeoutConfig::effective_in_flight`]:
///
/// ```text
/// Excellent and server_cost == Some(0): F = Excellent + n × TaskDelay
/// server_cost > 0:                     F = spc + 1000·send_len/MinRate ms + n × TaskDelay
/// otherwise:                            F = min(Base + 1000·send_len/MinRate ms, Max) + n × TaskDelay
/// ```
///
/// C++ quirk kept on purpose: the Excellent branch needs an explicit server
/// cost of exactly 0, so with Mars's default (−1, here `None`) it never
/// fires. The `server_cost > 0` branch is not capped. The base branch is
/// bounded by `Max + n × TaskDelay` (29.5 s W / 45 s M when `n` is capped at 5).
///
/// This is always Mars's formula, whatever `cfg.adaptive` says;
/// `input.long_polling` is not considered here.
pub(crate) fn first_packet_timeout(cfg: &TimeoutConfig, input: &AttemptInput) -> Duration {
    let col = cfg.network(input.net);
    let queue_delay = mul_count(col.task_delay, cfg.effective_in_flight(input.in_flight));
    let send_time = transfer_time(input.send_len, col.min_rate);
    let own = match input.server_cost {
        Some(spc) if spc.is_zero() && input.dyn_state == DynState::Excellent => {
            col.excellent_first_packet
        }
        Some(spc) if !spc.is_zero() => spc.saturating_add(send_time),
        _ => col
            .base_first_packet
            .saturating_add(send_time)
            .min(col.max_first_packet),
    };
    own.saturating_add(queue_delay)
}

/// Mars's read-write timeout (`__ReadWriteTimeout`): the first-packet timeout
/// plus the time to receive `kMaxRecvLen` (64 KiB) at the minimum rate —
/// `F + 5333 ms` (W) or `F + 16000 ms` (M).
pub(crate) fn read_write_timeout(
    cfg: &TimeoutConfig,
    net: NetworkKind,
    first_packet: Duration,
) -> Duration {
    first_packet.saturating_add(transfer_time(cfg.max_recv_len, cfg.network(net).min_rate))
}

/// Mars's read-write timeout of a short-link long-polling attempt:
/// `long_polling + 5333 ms` (W) or `+ 16000 ms` (M).
pub(crate) fn long_polling_read_write_timeout(
    cfg: &TimeoutConfig,
    net: NetworkKind,
    long_polling: Duration,
) -> Duration {
    read_write_timeout(cfg, net, long_polling)
}

/// Mars's packet-to-packet timeout: 8 s (W, `kWifiPackageInterval`) or 12 s
/// (M, `kGPRSPackageInterval`).
pub(crate) fn packet_gap_timeout(cfg: &TimeoutConfig, net: NetworkKind) -> Duration {
    cfg.network(net).packet_interval
}

#[cfg(test)]
mod tests;
