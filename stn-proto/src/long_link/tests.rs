use std::collections::BTreeSet;

use bytes::Bytes;

use super::*;
use crate::codec::longlink::{encode_to_bytes, NOOP_CMD_ID, NOOP_SEQ};
use crate::profile::Profile;
use crate::test_util::{ms, secs};

const VERSION: u32 = 0x10;

fn addr(i: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i], 8080))
}

fn frame(cmd_id: u32, seq: u32, body: &[u8]) -> Bytes {
    encode_to_bytes(
        &Frame::new(cmd_id, seq, Bytes::copy_from_slice(body)),
        VERSION,
    )
    .unwrap()
}

fn noop_bytes() -> Bytes {
    frame(NOOP_CMD_ID, NOOP_SEQ, b"")
}

fn timeouts() -> ExchangeTimeouts {
    ExchangeTimeouts {
        first_packet: secs(5),
        read_write: secs(20),
        packet_gap: secs(2),
        long_polling: None,
    }
}

fn config(profile: Profile) -> LongLinkConfig {
    let mut cfg = LongLinkConfig::for_profile(profile);
    cfg.codec.client_version = VERSION;
    cfg
}

/// A link plus the bookkeeping a test needs.
struct H {
    link: LongLink,
    ids: ConnIds,
    now: Instant,
    /// Whether the test answers `AskIdentify` itself; if not, `connected`
    /// answers `Never`.
    identify: bool,
}

impl H {
    fn new(cfg: LongLinkConfig) -> Self {
        H::with_identify(cfg, false)
    }

    fn with_identify(cfg: LongLinkConfig, identify: bool) -> Self {
        let now = Instant::from_secs(100);
        H {
            link: LongLink::new(now, cfg),
            ids: ConnIds::new(),
            now,
            identify,
        }
    }

    fn drain(&mut self) -> Vec<LongLinkEvent> {
        let events: Vec<_> = std::iter::from_fn(|| self.link.poll_event()).collect();
        if let Some(t) = self.link.poll_timeout() {
            assert!(
                t >= self.now,
                "poll_timeout {t:?} before now {:?}",
                self.now
            );
        }
        events
    }

    fn at(&mut self, t: Instant) -> Vec<LongLinkEvent> {
        self.now = t;
        self.link.handle_timeout(t, &mut self.ids);
        self.drain()
    }

    fn advance(&mut self, d: Duration) -> Vec<LongLinkEvent> {
        let t = self.now + d;
        self.at(t)
    }

    fn event(&mut self, conn: ConnId, ev: ConnEvent) -> Vec<LongLinkEvent> {
        self.link.handle_event(self.now, conn, ev, &mut self.ids);
        self.drain()
    }

    fn recv(&mut self, conn: ConnId, data: Bytes) -> Vec<LongLinkEvent> {
        self.event(conn, ConnEvent::Received(data))
    }

    fn send(&mut self, id: u32, body: &[u8]) -> Vec<LongLinkEvent> {
        self.link
            .send_task(
                self.now,
                TaskId::new(id),
                7,
                Bytes::copy_from_slice(body),
                timeouts(),
                None,
                false,
            )
            .unwrap();
        self.drain()
    }

    /// Startup to connected on `addr(1)` after 50 ms; returns the conn and
    /// the events of the connect.
    fn connected(&mut self) -> (ConnId, Vec<LongLinkEvent>) {
        assert_eq!(self.at(self.now), vec![LongLinkEvent::WantConnect]);
        self.link
            .connect(self.now, vec![addr(1)], None, &mut self.ids);
        let ev = self.drain();
        let conn = match ev.as_slice() {
            [LongLinkEvent::Io(IoAction::Connect { conn, addr: a })] if *a == addr(1) => *conn,
            other => panic!("{other:?}"),
        };
        self.now += ms(50);
        let mut ev = self.event(conn, ConnEvent::Connected);
        if !self.identify {
            assert_eq!(ev.last(), Some(&LongLinkEvent::AskIdentify));
            self.link.identify_answer(self.now, IdentifyDecision::Never);
            ev.extend(self.drain());
        }
        (conn, ev)
    }

    /// Connected with identify off and the first noop answered.
    fn ready(&mut self) -> ConnId {
        let (conn, _) = self.connected();
        assert!(self.recv(conn, noop_bytes()).is_empty());
        conn
    }
}

fn send_of(conn: ConnId, data: Bytes) -> LongLinkEvent {
    LongLinkEvent::Io(IoAction::Send { conn, data })
}

/// Task `task` failed with `error`; a per-task timer's value is that of
/// [`timeouts`], which every task here is sent with unless it says otherwise.
fn failed(task: u32, error: Error) -> LongLinkEvent {
    let t = timeouts();
    let timeout = match error {
        Error::Timeout(TimeoutKind::FirstPacket) => Some(t.first_packet),
        Error::Timeout(TimeoutKind::ReadWrite) => Some(t.read_write),
        Error::Timeout(TimeoutKind::PacketGap) => Some(t.packet_gap),
        _ => None,
    };
    failed_after(task, error, timeout)
}

fn failed_after(task: u32, error: Error, timeout: Option<Duration>) -> LongLinkEvent {
    LongLinkEvent::TaskFailed {
        task: TaskId::new(task),
        error,
        timeout,
    }
}

fn interrupted() -> Error {
    Error::Local(LocalError::Interrupted)
}

#[test]
fn connect_then_noop_exchange_with_exact_bytes() {
    let mut h = H::new(config(Profile::Stn));
    let t0 = h.now;
    let (conn, ev) = h.connected();
    let noop: &[u8] = &[
        0, 0, 0, 20, 0, 0, 0, 0x10, 0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
    ];
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Endpoint(EndpointReport {
                addr: addr(1),
                ok: true,
                connect_time: Some(ms(50)),
                error: None,
            }),
            LongLinkEvent::Connected {
                addr: addr(1),
                connect_time: ms(50),
            },
            LongLinkEvent::AskIdentify,
        ]
    );
    assert_eq!(h.link.state(), LinkState::Connected);
    assert_eq!(h.link.endpoint(), Some(addr(1)));
    // No noop at connect (Mars): the first goes out one interval later.
    let t1 = t0 + ms(50);
    assert_eq!(h.link.poll_timeout(), Some(t1 + ms(210_000)));
    assert!(h.at(t1 + ms(209_999)).is_empty());
    assert_eq!(
        h.at(t1 + ms(210_000)),
        vec![send_of(conn, Bytes::from_static(noop))]
    );
    // stn: the noop response is due 6 × RTT (the 50 ms connect), at least
    // 3 s, after the write (Mars: 8 s, below).
    let t1 = t1 + ms(210_000);
    assert_eq!(h.link.poll_timeout(), Some(t1 + secs(3)));
    h.now = t1 + ms(30);
    assert!(h.recv(conn, noop_bytes()).is_empty());
    assert_eq!(h.link.unknown_frames(), 0);
    // Next noop 3.5 min after the last write.
    assert_eq!(h.link.poll_timeout(), Some(t1 + ms(210_000)));
    assert!(h.at(t1 + ms(209_999)).is_empty());
    assert_eq!(
        h.at(t1 + ms(210_000)),
        vec![send_of(conn, Bytes::from_static(noop))]
    );
    // A task write re-arms the interval.
    h.now += ms(100);
    assert!(h.recv(conn, noop_bytes()).is_empty());
    let t2 = h.now;
    let ev = h.send(1, b"hi");
    assert_eq!(ev, vec![send_of(conn, frame(7, 1, b"hi"))]);
    h.recv(conn, frame(7, 1, b"ok"));
    assert_eq!(h.link.poll_timeout(), Some(t2 + ms(210_000)));

    let mut h = H::new(config(Profile::Mars));
    let (conn, _) = h.connected();
    let slot = h.now + secs(210);
    assert_eq!(h.link.poll_timeout(), Some(slot));
    assert_eq!(h.at(slot), vec![send_of(conn, noop_bytes())]);
    assert_eq!(h.link.poll_timeout(), Some(slot + secs(8)));
}

