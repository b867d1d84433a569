//! Script tests pinning Mars's formulas, and properties of the pure functions.

use super::*;
use crate::profile::Profile;
use crate::test_util::ms;
use proptest::prelude::*;

const W: NetworkKind = NetworkKind::Wifi;
const M: NetworkKind = NetworkKind::Mobile;

fn mars() -> TimeoutConfig {
    TimeoutConfig::for_profile(Profile::Mars)
}

#[test]
fn mars_worked_example() {
    // mars-stn.md §2.3: Wi-Fi, 200-byte request, first task.
    for p in Profile::ALL {
        let cfg = TimeoutConfig::for_profile(p);
        let input = AttemptInput::new(W, 200);
        let f = first_packet_timeout(&cfg, &input);
        assert_eq!(f, ms(12_016), "{p}");
        assert_eq!(read_write_timeout(&cfg, W, f), ms(17_349), "{p}");
        assert_eq!(packet_gap_timeout(&cfg, W), ms(8_000), "{p}");
        let task = TaskTimeoutInput {
            retry_count: 1,
            ..TaskTimeoutInput::default()
        };
        assert_eq!(task_timeout(&cfg, &task), ms(40_000), "{p}");
    }
}

#[test]
fn profiles_differ_only_where_documented() {
    let m17 = TimeoutConfig::for_profile(Profile::Mars2017);
    let m = mars();
    let stn = TimeoutConfig::for_profile(Profile::Stn);
    assert_eq!(m17.in_flight_cap, None);
    assert_eq!(m.in_flight_cap, Some(5));
    assert_eq!(
        TimeoutConfig {
            in_flight_cap: Some(5),
            ..m17
        },
        m
    );
    assert_eq!(
        TimeoutConfig {
            adaptive: None,
            ..stn
        },
        m
    );
    assert_eq!(TimeoutConfig::default(), stn);
    assert_eq!(m.network(NetworkKind::Other), &NetworkTimeouts::MARS_WIFI);
    assert_eq!(m.network(NetworkKind::None), &NetworkTimeouts::MARS_WIFI);
    assert_eq!(m.network(M), &NetworkTimeouts::MARS_MOBILE);
}

#[test]
fn task_timeout_scripted() {
    let cfg = mars();
    let t = |server_cost, retry_count, total_timeout, long_polling| {
        task_timeout(
            &cfg,
            &TaskTimeoutInput {
                server_cost,
                retry_count,
                total_timeout,
                long_polling,
            },
        )
    };
    assert_eq!(t(None, 0, None, None), ms(20_000));
    assert_eq!(t(None, 3, None, None), ms(80_000));
    assert_eq!(t(Some(Duration::ZERO), 1, None, None), ms(40_000));
    // rw = 15 s + 2.5 s; (17.5 + 5) × 2.
    assert_eq!(t(Some(ms(2_500)), 1, None, None), ms(45_000));
    // Long polling replaces the formula, whatever the retries.
    assert_eq!(t(Some(ms(2_500)), 4, None, Some(ms(60_000))), ms(65_000));
    // total_timeout caps only when 0 < total < timeout.
    assert_eq!(t(None, 1, Some(ms(10_000)), None), ms(10_000));
    assert_eq!(t(None, 1, Some(ms(50_000)), None), ms(40_000));
    assert_eq!(t(None, 1, Some(Duration::ZERO), None), ms(40_000));
    assert_eq!(t(None, 1, Some(ms(30_000)), Some(ms(60_000))), ms(30_000));
    // Saturates.
    assert_eq!(t(Some(Duration::MAX), u32::MAX, None, None), Duration::MAX);
}

fn fpt(
    cfg: &TimeoutConfig,
    net: NetworkKind,
    len: usize,
    n: usize,
    spc: Option<u64>,
    dyn_state: DynState,
) -> u64 {
    let input = AttemptInput {
        in_flight: n,
        server_cost: spc.map(ms),
        dyn_state,
        ..AttemptInput::new(net, len)
    };
    first_packet_timeout(cfg, &input).as_millis() as u64
}

