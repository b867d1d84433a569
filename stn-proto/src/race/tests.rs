use super::*;
use crate::net::IpAddr;
use crate::profile::Profile;
use crate::rng::Rng;
use std::collections::BTreeMap;

use AttemptResult as R;
use RaceAction as A;

fn addr(n: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::from([10, 0, 0, n]), 443)
}

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn id(n: u32) -> AttemptId {
    AttemptId(n)
}

fn drain(race: &mut Race) -> Vec<RaceAction> {
    core::iter::from_fn(|| race.poll_action()).collect()
}

fn connect(n: u32, a: u8) -> RaceAction {
    A::Connect {
        attempt: id(n),
        addr: addr(a),
    }
}

fn cancel(n: u32, a: u8) -> RaceAction {
    A::Cancel {
        attempt: id(n),
        addr: addr(a),
    }
}

fn report(n: u32, a: u8, result: AttemptResult) -> RaceAction {
    A::Report {
        attempt: id(n),
        addr: addr(a),
        result,
    }
}

fn race(p: Profile, cands: &[u8], rtt: Option<u64>, deadline: Option<u64>) -> Race {
    Race::new(
        ms(0),
        RaceConfig::for_profile(p),
        cands.iter().map(|&c| addr(c)).collect(),
        rtt.map(Duration::from_millis),
        deadline.map(ms),
    )
}

/// Drives a race with no socket ever answering (black holes): wakes it at each
/// `poll_timeout` until it finishes. Returns every action with its time.
fn run_black_holed(race: &mut Race) -> Vec<(Instant, RaceAction)> {
    let mut trace: Vec<_> = drain(race).into_iter().map(|a| (ms(0), a)).collect();
    for _ in 0..10_000 {
        let Some(t) = race.poll_timeout() else { break };
        race.handle_timeout(t);
        trace.extend(drain(race).into_iter().map(|a| (t, a)));
    }
    assert!(race.is_finished());
    trace
}

fn connect_times(trace: &[(Instant, RaceAction)]) -> Vec<Instant> {
    trace
        .iter()
        .filter(|(_, a)| matches!(a, A::Connect { .. }))
        .map(|(t, _)| *t)
        .collect()
}

fn failed_at(trace: &[(Instant, RaceAction)]) -> Option<(Instant, FailReason)> {
    trace.iter().find_map(|(t, a)| match a {
        A::Failed { reason, .. } => Some((*t, *reason)),
        _ => None,
    })
}

// ---------------------------------------------------------------- scripts

#[test]
fn happy_path() {
    let mut r = race(Profile::Mars, &[1, 2], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(2500)));
    r.handle_connected(ms(80), id(0));
    let connect_time = Duration::from_millis(80);
    assert_eq!(
        drain(&mut r),
        vec![
            report(0, 1, R::Connected { connect_time }),
            A::Won {
                attempt: id(0),
                addr: addr(1),
                connect_time
            },
        ]
    );
    assert!(r.is_finished());
    assert_eq!(r.outcome(), Some(RaceOutcome::Won(id(0))));
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.attempts_started(), 1);
    assert_eq!(r.in_flight(), 0);
    assert_eq!(r.attempt(id(0)).unwrap().state, AttemptState::Connected);
    assert_eq!(r.attempt(id(0)).unwrap().ended, Some(ms(80)));
}

#[test]
fn stagger_starts_next_attempt() {
    let mut r = race(Profile::Mars, &[1, 2, 3], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    r.handle_timeout(ms(2499)); // early wake-up: nothing happens
    assert_eq!(drain(&mut r), vec![]);
    assert_eq!(r.poll_timeout(), Some(ms(2500)));
    r.handle_timeout(ms(2500));
    assert_eq!(drain(&mut r), vec![connect(1, 2)]);
    r.handle_timeout(ms(2500)); // idempotent
    assert_eq!(drain(&mut r), vec![]);
    assert_eq!(r.poll_timeout(), Some(ms(5000)));
    assert_eq!(r.in_flight(), 2);
}

#[test]
fn without_rtt_stn_races_an_address_against_itself_only_after_the_syn_rto() {
    // The same address twice: the second SYN waits for the OS's own
    // retransmission time (1 s), since the path may just be slow.
    let mut r = race(Profile::Stn, &[1, 1], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(1000)));
    r.handle_timeout(ms(999));
    assert_eq!(drain(&mut r), vec![]);
    r.handle_timeout(ms(1000));
    assert_eq!(drain(&mut r), vec![connect(1, 1)]);
    // Another address: RFC 8305's 250 ms.
    let mut r = race(Profile::Stn, &[1, 2], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(250)));
    // With an RTT hint the adaptive stagger applies to the same address too.
    let mut r = race(Profile::Stn, &[1, 1], Some(100), None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(250)));
}

#[test]
fn refused_starts_next_at_once_under_stn() {
    let mut r = race(Profile::Stn, &[1, 2], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(250))); // 250 ms stagger without RTT
    r.handle_failed(ms(30), id(0), ConnectError::Refused);
    assert_eq!(
        drain(&mut r),
        vec![
            report(0, 1, R::Failed(ConnectError::Refused)),
            connect(1, 2)
        ]
    );
}

#[test]
fn refused_waits_for_error_stagger_under_mars() {
    for (p, stagger) in [(Profile::Mars, 2500), (Profile::Mars2017, 4000)] {
        let mut r = race(p, &[1, 2], None, None);
        assert_eq!(drain(&mut r), vec![connect(0, 1)]);
        r.handle_failed(ms(1000), id(0), ConnectError::Refused);
        assert_eq!(
            drain(&mut r),
            vec![report(0, 1, R::Failed(ConnectError::Refused))]
        );
        assert_eq!(r.in_flight(), 0);
        assert!(!r.is_finished());
        assert_eq!(r.poll_timeout(), Some(ms(stagger)));
        r.handle_timeout(ms(stagger));
        assert_eq!(drain(&mut r), vec![connect(1, 2)]);
    }
}

#[test]
fn mars_failure_frees_a_slot_but_keeps_the_error_stagger() {
    let mut r = race(Profile::Mars, &[1, 2, 3, 4, 5], None, None);
    r.handle_timeout(ms(2500));
    r.handle_timeout(ms(5000));
    assert_eq!(drain(&mut r).len(), 3);
    assert_eq!(r.poll_timeout(), Some(ms(10_000))); // 3 in flight: no start at 7.5 s
    r.handle_failed(ms(6000), id(1), ConnectError::Reset);
    assert_eq!(
        drain(&mut r),
        vec![report(1, 2, R::Failed(ConnectError::Reset))]
    );
    assert_eq!(r.poll_timeout(), Some(ms(7500))); // last start 5 s + error stagger 2.5 s
    r.handle_timeout(ms(7500));
    assert_eq!(drain(&mut r), vec![connect(3, 4)]);
    assert_eq!(r.poll_timeout(), Some(ms(10_000)));
    // Under stn a failure starts the next attempt at once, before the stagger.
    let mut r = race(Profile::Stn, &[1, 2, 3], Some(500), None); // stagger 1.05 s
    r.handle_failed(ms(100), id(0), ConnectError::Reset);
    assert_eq!(
        drain(&mut r),
        vec![
            connect(0, 1),
            report(0, 1, R::Failed(ConnectError::Reset)),
            connect(1, 2)
        ]
    );
    assert_eq!(r.poll_timeout(), Some(ms(1150)));
}

#[test]
fn per_attempt_timeout() {
    let mut r = race(Profile::Mars, &[1], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.poll_timeout(), Some(ms(10_000)));
    r.handle_timeout(ms(9_999));
    assert_eq!(drain(&mut r), vec![]);
    r.handle_timeout(ms(10_000));
    assert_eq!(
        drain(&mut r),
        vec![
            cancel(0, 1),
            report(0, 1, R::Failed(ConnectError::AttemptTimeout)),
            A::Failed {
                reason: FailReason::Exhausted,
                last_error: Some(ConnectError::AttemptTimeout),
                attempts: 1
            },
        ]
    );
    assert_eq!(r.poll_timeout(), None);
    // A late result for the timed-out attempt is ignored.
    r.handle_connected(ms(10_001), id(0));
    assert_eq!(drain(&mut r), vec![]);
}

