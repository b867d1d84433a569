//! Candidate ordering, after Mars's `SimpleIPPortSort::__SortbyBanned`.
//!
//! 1. Shuffle (ties in everything below are broken at random).
//! 2. Split into endpoints with a record ("history") and without ("new").
//! 3. Sort history by (failures asc, last failure asc — never first, last
//!    success desc — never last); the sort is stable, so the shuffle decides
//!    ties.
//! 4. Merge. Mars HEAD interleaves IPv6 and IPv4, IPv6 first: history is
//!    interleaved by family, and each slot of a family takes history's front
//!    (if it is of that family) or that family's next new endpoint, at random
//!    weighted by how many of each remain. Mars v1.3 only mixes history and new
//!    at random, weighted the same way.
//!    stn (`first_family_by_history`) interleaves as RFC 8305 §4 does: each
//!    family's list is that merge of its own history and new endpoints,
//!    and the first family is the one whose best endpoint has fewer recent
//!    failures, IPv6 on a tie (RFC 6724's default preference); then one of
//!    each in turn. Where IPv6 is broken, its endpoints collect failures
//!    and IPv4 goes first, so a race no longer waits a stagger on IPv6 for
//!    every connect. With one family only the order is Mars's.
//! 5. Mars HEAD spreads equal IPs: where two neighbours share an IP, the next
//!    entry with a different IP moves forward. Mars runs this pass before
//!    step 2, where the merge can undo it; stn runs it last so it holds.

use std::collections::VecDeque;

use super::EndpointHistory;
use crate::net::{IpAddr, SocketAddr};
use crate::rng::Rng;
use crate::time::Instant;

fn is_v6(addr: &SocketAddr) -> bool {
    // Mars tells families apart by a '.' in the text form, so v4-mapped IPv6
    // addresses count as IPv4; `to_canonical` does the same.
    matches!(addr.ip().to_canonical(), IpAddr::V6(_))
}

/// Takes the front of `a` or `b`, at random weighted by their lengths (Mars
/// `__PickIpItemRandom`). Does nothing when both are empty.
fn pick_weighted(
    out: &mut Vec<SocketAddr>,
    a: &mut VecDeque<SocketAddr>,
    b: &mut VecDeque<SocketAddr>,
    rng: &mut Rng,
) {
    let total = (a.len() + b.len()) as u64;
    if total == 0 {
        return;
    }
    let from_a = rng.below(total) < a.len() as u64;
    let picked = if from_a { a.pop_front() } else { b.pop_front() };
    out.extend(picked);
}

/// Orders already-filtered candidates (see the module docs).
pub(super) fn sort(
    history: &EndpointHistory,
    now: Instant,
    mut items: Vec<SocketAddr>,
    rng: &mut Rng,
) -> Vec<SocketAddr> {
    let config = &history.config;
    rng.shuffle(&mut items);

    let mut known = Vec::new();
    let mut fresh = Vec::new();
    for addr in items {
        match history.live.get(&addr) {
            Some(entry) => known.push((entry.sort_key(config, now), addr)),
            None => fresh.push(addr),
        }
    }
    known.sort_by_key(|a| a.0);
    let known: Vec<SocketAddr> = known.into_iter().map(|(_, addr)| addr).collect();

    let mut out = Vec::with_capacity(known.len() + fresh.len());
    if config.interleave_v6_v4 && config.first_family_by_history {
        merge_by_family(&mut out, known, fresh, |a| history.failures(*a, now), rng);
    } else if config.interleave_v6_v4 {
        merge_interleaved(&mut out, known, fresh, rng);
    } else {
        let mut known = VecDeque::from(known);
        let mut fresh = VecDeque::from(fresh);
        while !known.is_empty() || !fresh.is_empty() {
            pick_weighted(&mut out, &mut known, &mut fresh, rng);
        }
    }
    if config.avoid_adjacent_duplicates {
        spread_equal_ips(&mut out);
    }
    out
}

