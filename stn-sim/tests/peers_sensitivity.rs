//! The sensitivity test of the Mars benchmark (mars-stn.md §10, peers.md
//! §3.3): 100% loss for R seconds from t = 0, then the normal network; one
//! call issued at t = 0. Every expectation is derived from the SYN schedules
//! and client deadlines; tolerances are in RTTs of the base path (3G, RTT
//! 200 ms).

mod common;

use common::{add_servers, nth_server};
use stn_proto::{Duration, Instant};
use stn_sim::clients::oracle::{fresh_tcp_call, sensitivity_bound, PhysicalLimit};
use stn_sim::clients::peers::{Kernel, NsUrlSession, OkHttp2017, OkHttp5, PeerClient};
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::workload::{CallClient, CallFailure, CallRecord, SingleShot};
use stn_sim::Simulation;

const REQUEST_LEN: usize = 64;
const RESPONSE_LEN: usize = 100;

fn base() -> PathConditions {
    Preset::ThreeG.conditions()
}

fn rtt() -> Duration {
    base().base_rtt()
}

/// Runs one call at t = 0 against `hosts` servers, each behind its own path
/// with an outage of `r` seconds, and returns the call's record.
fn single_call<C: CallClient>(
    client: C,
    stack: TcpStack,
    hosts: u8,
    r: Duration,
    keep_alive: bool,
) -> CallRecord {
    let mut sim = Simulation::new(7);
    let path = PathSchedule::outage(base(), Instant::ZERO, Instant::ZERO + r);
    add_servers(&mut sim, hosts, &path, keep_alive, RESPONSE_LEN);
    let id = sim.add_client(SingleShot::new(client, REQUEST_LEN), stack);
    sim.run_until_finished(Instant::from_secs(300));
    *sim.client(id).record().expect("the call ended")
}

/// The first SYN of `stack` (launched at `launch`) sent at or after `r`
/// and before `limit` (both from t = 0): the schedule's gaps as the stack's
/// timers fire them (`TcpStack::syn_times`; Linux's drift later).
fn first_syn_at_or_after(
    stack: &TcpStack,
    launch: Duration,
    r: Duration,
    limit: Duration,
) -> Option<Duration> {
    stack
        .syn_times(Instant::ZERO + launch)
        .0
        .into_iter()
        .map(|t| t - Instant::ZERO)
        .find(|t| *t >= r)
        .filter(|t| *t < limit)
}

/// Whole seconds, as the published tables give SYN instants.
fn secs(d: Option<Duration>) -> Option<u64> {
    d.map(|d| d.as_secs())
}

/// Success: completed within [s + 2·RTT, s + 2.25·RTT] (serialization of
/// four small packets on 3G is well under a quarter RTT).
fn assert_completes_after_syn(rec: &CallRecord, s: Duration, what: &str) {
    assert!(rec.is_ok(), "{what}: expected success, got {rec:?}");
    let lo = Instant::ZERO + s + 2 * rtt();
    let hi = lo + rtt() / 4;
    assert!(
        rec.finished >= lo && rec.finished <= hi,
        "{what}: finished {:?}, expected {lo:?}..{hi:?}",
        rec.finished
    );
}

fn assert_fails_at(rec: &CallRecord, at: Duration, why: CallFailure, what: &str) {
    assert_eq!(rec.result, Err(why), "{what}: {rec:?}");
    assert_eq!(rec.finished, Instant::ZERO + at, "{what}");
}

fn outages() -> impl Iterator<Item = Duration> {
    (1..=8).map(|i| Duration::from_secs(5 * i))
}

#[test]
fn okhttp_2017_fails_at_its_10s_connect_timeout_unless_a_syn_lands_before() {
    for kernel in [Kernel::LinuxClassic, Kernel::Linux65] {
        let stack = kernel.stack();
        for r in outages() {
            let peer = OkHttp2017::benchmarked(nth_server(0), kernel);
            let rec = single_call(peer, kernel.stack(), 1, r, false);
            let what = format!("OkHttp 2017 {kernel:?}, R = {r:?}");
            match first_syn_at_or_after(&stack, Duration::ZERO, r, Duration::from_secs(10)) {
                Some(s) => assert_completes_after_syn(&rec, s, &what),
                None => assert_fails_at(
                    &rec,
                    Duration::from_secs(10),
                    CallFailure::ConnectTimeout,
                    &what,
                ),
            }
            assert_eq!(rec.cost.connects, 1);
        }
    }
    // The published table's anchor points (classic kernel): R = 5 → SYN at 7 s; R ≥ 10 → fail @10.
    let rec = single_call(
        OkHttp2017::benchmarked(nth_server(0), Kernel::LinuxClassic),
        TcpStack::linux_classic(),
        1,
        Duration::from_secs(5),
        false,
    );
    // The fourth SYN, nominally at 7 s, leaves at 7.168 s on the wheel.
    assert_completes_after_syn(&rec, Duration::from_millis(7168), "R = 5");
    assert_eq!(rec.cost.syns, 4, "SYNs at 0, 1, 3, 7 s");
}

