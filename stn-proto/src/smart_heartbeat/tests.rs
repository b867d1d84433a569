//! The smart heartbeat against a path with a NAT idle timeout (the worked
//! examples), stn's search branch by branch, the stored records, and
//! properties of every algorithm under random inputs.

use super::*;
use proptest::prelude::*;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn t(n: u64) -> Instant {
    Instant::from_secs(n)
}

const BACKGROUND: AppState = AppState {
    foreground: false,
    active: false,
};
const FOREGROUND: AppState = AppState {
    foreground: true,
    active: true,
};
const RTT: Duration = Duration::from_millis(100);

fn mars() -> SmartHeartbeat {
    SmartHeartbeat::new(&SmartHeartbeatConfig::Mars(MarsSmartConfig::MARS), s(210))
}

fn search() -> SmartHeartbeat {
    SmartHeartbeat::new(&SmartHeartbeatConfig::Search(SearchConfig::STN), s(210))
}

/// What [`drive`] saw.
#[derive(Debug)]
struct Run {
    /// (when, idle, answered) of every heartbeat.
    beats: Vec<(Instant, Duration, bool)>,
    /// When the record was last changed to what it ends with.
    settled_at: Option<Instant>,
    state: HeartbeatState,
    /// The machine at the end.
    smart: SmartHeartbeat,
}

impl Run {
    fn losses(&self) -> usize {
        self.beats.iter().filter(|b| !b.2).count()
    }
}

/// Drives `smart` as the long link does, in the background, on a path
/// that forgets a flow idle longer than `nat`: a heartbeat after a longer
/// idle is lost, found lost 8 s later (the noop timeout), and the link
/// reconnects 1 s after that. Answers take [`RTT`].
fn drive(mut smart: SmartHeartbeat, nat: Duration, hours: u64) -> Run {
    smart.set_label("wifi:home");
    let end = t(hours * 3600);
    let mut now = t(0);
    let mut beats = Vec::new();
    let mut settled_at = None;
    let mut last_state = None;
    'connect: while now < end {
        smart.on_established(now);
        smart.on_slot(now, true, BACKGROUND);
        let mut interval = smart.next_interval(now, BACKGROUND);
        let mut last_activity = now;
        let mut armed_at = now;
        loop {
            now = armed_at + interval;
            if now >= end {
                break 'connect;
            }
            smart.on_slot(now, false, BACKGROUND);
            let idle = now - last_activity;
            smart.on_heartbeat_start(now, idle, BACKGROUND);
            interval = smart.next_interval(now, BACKGROUND);
            armed_at = now;
            let ok = idle <= nat;
            beats.push((now, idle, ok));
            if ok {
                smart.on_answer(now + RTT);
                last_activity = now + RTT;
                if smart.rearms_eagerly() {
                    interval = smart.next_interval(now + RTT, BACKGROUND);
                }
            } else {
                now += s(8);
                smart.on_link_lost(now, LinkLoss::HeartbeatTimeout, Duration::ZERO, BACKGROUND);
                now += s(1);
            }
            let st = smart.state().map(|st| (st.learned, st.stable));
            if st != last_state {
                settled_at = Some(now);
                last_state = st;
            }
            if !ok {
                continue 'connect;
            }
        }
    }
    Run {
        beats,
        settled_at,
        state: smart.state().expect("a record"),
        smart,
    }
}

#[test]
fn mars_a_300_s_nat_converges_to_250_s() {
    let run = drive(mars(), s(300), 6);
    assert_eq!(run.state.learned, s(250));
    assert!(run.state.stable);
    // Two losses at 330 s decide it (one per connection).
    let lost: Vec<u64> = run
        .beats
        .iter()
        .filter(|b| !b.2)
        .map(|b| (b.1 + RTT).as_secs())
        .collect();
    assert_eq!(lost, vec![330, 330]);
    // Then 250 s, after three warm-ups at 210 s on each connection.
    let tail: Vec<Duration> = run.beats.iter().rev().take(5).map(|b| b.1).collect();
    assert!(tail.iter().all(|d| *d >= s(249)), "{tail:?}");
}

