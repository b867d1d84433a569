//! Endpoint history, banning and candidate ordering (Mars's `SimpleIPPortSort`).
//!
//! [`EndpointHistory`] remembers, per `ip:port`, the last eight connection
//! outcomes as a shift register (bit 0 = newest, 1 = failure) plus the times of
//! the last failure and success. From that it decides whether an endpoint is
//! *banned* (Mars: at least 3 failures among the last 8 and the last failure
//! less than 6 minutes ago; Mars HEAD extends the ban by 6 minutes per trailing
//! consecutive failure beyond 3, up to 30 minutes) and orders a candidate list
//! the way Mars's `__SortbyBanned` does: shuffle, endpoints with history sorted
//! by their record, new endpoints mixed in at random, IPv6 and IPv4 interleaved.
//!
//! Departures from Mars that hold in every profile:
//! - [`EndpointHistory::order`] never returns an empty list for a non-empty
//!   input. Mars could filter every candidate away (Tencent/mars#868/#865:
//!   "backup ips size:0"); when every candidate is banned stn keeps the
//!   one(s) whose ban ends soonest.
//! - The machine is sans-IO: time, wall-clock time and randomness are inputs,
//!   and persistence is a byte buffer ([`EndpointHistory::export`] /
//!   [`EndpointHistory::import`]) instead of an XML file.
//!
//! The [`Profile::Stn`] choices (see [`BanConfig::for_profile`]): a success after
//! a failure is always recorded and lifts the ban at once; old failures decay
//! (one failure forgotten per 30 failure-free minutes), so a long-recovered
//! endpoint is not re-banned by a single new failure; history reloaded on a
//! network switch or from disk only affects ordering, never bans.
//!
//! # Example
//!
//! ```
//! use stn_proto::{EndpointHistory, config::{BanConfig}};
//! use stn_proto::Rng;
//! use stn_proto::{Duration, Instant};
//! use stn_proto::Profile;
//!
//! let mut history = EndpointHistory::new(BanConfig::for_profile(Profile::Mars));
//! let bad = "10.0.0.1:443".parse().unwrap();
//! let good = "10.0.0.2:443".parse().unwrap();
//!
//! // Three failures, each more than the 10 s update interval apart.
//! let mut now = Instant::from_secs(100);
//! for _ in 0..3 {
//!     history.record(now, bad, false);
//!     now += Duration::from_secs(11);
//! }
//! assert!(history.is_banned(now, bad));
//!
//! // The banned endpoint is filtered out of the candidates...
//! let mut rng = Rng::new(7);
//! assert_eq!(history.order(now, &[bad, good], &mut rng), vec![good]);
//! // ...but never the last one.
//! assert_eq!(history.order(now, &[bad], &mut rng), vec![bad]);
//!
//! // The ban ends 6 minutes after the last failure.
//! let end = history.ban_until(now, bad).unwrap();
//! assert_eq!(end, now - Duration::from_secs(11) + Duration::from_secs(6 * 60));
//! assert!(!history.is_banned(end, bad));
//! ```

mod history;
mod order;
mod persist;
#[cfg(test)]
mod tests;

pub use history::{EndpointHistory, EndpointStats};
pub use persist::ImportError;
#[cfg(any(test, fuzzing))]
pub(crate) use persist::MAX_IMPORT_ENTRIES;
#[cfg(test)]
pub(crate) use persist::MAX_LABEL_LEN;
pub(crate) use persist::{parse as parse_history, SECTION_HEARTBEAT};

use crate::profile::Profile;
use crate::time::Duration;

/// What happens to history reloaded on a network switch or from an import.
///
/// Mars keeps a 64-result history per network label and, when the device
/// joins a network, re-seeds the in-memory 8-result register from it, each
/// group of 8 stored results collapsing to one bit ("any failure in the
/// group"). Reloaded entries carry no failure time, so they cannot be banned
/// on their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReloadPolicy {
    /// Mars exactly: the collapsed bits land in reverse order (the newest
    /// group becomes the oldest bit, a quirk of Mars's loop) and count toward
    /// later bans, so one new failure can complete a ban.
    Mars,
    /// stn: chronological collapse, and reloaded bits only affect ordering;
    /// a ban needs failures seen on this run.
    OrderingOnly,
}

