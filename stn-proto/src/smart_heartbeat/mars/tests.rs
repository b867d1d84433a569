//! Script tests of Mars's `SmartHeartbeat`, one per branch of
//! `OnHeartResult`, `GetNextHeartbeatInterval`, `JudgeDozeStyle`, the
//! connect and disconnect hooks and `__LoadINI`.

use super::*;
use crate::smart_heartbeat::MAX_RECORDS;

const MIN: Duration = Duration::from_secs(210);
const TOP: Duration = Duration::from_secs(580);
const DAY: Duration = Duration::from_secs(24 * 3600);

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn t(n: u64) -> Instant {
    Instant::from_secs(n)
}

/// A machine connected at `t(0)` on "wifi:a" whose connection already had
/// the three heartbeats at the minimum.
fn warmed() -> MarsSmart {
    let mut m = MarsSmart::new(MarsSmartConfig::MARS);
    m.on_established(t(0), "wifi:a", NetworkKind::Wifi);
    for i in 1..=3 {
        beat(&mut m, t(210 * i), true, false);
    }
    assert_eq!(m.success_count, 3);
    m
}

/// One heartbeat as Mars's long link runs it: started, the next interval
/// asked for (`GetNextHeartbeatInterval` right after `__NoopReq`), then
/// its result. Returns the interval asked for.
fn beat(m: &mut MarsSmart, now: Instant, ok: bool, timeout: bool) -> Duration {
    m.on_heartbeat_start(now);
    let next = m.next_interval(false, MIN);
    m.on_heart_result(now, ok, timeout);
    next
}

fn rec(m: &MarsSmart) -> &MarsRecord {
    &m.current.as_ref().expect("a current record").rec
}

fn rec_mut(m: &mut MarsSmart) -> &mut MarsRecord {
    &mut m.current.as_mut().expect("a current record").rec
}

#[test]
fn a_result_nobody_waits_for_is_ignored() {
    let mut m = warmed();
    let before = (m.success_count, m.pre, m.cur, rec(&m).clone());
    m.on_heart_result(t(1000), true, false);
    m.on_heart_result(t(1000), false, true);
    assert_eq!((m.success_count, m.pre, m.cur, rec(&m).clone()), before);
}

#[test]
fn without_a_label_nothing_is_learned() {
    let mut m = MarsSmart::new(MarsSmartConfig::MARS);
    m.on_established(t(0), "", NetworkKind::Wifi);
    for i in 1..=20 {
        assert_eq!(beat(&mut m, t(210 * i), true, false), MIN);
    }
    assert!(m.current.is_none());
    assert_eq!(m.success_count, 0, "returns before counting");
    assert_eq!(m.records().len(), 0);
}

#[test]
fn the_first_three_answers_only_warm_up_and_count_minimum_failures() {
    let mut m = MarsSmart::new(MarsSmartConfig::MARS);
    m.on_established(t(0), "wifi:a", NetworkKind::Wifi);
    beat(&mut m, t(210), false, true);
    beat(&mut m, t(420), false, false);
    assert_eq!(rec(&m).min_heart_fail_count, 2);
    assert_eq!(rec(&m).fail_count, 0, "not counted as a learning failure");
    beat(&mut m, t(630), true, false);
    assert_eq!(rec(&m).min_heart_fail_count, 0, "an answer resets it");
    assert_eq!(rec(&m).succ_count, 0);
    // Until three answers the minimum; the third one's next interval is
    // still asked before it is counted.
    assert_eq!(m.success_count, 1);
    assert_eq!(beat(&mut m, t(840), true, false), MIN);
    assert_eq!(beat(&mut m, t(1050), true, false), MIN);
    assert_eq!(m.success_count, 3);
    assert_eq!(rec(&m).succ_count, 0, "the three warm-ups are not counted");
}

