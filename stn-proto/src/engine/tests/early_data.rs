//! TLS 0-RTT on the short link (`Task::early_data`, stn's `engine.early_data`):
//! a request that allows it goes on a resumed connection's
//! `ConnEvent::EarlyData`, before the handshake completes; any other waits
//! for `Connected`.

use super::*;
use crate::tls::TlsFailure;

/// One short-link task under `profile`, its connection TCP-connected after
/// 20 ms and offered `max` bytes of early data; returns the harness, the task,
/// its connection and what the offer made the engine do.
fn offered(profile: Profile, task: Task, max: u32) -> (H, TaskId, ConnId, Vec<Output>) {
    let mut h = H::new(unhedged(profile));
    let id = h.submit(task);
    let (conn, _) = connects(&h.log)[0];
    h.advance(ms(20));
    h.ev(conn, ConnEvent::TcpConnected);
    let out = h.ev(conn, ConnEvent::EarlyData { max });
    (h, id, conn, out)
}

#[test]
fn an_early_data_task_sends_on_the_offer_and_reports_it() {
    let (mut h, id, conn, out) = offered(Profile::Stn, short_task("x").early_data(true), 16_384);
    let sent = sends(&out);
    assert_eq!(sent.len(), 1, "request sent on the offer: {out:?}");
    assert_eq!(sent[0].0, conn);
    assert!(sent[0].1.starts_with(b"POST /cgi HTTP/1.1\r\n"));
    // The handshake completes one round trip later; nothing is sent again.
    h.advance(ms(40));
    let again = h.ev(conn, ConnEvent::Connected);
    assert!(sends(&again).is_empty(), "{again:?}");
    h.advance(ms(5));
    h.ev(conn, ConnEvent::Received(ok_http("ok")));
    assert_eq!(h.outcome(id).map(|r| r.body), Ok(Bytes::from_static(b"ok")));
    let r = h.reports(id)[0];
    assert!(r.early_data);
    assert_eq!(r.connect_time, Some(ms(20)));
    assert_eq!(r.handshake_time, Some(ms(40)));
    // The first packet is timed from the early send.
    assert_eq!(r.first_packet_after, Some(ms(45)));
}

#[test]
fn other_tasks_profiles_and_large_requests_wait_for_the_handshake() {
    let cases = [
        (
            Profile::Stn,
            short_task("x"),
            16_384,
            "task does not allow it",
        ),
        (
            Profile::Mars,
            short_task("x").early_data(true),
            16_384,
            "Mars sends no early data",
        ),
        (
            Profile::Stn,
            short_task("x").early_data(true),
            40,
            "request larger than the offer",
        ),
    ];
    for (profile, task, max, why) in cases {
        let (mut h, id, conn, out) = offered(profile, task, max);
        assert!(sends(&out).is_empty(), "{why}: {out:?}");
        h.advance(ms(40));
        serve_short(&mut h, conn, "ok");
        assert!(h.outcome(id).is_ok(), "{why}");
        let r = h.reports(id)[0];
        assert!(!r.early_data, "{why}");
        assert_eq!(r.handshake_time, Some(ms(40)), "{why}");
    }
}

#[test]
fn a_handshake_that_fails_after_the_early_send_is_a_typed_connect_failure() {
    let task = short_task("x").early_data(true).retry_count(0);
    let (mut h, id, conn, out) = offered(Profile::Stn, task, 16_384);
    assert_eq!(sends(&out).len(), 1);
    h.advance(ms(40));
    let failure = ConnectError::Tls(TlsFailure::Alert(40));
    h.ev(conn, ConnEvent::ConnectFailed(failure));
    match h.outcome(id) {
        Err(Error::Connect { error, addr }) => {
            assert_eq!(error, failure);
            assert_eq!(addr, Some("10.0.0.1:80".parse().unwrap()));
        }
        other => panic!("expected the handshake's failure, got {other:?}"),
    }
    assert!(h.reports(id)[0].early_data);
}

#[test]
fn the_early_winner_ends_the_race() {
    // Two candidates: the second connect starts after the stagger; the first
    // one's early-data offer wins, and the other is closed or handed over.
    let cfg =
        Config::for_profile(Profile::Stn).short_link_ips([ip("10.0.0.1"), ip("10.0.0.2")], 80);
    let mut cfg = cfg;
    cfg.hedge = None;
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").early_data(true));
    h.advance(ms(3_000));
    let started = connects(&h.log);
    assert!(started.len() >= 2, "a second candidate raced: {started:?}");
    let (first, _) = started[0];
    h.ev(first, ConnEvent::TcpConnected);
    let out = h.ev(first, ConnEvent::EarlyData { max: 16_384 });
    assert_eq!(
        sends(&out).iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        vec![first]
    );
    let (second, _) = started[1];
    // The loser's late offer sends nothing.
    let late = h.ev(second, ConnEvent::EarlyData { max: 16_384 });
    assert!(sends(&late).is_empty(), "{late:?}");
    h.ev(first, ConnEvent::Connected);
    h.ev(first, ConnEvent::Received(ok_http("ok")));
    assert!(h.outcome(id).is_ok());
}