#[test]
fn noop_after_a_long_sleep_waits_less() {
    let mut h = H::new(config(Profile::Mars));
    let conn = h.ready();
    // The device slept through the 3.5 min alarm: 20 min later the noop
    // goes out with the 5 s "late" timeout.
    let ev = h.advance(secs(20 * 60));
    assert_eq!(ev, vec![send_of(conn, noop_bytes())]);
    assert_eq!(h.link.poll_timeout(), Some(h.now + secs(5)));
    let ev = h.advance(secs(5));
    assert_eq!(
        ev.last(),
        Some(&LongLinkEvent::Disconnected {
            error: Some(Error::Timeout(TimeoutKind::Heartbeat)),
            deterministic: false
        })
    );
}

#[test]
fn identify_now_sends_the_packet_and_consumes_the_response() {
    let mut h = H::with_identify(config(Profile::Stn), true);
    let (conn, ev) = h.connected();
    assert_eq!(ev.last(), Some(&LongLinkEvent::AskIdentify));
    assert!(!ev
        .iter()
        .any(|e| matches!(e, LongLinkEvent::Io(IoAction::Send { .. }))));
    h.link.identify_answer(
        h.now,
        IdentifyDecision::Now {
            cmd_id: 100,
            body: Bytes::from_static(b"auth"),
        },
    );
    let ev = h.drain();
    let expected: &[u8] = &[
        0, 0, 0, 20, 0, 0, 0, 0x10, 0, 0, 0, 100, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 4, b'a', b'u',
        b't', b'h',
    ];
    assert_eq!(ev, vec![send_of(conn, Bytes::from_static(expected))]);
    // A second answer is ignored.
    h.link.identify_answer(h.now, IdentifyDecision::Never);
    assert!(h.drain().is_empty());
    let sent = h.now;
    h.now += ms(200);
    let ev = h.recv(conn, frame(100, IDENTIFY_SEQ, b"welcome"));
    assert_eq!(
        ev,
        vec![LongLinkEvent::IdentifyResponse {
            cmd_id: 100,
            body: Bytes::from_static(b"welcome"),
        }]
    );
    // Done for this connection: the next slot is a plain noop.
    assert_eq!(h.link.poll_timeout(), Some(sent + ms(210_000)));
    assert_eq!(h.at(sent + ms(210_000)), vec![send_of(conn, noop_bytes())]);
}

#[test]
fn identify_next_asks_again_at_the_next_slot() {
    let mut h = H::with_identify(config(Profile::Stn), true);
    let (conn, _) = h.connected();
    h.link.identify_answer(h.now, IdentifyDecision::Next);
    assert_eq!(h.drain(), vec![], "no noop at connect");
    let sent = h.now;
    assert_eq!(h.at(sent + ms(210_000)), vec![LongLinkEvent::AskIdentify]);
    h.link.identify_answer(h.now, IdentifyDecision::Never);
    assert_eq!(h.drain(), vec![send_of(conn, noop_bytes())]);
    let sent = h.now;
    assert!(h.recv(conn, noop_bytes()).is_empty());
    assert_eq!(h.at(sent + ms(210_000)), vec![send_of(conn, noop_bytes())]);
}

#[test]
fn identify_never_sends_noops_only_and_a_silent_app_still_gets_noops() {
    let mut h = H::with_identify(config(Profile::Stn), true);
    let (conn, _) = h.connected();
    h.link.identify_answer(h.now, IdentifyDecision::Never);
    assert_eq!(h.drain(), vec![], "the first noop is one interval later");
    let at = h.now + ms(210_000);
    assert_eq!(h.at(at), vec![send_of(conn, noop_bytes())]);

    // A silent app: the link is still probed at the next slot.
    let mut h = H::with_identify(config(Profile::Stn), true);
    let (conn, _) = h.connected();
    let asked = h.now;
    assert_eq!(h.link.poll_timeout(), Some(asked + ms(210_000)));
    assert_eq!(h.at(asked + ms(210_000)), vec![send_of(conn, noop_bytes())]);
}

#[test]
fn identify_timeout_is_a_heartbeat_timeout() {
    let mut h = H::with_identify(config(Profile::Stn), true);
    let (conn, _) = h.connected();
    h.link.identify_answer(
        h.now,
        IdentifyDecision::Now {
            cmd_id: 100,
            body: Bytes::new(),
        },
    );
    h.drain();
    // A noop response does not satisfy the identify wait.
    assert!(h.recv(conn, noop_bytes()).is_empty());
    let ev = h.advance(secs(8));
    assert_eq!(ev[0], LongLinkEvent::Io(IoAction::Close { conn }));
    assert_eq!(
        ev.last(),
        Some(&LongLinkEvent::Disconnected {
            error: Some(Error::Timeout(TimeoutKind::Heartbeat)),
            deterministic: false
        })
    );
}

#[test]
fn pipelined_tasks_answered_out_of_order_and_push() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    let sent = h.now;
    for id in 1..=3 {
        h.send(id, b"req");
    }
    assert_eq!(h.link.in_flight(), 3);
    h.now += ms(300);
    let mut wire = Vec::new();
    wire.extend_from_slice(&frame(7, 3, b"three"));
    wire.extend_from_slice(&frame(9, 0, b"push"));
    wire.extend_from_slice(&frame(7, 1, b"one"));
    wire.extend_from_slice(&frame(7, 2, b"two"));
    let ev = h.recv(conn, Bytes::from(wire));
    let resp = |id: u32, body: &'static [u8]| LongLinkEvent::TaskResponse {
        task: TaskId::new(id),
        cmd_id: 7,
        body: Bytes::from_static(body),
        first_packet_after: Some(h.now - sent),
        bytes_received: 20 + body.len() as u64,
    };
    assert_eq!(
        ev,
        vec![
            resp(3, b"three"),
            LongLinkEvent::Push {
                cmd_id: 9,
                body: Bytes::from_static(b"push"),
            },
            resp(1, b"one"),
            resp(2, b"two"),
        ]
    );
    assert_eq!(h.link.in_flight(), 0);
    // A response for nothing is counted and dropped.
    assert!(h.recv(conn, frame(7, 42, b"?")).is_empty());
    assert_eq!(h.link.unknown_frames(), 1);
}

#[test]
fn frames_split_byte_at_a_time() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    let sent = h.now;
    h.send(5, b"req");
    let mut wire = Vec::new();
    wire.extend_from_slice(&frame(7, 5, b"hello world"));
    wire.extend_from_slice(&frame(11, 0, b"p"));
    wire.extend_from_slice(&noop_bytes());
    let mut all = Vec::new();
    for (i, b) in wire.iter().enumerate() {
        h.now = sent + ms(10 * (i as u64 + 1));
        all.extend(h.recv(conn, Bytes::copy_from_slice(&[*b])));
        assert!(h.link.decoder_buffered_len() <= 20 + 11);
    }
    assert_eq!(
        all,
        vec![
            LongLinkEvent::TaskResponse {
                task: TaskId::new(5),
                cmd_id: 7,
                body: Bytes::from_static(b"hello world"),
                // The first packet counts once the header (20 bytes) is in.
                first_packet_after: Some(ms(200)),
                bytes_received: 31,
            },
            LongLinkEvent::Push {
                cmd_id: 11,
                body: Bytes::from_static(b"p"),
            },
        ]
    );
    // The trailing (unrequested) noop response is consumed silently.
    assert_eq!(h.link.unknown_frames(), 0);
}