/// Mars HEAD's IPv6-first merge of sorted history and new endpoints.
fn merge_interleaved(
    out: &mut Vec<SocketAddr>,
    known: Vec<SocketAddr>,
    fresh: Vec<SocketAddr>,
    rng: &mut Rng,
) {
    let (known_v6, known_v4): (Vec<_>, Vec<_>) = known.into_iter().partition(is_v6);
    let mut known = VecDeque::with_capacity(known_v6.len() + known_v4.len());
    let mut v4_iter = known_v4.into_iter();
    for v6 in known_v6 {
        known.push_back(v6);
        known.extend(v4_iter.next());
    }
    known.extend(v4_iter);

    let (fresh_v6, fresh_v4): (VecDeque<_>, VecDeque<_>) = fresh.into_iter().partition(is_v6);
    let (mut fresh_v6, mut fresh_v4) = (fresh_v6, fresh_v4);

    let mut want_v6 = true;
    while !known.is_empty() || !fresh_v6.is_empty() || !fresh_v4.is_empty() {
        let fresh_family = if want_v6 {
            &mut fresh_v6
        } else {
            &mut fresh_v4
        };
        if known.front().is_some_and(|a| is_v6(a) == want_v6) {
            pick_weighted(out, &mut known, fresh_family, rng);
        } else {
            // Mars leaves the slot empty when this family has nothing left; the
            // loop still terminates because the other family's slot is next.
            out.extend(fresh_family.pop_front());
        }
        want_v6 = !want_v6;
    }
}

/// RFC 8305 §4's interleave (see the module docs): `failures` counts an
/// endpoint's recent failures.
fn merge_by_family(
    out: &mut Vec<SocketAddr>,
    known: Vec<SocketAddr>,
    fresh: Vec<SocketAddr>,
    failures: impl Fn(&SocketAddr) -> u32,
    rng: &mut Rng,
) {
    let (known_v6, known_v4): (VecDeque<_>, VecDeque<_>) = known.into_iter().partition(is_v6);
    let (fresh_v6, fresh_v4): (VecDeque<_>, VecDeque<_>) = fresh.into_iter().partition(is_v6);
    let v6 = merge_family(known_v6, fresh_v6, rng);
    let v4 = merge_family(known_v4, fresh_v4, rng);
    let head_failures = |list: &[SocketAddr]| list.first().map_or(u32::MAX, &failures);
    let (first, second) = if head_failures(&v4) < head_failures(&v6) {
        (v4, v6)
    } else {
        (v6, v4)
    };
    let mut second = second.into_iter();
    for a in first {
        out.push(a);
        out.extend(second.next());
    }
    out.extend(second);
}

/// One family's endpoints: its history front or its next new endpoint at
/// each slot, at random weighted by how many of each remain (a family's
/// slots in Mars's merge).
fn merge_family(
    mut known: VecDeque<SocketAddr>,
    mut fresh: VecDeque<SocketAddr>,
    rng: &mut Rng,
) -> Vec<SocketAddr> {
    let mut out = Vec::with_capacity(known.len() + fresh.len());
    while !known.is_empty() || !fresh.is_empty() {
        if known.is_empty() {
            out.extend(fresh.pop_front());
        } else {
            pick_weighted(&mut out, &mut known, &mut fresh, rng);
        }
    }
    out
}

/// Where neighbours share an IP, moves the next entry with a different IP
/// forward (keeping the rest in order). Gives up once only one IP is left.
fn spread_equal_ips(items: &mut [SocketAddr]) {
    for i in 1..items.len() {
        let prev = items[i - 1].ip();
        if items[i].ip() != prev {
            continue;
        }
        match (i + 1..items.len()).find(|&j| items[j].ip() != prev) {
            Some(j) => items[i..=j].rotate_right(1),
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spread_equal_ips;
    use crate::net::SocketAddr;

    fn addrs(xs: &[&str]) -> Vec<SocketAddr> {
        xs.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn spreading_moves_the_next_different_ip_forward() {
        let mut v = addrs(&[
            "1.1.1.1:1",
            "1.1.1.1:2",
            "1.1.1.1:3",
            "2.2.2.2:1",
            "3.3.3.3:1",
        ]);
        spread_equal_ips(&mut v);
        assert_eq!(
            v,
            addrs(&[
                "1.1.1.1:1",
                "2.2.2.2:1",
                "1.1.1.1:2",
                "3.3.3.3:1",
                "1.1.1.1:3"
            ])
        );
    }

    #[test]
    fn spreading_gives_up_when_only_one_ip_is_left() {
        let mut v = addrs(&["2.2.2.2:1", "1.1.1.1:1", "1.1.1.1:2", "1.1.1.1:3"]);
        spread_equal_ips(&mut v);
        assert_eq!(
            v,
            addrs(&["2.2.2.2:1", "1.1.1.1:1", "1.1.1.1:2", "1.1.1.1:3"])
        );
    }
}
