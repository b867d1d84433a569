//! Placeholders that stand for host names the proxy resolves (remote DNS).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};

/// Most host names with a placeholder; beyond it names are resolved
/// locally (an app has a handful of hosts; this only bounds a stream of
/// distinct names).
const MAX_NAMES: usize = 4096;

/// One address per host name, from the discard-only prefix `100::/64`
/// (RFC 6666), which no real endpoint has: the engine races and bans it
/// like any address, and a connect to it asks the proxy for the name.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    by_host: BTreeMap<String, IpAddr>,
    by_ip: BTreeMap<IpAddr, String>,
}

impl Placeholders {
    /// The placeholder of `host` (the same every time), or `None` when the
    /// table is full.
    pub(crate) fn of(&mut self, host: &str) -> Option<IpAddr> {
        if let Some(ip) = self.by_host.get(host) {
            return Some(*ip);
        }
        if self.by_host.len() >= MAX_NAMES {
            return None;
        }
        let n = self.by_host.len() as u64 + 1;
        let ip = IpAddr::V6(Ipv6Addr::from((0x0100_u128 << 112) | u128::from(n)));
        self.by_host.insert(host.to_owned(), ip);
        self.by_ip.insert(ip, host.to_owned());
        Some(ip)
    }

    /// The host `ip` stands for, if it is a placeholder.
    pub(crate) fn host(&self, ip: IpAddr) -> Option<&str> {
        self.by_ip.get(&ip).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_placeholder_per_name_in_the_discard_prefix() {
        let mut p = Placeholders::default();
        let a = p.of("a.example").unwrap();
        let b = p.of("b.example").unwrap();
        assert_ne!(a, b);
        assert_eq!(p.of("a.example"), Some(a));
        assert_eq!(a, "100::1".parse::<IpAddr>().unwrap());
        assert_eq!(p.host(b), Some("b.example"));
        assert_eq!(p.host("100::99".parse().unwrap()), None);
        for i in 0..MAX_NAMES {
            p.of(&format!("h{i}"));
        }
        assert_eq!(p.of("one-too-many"), None);
        assert_eq!(p.by_ip.len(), MAX_NAMES);
    }
}
