//! The examples of the internal machines' docs, run as unit tests: the
//! machines are not public, so their examples cannot be doctests. Each
//! uses the paths it would have inside the crate (`stn_proto::race::Race`).

#[test]
fn heartbeat() {
    use stn_proto::heartbeat::{Heartbeat, HeartbeatAction, HeartbeatConfig, IdentifyDecision};
    use stn_proto::time::{Duration, Instant};
    use stn_proto::Profile;

    let t0 = Instant::from_secs(10);
    let mut hb = Heartbeat::new(t0, HeartbeatConfig::for_profile(Profile::Mars));
    hb.handle_timeout(t0); // the first slot is due at connect
    assert_eq!(hb.poll_action(), Some(HeartbeatAction::AskIdentify));
    hb.identify_answer(t0, IdentifyDecision::Never);
    // No noop at connect (Mars): the first one is one interval later.
    assert_eq!(hb.poll_action(), None);
    let slot = t0 + Duration::from_secs(210);
    assert_eq!(hb.poll_timeout(), Some(slot));
    hb.handle_timeout(slot);
    assert_eq!(hb.poll_action(), Some(HeartbeatAction::SendNoop));
    assert_eq!(hb.poll_timeout(), Some(slot + Duration::from_secs(8)));
    hb.on_noop_response(slot + Duration::from_millis(80));
    // The next slot is one interval after the noop was written.
    assert_eq!(hb.poll_timeout(), Some(slot + Duration::from_secs(210)));
}

#[test]
fn limit() {
    use stn_proto::limit::{
        payload_digest, AntiAvalanche, AntiAvalancheConfig, CheckInput, LimitKind,
    };
    use stn_proto::net::NetworkKind;
    use stn_proto::time::Instant;

    let now = Instant::from_secs(1);
    let mut limits = AntiAvalanche::new(now, AntiAvalancheConfig::default(), true);
    let body = b"same request";
    let input = CheckInput {
        digest: payload_digest(body),
        len: body.len(),
        net: NetworkKind::Mobile,
        active: true,
        limit_frequency: true,
        limit_flow: true,
    };
    for _ in 0..105 {
        assert_eq!(limits.check(now, &input), Ok(()));
    }
    assert_eq!(limits.check(now, &input), Err(LimitKind::Frequency));
}

#[test]
fn limit_payload_digest() {
    assert_eq!(stn_proto::limit::payload_digest(b"Wikipedia"), 0x11E6_0398);
    assert_eq!(stn_proto::limit::payload_digest(b""), 1);
}

#[test]
fn long_link() {
    use stn_proto::io::{ConnEvent, ConnIds, IoAction};
    use stn_proto::long_link::{IdentifyDecision, LongLink, LongLinkConfig, LongLinkEvent};
    use stn_proto::time::Instant;

    let t0 = Instant::from_secs(1);
    let mut ids = ConnIds::new();
    let mut link = LongLink::new(t0, LongLinkConfig::default());
    link.handle_timeout(t0, &mut ids);
    assert_eq!(link.poll_event(), Some(LongLinkEvent::WantConnect));
    link.connect(t0, vec!["10.0.0.1:8080".parse().unwrap()], None, &mut ids);
    let conn = match link.poll_event() {
        Some(LongLinkEvent::Io(IoAction::Connect { conn, .. })) => conn,
        other => panic!("{other:?}"),
    };
    link.handle_event(t0, conn, ConnEvent::Connected, &mut ids);
    let events: Vec<_> = std::iter::from_fn(|| link.poll_event()).collect();
    assert!(events
        .iter()
        .any(|e| matches!(e, LongLinkEvent::Connected { .. })));
    // First noop slot: the app is asked for an identify packet.
    assert_eq!(events.last(), Some(&LongLinkEvent::AskIdentify));
    link.identify_answer(t0, IdentifyDecision::Never);
    // ... and, as in Mars, the first noop waits one interval (3.5 min).
    assert_eq!(link.poll_event(), None);
    assert!(link.is_connected());
}

#[test]
fn monitor() {
    use stn_proto::monitor::{ConnectMonitor, ConnectMonitorConfig, ConnectReason, MonitorAction};
    use stn_proto::time::{Duration, Instant};
    use stn_proto::Profile;

    let t0 = Instant::from_secs(100);
    let mut m = ConnectMonitor::new(t0, ConnectMonitorConfig::for_profile(Profile::Mars), true);
    // Startup: an auto evaluation is due at once and connects (nothing was tried yet).
    m.handle_timeout(t0);
    assert_eq!(
        m.poll_action(),
        Some(MonitorAction::Connect {
            reason: ConnectReason::Auto
        })
    );
    m.on_connect_started(t0);
    m.on_disconnected(t0 + Duration::from_secs(2)); // the attempt failed
                                                    // 500 ms later the monitor re-evaluates; foreground < 1 min → 15 s from the attempt start.
    m.handle_timeout(t0 + Duration::from_millis(2_500));
    assert_eq!(m.poll_action(), None);
    assert_eq!(m.poll_timeout(), Some(t0 + Duration::from_secs(15)));
}

