//! Tests of the ban rule, ordering, network switching and persistence.

use std::collections::BTreeMap;

use proptest::prelude::*;
use quickcheck::quickcheck;

use super::history::collapse;
use super::*;
use crate::net::{IpAddr, SocketAddr};
use crate::rng::Rng;
use crate::test_util::secs;
use crate::time::{Duration, Instant};

fn a(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn mins(m: u64) -> Duration {
    Duration::from_secs(60 * m)
}

const T0: Instant = Instant::from_secs(1_000);
const NS: Duration = Duration::from_nanos(1);

fn hist(p: Profile) -> EndpointHistory {
    EndpointHistory::new(BanConfig::for_profile(p))
}

/// Records `n` failures of `addr`, 11 s apart starting at `start`; returns the
/// time of the last one.
fn fail_n(h: &mut EndpointHistory, addr: SocketAddr, start: Instant, n: u32) -> Instant {
    let mut t = start;
    for i in 0..n {
        if i > 0 {
            t += secs(11);
        }
        assert!(h.record(t, addr, false), "failure {i} not recorded");
    }
    t
}

fn sorted(mut v: Vec<SocketAddr>) -> Vec<SocketAddr> {
    v.sort();
    v
}

// ---------------------------------------------------------------- ban rule

#[test]
fn two_failures_do_not_ban_three_do() {
    for p in Profile::ALL {
        let mut h = hist(p);
        let x = a("10.0.0.1:80");
        let t = fail_n(&mut h, x, T0, 2);
        assert!(!h.is_banned(t, x), "{p}: banned after 2 failures");
        let t = t + secs(11);
        h.record(t, x, false);
        assert!(h.is_banned(t, x), "{p}: not banned after 3 failures");
        assert_eq!(h.ban_until(t, x), Some(t + mins(6)), "{p}");
    }
}

#[test]
fn ban_ends_exactly_six_minutes_after_the_last_failure() {
    let mut h = hist(Profile::Mars);
    let x = a("10.0.0.1:80");
    let last = fail_n(&mut h, x, T0, 3);
    assert!(h.is_banned(last + mins(6) - NS, x));
    assert!(!h.is_banned(last + mins(6), x));
    assert_eq!(h.next_expiry(last), Some(last + mins(6)));
    assert_eq!(h.next_expiry(last + mins(6)), None);
}

#[test]
fn three_failures_spread_over_eight_results_still_ban() {
    let mut h = hist(Profile::Mars);
    let x = a("10.0.0.1:80");
    let mut t = T0;
    for fail in [false, true, false, false, true, false, false, true] {
        t += secs(11);
        assert!(h.record(t, x, !fail));
    }
    assert!(h.is_banned(t, x));
    t += secs(11);
    h.record(t, x, true);
    assert!(h.is_banned(t, x), "mars: still 3 failures in the last 8");
    t += secs(11);
    h.record(t, x, true);
    assert!(!h.is_banned(t, x), "oldest failure left the window");
}

#[test]
fn mars_extends_bans_per_trailing_failure_up_to_thirty_minutes() {
    for (n, expect) in [
        (3, 6),
        (4, 12),
        (5, 18),
        (6, 24),
        (7, 30),
        (8, 30),
        (12, 30),
    ] {
        let mut h = hist(Profile::Mars);
        let x = a("10.0.0.1:80");
        let last = fail_n(&mut h, x, T0, n);
        assert_eq!(
            h.ban_until(last, x),
            Some(last + mins(expect)),
            "{n} failures"
        );
        assert!(h.is_banned(last + mins(expect) - NS, x));
        assert!(!h.is_banned(last + mins(expect), x));
    }
}

#[test]
fn mars_2017_ban_is_six_minutes_fixed() {
    for n in [3, 4, 8, 12] {
        let mut h = hist(Profile::Mars2017);
        let x = a("10.0.0.1:80");
        let last = fail_n(&mut h, x, T0, n);
        assert_eq!(h.ban_until(last, x), Some(last + mins(6)), "{n} failures");
    }
}

#[test]
fn a_success_breaks_the_trailing_run_but_mars_stays_banned() {
    let x = a("10.0.0.1:80");
    let mut h = hist(Profile::Mars);
    let last = fail_n(&mut h, x, T0, 5);
    let t = last + secs(1);
    assert!(h.record(t, x, true));
    // 5 failures in the window, trailing run 0: the plain 6 min ban.
    assert_eq!(h.ban_until(t, x), Some(last + mins(6)));

    let mut s = hist(Profile::Stn);
    let last = fail_n(&mut s, x, T0, 5);
    assert_eq!(s.ban_until(last, x), Some(last + mins(18)));
    assert!(
        s.record(last + secs(1), x, true),
        "success after failure bypasses the rate limit"
    );
    assert!(
        !s.is_banned(last + secs(1), x),
        "stn: a success lifts the ban"
    );
}

#[test]
fn stn_success_bypasses_rate_limit_only_after_a_failure() {
    let x = a("10.0.0.1:80");
    let mut h = hist(Profile::Stn);
    assert!(h.record(T0, x, true));
    assert!(
        !h.record(T0 + secs(1), x, true),
        "success after success is rate limited"
    );
    assert!(h.record(T0 + secs(2), x, false));
    assert!(
        h.record(T0 + secs(3), x, true),
        "success after failure is taken"
    );
    assert!(
        !h.record(T0 + secs(4), x, false),
        "failure rate limit unchanged"
    );
}

#[test]
fn updates_are_rate_limited_per_endpoint_and_kind() {
    for p in [Profile::Mars2017, Profile::Mars] {
        let x = a("10.0.0.1:80");
        let y = a("10.0.0.1:81");
        let mut h = hist(p);
        assert!(h.record(T0, x, false));
        assert!(
            !h.record(T0 + secs(10), x, false),
            "exactly 10 s is too soon"
        );
        assert!(h.record(T0 + secs(10) + NS, x, false));
        assert!(
            h.record(T0 + secs(10) + NS, y, false),
            "other port: own limit"
        );
        assert!(
            h.record(T0 + secs(11), x, true),
            "successes limited separately"
        );
        assert!(!h.record(T0 + secs(21), x, true));
        assert!(h.record(T0 + secs(21) + NS, x, true));
        assert_eq!(h.endpoint(x).unwrap().records, 0b1100);
    }
}

#[test]
fn parallel_failures_of_one_outage_count_once() {
    // Four identical candidates raced: all fail within a second.
    let x = a("10.0.0.1:80");
    let mut h = hist(Profile::Mars);
    let accepted = (0..4)
        .filter(|i| h.record(T0 + Duration::from_millis(250 * i), x, false))
        .count();
    assert_eq!(accepted, 1);
    assert!(!h.is_banned(T0 + secs(1), x));
}

#[test]
fn server_ban_covers_every_port_of_the_ip_for_its_duration() {
    let mut h = hist(Profile::Mars);
    let (x, y, z) = (a("10.0.0.1:80"), a("10.0.0.1:443"), a("10.0.0.2:80"));
    let d = h.config().server_ban_time;
    assert_eq!(d, mins(30));
    h.server_ban(T0, x.ip(), d);
    assert!(h.is_banned(T0, x) && h.is_banned(T0, y) && !h.is_banned(T0, z));
    assert_eq!(h.ban_until(T0, y), Some(T0 + mins(30)));
    assert!(h.is_banned(T0 + mins(30) - NS, y));
    assert!(!h.is_banned(T0 + mins(30), y));
    // A shorter later ban does not cut a longer one.
    h.server_ban(T0 + mins(1), x.ip(), mins(1));
    assert_eq!(h.ban_until(T0 + mins(1), x), Some(T0 + mins(30)));
    // v4-mapped form of the same IP is the same IP.
    assert!(h.is_banned(T0, a("[::ffff:10.0.0.1]:80")));
    assert_eq!(
        BanConfig::for_profile(Profile::Mars2017).server_ban_time,
        mins(6)
    );
}

#[test]
fn history_ban_and_server_ban_combine_to_the_later_end() {
    let mut h = hist(Profile::Mars);
    let x = a("10.0.0.1:80");
    let last = fail_n(&mut h, x, T0, 3);
    h.server_ban(last, x.ip(), mins(2));
    assert_eq!(h.ban_until(last, x), Some(last + mins(6)));
    assert_eq!(h.next_expiry(last), Some(last + mins(2)));
}

#[test]
fn disabled_config_never_bans_but_still_orders_by_history() {
    let mut h = EndpointHistory::new(BanConfig::disabled());
    let (x, y) = (a("10.0.0.1:80"), a("10.0.0.2:80"));
    let last = fail_n(&mut h, x, T0, 8);
    h.record(last, y, true);
    h.server_ban(last, y.ip(), mins(30));
    assert!(!h.is_banned(last, x) && !h.is_banned(last, y));
    assert_eq!(h.next_expiry(last), None);
    for seed in 0..20 {
        assert_eq!(h.order(last, &[x, y], &mut Rng::new(seed)), vec![y, x]);
    }
}

#[test]
fn stn_failures_decay_so_a_recovered_endpoint_needs_fresh_failures() {
    let x = a("10.0.0.1:80");
    let run = |p: Profile| {
        let mut h = hist(p);
        let last = fail_n(&mut h, x, T0, 3);
        let later = last + mins(61);
        h.record(later, x, false);
        h.ban_until(later, x).map(|end| end - later)
    };
    assert_eq!(
        run(Profile::Mars),
        Some(mins(12)),
        "mars: old failures + 1 = 4 in a row"
    );
    assert_eq!(
        run(Profile::Stn),
        None,
        "stn: two of the three old failures decayed"
    );
}

#[test]
fn stn_decay_never_shortens_a_running_ban() {
    let x = a("10.0.0.1:80");
    for n in 3..=9 {
        let mut m = hist(Profile::Mars);
        let mut s = hist(Profile::Stn);
        let lm = fail_n(&mut m, x, T0, n);
        let ls = fail_n(&mut s, x, T0, n);
        assert_eq!(m.ban_until(lm, x), s.ban_until(ls, x), "{n}");
        let end = m.ban_until(lm, x).unwrap();
        assert!(s.is_banned(end - NS, x) && !s.is_banned(end, x));
    }
}

#[test]
fn dead_endpoint_stays_at_max_ban_under_stn() {
    // Retried right when each ban ends, a dead endpoint climbs to 30 min.
    let x = a("10.0.0.1:80");
    let mut h = hist(Profile::Stn);
    let mut t = fail_n(&mut h, x, T0, 3);
    let mut lengths = Vec::new();
    for _ in 0..6 {
        let end = h.ban_until(t, x).unwrap();
        lengths.push((end - t).as_secs() / 60);
        t = end;
        assert!(h.record(t, x, false));
    }
    assert_eq!(lengths, vec![6, 12, 18, 24, 30, 30]);
}

// ------------------------------------------------------------- ordering

#[test]
fn order_never_returns_empty_keeps_the_soonest_ending() {
    let mut h = hist(Profile::Mars);
    let (x, y) = (a("10.0.0.1:80"), a("10.0.0.2:80"));
    fail_n(&mut h, x, T0, 3); // 6 min ban from T0 + 22 s
    let last = fail_n(&mut h, y, T0 + secs(22), 5); // 18 min ban
    assert!(h.is_banned(last, x) && h.is_banned(last, y));
    let out = h.order(last, &[y, x, y, x], &mut Rng::new(1));
    assert_eq!(out, vec![x, x], "all copies of the soonest-ending one");
    assert_eq!(h.order(last, &[y], &mut Rng::new(1)), vec![y]);
    assert!(h.order(last, &[], &mut Rng::new(1)).is_empty());
}

#[test]
fn order_drops_banned_endpoints_when_others_remain() {
    let mut h = hist(Profile::Mars2017);
    let (x, y, z) = (a("10.0.0.1:80"), a("10.0.0.2:80"), a("10.0.0.3:80"));
    let last = fail_n(&mut h, x, T0, 3);
    h.server_ban(last, y.ip(), mins(6));
    assert_eq!(h.order(last, &[x, y, z, x], &mut Rng::new(3)), vec![z]);
}

#[test]
fn ipv6_and_ipv4_alternate_starting_with_ipv6() {
    let h = hist(Profile::Mars);
    let v4 = [a("10.0.0.1:80"), a("10.0.0.2:80"), a("10.0.0.3:80")];
    let v6 = [a("[2001:db8::1]:80"), a("[2001:db8::2]:80")];
    let input: Vec<_> = v4.iter().chain(&v6).copied().collect();
    for seed in 0..50 {
        let out = h.order(T0, &input, &mut Rng::new(seed));
        let fams: Vec<bool> = out.iter().map(|x| x.is_ipv6()).collect();
        assert_eq!(fams, vec![true, false, true, false, false], "seed {seed}");
        assert_eq!(sorted(out), sorted(input.clone()));
    }
}

#[test]
fn stn_puts_the_family_that_failed_less_first() {
    let v4 = [a("10.0.0.1:80"), a("10.0.0.2:80")];
    let v6 = [a("[2001:db8::1]:80"), a("[2001:db8::2]:80")];
    let input: Vec<_> = v6.iter().chain(&v4).copied().collect();
    // Without history, as Mars: IPv6 first, one of each in turn.
    let fresh = hist(Profile::Stn);
    for seed in 0..30 {
        let fams: Vec<bool> = fresh
            .order(T0, &input, &mut Rng::new(seed))
            .iter()
            .map(|x| x.is_ipv6())
            .collect();
        assert_eq!(fams, vec![true, false, true, false], "seed {seed}");
    }
    // IPv6 black-holed: both v6 endpoints failed once, IPv4 connected.
    for (profile, v6_first) in [(Profile::Mars, true), (Profile::Stn, false)] {
        let mut h = hist(profile);
        for x in v6 {
            h.record(T0, x, false);
        }
        h.record(T0, v4[0], true);
        for seed in 0..30 {
            let out = h.order(T0 + secs(1), &input, &mut Rng::new(seed));
            assert_eq!(
                out[0].is_ipv6(),
                v6_first,
                "{profile:?} seed {seed}: {out:?}"
            );
            // (Mars's merge can put two of a family together: a slot
            // takes a new endpoint when history's front is the other's.)
            let fams: Vec<bool> = out.iter().map(|x| x.is_ipv6()).collect();
            if profile == Profile::Stn {
                assert!(
                    fams.windows(2).all(|w| w[0] != w[1]),
                    "interleaved: {out:?}"
                );
            }
        }
    }
    // A tie (both families' best failed once): IPv6 first.
    let mut h = hist(Profile::Stn);
    h.record(T0, v6[0], false);
    h.record(T0, v4[0], false);
    let out = h.order(T0 + secs(1), &[v6[0], v4[0]], &mut Rng::new(1));
    assert!(out[0].is_ipv6());
}

#[test]
fn one_family_orders_as_without_the_family_rule() {
    // The rule must not change anything for IPv4-only (or IPv6-only)
    // candidates: same order, same random draws.
    let with = BanConfig::for_profile(Profile::Stn);
    let without = BanConfig {
        first_family_by_history: false,
        ..with.clone()
    };
    for family in ["10.0.0.", "[2001:db8::"] {
        let addrs: Vec<SocketAddr> = (1..=6)
            .map(|i| {
                let text = if family.starts_with('[') {
                    format!("{family}{i}]:80")
                } else {
                    format!("{family}{i}:80")
                };
                a(&text)
            })
            .collect();
        for seed in 0..40u64 {
            let mut h1 = EndpointHistory::new(with.clone());
            let mut h2 = EndpointHistory::new(without.clone());
            for (i, x) in addrs.iter().enumerate() {
                if (seed >> i) & 1 == 1 {
                    let ok = (seed >> (i + 8)) & 1 == 1;
                    h1.record(T0, *x, ok);
                    h2.record(T0, *x, ok);
                }
            }
            let (mut r1, mut r2) = (Rng::new(seed), Rng::new(seed));
            assert_eq!(
                h1.order(T0 + secs(1), &addrs, &mut r1),
                h2.order(T0 + secs(1), &addrs, &mut r2),
                "seed {seed}"
            );
            assert_eq!(r1.below(1 << 40), r2.below(1 << 40), "the same draws");
        }
    }
}

#[test]
fn v4_mapped_addresses_count_as_ipv4() {
    let h = hist(Profile::Mars);
    let input = [a("[::ffff:10.0.0.1]:80"), a("[2001:db8::1]:80")];
    for seed in 0..10 {
        let out = h.order(T0, &input, &mut Rng::new(seed));
        assert_eq!(out, vec![input[1], input[0]]);
    }
}

#[test]
fn mars_2017_does_not_interleave_families() {
    let h = hist(Profile::Mars2017);
    let input = [
        a("10.0.0.1:80"),
        a("10.0.0.2:80"),
        a("[2001:db8::1]:80"),
        a("[2001:db8::2]:80"),
    ];
    let firsts: std::collections::BTreeSet<bool> = (0..64)
        .map(|seed| h.order(T0, &input, &mut Rng::new(seed))[0].is_ipv6())
        .collect();
    assert_eq!(firsts.len(), 2, "either family can come first");
}

#[test]
fn history_sorted_by_failures_then_last_fail_then_last_success() {
    let mut h = hist(Profile::Mars);
    let (clean, old_fail, new_fail, two_fails) = (
        a("10.0.0.1:80"),
        a("10.0.0.2:80"),
        a("10.0.0.3:80"),
        a("10.0.0.4:80"),
    );
    h.record(T0, clean, true);
    h.record(T0, old_fail, false);
    h.record(T0 + secs(1), new_fail, false);
    fail_n(&mut h, two_fails, T0 + secs(1), 2);
    let input = [two_fails, new_fail, old_fail, clean];
    for seed in 0..30 {
        let out = h.order(T0 + secs(30), &input, &mut Rng::new(seed));
        assert_eq!(
            out,
            vec![clean, old_fail, new_fail, two_fails],
            "seed {seed}"
        );
    }
    // Equal failures and fail times: the more recent success first.
    let mut h = hist(Profile::Mars);
    let (p, q) = (a("10.0.0.5:80"), a("10.0.0.6:80"));
    h.record(T0, p, true);
    h.record(T0 + secs(5), q, true);
    for seed in 0..30 {
        assert_eq!(
            h.order(T0 + secs(6), &[p, q], &mut Rng::new(seed)),
            vec![q, p]
        );
    }
}

#[test]
fn duplicates_are_kept_and_spread_apart() {
    let h = hist(Profile::Mars);
    let (x, y) = (a("10.0.0.1:80"), a("10.0.0.2:80"));
    // The benchmark: one IP four times, all kept.
    assert_eq!(h.order(T0, &[x; 4], &mut Rng::new(9)), vec![x; 4]);
    for seed in 0..100 {
        let out = h.order(T0, &[x, x, y, y], &mut Rng::new(seed));
        assert_eq!(sorted(out.clone()), vec![x, x, y, y]);
        assert!(out.windows(2).all(|w| w[0].ip() != w[1].ip()), "{out:?}");
        let out = h.order(T0, &[x, x, x, y], &mut Rng::new(seed));
        assert_eq!(sorted(out.clone()), vec![x, x, x, y]);
        assert!(out[0] != out[1], "first two differ when possible: {out:?}");
    }
}

#[test]
fn ordering_is_deterministic_per_seed_and_varies_across_seeds() {
    let h = hist(Profile::Stn);
    let input: Vec<_> = (1..=6).map(|i| a(&format!("10.0.0.{i}:80"))).collect();
    let first = h.order(T0, &input, &mut Rng::new(42));
    assert_eq!(h.order(T0, &input, &mut Rng::new(42)), first);
    let distinct: std::collections::BTreeSet<_> = (0..20)
        .map(|s| h.order(T0, &input, &mut Rng::new(s)))
        .collect();
    assert!(distinct.len() > 10);
}

#[test]
fn memory_is_bounded_by_max_entries() {
    let mut h = EndpointHistory::new(BanConfig {
        max_entries: 4,
        ..BanConfig::default()
    });
    for i in 0..10u64 {
        let x = a(&format!("10.0.0.{i}:80"));
        h.record(T0 + secs(i), x, false);
    }
    assert_eq!(h.len(), 4);
    assert!(h.endpoint(a("10.0.0.9:80")).is_some());
    assert!(h.endpoint(a("10.0.0.0:80")).is_none(), "oldest evicted");
}

// ------------------------------------------------- networks, persistence

#[test]
fn collapse_groups_of_eight_results() {
    let h: u64 = 0x01 | (0x80 << 8) | (0xFF << 56);
    assert_eq!(collapse(h, ReloadPolicy::OrderingOnly), 0b1000_0011);
    assert_eq!(collapse(h, ReloadPolicy::Mars), 0b1100_0001);
}

#[test]
fn switching_network_clears_bans_and_restores_per_label_history() {
    for p in Profile::ALL {
        let mut h = hist(p);
        let x = a("10.0.0.1:80");
        h.switch_network(T0, "wifi:home");
        let last = fail_n(&mut h, x, T0, 3);
        assert!(h.is_banned(last, x));
        let stats = h.endpoint(x).unwrap();
        h.switch_network(last, "mobile:46000");
        assert!(!h.is_banned(last, x), "{p}");
        assert!(
            h.endpoint(x).is_none(),
            "{p}: no history on the new network"
        );
        h.switch_network(last, "wifi:home");
        assert!(!h.is_banned(last, x), "{p}: reloaded history does not ban");
        let back = h.endpoint(x).unwrap();
        assert_eq!(back.history, stats.history, "{p}");
        assert_eq!(
            back.records.count_ones(),
            1,
            "{p}: 3 failures collapse to 1 bit"
        );
        assert_eq!(h.network_label(), "wifi:home");
    }
}

#[test]
fn reset_clears_bans_but_keeps_server_bans() {
    let mut h = hist(Profile::Mars);
    let (x, y) = (a("10.0.0.1:80"), a("10.0.0.2:80"));
    let last = fail_n(&mut h, x, T0, 3);
    h.server_ban(last, y.ip(), mins(30));
    h.reset(last);
    assert!(!h.is_banned(last, x));
    assert!(h.is_banned(last, y));
    assert!(h.endpoint(x).is_some(), "history reloaded for ordering");
}

#[test]
fn mars_reloaded_history_counts_toward_bans_stn_does_not() {
    let x = a("10.0.0.1:80");
    // Failures in three different groups of 8 results, none recent.
    let build = |p: Profile| {
        let mut h = hist(p);
        let mut t = T0;
        for i in 0..24u32 {
            h.record(t, x, !matches!(i, 0 | 8 | 16));
            t += secs(11);
        }
        h.reset(t);
        assert!(!h.is_banned(t, x));
        t += secs(11);
        h.record(t, x, false);
        h.is_banned(t, x)
    };
    assert!(
        build(Profile::Mars),
        "mars: 3 collapsed groups + 1 new failure"
    );
    assert!(!build(Profile::Stn), "stn: reloaded bits order only");
}

#[test]
fn export_import_round_trip() {
    let mut h = hist(Profile::Stn);
    let (x, y, z) = (a("10.0.0.1:80"), a("[2001:db8::1]:443"), a("10.0.0.3:8080"));
    h.switch_network(T0, "wifi");
    let t = fail_n(&mut h, x, T0, 3);
    h.record(t, y, true);
    h.switch_network(t, "mobile");
    h.record(t + secs(1), z, false);
    let wall = 1_700_000_000;
    let bytes = h.export(wall);

    let mut fresh = hist(Profile::Stn);
    fresh.switch_network(Instant::from_secs(5), "wifi");
    let n = fresh
        .import(&bytes, wall + 60, Instant::from_secs(5))
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(fresh.endpoint(x).unwrap().history, 0b111);
    assert_eq!(fresh.endpoint(y).unwrap().history, 0);
    assert!(
        !fresh.is_banned(Instant::from_secs(5), x),
        "imports never ban"
    );
    // The reloaded record still orders: y (clean) before x.
    for seed in 0..10 {
        let out = fresh.order(Instant::from_secs(5), &[x, y], &mut Rng::new(seed));
        assert_eq!(out, vec![y, x]);
    }
    fresh.switch_network(Instant::from_secs(6), "mobile");
    assert_eq!(fresh.endpoint(z).unwrap().history, 1);
    // Exporting again gives the same entries (times shifted by the 60 s).
    let again = fresh.export(wall + 60);
    let mut third = hist(Profile::Stn);
    assert_eq!(third.import(&again, wall + 60, T0), Ok(3));
}

#[test]
fn entries_older_than_a_day_are_dropped() {
    let mut h = hist(Profile::Mars);
    let (x, y) = (a("10.0.0.1:80"), a("10.0.0.2:80"));
    h.record(T0, x, false);
    h.record(T0 + Duration::from_secs(3600), y, false);
    let wall = 1_000_000;
    let bytes = h.export(wall); // x is 1 h older than y
    let day = 24 * 3600;
    let mut h2 = hist(Profile::Mars);
    assert_eq!(h2.import(&bytes, wall + day - 3600 - 1, T0), Ok(2));
    let mut h3 = hist(Profile::Mars);
    assert_eq!(h3.import(&bytes, wall + day - 3600, T0), Ok(1));
    assert!(h3.endpoint(x).is_none() && h3.endpoint(y).is_some());
    // From the future (clock went back): dropped, as Mars does.
    let mut h4 = hist(Profile::Mars);
    assert_eq!(h4.import(&bytes, wall - 1, T0), Ok(1));
    assert!(h4.endpoint(y).is_none());
    // Export itself leaves out day-old entries.
    h.record(T0 + Duration::from_secs(3600 + day), a("10.0.0.3:80"), true);
    let mut h5 = hist(Profile::Mars);
    assert_eq!(h5.import(&h.export(wall), wall, T0), Ok(1));
}

#[test]
fn garbage_imports_fail_with_typed_errors_and_change_nothing() {
    let mut h = hist(Profile::Mars);
    h.record(T0, a("10.0.0.1:80"), false);
    let good = h.export(100);
    let before = h.export(100);
    assert_eq!(h.import(b"", 100, T0), Err(ImportError::Truncated));
    assert_eq!(h.import(b"XXXX\x01", 100, T0), Err(ImportError::BadMagic));
    assert_eq!(
        h.import(b"STNH\x09rest", 100, T0),
        Err(ImportError::UnsupportedVersion(9))
    );
    assert_eq!(
        h.import(&good[..good.len() - 1], 100, T0),
        Err(ImportError::Checksum)
    );
    let mut flipped = good.clone();
    flipped[10] ^= 0x40;
    assert_eq!(h.import(&flipped, 100, T0), Err(ImportError::Checksum));
    let mut longer = good.clone();
    longer.push(0);
    assert!(h.import(&longer, 100, T0).is_err());

    let seal = |body: &[u8]| {
        let mut v = body.to_vec();
        let c = super::persist::checksum_for_tests(&v);
        v.extend_from_slice(&c.to_be_bytes());
        v
    };
    assert_eq!(
        h.import(&seal(b"STNH\x01\xff\xff"), 100, T0),
        Err(ImportError::TooManyNetworks(65535))
    );
    assert_eq!(
        h.import(&seal(b"STNH\x01\x00\x01\x00\x00\x01\x05"), 100, T0),
        Err(ImportError::BadFamily(5))
    );
    assert_eq!(
        h.import(&seal(b"STNH\x01\x00\x01\x01\xff\x00\x00"), 100, T0),
        Err(ImportError::BadLabel)
    );
    assert_eq!(
        h.import(&seal(b"STNH\x01\x00\x00\x07"), 100, T0),
        Err(ImportError::TrailingBytes(1))
    );
    assert_eq!(
        h.import(&seal(b"STNH\x01\x00\x01\x00\x00\x05"), 100, T0),
        Err(ImportError::Truncated)
    );
    let mut many = b"STNH\x01\x00\x02".to_vec();
    many.extend_from_slice(b"\x00\xff\xff\x00\xff\xff");
    assert_eq!(
        h.import(&seal(&many), 100, T0),
        Err(ImportError::TooManyEntries)
    );
    assert_eq!(h.export(100), before);
}

#[test]
fn server_bans_are_bounded() {
    let mut h = EndpointHistory::new(BanConfig {
        max_entries: 2,
        ..BanConfig::default()
    });
    for i in 0..5u64 {
        let ip: IpAddr = format!("10.0.0.{i}").parse().unwrap();
        h.server_ban(T0, ip, mins(10 + i));
    }
    let banned: Vec<u64> = (0..5u64)
        .filter(|i| h.is_banned(T0, a(&format!("10.0.0.{i}:1"))))
        .collect();
    assert_eq!(banned, vec![3, 4], "the longest bans are kept");
}

#[test]
fn networks_with_overlong_labels_are_not_exported() {
    let mut h = hist(Profile::Stn);
    let long = "x".repeat(MAX_LABEL_LEN + 1);
    h.switch_network(T0, &long);
    h.record(T0, a("10.0.0.1:80"), false);
    h.switch_network(T0, "ok");
    h.record(T0, a("10.0.0.2:80"), false);
    let mut copy = hist(Profile::Stn);
    assert_eq!(copy.import(&h.export(500), 500, T0), Ok(1));
}

#[test]
fn export_is_deterministic_and_versioned() {
    let build = || {
        let mut h = hist(Profile::Stn);
        h.record(T0, a("10.0.0.2:80"), false);
        h.record(T0, a("[2001:db8::1]:80"), true);
        h.switch_network(T0, "b");
        h.record(T0, a("10.0.0.1:80"), false);
        h.export(1_000)
    };
    let bytes = build();
    assert_eq!(bytes, build());
    assert_eq!(&bytes[..5], b"STNH\x01");
}

// ----------------------------------------------------- determinism test

#[test]
fn same_inputs_give_the_same_trace() {
    let run = || {
        let mut h = hist(Profile::Stn);
        let mut rng = Rng::new(2026);
        let pool: Vec<_> = [
            "10.0.0.1:80",
            "10.0.0.2:80",
            "[2001:db8::1]:80",
            "[2001:db8::2]:443",
        ]
        .iter()
        .map(|s| a(s))
        .collect();
        let mut script = Rng::new(7);
        let mut trace = Vec::new();
        let mut t = T0;
        for _ in 0..500 {
            t += Duration::from_millis(script.below(60_000));
            let x = pool[script.below(4) as usize];
            match script.below(10) {
                0..=5 => trace.push(format!("{}", h.record(t, x, script.chance(0.4)))),
                6 => h.server_ban(t, x.ip(), mins(1)),
                7 => h.switch_network(t, ["a", "b"][script.below(2) as usize]),
                _ => trace.push(format!("{:?}", h.order(t, &pool, &mut rng))),
            }
            trace.push(format!("{:?}", h.next_expiry(t)));
        }
        (trace, h.export(99_999))
    };
    assert_eq!(run(), run());
}

// ------------------------------------------- proptest: reference model

const POOL: [&str; 5] = [
    "10.0.0.1:80",
    "10.0.0.1:443",
    "10.0.0.2:80",
    "[2001:db8::1]:80",
    "[2001:db8::2]:443",
];

fn pool() -> Vec<SocketAddr> {
    POOL.iter().map(|s| a(s)).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Record(usize, bool),
    Advance(u64),
    ServerBan(usize, u64),
    Order(Vec<usize>, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..POOL.len(), proptest::bool::weighted(0.6)).prop_map(|(i, f)| Op::Record(i, !f)),
        3 => prop_oneof![0u64..15_000, 0u64..600_000, 0u64..2_400_000].prop_map(Op::Advance),
        1 => (0..POOL.len(), 1u64..2_400).prop_map(|(i, s)| Op::ServerBan(i, s)),
        2 => (proptest::collection::vec(0..POOL.len(), 0..8), any::<u64>())
            .prop_map(|(c, s)| Op::Order(c, s)),
    ]
}

