use super::*;
use crate::error::LocalError;
use crate::net::IpAddr;
use crate::profile::Profile;
use crate::race::LoserReports;
use crate::test_util::ms;

use ExchangeAction as A;

const T0: Instant = Instant::from_secs(1000);

fn at(n: u64) -> Instant {
    T0 + ms(n)
}

fn addr(n: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::from([10, 0, 0, n]), 80)
}

fn c(n: u64) -> ConnId {
    ConnId(n)
}

const REQUEST: &str = "POST /cgi-bin/echo HTTP/1.1\r\n\
    Accept: */*\r\n\
    Cache-Control: no-cache\r\n\
    Connection: close\r\n\
    Content-Length: 5\r\n\
    Content-Type: application/octet-stream\r\n\
    Host: short.example\r\n\
    User-Agent: MicroMessenger Client\r\n\
    \r\n\
    hello";

const OK_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nworld";

fn timeouts() -> ExchangeTimeouts {
    ExchangeTimeouts {
        first_packet: ms(12_000),
        read_write: ms(17_000),
        packet_gap: ms(8_000),
        long_polling: None,
    }
}

fn request(cands: &[u8]) -> ExchangeRequest {
    ExchangeRequest {
        candidates: cands.iter().map(|&n| addr(n)).collect(),
        host: Some("short.example".into()),
        cgi: "/cgi-bin/echo".into(),
        headers: vec![],
        body: Bytes::from_static(b"hello"),
        rtt_hint: None,
        timeouts: timeouts(),
        deadline: Some(at(40_000)),
        early_data: false,
    }
}

struct H {
    ex: ShortLinkExchange,
    ids: ConnIds,
}

impl H {
    fn start(p: Profile, req: ExchangeRequest) -> Self {
        Self::start_cfg(ExchangeConfig::for_profile(p), req)
    }

    fn start_cfg(cfg: ExchangeConfig, req: ExchangeRequest) -> Self {
        let mut ids = ConnIds::new();
        let ex = ShortLinkExchange::start(T0, &cfg, req, &mut ids);
        H { ex, ids }
    }

    fn drain(&mut self) -> Vec<ExchangeAction> {
        core::iter::from_fn(|| self.ex.poll_action()).collect()
    }

    fn ev(&mut self, t: u64, conn: u64, ev: ConnEvent) -> Vec<ExchangeAction> {
        self.ex.handle_event(at(t), c(conn), ev, &mut self.ids);
        self.drain()
    }

    fn recv(&mut self, t: u64, conn: u64, data: &[u8]) -> Vec<ExchangeAction> {
        self.ev(t, conn, ConnEvent::Received(Bytes::copy_from_slice(data)))
    }

    fn tick(&mut self, t: u64) -> Vec<ExchangeAction> {
        self.ex.handle_timeout(at(t), &mut self.ids);
        self.drain()
    }

    /// Starts with one candidate and connects it at `t`; returns after the send.
    fn connected_one(p: Profile, req: ExchangeRequest, t: u64) -> Self {
        let mut h = H::start(p, req);
        assert_eq!(h.drain(), vec![connect(1, 1)]);
        let acts = h.ev(t, 1, ConnEvent::Connected);
        assert_eq!(acts, vec![ok_connect(1, t), send(1)]);
        h
    }
}

fn connect(conn: u64, a: u8) -> ExchangeAction {
    A::Io(IoAction::Connect {
        conn: c(conn),
        addr: addr(a),
    })
}

fn close(conn: u64) -> ExchangeAction {
    A::Io(IoAction::Close { conn: c(conn) })
}

fn send(conn: u64) -> ExchangeAction {
    A::Io(IoAction::Send {
        conn: c(conn),
        data: Bytes::from_static(REQUEST.as_bytes()),
    })
}

fn ok_connect(a: u8, connect_ms: u64) -> ExchangeAction {
    A::Endpoint(EndpointReport {
        addr: addr(a),
        ok: true,
        connect_time: Some(ms(connect_ms)),
        error: None,
    })
}

fn connect_failed(a: u8, error: ConnectError) -> ExchangeAction {
    A::Endpoint(EndpointReport {
        addr: addr(a),
        ok: false,
        connect_time: None,
        error: Some(Error::Connect {
            addr: Some(addr(a)),
            error,
        }),
    })
}

fn winner_report(a: u8, connect_ms: u64, error: Option<Error>) -> ExchangeAction {
    A::Endpoint(EndpointReport {
        addr: addr(a),
        ok: error.is_none(),
        connect_time: Some(ms(connect_ms)),
        error,
    })
}

fn finished(acts: &[ExchangeAction]) -> &ExchangeResult {
    match acts.last() {
        Some(A::Finished(r)) => r,
        other => panic!("expected Finished last, got {other:?}"),
    }
}

fn assert_done(h: &mut H) {
    assert!(h.ex.is_finished());
    assert_eq!(h.ex.poll_timeout(), None);
    assert_eq!(h.drain(), vec![]);
}

// ---- scripts ----