#[test]
fn garbage_fails_every_running_task_once_with_a_protocol_error() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    for id in [1, 2, 3] {
        h.send(id, b"x");
    }
    // A valid response first: delivered before the garbage is seen.
    let mut wire = frame(7, 2, b"ok").to_vec();
    wire.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let ev = h.recv(conn, Bytes::from(wire));
    let err = Error::Protocol(ProtocolError::BadFrameHeader);
    assert!(matches!(ev[0], LongLinkEvent::TaskResponse { task, .. } if task == TaskId::new(2)));
    assert_eq!(
        ev[1..],
        [
            LongLinkEvent::Io(IoAction::Close { conn }),
            LongLinkEvent::Endpoint(EndpointReport {
                addr: addr(1),
                ok: false,
                connect_time: None,
                error: Some(err.clone()),
            }),
            failed(1, err.clone()),
            failed(3, err.clone()),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: false
            },
        ]
    );
    assert_eq!(h.link.state(), LinkState::Disconnected);
    assert_eq!(h.link.in_flight(), 0);
    // More bytes on the closed conn are ignored.
    assert!(h.recv(conn, frame(7, 1, b"late")).is_empty());
}

#[test]
fn wrong_client_version_is_a_protocol_error() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    let bad = encode_to_bytes(&Frame::new(7, 0, Bytes::new()), VERSION + 1).unwrap();
    let ev = h.recv(conn, bad);
    assert_eq!(
        ev.last(),
        Some(&LongLinkEvent::Disconnected {
            error: Some(Error::Protocol(ProtocolError::VersionMismatch)),
            deterministic: false
        })
    );
}

#[test]
fn oversize_length_is_rejected_at_the_header() {
    let mut cfg = config(Profile::Stn);
    cfg.codec.max_body_len = 1024;
    let mut h = H::new(cfg);
    let conn = h.ready();
    h.send(1, b"x");
    let mut header = vec![0, 0, 0, 20, 0, 0, 0, 0x10, 0, 0, 0, 7, 0, 0, 0, 1];
    header.extend_from_slice(&(2u32 << 20).to_be_bytes());
    // 19 bytes: still waiting.
    assert!(h
        .recv(conn, Bytes::copy_from_slice(&header[..19]))
        .is_empty());
    assert_eq!(h.link.decoder_buffered_len(), 19);
    // The 20th byte: rejected before any body byte is buffered.
    let ev = h.recv(conn, Bytes::copy_from_slice(&header[19..]));
    let err = Error::Protocol(ProtocolError::FrameTooLarge);
    assert!(ev.contains(&failed(1, err.clone())));
    assert_eq!(
        ev.last(),
        Some(&LongLinkEvent::Disconnected {
            error: Some(err),
            deterministic: false
        })
    );
    assert_eq!(h.link.decoder_buffered_len(), 0);
}

#[test]
fn first_packet_timeout_fails_the_batch_and_the_monitor_reconnects() {
    // Mars profile: plain tables, so the reconnect time is exact.
    let mut h = H::new(config(Profile::Mars));
    let start = h.now;
    let conn = h.ready();
    let sent = h.now;
    h.send(1, b"a");
    h.now += secs(1);
    h.link
        .send_task(
            h.now,
            TaskId::new(2),
            7,
            Bytes::new(),
            ExchangeTimeouts {
                first_packet: secs(10),
                ..timeouts()
            },
            None,
            false,
        )
        .unwrap();
    h.drain();
    assert_eq!(h.link.poll_timeout(), Some(sent + secs(5)));
    assert!(h.at(sent + secs(5) - ms(1)).is_empty());
    let ev = h.at(sent + secs(5));
    let err = Error::Timeout(TimeoutKind::FirstPacket);
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Io(IoAction::Close { conn }),
            LongLinkEvent::Endpoint(EndpointReport {
                addr: addr(1),
                ok: false,
                connect_time: None,
                error: Some(err.clone()),
            }),
            failed(1, err.clone()),
            failed(2, interrupted()),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: false
            },
        ]
    );
    // Mars, foreground < 1 min: auto reconnect 15 s after the last attempt started.
    assert_eq!(h.link.poll_timeout(), Some(sent + secs(5) + ms(500)));
    assert!(h.at(sent + secs(5) + ms(500)).is_empty());
    assert_eq!(h.link.poll_timeout(), Some(start + secs(15)));
    assert_eq!(h.at(start + secs(15)), vec![LongLinkEvent::WantConnect]);
    assert_eq!(h.link.poll_timeout(), None);
}

#[test]
fn stn_reconnects_with_the_backoff() {
    let mut h = H::new(config(Profile::Stn));
    let start = h.now;
    let conn = h.ready();
    h.send(1, b"a");
    h.advance(secs(5));
    assert_eq!(h.link.state(), LinkState::Disconnected);
    // stn: 1 s (+ up to 20 % jitter) after the attempt start, which is long
    // past; the 500 ms settle decides.
    let t = h.link.poll_timeout().unwrap();
    assert_eq!(t, start + ms(50) + secs(5) + ms(500));
    assert_eq!(h.at(t), vec![LongLinkEvent::WantConnect]);
    let _ = conn;
}

#[test]
fn packet_gap_and_read_write_timeouts() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    h.send(1, b"a");
    let resp = frame(7, 1, &[0u8; 100]);
    h.now += secs(1);
    // Header and part of the body: first packet seen, then silence.
    h.recv(conn, resp.slice(..30));
    assert_eq!(h.link.poll_timeout(), Some(h.now + secs(2)));
    let ev = h.advance(secs(2));
    assert!(ev.contains(&failed(1, Error::Timeout(TimeoutKind::PacketGap))));

    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    let sent = h.now;
    h.send(1, b"a");
    // The header, then a body byte every second keeps the gap timer happy;
    // read-write (20 s) ends it.
    h.recv(conn, resp.slice(..20));
    let mut t = sent;
    let mut i = 20;
    loop {
        t += secs(1);
        let ev = h.at(t);
        if !ev.is_empty() {
            assert_eq!(t, sent + secs(20));
            assert!(ev.contains(&failed(1, Error::Timeout(TimeoutKind::ReadWrite))));
            break;
        }
        h.recv(conn, resp.slice(i..i + 1));
        i += 1;
    }
}

#[test]
fn long_polling_replaces_the_first_packet_timeout() {
    let mut h = H::new(config(Profile::Stn));
    h.ready();
    let sent = h.now;
    let lp = ExchangeTimeouts {
        long_polling: Some(secs(15)),
        read_write: secs(30),
        ..timeouts()
    };
    h.link
        .send_task(h.now, TaskId::new(1), 7, Bytes::new(), lp, None, false)
        .unwrap();
    h.drain();
    // The heartbeat keeps going meanwhile; no first-packet failure at 5 s.
    assert!(h.at(sent + secs(5)).is_empty());
    let ev = h.at(sent + secs(15));
    assert!(ev.contains(&failed_after(
        1,
        Error::Timeout(TimeoutKind::LongPolling),
        Some(secs(15))
    )));
}