/// An independent, deliberately plain implementation of the ban rule.
#[derive(Default)]
struct Model {
    /// Accepted results per endpoint, oldest first (`true` = failure).
    results: BTreeMap<SocketAddr, Vec<bool>>,
    last_fail: BTreeMap<SocketAddr, Instant>,
    last_ok: BTreeMap<SocketAddr, Instant>,
    server: BTreeMap<IpAddr, Instant>,
}

#[derive(Clone, Copy)]
struct Rule {
    extend: bool,
    lifts: bool,
}

impl Model {
    fn record(&mut self, rule: Rule, now: Instant, x: SocketAddr, ok: bool) -> bool {
        let last_was_fail = self.results.get(&x).and_then(|r| r.last()).copied() == Some(true);
        let accept = if ok {
            self.last_ok.get(&x).is_none_or(|t| now - *t > secs(10))
                || (rule.lifts && last_was_fail)
        } else {
            self.last_fail.get(&x).is_none_or(|t| now - *t > secs(10))
        };
        if accept {
            self.results.entry(x).or_default().push(!ok);
            if ok {
                self.last_ok.insert(x, now);
            } else {
                self.last_fail.insert(x, now);
            }
        }
        accept
    }

    fn ban_end(&self, rule: Rule, now: Instant, x: SocketAddr) -> Option<Instant> {
        let server = self.server.get(&x.ip()).copied().filter(|u| *u > now);
        let history = (|| {
            let results = self.results.get(&x)?;
            let last8: Vec<bool> = results.iter().rev().take(8).copied().collect();
            let fails = last8.iter().filter(|f| **f).count();
            if fails < 3 || (rule.lifts && !last8[0]) {
                return None;
            }
            let run = last8.iter().take_while(|f| **f).count() as u64;
            let minutes = if rule.extend {
                (6 + 6 * run.saturating_sub(3)).min(30)
            } else {
                6
            };
            let end = *self.last_fail.get(&x)? + mins(minutes);
            (now < end).then_some(end)
        })();
        history.max(server)
    }
}