#[test]
fn an_answer_counts_only_at_the_value_used_twice_in_a_row() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(270);
    // Fourth heartbeat: it followed a 210 s idle (pre = 210) but the next
    // interval is 270 s: not a test of 270.
    assert_eq!(beat(&mut m, t(840), true, false), s(270));
    assert_eq!(rec(&m).succ_count, 0);
    // Fifth: followed 270 s and asks 270 s again: counted.
    rec_mut(&mut m).fail_count = 1;
    assert_eq!(beat(&mut m, t(1110), true, false), s(270));
    assert_eq!(rec(&m).succ_count, 1);
    assert_eq!(
        rec(&m).fail_count,
        0,
        "a counted answer clears the failures"
    );
}

#[test]
fn a_result_at_another_value_than_the_record_is_ignored() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(270);
    beat(&mut m, t(840), true, false);
    // Active: the minimum is used while the record says 270.
    m.on_heartbeat_start(t(1110));
    assert_eq!(m.next_interval(true, MIN), MIN);
    m.on_heart_result(t(1110), false, true);
    assert_eq!(m.success_count, 4, "past the warm-up");
    assert_eq!(rec(&m).fail_count, 0);
    assert_eq!(rec(&m).cur_heart, s(270));
}

#[test]
fn a_timeout_clears_the_answers_a_reset_does_not() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(270);
    beat(&mut m, t(840), true, false);
    beat(&mut m, t(1110), true, false);
    beat(&mut m, t(1380), true, false);
    assert_eq!(rec(&m).succ_count, 2);
    beat(&mut m, t(1650), false, false);
    assert_eq!((rec(&m).succ_count, rec(&m).fail_count), (2, 1));
    m.on_heartbeat_start(t(1920));
    m.next_interval(false, MIN);
    m.on_heart_result(t(1920), false, true);
    assert_eq!(rec(&m).succ_count, 0);
    // Two failures while learning: 270 - 80 = 190 is below the minimum.
    assert_eq!(rec(&m).cur_heart, MIN);
    assert!(rec(&m).stable);
    assert_eq!(rec(&m).heart_type, HeartType::Smart);
}

#[test]
fn five_answers_step_up_60_s_and_the_top_becomes_stable() {
    let mut m = warmed();
    // The fourth heartbeat's answer is the first counted at 210.
    for i in 0..5 {
        beat(&mut m, t(840 + 210 * i), true, false);
    }
    assert_eq!(rec(&m).cur_heart, s(270));
    assert_eq!(rec(&m).succ_count, 0);
    assert!(!rec(&m).stable);
    // Near the top the step is capped at 580 s, and five answers there
    // make it stable.
    rec_mut(&mut m).cur_heart = s(550);
    let mut now = 3000;
    beat(&mut m, t(now), true, false); // pre was 270: not counted
    for _ in 0..5 {
        now += 550;
        beat(&mut m, t(now), true, false);
    }
    assert_eq!(rec(&m).cur_heart, TOP);
    assert!(!rec(&m).stable);
    beat(&mut m, t(now + 580), true, false);
    for i in 1..=5 {
        beat(&mut m, t(now + 580 * (i + 1)), true, false);
    }
    assert_eq!(rec(&m).cur_heart, TOP);
    assert!(rec(&m).stable);
    assert_eq!(rec(&m).succ_count, 0);
}

#[test]
fn a_failure_at_the_minimum_returns_before_saving() {
    let mut m = warmed();
    beat(&mut m, t(840), true, false);
    assert_eq!(rec(&m).succ_count, 1);
    let saved = m.records().get("wifi:a").cloned();
    beat(&mut m, t(1050), false, true);
    assert_eq!(rec(&m).fail_count, 1, "counted in memory");
    assert_eq!(m.records().get("wifi:a").cloned(), saved, "but not saved");
    beat(&mut m, t(1260), false, true);
    assert_eq!(rec(&m).fail_count, 2);
    assert!(!rec(&m).stable, "no decision at the minimum");
    assert_eq!(rec(&m).cur_heart, MIN);
}

