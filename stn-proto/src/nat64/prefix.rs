//! NAT64 prefixes (RFC 6052) and their discovery (RFC 7050).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The well-known IPv4 addresses of `ipv4only.arpa` (RFC 7050 §2.2).
pub const WELL_KNOWN_V4: [Ipv4Addr; 2] =
    [Ipv4Addr::new(192, 0, 0, 170), Ipv4Addr::new(192, 0, 0, 171)];

/// The name whose AAAA answer reveals the prefix (RFC 7050 §2.2).
pub const IPV4ONLY_ARPA: &str = "ipv4only.arpa";

/// The prefix lengths RFC 6052 §2.2 allows.
pub const PREFIX_LENGTHS: [u8; 6] = [32, 40, 48, 56, 64, 96];

/// A NAT64 prefix: its bits and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nat64Prefix {
    /// The prefix, with every bit past `len` zero.
    prefix: Ipv6Addr,
    len: u8,
}

impl Nat64Prefix {
    /// The well-known prefix `64:ff9b::/96` (RFC 6052 §2.1).
    pub const WELL_KNOWN: Nat64Prefix = Nat64Prefix {
        prefix: Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
        len: 96,
    };

    /// `prefix/len`, if `len` is one of RFC 6052's (bits past `len` are
    /// cleared).
    pub fn new(prefix: Ipv6Addr, len: u8) -> Option<Self> {
        PREFIX_LENGTHS.contains(&len).then(|| Nat64Prefix {
            prefix: Ipv6Addr::from(u128::from(prefix) & mask(len)),
            len,
        })
    }

    /// The prefix bits.
    pub fn prefix(&self) -> Ipv6Addr {
        self.prefix
    }

    /// The prefix length in bits.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u8 {
        self.len
    }

    /// The network's prefix from the answer to an AAAA query for
    /// `ipv4only.arpa`, or `None` if no address in it embeds a well-known
    /// address at any of RFC 6052's positions (no NAT64: the answer is
    /// empty, or IPv4 only). Where one address embeds it at several
    /// lengths, the length at which the most addresses of the answer do
    /// wins (the .170 and .171 answers agree only at the true one); then
    /// the longest.
    pub fn discover(answer: &[IpAddr]) -> Option<Nat64Prefix> {
        let mut best: Option<(usize, Nat64Prefix)> = None;
        for len in PREFIX_LENGTHS.iter().rev() {
            let mut found: Option<Nat64Prefix> = None;
            let mut votes = 0;
            for ip in answer {
                let IpAddr::V6(v6) = ip else { continue };
                if !has_zero_u_octet(*v6, *len) {
                    continue;
                }
                if WELL_KNOWN_V4.contains(&extract(*v6, *len)) {
                    let p = Nat64Prefix::new(*v6, *len)?;
                    match found {
                        Some(f) if f != p => continue,
                        _ => {
                            found = Some(p);
                            votes += 1;
                        }
                    }
                }
            }
            if let Some(p) = found {
                if best.is_none_or(|(v, _)| votes > v) {
                    best = Some((votes, p));
                }
            }
        }
        best.map(|(_, p)| p)
    }

    /// `v4` embedded in this prefix (RFC 6052 §2.2).
    pub fn synthesize(&self, v4: Ipv4Addr) -> Ipv6Addr {
        let v4 = u128::from(u32::from(v4));
        let bits = u128::from(self.prefix);
        let embedded = match self.len {
            96 => v4,
            // The IPv4 bits after the prefix, skipping bits 64..71.
            len => {
                let before_u = u32::from(64 - len);
                let high = v4 >> (32 - before_u);
                let low = v4 & ((1u128 << (32 - before_u)) - 1);
                (high << 64) | (low << (56 - (32 - before_u)))
            }
        };
        Ipv6Addr::from(bits | embedded)
    }

    /// The IPv4 address `v6` embeds if it is in this prefix.
    pub fn extract(&self, v6: Ipv6Addr) -> Option<Ipv4Addr> {
        (u128::from(v6) & mask(self.len) == u128::from(self.prefix)).then(|| extract(v6, self.len))
    }
}

impl core::fmt::Display for Nat64Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.prefix, self.len)
    }
}

/// The IPv4 address at the position of prefix length `len` in `v6`.
fn extract(v6: Ipv6Addr, len: u8) -> Ipv4Addr {
    let bits = u128::from(v6);
    let v4 = match len {
        96 => bits & 0xffff_ffff,
        len => {
            let before_u = u32::from(64 - len);
            let high = (bits >> 64) & ((1u128 << before_u) - 1);
            let low = (bits >> (56 - (32 - before_u))) & ((1u128 << (32 - before_u)) - 1);
            (high << (32 - before_u)) | low
        }
    };
    Ipv4Addr::from(v4 as u32)
}

/// Bits 64..71 of a synthesised address are zero for prefixes shorter than
/// 96 (RFC 6052 §2.2).
fn has_zero_u_octet(v6: Ipv6Addr, len: u8) -> bool {
    len == 96 || v6.octets()[8] == 0
}

fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// RFC 6052 §2.4's table: 192.0.2.33 under each prefix length.
    const RFC6052_EXAMPLES: [(&str, u8, &str); 7] = [
        ("2001:db8::", 32, "2001:db8:c000:221::"),
        ("2001:db8:100::", 40, "2001:db8:1c0:2:21::"),
        ("2001:db8:122::", 48, "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::", 56, "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::", 64, "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::", 96, "2001:db8:122:344::192.0.2.33"),
        ("64:ff9b::", 96, "64:ff9b::192.0.2.33"),
    ];

    #[test]
    fn synthesis_and_extraction_follow_rfc_6052() {
        let v4 = Ipv4Addr::new(192, 0, 2, 33);
        for (prefix, len, want) in RFC6052_EXAMPLES {
            let p = Nat64Prefix::new(v6(prefix), len).unwrap();
            assert_eq!(p.synthesize(v4), v6(want), "/{len}");
            assert_eq!(p.extract(v6(want)), Some(v4), "/{len}");
        }
        assert_eq!(Nat64Prefix::WELL_KNOWN.to_string(), "64:ff9b::/96");
        assert!(Nat64Prefix::new(v6("2001:db8::"), 33).is_none());
        assert_eq!(Nat64Prefix::WELL_KNOWN.extract(v6("2001:db8::1")), None);
    }

    fn any_prefix() -> impl Strategy<Value = Nat64Prefix> {
        (any::<u128>(), prop::sample::select(PREFIX_LENGTHS.to_vec()))
            .prop_map(|(bits, len)| Nat64Prefix::new(Ipv6Addr::from(bits), len).unwrap())
    }

    proptest! {
        /// Synthesis keeps the prefix, zeroes the "u" octet below /96, and
        /// extraction gives the IPv4 address back.
        #[test]
        fn synthesis_round_trips(p in any_prefix(), v4 in any::<u32>()) {
            let v4 = Ipv4Addr::from(v4);
            let s = p.synthesize(v4);
            prop_assert_eq!(p.extract(s), Some(v4));
            prop_assert_eq!(u128::from(s) & mask(p.len()), u128::from(p.prefix()));
            if p.len() < 96 {
                prop_assert_eq!(s.octets()[8], 0);
            }
            // Distinct IPv4 addresses stay distinct.
            let other = Ipv4Addr::from(u32::from(v4) ^ 1);
            prop_assert_ne!(p.synthesize(other), s);
        }

        /// The network's own answer (.170 and .171 under its prefix) gives
        /// its prefix back, whatever the prefix.
        #[test]
        fn discovery_recovers_any_prefix(p in any_prefix(), reversed in any::<bool>()) {
            let mut answer: Vec<IpAddr> =
                WELL_KNOWN_V4.iter().map(|w| IpAddr::V6(p.synthesize(*w))).collect();
            if reversed {
                answer.reverse();
            }
            prop_assert_eq!(Nat64Prefix::discover(&answer), Some(p));
        }

        /// Any answer (unrelated addresses, IPv4 ones, maybe one record
        /// of a NAT64): no panic; a prefix is found exactly when a record is
        /// there, and it embeds a well-known address of the answer.
        #[test]
        fn discovery_of_any_answer(
            noise in prop::collection::vec(any::<u128>(), 0..6),
            v4 in prop::collection::vec(any::<u32>(), 0..2),
            record in prop::option::of((any_prefix(), 0..2usize, 0..8usize)),
        ) {
            let mut answer: Vec<IpAddr> =
                noise.into_iter().map(|b| IpAddr::V6(Ipv6Addr::from(b))).collect();
            answer.extend(v4.into_iter().map(|b| IpAddr::V4(Ipv4Addr::from(b))));
            if let Some((p, which, at)) = record {
                let at = at.min(answer.len());
                answer.insert(at, IpAddr::V6(p.synthesize(WELL_KNOWN_V4[which])));
            }
            let found = Nat64Prefix::discover(&answer);
            prop_assert_eq!(found.is_some(), record.is_some());
            if let Some(p) = found {
                let embeds = answer.iter().any(|ip| match ip {
                    IpAddr::V6(v6) => p.extract(*v6).is_some_and(|v4| WELL_KNOWN_V4.contains(&v4)),
                    IpAddr::V4(_) => false,
                });
                prop_assert!(embeds, "{} embeds no well-known address of {:?}", p, answer);
            }
        }
    }

    #[test]
    fn discovery_finds_the_length_where_the_well_known_address_is() {
        for (prefix, len, _) in RFC6052_EXAMPLES {
            let p = Nat64Prefix::new(v6(prefix), len).unwrap();
            let answer: Vec<IpAddr> = WELL_KNOWN_V4
                .iter()
                .map(|w| IpAddr::V6(p.synthesize(*w)))
                .collect();
            assert_eq!(Nat64Prefix::discover(&answer), Some(p), "/{len}");
            // One record is enough.
            assert_eq!(Nat64Prefix::discover(&answer[1..]), Some(p), "/{len}");
        }
        // No NAT64: nothing, an A answer, an unrelated AAAA.
        assert_eq!(Nat64Prefix::discover(&[]), None);
        assert_eq!(
            Nat64Prefix::discover(&["192.0.0.170".parse().unwrap()]),
            None
        );
        assert_eq!(
            Nat64Prefix::discover(&["2001:db8::1".parse().unwrap()]),
            None
        );
    }

    #[test]
    fn an_ambiguous_answer_is_settled_by_the_other_record() {
        // 2001:db8:c000:aa::c000:aa holds 192.0.0.170 at /32 and at /96;
        // its .171 twin under the /32 prefix settles it.
        let p32 = Nat64Prefix::new(v6("2001:db8::"), 32).unwrap();
        let a = Ipv6Addr::from(u128::from(p32.synthesize(WELL_KNOWN_V4[0])) | 0xc000_00aa);
        let b = p32.synthesize(WELL_KNOWN_V4[1]);
        assert_eq!(extract(a, 96), WELL_KNOWN_V4[0]);
        assert_eq!(extract(a, 32), WELL_KNOWN_V4[0]);
        assert_eq!(
            Nat64Prefix::discover(&[IpAddr::V6(a), IpAddr::V6(b)]),
            Some(p32)
        );
    }
}