#[test]
fn first_packet_base_branch() {
    use DynState::*;
    let cfg = mars();
    // W: 12000 + 1000·len/12288; M: 15000 + 1000·len/4096 (truncating).
    assert_eq!(fpt(&cfg, W, 0, 0, None, Evaluating), 12_000);
    assert_eq!(fpt(&cfg, W, 12_288, 0, None, Evaluating), 13_000);
    assert_eq!(fpt(&cfg, M, 200, 0, None, Evaluating), 15_048);
    assert_eq!(fpt(&cfg, M, 4_096, 0, None, Bad), 16_000);
    // Capped at Max before adding n × TaskDelay.
    assert_eq!(fpt(&cfg, W, 10 * 12_288, 0, None, Evaluating), 22_000);
    assert_eq!(fpt(&cfg, W, 10 * 12_288, 2, None, Evaluating), 25_000);
    assert_eq!(fpt(&cfg, M, 1 << 20, 1, None, Evaluating), 33_000);
    // Explicit spc = 0 outside Excellent is the base branch too.
    assert_eq!(fpt(&cfg, W, 200, 0, Some(0), Evaluating), 12_016);
    assert_eq!(fpt(&cfg, W, 200, 0, Some(0), Bad), 12_016);
    // The other network kinds use the W column.
    assert_eq!(
        fpt(&cfg, NetworkKind::Other, 200, 1, None, Evaluating),
        13_516
    );
    assert_eq!(
        fpt(&cfg, NetworkKind::None, 200, 1, None, Evaluating),
        13_516
    );
}

#[test]
fn first_packet_excellent_branch_needs_explicit_zero_server_cost() {
    use DynState::*;
    let cfg = mars();
    assert_eq!(fpt(&cfg, W, 200, 0, Some(0), Excellent), 7_000);
    assert_eq!(fpt(&cfg, W, 100_000, 2, Some(0), Excellent), 10_000);
    assert_eq!(fpt(&cfg, M, 200, 1, Some(0), Excellent), 13_000);
    // C++ quirk: Mars's default spc (−1) never reaches the Excellent branch.
    assert_eq!(fpt(&cfg, W, 200, 0, None, Excellent), 12_016);
    // Nor does a positive spc.
    assert_eq!(fpt(&cfg, W, 200, 0, Some(1), Excellent), 17);
}

#[test]
fn first_packet_server_cost_branch_is_uncapped() {
    use DynState::*;
    let cfg = mars();
    assert_eq!(fpt(&cfg, W, 200, 0, Some(3_000), Evaluating), 3_016);
    assert_eq!(fpt(&cfg, M, 200, 2, Some(3_000), Evaluating), 3_048 + 6_000);
    assert_eq!(
        fpt(&cfg, W, 10 * 12_288, 0, Some(30_000), Evaluating),
        40_000
    );
}

#[test]
fn in_flight_cap_by_profile() {
    use DynState::*;
    let m17 = TimeoutConfig::for_profile(Profile::Mars2017);
    let m = mars();
    let stn = TimeoutConfig::for_profile(Profile::Stn);
    assert_eq!(fpt(&m17, W, 200, 8, None, Evaluating), 12_016 + 8 * 1_500);
    assert_eq!(fpt(&m, W, 200, 8, None, Evaluating), 12_016 + 5 * 1_500);
    assert_eq!(fpt(&stn, W, 200, 8, None, Evaluating), 12_016 + 5 * 1_500);
    assert_eq!(fpt(&m17, M, 200, 6, Some(0), Excellent), 10_000 + 6 * 3_000);
    assert_eq!(fpt(&m, M, 200, 6, Some(0), Excellent), 10_000 + 5 * 3_000);
    assert_eq!(
        fpt(&m, W, 200, 5, None, Evaluating),
        fpt(&m17, W, 200, 5, None, Evaluating)
    );
}