#[test]
fn two_failures_while_learning_settle_80_s_lower() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(330);
    beat(&mut m, t(840), true, false); // 210 → asks 330
    beat(&mut m, t(1170), false, true);
    assert_eq!(rec(&m).fail_count, 1);
    assert!(!rec(&m).stable);
    beat(&mut m, t(1500), false, true);
    assert_eq!(rec(&m).cur_heart, s(250));
    assert!(rec(&m).stable);
    assert_eq!((rec(&m).fail_count, rec(&m).succ_count), (0, 0));
    assert_eq!(m.records().get("wifi:a").map(|r| r.cur_heart), Some(s(250)));
}

#[test]
fn two_failures_while_stable_relearn_from_the_minimum() {
    let mut m = warmed();
    {
        let r = rec_mut(&mut m);
        r.cur_heart = s(400);
        r.stable = true;
    }
    beat(&mut m, t(840), true, false); // asks 400
    beat(&mut m, t(1240), false, false);
    assert!(rec(&m).stable, "one failure is not enough");
    beat(&mut m, t(1640), false, true);
    assert_eq!(rec(&m).cur_heart, MIN);
    assert!(!rec(&m).stable);
    assert_eq!((rec(&m).fail_count, rec(&m).succ_count), (0, 0));
}

#[test]
fn a_stable_value_is_probed_20_s_higher_after_7_days() {
    let mut m = warmed();
    {
        let r = rec_mut(&mut m);
        r.cur_heart = s(250);
        r.stable = true;
        r.last_modified = t(0);
    }
    beat(&mut m, t(840), true, false);
    let week = Instant::ZERO + 7 * DAY;
    beat(&mut m, week - s(1), true, false);
    assert_eq!(rec(&m).cur_heart, s(250), "not yet");
    assert!(rec(&m).stable);
    beat(&mut m, week, true, false);
    assert_eq!(rec(&m).cur_heart, s(270));
    assert!(!rec(&m).stable);
    assert_eq!(rec(&m).last_modified, week, "saved");
    // At the top there is nothing to probe.
    let mut top = warmed();
    {
        let r = rec_mut(&mut top);
        r.cur_heart = TOP;
        r.stable = true;
    }
    beat(&mut top, t(840), true, false);
    beat(&mut top, week + 7 * DAY, true, false);
    assert_eq!(rec(&top).cur_heart, TOP);
    assert!(rec(&top).stable);
}

#[test]
fn active_always_gets_the_minimum() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(400);
    assert_eq!(m.next_interval(true, MIN), MIN);
    assert_eq!(m.next_interval(false, MIN), s(400));
}

#[test]
fn disconnect_fails_the_pending_heartbeat_and_resets_the_answers() {
    let mut m = warmed();
    {
        let r = rec_mut(&mut m);
        r.cur_heart = s(300);
        r.stable = true;
    }
    beat(&mut m, t(840), true, false);
    beat(&mut m, t(1140), true, false);
    assert_eq!(rec(&m).succ_count, 1);
    m.on_heartbeat_start(t(1440));
    m.next_interval(false, MIN);
    m.on_disconnect(t(1441));
    assert!(!m.waiting);
    assert_eq!(rec(&m).fail_count, 1, "the pending heartbeat failed");
    assert_eq!(rec(&m).succ_count, 0);
    assert_eq!(m.last, MIN, "stable: last heart back to the minimum");
    // A new connection warms up again at the minimum.
    m.on_established(t(1500), "wifi:a", NetworkKind::Wifi);
    assert_eq!(m.next_interval(false, MIN), MIN);
    assert_eq!((m.pre, m.cur), (MIN, MIN));
}

