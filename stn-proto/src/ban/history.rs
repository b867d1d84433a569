//! The endpoint history store: recording outcomes, the ban rule, server bans
//! and per-network records.

use std::collections::BTreeMap;

use super::{BanConfig, ReloadPolicy};
use crate::net::{IpAddr, SocketAddr};
use crate::rng::Rng;
use crate::time::{duration_nanos_saturating, Duration, Instant, MonotonicClock};

/// One endpoint's record on the current network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// Last results, bit 0 newest, 1 = failure (Mars `BanItem::records`).
    pub(super) records: u8,
    /// Bits of `records` that came from reloaded history
    /// ([`ReloadPolicy::OrderingOnly`]: they order but never ban).
    pub(super) reloaded: u8,
    /// The long history that is persisted (Mars `historyresult`), bit 0 newest.
    pub(super) history: u64,
    pub(super) last_fail: Option<Instant>,
    pub(super) last_success: Option<Instant>,
    /// Start of the current decay period (`None`: nothing to decay).
    pub(super) decay_from: Option<Instant>,
    /// Last time a result was recorded; drives expiry and eviction.
    pub(super) last_seen: Instant,
}

/// An entry as kept for a network the device is not on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Saved {
    pub(super) history: u64,
    pub(super) last_seen: Instant,
}

/// A read-only view of one endpoint's record, for logs and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointStats {
    /// The last (up to) 8 recorded results, bit 0 newest, 1 = failure, before
    /// any decay.
    pub records: u8,
    /// The persisted 64-result history, bit 0 newest, 1 = failure.
    pub history: u64,
    /// When the last recorded failure happened on this run, if any.
    pub last_fail: Option<Instant>,
    /// When the last recorded success happened on this run, if any.
    pub last_success: Option<Instant>,
}

/// Endpoint history, bans and candidate ordering for one host population.
///
/// Feed it every connection outcome with [`record`](Self::record), ask
/// [`order`](Self::order) for the candidates to try, and tell it about network
/// changes with [`switch_network`](Self::switch_network). See the
/// module docs for the rules and an example.
///
/// Time only moves forward inside: an earlier `now` than one already seen is
/// treated as the latest seen.
#[derive(Clone, Debug)]
pub struct EndpointHistory {
    pub(super) config: BanConfig,
    pub(super) clock: MonotonicClock,
    pub(super) label: String,
    pub(super) live: BTreeMap<SocketAddr, Entry>,
    pub(super) saved: BTreeMap<String, BTreeMap<SocketAddr, Saved>>,
    /// Server bans: canonical IP → end of the ban.
    pub(super) server_bans: BTreeMap<IpAddr, Instant>,
}

/// Clears the `k` oldest (highest) set bits of `bits`.
fn clear_oldest(mut bits: u8, k: u64) -> u8 {
    for _ in 0..k.min(8) {
        if bits == 0 {
            break;
        }
        bits &= !(0x80u8 >> bits.leading_zeros());
    }
    bits
}

/// Collapses a 64-result history into 8 bits, one per group of 8 results
/// ("any failure in the group").
pub(super) fn collapse(history: u64, policy: ReloadPolicy) -> u8 {
    let mut records = 0u8;
    let mut h = history;
    match policy {
        // Mars's loop shifts the newest group in first, so it ends up oldest.
        ReloadPolicy::Mars => {
            for _ in 0..8 {
                records = (records << 1) | u8::from(h & 0xFF != 0);
                h >>= 8;
            }
        }
        ReloadPolicy::OrderingOnly => {
            for i in 0..8 {
                records |= u8::from(h & 0xFF != 0) << i;
                h >>= 8;
            }
        }
    }
    records
}

impl Entry {
    fn new(now: Instant) -> Self {
        Entry {
            records: 0,
            reloaded: 0,
            history: 0,
            last_fail: None,
            last_success: None,
            decay_from: None,
            last_seen: now,
        }
    }

    /// Number of decay steps due at `now`.
    fn decay_steps(&self, config: &BanConfig, now: Instant) -> u64 {
        match (config.effective_decay(), self.decay_from) {
            (Some(interval), Some(from)) => {
                let interval = duration_nanos_saturating(interval).max(1);
                duration_nanos_saturating(now - from) / interval
            }
            _ => 0,
        }
    }

    /// `records` with decay applied as of `now`.
    pub(super) fn decayed(&self, config: &BanConfig, now: Instant) -> u8 {
        clear_oldest(self.records, self.decay_steps(config, now))
    }