#[test]
fn happy_path_one_byte_chunks() {
    let mut h = H::start(Profile::Mars, request(&[1]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert!(h.ex.owns(c(1)));
    assert!(!h.ex.owns(c(2)));
    // The attempt's own 10 s deadline.
    assert_eq!(h.ex.poll_timeout(), Some(at(10_000)));

    assert_eq!(
        h.ev(30, 1, ConnEvent::Connected),
        vec![ok_connect(1, 30), send(1)]
    );
    // First-packet timer from the send.
    assert_eq!(h.ex.poll_timeout(), Some(at(30 + 12_000)));

    let n = OK_RESPONSE.len() as u64;
    for (i, b) in OK_RESPONSE.iter().enumerate() {
        let t = 100 + i as u64;
        let acts = h.recv(t, 1, &[*b]);
        if (i as u64) < n - 1 {
            assert_eq!(acts, vec![], "byte {i}");
            // Packet gap from the last byte (the read-write timer is later).
            assert_eq!(h.ex.poll_timeout(), Some(at(t + 8_000)));
            continue;
        }
        assert_eq!(acts.len(), 3, "{acts:?}");
        assert_eq!(acts[0], close(1));
        assert_eq!(acts[1], winner_report(1, 30, None));
        let r = finished(&acts);
        let resp = r.outcome.as_ref().expect("ok");
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, &b"world"[..]);
        assert_eq!(resp.header("x-a"), Some("b"));
        assert_eq!(r.endpoint, Some(addr(1)));
        assert_eq!(r.connect_time, Some(ms(30)));
        assert_eq!(r.first_packet_after, Some(ms(70)));
        assert_eq!(r.request_sent_at, Some(at(30)));
        assert_eq!(r.bytes_sent, REQUEST.len() as u64);
        assert_eq!(r.bytes_received, n);
        assert_eq!(r.connect_attempts, 1);
    }
    assert!(!h.ex.owns(c(1)));
    assert_done(&mut h);
    // Late events are ignored.
    assert_eq!(h.recv(500, 1, b"more"), vec![]);
    assert_eq!(h.ev(501, 1, ConnEvent::Closed(CloseReason::Eof)), vec![]);
    h.ex.cancel(at(502));
    assert_done(&mut h);
}

#[test]
fn host_defaults_to_winning_address_and_headers_apply() {
    let mut req = request(&[7]);
    req.host = None;
    req.headers = vec![
        ("X-Trace".into(), "1".into()),
        ("connection".into(), "Keep-Alive".into()),
    ];
    let mut h = H::start(Profile::Stn, req);
    assert_eq!(h.drain(), vec![connect(1, 7)]);
    let acts = h.ev(5, 1, ConnEvent::Connected);
    let A::Io(IoAction::Send { data, .. }) = &acts[1] else {
        panic!("{acts:?}")
    };
    let text = core::str::from_utf8(data).unwrap();
    assert!(text.contains("\r\nHost: 10.0.0.7:80\r\n"), "{text}");
    assert!(text.contains("\r\nConnection: Keep-Alive\r\n"), "{text}");
    assert!(text.contains("\r\nX-Trace: 1\r\n"), "{text}");
    assert!(!text.contains("close"), "{text}");
}

#[test]
fn race_picks_the_working_candidate_and_closes_the_losers() {
    // stn: 250 ms stagger without an RTT hint, a failure starts the next at once.
    // 1 refuses, 2 hangs, 3 works, 4 is never needed.
    let mut h = H::start(Profile::Stn, request(&[1, 2, 3, 4]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(
        h.ev(10, 1, ConnEvent::ConnectFailed(ConnectError::Refused)),
        vec![connect_failed(1, ConnectError::Refused), connect(2, 2)]
    );
    assert!(!h.ex.owns(c(1)));
    assert_eq!(h.ex.poll_timeout(), Some(at(260)));
    assert_eq!(h.tick(259), vec![]);
    assert_eq!(h.tick(260), vec![connect(3, 3)]);
    // 3 connects: it wins, 2 (still connecting) is closed. It waited 290 ms
    // where 3 took 40: outpaced, a failure of its address.
    assert_eq!(
        h.ev(300, 3, ConnEvent::Connected),
        vec![
            ok_connect(3, 40),
            close(2),
            connect_failed(2, ConnectError::AttemptTimeout),
            send(3)
        ]
    );
    // A late connect of the loser is ignored.
    assert_eq!(h.ev(310, 2, ConnEvent::Connected), vec![]);
    assert_eq!(
        h.ev(311, 2, ConnEvent::ConnectFailed(ConnectError::Refused)),
        vec![]
    );
    let acts = h.recv(400, 3, OK_RESPONSE);
    assert_eq!(acts[..2], [close(3), winner_report(3, 40, None)]);
    let r = finished(&acts);
    assert!(r.outcome.is_ok());
    assert_eq!(r.endpoint, Some(addr(3)));
    assert_eq!(r.connect_attempts, 3);
    assert_done(&mut h);
}

#[test]
fn abandoned_attempts_stay_open_and_count_against_their_address() {
    // stn abandons an attempt whose SYNs look lost (1.6 s without an RTT
    // hint) and starts a fresh one at once; the address is reported as
    // failed (a black hole is demoted, as a refusing address is), but the
    // socket stays open as a passive probe: the OS still retransmits its
    // SYN, and it can still win. The first attempt is also the race's first
    // floor attempt (Mars's schedule): it too keeps its socket, with no
    // verdict.
    let mut h = H::start(Profile::Stn, request(&[1, 2, 3, 4]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(h.tick(250), vec![connect(2, 2)]);
    assert_eq!(h.tick(500), vec![connect(3, 3)]);
    assert_eq!(h.tick(1_600), vec![connect(4, 4)]);
    assert!(h.ex.owns(c(1)));
    assert_eq!(
        h.tick(1_850),
        vec![
            connect_failed(2, ConnectError::AttemptTimeout),
            connect(5, 1)
        ]
    );
    assert!(h.ex.owns(c(2)));
    // The probe connects (a late answer to its SYN or to the OS's
    // retransmission at 1.25 s): the request goes on it, every other
    // attempt is closed, and none gets a verdict now (the rest started
    // after the winner). The floor attempt, started before it on another
    // address, has not waited the outpaced threshold (0 + 2 x 1.75 s +
    // 100 ms): it is handed over, open, to be judged then.
    let acts = h.ev(2_000, 2, ConnEvent::Connected);
    assert_eq!(acts[0], ok_connect(2, 1_750));
    for conn in [3, 4, 5] {
        assert!(acts.contains(&close(conn)), "{conn}: {acts:?}");
    }
    let linger = ExchangeAction::Linger {
        conn: c(1),
        addr: addr(1),
        until: at(3_600),
    };
    assert!(acts.contains(&linger), "{acts:?}");
    assert!(!acts.contains(&close(1)), "{acts:?}");
    assert!(acts.contains(&send(2)), "{acts:?}");
    assert!(
        !acts
            .iter()
            .any(|a| matches!(a, ExchangeAction::Endpoint(r) if !r.ok)),
        "{acts:?}"
    );
}

#[test]
fn mars_reports_earlier_losers_as_timed_out() {
    // Mars 2.5 s stagger: 1 hangs, 2 starts at 2.5 s and connects.
    let mut h = H::start(Profile::Mars, request(&[1, 2]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(h.ex.poll_timeout(), Some(at(2_500)));
    assert_eq!(h.tick(2_500), vec![connect(2, 2)]);
    assert_eq!(
        h.ev(2_600, 2, ConnEvent::Connected),
        vec![
            ok_connect(2, 100),
            close(1),
            connect_failed(1, ConnectError::TimedOut),
            send(2)
        ]
    );
}

#[test]
fn race_failure_is_a_connect_error_naming_the_last_address() {
    let mut h = H::start(Profile::Mars, request(&[1, 2]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(
        h.ev(5, 1, ConnEvent::ConnectFailed(ConnectError::Refused)),
        vec![connect_failed(1, ConnectError::Refused)]
    );
    // Mars waits out its error interval (2.5 s) before the next start.
    assert_eq!(h.tick(2_500), vec![connect(2, 2)]);
    let acts = h.ev(
        2_510,
        2,
        ConnEvent::ConnectFailed(ConnectError::Unreachable),
    );
    assert_eq!(acts[0], connect_failed(2, ConnectError::Unreachable));
    assert_eq!(acts.len(), 2);
    let r = finished(&acts);
    assert_eq!(
        r.outcome,
        Err(Error::Connect {
            addr: Some(addr(2)),
            error: ConnectError::Unreachable
        })
    );
    assert_eq!(r.endpoint, None);
    assert_eq!(r.connect_attempts, 2);
    assert_eq!(r.bytes_sent, 0);
    assert_done(&mut h);
}

#[test]
fn attempt_timeouts_end_the_race_with_connect_errors() {
    let mut h = H::start(Profile::Mars, request(&[1]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    let acts = h.tick(10_000);
    assert_eq!(
        acts[..2],
        [close(1), connect_failed(1, ConnectError::AttemptTimeout)]
    );
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Connect {
            addr: Some(addr(1)),
            error: ConnectError::AttemptTimeout
        })
    );
}

#[test]
fn first_packet_timeout() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 30);
    assert_eq!(h.ex.poll_timeout(), Some(at(12_030)));
    assert_eq!(h.tick(12_029), vec![]);
    // An empty read is not a packet.
    assert_eq!(h.recv(12_029, 1, b""), vec![]);
    let e = Error::Timeout(TimeoutKind::FirstPacket);
    let acts = h.tick(12_030);
    assert_eq!(acts[..2], [close(1), winner_report(1, 30, Some(e.clone()))]);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(e));
    assert_eq!(r.first_packet_after, None);
    assert_eq!(r.endpoint, Some(addr(1)));
    // The result names the timer's value, for the app's error message.
    assert_eq!(r.timeout, Some(ms(12_000)));
    assert_done(&mut h);
}

#[test]
fn packet_gap_timeout() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 30);
    assert_eq!(h.recv(1_030, 1, b"HTTP/1.1 200 OK\r\n"), vec![]);
    assert_eq!(h.ex.poll_timeout(), Some(at(9_030)));
    assert_eq!(h.recv(2_000, 1, b"Content-Length: 5\r\n"), vec![]);
    assert_eq!(h.ex.poll_timeout(), Some(at(10_000)));
    let e = Error::Timeout(TimeoutKind::PacketGap);
    let acts = h.tick(10_000);
    assert_eq!(acts[..2], [close(1), winner_report(1, 30, Some(e.clone()))]);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(e));
    assert_eq!(r.first_packet_after, Some(ms(1_000)));
    assert_eq!(r.bytes_received, 36);
}

#[test]
fn read_write_timeout() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 0);
    // A byte every 5 s keeps the gap timer happy but the reply never ends.
    for (i, piece) in [
        &b"HTTP/1.1 200 OK\r\n"[..],
        b"Content-Length: 5\r\n",
        b"\r\nwor",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(h.recv(5_000 * (i as u64 + 1), 1, piece), vec![]);
    }
    // Gap would fire at 23 s; read-write at 17 s comes first.
    assert_eq!(h.ex.poll_timeout(), Some(at(17_000)));
    let e = Error::Timeout(TimeoutKind::ReadWrite);
    let acts = h.tick(17_000);
    assert_eq!(acts[..2], [close(1), winner_report(1, 0, Some(e.clone()))]);
    assert_eq!(finished(&acts).outcome, Err(e));
}

#[test]
fn late_wake_up_reports_the_earliest_deadline() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 0);
    assert_eq!(h.recv(1_000, 1, b"H"), vec![]);
    // Woken long after both the gap (9 s) and read-write (17 s) deadlines.
    let acts = h.tick(30_000);
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::PacketGap))
    );
    // An event arriving late first processes the deadlines it missed.
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 0);
    let acts = h.recv(12_000, 1, OK_RESPONSE);
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::FirstPacket))
    );
}