fn check_order(
    h: &EndpointHistory,
    now: Instant,
    cands: &[SocketAddr],
    out: &[SocketAddr],
) -> Result<(), TestCaseError> {
    let allowed: Vec<SocketAddr> = cands
        .iter()
        .copied()
        .filter(|x| !h.is_banned(now, *x))
        .collect();
    prop_assert_eq!(out.is_empty(), cands.is_empty());
    if allowed.is_empty() {
        let soonest = cands.iter().filter_map(|x| h.ban_until(now, *x)).min();
        let expect: Vec<_> = cands
            .iter()
            .copied()
            .filter(|x| h.ban_until(now, *x) == soonest)
            .collect();
        prop_assert_eq!(sorted(out.to_vec()), sorted(expect));
    } else {
        prop_assert_eq!(sorted(out.to_vec()), sorted(allowed));
    }
    Ok(())
}

fn run_against_model(config: BanConfig, rule: Rule, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = EndpointHistory::new(config.clone());
    let mut m = Model::default();
    let pool = pool();
    let mut now = T0;
    let mut longest_server = Duration::ZERO;
    for op in ops {
        match op {
            Op::Record(i, ok) => {
                let got = h.record(now, pool[*i], *ok);
                prop_assert_eq!(got, m.record(rule, now, pool[*i], *ok));
            }
            Op::Advance(ms) => now += Duration::from_millis(*ms),
            Op::ServerBan(i, s) => {
                h.server_ban(now, pool[*i].ip(), secs(*s));
                let until = now + secs(*s);
                let slot = m.server.entry(pool[*i].ip()).or_insert(until);
                *slot = (*slot).max(until);
                longest_server = longest_server.max(secs(*s));
            }
            Op::Order(idx, seed) => {
                let cands: Vec<_> = idx.iter().map(|i| pool[*i]).collect();
                let out = h.order(now, &cands, &mut Rng::new(*seed));
                check_order(&h, now, &cands, &out)?;
            }
        }
        for x in &pool {
            prop_assert_eq!(
                h.ban_until(now, *x),
                m.ban_end(rule, now, *x),
                "{} at {:?}",
                x,
                now
            );
        }
        let server_ends = m.server.values().copied().filter(|u| *u > now);
        let expect_next = pool
            .iter()
            .filter_map(|x| m.ban_end(rule, now, *x))
            .chain(server_ends)
            .min();
        prop_assert_eq!(h.next_expiry(now), expect_next);
    }
    // Bans expire: after the longest possible ban with no new failure, none.
    let later = now + config.longest_ban().max(longest_server);
    for x in &pool {
        prop_assert!(!h.is_banned(later, *x));
    }
    prop_assert_eq!(h.next_expiry(later), None);
    let out = h.order(later, &pool, &mut Rng::new(0));
    prop_assert_eq!(sorted(out), sorted(pool.clone()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mars_matches_reference_model(ops in proptest::collection::vec(op(), 1..120)) {
        let rule = Rule { extend: true, lifts: false };
        run_against_model(BanConfig::for_profile(Profile::Mars), rule, &ops)?;
    }

    #[test]
    fn mars_2017_matches_reference_model(ops in proptest::collection::vec(op(), 1..120)) {
        let rule = Rule { extend: false, lifts: false };
        run_against_model(BanConfig::for_profile(Profile::Mars2017), rule, &ops)?;
    }

    #[test]
    fn stn_without_decay_matches_reference_model(ops in proptest::collection::vec(op(), 1..120)) {
        let rule = Rule { extend: true, lifts: true };
        let config = BanConfig { decay_interval: None, ..BanConfig::for_profile(Profile::Stn) };
        run_against_model(config, rule, &ops)?;
    }

    /// Stn only ever bans less than Mars on the same inputs, and its bans
    /// expire too.
    #[test]
    fn stn_bans_are_a_subset_of_mars_bans(ops in proptest::collection::vec(op(), 1..160)) {
        let mut stn = hist(Profile::Stn);
        let mut mars = hist(Profile::Mars);
        let pool = pool();
        let mut now = T0;
        for op in &ops {
            match op {
                Op::Record(i, ok) => {
                    stn.record(now, pool[*i], *ok);
                    mars.record(now, pool[*i], *ok);
                }
                Op::Advance(ms) => now += Duration::from_millis(*ms * 3),
                Op::ServerBan(..) => {}
                Op::Order(idx, seed) => {
                    let cands: Vec<_> = idx.iter().map(|i| pool[*i]).collect();
                    let out = stn.order(now, &cands, &mut Rng::new(*seed));
                    check_order(&stn, now, &cands, &out)?;
                }
            }
            for x in &pool {
                if let Some(end) = stn.ban_until(now, *x) {
                    let mars_end = mars.ban_until(now, *x);
                    prop_assert!(mars_end >= Some(end), "{} stn {:?} mars {:?}", x, end, mars_end);
                }
            }
        }
        let later = now + stn.config().longest_ban();
        prop_assert!(pool.iter().all(|x| !stn.is_banned(later, *x)));
    }

    #[test]
    fn import_of_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut h = hist(Profile::Stn);
        h.record(T0, a("10.0.0.1:80"), false);
        let before = h.export(1_000);
        if h.import(&bytes, 1_000, T0).is_err() {
            prop_assert_eq!(h.export(1_000), before);
        }
    }

    /// Random bodies behind a valid header and checksum reach the parser.
    #[test]
    fn import_of_sealed_random_bodies_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..300),
        networks in 0u16..4,
    ) {
        let mut v = b"STNH\x01".to_vec();
        v.extend_from_slice(&networks.to_be_bytes());
        v.extend_from_slice(&body);
        let c = super::persist::checksum_for_tests(&v);
        v.extend_from_slice(&c.to_be_bytes());
        let mut h = hist(Profile::Stn);
        let _ = h.import(&v, u64::MAX / 2, T0);
        let _ = h.export(u64::MAX / 2);
    }

    #[test]
    fn export_import_export_is_stable(
        ops in proptest::collection::vec((0..POOL.len(), any::<bool>(), 0u64..30_000, 0u8..3), 0..60)
    ) {
        let mut h = hist(Profile::Stn);
        let pool = pool();
        let mut now = T0;
        for (i, ok, ms, net) in ops {
            now += Duration::from_millis(ms);
            if net == 0 {
                h.switch_network(now, if ms % 2 == 0 { "a" } else { "b" });
            }
            h.record(now, pool[i], ok);
        }
        let wall = 1_700_000_000;
        let first = h.export(wall);
        let mut copy = hist(Profile::Stn);
        copy.switch_network(now, "elsewhere");
        copy.import(&first, wall, now).unwrap();
        copy.switch_network(now, h.network_label());
        // Same histories on every network (expiry is relative, so equal).
        prop_assert_eq!(copy.export(wall), first);
    }
}

