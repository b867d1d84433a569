//! NAT64 on IPv6-only networks: discovering the network's prefix (RFC 7050)
//! and synthesising IPv6 addresses for IPv4 ones (RFC 6052).
//!
//! On an IPv6-only network (a mobile carrier's, Apple's App Review
//! network) an IPv4 address cannot be connected to directly; a NAT64
//! translator reaches it at the IPv4 address embedded in the network's
//! NAT64 prefix. A DNS64 resolver synthesises such addresses for host
//! names it can, but not for IPv4 literals (fixed IPs, backup IPs) nor for
//! A records that did not come from it (an app's own DNS, a DNS64 that is
//! bypassed), which is what this module is for, as Mars's
//! `nat64_prefix_util.cc` is:
//!
//! - [`Nat64Prefix::discover`] takes the AAAA answers for `ipv4only.arpa`
//!   (whose only A records are the well-known 192.0.0.170 and .171, RFC
//!   7050 §2) and finds where the well-known address sits in them: that
//!   position is the prefix length (RFC 6052 §2.2: 32, 40, 48, 56, 64 or
//!   96 bits).
//! - [`Nat64Prefix::synthesize`] embeds an IPv4 address after the prefix
//!   (skipping bits 64..71, the "u" octet, for the shorter prefixes).
//! - [`Nat64Map`] is what an executor keeps per client: whether the
//!   network is IPv6-only ([`LocalStack`]), the prefix looked up and until
//!   when it stands, and so what a connect to an address goes to.
//!
//! Mars guesses the prefix length from how many trailing zero bytes the
//! answer has, and on iOS ≥ 9.2 asks the system to synthesise per address;
//! here the length is where the well-known address is found, which is
//! what RFC 7050 §3 says to do, and an answer in which it is found at more
//! than one length is settled by the other answer (.170 and .171 must
//! agree).
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
//! use stn_proto::nat64::Nat64Prefix;
//!
//! let answer: Vec<IpAddr> = vec!["64:ff9b::c000:aa".parse().unwrap(), "64:ff9b::c000:ab".parse().unwrap()];
//! let prefix = Nat64Prefix::discover(&answer).unwrap();
//! assert_eq!(prefix.len(), 96);
//! let v6 = prefix.synthesize(Ipv4Addr::new(192, 0, 2, 33));
//! assert_eq!(v6, "64:ff9b::192.0.2.33".parse::<Ipv6Addr>().unwrap());
//! ```

mod map;
mod prefix;

pub use map::{LocalStack, Lookup, Nat64Map, Target, NO_PREFIX_TTL, PREFIX_TTL};
pub use prefix::{Nat64Prefix, IPV4ONLY_ARPA, PREFIX_LENGTHS, WELL_KNOWN_V4};