#[test]
fn long_polling_replaces_first_packet() {
    let mut req = request(&[1]);
    req.timeouts.long_polling = Some(ms(60_000));
    req.timeouts.read_write = ms(65_000);
    req.deadline = Some(at(120_000));
    let mut lp = H::connected_one(Profile::Mars, req.clone(), 0);
    assert_eq!(lp.ex.poll_timeout(), Some(at(60_000)));
    assert_eq!(lp.tick(12_000), vec![]);
    let e = Error::Timeout(TimeoutKind::LongPolling);
    let acts = lp.tick(60_000);
    assert_eq!(acts[..2], [close(1), winner_report(1, 0, Some(e.clone()))]);
    assert_eq!(finished(&acts).outcome, Err(e));

    // A reply after 30 s is fine.
    let mut h = H::connected_one(Profile::Mars, req, 0);
    let acts = h.recv(30_000, 1, OK_RESPONSE);
    let r = finished(&acts);
    assert_eq!(
        r.outcome.as_ref().map(|r| r.body.clone()),
        Ok(Bytes::from_static(b"world"))
    );
    assert_eq!(r.first_packet_after, Some(ms(30_000)));
}

#[test]
fn http_500_is_an_http_error_counted_against_the_endpoint() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    let e = Error::Http { status: 500 };
    let acts = h.recv(
        50,
        1,
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nerr",
    );
    assert_eq!(acts[..2], [close(1), winner_report(1, 20, Some(e.clone()))]);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(e));
    // What the server said is kept: status, headers and body.
    let reply = r.http_reply.as_ref().expect("the 500's reply");
    assert_eq!(reply.status, 500);
    assert_eq!(reply.headers.get("content-length"), Some("3"));
    assert_eq!(reply.body, Bytes::from_static(b"err"));
    assert_eq!(r.timeout, None);
    assert_done(&mut h);
}