#[test]
fn task_deadline_fails_one_task_under_stn_and_the_batch_under_mars() {
    for (profile, batch) in [(Profile::Stn, false), (Profile::Mars, true)] {
        let mut h = H::new(config(profile));
        h.ready();
        let t = h.now;
        h.link
            .send_task(
                t,
                TaskId::new(1),
                7,
                Bytes::new(),
                timeouts(),
                Some(t + secs(1)),
                false,
            )
            .unwrap();
        h.send(2, b"b");
        let ev = h.at(t + secs(1));
        assert!(ev.contains(&failed(1, Error::Timeout(TimeoutKind::Task))));
        assert_eq!(ev.contains(&failed(2, interrupted())), batch, "{profile:?}");
        assert_eq!(h.link.is_connected(), !batch, "{profile:?}");
    }
}

#[test]
fn heartbeat_timeout_disconnects() {
    let mut h = H::new(config(Profile::Stn));
    let (conn, _) = h.connected();
    // The first noop goes out one interval after connect (Mars).
    h.advance(secs(210));
    let slow = ExchangeTimeouts {
        first_packet: secs(20),
        read_write: secs(30),
        ..timeouts()
    };
    h.link
        .send_task(h.now, TaskId::new(1), 7, Bytes::new(), slow, None, false)
        .unwrap();
    h.drain();
    let ev = h.advance(secs(8));
    let err = Error::Timeout(TimeoutKind::Heartbeat);
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Io(IoAction::Close { conn }),
            LongLinkEvent::Endpoint(EndpointReport {
                addr: addr(1),
                ok: false,
                connect_time: None,
                error: Some(err.clone()),
            }),
            failed(1, err.clone()),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: false
            },
        ]
    );
}

#[test]
fn remote_close_fails_tasks_with_a_socket_error() {
    for (reason, err) in [
        (CloseReason::Eof, SocketError::ClosedByPeer),
        (CloseReason::Reset, SocketError::Reset),
    ] {
        let mut h = H::new(config(Profile::Stn));
        let conn = h.ready();
        h.send(1, b"a");
        h.send(2, b"b");
        let ev = h.event(conn, ConnEvent::Closed(reason));
        let err = Error::Socket(err);
        // No Close: the connection is already gone.
        assert_eq!(
            ev,
            vec![
                LongLinkEvent::Endpoint(EndpointReport {
                    addr: addr(1),
                    ok: false,
                    connect_time: None,
                    error: Some(err.clone()),
                }),
                failed(1, err.clone()),
                failed(2, err.clone()),
                LongLinkEvent::Disconnected {
                    error: Some(err),
                    deterministic: false
                },
            ]
        );
        assert_eq!(
            h.link.send_task(
                h.now,
                TaskId::new(3),
                7,
                Bytes::new(),
                timeouts(),
                None,
                false
            ),
            Err(SendError::NotConnected)
        );
    }
}

#[test]
fn network_change_reconnects_at_once() {
    let mut h = H::new(config(Profile::Mars));
    let conn = h.ready();
    h.send(1, b"a");
    h.link.on_network_change(h.now);
    assert_eq!(
        h.drain(),
        vec![
            LongLinkEvent::Io(IoAction::Close { conn }),
            failed(1, interrupted()),
            LongLinkEvent::Disconnected {
                error: None,
                deterministic: false
            },
            LongLinkEvent::WantConnect,
        ]
    );
    // While connecting too: the race is abandoned and a new connect wanted.
    h.link.connect(h.now, vec![addr(2)], None, &mut h.ids);
    let c2 = h.drain()[0].clone();
    let LongLinkEvent::Io(IoAction::Connect { conn: c2, .. }) = c2 else {
        panic!("{c2:?}");
    };
    h.link.disconnect(h.now, DisconnectReason::NetworkChange);
    assert_eq!(
        h.drain(),
        vec![
            LongLinkEvent::Io(IoAction::Close { conn: c2 }),
            LongLinkEvent::Disconnected {
                error: None,
                deterministic: false
            },
            LongLinkEvent::WantConnect,
        ]
    );
    // A late connect result for the abandoned attempt is ignored.
    assert!(h.event(c2, ConnEvent::Connected).is_empty());
    assert_eq!(h.link.state(), LinkState::Disconnected);
}

#[test]
fn send_only_completes_when_written() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    h.link
        .send_task(
            h.now,
            TaskId::new(4),
            8,
            Bytes::from_static(b"fire"),
            timeouts(),
            None,
            true,
        )
        .unwrap();
    assert_eq!(
        h.drain(),
        vec![
            send_of(conn, frame(8, 4, b"fire")),
            LongLinkEvent::TaskSent {
                task: TaskId::new(4)
            },
        ]
    );
    assert_eq!(h.link.in_flight(), 0);
    // No timers for it: nothing happens at its first-packet time.
    assert!(h.advance(secs(6)).is_empty());
}

#[test]
fn send_task_refusals() {
    let mut cfg = config(Profile::Stn);
    cfg.max_in_flight_tasks = 2;
    cfg.codec.max_body_len = 8;
    let mut h = H::new(cfg);
    let send = |h: &mut H, id: u32, len: usize, only: bool| {
        h.link.send_task(
            h.now,
            TaskId::new(id),
            7,
            Bytes::from(vec![0u8; len]),
            timeouts(),
            None,
            only,
        )
    };
    assert_eq!(send(&mut h, 1, 1, false), Err(SendError::NotConnected));
    h.ready();
    assert_eq!(
        send(&mut h, 0, 1, false),
        Err(SendError::ReservedId(TaskId::INVALID))
    );
    assert_eq!(
        send(&mut h, NOOP_SEQ, 1, false),
        Err(SendError::ReservedId(TaskId::NOOP))
    );
    assert_eq!(
        send(&mut h, 1, 9, false),
        Err(SendError::TooLarge { len: 9 })
    );
    assert_eq!(send(&mut h, 1, 8, false), Ok(()));
    assert_eq!(
        send(&mut h, 1, 1, false),
        Err(SendError::Duplicate(TaskId::new(1)))
    );
    assert_eq!(send(&mut h, 2, 1, false), Ok(()));
    assert_eq!(send(&mut h, 3, 1, false), Err(SendError::TooManyInFlight));
    // Send-only tasks are not in flight: still accepted.
    assert_eq!(send(&mut h, 3, 1, true), Ok(()));
    assert_eq!(h.link.in_flight(), 2);
}

#[test]
fn cancelled_task_gets_no_event_and_its_response_is_dropped() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    h.send(1, b"a");
    h.link.cancel_task(h.now, TaskId::new(1));
    assert_eq!(h.link.in_flight(), 0);
    assert!(h.recv(conn, frame(7, 1, b"late")).is_empty());
    assert_eq!(h.link.unknown_frames(), 1);
    // Its timers are gone too.
    assert!(h.advance(secs(6)).is_empty());
    assert!(h.link.is_connected());
}

