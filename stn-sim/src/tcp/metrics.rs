//! What a host's stack remembers about a destination between connections.
//!
//! **Linux** (`net/ipv4/tcp_metrics.c`): a per-destination cache of the
//! smoothed RTT. `tcp_update_metrics` runs when a connection finishes
//! cleanly — the side that closed first when its FIN is acknowledged
//! (`tcp_time_wait`, from FIN-WAIT-1 or on entering TIME-WAIT), the other
//! side when LAST-ACK ends — and not for a reset or timed-out connection.
//! A connection still backed off (`icsk_backoff`) or without an RTT clears
//! the cached RTT; otherwise a larger srtt replaces it and a smaller one
//! pulls it down by an eighth of the gap ("rtt overestimation is always
//! better than underestimation"). `tcp_init_metrics`, when a later
//! connection's handshake completes (`tcp_init_transfer`, both sides): if
//! the cached RTT exceeds the handshake's srtt, the first RTO is
//! `crtt + max(2·crtt, TCP_RTO_MIN)` in whole jiffies, while srtt and the
//! variance stay the handshake's; the first data sample recomputes the RTO
//! as usual. An entry untouched for `TCP_METRICS_TIMEOUT` (one hour) is
//! reset on its next lookup (`tcpm_check_stamp`). The cached ssthresh is
//! not modelled (`tcp_no_ssthresh_metrics_save` is 1 by default on current
//! kernels, and the lab's transfers are small).
//!
//! **xnu** (`bsd/netinet/tcp_subr.c`, `tcp_close` and `tcp_getrt_rtt`;
//! `tcp_input.c`, `tcp_mss`): the route entry's `rmx_rtt` and
//! `rmx_rttvar`, saved when a connection closes (any close, resets and
//! drops included) after at least 16 RTT updates ("enough for the srtt
//! filter to converge"), averaged with the value already there; a later
//! connection whose srtt is still zero when the peer's MSS option is
//! processed (the SYN-ACK on the client, the SYN on the server) starts its
//! estimator from them (`tcp_init_rtt_from_cache`, default 1), so the
//! handshake's sample is smoothed into the cached srtt instead of replacing
//! it. The route is a host route cloned per destination ("all unicast
//! non-host routes are automatically cloning", `in_addroute` in
//! `bsd/netinet/in_rmx.c`) that expires an hour after its last use. Not
//! modelled: xnu-4570's `tcp_getrt_rtt` sets the RTO before the first
//! sample from `((t_srtt >> 2) + t_rttvar) >> 1`, which only matters when no
//! sample follows the handshake (the model uses `TCP_REXMTVAL`, as later
//! xnu does).

use std::collections::BTreeMap;
use std::net::IpAddr;

use stn_proto::{Duration, Instant};

/// Linux's `TCP_METRICS_TIMEOUT`; xnu's `rtq_reallyold`.
const ENTRY_LIFETIME: Duration = Duration::from_secs(3600);
/// xnu's threshold of RTT updates before a connection's estimate is saved.
pub(crate) const XNU_RTT_UPDATES_TO_SAVE: u32 = 16;

/// What a finished connection hands its host's cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetricsReport {
    /// Linux's `tcp_update_metrics`: the srtt, or `None` when the
    /// connection had none or was still backed off (which clears the entry).
    Linux { srtt: Option<Duration> },
    /// xnu's `tcp_close` after enough RTT updates.
    Xnu { srtt: Duration, rttvar: Duration },
}

/// What a new connection reads from its host's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cached {
    /// The cached smoothed RTT, if any.
    pub(crate) rtt: Option<Duration>,
    /// The cached RTT variation (xnu only), if any.
    pub(crate) rttvar: Option<Duration>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Entry {
    rtt: Duration,
    rttvar: Duration,
    stamp: Instant,
}

/// One host's per-destination cache (a phone's, or a server's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RouteCache {
    entries: BTreeMap<IpAddr, Entry>,
}

impl RouteCache {
    /// What a connection to `peer` starting now finds (an entry untouched
    /// for an hour is reset as it is looked up).
    pub(crate) fn lookup(&mut self, now: Instant, peer: IpAddr) -> Cached {
        let Some(e) = self.entries.get_mut(&peer) else {
            return Cached::default();
        };
        if now.saturating_duration_since(e.stamp) > ENTRY_LIFETIME {
            *e = Entry {
                stamp: now,
                ..Entry::default()
            };
        }
        let some = |d: Duration| (!d.is_zero()).then_some(d);
        Cached {
            rtt: some(e.rtt),
            rttvar: some(e.rttvar),
        }
    }