#[test]
fn garbage_response_is_a_protocol_error() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    let e = Error::Protocol(ProtocolError::BadStatusLine);
    let acts = h.recv(50, 1, b"SSH-2.0-OpenSSH_9.6\r\n");
    assert_eq!(acts[..2], [close(1), winner_report(1, 20, Some(e.clone()))]);
    assert_eq!(finished(&acts).outcome, Err(e));
    assert_done(&mut h);
}

#[test]
fn eof_mid_body_is_a_socket_error_without_close() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    assert_eq!(
        h.recv(50, 1, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        vec![]
    );
    let e = Error::Socket(SocketError::ClosedByPeer);
    // The connection ended by its own event: no Close.
    let acts = h.ev(60, 1, ConnEvent::Closed(CloseReason::Eof));
    assert_eq!(acts.len(), 2);
    assert_eq!(acts[0], winner_report(1, 20, Some(e.clone())));
    assert_eq!(finished(&acts).outcome, Err(e));
    assert_done(&mut h);

    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    let acts = h.ev(60, 1, ConnEvent::Closed(CloseReason::Reset));
    assert_eq!(acts.len(), 2);
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Socket(SocketError::Reset))
    );
}

#[test]
fn close_delimited_body_only_with_read_until_close() {
    let reply = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil-close";
    // Mars: EOF before the parser's end is a socket error.
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    assert_eq!(h.recv(30, 1, reply), vec![]);
    let acts = h.ev(40, 1, ConnEvent::Closed(CloseReason::Eof));
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Socket(SocketError::ClosedByPeer))
    );
    // With the limit's opt-in the close completes it (no Close back: it ended).
    let mut cfg = ExchangeConfig::for_profile(Profile::Mars);
    cfg.http.read_until_close = true;
    let mut h = H::start_cfg(cfg, request(&[1]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(
        h.ev(20, 1, ConnEvent::Connected),
        vec![ok_connect(1, 20), send(1)]
    );
    assert_eq!(h.recv(30, 1, reply), vec![]);
    let acts = h.ev(40, 1, ConnEvent::Closed(CloseReason::Eof));
    assert_eq!(acts[0], winner_report(1, 20, None));
    assert_eq!(acts.len(), 2);
    assert_eq!(
        finished(&acts).outcome.as_ref().unwrap().body,
        &b"until-close"[..]
    );
}

#[test]
fn oversize_content_length_fails_at_the_head() {
    let mut h = H::connected_one(Profile::Stn, request(&[1]), 20);
    // 1 GiB declared against stn's 1 MiB cap: fails on the head alone.
    let e = Error::Protocol(ProtocolError::BodyTooLarge);
    let acts = h.recv(
        50,
        1,
        b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n",
    );
    assert_eq!(acts[..2], [close(1), winner_report(1, 20, Some(e.clone()))]);
    assert_eq!(finished(&acts).outcome, Err(e));
    // The body that follows is ignored, not buffered.
    assert_eq!(h.recv(60, 1, &[0u8; 4096]), vec![]);
    assert!(h.ex.is_finished());
}

#[test]
fn chunked_response_with_small_limits() {
    let mut cfg = ExchangeConfig::for_profile(Profile::Stn);
    cfg.http.max_body_len = 4;
    let mut h = H::start_cfg(cfg, request(&[1]));
    h.drain();
    h.ev(10, 1, ConnEvent::Connected);
    let acts = h.recv(
        20,
        1,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    );
    assert_eq!(finished(&acts).outcome.as_ref().unwrap().body, &b"ok"[..]);

    let mut h = H::start_cfg(cfg, request(&[1]));
    h.drain();
    h.ev(10, 1, ConnEvent::Connected);
    let acts = h.recv(
        20,
        1,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n",
    );
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Protocol(ProtocolError::BodyTooLarge))
    );
}