#[test]
fn racing_connects_to_the_faster_candidate_and_closes_the_other() {
    let mut h = H::new(config(Profile::Stn));
    h.at(h.now);
    h.link
        .connect(h.now, vec![addr(1), addr(2)], None, &mut h.ids);
    let ev = h.drain();
    let LongLinkEvent::Io(IoAction::Connect { conn: c1, .. }) = ev[0] else {
        panic!("{ev:?}");
    };
    // Stagger 250 ms: the second attempt starts.
    let ev = h.advance(ms(250));
    assert_eq!(ev.len(), 1);
    let LongLinkEvent::Io(IoAction::Connect { conn: c2, addr: a2 }) = ev[0] else {
        panic!("{ev:?}");
    };
    assert_eq!(a2, addr(2));
    h.now += ms(200);
    let ev = h.event(c2, ConnEvent::Connected);
    assert!(ev.contains(&LongLinkEvent::Io(IoAction::Close { conn: c1 })));
    // The loser waited 450 ms where the winner took 200: merely slower, no
    // verdict (an outpaced loser, under twice that plus 100 ms, would fail).
    assert!(!ev
        .iter()
        .any(|e| matches!(e, LongLinkEvent::Endpoint(r) if r.addr == addr(1))));
    assert!(ev.contains(&LongLinkEvent::Connected {
        addr: addr(2),
        connect_time: ms(200)
    }));
    assert_eq!(h.link.conn(), Some(c2));
    // The loser's late result is ignored.
    assert!(h.event(c1, ConnEvent::Connected).is_empty());
    assert!(h.event(c1, ConnEvent::Received(noop_bytes())).is_empty());
}

#[test]
fn failed_connect_reports_and_schedules_a_retry() {
    let mut h = H::new(config(Profile::Mars));
    h.at(h.now);
    h.link.connect(h.now, vec![addr(1)], None, &mut h.ids);
    let LongLinkEvent::Io(IoAction::Connect { conn, .. }) = h.drain()[0] else {
        panic!()
    };
    h.now += ms(10);
    let ev = h.event(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
    let err = Error::Connect {
        addr: Some(addr(1)),
        error: ConnectError::Refused,
    };
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Endpoint(EndpointReport {
                addr: addr(1),
                ok: false,
                connect_time: None,
                error: Some(err.clone()),
            }),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: true
            },
        ]
    );
    // Empty candidate list: fails at once with a DNS error.
    let mut h = H::new(config(Profile::Mars));
    h.at(h.now);
    h.link.connect(h.now, vec![], None, &mut h.ids);
    assert_eq!(
        h.drain(),
        vec![LongLinkEvent::Disconnected {
            error: Some(Error::Dns(DnsError::NoCandidates)),
            deterministic: false
        }]
    );
    assert!(h.link.poll_timeout().is_some());
}

#[test]
fn shutdown_closes_everything_and_stays_down() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    h.send(1, b"a");
    h.link.disconnect(h.now, DisconnectReason::Shutdown);
    assert_eq!(
        h.drain(),
        vec![
            LongLinkEvent::Io(IoAction::Close { conn }),
            failed(1, Error::Shutdown),
            LongLinkEvent::Disconnected {
                error: None,
                deterministic: false
            },
        ]
    );
    assert_eq!(h.link.state(), LinkState::Shutdown);
    assert_eq!(h.link.poll_timeout(), None);
    h.link.task_needs_link(h.now);
    h.link.on_network_change(h.now);
    h.link.connect(h.now, vec![addr(1)], None, &mut h.ids);
    assert!(h.advance(secs(3600)).is_empty());
}

#[test]
fn task_needs_link_uses_the_task_row() {
    let mut h = H::new(config(Profile::Mars));
    let start = h.now;
    h.at(h.now);
    h.link.connect(h.now, vec![], None, &mut h.ids);
    h.drain();
    h.link.task_needs_link(h.now);
    assert!(h.drain().is_empty());
    // Mars task row, foreground < 1 min: 5 s from the attempt start.
    assert_eq!(h.link.poll_timeout(), Some(start + ms(500)));
    h.at(start + ms(500));
    assert_eq!(h.link.poll_timeout(), Some(start + secs(5)));
    assert_eq!(h.at(start + secs(5)), vec![LongLinkEvent::WantConnect]);
}

// ---- randomized driving ----