// ------------------------------------------------------ quickcheck laws

fn law_setup(fails: &[(u8, bool)], extra: &[u8]) -> (EndpointHistory, Instant, Vec<SocketAddr>) {
    let pool = pool();
    let mut h = hist(Profile::Mars);
    let mut t = T0;
    for (i, ok) in fails {
        t += secs(11);
        h.record(t, pool[usize::from(*i) % pool.len()], *ok);
    }
    let cands = extra
        .iter()
        .map(|i| pool[usize::from(*i) % pool.len()])
        .collect();
    (h, t, cands)
}

quickcheck! {
    fn order_is_a_permutation_of_the_unbanned_inputs(
        seed: u64, fails: Vec<(u8, bool)>, cands: Vec<u8>
    ) -> bool {
        let (h, t, cands) = law_setup(&fails, &cands);
        let out = h.order(t, &cands, &mut Rng::new(seed));
        let allowed: Vec<_> = cands.iter().copied().filter(|x| !h.is_banned(t, *x)).collect();
        if allowed.is_empty() {
            out.is_empty() == cands.is_empty() && out.iter().all(|x| cands.contains(x))
        } else {
            sorted(out) == sorted(allowed)
        }
    }

    fn collapse_keeps_one_bit_per_group_with_a_failure(history: u64) -> bool {
        let groups = (0..8).filter(|i| (history >> (8 * i)) & 0xFF != 0).count() as u32;
        collapse(history, ReloadPolicy::Mars).count_ones() == groups
            && collapse(history, ReloadPolicy::OrderingOnly).count_ones() == groups
            && collapse(history, ReloadPolicy::Mars).reverse_bits()
                == collapse(history, ReloadPolicy::OrderingOnly)
    }

    fn ban_duration_is_monotone_and_capped(c1: u8, c2: u8) -> bool {
        let cfg = BanConfig::for_profile(Profile::Mars);
        let (lo, hi) = (u32::from(c1.min(c2)), u32::from(c1.max(c2)));
        cfg.ban_duration(lo) <= cfg.ban_duration(hi)
            && cfg.ban_duration(hi) <= cfg.max_ban_time
            && cfg.ban_duration(lo) >= cfg.ban_time
    }
}