#[test]
fn doze_style_is_judged_from_the_alarm_drift_on_mobile_when_inactive() {
    let mut m = warmed();
    m.last = s(210);
    // Wi-Fi, or active: not judged (and the start tick is kept).
    m.on_heartbeat_start(t(1000));
    m.judge_doze(t(1300), false, false);
    m.judge_doze(t(1300), true, true);
    assert_eq!((m.doze_count, m.normal_count), (0, 0));
    assert!(m.noop_start.is_some());
    // 90 s late: doze; the tick is then spent.
    m.judge_doze(t(1300), false, true);
    assert_eq!((m.doze_count, m.normal_count), (1, 0));
    assert!(m.noop_start.is_none());
    m.judge_doze(t(1600), false, true);
    assert_eq!(m.doze_count, 1, "no heartbeat since: nothing to judge");
    m.on_heartbeat_start(t(1600));
    m.judge_doze(t(1810), false, true); // on time
    assert_eq!((m.doze_count, m.normal_count), (0, 1));
    assert!(!m.is_doze_style());
    for k in 0..3 {
        m.on_heartbeat_start(t(2000 + 1000 * k));
        m.judge_doze(t(2000 + 1000 * k + 300), false, true);
    }
    assert_eq!((m.doze_count, m.normal_count), (3, 0));
    assert!(m.is_doze_style());
}

#[test]
fn doze_style_jumps_to_the_top_and_falls_back_to_the_minimum() {
    let mut m = warmed();
    m.doze_count = 2;
    for i in 0..5 {
        beat(&mut m, t(840 + 210 * i), true, false);
    }
    assert_eq!(rec(&m).cur_heart, TOP, "five answers jump to the top");
    // A smart (non-doze) record is reset to the minimum by
    // GetNextHeartbeatInterval unless it is at the top.
    rec_mut(&mut m).cur_heart = s(330);
    assert_eq!(m.next_interval(false, MIN), MIN);
    assert_eq!(rec(&m).cur_heart, MIN);
    // Two failures while learning in doze style: the minimum.
    let mut d = warmed();
    d.doze_count = 2;
    {
        let r = rec_mut(&mut d);
        r.cur_heart = TOP;
        r.heart_type = HeartType::Doze;
    }
    beat(&mut d, t(840), true, false);
    beat(&mut d, t(1420), false, true);
    beat(&mut d, t(2000), false, true);
    assert_eq!(rec(&d).cur_heart, MIN);
    assert!(rec(&d).stable);
    assert_eq!(rec(&d).heart_type, HeartType::Doze);
}

#[test]
fn out_of_range_values_are_reset_when_used_and_clamped_when_loaded() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(600);
    assert_eq!(m.next_interval(false, MIN), MIN);
    assert_eq!(rec(&m).cur_heart, MIN);
    // Loading: below the minimum → minimum, above the maximum → 580 s, a
    // modification time in the future → now.
    let mut n = MarsSmart::new(MarsSmartConfig::MARS);
    let mut low = MarsRecord::cleared(MIN);
    low.cur_heart = s(100);
    let mut high = MarsRecord::cleared(MIN);
    high.cur_heart = s(900);
    high.last_modified = t(5000);
    n.import(vec![("low".into(), low), ("high".into(), high)]);
    n.on_established(t(100), "low", NetworkKind::Wifi);
    assert_eq!(rec(&n).cur_heart, MIN);
    n.on_established(t(100), "high", NetworkKind::Mobile);
    assert_eq!(rec(&n).cur_heart, TOP);
    assert_eq!(rec(&n).last_modified, t(100));
}

#[test]
fn a_network_switch_keeps_each_record_and_at_most_20() {
    let mut m = warmed();
    rec_mut(&mut m).cur_heart = s(330);
    beat(&mut m, t(840), true, false);
    beat(&mut m, t(1170), false, true); // saved: fail 1 at 330
    m.on_disconnect(t(1171));
    m.on_established(t(1200), "mobile:b", NetworkKind::Mobile);
    assert_eq!(
        rec(&m).cur_heart,
        MIN,
        "a new network starts at the minimum"
    );
    assert_eq!(rec(&m).net_type, 2);
    m.on_established(t(1300), "wifi:a", NetworkKind::Wifi);
    assert_eq!((rec(&m).cur_heart, rec(&m).fail_count), (s(330), 1));
    for i in 0..30u64 {
        m.on_established(t(2000 + i), &format!("net{i}"), NetworkKind::Wifi);
    }
    assert_eq!(m.records().len(), MAX_RECORDS);
    assert!(m.records().get("net29").is_some());
    assert!(
        m.records().get("wifi:a").is_none(),
        "the stalest went first"
    );
}