mod model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Debug)]
    pub(super) enum Payload {
        /// A response to the `i`-th pending task (mod count), or an unknown seq.
        Response {
            pick: usize,
            body: Vec<u8>,
        },
        Push(Vec<u8>),
        Noop,
        Identify,
        Garbage(Vec<u8>),
        Oversize,
    }

    #[derive(Clone, Debug)]
    pub(super) enum Op {
        Connect(u8),
        /// Result for the `pick`-th connecting conn.
        ConnResult {
            pick: usize,
            ok: bool,
        },
        /// Bytes on the link; split at `split` (rest kept for `Rest`).
        Recv {
            payload: Payload,
            split: Option<usize>,
        },
        Rest,
        RemoteClose(bool),
        /// A stray event for an old or unknown conn.
        Stray {
            pick: usize,
            ev: u8,
        },
        Send {
            id: u32,
            send_only: bool,
            fp: u64,
            gap: u64,
            lp: bool,
            deadline: Option<u64>,
        },
        Cancel(u32),
        Advance(u64),
        ToDeadline,
        NetworkChange,
        Disconnect(u8),
        Identify(u8),
        Foreground(bool),
        TaskNeedsLink,
    }

    fn payload() -> impl Strategy<Value = Payload> {
        prop_oneof![
            8 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 0..40))
                .prop_map(|(pick, body)| Payload::Response { pick, body }),
            1 => proptest::collection::vec(any::<u8>(), 0..20).prop_map(Payload::Push),
            1 => Just(Payload::Noop),
            1 => Just(Payload::Identify),
            1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(Payload::Garbage),
            1 => Just(Payload::Oversize),
        ]
    }

    pub(super) fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => prop_oneof![1 => Just(0u8), 5 => 1u8..3].prop_map(Op::Connect),
            6 => (any::<usize>(), proptest::bool::weighted(0.85))
                .prop_map(|(pick, ok)| Op::ConnResult { pick, ok }),
            12 => (payload(), proptest::option::of(0usize..64))
                .prop_map(|(payload, split)| Op::Recv { payload, split }),
            2 => Just(Op::Rest),
            1 => any::<bool>().prop_map(Op::RemoteClose),
            1 => (any::<usize>(), 0u8..4).prop_map(|(pick, ev)| Op::Stray { pick, ev }),
            10 => (1u32..12, proptest::bool::weighted(0.2), 1u64..10, 1u64..5, proptest::bool::weighted(0.1),
                  proptest::option::weighted(0.2, 0u64..15))
                .prop_map(|(id, send_only, fp, gap, lp, deadline)| Op::Send { id, send_only, fp, gap, lp, deadline }),
            1 => (1u32..12).prop_map(Op::Cancel),
            4 => (0u64..6_000).prop_map(Op::Advance),
            2 => Just(Op::ToDeadline),
            1 => Just(Op::NetworkChange),
            1 => (0u8..3).prop_map(Op::Disconnect),
            1 => (0u8..3).prop_map(Op::Identify),
            1 => any::<bool>().prop_map(Op::Foreground),
            1 => Just(Op::TaskNeedsLink),
        ]
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum ConnState {
        Connecting,
        Established,
        Ended,
    }

    /// Drives a link and checks the invariants after every step.
    pub(super) struct Driver {
        pub(super) link: LongLink,
        ids: ConnIds,
        now: Instant,
        conns: BTreeMap<ConnId, ConnState>,
        /// Tasks owed exactly one terminal event.
        pending: BTreeSet<TaskId>,
        cancelled: BTreeSet<TaskId>,
        carry: Vec<u8>,
        max_body: usize,
        /// Answer `AskIdentify` with `Never` at once (else only `Op::Identify` answers).
        auto_never: bool,
        pub(super) trace: Vec<(Instant, LongLinkEvent)>,
    }

    impl Driver {
        pub(super) fn new(profile: Profile, identify: bool) -> Self {
            let mut cfg = config(profile);
            cfg.codec.max_body_len = 64;
            cfg.max_in_flight_tasks = 4;
            let max_body = cfg.codec.max_body_len;
            let now = Instant::from_secs(1000);
            Driver {
                link: LongLink::new(now, cfg),
                ids: ConnIds::new(),
                now,
                conns: BTreeMap::new(),
                pending: BTreeSet::new(),
                cancelled: BTreeSet::new(),
                carry: Vec::new(),
                max_body,
                auto_never: !identify,
                trace: Vec::new(),
            }
        }

        fn pick_conn(&self, state: ConnState, pick: usize) -> Option<ConnId> {
            let v: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, s)| **s == state)
                .map(|(c, _)| *c)
                .collect();
            (!v.is_empty()).then(|| v[pick % v.len()])
        }

        fn established(&self) -> Option<ConnId> {
            self.pick_conn(ConnState::Established, 0)
        }

        fn deliver(&mut self, conn: ConnId, ev: ConnEvent) {
            if let Some(s) = self.conns.get_mut(&conn) {
                match ev {
                    ConnEvent::Connected => *s = ConnState::Established,
                    ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_) => *s = ConnState::Ended,
                    ConnEvent::TcpConnected
                    | ConnEvent::EarlyData { .. }
                    | ConnEvent::Received(_) => {}
                }
            }
            self.link.handle_event(self.now, conn, ev, &mut self.ids);
        }

        pub(super) fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
            let mut fired_at = None;
            match op.clone() {
                Op::Connect(n) => {
                    let cands = (0..n).map(|i| addr(i + 1)).collect();
                    self.link.connect(self.now, cands, None, &mut self.ids);
                }
                Op::ConnResult { pick, ok } => {
                    if let Some(c) = self.pick_conn(ConnState::Connecting, pick) {
                        let ev = if ok {
                            ConnEvent::Connected
                        } else {
                            ConnEvent::ConnectFailed(ConnectError::Refused)
                        };
                        self.deliver(c, ev);
                    }
                }
                Op::Recv { payload, split } => {
                    if let Some(c) = self.established() {
                        let bytes = self.payload_bytes(payload);
                        let at = split.unwrap_or(bytes.len()).min(bytes.len());
                        let mut data = std::mem::take(&mut self.carry);
                        data.extend_from_slice(&bytes[..at]);
                        self.carry = bytes[at..].to_vec();
                        self.deliver(c, ConnEvent::Received(Bytes::from(data)));
                    }
                }
                Op::Rest => {
                    if let Some(c) = self.established() {
                        let data = std::mem::take(&mut self.carry);
                        self.deliver(c, ConnEvent::Received(Bytes::from(data)));
                    }
                }
                Op::RemoteClose(eof) => {
                    if let Some(c) = self.established() {
                        let r = if eof {
                            CloseReason::Eof
                        } else {
                            CloseReason::Reset
                        };
                        self.deliver(c, ConnEvent::Closed(r));
                    }
                }
                Op::Stray { pick, ev } => {
                    let old: Vec<ConnId> = self
                        .conns
                        .iter()
                        .filter(|(_, s)| **s == ConnState::Ended)
                        .map(|(c, _)| *c)
                        .chain([ConnId(9999)])
                        .collect();
                    let c = old[pick % old.len()];
                    let ev = match ev {
                        0 => ConnEvent::Connected,
                        1 => ConnEvent::ConnectFailed(ConnectError::Reset),
                        2 => ConnEvent::Received(noop_bytes()),
                        _ => ConnEvent::Closed(CloseReason::Eof),
                    };
                    let before = self.link.state();
                    self.link.handle_event(self.now, c, ev, &mut self.ids);
                    let got: Vec<_> = std::iter::from_fn(|| self.link.poll_event()).collect();
                    prop_assert!(got.is_empty(), "stray event produced {got:?}");
                    prop_assert_eq!(before, self.link.state());
                }
                Op::Send {
                    id,
                    send_only,
                    fp,
                    gap,
                    lp,
                    deadline,
                } => {
                    let task = TaskId::new(id);
                    let t = ExchangeTimeouts {
                        first_packet: secs(fp),
                        read_write: secs(fp + 5),
                        packet_gap: secs(gap),
                        long_polling: lp.then(|| secs(fp + 2)),
                    };
                    let deadline = deadline.map(|d| self.now + secs(d));
                    let r = self.link.send_task(
                        self.now,
                        task,
                        7,
                        Bytes::from_static(b"q"),
                        t,
                        deadline,
                        send_only,
                    );
                    if r.is_ok() {
                        self.cancelled.remove(&task);
                        // A send-only task ends with `TaskSent` once written
                        // (at once, or after the noop a held task waits for).
                        prop_assert!(
                            self.pending.insert(task) || send_only,
                            "accepted a duplicate"
                        );
                    } else {
                        prop_assert!(
                            !self.link.is_connected()
                                || self.pending.contains(&task)
                                || self.pending.len() >= 4,
                            "refused {r:?}"
                        );
                    }
                }
                Op::Cancel(id) => {
                    let task = TaskId::new(id);
                    if self.pending.remove(&task) {
                        self.cancelled.insert(task);
                    }
                    self.link.cancel_task(self.now, task);
                }
                Op::Advance(d) => {
                    self.now += ms(d);
                    self.link.handle_timeout(self.now, &mut self.ids);
                }
                Op::ToDeadline => {
                    if let Some(t) = self.link.poll_timeout() {
                        // Long waits (heartbeat interval) are fine to jump.
                        self.now = t;
                        self.link.handle_timeout(t, &mut self.ids);
                        fired_at = Some(t);
                    }
                }
                Op::NetworkChange => self.link.on_network_change(self.now),
                Op::Disconnect(r) => {
                    let reason = match r {
                        0 => DisconnectReason::User,
                        1 => DisconnectReason::Reset,
                        _ => DisconnectReason::NetworkChange,
                    };
                    self.link.disconnect(self.now, reason);
                }
                Op::Identify(d) => {
                    let decision = match d {
                        0 => IdentifyDecision::Now {
                            cmd_id: 100,
                            body: Bytes::from_static(b"id"),
                        },
                        1 => IdentifyDecision::Next,
                        _ => IdentifyDecision::Never,
                    };
                    self.link.identify_answer(self.now, decision);
                }
                Op::Foreground(fg) => self.link.set_foreground(self.now, fg),
                Op::TaskNeedsLink => self.link.task_needs_link(self.now),
            }
            let events = self.drain_and_check()?;
            if let Some(t) = fired_at {
                let next = self.link.poll_timeout();
                prop_assert!(
                    !events.is_empty() || next.is_none_or(|n| n > t),
                    "handle_timeout at the deadline {t:?} made no progress (next {next:?})"
                );
            }
            Ok(())
        }

        fn payload_bytes(&self, payload: Payload) -> Vec<u8> {
            match payload {
                Payload::Response { pick, body } => {
                    let pending: Vec<TaskId> = self.pending.iter().copied().collect();
                    let seq = if pending.is_empty() || pick % 5 == 4 {
                        // Unknown, or a cancelled task's.
                        self.cancelled.iter().next().map_or(77, |t| t.get())
                    } else {
                        pending[pick % pending.len()].get()
                    };
                    let body = &body[..body.len().min(self.max_body)];
                    frame(7, seq, body).to_vec()
                }
                Payload::Push(body) => frame(3, 0, &body).to_vec(),
                Payload::Noop => noop_bytes().to_vec(),
                Payload::Identify => frame(100, IDENTIFY_SEQ, b"ok").to_vec(),
                Payload::Garbage(g) => g,
                Payload::Oversize => {
                    let mut h = vec![0, 0, 0, 20, 0, 0, 0, 0x10, 0, 0, 0, 7, 0, 0, 0, 1];
                    h.extend_from_slice(&u32::MAX.to_be_bytes());
                    h
                }
            }
        }

        fn drain_and_check(&mut self) -> Result<Vec<LongLinkEvent>, TestCaseError> {
            let mut events: Vec<_> = std::iter::from_fn(|| self.link.poll_event()).collect();
            if self.auto_never && events.contains(&LongLinkEvent::AskIdentify) {
                self.link.identify_answer(self.now, IdentifyDecision::Never);
                events.extend(std::iter::from_fn(|| self.link.poll_event()));
            }
            for ev in &events {
                self.trace.push((self.now, ev.clone()));
                match ev {
                    LongLinkEvent::Io(IoAction::Connect { conn, .. }) => {
                        prop_assert!(
                            self.conns.insert(*conn, ConnState::Connecting).is_none(),
                            "conn id reused: {conn}"
                        );
                    }
                    LongLinkEvent::Io(io) => {
                        let conn = io.conn();
                        let state = self.conns.get(&conn).copied();
                        prop_assert!(
                            matches!(state, Some(ConnState::Connecting | ConnState::Established)),
                            "{io:?} names a conn that is {state:?}"
                        );
                        if let IoAction::Send { .. } = io {
                            prop_assert_eq!(state, Some(ConnState::Established));
                        }
                        if let IoAction::Close { .. } = io {
                            self.conns.insert(conn, ConnState::Ended);
                        }
                    }
                    LongLinkEvent::TaskResponse { task, .. }
                    | LongLinkEvent::TaskSent { task }
                    | LongLinkEvent::TaskFailed { task, .. } => {
                        prop_assert!(
                            self.pending.remove(task),
                            "terminal event for {task} which is not pending: {ev:?}"
                        );
                    }
                    _ => {}
                }
            }
            // The link runs exactly the pending tasks.
            prop_assert_eq!(self.link.in_flight(), self.pending.len());
            for t in &self.pending {
                prop_assert!(self.link.is_running(*t));
            }
            if let Some(t) = self.link.poll_timeout() {
                prop_assert!(t >= self.now, "poll_timeout {t:?} < now {:?}", self.now);
            }
            prop_assert!(self.link.decoder_buffered_len() <= 20 + self.max_body);
            // Only one established conn, and it is the link's.
            let est: Vec<_> = self
                .conns
                .iter()
                .filter(|(_, s)| **s == ConnState::Established)
                .map(|(c, _)| *c)
                .collect();
            prop_assert!(est.len() <= 1);
            prop_assert_eq!(est.first().copied(), self.link.conn());
            if !self.link.is_connected() {
                self.carry.clear();
            }
            Ok(events)
        }

        /// Shuts down and checks every conn ever opened has ended.
        pub(super) fn finish(&mut self) -> Result<(), TestCaseError> {
            self.link.disconnect(self.now, DisconnectReason::Shutdown);
            self.drain_and_check()?;
            prop_assert!(self.pending.is_empty());
            for (c, s) in &self.conns {
                prop_assert_eq!(*s, ConnState::Ended, "{} left open", c);
            }
            Ok(())
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// However the byte stream is cut, the same events come out (timing
    /// aside: everything arrives at the same instant here).
    #[test]
    fn chunking_does_not_change_the_events(
        frames in proptest::collection::vec(
            (0u32..6, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..50)), 1..12),
        cuts in proptest::collection::vec(0usize..2000, 0..30),
        garbage_tail: bool,
    ) {
        let mut wire = Vec::new();
        for (seq, body) in &frames {
            // seq 0 = push, 5 = noop response, else a task.
            let f = if *seq == 5 { noop_bytes() } else { frame(7, *seq, body) };
            wire.extend_from_slice(&f);
        }
        if garbage_tail {
            wire.extend_from_slice(b"\xde\xad\xbe\xef garbage header bytes");
        }
        let run = |cuts: &[usize]| {
            let mut h = H::new(config(Profile::Stn));
            let conn = h.ready();
            for id in 1..=4 {
                h.send(id, b"q");
            }
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
            points.push(0);
            points.push(wire.len());
            points.sort_unstable();
            let mut events = Vec::new();
            for w in points.windows(2) {
                events.extend(h.recv(conn, Bytes::copy_from_slice(&wire[w[0]..w[1]])));
            }
            (events, h.link.in_flight(), h.link.unknown_frames())
        };
        proptest::prop_assert_eq!(run(&[]), run(&cuts));
    }

    #[test]
    fn random_driving_keeps_the_invariants(
        profile in proptest::sample::select(Profile::ALL.to_vec()),
        identify: bool,
        ops in proptest::collection::vec(model::op(), 1..120),
    ) {
        let mut d = model::Driver::new(profile, identify);
        for op in &ops {
            d.step(op)?;
        }
        d.finish()?;
    }

    #[test]
    fn same_inputs_same_events(
        ops in proptest::collection::vec(model::op(), 1..80),
    ) {
        let run = || -> Result<Vec<(Instant, LongLinkEvent)>, proptest::test_runner::TestCaseError> {
            let mut d = model::Driver::new(Profile::Stn, true);
            for op in &ops {
                d.step(op)?;
            }
            d.finish()?;
            Ok(d.trace)
        };
        proptest::prop_assert_eq!(run()?, run()?);
    }
}