#[test]
fn read_write_and_packet_gap() {
    let cfg = mars();
    assert_eq!(read_write_timeout(&cfg, W, ms(12_016)), ms(17_349));
    assert_eq!(read_write_timeout(&cfg, M, ms(15_048)), ms(31_048));
    assert_eq!(
        read_write_timeout(&cfg, NetworkKind::Other, ms(0)),
        ms(5_333)
    );
    assert_eq!(
        long_polling_read_write_timeout(&cfg, W, ms(60_000)),
        ms(65_333)
    );
    assert_eq!(
        long_polling_read_write_timeout(&cfg, M, ms(60_000)),
        ms(76_000)
    );
    assert_eq!(packet_gap_timeout(&cfg, W), ms(8_000));
    assert_eq!(packet_gap_timeout(&cfg, M), ms(12_000));
    assert_eq!(packet_gap_timeout(&cfg, NetworkKind::None), ms(8_000));
}

fn any_profile() -> impl Strategy<Value = Profile> {
    prop_oneof![
        Just(Profile::Mars2017),
        Just(Profile::Mars),
        Just(Profile::Stn)
    ]
}

fn any_state() -> impl Strategy<Value = DynState> {
    prop_oneof![
        Just(DynState::Evaluating),
        Just(DynState::Excellent),
        Just(DynState::Bad)
    ]
}

proptest! {
    #[test]
    fn formulas_monotone_in_send_len_and_in_flight(
        p in any_profile(), mobile in any::<bool>(), st in any_state(),
        spc in proptest::option::of(0u64..100_000),
        a in any::<usize>(), b in any::<usize>(), n1 in 0usize..1_000, n2 in 0usize..1_000,
    ) {
        let cfg = TimeoutConfig::for_profile(p);
        let net = if mobile { M } else { W };
        let (lo, hi) = (a.min(b), a.max(b));
        let (nlo, nhi) = (n1.min(n2), n1.max(n2));
        let f = |len, n| fpt(&cfg, net, len, n, spc, st);
        prop_assert!(f(lo, nlo) <= f(hi, nlo));
        prop_assert!(f(lo, nlo) <= f(lo, nhi));
        let rw = |len, n| read_write_timeout(&cfg, net, ms(f(len, n)));
        prop_assert!(rw(lo, nhi) <= rw(hi, nhi));
        prop_assert!(rw(hi, nlo) <= rw(hi, nhi));
    }

    #[test]
    fn base_branch_is_bounded(
        p in any_profile(), mobile in any::<bool>(), st in any_state(),
        spc_zero in any::<bool>(), len in any::<usize>(), n in 0usize..1_000,
    ) {
        // Bound: Max + min(n, cap) × TaskDelay; with HEAD's cap that is
        // 29.5 s (W) / 45 s (M), and F ≥ the Excellent base.
        let cfg = TimeoutConfig::for_profile(p);
        let net = if mobile { M } else { W };
        let col = cfg.network(net);
        let f = ms(fpt(&cfg, net, len, n, spc_zero.then_some(0), st));
        let delay = mul_count(col.task_delay, cfg.effective_in_flight(n));
        prop_assert!(f <= col.max_first_packet + delay);
        prop_assert!(f >= col.excellent_first_packet + delay);
        if p != Profile::Mars2017 {
            let bound = if mobile { ms(45_000) } else { ms(29_500) };
            prop_assert!(f <= bound);
        }
    }

    #[test]
    fn task_timeout_is_capped_by_total(
        spc in proptest::option::of(0u64..100_000), retries in 0u32..10,
        total in proptest::option::of(0u64..200_000), lp in proptest::option::of(0u64..200_000),
    ) {
        let cfg = mars();
        let input = TaskTimeoutInput {
            server_cost: spc.map(ms), retry_count: retries,
            total_timeout: total.map(ms), long_polling: lp.map(ms),
        };
        let t = task_timeout(&cfg, &input);
        let uncapped = task_timeout(&cfg, &TaskTimeoutInput { total_timeout: None, ..input });
        prop_assert!(t <= uncapped);
        match total {
            Some(x) if x > 0 => prop_assert_eq!(t, uncapped.min(ms(x))),
            _ => prop_assert_eq!(t, uncapped),
        }
    }
}