#[test]
fn cancel_mid_connect_closes_every_attempt() {
    let mut h = H::start(Profile::Stn, request(&[1, 2, 3]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(h.tick(250), vec![connect(2, 2)]);
    h.ex.cancel(at(300));
    let acts = h.drain();
    assert_eq!(acts[..2], [close(1), close(2)]);
    assert_eq!(acts.len(), 3);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(Error::Cancelled));
    assert_eq!(r.connect_attempts, 2);
    assert_done(&mut h);
    h.ex.cancel(at(301));
    assert_eq!(h.ev(302, 1, ConnEvent::Connected), vec![]);
    assert_eq!(h.tick(100_000), vec![]);
    assert_done(&mut h);
}

#[test]
fn cancel_mid_response_closes_the_winner_without_a_report() {
    let mut h = H::connected_one(Profile::Mars, request(&[1]), 20);
    assert_eq!(h.recv(50, 1, b"HTTP/1.1 200"), vec![]);
    h.ex.cancel(at(60));
    let acts = h.drain();
    assert_eq!(acts.len(), 2);
    assert_eq!(acts[0], close(1));
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(Error::Cancelled));
    assert_eq!(r.bytes_received, 12);
    assert_eq!(r.first_packet_after, Some(ms(30)));
    assert_done(&mut h);
}

#[test]
fn task_deadline_ends_every_phase() {
    // While connecting (Mars attempt timeout 10 s is later than the deadline).
    let mut req = request(&[1]);
    req.deadline = Some(at(5_000));
    let mut h = H::start(Profile::Mars, req.clone());
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    assert_eq!(h.ex.poll_timeout(), Some(at(5_000)));
    let acts = h.tick(5_000);
    assert_eq!(acts.len(), 2);
    assert_eq!(acts[0], close(1));
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::Task))
    );

    // While waiting for the reply: no endpoint report (says nothing of the address).
    let mut h = H::connected_one(Profile::Mars, req.clone(), 4_000);
    assert_eq!(h.ex.poll_timeout(), Some(at(5_000)));
    let acts = h.tick(6_000);
    assert_eq!(acts.len(), 2);
    assert_eq!(acts[0], close(1));
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::Task))
    );

    // Already past at start: no connect at all.
    req.deadline = Some(T0);
    let mut h = H::start(Profile::Mars, req);
    let acts = h.drain();
    assert_eq!(acts.len(), 1);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(Error::Timeout(TimeoutKind::Task)));
    assert_eq!(r.connect_attempts, 0);
    assert_done(&mut h);
}

#[test]
fn task_deadline_wins_a_tie_with_the_first_packet_timer() {
    let mut req = request(&[1]);
    req.deadline = Some(at(12_000));
    let mut h = H::connected_one(Profile::Mars, req, 0);
    let acts = h.tick(12_000);
    assert_eq!(acts.len(), 2, "{acts:?}");
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::Task))
    );
}

#[test]
fn empty_candidates_is_a_dns_error() {
    let mut h = H::start(Profile::Stn, request(&[]));
    let acts = h.drain();
    assert_eq!(acts.len(), 1);
    let r = finished(&acts);
    assert_eq!(r.outcome, Err(Error::Dns(DnsError::NoCandidates)));
    assert_eq!(r.connect_attempts, 0);
    assert_done(&mut h);
}

#[test]
fn invalid_request_fails_before_connecting() {
    let mut req = request(&[1]);
    req.cgi = "no-slash".into();
    let mut h = H::start(Profile::Stn, req);
    let acts = h.drain();
    assert_eq!(acts.len(), 1);
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Local(LocalError::InvalidTask(
            TaskError::InvalidRequest(crate::codec::http::RequestError::BadCgi("no-slash".into()))
        )))
    );
    let mut req = request(&[1]);
    req.headers = vec![("Bad Name".into(), "x".into())];
    let mut h = H::start(Profile::Stn, req);
    assert!(matches!(
        finished(&h.drain()).outcome,
        Err(Error::Local(LocalError::InvalidTask(
            TaskError::InvalidRequest(crate::codec::http::RequestError::BadHeaderName(_))
        )))
    ));
}

#[test]
fn odd_event_orders_are_harmless() {
    let mut h = H::start(Profile::Stn, request(&[1, 2]));
    assert_eq!(h.drain(), vec![connect(1, 1)]);
    // Data before the handshake, events for ids never handed out.
    assert_eq!(h.recv(1, 1, b"HTTP/1.1 200 OK\r\n"), vec![]);
    assert_eq!(h.ev(2, 99, ConnEvent::Connected), vec![]);
    assert_eq!(h.recv(3, 99, b"x"), vec![]);
    assert_eq!(h.ev(4, 0, ConnEvent::Closed(CloseReason::Eof)), vec![]);
    // A close before the connect completed is a failed connect (no Close back).
    assert_eq!(
        h.ev(5, 1, ConnEvent::Closed(CloseReason::Reset)),
        vec![connect_failed(1, ConnectError::Reset), connect(2, 2)]
    );
    assert_eq!(
        h.ev(6, 2, ConnEvent::Connected),
        vec![ok_connect(2, 1), send(2)]
    );
    // Duplicate Connected is ignored; the pre-connect bytes were dropped, so
    // the reply parses from its own first byte.
    assert_eq!(h.ev(7, 2, ConnEvent::Connected), vec![]);
    let acts = h.recv(8, 2, OK_RESPONSE);
    assert!(finished(&acts).outcome.is_ok());
    assert_eq!(finished(&acts).bytes_received, OK_RESPONSE.len() as u64);
}