#[test]
fn determinism_on_a_fixed_script() {
    use model::{Driver, Op, Payload};
    let script = vec![
        Op::ToDeadline,
        Op::Connect(2),
        Op::Advance(300),
        Op::ConnResult { pick: 1, ok: true },
        Op::Identify(0),
        Op::Send {
            id: 1,
            send_only: false,
            fp: 3,
            gap: 1,
            lp: false,
            deadline: None,
        },
        Op::Send {
            id: 2,
            send_only: false,
            fp: 5,
            gap: 1,
            lp: false,
            deadline: None,
        },
        Op::Recv {
            payload: Payload::Response {
                pick: 1,
                body: b"two".to_vec(),
            },
            split: Some(21),
        },
        Op::Rest,
        Op::ToDeadline,
        Op::ToDeadline,
        Op::ToDeadline,
        Op::Connect(1),
        Op::ConnResult { pick: 0, ok: true },
        Op::NetworkChange,
        Op::ToDeadline,
    ];
    let run = || {
        let mut d = Driver::new(Profile::Stn, true);
        for op in &script {
            d.step(op).unwrap();
        }
        d.finish().unwrap();
        d.trace
    };
    let a = run();
    assert!(a.len() > 10, "{a:?}");
    assert_eq!(a, run());
}

/// The events of `ev` that end a task or the link.
fn endings(ev: &[LongLinkEvent]) -> Vec<LongLinkEvent> {
    ev.iter()
        .filter(|e| {
            matches!(
                e,
                LongLinkEvent::TaskFailed { .. }
                    | LongLinkEvent::TaskResponse { .. }
                    | LongLinkEvent::Disconnected { .. }
            )
        })
        .cloned()
        .collect()
}

fn answered(ev: &[LongLinkEvent]) -> Vec<u32> {
    ev.iter()
        .filter_map(|e| match e {
            LongLinkEvent::TaskResponse { task, .. } => Some(task.get()),
            _ => None,
        })
        .collect()
}

