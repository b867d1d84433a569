//! Candidate addresses (reference §4.1): the debug address, resolved hosts
//! and fixed IPs ordered by the endpoint history, then backups; resolving
//! through the app ([`Output::Resolve`]).

use crate::net::{IpAddr, SocketAddr};
use crate::task::TaskId;
use crate::time::Instant;

use super::{Engine, Output, MAX_DNS_ENTRIES};

/// Where one link's candidates come from.
pub(super) struct Sources<'a> {
    /// The only candidate, when set.
    pub debug: Option<SocketAddr>,
    /// Hosts to resolve, each address on every one of `ports`.
    pub hosts: &'a [String],
    /// Hosts to resolve, each with its own port.
    pub host_ports: &'a [(String, u16)],
    /// Fixed IPs, on every one of `ports`.
    pub ips: &'a [IpAddr],
    /// Fixed addresses with their own port.
    pub addrs: &'a [SocketAddr],
    /// Backup IPs, on every one of `ports`, after the others.
    pub backups: &'a [IpAddr],
    /// The link's ports, for the sources without one of their own.
    pub ports: &'a [u16],
}

impl Engine {
    /// The candidate list, or `None` while a resolve answer is awaited.
    ///
    /// The primary candidates are, in this order before the history orders
    /// them: the hosts' addresses × `ports`, the port-carrying hosts'
    /// addresses on their port, the fixed IPs × `ports`, the fixed
    /// addresses (so without port-carrying sources the list is exactly the
    /// IP-major expansion of hosts then IPs, as Mars builds it).
    ///
    /// `cycling`: the race goes round again until its deadline (stn). Then
    /// a banned endpoint that has connected before comes after the others
    /// instead of being left out (see [`Engine::proven_banned`]).
    pub(super) fn candidates(
        &mut self,
        now: Instant,
        src: &Sources<'_>,
        max: usize,
        cycling: bool,
    ) -> Option<Vec<SocketAddr>> {
        if let Some(d) = src.debug {
            return Some(vec![d]);
        }
        let ports = src.ports;
        let expand = |ips: &[IpAddr]| -> Vec<SocketAddr> {
            ips.iter()
                .flat_map(|ip| ports.iter().map(move |p| SocketAddr::new(*ip, *p)))
                .collect()
        };
        let mut primary: Vec<SocketAddr> = Vec::new();
        let mut waiting = false;
        for host in src.hosts {
            match self.host_addrs(now, host) {
                Some(addrs) => primary.extend(expand(&addrs)),
                None => waiting = true,
            }
        }
        for (host, port) in src.host_ports {
            match self.host_addrs(now, host) {
                Some(addrs) => primary.extend(addrs.iter().map(|ip| SocketAddr::new(*ip, *port))),
                None => waiting = true,
            }
        }
        if waiting {
            return None;
        }
        primary.extend(expand(src.ips));
        primary.extend_from_slice(src.addrs);
        let backups = src.backups;
        let max = max.max(1);
        let mut out = self.history.order(now, &primary, &mut self.rng);
        if cycling {
            let proven = self.proven_banned(&primary, &out);
            out.extend(proven);
        }
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

    /// The entries of `primary` the history left out of `ordered` (banned)
    /// that have connected on this network before, in `primary`'s order.
    ///
    /// A ban counts failures, and on a lossy path a live endpoint collects
    /// them (timeouts, reset connections) while a black hole, whose SYNs
    /// are only abandoned or outpaced, may not: the history can then ban
    /// the one endpoint that works and keep a dead one, and a race that
    /// goes round until its deadline spends all of it on the dead one (the
    /// matrix cell `android rtt150 ge30%/1000ms edge jit10 lbr out-1.5s
    /// long`: 20 s of SYNs to a black hole and a refusing host, the live
    /// server never tried). Tried last, such an endpoint costs one attempt
    /// per pass over the unbanned ones; an endpoint that never connected
    /// stays out, so bans still keep black holes away.
    fn proven_banned(&self, primary: &[SocketAddr], ordered: &[SocketAddr]) -> Vec<SocketAddr> {
        primary
            .iter()
            .filter(|a| !ordered.contains(a))
            .filter(|a| {
                self.history
                    .endpoint(**a)
                    .is_some_and(|e| e.last_success.is_some())
            })
            .copied()
            .collect()
    }

    /// The hosts a short-link task resolves: its own, else the configured
    /// ones (with and without their own ports).
    pub(super) fn short_hosts(&self, id: TaskId) -> Vec<String> {
        match self.tasks.get(&id).and_then(|e| e.task.host.clone()) {
            Some(h) => vec![h],
            None => {
                let ep = &self.config.short_link;
                let named = ep.host_ports.iter().map(|(h, _)| h.clone());
                ep.hosts.iter().cloned().chain(named).collect()
            }
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