#[test]
fn mars_over_600_s_converges_to_580_s_without_a_loss() {
    let run = drive(mars(), s(700), 12);
    assert_eq!(run.state.learned, s(580));
    assert!(run.state.stable);
    assert_eq!(run.losses(), 0);
}

#[test]
fn mars_under_210_s_stays_at_210_s_and_loses_every_heartbeat() {
    let run = drive(mars(), s(200), 3);
    assert_eq!(run.state.learned, s(210));
    assert!(!run.state.stable);
    assert!(run.beats.len() > 40);
    assert_eq!(run.losses(), run.beats.len());
}

#[test]
fn mars_iterates_exactly_as_its_source_at_300_s() {
    // Per connection three warm-ups at 210 s, then the learned value;
    // each value needs five answers after the first one at it; the first
    // answer at a new value follows the old value's idle.
    let run = drive(mars(), s(300), 3);
    let idle: Vec<u64> = run
        .beats
        .iter()
        .map(|b| (b.1.as_millis() as u64 + 500) / 1000)
        .collect();
    let mut expected = vec![210; 8];
    expected.extend([210, 270, 270, 270, 270, 270, 270, 330]);
    expected.extend([210, 210, 210, 210, 330]);
    expected.extend([210, 210, 210, 210, 250]);
    assert_eq!(&idle[..expected.len()], &expected[..], "{idle:?}");
}

#[test]
fn stn_a_300_s_nat_settles_within_30_s_below() {
    let run = drive(search(), s(300), 3);
    assert!(run.state.stable);
    assert!(
        run.state.learned >= s(270) && run.state.learned < s(300),
        "{run:?}"
    );
    assert!(run.losses() <= 2, "{run:?}");
    // No warm-up at the minimum after a reconnect: the proof is kept.
    let settled = run.settled_at.expect("settled");
    assert!(settled < t(1800), "{settled:?} {:?}", run.beats);
}

#[test]
fn stn_under_210_s_goes_below_the_minimum() {
    for nat in [s(120), s(75), s(200)] {
        let run = drive(search(), nat, 3);
        assert!(run.state.stable, "{nat:?}: {run:?}");
        assert!(
            run.state.learned + s(30) >= nat && run.state.learned < nat,
            "{nat:?}: {:?}",
            run.state
        );
        // One loss above the minimum, one at it, one per halving below.
        assert!(run.losses() <= 4, "{nat:?}: {run:?}");
    }
}

#[test]
fn stn_over_600_s_settles_at_the_ceiling_without_a_loss() {
    let run = drive(search(), s(900), 3);
    assert_eq!(run.state.learned, s(580));
    assert!(run.state.stable);
    assert_eq!(run.losses(), 0);
}

/// A search machine connected on "n" in the background, whose next
/// heartbeat is at `interval`.
fn connected() -> (SmartHeartbeat, Duration) {
    let mut h = search();
    h.set_label("n");
    h.on_established(t(0));
    let i = h.next_interval(t(0), BACKGROUND);
    (h, i)
}