#[test]
fn winner_cancels_others_mars_reports_earlier_losers_as_timed_out() {
    let mut r = race(Profile::Mars, &[1, 2, 3], None, None);
    r.handle_timeout(ms(2500));
    r.handle_timeout(ms(5000));
    assert_eq!(
        drain(&mut r),
        vec![connect(0, 1), connect(1, 2), connect(2, 3)]
    );
    r.handle_connected(ms(6000), id(1));
    let connect_time = Duration::from_millis(3500);
    assert_eq!(
        drain(&mut r),
        vec![
            report(1, 2, R::Connected { connect_time }),
            cancel(0, 1),
            report(0, 1, R::Failed(ConnectError::TimedOut)), // lower index: ETIMEDOUT
            cancel(2, 3),                                    // higher index: not reported
            A::Won {
                attempt: id(1),
                addr: addr(2),
                connect_time
            },
        ]
    );
    assert_eq!(r.attempt(id(2)).unwrap().state, AttemptState::Lost);
}

#[test]
fn winner_cancels_others_stn_reports_lost() {
    let mut r = race(Profile::Stn, &[1, 2, 3], Some(100), None); // stagger 250 ms
    r.handle_timeout(ms(250));
    r.handle_timeout(ms(500));
    assert_eq!(
        drain(&mut r),
        vec![connect(0, 1), connect(1, 2), connect(2, 3)]
    );
    r.handle_connected(ms(600), id(1));
    let connect_time = Duration::from_millis(350);
    assert_eq!(
        drain(&mut r),
        vec![
            report(1, 2, R::Connected { connect_time }),
            cancel(0, 1),
            report(0, 1, R::Lost),
            cancel(2, 3),
            report(2, 3, R::Lost),
            A::Won {
                attempt: id(1),
                addr: addr(2),
                connect_time
            },
        ]
    );
}