    /// Makes the lazy decay permanent, so a new result can be shifted in.
    fn settle_decay(&mut self, config: &BanConfig, now: Instant) {
        let steps = self.decay_steps(config, now);
        if steps == 0 {
            return;
        }
        self.records = clear_oldest(self.records, steps);
        self.decay_from = match (self.decay_from, config.effective_decay()) {
            (Some(from), Some(interval)) if self.records != 0 => {
                let elapsed = u128::from(steps).saturating_mul(interval.as_nanos());
                Some(from + Duration::from_nanos(u64::try_from(elapsed).unwrap_or(u64::MAX)))
            }
            _ => None,
        };
    }

    /// When this entry's history ban ends, if it is banned at `now`.
    pub(super) fn ban_end(&self, config: &BanConfig, now: Instant) -> Option<Instant> {
        if !config.enabled {
            return None;
        }
        let last_fail = self.last_fail?;
        let counted = self.decayed(config, now) & !self.reloaded & config.window_mask();
        if counted.count_ones() < u32::from(config.fail_count) {
            return None;
        }
        if config.success_lifts_ban && counted & 1 == 0 {
            return None;
        }
        let end = last_fail + config.ban_duration(counted.trailing_ones());
        (now < end).then_some(end)
    }

    /// Mars's ordering key: fewer failures first, then the earliest last
    /// failure (never failed first), then the latest last success.
    pub(super) fn sort_key(
        &self,
        config: &BanConfig,
        now: Instant,
    ) -> (u32, Option<Instant>, core::cmp::Reverse<Option<Instant>>) {
        let fails = (self.decayed(config, now) & config.window_mask()).count_ones();
        (fails, self.last_fail, core::cmp::Reverse(self.last_success))
    }
}