/// Configuration of [`EndpointHistory`]: ban rule, update rate limits,
/// ordering options, persistence expiry and memory caps.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BanConfig {
    /// Ban at all. When `false`, nothing is ever banned (history-based
    /// ordering still applies); the 2017 benchmark ran this way.
    pub enabled: bool,
    /// Failures among the last [`window`](Self::window) results that ban an
    /// endpoint (Mars `kBanFailCount` = 3).
    pub fail_count: u8,
    /// How many of the latest results count, 1..=8 (Mars: the 8-bit register).
    pub window: u8,
    /// Base ban length after the last failure (Mars `kBanTime` = 6 min).
    pub ban_time: Duration,
    /// Extra ban per trailing consecutive failure beyond
    /// [`fail_count`](Self::fail_count) (Mars HEAD: 6 min; v1.3: none).
    pub extend_per_consecutive: Duration,
    /// Cap on an extended ban (Mars `kMaxBanTime` = 30 min). Never shortens the
    /// base [`ban_time`](Self::ban_time).
    pub max_ban_time: Duration,
    /// Length of a ban requested by the server, for
    /// [`EndpointHistory::server_ban`] callers (Mars HEAD `kServerBanTime` =
    /// 30 min; older Mars used `kBanTime` = 6 min).
    pub server_ban_time: Duration,
    /// A success is recorded only if the previous recorded success of that
    /// endpoint is more than this old (Mars `kSuccessUpdateInterval` = 10 s).
    pub success_update_interval: Duration,
    /// A failure is recorded only if the previous recorded failure of that
    /// endpoint is more than this old (Mars `kFailUpdateInterval` = 10 s). This
    /// keeps one outage seen by several parallel attempts (or several tasks on
    /// one broken connection) from counting as several failures.
    pub fail_update_interval: Duration,
    /// stn: a success recorded right after a failure bypasses the success rate
    /// limit and lifts any ban at once (Mars keeps banning an endpoint that has
    /// just worked until its ban time runs out).
    pub success_lifts_ban: bool,
    /// stn: forget the oldest recorded failure for each full interval without a
    /// new failure (`None` = Mars: failures stay until shifted out by 8 newer
    /// results). Taken as at least the longest ban, so decay never shortens a
    /// running ban; it only stops stale failures from re-banning an endpoint
    /// after a single new failure.
    pub decay_interval: Option<Duration>,
    /// Order IPv6 and IPv4 alternately, IPv6 first (Mars HEAD); otherwise
    /// history and new endpoints are only mixed at random (Mars v1.3).
    pub interleave_v6_v4: bool,
    /// With [`interleave_v6_v4`](Self::interleave_v6_v4): the first family
    /// is the one whose best endpoint has fewer recent failures, IPv6 on a
    /// tie (RFC 8305 §4); otherwise IPv6 always goes first (Mars HEAD).
    pub first_family_by_history: bool,
    /// Avoid two equal IPs next to each other in the ordered list by moving the
    /// next different one forward (Mars HEAD; gives up when none is left).
    pub avoid_adjacent_duplicates: bool,
    /// How reloaded history counts (see [`ReloadPolicy`]).
    pub reload_policy: ReloadPolicy,
    /// Entries not updated for this long are dropped on export, import and
    /// network switch (Mars `kRecordTimeout` = 24 h).
    pub history_expiry: Duration,
    /// Most endpoints remembered per network; the least recently updated is
    /// forgotten first. Bounds memory against a stream of distinct addresses.
    pub max_entries: usize,
    /// Most networks whose history is kept besides the current one.
    pub max_networks: usize,
}

impl BanConfig {
    /// The [`Profile::Stn`] configuration with banning switched off: history is
    /// still kept and still orders candidates, but nothing is filtered out.
    pub fn disabled() -> Self {
        BanConfig {
            enabled: false,
            ..Self::for_profile(Profile::Stn)
        }
    }

    /// Ban length for a trailing run of `consecutive` failures (Mars HEAD's
    /// `__IsBanned`): the base time, plus the extension per failure beyond
    /// [`fail_count`](Self::fail_count), capped.
    pub fn ban_duration(&self, consecutive: u32) -> Duration {
        let base = self.ban_time;
        let extra = consecutive.saturating_sub(u32::from(self.fail_count));
        if extra == 0 {
            return base;
        }
        let cap = self.max_ban_time.max(base);
        base.saturating_add(self.extend_per_consecutive.saturating_mul(extra))
            .min(cap)
    }

    /// The longest ban the history rule can produce.
    pub fn longest_ban(&self) -> Duration {
        self.ban_duration(u32::from(self.window.clamp(1, 8)))
    }

    /// Bit mask of the results that count (the newest `window` bits).
    pub(crate) fn window_mask(&self) -> u8 {
        match self.window {
            0 => 1,
            w if w >= 8 => u8::MAX,
            w => (1u8 << w) - 1,
        }
    }

    /// The decay interval actually used: never shorter than the longest ban.
    pub(crate) fn effective_decay(&self) -> Option<Duration> {
        self.decay_interval
            .map(|d| d.max(self.longest_ban()).max(Duration::from_nanos(1)))
    }
}