/// One background heartbeat after `idle` at `now`, answered or lost;
/// returns the next interval, and whether a loss reconnects at once.
fn heartbeat(h: &mut SmartHeartbeat, now: Instant, idle: Duration, ok: bool) -> (Duration, bool) {
    h.on_heartbeat_start(now, idle, BACKGROUND);
    // The slot is re-armed as the heartbeat goes out, as the long link does.
    h.next_interval(now, BACKGROUND);
    let at_once = if ok {
        h.on_answer(now);
        false
    } else {
        let at_once = h.on_link_lost(now, LinkLoss::HeartbeatTimeout, Duration::ZERO, BACKGROUND);
        h.on_established(now);
        at_once
    };
    (h.next_interval(now, BACKGROUND), at_once)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs `steps` (idle, answered) one after the other from `t(0)`;
/// returns the interval after each.
fn steps(h: &mut SmartHeartbeat, steps: &[(Duration, bool)]) -> Vec<Duration> {
    let mut now = t(0);
    steps
        .iter()
        .map(|(idle, ok)| {
            now += *idle;
            heartbeat(h, now, *idle, *ok).0
        })
        .collect()
}

#[test]
fn search_steps_up_from_a_step_above_the_minimum_then_20_s_in_the_bracket() {
    let (mut h, i) = connected();
    assert_eq!(
        i,
        s(270),
        "a new network starts a step above Mars's minimum"
    );
    assert_eq!(
        steps(&mut h, &[(s(270), true)]),
        vec![ms(337_500)],
        "+¼ of the proof"
    );
    let (i, at_once) = heartbeat(&mut h, t(608), ms(337_500), false);
    assert!(at_once, "a lost probe reconnects at once");
    assert_eq!(i, s(290), "into the bracket 270..337.5");
    let (i, _) = heartbeat(&mut h, t(900), s(290), true);
    assert_eq!(i, s(310));
    let (i, _) = heartbeat(&mut h, t(1210), s(310), false);
    assert_eq!(i, s(280), "bracket 290..310 is 20 s: settle 10 s below");
    let st = h.state().expect("state");
    assert!(st.stable);
    assert_eq!(st.learned, s(280));
}

#[test]
fn the_step_is_60_s_or_a_quarter_of_the_proof() {
    let (mut h, _) = connected();
    let next = steps(&mut h, &[(s(200), true), (s(270), true), (s(400), true)]);
    assert_eq!(next, vec![s(270), ms(337_500), s(500)]);
}

#[test]
fn an_idle_within_the_slack_counts_as_its_schedule() {
    let (mut h, _) = connected();
    // The answer to the previous frame made the idle a round trip short.
    let (i, _) = heartbeat(&mut h, t(270), s(269), true);
    assert_eq!(i, ms(337_500));
    // A push 100 s before the slot: only 237.5 s were proven.
    let (i, _) = heartbeat(&mut h, t(600), ms(237_500), true);
    assert_eq!(i, ms(337_500), "still probing 337.5 s");
}

#[test]
fn below_the_minimum_the_search_falls_back_then_halves_then_steps_up() {
    let (mut h, _) = connected();
    let next = steps(&mut h, &[(s(270), false), (s(210), false), (s(105), true)]);
    assert_eq!(next, vec![s(210), s(105), s(125)]);
    // Lost at the floor itself: the floor is all that is left.
    let (mut f, _) = connected();
    steps(
        &mut f,
        &[
            (s(270), false),
            (s(210), false),
            (s(105), false),
            (s(60), false),
        ],
    );
    let st = f.state().expect("state");
    assert!(st.stable);
    assert_eq!(st.learned, s(60));
}

#[test]
fn the_ceiling_settles_the_search() {
    let (mut h, mut i) = connected();
    let mut probes = Vec::new();
    let mut now = t(0);
    while !h.state().expect("state").stable {
        probes.push(i);
        now += i;
        i = heartbeat(&mut h, now, i, true).0;
    }
    assert_eq!(i, s(580));
    assert_eq!(
        probes,
        vec![
            s(270),
            ms(337_500),
            ms(421_875),
            Duration::from_micros(527_343_750),
            s(580)
        ]
    );
}

#[test]
fn losses_at_a_proven_interval_restart_the_search_below_them() {
    let (mut h, _) = connected();
    steps(&mut h, &[(s(270), true)]);
    // 250 s is proven (270 was): a loss there is not a probe's.
    let (_, at_once) = heartbeat(&mut h, t(600), s(250), false);
    assert!(!at_once, "not a probe: the monitor's schedule applies");
    assert_eq!(
        h.state().expect("state").learned,
        ms(337_500),
        "one loss changes nothing"
    );
    let (i, _) = heartbeat(&mut h, t(900), s(250), false);
    assert_eq!(
        i,
        s(210),
        "two in a row: search below 250 s, from the minimum"
    );
}

#[test]
fn a_settled_record_is_searched_again_after_7_days() {
    let (mut h, _) = connected();
    steps(
        &mut h,
        &[
            (s(270), true),
            (ms(337_500), false),
            (s(290), true),
            (s(310), false),
        ],
    );
    // The last change: the loss at 310 s, 1207.5 s in.
    let now = t(0) + ms(1_207_500);
    assert_eq!(h.next_interval(now, BACKGROUND), s(280));
    let week = now + s(7 * 24 * 3600);
    assert_eq!(h.next_interval(week - s(1), BACKGROUND), s(280));
    assert_eq!(
        h.next_interval(week, BACKGROUND),
        ms(362_500),
        "the proof (290 s) + a quarter"
    );
    assert!(!h.state().expect("state").stable);
}

#[test]
fn the_foreground_neither_probes_nor_learns() {
    let (mut h, _) = connected();
    assert_eq!(h.next_interval(t(0), FOREGROUND), s(210));
    // A lost foreground heartbeat (a lossy moment) teaches nothing.
    h.on_heartbeat_start(t(210), s(210), FOREGROUND);
    assert!(!h.on_link_lost(
        t(218),
        LinkLoss::HeartbeatTimeout,
        Duration::ZERO,
        BACKGROUND
    ));
    h.on_established(t(219));
    assert_eq!(h.next_interval(t(219), BACKGROUND), s(270));
    // A background loss above the minimum leaves the foreground at 210 s;
    // below it, the foreground uses the proof.
    steps(&mut h, &[(s(270), false)]);
    assert_eq!(h.next_interval(t(300), FOREGROUND), s(210));
    steps(&mut h, &[(s(210), false), (s(105), true)]);
    assert_eq!(h.next_interval(t(700), FOREGROUND), s(95));
    assert!(h.rearms_eagerly());
    assert!(!mars().rearms_eagerly());
}

#[test]
fn tasks_wait_for_a_noop_beyond_the_proof_in_the_background() {
    let (mut h, _) = connected();
    // Nothing proven: beyond the floor.
    assert!(!h.must_probe_first(s(60), BACKGROUND));
    assert!(h.must_probe_first(s(61), BACKGROUND));
    assert!(
        !h.must_probe_first(s(500), FOREGROUND),
        "the foreground trusts 210 s"
    );
    steps(&mut h, &[(s(270), true)]);
    assert!(!h.must_probe_first(s(270), BACKGROUND));
    assert!(h.must_probe_first(s(271), BACKGROUND));
    // While a probe awaits its answer, every task waits for it.
    h.on_heartbeat_start(t(700), ms(337_500), BACKGROUND);
    assert!(h.must_probe_first(Duration::ZERO, BACKGROUND));
    h.on_answer(t(700));
    assert!(!h.must_probe_first(s(300), BACKGROUND));
    // Mars writes at once.
    let mut m = mars();
    m.set_label("n");
    m.on_established(t(0));
    assert!(!m.must_probe_first(s(10_000), BACKGROUND));
}

#[test]
fn other_losses_are_not_evidence() {
    let (mut h, _) = connected();
    h.on_heartbeat_start(t(270), s(270), BACKGROUND);
    assert!(!h.on_link_lost(t(271), LinkLoss::Other, Duration::ZERO, BACKGROUND));
    h.on_established(t(272));
    assert_eq!(h.next_interval(t(272), BACKGROUND), s(270));
    // A peer's reset during a probe is the path's answer.
    h.on_heartbeat_start(t(542), s(270), BACKGROUND);
    assert!(h.on_link_lost(t(543), LinkLoss::Peer, Duration::ZERO, BACKGROUND));
}

#[test]
fn a_peer_closing_an_idle_link_beyond_the_proof_is_its_idle_limit() {
    let (mut h, _) = connected();
    steps(&mut h, &[(s(270), true)]);
    // A server that closes links idle for 300 s, before the 337.5 s probe.
    assert!(
        !h.on_link_lost(t(500), LinkLoss::Peer, s(250), BACKGROUND),
        "within the proof"
    );
    h.on_established(t(500));
    assert!(
        !h.on_link_lost(t(900), LinkLoss::Peer, s(300), FOREGROUND),
        "not in the foreground"
    );
    h.on_established(t(900));
    assert_eq!(h.next_interval(t(900), BACKGROUND), ms(337_500));
    assert!(h.on_link_lost(t(1300), LinkLoss::Peer, s(300), BACKGROUND));
    h.on_established(t(1300));
    assert_eq!(
        h.next_interval(t(1300), BACKGROUND),
        s(290),
        "bracket 270..300"
    );
}

#[test]
fn an_unlabelled_network_is_forgotten_at_a_network_change() {
    let mut h = search();
    h.on_established(t(0));
    steps(&mut h, &[(s(270), true)]);
    assert_eq!(h.next_interval(t(270), BACKGROUND), ms(337_500));
    h.set_network(NetworkKind::Mobile);
    h.on_established(t(300));
    assert_eq!(h.next_interval(t(300), BACKGROUND), s(270));
    // A labelled one is kept.
    h.set_label("wifi:x");
    h.on_established(t(400));
    steps(&mut h, &[(s(270), true)]);
    h.set_network(NetworkKind::Wifi);
    h.on_established(t(700));
    assert_eq!(h.next_interval(t(700), BACKGROUND), ms(337_500));
}

#[test]
fn at_most_20_networks_are_kept() {
    let mut h = search();
    for i in 0..30u64 {
        h.set_label(&format!("net{i}"));
        h.on_established(t(i));
    }
    let Kind::Search(s) = &h.kind else {
        unreachable!()
    };
    assert_eq!(s.records().len(), MAX_RECORDS);
    assert!(s.records().get("net9").is_none());
    assert!(s.records().get("net10").is_some());
}

fn encoded(h: &SmartHeartbeat, latest: Instant, wall: u64) -> Vec<u8> {
    let mut out = Vec::new();
    h.encode(latest, wall, &mut out);
    out
}

#[test]
fn records_round_trip_through_storage_against_the_wall_clock() {
    for make in [mars, search] {
        let run = drive(make(), s(300), 4);
        assert!(run.state.stable);
        let bytes = encoded(&run.smart, t(4 * 3600), 1_000_000);
        // A new engine, started at its own origin, a day later on the wall clock.
        let mut fresh = make();
        fresh.set_label("wifi:home");
        let decoded = SmartHeartbeat::decode(&bytes).expect("decodes");
        assert_eq!(fresh.import(decoded, 1_000_000 + 86_400, t(5)), 1);
        fresh.on_established(t(5));
        let st = fresh.state().expect("state");
        assert_eq!(
            (st.learned, st.stable),
            (run.state.learned, run.state.stable)
        );
        // The other algorithm's records are skipped.
        let mut other = if matches!(fresh.kind, Kind::Mars(_)) {
            search()
        } else {
            mars()
        };
        let decoded = SmartHeartbeat::decode(&bytes).expect("decodes");
        assert_eq!(other.import(decoded, 0, t(0)), 0);
    }
}

#[test]
fn stored_times_in_the_future_read_as_now() {
    let (mut h, _) = connected();
    heartbeat(&mut h, t(210), s(210), true);
    let bytes = encoded(&h, t(210), 5_000);
    let mut fresh = search();
    // The wall clock went back: the record reads as changed now.
    fresh.import(
        SmartHeartbeat::decode(&bytes).expect("decodes"),
        1_000,
        t(50),
    );
    let Kind::Search(s) = &fresh.kind else {
        unreachable!()
    };
    assert_eq!(s.records().get("n").map(|r| r.changed), Some(t(50)));
}

#[test]
fn malformed_records_are_refused() {
    let (mut h, _) = connected();
    heartbeat(&mut h, t(210), s(210), true);
    let bytes = encoded(&h, t(210), 5_000);
    for cut in 0..bytes.len() {
        assert!(
            SmartHeartbeat::decode(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut extra = bytes.clone();
    extra.push(0);
    assert!(SmartHeartbeat::decode(&extra).is_err());
    let mut too_many = bytes.clone();
    too_many[1] = 21;
    assert!(SmartHeartbeat::decode(&too_many).is_err());
    let mut algorithm = bytes;
    algorithm[0] = 9;
    assert!(SmartHeartbeat::decode(&algorithm).is_err());
    let mut none = Vec::new();
    SmartHeartbeat::new(&SmartHeartbeatConfig::Fixed, s(210)).encode(t(0), 0, &mut none);
    assert_eq!(SmartHeartbeat::decode(&none), Ok(DecodedRecords::default()));
}

#[derive(Clone, Debug)]
enum Op {
    Advance(u32),
    Label(u8),
    Network(bool),
    Established,
    Slot(bool),
    Start(u32, bool),
    Answer,
    Lost(u8),
    ConnectFailed,
    Next(bool, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..2_000).prop_map(Op::Advance),
        (0u8..4).prop_map(Op::Label),
        any::<bool>().prop_map(Op::Network),
        Just(Op::Established),
        any::<bool>().prop_map(Op::Slot),
        (0u32..1_000, any::<bool>()).prop_map(|(i, fg)| Op::Start(i, fg)),
        Just(Op::Answer),
        (0u8..3).prop_map(Op::Lost),
        Just(Op::ConnectFailed),
        (any::<bool>(), any::<bool>()).prop_map(|(fg, a)| Op::Next(fg, a)),
    ]
}

fn run_ops(config: &SmartHeartbeatConfig, ops: &[Op]) -> Result<Vec<Duration>, TestCaseError> {
    let mut h = SmartHeartbeat::new(config, s(210));
    let mut now = t(0);
    let mut out = Vec::new();
    for op in ops {
        match op {
            Op::Advance(secs) => now += s(u64::from(*secs)),
            Op::Label(l) => h.set_label(["", "a", "b", "c"][usize::from(*l)]),
            Op::Network(m) => h.set_network(if *m {
                NetworkKind::Mobile
            } else {
                NetworkKind::Wifi
            }),
            Op::Established => h.on_established(now),
            Op::Slot(first) => h.on_slot(now, *first, BACKGROUND),
            Op::Start(idle, fg) => {
                let app = if *fg { FOREGROUND } else { BACKGROUND };
                h.on_heartbeat_start(now, s(u64::from(*idle)), app);
            }
            Op::Answer => h.on_answer(now),
            Op::Lost(k) => {
                let loss = [LinkLoss::HeartbeatTimeout, LinkLoss::Peer, LinkLoss::Other];
                h.on_link_lost(
                    now,
                    loss[usize::from(*k)],
                    s(u64::from(*k) * 200),
                    BACKGROUND,
                );
            }
            Op::ConnectFailed => h.on_connect_failed(now),
            Op::Next(fg, active) => {
                let app = AppState {
                    foreground: *fg,
                    active: *active || *fg,
                };
                let i = h.next_interval(now, app);
                prop_assert!(i >= s(60) && i <= s(600), "interval {i:?}");
                if *fg && !matches!(config, SmartHeartbeatConfig::Fixed) {
                    prop_assert!(i <= s(210), "foreground interval {i:?}");
                }
                out.push(i);
            }
        }
    }
    // Whatever it learned survives storage.
    let mut bytes = Vec::new();
    h.encode(now, 1_000_000, &mut bytes);
    let decoded = SmartHeartbeat::decode(&bytes);
    prop_assert!(decoded.is_ok());
    Ok(out)
}

proptest! {
    #[test]
    fn intervals_stay_in_bounds_and_are_deterministic(
        which in 0usize..3,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let config = [
            SmartHeartbeatConfig::Fixed,
            SmartHeartbeatConfig::Mars(MarsSmartConfig::MARS),
            SmartHeartbeatConfig::Search(SearchConfig::STN),
        ][which].clone();
        let a = run_ops(&config, &ops)?;
        let b = run_ops(&config, &ops)?;
        prop_assert_eq!(a, b);
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = SmartHeartbeat::decode(&bytes);
    }
}

#[test]
fn the_configured_interval_applies_while_active() {
    for config in [
        SmartHeartbeatConfig::Mars(MarsSmartConfig::MARS),
        SmartHeartbeatConfig::Search(SearchConfig::STN),
    ] {
        let mut h = SmartHeartbeat::new(&config, s(60));
        h.set_label("n");
        assert_eq!(h.next_interval(t(0), FOREGROUND), s(60), "{config:?}");
        h.on_established(t(0));
        assert_eq!(h.next_interval(t(0), FOREGROUND), s(60), "{config:?}");
    }
    // Fixed: in the background too.
    let mut f = SmartHeartbeat::new(&SmartHeartbeatConfig::Fixed, s(60));
    assert_eq!(f.next_interval(t(0), BACKGROUND), s(60));
}
