//! What a connect goes to on the current network: the address itself, or
//! its NAT64 synthesis on an IPv6-only network once the prefix is known.

use std::net::{IpAddr, SocketAddr};

use super::Nat64Prefix;
use crate::{Duration, Instant};

/// How long a discovered prefix is used before it is looked up again.
pub const PREFIX_TTL: Duration = Duration::from_secs(600);
/// How long a lookup that found no prefix stands: no DNS query per connect
/// on an IPv6-only network without NAT64.
pub const NO_PREFIX_TTL: Duration = Duration::from_secs(30);

/// Which IP families the device can reach the internet with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LocalStack {
    /// Neither (no network).
    None,
    /// IPv4 only.
    V4,
    /// IPv6 only: IPv4 addresses need NAT64 synthesis.
    V6,
    /// Both.
    Dual,
}

impl LocalStack {
    /// The stack from whether an IPv4 and an IPv6 route exist (Mars's
    /// `local_ipstack_detect`: a UDP connect towards a global address of
    /// each family).
    pub const fn from_routes(v4: bool, v6: bool) -> Self {
        match (v4, v6) {
            (true, true) => LocalStack::Dual,
            (true, false) => LocalStack::V4,
            (false, true) => LocalStack::V6,
            (false, false) => LocalStack::None,
        }
    }

    /// Whether an IPv4 address must be reached through NAT64.
    pub const fn needs_nat64(self) -> bool {
        matches!(self, LocalStack::V6)
    }
}

/// A prefix lookup the executor was asked to make; hand it back to
/// [`Nat64Map::discovered`] with the answer. A lookup from before a
/// network change is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    network: u64,
}

/// What to do for a connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Connect to this address: the one asked for, or its synthesis.
    Connect(SocketAddr),
    /// Resolve `ipv4only.arpa` (AAAA) first, give the answer to
    /// [`Nat64Map::discovered`], then ask again.
    Discover(Lookup),
}

/// The NAT64 state of one client: the local stack, and the prefix its
/// network's lookup found (or that it found none) with when.
///
/// Only IPv4 addresses on an IPv6-only network are mapped; loopback ones
/// stay (the loopback interface has them on any network). Where the
/// lookup found no prefix the address is connected to as it is, and the
/// connect fails as the operating system says (no route).
#[derive(Clone, Debug)]
pub struct Nat64Map {
    stack: LocalStack,
    /// Counts network changes: a lookup answers for the network it was
    /// asked on.
    network: u64,
    /// The last lookup's prefix (`None`: it found none) and when it ended.
    found: Option<(Option<Nat64Prefix>, Instant)>,
}

impl Nat64Map {
    /// The state on a network with `stack`, nothing looked up yet.
    pub fn new(stack: LocalStack) -> Self {
        Nat64Map {
            stack,
            network: 0,
            found: None,
        }
    }

    /// The current network's stack.
    pub fn stack(&self) -> LocalStack {
        self.stack
    }

    /// The prefix the last lookup found, if it found one (expired or not).
    pub fn prefix(&self) -> Option<Nat64Prefix> {
        self.found.and_then(|(p, _)| p)
    }

    /// A new network with `stack`: its prefix is looked up again.
    pub fn network_changed(&mut self, stack: LocalStack) {
        self.stack = stack;
        self.network = self.network.wrapping_add(1);
        self.found = None;
    }

    /// What a connect to `addr` at `now` goes to.
    pub fn target(&self, now: Instant, addr: SocketAddr) -> Target {
        let IpAddr::V4(v4) = addr.ip().to_canonical() else {
            return Target::Connect(addr);
        };
        if !self.stack.needs_nat64() || v4.is_loopback() {
            return Target::Connect(addr);
        }
        match self.found {
            Some((prefix, at)) if now.saturating_duration_since(at) < ttl(prefix) => {
                Target::Connect(match prefix {
                    Some(p) => SocketAddr::new(IpAddr::V6(p.synthesize(v4)), addr.port()),
                    None => addr,
                })
            }
            _ => Target::Discover(Lookup {
                network: self.network,
            }),
        }
    }

    /// Whether `lookup` was asked on the current network.
    pub fn is_current(&self, lookup: Lookup) -> bool {
        lookup.network == self.network
    }