#[test]
fn monitor_activity() {
    use stn_proto::monitor::{Activity, ActivityConfig, ActivityState};
    use stn_proto::time::Instant;
    let mut a = Activity::new(Instant::ZERO, ActivityConfig::default(), true);
    assert_eq!(a.state(Instant::from_secs(30)), ActivityState::FgUnder1Min);
    a.set_foreground(Instant::from_secs(60), false);
    assert_eq!(
        a.state(Instant::from_secs(60 + 599)),
        ActivityState::BackgroundActive
    );
    assert_eq!(
        a.state(Instant::from_secs(60 + 600)),
        ActivityState::Inactive
    );
}

#[test]
fn race() {
    use stn_proto::net::{ConnectError, SocketAddr};
    use stn_proto::race::{AttemptResult, Race, RaceAction, RaceConfig};
    use stn_proto::time::{Duration, Instant};
    use stn_proto::Profile;

    let a: SocketAddr = "10.0.0.1:443".parse().unwrap();
    let b: SocketAddr = "10.0.0.2:443".parse().unwrap();
    let t0 = Instant::from_secs(100);
    let config = RaceConfig::for_profile(Profile::Stn);
    // RTT hint 100 ms → stagger clamp(2·100 + 50, 100, 2000) = 250 ms.
    let mut race = Race::new(
        t0,
        config,
        vec![a, b],
        Some(Duration::from_millis(100)),
        None,
    );

    // The first attempt starts at once.
    let first = match race.poll_action() {
        Some(RaceAction::Connect { attempt, addr }) => {
            assert_eq!(addr, a);
            attempt
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(race.poll_action(), None);
    assert_eq!(race.poll_timeout(), Some(t0 + Duration::from_millis(250)));

    // `a` refuses: stn starts the next candidate at once.
    let t1 = t0 + Duration::from_millis(40);
    race.handle_failed(t1, first, ConnectError::Refused);
    assert!(matches!(
        race.poll_action(),
        Some(RaceAction::Report {
            result: AttemptResult::Failed(ConnectError::Refused),
            ..
        })
    ));
    let second = match race.poll_action() {
        Some(RaceAction::Connect { attempt, addr }) => {
            assert_eq!(addr, b);
            attempt
        }
        other => panic!("{other:?}"),
    };

    // `b` connects 60 ms later and wins.
    race.handle_connected(t1 + Duration::from_millis(60), second);
    assert!(matches!(
        race.poll_action(),
        Some(RaceAction::Report { .. })
    ));
    assert_eq!(
        race.poll_action(),
        Some(RaceAction::Won {
            attempt: second,
            addr: b,
            connect_time: Duration::from_millis(60)
        })
    );
    assert_eq!(race.poll_action(), None);
    assert!(race.is_finished());
    assert_eq!(race.poll_timeout(), None);
}

#[test]
fn short_link() {
    use bytes::Bytes;
    use stn_proto::io::{ConnEvent, ConnIds, IoAction};
    use stn_proto::short_link::*;
    use stn_proto::time::{Duration, Instant};

    let addr = "192.0.2.1:80".parse().unwrap();
    let mut ids = ConnIds::new();
    let t0 = Instant::from_secs(10);
    let req = ExchangeRequest {
        candidates: vec![addr],
        host: Some("example.com".into()),
        cgi: "/echo".into(),
        headers: vec![],
        body: Bytes::from_static(b"ping"),
        rtt_hint: None,
        timeouts: ExchangeTimeouts {
            first_packet: Duration::from_secs(12),
            read_write: Duration::from_secs(17),
            packet_gap: Duration::from_secs(8),
            long_polling: None,
        },
        deadline: Some(t0 + Duration::from_secs(40)),
        early_data: false,
    };
    let mut ex = ShortLinkExchange::start(t0, &ExchangeConfig::default(), req, &mut ids);
    let conn = match ex.poll_action() {
        Some(ExchangeAction::Io(IoAction::Connect { conn, .. })) => conn,
        other => panic!("{other:?}"),
    };
    assert_eq!(ex.poll_action(), None);

    let t1 = t0 + Duration::from_millis(30);
    ex.handle_event(t1, conn, ConnEvent::Connected, &mut ids);
    // The connect is reported, then the request goes out.
    assert!(matches!(ex.poll_action(), Some(ExchangeAction::Endpoint(r)) if r.ok));
    assert!(matches!(
        ex.poll_action(),
        Some(ExchangeAction::Io(IoAction::Send { .. }))
    ));
    assert_eq!(ex.poll_timeout(), Some(t1 + Duration::from_secs(12))); // first packet

    let t2 = t1 + Duration::from_millis(40);
    let reply = Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong");
    ex.handle_event(t2, conn, ConnEvent::Received(reply), &mut ids);
    assert_eq!(
        ex.poll_action(),
        Some(ExchangeAction::Io(IoAction::Close { conn }))
    );
    assert!(matches!(ex.poll_action(), Some(ExchangeAction::Endpoint(r)) if r.ok));
    let Some(ExchangeAction::Finished(result)) = ex.poll_action() else {
        panic!()
    };
    assert_eq!(result.outcome.unwrap().body, &b"pong"[..]);
    assert_eq!(result.connect_time, Some(Duration::from_millis(30)));
    assert_eq!(result.first_packet_after, Some(Duration::from_millis(40)));
    assert!(ex.is_finished());
    assert_eq!(ex.poll_timeout(), None);
}

#[test]
fn timeout() {
    use stn_proto::net::NetworkKind;
    use stn_proto::time::Duration;
    use stn_proto::timeout::*;
    use stn_proto::Profile;

    let cfg = TimeoutConfig::for_profile(Profile::Mars);
    let input = AttemptInput::new(NetworkKind::Wifi, 200);
    let f = first_packet_timeout(&cfg, &input);
    assert_eq!(f, Duration::from_millis(12_016));
    assert_eq!(
        read_write_timeout(&cfg, NetworkKind::Wifi, f),
        Duration::from_millis(17_349)
    );
    assert_eq!(
        packet_gap_timeout(&cfg, NetworkKind::Wifi),
        Duration::from_millis(8_000)
    );
    let task = TaskTimeoutInput {
        retry_count: 1,
        ..TaskTimeoutInput::default()
    };
    assert_eq!(task_timeout(&cfg, &task), Duration::from_millis(40_000));
}

#[test]
fn timeout_adaptive_adaptivetimeouts() {
    use stn_proto::net::NetworkKind;
    use stn_proto::time::{Duration, Instant};
    use stn_proto::timeout::*;
    use stn_proto::Profile;
    use stn_proto::TimeoutKind;

    let mut t = AdaptiveTimeouts::new(TimeoutConfig::for_profile(Profile::Stn), NetworkKind::Wifi);
    let input = AttemptInput::new(NetworkKind::Wifi, 200);
    let now = Instant::from_secs(10);
    let deadline = now + Duration::from_secs(40);
    // No sample yet: Mars's 12016 ms.
    assert_eq!(
        t.attempt_timeouts(now, &input, deadline).first_packet,
        now + Duration::from_millis(12_016)
    );
    t.on_connect_sample(Duration::from_millis(100));
    // rto = 300 ms; 2·rto + 16 ms is below the 2 s floor.
    assert_eq!(
        t.attempt_timeouts(now, &input, deadline).first_packet,
        now + Duration::from_secs(2)
    );
    t.on_timeout(now, TimeoutKind::FirstPacket);
    assert_eq!(
        t.attempt_timeouts(now, &input, deadline).first_packet,
        now + Duration::from_secs(4)
    );
}

#[test]
fn timeout_dynamic_dynamictimeout() {
    use stn_proto::net::NetworkKind;
    use stn_proto::time::{Duration, Instant};
    use stn_proto::timeout::*;

    let mut dt = DynamicTimeout::new(DynamicTimeoutConfig::MARS);
    let fast_mid = AttemptOutcome::Completed(AttemptSample {
        bytes: 5_000,
        cost: Duration::from_millis(300),
    });
    for i in 0..10 {
        dt.record(Instant::from_secs(i), NetworkKind::Wifi, fast_mid);
    }
    assert_eq!(dt.state(), DynState::Excellent);
    dt.record(
        Instant::from_secs(11),
        NetworkKind::Wifi,
        AttemptOutcome::Failed,
    );
    assert_eq!(dt.state(), DynState::Evaluating);
}

#[test]
fn timeout_estimate_backoff() {
    use stn_proto::time::Duration;
    use stn_proto::timeout::backoff;
    let s = Duration::from_secs;
    assert_eq!(backoff(s(2), 200, 0, s(12)), s(2));
    assert_eq!(backoff(s(2), 200, 2, s(12)), s(8));
    assert_eq!(backoff(s(2), 200, 3, s(12)), s(12));
}

#[test]
fn timeout_estimate_rttestimator() {
    use stn_proto::time::Duration;
    use stn_proto::timeout::{RttConfig, RttEstimator};
    let mut e = RttEstimator::new(RttConfig::STN);
    assert_eq!(e.rto(), Duration::from_secs(1));
    e.sample(Duration::from_millis(300));
    assert_eq!(e.srtt(), Some(Duration::from_millis(300)));
    assert_eq!(e.rttvar(), Duration::from_millis(150));
    assert_eq!(e.rto(), Duration::from_millis(900));
}