#[test]
fn zero_timers_fire_at_the_send() {
    let mut req = request(&[1]);
    req.timeouts.first_packet = Duration::ZERO;
    let mut h = H::start(Profile::Mars, req);
    h.drain();
    let acts = h.ev(10, 1, ConnEvent::Connected);
    assert_eq!(acts[..3], [ok_connect(1, 10), send(1), close(1)]);
    assert_eq!(
        finished(&acts).outcome,
        Err(Error::Timeout(TimeoutKind::FirstPacket))
    );
}

#[test]
fn config_profiles() {
    for p in [Profile::Mars2017, Profile::Mars, Profile::Stn] {
        let cfg = ExchangeConfig::for_profile(p);
        let mut race = RaceConfig::for_profile(p);
        if p == Profile::Stn {
            // The short link hands unjudged losers over to the engine.
            assert_eq!(race.loser_reports, LoserReports::Outpaced);
            race.loser_reports = LoserReports::OutpacedAtThreshold;
        }
        assert_eq!(cfg.race, race);
        assert_eq!(cfg.http, HttpLimits::for_profile(p));
    }
    assert_eq!(
        ExchangeConfig::default(),
        ExchangeConfig::for_profile(Profile::Stn)
    );
}

// ---- random event orders ----

mod random {
    use super::*;
    use proptest::prelude::*;