/// Three tasks pipelined at once (first-packet timeout 5 s); the server
/// answers one every 4 s, so the last waits 12 s for its turn.
fn deep_queue(profile: Profile) -> Vec<LongLinkEvent> {
    let mut h = H::new(config(profile));
    let conn = h.ready();
    let t0 = h.now;
    for id in 1..=3 {
        h.send(id, b"x");
    }
    let mut ev = Vec::new();
    for (i, id) in [1u32, 2, 3].into_iter().enumerate() {
        let at = t0 + secs(4 * (i as u64 + 1));
        // Every timer due on the way, then the answer.
        while let Some(t) = h.link.poll_timeout().filter(|t| *t < at) {
            ev.extend(h.at(t));
        }
        ev.extend(h.at(at));
        if h.link.is_connected() {
            ev.extend(h.recv(conn, frame(7, id, b"ok")));
        }
    }
    endings(&ev)
}

#[test]
fn stn_times_a_pipelined_task_from_the_links_last_answer() {
    let ev = deep_queue(Profile::Stn);
    assert_eq!(answered(&ev), vec![1, 2, 3], "{ev:?}");
    assert_eq!(ev.len(), 3, "no failure, no disconnect: {ev:?}");
}

#[test]
fn mars_times_a_pipelined_task_from_its_write() {
    let ev = deep_queue(Profile::Mars);
    let err = Error::Timeout(TimeoutKind::FirstPacket);
    assert_eq!(answered(&ev), vec![1], "{ev:?}");
    assert_eq!(
        ev[1..],
        [
            failed(2, err.clone()),
            failed(3, err.clone()),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: false
            },
        ]
    );
}

#[test]
fn stn_still_times_out_a_link_that_stops_answering() {
    let mut h = H::new(config(Profile::Stn));
    let conn = h.ready();
    let t0 = h.now;
    h.send(1, b"x");
    h.send(2, b"x");
    h.now = t0 + secs(4);
    assert_eq!(answered(&h.recv(conn, frame(7, 1, b"ok"))), vec![1]);
    // Nothing more arrives: task 2 is timed from the last answer.
    let mut ev = Vec::new();
    while let Some(t) = h.link.poll_timeout().filter(|t| *t <= t0 + secs(9)) {
        ev.extend(h.at(t));
        if !h.link.is_connected() {
            break;
        }
    }
    assert_eq!(h.now, t0 + secs(9), "{ev:?}");
    let err = Error::Timeout(TimeoutKind::FirstPacket);
    assert_eq!(
        endings(&ev),
        vec![
            failed(2, err.clone()),
            LongLinkEvent::Disconnected {
                error: Some(err),
                deterministic: false
            }
        ]
    );
}

/// A link of `profile` connected at `h.now`, then sent to the background.
fn background(profile: Profile) -> (H, ConnId) {
    let mut h = H::new(config(profile));
    let (conn, _) = h.connected();
    h.link.set_foreground(h.now, false);
    assert!(h.drain().is_empty());
    (h, conn)
}

#[test]
fn stn_holds_a_task_for_a_noop_on_a_link_idle_beyond_the_proof() {
    let (mut h, conn) = background(Profile::Stn);
    // Nothing proven on this network: 100 s of idle may have cost the
    // path's binding. The noop goes first, the task on its answer.
    h.advance(secs(100));
    assert_eq!(h.send(1, b"q"), vec![send_of(conn, noop_bytes())]);
    assert!(h.link.is_running(TaskId::new(1)));
    assert_eq!(h.link.in_flight(), 1);
    assert_eq!(
        h.recv(conn, noop_bytes()),
        vec![send_of(conn, frame(7, 1, b"q"))]
    );
    let ev = h.recv(conn, frame(7, 1, b"a"));
    assert!(
        matches!(ev.as_slice(), [LongLinkEvent::TaskResponse { .. }]),
        "{ev:?}"
    );
    // 100 s are proven now: a task after 90 s of idle goes at once.
    h.advance(secs(90));
    assert_eq!(h.send(2, b"r"), vec![send_of(conn, frame(7, 2, b"r"))]);
}

#[test]
fn stn_a_lost_probe_interrupts_the_held_task_and_reconnects_at_once() {
    let (mut h, conn) = background(Profile::Stn);
    h.advance(secs(100));
    assert_eq!(h.send(1, b"q"), vec![send_of(conn, noop_bytes())]);
    let ev = h.advance(secs(8));
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Io(IoAction::Close { conn }),
            failed(1, interrupted()),
            LongLinkEvent::Disconnected {
                error: Some(Error::Timeout(TimeoutKind::Heartbeat)),
                deterministic: false
            },
            LongLinkEvent::WantConnect,
        ],
        "no endpoint failure for the path's idle limit, and no wait"
    );
}

#[test]
fn mars_writes_a_task_at_once_whatever_the_idle_time() {
    let (mut h, conn) = background(Profile::Mars);
    h.advance(secs(200));
    assert_eq!(h.send(1, b"q"), vec![send_of(conn, frame(7, 1, b"q"))]);
}

#[test]
fn stn_arms_the_next_probe_at_the_answer_mars_at_the_next_slot() {
    // stn probes a step above the minimum, and the next step follows the
    // answer; Mars keeps the minimum (the next interval was asked for
    // before the answer came).
    for (profile, first, next) in [
        (Profile::Stn, 270_000, 337_500),
        (Profile::Mars, 210_000, 210_000),
    ] {
        let (mut h, conn) = background(profile);
        let connected_at = h.now;
        assert_eq!(h.link.poll_timeout(), Some(connected_at + ms(first)));
        assert_eq!(h.advance(ms(first)), vec![send_of(conn, noop_bytes())]);
        h.advance(ms(100));
        assert!(h.recv(conn, noop_bytes()).is_empty());
        assert_eq!(
            h.link.poll_timeout(),
            Some(connected_at + ms(first + next)),
            "{profile:?}"
        );
    }
}

#[test]
fn stn_the_foreground_rearms_a_long_probe_at_once() {
    let (mut h, conn) = background(Profile::Stn);
    let t0 = h.now;
    h.advance(secs(270));
    h.recv(conn, noop_bytes());
    assert_eq!(h.link.poll_timeout(), Some(t0 + ms(607_500)));
    // Back in the foreground 250 s after the last heartbeat: the 337.5 s
    // probe is not kept; 210 s have passed, so the noop goes now.
    h.advance(secs(250));
    h.link.set_foreground(h.now, true);
    assert_eq!(h.drain(), vec![send_of(conn, noop_bytes())]);
}

#[test]
fn stn_learns_a_servers_idle_close_as_the_paths_limit() {
    let (mut h, conn) = background(Profile::Stn);
    h.advance(secs(250));
    // The server closes links idle for 250 s, before the 270 s probe.
    let ev = h.event(conn, ConnEvent::Closed(CloseReason::Eof));
    assert_eq!(
        ev,
        vec![
            LongLinkEvent::Disconnected {
                error: Some(Error::Socket(SocketError::ClosedByPeer)),
                deterministic: false
            },
            LongLinkEvent::WantConnect,
        ],
        "no endpoint failure, reconnect at once"
    );
    // Mars reports the endpoint and waits for its schedule.
    let (mut m, conn) = background(Profile::Mars);
    m.advance(secs(250));
    let ev = m.event(conn, ConnEvent::Closed(CloseReason::Eof));
    assert!(
        matches!(ev.first(), Some(LongLinkEvent::Endpoint(_))),
        "{ev:?}"
    );
    assert!(!ev.contains(&LongLinkEvent::WantConnect));
}
