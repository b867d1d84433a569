//! Candidate addresses (reference §4.1): the debug address, resolved hosts
//! and fixed IPs ordered by the endpoint history, then backups; resolving
//! through the app ([`Output::Resolve`]).

use crate::net::{IpAddr, SocketAddr};
use crate::task::TaskId;
use crate::time::Instant;

use super::{Engine, Output, MAX_DNS_ENTRIES};

impl Engine {
    /// The candidate list, or `None` while a resolve answer is awaited.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn candidates(
        &mut self,
        now: Instant,
        debug: Option<SocketAddr>,
        hosts: &[String],
        ips: &[IpAddr],
        backups: &[IpAddr],
        ports: &[u16],
        max: usize,
    ) -> Option<Vec<SocketAddr>> {
        if let Some(d) = debug {
            return Some(vec![d]);
        }
        let mut primary_ips: Vec<IpAddr> = Vec::new();
        let mut waiting = false;
        for host in hosts {
            match self.host_addrs(now, host) {
                Some(addrs) => primary_ips.extend(addrs),
                None => waiting = true,
            }
        }
        if waiting {
            return None;
        }
        primary_ips.extend_from_slice(ips);
        let expand = |ips: &[IpAddr]| -> Vec<SocketAddr> {
            ips.iter()
                .flat_map(|ip| ports.iter().map(move |p| SocketAddr::new(*ip, *p)))
                .collect()
        };
        let max = max.max(1);
        let mut out = self
            .history
            .order(now, &expand(&primary_ips), &mut self.rng);
        out.truncate(max);
        if out.len() < max && !backups.is_empty() {
            let more = self.history.order(now, &expand(backups), &mut self.rng);
            for a in more {
                if out.len() >= max {
                    break;
                }
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        Some(out)
    }

    /// The hosts a short-link task resolves: its own, else the configured ones.
    pub(super) fn short_hosts(&self, id: TaskId) -> Vec<String> {
        match self.tasks.get(&id).and_then(|e| e.task.host.clone()) {
            Some(h) => vec![h],
            None => self.config.short_link.hosts.clone(),
        }
    }

    /// Drops cached answers for `hosts` (not pending lookups).
    pub(super) fn forget_hosts(&mut self, hosts: &[String]) {
        for h in hosts {
            if let Some(entry) = self.dns.get_mut(h) {
                if entry.pending_until.is_none() {
                    entry.answered_at = None;
                }
            }
        }
    }

    /// A host's addresses if a usable answer is at hand; otherwise asks the
    /// app (once) and returns `None`.
    pub(super) fn host_addrs(&mut self, now: Instant, host: &str) -> Option<Vec<IpAddr>> {
        let ttl = self.config.resolve_ttl;
        if !self.dns.contains_key(host) && self.dns.len() >= MAX_DNS_ENTRIES {
            let victim = self
                .dns
                .iter()
                .filter(|(_, h)| h.pending_until.is_none())
                .min_by_key(|(_, h)| h.answered_at)
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    self.dns.remove(&k);
                }
                None => return Some(Vec::new()), // table full of pending lookups
            }
        }
        let timeout = self.config.resolve_timeout;
        let entry = self.dns.entry(host.to_owned()).or_default();
        if entry.pending_until.is_some() {
            return None;
        }
        if let Some(at) = entry.answered_at {
            if now <= at + ttl {
                return Some(entry.addrs.clone());
            }
        }
        entry.pending_until = Some(now + timeout);
        self.actions.push_back(Output::Resolve {
            host: host.to_owned(),
        });
        None
    }

    pub(super) fn resolved(&mut self, now: Instant, host: String, mut addrs: Vec<IpAddr>) {
        let Some(entry) = self.dns.get_mut(&host) else {
            return; // not asked (or forgotten): ignore
        };
        addrs.truncate(64);
        entry.addrs = addrs;
        entry.answered_at = Some(now);
        entry.pending_until = None;
        if self.long_wants_connect {
            self.long_connect(now);
        }
    }
}
