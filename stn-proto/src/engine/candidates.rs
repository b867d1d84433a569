//! Candidate addresses (reference §4.1): the debug address, resolved hosts
//! and fixed IPs ordered by the endpoint history, then backups. Owns what
//! the order comes from: the resolve answers, the endpoint history (bans)
//! and the PRNG of its shuffles.

use crate::ban::EndpointHistory;
use crate::net::{IpAddr, SocketAddr};
use crate::rng::Rng;
use crate::time::{Duration, Instant};

use super::dns::{DnsCache, Lookup};

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

/// The resolve answers, the endpoint history and the PRNG that orders
/// candidates.
#[derive(Debug)]
pub(super) struct Candidates {
    history: EndpointHistory,
    dns: DnsCache,
    rng: Rng,
    /// How long an answer is reused, and how long one is awaited.
    resolve_ttl: Duration,
    resolve_timeout: Duration,
}

impl Candidates {
    pub(super) fn new(
        history: EndpointHistory,
        rng: Rng,
        resolve_ttl: Duration,
        resolve_timeout: Duration,
    ) -> Self {
        Candidates {
            history,
            dns: DnsCache::default(),
            rng,
            resolve_ttl,
            resolve_timeout,
        }
    }

    pub(super) fn history(&self) -> &EndpointHistory {
        &self.history
    }

    pub(super) fn history_mut(&mut self) -> &mut EndpointHistory {
        &mut self.history
    }

    /// Records a connect or exchange outcome on `addr`.
    pub(super) fn record(&mut self, now: Instant, addr: SocketAddr, ok: bool) {
        self.history.record(now, addr, ok);
    }

    /// A new network: the history's bans and the resolve answers are of the
    /// old one.
    pub(super) fn network_changed(&mut self, now: Instant) {
        self.history.reset(now);
        self.dns.clear();
    }

    /// Forgets every resolve answer (the app's redo).
    pub(super) fn forget_answers(&mut self) {
        self.dns.clear();
    }

    /// Drops the cached answers for `hosts` (their addresses did not work).
    pub(super) fn forget_hosts(&mut self, hosts: &[String]) {
        self.dns.forget(hosts);
    }

    /// The app's resolve answer; `false` if it was not asked for.
    pub(super) fn resolved(&mut self, now: Instant, host: &str, addrs: Vec<IpAddr>) -> bool {
        self.dns.answer(now, host, addrs)
    }

    /// Resolve answers that did not come in time count as failures; returns
    /// whether there were any.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        self.dns.expire(now)
    }

    /// When the earliest awaited resolve answer is overdue.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.dns.next_timeout()
    }

    /// A host's addresses if a usable answer is at hand; otherwise `None`,
    /// and the host goes into `ask` if the app must be asked (once).
    fn host_addrs(
        &mut self,
        now: Instant,
        host: &str,
        ask: &mut Vec<String>,
    ) -> Option<Vec<IpAddr>> {
        match self
            .dns
            .lookup(now, host, self.resolve_ttl, self.resolve_timeout)
        {
            Lookup::Ready(addrs) => Some(addrs),
            Lookup::Pending => None,
            Lookup::Ask => {
                ask.push(host.to_owned());
                None
            }
        }
    }

    /// The candidate list, or `None` while a resolve answer is awaited (the
    /// hosts the app must be asked about now go into `ask`).
    ///
    /// The primary candidates are, in this order before the history orders
    /// them: the hosts' addresses × `ports`, the port-carrying hosts'
    /// addresses on their port, the fixed IPs × `ports`, the fixed
    /// addresses (so without port-carrying sources the list is exactly the
    /// IP-major expansion of hosts then IPs, as Mars builds it).
    ///
    /// `cycling`: the race goes round again until its deadline (stn). Then
    /// a banned endpoint that has connected before comes after the others
    /// instead of being left out (see [`Candidates::proven_banned`]).
    pub(super) fn list(
        &mut self,
        now: Instant,
        src: &Sources<'_>,
        max: usize,
        cycling: bool,
        ask: &mut Vec<String>,
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
            match self.host_addrs(now, host, ask) {
                Some(addrs) => primary.extend(expand(&addrs)),
                None => waiting = true,
            }
        }
        for (host, port) in src.host_ports {
            match self.host_addrs(now, host, ask) {
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
}