    const SCRIPTS: [&[u8]; 6] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nworld",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno",
        b"\x00\x01garbage\xff\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\nxx",
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\ntruncated",
    ];

    #[derive(Clone, Debug)]
    pub(super) enum Op {
        /// Let time pass, optionally waking the exchange.
        Advance(u64, bool),
        /// Wake the exchange exactly at its `poll_timeout`.
        AtTimeout,
        Connected(usize),
        Failed(usize, u8),
        /// The next `n` bytes of the script on a conn.
        Recv(usize, usize),
        Closed(usize, u8),
        /// An event for an id never handed out.
        Unknown(u64, u8),
        Cancel,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            10 => (0u64..1_500, any::<bool>()).prop_map(|(d, w)| Op::Advance(d, w)),
            6 => Just(Op::AtTimeout),
            12 => (0usize..8).prop_map(Op::Connected),
            6 => (0usize..8, 0u8..6).prop_map(|(i, e)| Op::Failed(i, e)),
            24 => (0usize..8, 1usize..24).prop_map(|(i, n)| Op::Recv(i, n)),
            2 => (0usize..8, 0u8..3).prop_map(|(i, r)| Op::Closed(i, r)),
            4 => (0u64..4, 0u8..4).prop_map(|(i, k)| Op::Unknown(i, k)),
            1 => Just(Op::Cancel),
        ]
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum View {
        Connecting,
        Open,
        Gone,
    }

    fn connect_error(e: u8) -> ConnectError {
        match e {
            0 => ConnectError::Refused,
            1 => ConnectError::Reset,
            2 => ConnectError::TimedOut,
            3 => ConnectError::Unreachable,
            4 => ConnectError::AttemptTimeout,
            _ => ConnectError::Other(111),
        }
    }

    fn close_reason(r: u8) -> CloseReason {
        match r {
            0 => CloseReason::Eof,
            1 => CloseReason::Reset,
            _ => CloseReason::Error(104),
        }
    }

    /// An executor that answers the exchange and checks its actions.
    struct Sim {
        ex: ShortLinkExchange,
        ids: ConnIds,
        now: Instant,
        /// The latest `now` the exchange was given.
        seen: Instant,
        /// Every conn in Connect order, with the executor's view of it.
        conns: Vec<(ConnId, View)>,
        /// Conns that ended by an event fed in the current step.
        ended_this_step: Vec<ConnId>,
        script: &'static [u8],
        cursor: usize,
        finished: Option<ExchangeResult>,
        trace: Vec<(Instant, ExchangeAction)>,
    }

    impl Sim {
        fn new(profile: Profile, req: ExchangeRequest, script: usize, small: bool) -> Self {
            let mut cfg = ExchangeConfig::for_profile(profile);
            if small {
                cfg.http.max_body_len = 64;
                cfg.http.max_head_len = 128;
            }
            let mut ids = ConnIds::new();
            let ex = ShortLinkExchange::start(T0, &cfg, req, &mut ids);
            let mut sim = Sim {
                ex,
                ids,
                now: T0,
                seen: T0,
                conns: Vec::new(),
                ended_this_step: Vec::new(),
                script: SCRIPTS[script],
                cursor: 0,
                finished: None,
                trace: Vec::new(),
            };
            sim.drain_and_check();
            sim
        }

        fn view(&self, conn: ConnId) -> Option<View> {
            self.conns.iter().find(|(c, _)| *c == conn).map(|(_, v)| *v)
        }

        fn set(&mut self, conn: ConnId, v: View) {
            if let Some(e) = self.conns.iter_mut().find(|(c, _)| *c == conn) {
                e.1 = v;
            }
        }

        fn drain_and_check(&mut self) {
            while let Some(a) = self.ex.poll_action() {
                assert!(self.finished.is_none(), "action after Finished: {a:?}");
                match &a {
                    A::Io(IoAction::Connect { conn, .. }) => {
                        assert!(self.view(*conn).is_none(), "reused id {conn}");
                        self.conns.push((*conn, View::Connecting));
                    }
                    A::Io(IoAction::Send { conn, .. }) => {
                        assert_eq!(self.view(*conn), Some(View::Open), "Send on {conn}");
                    }
                    A::Io(IoAction::Close { conn }) => match self.view(*conn) {
                        Some(View::Connecting | View::Open) => self.set(*conn, View::Gone),
                        // The exchange may have closed it (its deadline came
                        // first) before it saw the terminal event we just fed.
                        Some(View::Gone) if self.ended_this_step.contains(conn) => {
                            self.ended_this_step.retain(|c| c != conn);
                        }
                        v => panic!("Close for {conn} in state {v:?}"),
                    },
                    A::Linger { conn, .. } => {
                        assert_eq!(self.view(*conn), Some(View::Connecting), "Linger {conn}");
                        self.set(*conn, View::Gone);
                    }
                    A::Endpoint(_) => {}
                    A::Finished(r) => {
                        self.finished = Some((**r).clone());
                        for (conn, v) in &self.conns {
                            assert_eq!(*v, View::Gone, "{conn} left open at Finished");
                        }
                    }
                }
                self.trace.push((self.now, a));
            }
            self.ended_this_step.clear();
            assert_eq!(self.ex.is_finished(), self.finished.is_some());
            match self.ex.poll_timeout() {
                None => assert!(self.finished.is_some(), "running with no timeout"),
                Some(t) => {
                    assert!(self.finished.is_none());
                    assert!(
                        t > self.seen,
                        "poll_timeout {t:?} not after now {:?}",
                        self.seen
                    );
                }
            }
        }

        /// Mostly a live conn (the open one first, if `prefer_open`; else a
        /// connecting one), sometimes any conn.
        fn pick(&self, i: usize, prefer_open: bool) -> Option<ConnId> {
            let live: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, v)| *v == View::Connecting || (prefer_open && *v == View::Open))
                .map(|(c, _)| *c)
                .collect();
            let open = self.conns.iter().find(|(_, v)| *v == View::Open);
            match (i, open) {
                (0..=3, Some((c, _))) if prefer_open => Some(*c),
                (0..=5, _) if !live.is_empty() => Some(live[i % live.len()]),
                (0..=5, _) => None,
                _ if !self.conns.is_empty() => Some(self.conns[i % self.conns.len()].0),
                _ => None,
            }
        }

        fn event(&mut self, conn: ConnId, ev: ConnEvent) {
            let v = self.view(conn);
            let ends = matches!(ev, ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_));
            match (v, &ev) {
                (Some(View::Connecting), ConnEvent::Connected) => self.set(conn, View::Open),
                (Some(View::Connecting | View::Open), _) if ends => {
                    self.set(conn, View::Gone);
                    self.ended_this_step.push(conn);
                }
                _ => {}
            }
            self.seen = self.now;
            self.ex.handle_event(self.now, conn, ev, &mut self.ids);
        }

        fn apply(&mut self, op: &Op) {
            match *op {
                Op::Advance(d, wake) => {
                    self.now += ms(d);
                    if wake {
                        self.seen = self.now;
                        self.ex.handle_timeout(self.now, &mut self.ids);
                    } else {
                        return; // the exchange has not seen this time yet
                    }
                }
                Op::AtTimeout => {
                    if let Some(t) = self.ex.poll_timeout() {
                        self.now = self.now.max(t);
                        self.seen = self.now;
                        self.ex.handle_timeout(self.now, &mut self.ids);
                        self.drain_and_check();
                        if let Some(next) = self.ex.poll_timeout() {
                            assert!(next > t, "no progress at {t:?}");
                        }
                    }
                }
                Op::Connected(i) => {
                    if let Some(conn) = self.pick(i, false) {
                        self.event(conn, ConnEvent::Connected);
                    }
                }
                Op::Failed(i, e) => {
                    if let Some(conn) = self.pick(i, false) {
                        self.event(conn, ConnEvent::ConnectFailed(connect_error(e)));
                    }
                }
                Op::Recv(i, n) => {
                    if let Some(conn) = self.pick(i, true) {
                        let end = (self.cursor + n).min(self.script.len());
                        let data = if self.cursor < end {
                            Bytes::from_static(&self.script[self.cursor..end])
                        } else {
                            Bytes::new() // an empty read
                        };
                        if self.view(conn) == Some(View::Open) {
                            self.cursor = end;
                        }
                        self.event(conn, ConnEvent::Received(data));
                    }
                }
                Op::Closed(i, r) => {
                    if let Some(conn) = self.pick(i + 2, true) {
                        self.event(conn, ConnEvent::Closed(close_reason(r)));
                    }
                }
                Op::Unknown(k, kind) => {
                    let conn = ConnId(10_000 + k);
                    let ev = match kind {
                        0 => ConnEvent::Connected,
                        1 => ConnEvent::ConnectFailed(ConnectError::Refused),
                        2 => ConnEvent::Received(Bytes::from_static(b"HTTP/1.1 200")),
                        _ => ConnEvent::Closed(CloseReason::Eof),
                    };
                    self.seen = self.now;
                    self.ex.handle_event(self.now, conn, ev, &mut self.ids);
                }
                Op::Cancel => {
                    self.seen = self.now;
                    self.ex.cancel(self.now);
                }
            }
            self.drain_and_check();
        }

        /// Wakes the exchange at each deadline until it finishes.
        fn run_out(&mut self) {
            for _ in 0..10_000 {
                let Some(t) = self.ex.poll_timeout() else {
                    break;
                };
                self.now = self.now.max(t);
                self.seen = self.now;
                self.ex.handle_timeout(self.now, &mut self.ids);
                self.drain_and_check();
                if let Some(next) = self.ex.poll_timeout() {
                    assert!(next > t, "no progress at {t:?}");
                }
            }
            assert!(self.finished.is_some(), "never finished");
        }
    }

    pub(super) fn exchange_request(
        cands: &[u8],
        deadline: Option<u64>,
        fp: u64,
        gap: u64,
        lp: Option<u64>,
    ) -> ExchangeRequest {
        let mut req = request(cands);
        req.deadline = deadline.map(at);
        req.timeouts = ExchangeTimeouts {
            first_packet: ms(fp),
            read_write: ms(fp + 2_000),
            packet_gap: ms(gap),
            long_polling: lp.map(ms),
        };
        req
    }

    /// Runs `ops`, checks the invariants, returns the action trace.
    pub(super) fn run(
        profile: Profile,
        req: ExchangeRequest,
        script: usize,
        small: bool,
        ops: &[Op],
    ) -> Vec<(Instant, ExchangeAction)> {
        let req_deadline = req.deadline;
        let lp = req.timeouts.long_polling.is_some();
        let no_candidates = req.candidates.is_empty();
        let mut sim = Sim::new(profile, req, script, small);
        for op in ops {
            sim.apply(op);
        }
        sim.run_out();
        let r = sim.finished.clone().unwrap_or_else(|| unreachable!());
        // The outcome fits the script and the setup.
        let had_deadline = req_deadline.is_some();
        match &r.outcome {
            Ok(resp) => {
                assert_eq!(resp.status, 200);
                let body: &[u8] = match script {
                    0 => b"world",
                    1 => b"abc",
                    _ => panic!("script {script} gave {resp:?}"),
                };
                assert_eq!(resp.body, body);
                assert!(r.endpoint.is_some() && r.request_sent_at.is_some());
            }
            Err(Error::Http { status }) => assert!(*status == 500 && script == 2),
            Err(Error::Protocol(_)) => assert!(script == 3 || (script == 4 && small)),
            Err(Error::Timeout(TimeoutKind::Task)) => assert!(had_deadline),
            Err(Error::Timeout(TimeoutKind::LongPolling)) => assert!(lp),
            Err(Error::Timeout(TimeoutKind::FirstPacket)) => assert!(!lp),
            Err(Error::Dns(_)) => assert!(no_candidates && r.connect_attempts == 0),
            Err(Error::Connect { addr, .. }) => {
                assert!(addr.is_some() && r.endpoint.is_none());
            }
            Err(_) => {}
        }
        // A deadline already due at the start wins over an empty list
        // (nothing is tried either way).
        let due_at_start = req_deadline.is_some_and(|d| d <= T0);
        if no_candidates && !due_at_start {
            assert_eq!(r.outcome, Err(Error::Dns(DnsError::NoCandidates)));
        }
        if r.endpoint.is_none() {
            assert_eq!(r.bytes_sent, 0);
            assert_eq!(r.bytes_received, 0);
        }
        // Events after the end change nothing.
        for conn in 0..=sim.ids.clone().next_id().0 {
            sim.ex
                .handle_event(sim.now, ConnId(conn), ConnEvent::Connected, &mut sim.ids);
            sim.ex.handle_event(
                sim.now,
                ConnId(conn),
                ConnEvent::Received(Bytes::from_static(b"x")),
                &mut sim.ids,
            );
        }
        sim.ex.cancel(sim.now);
        sim.drain_and_check();
        sim.trace
    }

    /// One random run: the setup and the event script.
    #[derive(Clone, Debug)]
    pub(super) struct Input {
        profile: Profile,
        req: ExchangeRequest,
        script: usize,
        small: bool,
        ops: Vec<Op>,
    }

    fn inputs() -> impl Strategy<Value = Input> {
        let profile = prop_oneof![
            Just(Profile::Mars2017),
            Just(Profile::Mars),
            Just(Profile::Stn)
        ];
        let cands = prop_oneof![
            1 => Just(vec![]),
            9 => proptest::collection::vec(1u8..4, 1..5),
        ];
        let req = (
            cands,
            proptest::option::of(0u64..30_000),
            0u64..10_000,
            0u64..8_000,
            proptest::option::of(0u64..10_000),
        )
            .prop_map(|(cands, deadline, fp, gap, lp)| {
                exchange_request(&cands, deadline, fp, gap, lp)
            });
        (
            profile,
            req,
            0usize..SCRIPTS.len(),
            any::<bool>(),
            proptest::collection::vec(op(), 0..80),
        )
            .prop_map(|(profile, req, script, small, ops)| Input {
                profile,
                req,
                script,
                small,
                ops,
            })
    }

    pub(super) fn run_input(i: &Input) -> Vec<(Instant, ExchangeAction)> {
        run(i.profile, i.req.clone(), i.script, i.small, &i.ops)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

        #[test]
        fn random_event_orders_keep_the_invariants(input in inputs()) {
            run_input(&input);
        }

        #[test]
        fn deterministic(input in inputs()) {
            prop_assert_eq!(run_input(&input), run_input(&input));
        }
    }
}

#[test]
fn deterministic_script() {
    use random::Op;
    let ops = [
        Op::Advance(300, true),
        Op::Failed(0, 0),
        Op::AtTimeout,
        Op::Connected(1),
        Op::Recv(1, 7),
        Op::Unknown(1, 2),
        Op::Recv(1, 100),
    ];
    let req = random::exchange_request(&[1, 2, 3], Some(20_000), 5_000, 2_000, None);
    let a = random::run(Profile::Stn, req.clone(), 0, false, &ops);
    let b = random::run(Profile::Stn, req, 0, false, &ops);
    assert_eq!(a, b);
    // The script reached a successful end.
    assert!(a
        .iter()
        .any(|(_, act)| matches!(act, A::Finished(r) if r.outcome.is_ok())));
}