#[test]
fn okhttp_with_60s_connect_timeout_completes_at_the_first_classic_syn_after_the_outage() {
    // What produced the published Mars-vs-OkHttp differences: SYNs at 0, 1, 3, 7, 15, 31 (63 > 60).
    let expected = [
        Some(7u64),
        Some(15),
        Some(15),
        Some(31),
        Some(31),
        Some(31),
        None,
        None,
    ];
    for (r, want) in outages().zip(expected) {
        let peer = OkHttp2017::sensitivity(nth_server(0), Kernel::LinuxClassic);
        let rec = single_call(peer, TcpStack::linux_classic(), 1, r, false);
        let derived = first_syn_at_or_after(
            &TcpStack::linux_classic(),
            Duration::ZERO,
            r,
            Duration::from_secs(60),
        );
        assert_eq!(secs(derived), want, "R = {r:?}");
        let what = format!("OkHttp 60 s, R = {r:?}");
        match derived {
            Some(s) => assert_completes_after_syn(&rec, s, &what),
            None => assert_fails_at(
                &rec,
                Duration::from_secs(60),
                CallFailure::ConnectTimeout,
                &what,
            ),
        }
    }
}

#[test]
fn nsurlsession_completes_at_the_first_xnu_syn_after_the_outage_or_fails_at_60s() {
    let expected = [
        Some(5u64),
        Some(11),
        Some(19),
        Some(35),
        Some(35),
        Some(35),
        Some(35),
        None,
    ];
    for (r, want) in outages().zip(expected) {
        let rec = single_call(
            NsUrlSession::benchmarked(nth_server(0)),
            TcpStack::xnu(),
            1,
            r,
            false,
        );
        let derived =
            first_syn_at_or_after(&TcpStack::xnu(), Duration::ZERO, r, Duration::from_secs(60));
        assert_eq!(derived, want.map(Duration::from_secs), "R = {r:?}");
        let what = format!("NSURLSession, R = {r:?}");
        match derived {
            Some(s) => assert_completes_after_syn(&rec, s, &what),
            None => assert_fails_at(
                &rec,
                Duration::from_secs(60),
                CallFailure::RequestTimeout,
                &what,
            ),
        }
    }
    // Just past a SYN: R = 36 s misses the SYN at 35 s; the next (67 s) is after the 60 s timer.
    let rec = single_call(
        NsUrlSession::benchmarked(nth_server(0)),
        TcpStack::xnu(),
        1,
        Duration::from_secs(36),
        false,
    );
    assert_fails_at(
        &rec,
        Duration::from_secs(60),
        CallFailure::RequestTimeout,
        "R = 36",
    );
    assert_eq!(rec.cost.syns, 10, "SYNs at 0..35 s");
}

#[test]
fn okhttp5_fast_fallback_races_three_routes_each_with_its_own_timeout() {
    // Three IPs behind the same outage: launches at 0, 0.25, 0.5 s; a route's
    // SYNs at launch + {0, 1, 3, 7}; each attempt times out 10 s after launch.
    let launches = [0u64, 250, 500].map(Duration::from_millis);
    for r_ms in [5_000u64, 7_100, 7_300, 8_000] {
        let r = Duration::from_millis(r_ms);
        let peer = OkHttp5::recommended((0..3).map(nth_server).collect(), Kernel::LinuxClassic);
        let rec = single_call(peer, TcpStack::linux_classic(), 3, r, true);
        let first = launches
            .iter()
            .filter_map(|l| {
                first_syn_at_or_after(
                    &TcpStack::linux_classic(),
                    *l,
                    r,
                    *l + Duration::from_secs(10),
                )
            })
            .min();
        let what = format!("OkHttp 5 ×3 routes, R = {r:?}");
        match first {
            Some(s) => assert_completes_after_syn(&rec, s, &what),
            None => assert_fails_at(
                &rec,
                Duration::from_millis(10_500),
                CallFailure::ConnectTimeout,
                &what,
            ),
        }
        assert_eq!(rec.cost.connects, 3, "{what}");
    }
}