    /// The answer to `lookup` at `now` (`None`: the name did not resolve).
    /// Returns the prefix found, or `None` (none found, or the lookup was
    /// for an earlier network and is ignored).
    pub fn discovered(
        &mut self,
        now: Instant,
        lookup: Lookup,
        answer: Option<&[IpAddr]>,
    ) -> Option<Nat64Prefix> {
        if !self.is_current(lookup) {
            return None;
        }
        let prefix = answer.and_then(Nat64Prefix::discover);
        self.found = Some((prefix, now));
        prefix
    }
}

fn ttl(prefix: Option<Nat64Prefix>) -> Duration {
    if prefix.is_some() {
        PREFIX_TTL
    } else {
        NO_PREFIX_TTL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nat64::WELL_KNOWN_V4;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn prefix64() -> Nat64Prefix {
        Nat64Prefix::new("2001:db8:64::".parse().unwrap(), 64).unwrap()
    }

    fn answer(p: Nat64Prefix) -> Vec<IpAddr> {
        WELL_KNOWN_V4
            .iter()
            .map(|w| IpAddr::V6(p.synthesize(*w)))
            .collect()
    }

    fn lookup(t: Target) -> Lookup {
        match t {
            Target::Discover(l) => l,
            Target::Connect(a) => panic!("connects to {a} without a lookup"),
        }
    }

    #[test]
    fn only_ipv4_on_an_ipv6_only_network_is_mapped() {
        let now = Instant::from_secs(1);
        for stack in [LocalStack::Dual, LocalStack::V4, LocalStack::None] {
            let m = Nat64Map::new(stack);
            for a in ["192.0.2.2:80", "[2001:db8::1]:443", "[::ffff:192.0.2.2]:80"] {
                assert_eq!(m.target(now, sa(a)), Target::Connect(sa(a)), "{stack:?}");
            }
        }
        let m = Nat64Map::new(LocalStack::V6);
        for a in [
            "[2001:db8::1]:443",
            "127.0.0.1:8080",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert_eq!(m.target(now, sa(a)), Target::Connect(sa(a)));
        }
    }

    #[test]
    fn a_lookup_maps_literals_until_its_ttl() {
        let mut now = Instant::from_secs(1);
        let mut m = Nat64Map::new(LocalStack::V6);
        let l = lookup(m.target(now, sa("192.0.2.2:8080")));
        now += Duration::from_millis(30);
        assert_eq!(
            m.discovered(now, l, Some(&answer(prefix64()))),
            Some(prefix64())
        );
        let want = sa("[2001:db8:64:0:c0:2:200:0]:8080");
        assert_eq!(m.target(now, sa("192.0.2.2:8080")), Target::Connect(want));
        // An IPv4-mapped IPv6 address is the same IPv4 address.
        assert_eq!(
            m.target(now, sa("[::ffff:192.0.2.2]:8080")),
            Target::Connect(want)
        );
        now += PREFIX_TTL - Duration::from_nanos(1);
        assert_eq!(m.target(now, sa("192.0.2.2:8080")), Target::Connect(want));
        now += Duration::from_nanos(1);
        let l = lookup(m.target(now, sa("192.0.2.2:8080")));
        // The prefix stays known while it is looked up again.
        assert_eq!(m.prefix(), Some(prefix64()));
        // The network now answers with the well-known prefix.
        assert_eq!(
            m.discovered(now, l, Some(&answer(Nat64Prefix::WELL_KNOWN))),
            Some(Nat64Prefix::WELL_KNOWN)
        );
        assert_eq!(
            m.target(now, sa("198.51.100.7:443")),
            Target::Connect(sa("[64:ff9b::198.51.100.7]:443"))
        );
    }

    #[test]
    fn no_prefix_connects_as_asked_and_asks_again_later() {
        let mut now = Instant::from_secs(5);
        let mut m = Nat64Map::new(LocalStack::V6);
        for answer in [
            None,
            Some(&[][..]),
            Some(&[IpAddr::V4(WELL_KNOWN_V4[0])][..]),
        ] {
            let l = lookup(m.target(now, sa("192.0.2.2:80")));
            assert_eq!(m.discovered(now, l, answer), None);
            assert_eq!(m.prefix(), None);
            assert_eq!(
                m.target(now, sa("192.0.2.2:80")),
                Target::Connect(sa("192.0.2.2:80"))
            );
            now += NO_PREFIX_TTL;
        }
        lookup(m.target(now, sa("192.0.2.2:80")));
    }

    #[test]
    fn a_lookup_from_before_a_network_change_is_ignored() {
        let now = Instant::from_secs(1);
        let mut m = Nat64Map::new(LocalStack::V6);
        let old = lookup(m.target(now, sa("192.0.2.2:80")));
        assert!(m.is_current(old));
        m.network_changed(LocalStack::V6);
        assert!(!m.is_current(old));
        assert_eq!(m.discovered(now, old, Some(&answer(prefix64()))), None);
        assert_eq!(m.prefix(), None);
        let new = lookup(m.target(now, sa("192.0.2.2:80")));
        assert_ne!(old, new);
        assert_eq!(
            m.discovered(now, new, Some(&answer(prefix64()))),
            Some(prefix64())
        );
        // Onto a dual-stack network: the prefix is forgotten, IPv4 is direct.
        m.network_changed(LocalStack::Dual);
        assert_eq!(m.prefix(), None);
        assert_eq!(
            m.target(now, sa("192.0.2.2:80")),
            Target::Connect(sa("192.0.2.2:80"))
        );
    }

    #[derive(Clone, Debug)]
    enum Op {
        Network(LocalStack),
        Wait(u64),
        /// Answer the last lookup asked for, with this prefix's records
        /// (or nothing).
        Answer(Option<Nat64Prefix>),
        Connect(SocketAddr),
    }

    fn any_op() -> impl Strategy<Value = Op> {
        let stack = prop::sample::select(vec![
            LocalStack::None,
            LocalStack::V4,
            LocalStack::V6,
            LocalStack::Dual,
        ]);
        let prefix = (
            any::<u128>(),
            prop::sample::select(crate::nat64::PREFIX_LENGTHS.to_vec()),
        )
            .prop_map(|(b, len)| Nat64Prefix::new(Ipv6Addr::from(b), len).unwrap());
        let addr = prop_oneof![
            any::<(u32, u16)>().prop_map(|(ip, port)| SocketAddr::from((Ipv4Addr::from(ip), port))),
            any::<(u128, u16)>()
                .prop_map(|(ip, port)| SocketAddr::from((Ipv6Addr::from(ip), port))),
            any::<(u32, u16)>().prop_map(|(ip, port)| {
                SocketAddr::from((Ipv4Addr::from(ip).to_ipv6_mapped(), port))
            }),
        ];
        prop_oneof![
            stack.prop_map(Op::Network),
            (0..1_000u64).prop_map(Op::Wait),
            prop::option::of(prefix).prop_map(Op::Answer),
            addr.prop_map(Op::Connect),
        ]
    }

    proptest! {
        /// Whatever happens: an address is only ever changed into its
        /// synthesis under the prefix last found on this network, only on
        /// an IPv6-only network and only for a non-loopback IPv4 address;
        /// a lookup is only asked for then.
        #[test]
        fn mapping_is_synthesis_or_nothing(ops in prop::collection::vec(any_op(), 1..60)) {
            let mut now = Instant::from_secs(1);
            let mut m = Nat64Map::new(LocalStack::V6);
            let mut asked: Option<Lookup> = None;
            for op in ops {
                match op {
                    Op::Network(stack) => m.network_changed(stack),
                    Op::Wait(s) => now += Duration::from_secs(s),
                    Op::Answer(p) => {
                        if let Some(l) = asked.take() {
                            let records = p.map(answer).unwrap_or_default();
                            let _ = m.discovered(now, l, Some(&records));
                        }
                    }
                    Op::Connect(addr) => {
                        let v4 = match addr.ip().to_canonical() {
                            IpAddr::V4(v4) if !v4.is_loopback() => Some(v4),
                            _ => None,
                        };
                        let mapped = m.stack().needs_nat64() && v4.is_some();
                        match m.target(now, addr) {
                            Target::Discover(l) => {
                                prop_assert!(mapped);
                                asked = Some(l);
                            }
                            Target::Connect(to) if to == addr => {
                                prop_assert!(!mapped || m.prefix().is_none());
                            }
                            Target::Connect(to) => {
                                prop_assert!(mapped);
                                let p = m.prefix().unwrap();
                                prop_assert_eq!(to.port(), addr.port());
                                let IpAddr::V6(to) = to.ip() else {
                                    return Err(TestCaseError::fail("synthesis is IPv6"));
                                };
                                prop_assert_eq!(p.extract(to), v4);
                            }
                        }
                    }
                }
            }
        }
    }
}