    /// A connection to `peer` finished and reports `report`.
    pub(crate) fn update(&mut self, now: Instant, peer: IpAddr, report: MetricsReport) {
        match report {
            MetricsReport::Linux { srtt: None } => {
                // Cleared only if there is an entry (`tcp_get_metrics(...,
                // false)`), and not re-stamped.
                if let Some(e) = self.entries.get_mut(&peer) {
                    e.rtt = Duration::ZERO;
                }
            }
            MetricsReport::Linux { srtt: Some(srtt) } => {
                let e = self.entries.entry(peer).or_default();
                e.rtt = if srtt >= e.rtt {
                    srtt
                } else {
                    e.rtt - (e.rtt - srtt) / 8
                };
                e.stamp = now;
            }
            MetricsReport::Xnu { srtt, rttvar } => {
                // A cloned host route lives an hour past its last use
                // (`in_clsroute`, `rtq_reallyold` = 3600 s in
                // bsd/netinet/in_rmx.c).
                let e = self.entries.entry(peer).or_default();
                let blend = |old: Duration, new: Duration| {
                    if old.is_zero() || new.is_zero() {
                        new
                    } else {
                        (old + new) / 2
                    }
                };
                e.rtt = blend(e.rtt, srtt);
                e.rttvar = blend(e.rttvar, rttvar);
                e.stamp = now;
            }
        }
    }
}

/// Linux's first RTO from a cached RTT (`tcp_init_metrics`): in jiffies,
/// `crtt + max(2·crtt, TCP_RTO_MIN)`, with `crtt` truncated to a jiffy.
pub(crate) fn linux_rto_from_cache(crtt: Duration, rto_min: Duration) -> Duration {
    let jiffy = super::wheel::JIFFY;
    let j = crtt.as_nanos() / jiffy.as_nanos();
    let crtt = jiffy * u32::try_from(j).unwrap_or(u32::MAX);
    crtt + (crtt * 2).max(rto_min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn ip() -> IpAddr {
        "10.0.0.2".parse().unwrap()
    }

    #[test]
    fn linux_keeps_the_larger_rtt_and_decays_by_an_eighth() {
        let mut c = RouteCache::default();
        let t = Instant::ZERO;
        assert_eq!(c.lookup(t, ip()), Cached::default());
        c.update(
            t,
            ip(),
            MetricsReport::Linux {
                srtt: Some(ms(800)),
            },
        );
        assert_eq!(c.lookup(t, ip()).rtt, Some(ms(800)));
        // A larger one replaces it at once.
        c.update(
            t,
            ip(),
            MetricsReport::Linux {
                srtt: Some(ms(3000)),
            },
        );
        assert_eq!(c.lookup(t, ip()).rtt, Some(ms(3000)));
        // A smaller one pulls it down by an eighth of the gap.
        c.update(
            t,
            ip(),
            MetricsReport::Linux {
                srtt: Some(ms(200)),
            },
        );
        assert_eq!(c.lookup(t, ip()).rtt, Some(ms(2650)));
        // A backed-off connection clears it.
        c.update(t, ip(), MetricsReport::Linux { srtt: None });
        assert_eq!(c.lookup(t, ip()).rtt, None);
    }

    #[test]
    fn linux_forgets_after_an_hour() {
        let mut c = RouteCache::default();
        c.update(
            Instant::ZERO,
            ip(),
            MetricsReport::Linux {
                srtt: Some(ms(500)),
            },
        );
        assert_eq!(c.lookup(Instant::from_secs(3600), ip()).rtt, Some(ms(500)));
        assert_eq!(c.lookup(Instant::from_secs(3601), ip()).rtt, None);
    }

    #[test]
    fn linux_first_rto_is_three_cached_rtts_or_rtt_plus_min() {
        // 3.14 s cached: 785 jiffies, RTO 2355 jiffies = 9.42 s.
        assert_eq!(linux_rto_from_cache(ms(3141), ms(200)), ms(9420));
        // 60 ms cached: 15 jiffies + max(30, 50) jiffies = 260 ms.
        assert_eq!(linux_rto_from_cache(ms(61), ms(200)), ms(260));
    }

    #[test]
    fn xnu_averages_with_the_route_entry() {
        let mut c = RouteCache::default();
        let t = Instant::ZERO;
        c.update(
            t,
            ip(),
            MetricsReport::Xnu {
                srtt: ms(100),
                rttvar: ms(40),
            },
        );
        c.update(
            t,
            ip(),
            MetricsReport::Xnu {
                srtt: ms(300),
                rttvar: ms(20),
            },
        );
        assert_eq!(
            c.lookup(t, ip()),
            Cached {
                rtt: Some(ms(200)),
                rttvar: Some(ms(30)),
            }
        );
    }
}