#[test]
fn four_identical_candidates_are_separate_attempts() {
    let mut r = race(Profile::Mars2017, &[7, 7, 7, 7], None, None);
    let trace = run_black_holed(&mut r);
    let connects: Vec<_> = trace
        .iter()
        .filter(|(_, a)| matches!(a, A::Connect { .. }))
        .collect();
    assert_eq!(
        connects,
        vec![
            &(ms(0), connect(0, 7)),
            &(ms(4000), connect(1, 7)),
            &(ms(8000), connect(2, 7)),
            &(ms(12_000), connect(3, 7)),
        ]
    );
    assert_eq!(failed_at(&trace), Some((ms(22_000), FailReason::Exhausted)));
    assert_eq!(
        r.attempts().iter().map(|a| a.candidate).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn mars_worst_case_five_black_holes() {
    let mut r = race(Profile::Mars, &[1, 2, 3, 4, 5], None, None);
    let trace = run_black_holed(&mut r);
    assert_eq!(
        connect_times(&trace),
        vec![ms(0), ms(2500), ms(5000), ms(10_000), ms(12_500)]
    );
    assert_eq!(failed_at(&trace), Some((ms(22_500), FailReason::Exhausted)));
    // At 10 s the first attempt's timeout frees the slot the fourth takes.
    let at_10: Vec<_> = trace
        .iter()
        .filter(|(t, _)| *t == ms(10_000))
        .map(|(_, a)| *a)
        .collect();
    assert_eq!(
        at_10,
        vec![
            cancel(0, 1),
            report(0, 1, R::Failed(ConnectError::AttemptTimeout)),
            connect(3, 4)
        ]
    );
}

#[test]
fn mars2017_worst_case_five_black_holes() {
    // mars-stn.md: "v1.2 with 4 s: starts 0, 4, 8, 12, 16 → ≈26 s" — the rules
    // give exactly that; the 3-slot limit never binds.
    let mut r = race(Profile::Mars2017, &[1, 2, 3, 4, 5], None, None);
    let trace = run_black_holed(&mut r);
    assert_eq!(
        connect_times(&trace),
        vec![ms(0), ms(4000), ms(8000), ms(12_000), ms(16_000)]
    );
    assert_eq!(failed_at(&trace), Some((ms(26_000), FailReason::Exhausted)));
    assert!(matches!(
        trace.last().unwrap().1,
        A::Failed {
            last_error: Some(ConnectError::AttemptTimeout),
            attempts: 5,
            ..
        }
    ));
}

#[test]
fn stn_abandons_lost_syns_and_refreshes_a_single_address() {
    // RTT 200 ms: stagger 2·200 + 50 = 450 ms, abandon after max(600, 1000 + 200 + 100) = 1.3 s.
    let mut r = race(Profile::Stn, &[1], Some(200), None);
    assert_eq!(r.stagger(), Duration::from_millis(450));
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    assert_eq!(r.attempt(id(0)).unwrap().abandon_at, Some(ms(1300)));
    assert_eq!(r.poll_timeout(), Some(ms(450)));
    r.handle_timeout(ms(450));
    assert_eq!(drain(&mut r), vec![connect(1, 1)]); // round 2 over a 1-address list
    r.handle_timeout(ms(900));
    assert_eq!(drain(&mut r), vec![connect(2, 1)]);
    // 3 in flight: no start until a slot frees.
    assert_eq!(r.poll_timeout(), Some(ms(1300)));
    // The first attempt is also the first floor attempt: at its abandon time
    // it gives its slot to a fresh attempt but keeps its socket (no Cancel)
    // and gets no verdict.
    assert!(r.attempt(id(0)).unwrap().floor);
    r.handle_timeout(ms(1300));
    assert_eq!(drain(&mut r), vec![connect(3, 1)]);
    assert!(!r.attempt(id(0)).unwrap().abandoned);
    assert_eq!(r.attempt(id(0)).unwrap().passive_since, Some(ms(1300)));
    assert_eq!(r.attempt(id(0)).unwrap().state, AttemptState::Connecting);
    assert_eq!((r.in_flight(), r.active()), (4, 3));
    assert_eq!(r.attempt(id(3)).unwrap().round, 3);
    assert!(!r.attempt(id(3)).unwrap().floor);
    assert_eq!(r.poll_timeout(), Some(ms(1750)));
    // The fresh attempt connects: 100 ms after its SYN; the passive one is
    // closed with the other losers.
    r.handle_connected(ms(1400), id(3));
    let connect_time = Duration::from_millis(100);
    assert_eq!(
        drain(&mut r),
        vec![
            report(3, 1, R::Connected { connect_time }),
            cancel(0, 1),
            report(0, 1, R::Lost),
            cancel(1, 1),
            report(1, 1, R::Lost),
            cancel(2, 1),
            report(2, 1, R::Lost),
            A::Won {
                attempt: id(3),
                addr: addr(1),
                connect_time
            },
        ]
    );
}

#[test]
fn stn_passive_attempts_win_and_fail_outside_the_slots() {
    // RTT 200 ms: stagger 450 ms, abandon after 1.3 s; attempt 0 (a floor
    // attempt) turns passive at 1.3 s and attempt 3 takes its slot.
    let start = |cands: &[u8]| {
        let mut r = race(Profile::Stn, cands, Some(200), None);
        for t in [450, 900, 1300] {
            r.handle_timeout(ms(t));
        }
        assert_eq!(drain(&mut r).len(), 4);
        assert_eq!((r.in_flight(), r.active()), (4, 3));
        r
    };
    // The passive attempt's failure frees no slot: nothing starts early.
    let mut r = start(&[1, 2]);
    assert_eq!(r.poll_timeout(), Some(ms(1750)));
    r.handle_failed(ms(1400), id(0), ConnectError::Reset);
    assert_eq!(
        drain(&mut r),
        vec![report(0, 1, R::Failed(ConnectError::Reset))]
    );
    assert_eq!((r.in_flight(), r.active()), (3, 3));
    assert_eq!(r.poll_timeout(), Some(ms(1750)));
    // At 1.75 s attempt 1 (not a floor attempt) is abandoned: reported, and
    // kept open as a probe; the reset address is skipped from now on.
    r.handle_timeout(ms(1750));
    assert_eq!(
        drain(&mut r),
        vec![report(1, 2, R::Abandoned), connect(4, 2)]
    );
    assert!(!r.attempt(id(1)).unwrap().floor);
    assert_eq!(r.attempt(id(1)).unwrap().state, AttemptState::Connecting);
    assert_eq!((r.in_flight(), r.active()), (4, 3));
    // Its OS retransmits the SYN 1 s after its start; the reply wins the
    // race, connect time from its own start, and is reported after the
    // abandon.
    r.handle_connected(ms(1800), id(1));
    let connect_time = Duration::from_millis(1350);
    assert_eq!(
        drain(&mut r),
        vec![
            report(1, 2, R::Connected { connect_time }),
            cancel(2, 1),
            report(2, 1, R::Lost),
            cancel(3, 2),
            report(3, 2, R::Lost),
            cancel(4, 2),
            report(4, 2, R::Lost),
            A::Won {
                attempt: id(1),
                addr: addr(2),
                connect_time
            },
        ]
    );
    // A passive attempt that connects wins; every other one is closed.
    let mut r = start(&[1]);
    r.handle_connected(ms(2000), id(0));
    let connect_time = Duration::from_secs(2);
    assert_eq!(
        drain(&mut r),
        vec![
            report(0, 1, R::Connected { connect_time }),
            cancel(1, 1),
            report(1, 1, R::Lost),
            cancel(2, 1),
            report(2, 1, R::Lost),
            cancel(3, 1),
            report(3, 1, R::Lost),
            A::Won {
                attempt: id(0),
                addr: addr(1),
                connect_time
            },
        ]
    );
}

#[test]
fn stn_probes_that_lose_get_no_second_verdict() {
    // Three addresses, RTT 200 ms: attempts 0, 1, 2 (addresses 1, 2, 3) are
    // abandoned at 1.3, 1.75 and 2.2 s and replaced by 3, 4, 5 (1, 2, 3);
    // attempt 0, the first floor attempt, gets no report.
    let mut r = race(Profile::Stn, &[1, 2, 3], Some(200), None);
    let mut actions = drain(&mut r);
    for t in [450, 900, 1300, 1750, 2200] {
        r.handle_timeout(ms(t));
        actions.extend(drain(&mut r));
    }
    let abandoned: Vec<_> = actions
        .iter()
        .filter(|a| matches!(a, A::Report { .. }))
        .copied()
        .collect();
    assert_eq!(
        abandoned,
        vec![report(1, 2, R::Abandoned), report(2, 3, R::Abandoned)]
    );
    assert!(!actions.iter().any(|a| matches!(a, A::Cancel { .. })));
    assert_eq!((r.in_flight(), r.active()), (6, 3));
    // Attempt 5 connects 50 ms after its SYN. Attempts 0, 3 and 4, on other
    // addresses, started before it and unanswered for over 2·50 + 100 ms, are
    // outpaced; the probe 1 would be too, but its address already has its
    // failure (Abandoned), so it is only Lost, as is 2 (same address).
    r.handle_connected(ms(2250), id(5));
    let connect_time = Duration::from_millis(50);
    assert_eq!(
        drain(&mut r),
        vec![
            report(5, 3, R::Connected { connect_time }),
            cancel(0, 1),
            report(0, 1, R::Outpaced),
            cancel(1, 2),
            report(1, 2, R::Lost),
            cancel(2, 3),
            report(2, 3, R::Lost),
            cancel(3, 1),
            report(3, 1, R::Outpaced),
            cancel(4, 2),
            report(4, 2, R::Outpaced),
            A::Won {
                attempt: id(5),
                addr: addr(3),
                connect_time
            },
        ]
    );
}

#[test]
fn stn_abandon_without_rtt_and_bounded_abandons() {
    // No RTT: 250 ms stagger, abandon after 1.6 s; a path whose real RTT is far
    // longer than assumed stops being abandoned after 6 abandonments.
    let mut r = race(Profile::Stn, &[1, 2], None, None);
    assert_eq!(r.attempt(id(0)).unwrap().abandon_at, Some(ms(1600)));
    let trace = run_black_holed(&mut r);
    let abandoned: Vec<u32> = trace
        .iter()
        .filter_map(|(_, a)| match a {
            A::Report {
                attempt,
                result: R::Abandoned,
                ..
            } => Some(attempt.0),
            _ => None,
        })
        .collect();
    // The first attempt (a floor attempt) was made passive without a
    // report: that counts as one of the 6.
    assert_eq!(abandoned.len(), 5);
    assert!(!abandoned.contains(&0));
    assert_eq!(r.attempt(id(0)).unwrap().passive_since, Some(ms(1600)));
    // Each abandoned attempt gave up its slot 1.6 s after its start and
    // stayed open as a probe until its own 10 s timeout or the 20 s deadline,
    // with no second verdict.
    for &n in &abandoned {
        let a = r.attempt(id(n)).unwrap();
        assert!(a.abandoned);
        assert_eq!(
            a.passive_since,
            Some(a.started + Duration::from_millis(1600))
        );
        let end = (a.started + Duration::from_secs(10)).min(ms(20_000));
        assert_eq!(a.ended, Some(end));
        assert_eq!(a.state, AttemptState::Failed(ConnectError::AttemptTimeout));
        let reports = trace
            .iter()
            .filter(|(_, x)| matches!(x, A::Report { attempt, .. } if attempt.0 == n))
            .count();
        assert_eq!(reports, 1, "attempt {n}");
    }
    // Every attempt started after the 6th abandonment runs to its own 10 s
    // timeout (or the deadline) in its slot.
    let last = r.attempt(id(abandoned[4])).unwrap().passive_since.unwrap();
    assert!(r
        .attempts()
        .iter()
        .filter(|a| a.started >= last && !a.floor)
        .all(|a| a.passive_since.is_none() && !a.abandoned));
    // Never more sockets than the bound.
    let lives: Vec<_> = r
        .attempts()
        .iter()
        .map(|a| (a.started, a.ended.unwrap()))
        .collect();
    for &(t, _) in &lives {
        let open = lives.iter().filter(|&&(s, e)| s <= t && t < e).count();
        assert!(open <= RaceConfig::for_profile(Profile::Stn).max_open());
    }
    // Bounded by the 20 s overall timeout.
    assert_eq!(failed_at(&trace), Some((ms(20_000), FailReason::Deadline)));
    assert_eq!(r.deadline(), Some(ms(20_000)));
    // Each round alternates the two candidates.
    for a in r.attempts() {
        assert_eq!(a.addr, addr(1 + (a.id.0 % 2) as u8));
    }
}

#[test]
fn stn_never_abandons_without_a_replacement() {
    // One pass only: abandoning the last attempt would just throw away its
    // pending SYN retransmissions, so it runs to its own timeout instead.
    let config = RaceConfig {
        max_rounds: Some(1),
        ..RaceConfig::default()
    };
    let mut r = Race::new(
        ms(0),
        config,
        vec![addr(1)],
        Some(Duration::from_millis(10)),
        None,
    );
    assert_eq!(r.attempt(id(0)).unwrap().abandon_at, Some(ms(1110)));
    let trace = run_black_holed(&mut r);
    assert_eq!(
        trace,
        vec![
            (ms(0), connect(0, 1)),
            (ms(10_000), cancel(0, 1)),
            (
                ms(10_000),
                report(0, 1, R::Failed(ConnectError::AttemptTimeout))
            ),
            (
                ms(10_000),
                A::Failed {
                    reason: FailReason::Exhausted,
                    last_error: Some(ConnectError::AttemptTimeout),
                    attempts: 1
                }
            ),
        ]
    );
}

#[test]
fn stn_respects_caller_deadline() {
    let mut r = race(Profile::Stn, &[1], Some(100), Some(3000));
    let trace = run_black_holed(&mut r);
    assert_eq!(failed_at(&trace), Some((ms(3000), FailReason::Deadline)));
    assert!(trace.iter().all(|(t, _)| *t <= ms(3000)));
    // Everything in flight at the deadline is closed and reported.
    let at_end: Vec<_> = trace
        .iter()
        .filter(|(t, _)| *t == ms(3000))
        .map(|(_, a)| *a)
        .collect();
    let cancelled: Vec<u32> = at_end
        .iter()
        .filter_map(|a| match a {
            A::Cancel { attempt, .. } => Some(attempt.0),
            _ => None,
        })
        .collect();
    // RTT 100 ms: stagger 250 ms, abandon after 1.2 s. In the slots at 3 s:
    // attempts 6 (2.4 s), 8 (2.65 s), 9 (2.9 s); passive: attempts 0 to 5
    // (abandoned 1.2 s after their starts, the 6 abandonments of the race;
    // 0 is the first floor attempt) and the floor attempt started at 2.5 s
    // (attempt 7). Only those not yet reported get a failure.
    assert_eq!(cancelled, (0..10).collect::<Vec<u32>>());
    let failed: Vec<u32> = at_end
        .iter()
        .filter_map(|a| match a {
            A::Report {
                attempt,
                result: R::Failed(ConnectError::AttemptTimeout),
                ..
            } => Some(attempt.0),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![0, 6, 7, 8, 9]);
    assert!((1..6).all(|n| r.attempt(id(n)).unwrap().abandoned));
    assert_eq!(r.attempt(id(7)).unwrap().started, ms(2500));
    assert!(r.attempt(id(7)).unwrap().floor);
    assert_eq!(r.attempt(id(7)).unwrap().passive_since, Some(ms(2500)));
}

/// Each attempt's (start, end) in a race driven with no connect answers.
fn black_holed_lifetimes(mut race: Race) -> Vec<(Instant, Instant)> {
    run_black_holed(&mut race);
    race.attempts()
        .iter()
        .map(|a| (a.started, a.ended.expect("finished race")))
        .collect()
}

/// SYN send offsets of the OS schedules (docs/peers.md §3.1), in s.
const XNU_SYNS: &[u64] = &[0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67];
const LINUX_CLASSIC_SYNS: &[u64] = &[0, 1, 3, 7, 15, 31, 63];

/// The instants before `until` at which the OS sends a SYN for some attempt,
/// each sending on `offsets` from its start while it is open.
fn syn_instants(
    lives: &[(Instant, Instant)],
    offsets: &[u64],
    until: Instant,
) -> std::collections::BTreeSet<Instant> {
    lives
        .iter()
        .flat_map(|&(start, end)| {
            offsets
                .iter()
                .map(move |&o| start + Duration::from_secs(o))
                .filter(move |&t| t < end && t < until)
        })
        .collect()
}

#[test]
fn stn_floor_follows_mars_schedule() {
    // 5 black-holed addresses, no RTT hint, the race's own 20 s cap.
    let lives = black_holed_lifetimes(race(Profile::Stn, &[1, 2, 3, 4, 5], None, None));
    let mars = black_holed_lifetimes(race(Profile::Mars, &[1, 2, 3, 4, 5], None, None));
    let mut r = race(Profile::Stn, &[1, 2, 3, 4, 5], None, None);
    run_black_holed(&mut r);
    let floor: Vec<_> = r
        .attempts()
        .iter()
        .filter(|a| a.floor)
        .map(|a| (a.started, a.ended.unwrap()))
        .collect();
    // Mars's rule with Mars's constants: 2.5 s apart, at most 3 open, each
    // open for 10 s; it goes round the list until the 20 s deadline.
    assert_eq!(
        floor,
        [0, 2500, 5000, 10_000, 12_500, 15_000]
            .map(|t| (ms(t), ms((t + 10_000).min(20_000))))
            .to_vec()
    );
    assert_eq!(
        mars.iter().map(|m| m.0).collect::<Vec<_>>(),
        [0, 2500, 5000, 10_000, 12_500].map(ms).to_vec()
    );
    // Never more than 3 slots + 3 floor attempts + 6 probes open.
    let bound = RaceConfig::for_profile(Profile::Stn).max_open();
    assert_eq!(bound, 12);
    for &(t, _) in &lives {
        let open = lives.iter().filter(|&&(s, e)| s <= t && t < e).count();
        assert!(open <= bound, "{open} open at {t:?}");
    }
    assert!(lives
        .iter()
        .any(|&(t, _)| lives.iter().filter(|&&(s, e)| s <= t && t < e).count() > 3));
}

#[test]
fn stn_has_a_syn_on_the_wire_whenever_mars_has() {
    // Both races driven with no connect answers (a long outage). For each
    // Mars attempt, stn has one started at the same instant and open at least
    // as long (or until its own race ends), so under any OS retransmission
    // schedule every SYN Mars sends, stn sends too.
    let engine_like = RaceConfig {
        overall_timeout: None,
        ..RaceConfig::for_profile(Profile::Stn)
    };
    let window = ms(30_000);
    let (mut cases, mut before_missed) = (0, 0);
    for cands in [&[1][..], &[1, 1, 1, 1], &[1, 2, 3, 4, 5]] {
        let addrs: Vec<SocketAddr> = cands.iter().map(|&c| addr(c)).collect();
        let mars = black_holed_lifetimes(Race::new(
            ms(0),
            RaceConfig::for_profile(Profile::Mars),
            addrs.clone(),
            None,
            None,
        ));
        for rtt in [None, Some(10), Some(60), Some(200), Some(800), Some(2000)] {
            let rtt = rtt.map(Duration::from_millis);
            for (config, deadline) in [
                (RaceConfig::for_profile(Profile::Stn), None),
                (engine_like, Some(ms(40_000))),
            ] {
                let race = |config| Race::new(ms(0), config, addrs.clone(), rtt, deadline);
                let stn = black_holed_lifetimes(race(config));
                let stn_end = stn.iter().map(|l| l.1).max().unwrap();
                for &(ms_, me) in &mars {
                    assert!(
                        stn.iter().any(|&(s, e)| s == ms_ && e >= me.min(stn_end)),
                        "{cands:?} rtt {rtt:?}: no stn attempt like Mars's {ms_:?}..{me:?}"
                    );
                }
                for os in [XNU_SYNS, LINUX_CLASSIC_SYNS] {
                    let m = syn_instants(&mars, os, window);
                    let s = syn_instants(&stn, os, window);
                    let missing: Vec<_> = m.difference(&s).collect();
                    assert!(missing.is_empty(), "{cands:?} rtt {rtt:?}: {missing:?}");
                    let before = black_holed_lifetimes(race(RaceConfig {
                        floor: None,
                        ..config
                    }));
                    cases += 1;
                    before_missed += usize::from(!m.is_subset(&syn_instants(&before, os, window)));
                }
            }
        }
    }
    // Without the floor stn misses some of Mars's SYNs in most cases (48 of
    // 72): its kept probes start off Mars's instants.
    assert!(3 * before_missed >= 2 * cases, "{before_missed} of {cases}");
}

#[test]
fn stn_does_not_retry_refusing_addresses() {
    // One address that refuses: no busy loop of instant retries.
    let mut r = race(Profile::Stn, &[1], None, None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    r.handle_failed(ms(1), id(0), ConnectError::Refused);
    assert_eq!(
        drain(&mut r),
        vec![
            report(0, 1, R::Failed(ConnectError::Refused)),
            A::Failed {
                reason: FailReason::Exhausted,
                last_error: Some(ConnectError::Refused),
                attempts: 1
            },
        ]
    );
    // Two addresses, one refusing: round 2 only goes to the other one.
    let mut r = race(Profile::Stn, &[1, 2], Some(10), None);
    drain(&mut r);
    r.handle_failed(ms(1), id(0), ConnectError::Refused);
    assert_eq!(
        drain(&mut r),
        vec![
            report(0, 1, R::Failed(ConnectError::Refused)),
            connect(1, 2)
        ]
    );
    r.handle_timeout(ms(101));
    assert_eq!(drain(&mut r), vec![connect(2, 2)]);
    assert_eq!(r.attempt(id(2)).unwrap().round, 1);
}

#[test]
fn adaptive_stagger_follows_rtt_hint_within_bounds() {
    for (rtt, stagger) in [
        (1, 100),
        (25, 100),
        (100, 250),
        (300, 650),
        (975, 2000),
        (5000, 2000),
    ] {
        let mut r = race(Profile::Stn, &[1, 2], Some(rtt), None);
        assert_eq!(r.stagger(), Duration::from_millis(stagger), "rtt {rtt}");
        assert_eq!(drain(&mut r), vec![connect(0, 1)]);
        assert_eq!(r.poll_timeout(), Some(ms(stagger)), "rtt {rtt}");
    }
    // Mars profiles ignore the hint.
    let r = race(Profile::Mars, &[1, 2], Some(10), None);
    assert_eq!(r.stagger(), Duration::from_millis(2500));
}

#[test]
fn cancel_closes_everything_in_flight() {
    let mut r = race(Profile::Mars, &[1, 2, 3], None, None);
    r.handle_timeout(ms(2500));
    drain(&mut r);
    r.cancel(ms(3000));
    assert_eq!(drain(&mut r), vec![cancel(0, 1), cancel(1, 2)]);
    assert!(r.is_finished());
    assert_eq!(r.outcome(), Some(RaceOutcome::Cancelled));
    assert_eq!(r.poll_timeout(), None);
    r.handle_connected(ms(3100), id(1));
    r.handle_timeout(ms(20_000));
    r.cancel(ms(20_000));
    assert_eq!(drain(&mut r), vec![]);
    assert_eq!(r.attempt(id(0)).unwrap().state, AttemptState::Cancelled);
}

#[test]
fn empty_list_fails_at_once() {
    for p in Profile::ALL {
        let mut r = race(p, &[], None, None);
        assert_eq!(
            drain(&mut r),
            vec![A::Failed {
                reason: FailReason::NoCandidates,
                last_error: None,
                attempts: 0
            }]
        );
        assert!(r.is_finished());
        assert_eq!(r.poll_timeout(), None);
    }
}

#[test]
fn unknown_and_finished_ids_are_ignored() {
    let mut r = race(Profile::Stn, &[1, 2], None, None);
    drain(&mut r);
    r.handle_connected(ms(10), id(7));
    r.handle_failed(ms(10), id(u32::MAX), ConnectError::Reset);
    assert_eq!(drain(&mut r), vec![]);
    r.handle_failed(ms(20), id(0), ConnectError::Unreachable);
    assert_eq!(drain(&mut r).len(), 2); // report + next connect
    r.handle_failed(ms(30), id(0), ConnectError::Unreachable); // already failed
    r.handle_connected(ms(30), id(0));
    assert_eq!(drain(&mut r), vec![]);
    r.handle_connected(ms(40), id(1));
    assert_eq!(drain(&mut r).len(), 2); // report + won
    r.handle_connected(ms(50), id(1));
    r.handle_failed(ms(50), id(1), ConnectError::Reset);
    assert_eq!(drain(&mut r), vec![]);
}

#[test]
fn time_going_backwards_is_clamped() {
    let mut r = race(Profile::Mars, &[1, 2], None, None);
    drain(&mut r);
    r.handle_timeout(ms(3000));
    assert_eq!(drain(&mut r), vec![connect(1, 2)]);
    // An older `now` cannot produce a negative connect time or move time back.
    r.handle_connected(ms(1000), id(1));
    let out = drain(&mut r);
    assert_eq!(
        out.last(),
        Some(&A::Won {
            attempt: id(1),
            addr: addr(2),
            connect_time: Duration::ZERO
        })
    );
}

#[test]
fn deadline_in_the_past_fails_without_attempts() {
    let mut r = Race::new(
        ms(5000),
        RaceConfig::default(),
        vec![addr(1)],
        None,
        Some(ms(4000)),
    );
    assert_eq!(
        drain(&mut r),
        vec![A::Failed {
            reason: FailReason::Deadline,
            last_error: None,
            attempts: 0
        }]
    );
}

#[test]
fn degenerate_config_does_not_panic_or_spin() {
    let config = RaceConfig {
        stagger: Duration::ZERO,
        error_stagger: Duration::ZERO,
        max_in_flight: 0,
        attempt_timeout: Duration::ZERO,
        adaptive_stagger: None,
        abandon: Some(AbandonPolicy {
            syn_rto: Duration::ZERO,
            ..AbandonPolicy::default()
        }),
        floor: Some(ProbeFloor {
            pass_gap: None,
            stagger: Duration::ZERO,
            max_open: 0,
        }),
        max_rounds: Some(0),
        overall_timeout: None,
        loser_reports: LoserReports::AllLost,
        quiet: None,
    };
    let mut r = Race::new(ms(0), config, vec![addr(1), addr(2)], None, None);
    let trace = run_black_holed(&mut r);
    assert_eq!(connect_times(&trace), vec![ms(0), ms(1)]);
    assert_eq!(failed_at(&trace), Some((ms(2), FailReason::Exhausted)));
}

// ------------------------------------------------------- determinism

/// A pseudo-random input sequence driven by a seed; returns the action trace.
fn random_trace(seed: u64, profile: Profile) -> Vec<(Instant, RaceAction)> {
    let mut rng = Rng::new(seed);
    let n = rng.below(6) as u8;
    let cands: Vec<SocketAddr> = (0..n).map(|_| addr(rng.below(3) as u8)).collect();
    let rtt = rng
        .chance(0.5)
        .then(|| Duration::from_millis(rng.below(1500)));
    let mut now = ms(0);
    let mut r = Race::new(now, RaceConfig::for_profile(profile), cands, rtt, None);
    let mut trace: Vec<_> = drain(&mut r).into_iter().map(|a| (now, a)).collect();
    for _ in 0..200 {
        match rng.below(4) {
            0 => now += Duration::from_millis(rng.below(3000)),
            1 => r.handle_connected(now, AttemptId(rng.below(8) as u32)),
            2 => r.handle_failed(now, AttemptId(rng.below(8) as u32), ConnectError::Refused),
            _ => {
                if let Some(t) = r.poll_timeout() {
                    now = now.max(t);
                }
                r.handle_timeout(now);
            }
        }
        trace.extend(drain(&mut r).into_iter().map(|a| (now, a)));
    }
    trace
}

#[test]
fn same_inputs_same_trace() {
    for p in Profile::ALL {
        for seed in 0..50 {
            let a = random_trace(seed, p);
            assert_eq!(a, random_trace(seed, p));
        }
    }
}

// ---------------------------------------------------------- quickcheck

quickcheck::quickcheck! {
    fn adaptive_stagger_monotone_and_bounded(a: u64, b: u64, factor: u8, margin: u32) -> bool {
        let s = AdaptiveStagger { rtt_factor: u32::from(factor), margin: Duration::from_micros(u64::from(margin)), ..AdaptiveStagger::default() };
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (x, y) = (s.stagger_for(Duration::from_nanos(lo)), s.stagger_for(Duration::from_nanos(hi)));
        x <= y && x >= s.min && y <= s.max
            && RaceConfig::default().stagger_for(Some(Duration::from_nanos(lo))) >= Duration::from_millis(100)
            && RaceConfig::default().stagger_for(Some(Duration::from_nanos(hi))) <= Duration::from_secs(2)
    }

    fn abandon_after_monotone_and_at_least_syn_rto(a: u64, b: u64) -> bool {
        let p = AbandonPolicy::default();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (x, y) = (p.abandon_after(Some(Duration::from_nanos(lo))), p.abandon_after(Some(Duration::from_nanos(hi))));
        x <= y && x > p.syn_rto
    }
}

// ------------------------------------------------- proptest state machine

mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Advance(u64),
        Timeout,
        Connected(usize),
        Failed(usize, u8),
        Stale(u32),
        Cancel,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..3000).prop_map(Op::Advance),
            4 => Just(Op::Timeout),
            1 => any::<usize>().prop_map(Op::Connected),
            3 => (any::<usize>(), 0u8..6).prop_map(|(i, e)| Op::Failed(i, e)),
            1 => (0u32..40).prop_map(Op::Stale),
            1 => Just(Op::Cancel),
        ]
    }

    fn error(e: u8) -> ConnectError {
        [
            ConnectError::Refused,
            ConnectError::Reset,
            ConnectError::TimedOut,
            ConnectError::Unreachable,
            ConnectError::AttemptTimeout,
            ConnectError::Other(5),
        ][usize::from(e) % 6]
    }

    /// What the caller can know from the action stream alone.
    struct Model {
        profile: Profile,
        config: RaceConfig,
        candidates: Vec<SocketAddr>,
        stagger: Duration,
        open: BTreeMap<u32, SocketAddr>,
        /// How each started attempt was closed: 'c' cancel, 'f' adapter failure, 'w' won.
        closed: BTreeMap<u32, Vec<char>>,
        connects: u32,
        last_start: Option<Instant>,
        last_event_failed: bool,
        terminal: u32,
        cancelled: bool,
        /// Round-robin position of the next start.
        cursor: u64,
        /// Start time of every attempt.
        started: BTreeMap<u32, Instant>,
        /// Addresses with an attempt the adapter reported failed.
        hard: std::collections::BTreeSet<SocketAddr>,
        max_rounds: u32,
        deadline: Option<Instant>,
        rtt: Option<Duration>,
        /// Open attempts in a slot, with the model's own abandon time.
        slot: BTreeMap<u32, Option<Instant>>,
        /// Open floor attempts.
        floor_open: std::collections::BTreeSet<u32>,
        /// Attempts that were passive (outside the slots) at some point.
        was_passive: std::collections::BTreeSet<u32>,
        last_floor_start: Option<Instant>,
        abandons: u32,
        /// Attempts the model says the abandon rule reports in this step.
        expect_abandoned: std::collections::BTreeSet<u32>,
        /// Attempts reported Abandoned (kept open as passive probes).
        abandoned: std::collections::BTreeSet<u32>,
    }

    impl Model {
        fn is_mars(&self) -> bool {
            self.profile != Profile::Stn
        }

        fn close(&mut self, attempt: u32, how: char) {
            assert!(
                self.open.remove(&attempt).is_some(),
                "close of non-open attempt {attempt} ({how})"
            );
            self.slot.remove(&attempt);
            self.floor_open.remove(&attempt);
            self.closed.entry(attempt).or_default().push(how);
        }

        fn attempt_timeout(&self) -> Duration {
            self.config.attempt_timeout.max(Duration::from_millis(1))
        }

        /// The abandon rule, written out: `max(k·rtt, syn_rto + rtt + slack)`
        /// after the start, if shorter than the attempt timeout and the race
        /// still abandons.
        fn abandon_time(&self, start: Instant) -> Option<Instant> {
            let p = self.config.abandon?;
            if self.abandons >= p.max_abandons {
                return None;
            }
            let rtt = self.rtt.unwrap_or(p.assumed_rtt);
            let by_rtt = rtt.saturating_mul(p.rtt_factor);
            let by_syn = p.syn_rto + rtt + p.slack;
            let after = if by_rtt > by_syn { by_rtt } else { by_syn };
            (after < self.attempt_timeout()).then(|| start + after)
        }

        fn max_slots(&self) -> usize {
            self.config.max_in_flight.max(1)
        }

        fn max_floor(&self) -> usize {
            self.config.floor.map_or(0, |f| f.max_open.max(1))
        }

        /// When Mars's rule over the floor attempts starts the next one.
        fn floor_start_at(&self) -> Option<Instant> {
            let f = self.config.floor?;
            (self.floor_open.len() < self.max_floor()).then(|| {
                self.last_floor_start
                    .map_or(Instant::ZERO, |t| t + f.stagger)
            })
        }

        /// Rule 2 of the abandon policy at `now`, before the step's actions:
        /// slot attempts past their abandon time (and not past their own
        /// deadline) are closed, or, floor attempts, made passive — if a
        /// replacement may start and the race still abandons.
        fn time_passes(&mut self, now: Instant) {
            if self.terminal > 0 || self.cancelled {
                return;
            }
            let timeout = self.attempt_timeout();
            let max = self.config.abandon.map_or(0, |p| p.max_abandons);
            let due: Vec<u32> = self
                .slot
                .iter()
                .filter(|&(id, at)| {
                    at.is_some_and(|t| t <= now) && self.started[id] + timeout > now
                })
                .map(|(id, _)| *id)
                .collect();
            for id in due {
                let replaceable =
                    self.deadline.is_none_or(|d| now < d) && self.expected_next().is_some();
                if self.abandons >= max || !replaceable {
                    self.slot.insert(id, None);
                    continue;
                }
                self.abandons += 1;
                self.last_event_failed = true;
                self.slot.remove(&id);
                // Kept open outside the slots; reported unless a floor
                // attempt.
                self.was_passive.insert(id);
                if !self.floor_open.contains(&id) {
                    self.expect_abandoned.insert(id);
                }
            }
        }

        /// The round-robin position the next start must take, if any: every
        /// entry in round 0, later rounds skip hard-failed addresses.
        fn expected_next(&self) -> Option<u64> {
            let n = self.candidates.len() as u64;
            (self.cursor..self.cursor + n)
                .find(|&pos| {
                    let idx = (pos % n) as usize;
                    pos / n == 0 || !self.hard.contains(&self.candidates[idx])
                })
                .filter(|&pos| pos / n < u64::from(self.max_rounds))
        }

        fn gap_ok(&self, now: Instant) -> bool {
            match self.last_start {
                None => true,
                Some(t) if self.last_event_failed => now >= t + self.config.error_stagger,
                Some(t) => now >= t + self.slot_gap(),
            }
        }

        /// The stagger before the next slot start: without an RTT hint
        /// (stn), at least the SYN RTO when the next address has an attempt
        /// still open.
        fn slot_gap(&self) -> Duration {
            let (None, Some(_), Some(p)) =
                (self.rtt, self.config.adaptive_stagger, self.config.abandon)
            else {
                return self.stagger;
            };
            let n = self.candidates.len() as u64;
            let next = self
                .expected_next()
                .map(|pos| self.candidates[(pos % n) as usize]);
            if next.is_some_and(|a| self.open.values().any(|o| *o == a)) {
                self.stagger.max(p.syn_rto)
            } else {
                self.stagger
            }
        }

        /// Checks and applies the actions produced by one input at `now`
        /// (`drove`: the race serviced its timers, as every input but a win
        /// and a cancel does).
        fn absorb(&mut self, now: Instant, actions: &[RaceAction], drove: bool) {
            if drove {
                self.time_passes(now);
            }
            for a in actions {
                assert_eq!(self.terminal, 0, "action after the end: {a:?}");
                match *a {
                    A::Connect { attempt, addr } => {
                        assert!(!self.cancelled);
                        assert_eq!(attempt.0, self.connects, "ids are start order");
                        assert!(self.candidates.contains(&addr));
                        let slot_due = self.slot.len() < self.max_slots() && self.gap_ok(now);
                        // Floor starts come first; one takes a slot only if a
                        // slot start is due too.
                        let floor = self.floor_start_at().is_some_and(|t| t <= now);
                        let in_slot = slot_due;
                        if !floor {
                            assert!(self.slot.len() < self.max_slots(), "slot limit");
                            assert!(slot_due, "started before its stagger at {now:?}");
                        }
                        let pos = self
                            .expected_next()
                            .expect("Connect with no candidate left");
                        let n = self.candidates.len() as u64;
                        assert_eq!(
                            addr,
                            self.candidates[(pos % n) as usize],
                            "round-robin order"
                        );
                        self.cursor = pos + 1;
                        if self.is_mars() {
                            assert_eq!(
                                addr, self.candidates[attempt.0 as usize],
                                "Mars: one pass in order"
                            );
                        }
                        self.open.insert(attempt.0, addr);
                        self.started.insert(attempt.0, now);
                        self.connects += 1;
                        if floor {
                            self.floor_open.insert(attempt.0);
                            self.last_floor_start = Some(now);
                        }
                        if in_slot {
                            self.slot.insert(attempt.0, self.abandon_time(now));
                            self.last_start = Some(now);
                            self.last_event_failed = false;
                        } else {
                            self.was_passive.insert(attempt.0);
                        }
                        assert!(self.open.len() <= self.config.max_open());
                    }
                    A::Cancel { attempt, addr } => {
                        assert_eq!(self.open.get(&attempt.0), Some(&addr));
                        self.close(attempt.0, 'c');
                    }
                    A::Linger { attempt, addr, .. } => {
                        // Handed over unjudged: no report for it may follow.
                        assert_eq!(self.open.get(&attempt.0), Some(&addr));
                        assert!(
                            !self.abandoned.contains(&attempt.0),
                            "linger after a verdict"
                        );
                        self.close(attempt.0, 'l');
                    }
                    A::Report {
                        attempt, result, ..
                    } => {
                        assert!(attempt.0 < self.connects);
                        match result {
                            // Only a failure that frees a slot hastens the next start.
                            R::Failed(_) => {
                                self.last_event_failed |= !self.was_passive.contains(&attempt.0);
                            }
                            R::Abandoned => {
                                assert!(
                                    self.expect_abandoned.remove(&attempt.0),
                                    "attempt {} abandoned at {now:?} against the rule",
                                    attempt.0
                                );
                                assert!(self.open.contains_key(&attempt.0), "probe closed");
                                assert!(self.abandoned.insert(attempt.0), "abandoned twice");
                            }
                            R::Connected { .. } | R::Lost | R::Outpaced => {}
                        }
                        // A probe closed by stn's timers or a win gets no
                        // second verdict.
                        if self.abandoned.contains(&attempt.0)
                            && self.closed.get(&attempt.0) == Some(&vec!['c'])
                        {
                            assert_eq!(result, R::Lost, "second verdict for {}", attempt.0);
                        }
                        if result == R::Abandoned {
                            assert!(
                                self.expected_next().is_some(),
                                "abandoned without a replacement"
                            );
                        }
                        if matches!(result, R::Abandoned | R::Lost | R::Outpaced) {
                            assert!(
                                !self.is_mars(),
                                "Mars profiles never abandon or report Lost"
                            );
                        }
                    }
                    A::Won { attempt, .. } => {
                        self.close(attempt.0, 'w');
                        self.terminal += 1;
                    }
                    A::Failed {
                        attempts, reason, ..
                    } => {
                        assert_eq!(attempts, self.connects);
                        match reason {
                            FailReason::NoCandidates => assert!(self.candidates.is_empty()),
                            FailReason::Exhausted => {
                                assert!(self.open.is_empty() && self.expected_next().is_none());
                            }
                            FailReason::Deadline => {
                                assert!(self.deadline.is_some_and(|d| now >= d));
                            }
                        }
                        self.terminal += 1;
                    }
                }
            }
            assert!(
                self.expect_abandoned.is_empty(),
                "not abandoned at {now:?}: {:?}",
                self.expect_abandoned
            );
        }

        /// Invariants after a drain.
        fn check(&self, now: Instant, race: &Race) {
            assert_eq!(race.in_flight(), self.open.len());
            assert_eq!(race.active(), self.slot.len());
            assert!(race.active() <= self.max_slots());
            assert!(race.in_flight() <= self.config.max_open());
            for &id in self.open.keys() {
                let a = race.attempt(AttemptId(id)).unwrap();
                assert_eq!(a.floor, self.floor_open.contains(&id), "floor flag of {id}");
                assert_eq!(a.passive_since.is_none(), self.slot.contains_key(&id));
            }
            assert_eq!(race.attempts_started(), self.connects);
            assert!(self.terminal <= 1);
            assert_eq!(race.is_finished(), self.terminal == 1 || self.cancelled);
            match race.poll_timeout() {
                None => assert!(race.is_finished(), "unfinished race without a timer"),
                Some(t) => assert!(t > now, "poll_timeout {t:?} not after now {now:?}"),
            }
            if race.is_finished() {
                assert!(
                    self.open.is_empty(),
                    "finished with open attempts {:?}",
                    self.open
                );
            }
            assert_eq!(race.deadline(), self.deadline);
            // Liveness against the reference model: nothing that may start is
            // left waiting, and a race with nothing in flight can still start.
            if !race.is_finished() {
                assert!(self.deadline.is_none_or(|d| now < d));
                let may_start = self.slot.len() < self.max_slots()
                    && self.expected_next().is_some()
                    && self.gap_ok(now);
                assert!(!may_start, "an attempt should have started at {now:?}");
                let floor_at = self
                    .floor_start_at()
                    .filter(|_| self.expected_next().is_some());
                assert!(
                    floor_at.is_none_or(|t| t > now),
                    "a floor attempt should have started at {now:?}"
                );
                assert!(!self.open.is_empty() || self.expected_next().is_some());
                // The timer is no later than the model's next due event.
                let t = race.poll_timeout().unwrap_or(Instant::MAX);
                if let Some(f) = floor_at {
                    assert!(t <= f, "late floor timer");
                }
                for at in self.slot.values().flatten() {
                    assert!(*at > now, "abandon time {at:?} left behind at {now:?}");
                    assert!(t <= *at, "late abandon timer");
                }
                if self.slot.len() < self.max_slots() && self.expected_next().is_some() {
                    let gap = if self.last_event_failed {
                        self.config.error_stagger
                    } else {
                        self.slot_gap()
                    };
                    assert!(
                        t <= self.last_start.unwrap_or(now) + gap,
                        "late start timer"
                    );
                }
                for start in self.open.keys().map(|k| self.started[k]) {
                    assert!(
                        t <= start + self.config.attempt_timeout,
                        "late attempt deadline"
                    );
                }
            }
        }
    }

    fn run(
        profile: Profile,
        cands: Vec<u8>,
        rtt: Option<u64>,
        deadline: Option<u64>,
        ops: Vec<Op>,
    ) {
        let config = RaceConfig::for_profile(profile);
        let candidates: Vec<SocketAddr> = cands.iter().map(|&c| addr(c)).collect();
        let mut now = ms(0);
        let rtt = rtt.map(Duration::from_millis);
        let mut race = Race::new(now, config, candidates.clone(), rtt, deadline.map(ms));
        let model_deadline = match (deadline.map(ms), config.overall_timeout.map(|t| ms(0) + t)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut m = Model {
            profile,
            config,
            candidates,
            stagger: config.stagger_for(rtt),
            open: BTreeMap::new(),
            closed: BTreeMap::new(),
            connects: 0,
            last_start: None,
            last_event_failed: false,
            terminal: 0,
            cancelled: false,
            cursor: 0,
            started: BTreeMap::new(),
            hard: Default::default(),
            max_rounds: match config.max_rounds {
                Some(n) => n.max(1),
                None if model_deadline.is_some() => u32::MAX,
                None => 1,
            },
            deadline: model_deadline,
            rtt,
            slot: BTreeMap::new(),
            floor_open: Default::default(),
            was_passive: Default::default(),
            last_floor_start: None,
            abandons: 0,
            expect_abandoned: Default::default(),
            abandoned: Default::default(),
        };
        let first = drain(&mut race);
        m.absorb(now, &first, true);
        m.check(now, &race);

        let timeout_step = |race: &mut Race, m: &mut Model, now: &mut Instant| {
            let Some(t) = race.poll_timeout() else { return };
            *now = (*now).max(t);
            let before = (
                race.attempts_started(),
                race.in_flight(),
                race.is_finished(),
            );
            race.handle_timeout(*now);
            let out = drain(race);
            let after = (
                race.attempts_started(),
                race.in_flight(),
                race.is_finished(),
            );
            // Progress: the wake-up did something or moved the timer.
            assert!(!out.is_empty() || before != after || race.poll_timeout() != Some(t));
            m.absorb(*now, &out, true);
            m.check(*now, race);
        };

        for op in ops {
            let drove = match &op {
                Op::Cancel => false,
                Op::Stale(id) => !m.open.contains_key(id),
                _ => true,
            };
            match op {
                Op::Advance(d) => {
                    now += Duration::from_millis(d);
                    race.handle_timeout(now);
                }
                Op::Timeout => {
                    timeout_step(&mut race, &mut m, &mut now);
                    continue;
                }
                Op::Connected(i) | Op::Failed(i, _) if m.open.is_empty() => {
                    let _ = i;
                    continue;
                }
                Op::Connected(i) => {
                    let attempt = *m.open.keys().nth(i % m.open.len()).unwrap();
                    race.handle_connected(now, AttemptId(attempt));
                    let out = drain(&mut race);
                    assert!(matches!(
                        out.first(),
                        Some(A::Report {
                            result: R::Connected { .. },
                            ..
                        })
                    ));
                    assert!(matches!(out.last(), Some(A::Won { .. })));
                    m.absorb(now, &out, false);
                    m.check(now, &race);
                    continue;
                }
                Op::Failed(i, e) => {
                    let attempt = *m.open.keys().nth(i % m.open.len()).unwrap();
                    let err = error(e);
                    race.handle_failed(now, AttemptId(attempt), err);
                    let out = drain(&mut race);
                    assert_eq!(
                        out.first(),
                        Some(&A::Report {
                            attempt: AttemptId(attempt),
                            addr: m.open[&attempt],
                            result: R::Failed(err)
                        })
                    );
                    let failed_addr = m.open[&attempt];
                    m.close(attempt, 'f');
                    m.hard.insert(failed_addr);
                    m.absorb(now, &out, true);
                    m.check(now, &race);
                    continue;
                }
                Op::Stale(id) => {
                    if !m.open.contains_key(&id) {
                        race.handle_connected(now, AttemptId(id));
                        race.handle_failed(now, AttemptId(id), ConnectError::Reset);
                    }
                }
                Op::Cancel => {
                    let was_finished = race.is_finished();
                    race.cancel(now);
                    if !was_finished {
                        m.cancelled = true;
                    }
                }
            }
            let out = drain(&mut race);
            m.absorb(now, &out, drove);
            m.check(now, &race);
        }

        // Run out the clock: every race ends, and every attempt is closed once.
        for _ in 0..100_000 {
            if race.is_finished() {
                break;
            }
            timeout_step(&mut race, &mut m, &mut now);
        }
        assert!(race.is_finished());
        assert!(drain(&mut race).is_empty());
        assert!(m.open.is_empty());
        assert_eq!(
            m.closed.len() as u32,
            m.connects,
            "every connect is answered or cancelled"
        );
        assert!(m.closed.values().all(|v| v.len() == 1));
        assert_eq!(
            m.terminal,
            u32::from(!m.cancelled),
            "Won or Failed exactly once unless cancelled"
        );
        assert!(race.attempts().iter().all(|a| a.ended.is_some()));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

        #[test]
        fn race_state_machine(
            profile in prop_oneof![Just(Profile::Mars2017), Just(Profile::Mars), Just(Profile::Stn)],
            cands in proptest::collection::vec(0u8..4, 0..7),
            rtt in proptest::option::of(0u64..2500),
            deadline in proptest::option::of(0u64..40_000),
            ops in proptest::collection::vec(op(), 0..60),
        ) {
            run(profile, cands, rtt, deadline, ops);
        }
    }
}

/// A fuzz finding (race_ops): input for an attempt the race does not know,
/// given after a stagger deadline passed unserviced, must still service the
/// timers like `handle_timeout` would, or `poll_timeout` is left in the past.
#[test]
fn ignored_input_still_services_due_timers() {
    for late_connect in [false, true] {
        let mut r = race(Profile::Mars, &[1, 2], None, None);
        assert_eq!(drain(&mut r), vec![connect(0, 1)]);
        // The 2.5 s stagger passes without a handle_timeout; then an event
        // for attempt 1, which has not started, arrives at 2.62 s.
        let now = ms(2620);
        if late_connect {
            r.handle_connected(now, id(1));
        } else {
            r.handle_failed(now, id(1), ConnectError::Refused);
        }
        assert_eq!(drain(&mut r), vec![connect(1, 2)]);
        assert!(r.poll_timeout().is_some_and(|t| t > now));
    }
}

/// With TLS the adapter reports the TCP connect first: the winner's connect
/// time (the RTT sample) ends there, not after the handshake, and a
/// handshake that fails is a failed attempt like a refused connect.
#[test]
fn tls_handshake_time_is_not_connect_time() {
    let mut r = race(Profile::Stn, &[1, 2], Some(100), None);
    assert_eq!(drain(&mut r), vec![connect(0, 1)]);
    // The first candidate's handshake fails: the next one starts.
    r.handle_tcp_connected(ms(20), id(0));
    assert_eq!(drain(&mut r), vec![]);
    let tls = ConnectError::tls(crate::tls::TlsFailure::UnknownIssuer);
    r.handle_failed(ms(25), id(0), tls);
    let actions = drain(&mut r);
    assert_eq!(
        actions,
        vec![report(0, 1, R::Failed(tls)), connect(1, 2)],
        "{actions:?}"
    );
    r.handle_tcp_connected(ms(55), id(1));
    assert!(!r.is_finished(), "the handshake is still running");
    r.handle_connected(ms(105), id(1));
    let actions = drain(&mut r);
    assert!(
        actions.contains(&A::Won {
            attempt: id(1),
            addr: addr(2),
            connect_time: Duration::from_millis(30),
        }),
        "{actions:?}"
    );
    assert_eq!(r.attempts()[1].tcp_connected, Some(ms(55)));
    // A late duplicate is ignored.
    r.handle_tcp_connected(ms(110), id(1));
    assert_eq!(drain(&mut r), vec![]);
}

/// stn's race with the outage levers on: quiet after 3 s, the floor on
/// Mars's passes (1 s retry gap); no race cap, as on the short link.
fn quiet_config() -> RaceConfig {
    let mut c = RaceConfig::for_profile(Profile::Stn);
    c.overall_timeout = None;
    c.quiet = Some(QuietPolicy::default());
    c.floor = c.floor.map(|f| ProbeFloor {
        pass_gap: Some(Duration::from_secs(1)),
        ..f
    });
    c
}

/// Mars's race and its task's retries (1 s after each failed race) until
/// `until`: every attempt's lifetime.
fn mars_with_retries(cands: &[SocketAddr], until: Instant) -> Vec<(Instant, Instant)> {
    let mut lives = Vec::new();
    let mut start = ms(0);
    while start < until {
        let mut r = Race::new(
            start,
            RaceConfig::for_profile(Profile::Mars),
            cands.to_vec(),
            None,
            None,
        );
        let trace = run_black_holed(&mut r);
        let (end, _) = failed_at(&trace).expect("a black-holed race fails");
        lives.extend(r.attempts().iter().map(|a| (a.started, a.ended.unwrap())));
        start = end + Duration::from_secs(1);
    }
    lives
}

#[test]
fn quiet_race_keeps_every_mars_syn_with_fewer_sockets() {
    let window = ms(30_000);
    for cands in [&[1][..], &[1, 2], &[1, 2, 3, 4, 5]] {
        let addrs: Vec<SocketAddr> = cands.iter().map(|&c| addr(c)).collect();
        let mars = mars_with_retries(&addrs, window);
        for rtt in [None, Some(60), Some(300)] {
            let rtt = rtt.map(Duration::from_millis);
            let quiet = black_holed_lifetimes(Race::new(
                ms(0),
                quiet_config(),
                addrs.clone(),
                rtt,
                Some(ms(40_000)),
            ));
            let mut loud_config = RaceConfig::for_profile(Profile::Stn);
            loud_config.overall_timeout = None;
            let loud = black_holed_lifetimes(Race::new(
                ms(0),
                loud_config,
                addrs.clone(),
                rtt,
                Some(ms(40_000)),
            ));
            for os in [XNU_SYNS, LINUX_CLASSIC_SYNS] {
                let m = syn_instants(&mars, os, window);
                let q = syn_instants(&quiet, os, window);
                let missing: Vec<_> = m.difference(&q).collect();
                assert!(missing.is_empty(), "{cands:?} rtt {rtt:?}: {missing:?}");
            }
            // Past the quiet point (3 s after the last address was first
            // tried: by 5.3 s here) only the floor (3) and the probe are open.
            for t in (5_300..40_000).step_by(100).map(ms) {
                let open = quiet.iter().filter(|&&(s, e)| s <= t && t < e).count();
                assert!(open <= 4, "{cands:?} rtt {rtt:?}: {open} open at {t:?}");
            }
            assert!(
                3 * quiet.len() < 2 * loud.len(),
                "{cands:?} rtt {rtt:?}: {} connects quiet, {} racing",
                quiet.len(),
                loud.len()
            );
        }
    }
}

#[test]
fn an_answer_ends_the_quiet() {
    let mut r = Race::new(
        ms(0),
        quiet_config(),
        vec![addr(1), addr(2)],
        Some(Duration::from_millis(60)),
        Some(ms(40_000)),
    );
    let mut t = ms(0);
    drain(&mut r);
    while t < ms(4_000) {
        t = r.poll_timeout().unwrap();
        r.handle_timeout(t);
        drain(&mut r);
    }
    // Quiet: only floor attempts and the probe (the first floor attempt,
    // kept past its 10 s for 60 s) are open.
    let open: Vec<_> = r
        .attempts()
        .iter()
        .filter(|a| a.state == AttemptState::Connecting)
        .collect();
    assert!(
        open.iter().all(|a| a.floor || a.deadline == ms(60_000)),
        "at {t:?}: {open:?}"
    );
    let open = r
        .attempts()
        .iter()
        .find(|a| a.state == AttemptState::Connecting)
        .unwrap()
        .id;
    r.handle_failed(t, open, ConnectError::Refused);
    let actions = drain(&mut r);
    assert!(
        actions.iter().any(|a| matches!(a, A::Connect { .. })),
        "a refusal restarts the race at once: {actions:?}"
    );
}