#[test]
fn nsurlsession_happy_eyeballs_starts_the_next_address_at_the_first_syn_retransmission() {
    // No RTT history: launches at 0, 1, 2 s; xnu SYNs at launch + {0,1,2,3,4,5,7,11,19,35}.
    let launches = [0u64, 1, 2].map(Duration::from_secs);
    for r in outages() {
        let peer = NsUrlSession::recommended((0..3).map(nth_server).collect());
        let rec = single_call(peer, TcpStack::xnu(), 3, r, true);
        let first = launches
            .iter()
            .filter_map(|l| first_syn_at_or_after(&TcpStack::xnu(), *l, r, Duration::from_secs(60)))
            .min();
        let what = format!("NSURLSession HE, R = {r:?}");
        match first {
            Some(s) => assert_completes_after_syn(&rec, s, &what),
            None => assert_fails_at(
                &rec,
                Duration::from_secs(60),
                CallFailure::RequestTimeout,
                &what,
            ),
        }
    }
}

#[test]
fn oracle_completes_four_one_way_delays_after_the_outage() {
    let owd = base().up.delay;
    assert_eq!(owd, base().down.delay);
    for r in outages() {
        let path = PathSchedule::outage(base(), Instant::ZERO, Instant::ZERO + r);
        let oracle = PhysicalLimit::new(&path, 7, "10.0.0.2".parse().unwrap());
        {
            let run = oracle
                .run(
                    Instant::ZERO,
                    &fresh_tcp_call(REQUEST_LEN + 120, RESPONSE_LEN + 90, Duration::ZERO),
                    Instant::from_secs(300),
                )
                .unwrap();
            let bound = sensitivity_bound(r, 4, owd);
            assert!(
                run.completed >= bound && run.completed <= bound + rtt() / 4,
                "R = {r:?}: {:?}",
                run.completed
            );
            assert_eq!(run.packets_sent, 4);
        }
    }
}

/// Prints the sensitivity table of the report (run with `--nocapture`):
/// completion time in seconds, or "fail@T".
#[test]
#[allow(clippy::print_stdout)]
fn sensitivity_table() {
    fn cell(rec: &CallRecord) -> String {
        match rec.result {
            Ok(_) => format!("{:.2}", rec.finished.as_secs_f64()),
            Err(_) => format!("fail@{:.1}", rec.finished.as_secs_f64()),
        }
    }
    println!("| R (s) | OkHttp2017 <6.5 | OkHttp2017 ≥6.5 | OkHttp 60s <6.5 | NSURLSession | OkHttp5 ×3 | NSURL HE ×3 | oracle |");
    for r in outages() {
        let one = |c: PeerClient, s: TcpStack, n: u8| cell(&single_call(c, s, n, r, true));
        let row = [
            cell(&single_call(
                OkHttp2017::benchmarked(nth_server(0), Kernel::LinuxClassic),
                TcpStack::linux_classic(),
                1,
                r,
                false,
            )),
            cell(&single_call(
                OkHttp2017::benchmarked(nth_server(0), Kernel::Linux65),
                TcpStack::linux_6_5(),
                1,
                r,
                false,
            )),
            cell(&single_call(
                OkHttp2017::sensitivity(nth_server(0), Kernel::LinuxClassic),
                TcpStack::linux_classic(),
                1,
                r,
                false,
            )),
            cell(&single_call(
                NsUrlSession::benchmarked(nth_server(0)),
                TcpStack::xnu(),
                1,
                r,
                false,
            )),
            one(
                OkHttp5::recommended((0..3).map(nth_server).collect(), Kernel::LinuxClassic),
                TcpStack::linux_classic(),
                3,
            ),
            one(
                NsUrlSession::recommended((0..3).map(nth_server).collect()),
                TcpStack::xnu(),
                3,
            ),
        ];
        let oracle = PhysicalLimit::new(
            &PathSchedule::outage(base(), Instant::ZERO, Instant::ZERO + r),
            7,
            "10.0.0.2".parse().unwrap(),
        )
        .run(
            Instant::ZERO,
            &fresh_tcp_call(REQUEST_LEN + 120, RESPONSE_LEN + 90, Duration::ZERO),
            Instant::from_secs(300),
        )
        .map_or("never".to_string(), |o| {
            format!("{:.2}", o.completed.as_secs_f64())
        });
        println!("| {} | {} | {oracle} |", r.as_secs(), row.join(" | "));
    }
}