impl EndpointHistory {
    /// An empty history on the network labelled `""`.
    pub fn new(config: BanConfig) -> Self {
        EndpointHistory {
            config,
            clock: MonotonicClock::new(),
            label: String::new(),
            live: BTreeMap::new(),
            saved: BTreeMap::new(),
            server_bans: BTreeMap::new(),
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &BanConfig {
        &self.config
    }

    /// The label of the current network (as given to
    /// [`switch_network`](Self::switch_network); `""` initially).
    pub fn network_label(&self) -> &str {
        &self.label
    }

    /// Number of endpoints remembered on the current network.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no endpoint is remembered on the current network.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The record of one endpoint on the current network.
    pub fn endpoint(&self, addr: SocketAddr) -> Option<EndpointStats> {
        self.live.get(&addr).map(|e| EndpointStats {
            records: e.records,
            history: e.history,
            last_fail: e.last_fail,
            last_success: e.last_success,
        })
    }

    /// `now`, never earlier than a time already seen.
    /// Recent failures of `addr` (its sort key's count; 0 without a record).
    pub(super) fn failures(&self, addr: SocketAddr, now: Instant) -> u32 {
        self.live
            .get(&addr)
            .map_or(0, |e| e.sort_key(&self.config, now).0)
    }

    pub(super) fn effective_now(&self, now: Instant) -> Instant {
        now.max(self.clock.latest())
    }

    /// Records the outcome of using `addr` (`ok = false`: a failure). Returns
    /// whether it was recorded: like Mars, a success within
    /// [`success_update_interval`](BanConfig::success_update_interval) of the
    /// last recorded success, or a failure within
    /// [`fail_update_interval`](BanConfig::fail_update_interval) of the last
    /// recorded failure, is ignored (with
    /// [`success_lifts_ban`](BanConfig::success_lifts_ban), a success right
    /// after a recorded failure is always taken).
    ///
    /// The caller decides what counts: Mars records every connect failure and
    /// most link errors, and records nothing while there is no network.
    pub fn record(&mut self, now: Instant, addr: SocketAddr, ok: bool) -> bool {
        let now = self.clock.observe(now);
        self.server_bans.retain(|_, until| *until > now);
        if !self.live.contains_key(&addr) && self.live.len() >= self.config.max_entries.max(1) {
            self.evict_one();
        }
        let config = &self.config;
        let entry = self.live.entry(addr).or_insert_with(|| Entry::new(now));
        let accept = if ok {
            let newest_is_live_failure = entry.records & !entry.reloaded & 1 == 1;
            entry
                .last_success
                .is_none_or(|t| now - t > config.success_update_interval)
                || (config.success_lifts_ban && newest_is_live_failure)
        } else {
            entry
                .last_fail
                .is_none_or(|t| now - t > config.fail_update_interval)
        };
        if !accept {
            return false;
        }
        entry.settle_decay(config, now);
        let fail = u8::from(!ok);
        entry.records = (entry.records << 1) | fail;
        entry.reloaded <<= 1;
        entry.history = (entry.history << 1) | u64::from(fail);
        if ok {
            entry.last_success = Some(now);
        } else {
            entry.last_fail = Some(now);
            entry.decay_from = Some(now);
        }
        entry.last_seen = now;
        true
    }

    /// Forgets the least recently updated endpoint (ties: lowest address).
    fn evict_one(&mut self) {
        let oldest = self
            .live
            .iter()
            .min_by_key(|(addr, e)| (e.last_seen, **addr))
            .map(|(addr, _)| *addr);
        if let Some(addr) = oldest {
            self.live.remove(&addr);
        }
    }

    /// Bans every port of `ip` until `now + duration` (Mars `AddServerBan`,
    /// normally with [`BanConfig::server_ban_time`]). A longer running server
    /// ban is kept. At most [`max_entries`](BanConfig::max_entries) IPs are
    /// server-banned at once; beyond that the soonest-ending ban is dropped.
    pub fn server_ban(&mut self, now: Instant, ip: IpAddr, duration: Duration) {
        let now = self.clock.observe(now);
        self.server_bans.retain(|_, until| *until > now);
        let until = now + duration;
        if until > now {
            let slot = self.server_bans.entry(ip.to_canonical()).or_insert(until);
            *slot = (*slot).max(until);
        }
        // Bounded like the history: past the cap, the soonest-ending ban goes.
        while self.server_bans.len() > self.config.max_entries.max(1) {
            let soonest = self
                .server_bans
                .iter()
                .min_by_key(|(ip, until)| (**until, **ip))
                .map(|(ip, _)| *ip);
            if let Some(ip) = soonest {
                self.server_bans.remove(&ip);
            }
        }
    }

    /// Forgets everything about `ip` on the current network, all ports (Mars
    /// `RemoveBannedList`, used when a probe shows the IP works again). Server
    /// bans are kept, as in Mars.
    pub fn remove_ip(&mut self, ip: IpAddr) {
        let ip = ip.to_canonical();
        self.live.retain(|addr, _| addr.ip().to_canonical() != ip);
    }

    /// Whether `addr` is banned at `now`, by its history or by a server ban.
    /// Always `false` when banning is [disabled](BanConfig::enabled).
    pub fn is_banned(&self, now: Instant, addr: SocketAddr) -> bool {
        self.ban_until(now, addr).is_some()
    }

    /// When the ban on `addr` ends, if it is banned at `now` (the later of its
    /// history ban and any server ban on its IP).
    pub fn ban_until(&self, now: Instant, addr: SocketAddr) -> Option<Instant> {
        if !self.config.enabled {
            return None;
        }
        let now = self.effective_now(now);
        let history = self
            .live
            .get(&addr)
            .and_then(|e| e.ban_end(&self.config, now));
        let server = self
            .server_bans
            .get(&addr.ip().to_canonical())
            .copied()
            .filter(|until| *until > now);
        history.max(server)
    }

    /// The earliest time after `now` at which an endpoint banned at `now`
    /// stops being banned (the end of a server ban counts: it frees the IP's
    /// other ports), so the engine can re-evaluate candidates then. `None`
    /// when nothing is banned.
    pub fn next_expiry(&self, now: Instant) -> Option<Instant> {
        if !self.config.enabled {
            return None;
        }
        let now = self.effective_now(now);
        let history = self.live.iter().filter_map(|(addr, e)| {
            e.ban_end(&self.config, now)?;
            self.ban_until(now, *addr)
        });
        let server = self.server_bans.values().copied().filter(|u| *u > now);
        history.chain(server).min()
    }

    /// Orders `candidates` for connecting: banned endpoints are removed and the
    /// rest ordered like Mars's `__SortbyBanned`: shuffled; endpoints with a
    /// record sorted by (failures asc, last failure asc — never failed first,
    /// last success desc) and mixed with new endpoints at random, weighted by
    /// how many of each remain; IPv6 and IPv4 alternating, IPv6 first
    /// ([`interleave_v6_v4`](BanConfig::interleave_v6_v4)); equal IPs spread
    /// apart where possible
    /// ([`avoid_adjacent_duplicates`](BanConfig::avoid_adjacent_duplicates)).
    /// Duplicates are kept (Mars's benchmark passed one IP four times to race
    /// it against itself). The same state, input and `rng` state give the same
    /// output.
    ///
    /// Never empty for a non-empty input: if every candidate is banned, the
    /// ones whose ban ends soonest (all copies of them) are kept — the
    /// endpoint most likely to work again, rather than nothing at all.
    pub fn order(&self, now: Instant, candidates: &[SocketAddr], rng: &mut Rng) -> Vec<SocketAddr> {
        let now = self.effective_now(now);
        let ends: Vec<Option<Instant>> =
            candidates.iter().map(|a| self.ban_until(now, *a)).collect();
        let mut kept: Vec<SocketAddr> = candidates
            .iter()
            .zip(&ends)
            .filter(|(_, end)| end.is_none())
            .map(|(a, _)| *a)
            .collect();
        if kept.is_empty() {
            let soonest = ends.iter().flatten().min().copied();
            kept = candidates
                .iter()
                .zip(&ends)
                .filter(|(_, end)| **end == soonest)
                .map(|(a, _)| *a)
                .collect();
        }
        super::order::sort(self, now, kept, rng)
    }

    /// Handles a network change without a new label (Mars `ClearCache`): the
    /// current history is saved and reloaded, which clears every history ban
    /// (reloaded entries have no failure time). Server bans stay.
    pub fn reset(&mut self, now: Instant) {
        let label = core::mem::take(&mut self.label);
        self.switch_network(now, &label);
    }

    /// Moves to the network labelled `label` (Mars's "netinfo", e.g. the Wi-Fi
    /// SSID or the carrier): the current history is saved under the old label,
    /// and the new network's saved history (if any, and younger than
    /// [`history_expiry`](BanConfig::history_expiry)) is reloaded, collapsed per
    /// [`reload_policy`](BanConfig::reload_policy). Reloaded entries affect
    /// ordering; they are not banned. Server bans stay.
    pub fn switch_network(&mut self, now: Instant, label: &str) {
        let now = self.clock.observe(now);
        let live = core::mem::take(&mut self.live);
        let old_label = core::mem::replace(&mut self.label, label.to_owned());
        let saved: BTreeMap<SocketAddr, Saved> = live
            .into_iter()
            .map(|(addr, e)| {
                let s = Saved {
                    history: e.history,
                    last_seen: e.last_seen,
                };
                (addr, s)
            })
            .collect();
        if !saved.is_empty() {
            self.saved.insert(old_label, saved);
        }
        let reload = self.saved.remove(label).unwrap_or_default();
        for (addr, s) in reload {
            self.reload_entry(now, addr, s);
        }
        self.trim_saved(now);
    }

    /// Seeds one live entry from saved history, unless it is expired or the
    /// endpoint already has a live record.
    pub(super) fn reload_entry(&mut self, now: Instant, addr: SocketAddr, s: Saved) {
        if now - s.last_seen >= self.config.history_expiry || self.live.contains_key(&addr) {
            return;
        }
        if self.live.len() >= self.config.max_entries.max(1) {
            self.evict_one();
        }
        let records = collapse(s.history, self.config.reload_policy);
        let reloaded = match self.config.reload_policy {
            ReloadPolicy::Mars => 0,
            ReloadPolicy::OrderingOnly => u8::MAX,
        };
        let entry = Entry {
            records,
            reloaded,
            history: s.history,
            last_fail: None,
            last_success: None,
            decay_from: (records != 0).then_some(now),
            last_seen: s.last_seen,
        };
        self.live.insert(addr, entry);
    }

    /// Drops expired saved entries and keeps at most
    /// [`max_networks`](BanConfig::max_networks) networks (the most recently
    /// seen ones).
    pub(super) fn trim_saved(&mut self, now: Instant) {
        let expiry = self.config.history_expiry;
        for entries in self.saved.values_mut() {
            entries.retain(|_, s| now - s.last_seen < expiry);
            while entries.len() > self.config.max_entries.max(1) {
                let oldest = entries
                    .iter()
                    .min_by_key(|(addr, s)| (s.last_seen, **addr))
                    .map(|(addr, _)| *addr);
                if let Some(addr) = oldest {
                    entries.remove(&addr);
                }
            }
        }
        self.saved.retain(|_, entries| !entries.is_empty());
        while self.saved.len() > self.config.max_networks {
            let stalest = self
                .saved
                .iter()
                .min_by_key(|(label, entries)| {
                    let newest = entries.values().map(|s| s.last_seen).max();
                    (newest, (*label).clone())
                })
                .map(|(label, _)| label.clone());
            if let Some(label) = stalest {
                self.saved.remove(&label);
            }
        }
    }
}
