//! The resolve answers the engine keeps (Mars `OnNewDns`, answered by the
//! app): a bounded table by host name, each entry answered, pending or
//! forgotten.

use std::collections::BTreeMap;

use crate::net::IpAddr;
use crate::time::{Duration, Instant};

/// Most host names whose resolve answers are remembered.
const MAX_ENTRIES: usize = 64;
/// Most addresses kept from one answer.
const MAX_ADDRS: usize = 64;

#[derive(Clone, Debug, Default)]
struct HostDns {
    addrs: Vec<IpAddr>,
    answered_at: Option<Instant>,
    pending_until: Option<Instant>,
}

/// What [`DnsCache::lookup`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// A usable answer (possibly empty: the host has no address).
    Ready(Vec<IpAddr>),
    /// Asked already; the answer is awaited.
    Pending,
    /// Not known: the caller asks the app now (the lookup is pending from
    /// here on).
    Ask,
}

/// Resolve answers by host.
#[derive(Clone, Debug, Default)]
pub(super) struct DnsCache {
    hosts: BTreeMap<String, HostDns>,
}

impl DnsCache {
    /// A host's addresses, if an answer younger than `ttl` is at hand.
    /// Otherwise the host is marked pending for `timeout` (unless it is
    /// already) and the caller told whether to ask. A full table of pending
    /// lookups answers with no address.
    pub(super) fn lookup(
        &mut self,
        now: Instant,
        host: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Lookup {
        if !self.hosts.contains_key(host) && self.hosts.len() >= MAX_ENTRIES {
            let victim = self
                .hosts
                .iter()
                .filter(|(_, h)| h.pending_until.is_none())
                .min_by_key(|(_, h)| h.answered_at)
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    self.hosts.remove(&k);
                }
                None => return Lookup::Ready(Vec::new()),
            }
        }
        let entry = self.hosts.entry(host.to_owned()).or_default();
        if entry.pending_until.is_some() {
            return Lookup::Pending;
        }
        if let Some(at) = entry.answered_at {
            if now <= at + ttl {
                return Lookup::Ready(entry.addrs.clone());
            }
        }
        entry.pending_until = Some(now + timeout);
        Lookup::Ask
    }

    /// The app's answer for `host`. Returns `false` (and keeps nothing) for
    /// a host not asked about or forgotten since.
    pub(super) fn answer(&mut self, now: Instant, host: &str, mut addrs: Vec<IpAddr>) -> bool {
        let Some(entry) = self.hosts.get_mut(host) else {
            return false;
        };
        addrs.truncate(MAX_ADDRS);
        entry.addrs = addrs;
        entry.answered_at = Some(now);
        entry.pending_until = None;
        true
    }

    /// Lookups unanswered at `now` are answered with no address. Returns
    /// whether there were any.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        let mut expired = false;
        for h in self.hosts.values_mut() {
            if h.pending_until.is_some_and(|p| p <= now) {
                h.pending_until = None;
                h.addrs.clear();
                h.answered_at = Some(now);
                expired = true;
            }
        }
        expired
    }

    /// Drops the answers for `hosts` (not their pending lookups): the next
    /// attempt asks again.
    pub(super) fn forget(&mut self, hosts: &[String]) {
        for h in hosts {
            if let Some(entry) = self.hosts.get_mut(h) {
                if entry.pending_until.is_none() {
                    entry.answered_at = None;
                }
            }
        }
    }

    /// Forgets everything (a new network, the app's redo).
    pub(super) fn clear(&mut self) {
        self.hosts.clear();
    }

    /// When the earliest pending lookup expires.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.hosts.values().filter_map(|h| h.pending_until).min()
    }
}
