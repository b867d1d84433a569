//! Script-style tests of the engine's flows, a determinism test and the
//! proptest state-machine test (in `prop`).

use std::collections::{BTreeSet, VecDeque};

use bytes::Bytes;

use super::check::ok_http;
use super::*;
use crate::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder, NOOP_CMD_ID};
use crate::error::{DnsError, Outcome};
use crate::io::IoAction;
use crate::limit::LimitKind;
use crate::net::ConnectError;
use crate::profile::Profile;
use crate::test_util::{ms, secs};

mod auth_controls;
mod banned_last;
mod early_data;
mod links;
mod networks;
mod prop;
mod proxy_failures;
mod race_width;
mod refusal;
mod rescue;

const T0: Instant = Instant::from_secs(1_000);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|_| unreachable!())
}

/// A driver that records every action and steps time.
struct H {
    e: Engine,
    now: Instant,
    log: Vec<Output>,
}

impl H {
    fn new(config: Config) -> Self {
        let mut h = H {
            e: Engine::new(T0, config),
            now: T0,
            log: Vec::new(),
        };
        h.e.handle_timeout(T0);
        h.drain();
        h
    }

    fn drain(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        while let Some(a) = self.e.poll_output() {
            out.push(a);
        }
        if let Some(t) = self.e.poll_timeout() {
            assert!(
                t >= self.now,
                "poll_timeout {t:?} before now {:?}",
                self.now
            );
        }
        self.log.extend(out.iter().cloned());
        out
    }

    fn submit(&mut self, task: Task) -> TaskId {
        let id = self.e.submit(self.now, task).expect("accepted");
        self.drain();
        id
    }

    fn input(&mut self, input: Input) -> Vec<Output> {
        self.e.handle_input(self.now, input);
        self.drain()
    }

    fn ev(&mut self, conn: ConnId, event: ConnEvent) -> Vec<Output> {
        self.input(Input::Conn { conn, event })
    }

    /// Runs every timer up to `t`, then sets the clock to `t`.
    fn advance_to(&mut self, t: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        let mut guard = 0;
        while let Some(x) = self.e.poll_timeout() {
            if x > t {
                break;
            }
            guard += 1;
            assert!(guard < 100_000, "busy loop at {x:?}");
            self.now = x;
            self.e.handle_timeout(x);
            out.extend(self.drain());
        }
        self.now = t;
        self.e.handle_timeout(t);
        out.extend(self.drain());
        out
    }

    fn advance(&mut self, d: Duration) -> Vec<Output> {
        self.advance_to(self.now + d)
    }

    fn finished(&self, id: TaskId) -> Vec<&Outcome> {
        self.log
            .iter()
            .filter_map(|a| match a {
                Output::Event(Event::TaskFinished { id: i, outcome, .. }) if *i == id => {
                    Some(outcome)
                }
                _ => None,
            })
            .collect()
    }

    fn outcome(&self, id: TaskId) -> Outcome {
        let f = self.finished(id);
        assert_eq!(
            f.len(),
            1,
            "task {id} finished {} times: {:?}",
            f.len(),
            self.log
        );
        f[0].clone()
    }

    fn reports(&self, id: TaskId) -> Vec<&Report> {
        self.log
            .iter()
            .filter_map(|a| match a {
                Output::Event(Event::Report(r)) if r.task == id => Some(&**r),
                _ => None,
            })
            .collect()
    }
}

fn connects(actions: &[Output]) -> Vec<(ConnId, SocketAddr)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Output::Io(IoAction::Connect { conn, addr }) => Some((*conn, *addr)),
            _ => None,
        })
        .collect()
}

fn sends(actions: &[Output]) -> Vec<(ConnId, Bytes)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Output::Io(IoAction::Send { conn, data }) => Some((*conn, data.clone())),
            _ => None,
        })
        .collect()
}

fn closes(actions: &[Output]) -> Vec<ConnId> {
    actions
        .iter()
        .filter_map(|a| match a {
            Output::Io(IoAction::Close { conn }) => Some(*conn),
            _ => None,
        })
        .collect()
}

fn short_cfg(profile: Profile) -> Config {
    Config::for_profile(profile).short_link_ips([ip("10.0.0.1")], 80)
}

/// Stn without hedging, for tests about one exchange's own timers.
fn unhedged(profile: Profile) -> Config {
    let mut c = short_cfg(profile);
    c.hedge = None;
    c
}

fn short_task(body: &str) -> Task {
    Task::new(0, "/cgi", Bytes::copy_from_slice(body.as_bytes())).channel(Channel::Short)
}

/// Connects `conn` and answers its request with a 200.
fn serve_short(h: &mut H, conn: ConnId, body: &str) {
    let a = h.ev(conn, ConnEvent::Connected);
    assert!(!sends(&a).is_empty(), "request sent on connect: {a:?}");
    h.ev(conn, ConnEvent::Received(ok_http(body)));
}

// ---------------------------------------------------------------- queue ----

#[test]
fn queue_priority_order_and_fifo_within_a_priority() {
    let mut cfg = short_cfg(Profile::Stn);
    cfg.max_in_flight_short = 1;
    let mut h = H::new(cfg);
    // The first task takes the only slot; the rest queue.
    let first = h.submit(short_task("first"));
    let low_a = h.submit(short_task("low-a").priority(5));
    let high = h.submit(short_task("high").priority(0));
    let low_b = h.submit(short_task("low-b").priority(5));
    let mid = h.submit(short_task("mid").priority(3));
    let mut order = Vec::new();
    let mut pending = connects(&h.log);
    assert_eq!(pending.len(), 1, "one slot");
    for _ in 0..5 {
        let (conn, _) = pending.remove(0);
        let before = h.log.len();
        serve_short(&mut h, conn, "ok");
        let new = h.log[before..].to_vec();
        for a in &new {
            if let Output::Event(Event::TaskFinished { id, .. }) = a {
                order.push(*id);
            }
        }
        pending.extend(connects(&new));
    }
    assert_eq!(order, vec![first, high, mid, low_a, low_b]);
}

#[test]
fn several_short_links_run_in_parallel_one_connection_each() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let ids: Vec<TaskId> = (0..4)
        .map(|i| h.submit(short_task(&format!("t{i}"))))
        .collect();
    let c = connects(&h.log);
    assert_eq!(c.len(), 4, "one connect per task: {:?}", h.log);
    assert_eq!(h.e.short_in_flight(), 4);
    for (conn, _) in c {
        serve_short(&mut h, conn, "ok");
    }
    for id in ids {
        assert!(h.outcome(id).is_ok());
    }
    assert_eq!(h.e.open_connections(), 0);
}

#[test]
fn submit_refuses_invalid_full_and_shut_down() {
    let mut cfg = short_cfg(Profile::Mars);
    cfg.max_queued_tasks = 2;
    let mut h = H::new(cfg);
    assert!(matches!(
        h.e.submit(h.now, short_task("x").priority(9)),
        Err(SubmitError::Invalid(_))
    ));
    assert_eq!(
        h.e.submit(h.now, Task::new(1, "", "x").channel(Channel::Long)),
        Err(SubmitError::NoLongLink)
    );
    h.submit(short_task("a"));
    h.submit(short_task("b"));
    assert_eq!(
        h.e.submit(h.now, short_task("c")),
        Err(SubmitError::QueueFull)
    );
    h.e.shutdown(h.now);
    h.drain();
    assert_eq!(
        h.e.submit(h.now, short_task("d")),
        Err(SubmitError::ShutDown)
    );
}

// ------------------------------------------------------------- deadlines ----

#[test]
fn task_deadline_is_mars_task_timeout_and_is_never_retried() {
    // Mars: (15 s + 5 s) × 2 attempts = 40 s, from submission, also while
    // the task waits (here: for authentication that never comes).
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").need_authed(true));
    h.advance(secs(39));
    assert!(h.finished(id).is_empty());
    h.advance(secs(1));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::Task)));
    assert_eq!(h.e.open_connections(), 0, "every connect closed");
}

#[test]
fn total_timeout_caps_the_task() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").total_timeout(secs(7)));
    h.advance(ms(6_999));
    assert!(h.finished(id).is_empty());
    h.advance(ms(1));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::Task)));
}

// --------------------------------------------------------------- retries ----

#[test]
fn mars_retries_after_one_second_and_counts_attempts() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").retry_count(2));
    for attempt in 0..3 {
        let c = connects(&h.log);
        let (conn, _) = c[attempt];
        let a = h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
        if attempt < 2 {
            // One candidate, so the race fails at once; the retry waits 1 s.
            assert!(connects(&a).is_empty(), "retry waits 1 s: {a:?}");
            let a = h.advance(ms(999));
            assert!(connects(&a).is_empty());
            let a = h.advance(ms(1));
            assert_eq!(connects(&a).len(), 1, "retry after 1 s");
        }
    }
    let out = h.outcome(id);
    assert!(matches!(out, Err(Error::Connect { .. })), "{out:?}");
    let reports = h.reports(id);
    assert_eq!(reports.len(), 3);
    assert_eq!(
        reports.iter().map(|r| r.attempt).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(reports.iter().all(|r| r.error.is_some()));
    match h
        .log
        .iter()
        .find(|a| matches!(a, Output::Event(Event::TaskFinished { .. })))
    {
        Some(Output::Event(Event::TaskFinished { attempts, .. })) => assert_eq!(*attempts, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn stn_retries_sooner_than_mars() {
    let mut h = H::new(unhedged(Profile::Stn));
    let id = h.submit(short_task("x").retry_count(1));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    // First-packet timeout (no RTT known: Mars's 12 s bound), then retry at once.
    let a = h.advance(secs(12) + ms(10));
    assert_eq!(
        connects(&a).len(),
        1,
        "immediate retry after a timeout: {a:?}"
    );
    let r = h.reports(id);
    assert_eq!(r[0].error, Some(Error::Timeout(TimeoutKind::FirstPacket)));
}

// ---------------------------------------------------------------- cancel ----

#[test]
fn cancel_closes_the_attempt_and_ends_once() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    h.e.cancel(h.now, id);
    let a = h.drain();
    assert!(closes(&a).contains(&conn));
    assert_eq!(h.outcome(id), Err(Error::Cancelled));
    // Late events and a second cancel change nothing.
    h.ev(conn, ConnEvent::Received(ok_http("late")));
    h.e.cancel(h.now, id);
    h.drain();
    assert_eq!(h.finished(id).len(), 1);
    assert_eq!(
        h.e.poll_timeout(),
        h.e.long.get().and_then(LongLink::poll_timeout)
    );
}

#[test]
fn shutdown_ends_every_task_with_shutdown() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let a = h.submit(short_task("a"));
    let b = h.submit(short_task("b"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    h.e.shutdown(h.now);
    let acts = h.drain();
    assert!(closes(&acts).contains(&conn));
    assert_eq!(h.outcome(a), Err(Error::Shutdown));
    assert_eq!(h.outcome(b), Err(Error::Shutdown));
    assert_eq!(h.e.open_connections(), 0);
    assert_eq!(h.e.poll_timeout(), None);
}

#[test]
fn clear_tasks_ends_every_task_once_as_cancelled() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let a = h.submit(short_task("a"));
    let b = h.submit(short_task("b"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    assert_eq!(h.e.clear_tasks(h.now), 2);
    let acts = h.drain();
    assert!(closes(&acts).contains(&conn));
    assert_eq!(h.outcome(a), Err(Error::Cancelled));
    assert_eq!(h.outcome(b), Err(Error::Cancelled));
    assert_eq!(h.e.task_count(), 0);
    // The engine still takes tasks.
    assert_eq!(h.e.clear_tasks(h.now), 0);
    let c = h.submit(short_task("c"));
    assert!(h.e.has_task(c));
}

#[test]
fn redo_tasks_restarts_a_running_attempt() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x"));
    let (first, _) = connects(&h.log)[0];
    h.ev(first, ConnEvent::Connected);
    let before = connects(&h.log).len();
    h.e.redo_tasks(h.now);
    let acts = h.drain();
    assert!(closes(&acts).contains(&first), "{acts:?}");
    assert_eq!(
        h.reports(id)[0].error,
        Some(Error::Local(LocalError::Interrupted))
    );
    h.advance(ms(1));
    let again = connects(&h.log);
    assert!(again.len() > before, "a new attempt connects");
    let (second, _) = again[again.len() - 1];
    serve_short(&mut h, second, "ok");
    assert_eq!(h.outcome(id).map(|r| r.body), Ok(Bytes::from_static(b"ok")));
}

/// Connects `conn` and checks that the request written ends with `body`.
fn assert_request_ends_with(h: &mut H, conn: ConnId, body: &[u8]) {
    let a = h.ev(conn, ConnEvent::Connected);
    let sent: Vec<u8> = sends(&a)
        .into_iter()
        .flat_map(|(_, b)| b.to_vec())
        .collect();
    assert!(sent.ends_with(body), "{:?}", String::from_utf8_lossy(&sent));
}

#[test]
fn a_body_source_builds_each_attempts_body() {
    use crate::task::BodySource;
    let mut h = H::new(short_cfg(Profile::Mars));
    let task = short_task("fixed")
        .retry_count(1)
        .body_source(BodySource::new(|req| {
            Bytes::from(format!("attempt {}", req.attempt))
        }));
    let id = h.submit(task);
    let (conn, _) = connects(&h.log)[0];
    assert_request_ends_with(&mut h, conn, b"attempt 1");
    // The first attempt fails; the retry carries the body built for it.
    h.ev(conn, ConnEvent::Closed(crate::io::CloseReason::Eof));
    let a = h.advance(secs(2));
    let (conn, _) = connects(&a)[0];
    assert_request_ends_with(&mut h, conn, b"attempt 2");
    h.ev(conn, ConnEvent::Received(ok_http("done")));
    assert!(h.outcome(id).is_ok());
}

// ------------------------------------------------------------ short link ----

#[test]
fn short_link_success_reports_the_attempt() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("hello"));
    let (conn, addr) = connects(&h.log)[0];
    assert_eq!(
        addr,
        "10.0.0.1:80".parse().unwrap_or_else(|_| unreachable!())
    );
    h.now += ms(30);
    let a = h.ev(conn, ConnEvent::Connected);
    let (_, req) = sends(&a)[0].clone();
    assert!(req.starts_with(b"POST /cgi HTTP/1.1\r\n"));
    h.now += ms(40);
    let a = h.ev(conn, ConnEvent::Received(ok_http("world")));
    assert!(closes(&a).contains(&conn));
    let out = h.outcome(id).expect("ok");
    assert_eq!(out.body, &b"world"[..]);
    assert_eq!(out.status, Some(200));
    let r = h.reports(id);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].endpoint, Some(addr));
    assert_eq!(r[0].connect_time, Some(ms(30)));
    assert_eq!(r[0].first_packet_after, Some(ms(40)));
    assert_eq!(r[0].connect_attempts, 1);
    assert_eq!(r[0].bytes_sent, req.len() as u64);
    assert_eq!(r[0].bytes_received, ok_http("world").len() as u64);
    assert_eq!(r[0].error, None);
}

#[test]
fn short_link_http_error_and_first_packet_timeout_are_retried() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    h.ev(
        conn,
        ConnEvent::Received(Bytes::from_static(
            b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        )),
    );
    assert_eq!(h.reports(id)[0].error, Some(Error::Http { status: 500 }));
    let a = h.advance(secs(1));
    let (conn2, _) = connects(&a)[0];
    h.ev(conn2, ConnEvent::Connected);
    // Mars first-packet timeout, Wi-Fi, 1-byte body, 0 in flight: 12 000 ms.
    h.advance(ms(11_999));
    assert!(h.finished(id).is_empty());
    h.advance(ms(1));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::FirstPacket)));
}

#[test]
fn long_polling_replaces_the_first_packet_timeout() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("poll").long_polling(secs(30)).retry_count(0));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    h.advance(secs(29));
    assert!(h.finished(id).is_empty(), "no first-packet timeout at 12 s");
    h.advance(secs(1));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::LongPolling)));
}

#[test]
fn debug_address_overrides_everything() {
    let mut cfg = short_cfg(Profile::Mars);
    let debug: SocketAddr = "127.0.0.1:9999".parse().unwrap_or_else(|_| unreachable!());
    cfg.short_link.debug = Some(debug);
    cfg.short_link.hosts = vec!["example.com".into()];
    let mut h = H::new(cfg);
    h.submit(short_task("x"));
    assert_eq!(connects(&h.log), vec![(ConnId(1), debug)]);
    assert!(!h.log.iter().any(|a| matches!(a, Output::Resolve { .. })));
}

#[test]
fn resolve_answer_with_duplicate_ips_races_them() {
    // The benchmark: OnNewDns returned the same IP 4 times.
    let mut cfg = Config::for_profile(Profile::Mars2017);
    cfg.ban.enabled = false;
    cfg.short_link.hosts = vec!["svc.example".into()];
    cfg.short_link.port = 8080;
    cfg.short_link.backup_ips = vec![ip("10.9.9.9")];
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x"));
    assert_eq!(
        h.log.last(),
        Some(&Output::Resolve {
            host: "svc.example".into()
        })
    );
    assert!(connects(&h.log).is_empty(), "waits for the answer");
    let a = h.input(Input::Resolved {
        host: "svc.example".into(),
        addrs: vec![ip("10.0.0.7"); 4],
    });
    let c = connects(&a);
    assert_eq!(c.len(), 1, "race starts with one attempt");
    let dup: SocketAddr = "10.0.0.7:8080".parse().unwrap_or_else(|_| unreachable!());
    assert_eq!(c[0].1, dup);
    // 2017 stagger: 4 s. Then a second attempt to the same address.
    let a = h.advance(secs(4));
    assert_eq!(connects(&a), vec![(ConnId(2), dup)]);
    let a = h.advance(secs(4));
    assert_eq!(connects(&a), vec![(ConnId(3), dup)]);
    // The second attempt wins; the others are closed.
    let a = h.ev(ConnId(2), ConnEvent::Connected);
    let mut closed = closes(&a);
    closed.sort();
    assert_eq!(closed, vec![ConnId(1), ConnId(3)]);
    h.ev(ConnId(2), ConnEvent::Received(ok_http("ok")));
    assert!(h.outcome(id).is_ok());
    assert_eq!(h.reports(id)[0].connect_attempts, 3);
}

#[test]
fn resolve_failure_falls_back_to_fixed_and_backup_ips() {
    let mut cfg = Config::for_profile(Profile::Mars);
    cfg.short_link.hosts = vec!["svc.example".into()];
    cfg.short_link.backup_ips = vec![ip("10.9.9.9")];
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x"));
    let a = h.input(Input::ResolveFailed {
        host: "svc.example".into(),
    });
    let c = connects(&a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1.ip(), ip("10.9.9.9"));
    serve_short(&mut h, c[0].0, "ok");
    assert!(h.outcome(id).is_ok());
}

#[test]
fn unanswered_resolve_times_out_and_no_candidates_is_a_dns_error() {
    let mut cfg = Config::for_profile(Profile::Mars);
    cfg.short_link.hosts = vec!["svc.example".into()];
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").retry_count(0));
    h.advance(ms(1_999));
    assert!(h.finished(id).is_empty());
    h.advance(ms(1));
    assert_eq!(h.outcome(id), Err(Error::Dns(DnsError::NoCandidates)));
}

#[test]
fn endpoint_reports_feed_the_ban_history() {
    let mut cfg = Config::for_profile(Profile::Mars);
    cfg.short_link.ips = vec![ip("10.0.0.1"), ip("10.0.0.2")];
    let mut h = H::new(cfg);
    let bad: SocketAddr = "10.0.0.1:80".parse().unwrap_or_else(|_| unreachable!());
    // Three refusals of `bad`, more than 10 s apart, ban it.
    for _ in 0..3 {
        let id = h.submit(short_task("x").retry_count(0));
        let before = h.log.len();
        let mut guard = 0;
        while !h.finished(id).iter().any(|_| true) {
            guard += 1;
            assert!(guard < 20);
            let pending: Vec<(ConnId, SocketAddr)> = connects(&h.log[before..])
                .into_iter()
                .filter(|(c, _)| h.e.out.owns(*c))
                .collect();
            match pending.first() {
                Some((c, a)) if *a == bad => {
                    h.ev(*c, ConnEvent::ConnectFailed(ConnectError::Refused));
                }
                Some((c, _)) => serve_short(&mut h, *c, "ok"),
                None => {
                    h.advance(secs(1));
                }
            }
        }
        h.advance(secs(11));
    }
    assert!(h.e.endpoint_history().is_banned(h.now, bad));
    let before = h.log.len();
    h.submit(short_task("y"));
    let c = connects(&h.log[before..]);
    assert!(
        c.iter().all(|(_, a)| *a != bad),
        "banned endpoint skipped: {c:?}"
    );
    // A network change resets bans.
    h.e.network_changed(h.now, NetworkKind::Mobile);
    h.drain();
    assert!(!h.e.endpoint_history().is_banned(h.now, bad));
}

// ------------------------------------------------------------- long link ----

/// A fake long-link server on one connection.
struct LongServer {
    conn: ConnId,
    addr: SocketAddr,
    dec: FrameDecoder,
}

impl LongServer {
    fn frames(&mut self, actions: &[Output]) -> Vec<Frame> {
        let mut out = Vec::new();
        for (c, data) in sends(actions) {
            if c == self.conn {
                let mut buf = &data[..];
                while let Ok(Some(f)) = self.dec.decode(&mut buf) {
                    out.push(f);
                }
            }
        }
        out
    }
}

fn long_cfg(profile: Profile) -> Config {
    Config::for_profile(profile)
        .short_link_ips([ip("10.0.0.1")], 80)
        .long_link_ips([ip("10.0.1.1")], 8080)
}

/// Brings the long link up; identify answered "never".
fn long_up(h: &mut H) -> LongServer {
    let c = connects(&h.log);
    let (conn, addr) = *c
        .iter()
        .find(|(_, a)| a.port() == 8080)
        .expect("long link connect at start");
    assert_eq!(addr.port(), 8080);
    let a = h.ev(conn, ConnEvent::Connected);
    assert!(
        a.contains(&Output::Event(Event::LongLink(LinkStatus::Connected {
            addr
        })))
    );
    assert!(a.contains(&Output::Event(Event::AskIdentify)));
    h.e.identify_answer(h.now, IdentifyDecision::Never);
    h.drain();
    LongServer {
        conn,
        addr,
        dec: FrameDecoder::new(CodecConfig::default()),
    }
}

fn reply(h: &mut H, s: &LongServer, f: Frame) -> Vec<Output> {
    let data = encode_to_bytes(&f, 0).unwrap_or_else(|_| unreachable!());
    h.ev(s.conn, ConnEvent::Received(data))
}

#[test]
fn long_link_pipelines_tasks_matches_by_seq_and_surfaces_pushes() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let mut s = long_up(&mut h);
    let noop = s.frames(&h.log);
    assert!(
        noop.iter().all(|f| f.cmd_id != NOOP_CMD_ID),
        "no noop at connect"
    );
    let ids: Vec<TaskId> = (0..5)
        .map(|i| h.submit(Task::new(100 + i, "", "req").channel(Channel::Long)))
        .collect();
    let frames = s.frames(&h.log);
    let tasks: Vec<&Frame> = frames.iter().filter(|f| f.cmd_id >= 100).collect();
    assert_eq!(tasks.len(), 5, "all in flight at once");
    assert_eq!(h.e.long_in_flight(), 5);
    // Answer in reverse order; a push in between.
    for f in tasks.iter().rev() {
        reply(
            &mut h,
            &s,
            Frame::new(f.cmd_id, f.seq, format!("resp{}", f.seq)),
        );
    }
    let a = reply(&mut h, &s, Frame::new(77, 0, "pushed"));
    assert!(a.contains(&Output::Event(Event::Push {
        cmd_id: 77,
        body: Bytes::from_static(b"pushed")
    })));
    for id in ids {
        let out = h.outcome(id).expect("ok");
        assert_eq!(out.body, Bytes::from(format!("resp{}", id.get())));
    }
}

#[test]
fn both_channel_uses_long_when_connected_else_short() {
    let mut h = H::new(long_cfg(Profile::Stn));
    // Long link still connecting: a Both task goes short.
    let t1 = h.submit(Task::new(5, "/cgi", "a"));
    assert!(connects(&h.log).iter().any(|(_, a)| a.port() == 80));
    let mut s = long_up(&mut h);
    let t2 = h.submit(Task::new(5, "/cgi", "b"));
    let f = s.frames(&h.log);
    assert!(
        f.iter().any(|f| f.seq == t2.get()),
        "second on the long link"
    );
    let _ = t1;
}

#[test]
fn fast_strategy_avoids_a_busy_long_link() {
    // Mars kChannelFastStrategy: a Both task takes the long link only while
    // it is idle; under both channel-choice modes (Mars at submit, stn per
    // attempt).
    for profile in [Profile::Mars, Profile::Stn] {
        let mut h = H::new(long_cfg(profile));
        let mut s = long_up(&mut h);
        // Idle long link: a Fast task uses it.
        let idle = h.submit(Task::new(5, "/cgi", "a").channel_strategy(ChannelStrategy::Fast));
        assert!(
            s.frames(&h.log).iter().any(|f| f.seq == idle.get()),
            "{profile:?}: idle link carries the fast task"
        );
        // Now one task is in flight there: the next Fast task goes short,
        // a Normal one still goes long.
        let shorts_before = connects(&h.log)
            .iter()
            .filter(|(_, a)| a.port() == 80)
            .count();
        let fast = h.submit(Task::new(5, "/cgi", "b").channel_strategy(ChannelStrategy::Fast));
        let normal = h.submit(Task::new(5, "/cgi", "c"));
        let frames = s.frames(&h.log);
        assert!(
            !frames.iter().any(|f| f.seq == fast.get()),
            "{profile:?}: fast task not on the busy link"
        );
        assert!(
            frames.iter().any(|f| f.seq == normal.get()),
            "{profile:?}: normal task on the long link"
        );
        let shorts = connects(&h.log)
            .iter()
            .filter(|(_, a)| a.port() == 80)
            .count();
        assert_eq!(
            shorts,
            shorts_before + 1,
            "{profile:?}: fast task raced a short link"
        );
    }
}

#[test]
fn send_only_completes_when_written() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let mut s = long_up(&mut h);
    let id = h.submit(
        Task::new(9, "", "fire")
            .channel(Channel::Long)
            .send_only(true),
    );
    assert!(s.frames(&h.log).iter().any(|f| f.seq == id.get()));
    let out = h.outcome(id).expect("ok");
    assert_eq!(out.status, None);
    assert!(out.body.is_empty());
}

#[test]
fn long_task_waits_for_the_link_and_identify_is_sent_when_asked() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let id = h.submit(Task::new(3, "", "x").channel(Channel::Long));
    let c = connects(&h.log);
    let (conn, _) = *c
        .iter()
        .find(|(_, a)| a.port() == 8080)
        .expect("long connect");
    h.ev(conn, ConnEvent::Connected);
    h.e.identify_answer(
        h.now,
        IdentifyDecision::Now {
            body: Bytes::from_static(b"auth"),
            cmd_id: 55,
        },
    );
    h.drain();
    let mut s = LongServer {
        conn,
        addr: "10.0.1.1:8080".parse().unwrap_or_else(|_| unreachable!()),
        dec: FrameDecoder::new(CodecConfig::default()),
    };
    let frames = s.frames(&h.log);
    assert!(frames
        .iter()
        .any(|f| f.cmd_id == 55 && f.body == b"auth"[..]));
    let task = frames
        .iter()
        .find(|f| f.seq == id.get())
        .expect("task sent");
    let a = reply(
        &mut h,
        &s,
        Frame::new(55, crate::codec::longlink::IDENTIFY_SEQ, "welcome"),
    );
    assert!(a.contains(&Output::Event(Event::IdentifyResponse {
        cmd_id: 55,
        body: Bytes::from_static(b"welcome")
    })));
    reply(&mut h, &s, Frame::new(3, task.seq, "done"));
    assert!(h.outcome(id).is_ok());
}

#[test]
fn long_link_timeout_fails_every_running_task_and_they_retry() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let mut s = long_up(&mut h);
    // Answer the connect-time noop so only the tasks are pending.
    let noop = s.frames(&h.log);
    for f in noop {
        reply(&mut h, &s, f);
    }
    let a = h.submit(Task::new(1, "", "a").channel(Channel::Long));
    let b = h.submit(Task::new(2, "", "b").channel(Channel::Long));
    assert_eq!(h.e.long_in_flight(), 2);
    // Mars first-packet timeout with 1 task in flight for b: 12 s + 1.5 s;
    // a times out first at 12 s and takes b down with it.
    let acts = h.advance(secs(12) + ms(1));
    assert!(closes(&acts).contains(&s.conn), "link dropped");
    let ra = h.reports(a);
    let rb = h.reports(b);
    assert_eq!(ra[0].error, Some(Error::Timeout(TimeoutKind::FirstPacket)));
    assert_eq!(rb[0].error, Some(LocalError::Interrupted.into()));
    assert!(
        h.finished(a).is_empty() && h.finished(b).is_empty(),
        "both retry"
    );
}

#[test]
fn long_link_reconnects_on_its_monitor_schedule() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let s = long_up(&mut h);
    let acts = h.ev(s.conn, ConnEvent::Closed(crate::io::CloseReason::Reset));
    assert!(acts.contains(&Output::Event(Event::LongLink(LinkStatus::Disconnected))));
    // Mars auto table, foreground < 1 min: 15 s after the last connect started.
    let a = h.advance(secs(14));
    assert!(connects(&a).is_empty());
    let a = h.advance(secs(1));
    assert_eq!(connects(&a).len(), 1);
}

// --------------------------------------------------------- anti-avalanche ----

#[test]
fn frequency_limit_rejects_the_106th_identical_request() {
    let mut h = H::new(short_cfg(Profile::Mars));
    for i in 0..106 {
        let id = h.submit(short_task("same"));
        let c = connects(&h.log);
        if i < 105 {
            let (conn, _) = *c.last().unwrap_or_else(|| unreachable!());
            serve_short(&mut h, conn, "ok");
            assert!(h.outcome(id).is_ok());
        } else {
            assert_eq!(h.outcome(id), Err(Error::Rejected(LimitKind::Frequency)));
        }
        h.advance(ms(10));
    }
}

#[test]
fn flow_limit_rejects_on_mobile() {
    let mut cfg = short_cfg(Profile::Mars);
    cfg.network = NetworkKind::Mobile;
    cfg.limits.flow.capacity = 1000;
    let mut h = H::new(cfg);
    let big = "x".repeat(600);
    let a = h.submit(short_task(&big).limit_frequency(false));
    let b = h.submit(short_task(&big).limit_frequency(false));
    assert!(h.finished(a).is_empty());
    assert_eq!(h.outcome(b), Err(Error::Rejected(LimitKind::Flow)));
    // Not limited when the task opts out.
    let c = h.submit(short_task(&big).limit_flow(false));
    assert!(h.finished(c).is_empty());
}

// -------------------------------------------------------- network changes ----

#[test]
fn network_change_redoes_running_attempts_and_reconnects_at_once() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let s = long_up(&mut h);
    let short = h.submit(
        Task::new(0, "/cgi", "s")
            .channel(Channel::Short)
            .retry_count(0),
    );
    let long = h.submit(Task::new(4, "", "l").channel(Channel::Long).retry_count(0));
    let (sconn, _) = *connects(&h.log)
        .iter()
        .find(|(_, a)| a.port() == 80)
        .unwrap_or_else(|| unreachable!());
    let before = h.log.len();
    h.e.network_changed(h.now, NetworkKind::Mobile);
    let a = h.drain();
    let closed = closes(&a);
    assert!(closed.contains(&sconn) && closed.contains(&s.conn), "{a:?}");
    // Both redone without using a retry (stn), the long link reconnects now.
    let c = connects(&h.log[before..]);
    assert!(
        c.iter().any(|(_, a)| a.port() == 8080),
        "long reconnect: {c:?}"
    );
    assert!(c.iter().any(|(_, a)| a.port() == 80), "short redone: {c:?}");
    assert!(h.finished(short).is_empty() && h.finished(long).is_empty());
}

#[test]
fn mars_network_change_consumes_a_retry() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").retry_count(0));
    h.e.network_changed(h.now, NetworkKind::Mobile);
    h.drain();
    assert_eq!(h.outcome(id), Err(LocalError::Interrupted.into()));
}

#[test]
fn mars_sensitive_task_fails_without_network_stn_waits() {
    let mut cfg = short_cfg(Profile::Mars);
    cfg.network = NetworkKind::None;
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").network_status_sensitive(true));
    assert_eq!(h.outcome(id), Err(LocalError::NoNetwork.into()));

    let mut cfg = short_cfg(Profile::Stn);
    cfg.network = NetworkKind::None;
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").network_status_sensitive(true));
    h.advance(secs(5));
    assert!(h.finished(id).is_empty());
    assert!(
        connects(&h.log).is_empty(),
        "nothing dispatched without network"
    );
    h.e.network_available(h.now, NetworkKind::Wifi);
    let a = h.drain();
    let (conn, _) = connects(&a)[0];
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(id).is_ok());
}

#[test]
fn zombies_are_parked_and_replayed_on_connectivity() {
    // Mars: a task with a total timeout that fails early is parked.
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").retry_count(0).total_timeout(secs(300)));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Unreachable));
    assert!(h.finished(id).is_empty(), "parked, not finished");
    let before = h.log.len();
    h.e.network_changed(h.now, NetworkKind::Wifi);
    h.drain();
    let c = connects(&h.log[before..]);
    assert_eq!(c.len(), 1, "replayed on network change");
    serve_short(&mut h, c[0].0, "ok");
    assert!(h.outcome(id).is_ok());
}

#[test]
fn zombie_expires_at_its_budget() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").retry_count(0).total_timeout(secs(30)));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
    assert!(h.finished(id).is_empty());
    // Idle restart after 60 s would come later than the budget's end.
    h.advance(secs(30));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::Task)));
}

/// Answers every open short-link request with `status` until `id` ends.
fn answer_status_until_done(h: &mut H, id: TaskId, status: u16) -> u32 {
    let mut served = BTreeSet::new();
    for _ in 0..100 {
        if !h.finished(id).is_empty() {
            break;
        }
        for (conn, _) in connects(&h.log) {
            if served.insert(conn) {
                h.ev(conn, ConnEvent::Connected);
                h.ev(
                    conn,
                    ConnEvent::Received(Bytes::from(format!(
                        "HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n"
                    ))),
                );
            }
        }
        h.advance(ms(500));
    }
    h.reports(id).len() as u32
}

#[test]
fn http_status_retries_follow_the_profile_policy() {
    // (profile, status, attempts with retry_count(2)).
    for (profile, status, attempts) in [
        (Profile::Mars, 404, 3),
        (Profile::Mars2017, 404, 3),
        (Profile::Stn, 404, 1),
        (Profile::Stn, 400, 1),
        (Profile::Stn, 408, 3),
        (Profile::Stn, 429, 3),
        (Profile::Stn, 503, 3),
        (Profile::Mars, 503, 3),
    ] {
        let mut h = H::new(unhedged(profile));
        let id = h.submit(short_task("x").retry_count(2));
        let made = answer_status_until_done(&mut h, id, status);
        assert_eq!(
            h.outcome(id),
            Err(Error::Http { status }),
            "{profile:?} {status}"
        );
        assert_eq!(made, attempts, "{profile:?} {status}");
    }
    // The policy is a field: Mars's rule under the stn profile.
    let mut cfg = unhedged(Profile::Stn);
    cfg.http_retry = HttpRetry::EveryStatus;
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").retry_count(2));
    assert_eq!(answer_status_until_done(&mut h, id, 404), 3);
}

#[test]
fn report_has_the_tls_handshake_time_apart_from_the_connect_time() {
    let mut h = H::new(unhedged(Profile::Stn));
    let id = h.submit(short_task("x"));
    let (conn, _) = connects(&h.log)[0];
    h.advance(ms(20));
    h.ev(conn, ConnEvent::TcpConnected);
    h.advance(ms(45));
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(id).is_ok());
    let r = h.reports(id)[0];
    assert_eq!(r.connect_time, Some(ms(20)));
    assert_eq!(r.handshake_time, Some(ms(45)));
    // Without TLS (no TcpConnected) there is no handshake.
    let mut h = H::new(unhedged(Profile::Stn));
    let id = h.submit(short_task("y"));
    let (conn, _) = connects(&h.log)[0];
    h.advance(ms(20));
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(id).is_ok());
    assert_eq!(h.reports(id)[0].handshake_time, None);
}

#[test]
fn a_refused_certificate_ends_long_link_waiters_at_once() {
    use crate::tls::TlsFailure;
    /// A long-only task whose one long-link connect fails with `error`
    /// (after the TCP handshake when `tcp_up`).
    fn long_connect_fails(error: ConnectError, tcp_up: bool) -> (H, TaskId) {
        let mut h = H::new(long_cfg(Profile::Stn));
        let id = h.submit(Task::new(3, "", "x").channel(Channel::Long));
        let (conn, _) = *connects(&h.log)
            .iter()
            .find(|(_, a)| a.port() == 8080)
            .expect("long connect");
        if tcp_up {
            h.ev(conn, ConnEvent::TcpConnected);
        }
        h.ev(conn, ConnEvent::ConnectFailed(error));
        (h, id)
    }

    let (h, long_only) = long_connect_fails(ConnectError::tls(TlsFailure::UnknownIssuer), true);
    let expected = Error::Connect {
        addr: Some("10.0.1.1:8080".parse().unwrap_or_else(|_| unreachable!())),
        error: ConnectError::tls(TlsFailure::UnknownIssuer),
    };
    assert_eq!(h.outcome(long_only), Err(expected));

    // A server that does not speak TLS will not start to: told at once too.
    let (h, long_only) = long_connect_fails(ConnectError::tls(TlsFailure::NotTls), true);
    assert!(
        matches!(h.outcome(long_only), Err(Error::Connect { error, .. }) if error == ConnectError::Tls(TlsFailure::NotTls))
    );

    // A stalled handshake may be the network's: the waiter keeps waiting.
    let (h, waiter) = long_connect_fails(ConnectError::tls(TlsFailure::HandshakeTimeout), true);
    assert!(h.finished(waiter).is_empty());

    // A reset during the connect may be the network's: the waiter keeps
    // waiting (a refusal ends it under stn: `refusal.rs`).
    let (h, waiter) = long_connect_fails(ConnectError::Reset, false);
    assert!(h.finished(waiter).is_empty());
}

#[test]
fn short_link_endpoints_keep_their_own_ports() {
    let mut cfg = Config::for_profile(Profile::Stn);
    cfg.short_link.port = 80;
    cfg.short_link.ips = vec![ip("10.0.0.1")];
    cfg.short_link.addrs = vec!["10.0.0.2:8080".parse().unwrap_or_else(|_| unreachable!())];
    let mut h = H::new(cfg);
    let id = h.submit(short_task("x").retry_count(0));
    let mut tried = BTreeSet::new();
    for _ in 0..10 {
        for (conn, addr) in connects(&h.log) {
            if tried.insert(addr) {
                h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
            }
        }
        if !h.finished(id).is_empty() {
            break;
        }
        h.advance(ms(100));
    }
    let want: BTreeSet<SocketAddr> = ["10.0.0.1:80", "10.0.0.2:8080"]
        .iter()
        .map(|a| a.parse().unwrap_or_else(|_| unreachable!()))
        .collect();
    assert_eq!(tried, want);
}

#[test]
fn stn_zombie_replays_on_the_next_success_or_after_one_idle_second() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let victim = h.submit(short_task("victim").retry_count(0).total_timeout(secs(120)));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Unreachable));
    assert_eq!(
        h.e.short_in_flight(),
        0,
        "the one address failed: race over"
    );
    assert!(h.finished(victim).is_empty(), "parked");
    // Another task succeeds: a sign of connectivity replays the victim at once.
    let other = h.submit(short_task("other"));
    let (conn, _) = *connects(&h.log).last().unwrap_or_else(|| unreachable!());
    let before = h.log.len();
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(other).is_ok());
    let c = connects(&h.log[before..]);
    assert_eq!(c.len(), 1, "victim replayed after the success");
    // It fails again (a reset: a refusal would end it, `refusal.rs`); with
    // nothing else going on it is replayed 1 s later.
    h.ev(c[0].0, ConnEvent::ConnectFailed(ConnectError::Reset));
    assert!(h.finished(victim).is_empty());
    let a = h.advance(ms(999));
    assert!(connects(&a).is_empty());
    let a = h.advance(ms(1));
    let c = connects(&a);
    assert_eq!(c.len(), 1, "idle replay");
    serve_short(&mut h, c[0].0, "ok");
    assert!(h.outcome(victim).is_ok());
}

#[test]
fn need_authed_tasks_wait_for_auth() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x").need_authed(true));
    assert!(connects(&h.log).is_empty());
    h.e.set_authed(h.now, true);
    let a = h.drain();
    serve_short(&mut h, connects(&a)[0].0, "ok");
    assert!(h.outcome(id).is_ok());
}

// ------------------------------------------------------------ determinism ----

fn scripted_trace(seed: u64) -> Vec<Output> {
    let mut cfg = long_cfg(Profile::Stn).seed(seed);
    cfg.short_link.ips = vec![ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3")];
    let mut h = H::new(cfg);
    for i in 0..6 {
        h.submit(Task::new(0, "/c", format!("t{i}")).channel(Channel::Short));
    }
    let c = connects(&h.log);
    for (k, (conn, _)) in c.iter().enumerate() {
        if k % 2 == 0 {
            h.ev(*conn, ConnEvent::ConnectFailed(ConnectError::Refused));
        }
    }
    h.advance(secs(60));
    h.log
}

#[test]
fn same_inputs_same_actions() {
    assert_eq!(scripted_trace(7), scripted_trace(7));
}

// ---------------------------------------------- heartbeat, monitor, identify ----

#[test]
fn heartbeat_first_noop_3_5_min_after_connect_with_an_8_s_timeout() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let mut s = long_up(&mut h);
    let noops = |f: &[Frame]| f.iter().filter(|f| f.cmd_id == NOOP_CMD_ID).count();
    let first = s.frames(&h.log);
    assert_eq!(
        noops(&first),
        0,
        "no noop at connect (Mars: one interval later)"
    );
    for f in first {
        reply(&mut h, &s, f);
    }
    let connected_at = h.now;
    let before = h.log.len();
    h.advance(ms(209_999));
    assert_eq!(noops(&s.frames(&h.log[before..])), 0);
    let before = h.log.len();
    h.advance(ms(1));
    assert_eq!(h.now, connected_at + ms(210_000));
    assert_eq!(noops(&s.frames(&h.log[before..])), 1, "noop after 3.5 min");
    // Unanswered: 8 s later the link is dropped and a task on it fails over.
    let id = h.submit(Task::new(3, "", "x").channel(Channel::Long));
    let before = h.log.len();
    let a = h.advance(secs(8));
    assert!(closes(&a).contains(&s.conn), "{a:?}");
    assert!(h.log[before..].contains(&Output::Event(Event::LongLink(LinkStatus::Disconnected))));
    assert_eq!(
        h.reports(id)[0].error,
        Some(Error::Timeout(TimeoutKind::Heartbeat))
    );
}

#[test]
fn monitor_reconnects_slower_in_the_background() {
    // Mars auto table: 15 s (foreground < 1 min) vs 300 s (background, active).
    let mut h = H::new(long_cfg(Profile::Mars));
    h.e.set_foreground(h.now, false);
    h.drain();
    let s = long_up(&mut h);
    h.ev(s.conn, ConnEvent::Closed(crate::io::CloseReason::Eof));
    let a = h.advance(secs(299));
    assert!(connects(&a).is_empty(), "{a:?}");
    let a = h.advance(secs(1));
    assert_eq!(connects(&a).len(), 1);
    // stn keeps the tables but reconnects at once when the app comes back
    // to the foreground (the user is about to need the link).
    let mut h = H::new(long_cfg(Profile::Stn));
    h.e.set_foreground(h.now, false);
    h.drain();
    let s = long_up(&mut h);
    h.ev(s.conn, ConnEvent::Closed(crate::io::CloseReason::Eof));
    let a = h.advance(secs(100));
    assert!(connects(&a).is_empty(), "background: {a:?}");
    h.e.set_foreground(h.now, true);
    let a = h.drain();
    assert_eq!(connects(&a).len(), 1, "foreground reconnects now: {a:?}");
}

#[test]
fn a_task_that_needs_the_long_link_pokes_the_monitor() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
    // Auto schedule alone would wait 15 s; a long task asks for 5 s.
    h.advance(secs(2));
    let id = h.submit(Task::new(3, "", "x").channel(Channel::Long));
    let a = h.advance(secs(3));
    assert_eq!(
        connects(&a).len(),
        1,
        "task row: 5 s after the last attempt"
    );
    assert!(h.finished(id).is_empty());
}

#[test]
fn rejected_identify_takes_the_link_down() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let s = long_up(&mut h);
    h.e.identify_verdict(h.now, false);
    let a = h.drain();
    assert!(closes(&a).contains(&s.conn));
    assert!(!h.e.long_link_connected());
}

#[test]
fn network_change_resets_dynamic_timeouts() {
    let mut h = H::new(unhedged(Profile::Stn));
    let id = h.submit(short_task("x").retry_count(0));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    h.advance(secs(13));
    assert_eq!(
        h.reports(id)[0].error,
        Some(Error::Timeout(TimeoutKind::FirstPacket))
    );
    assert_eq!(h.e.timeouts.consecutive_timeouts(), 1);
    assert!(h.e.timeouts.rtt().has_samples());
    h.e.network_changed(h.now, NetworkKind::Mobile);
    h.drain();
    assert_eq!(h.e.timeouts.consecutive_timeouts(), 0);
    assert!(!h.e.timeouts.rtt().has_samples());
    assert_eq!(h.e.network(), NetworkKind::Mobile);
}

#[test]
fn cancel_reports_the_running_attempt() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x"));
    h.e.cancel(h.now, id);
    h.drain();
    let r = h.reports(id);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].error, Some(Error::Cancelled));
    assert_eq!(r[0].channel, Channel::Short);
}

/// The addresses one long-link race tries when every connect is refused:
/// the distinct endpoints connected to before the first `Disconnected`.
fn first_long_race(profile: Profile) -> BTreeSet<SocketAddr> {
    let mut cfg = Config::for_profile(profile).short_link_ips([ip("10.0.0.1")], 80);
    cfg.long_link = Some(LongLinkEndpoints {
        ips: vec![ip("10.0.1.1"), ip("10.0.1.2"), ip("10.0.1.3")],
        ports: vec![8080, 443],
        ..LongLinkEndpoints::default()
    });
    let mut h = H::new(cfg);
    let mut tried = BTreeSet::new();
    let mut answered = 0;
    for _ in 0..400 {
        let c = connects(&h.log);
        for &(conn, addr) in &c[answered..] {
            tried.insert(addr);
            h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
        }
        answered = c.len();
        let down = Output::Event(Event::LongLink(LinkStatus::Disconnected));
        if h.log.contains(&down) {
            return tried;
        }
        h.advance(Duration::from_millis(50));
    }
    panic!("{profile:?}: the race ends");
}

#[test]
fn a_long_link_race_reaches_every_candidate_under_stn_and_five_under_mars() {
    // 3 IPs × 2 ports = 6 endpoints, one cap for both links (5).
    assert_eq!(Config::for_profile(Profile::Stn).max_candidates, 5);
    assert_eq!(first_long_race(Profile::Stn).len(), 6);
    assert_eq!(first_long_race(Profile::Mars).len(), 5);
}

#[test]
fn long_link_candidates_come_from_resolve_and_fall_back_when_it_times_out() {
    let mut cfg = Config::for_profile(Profile::Mars).short_link_ips([ip("10.0.0.1")], 80);
    cfg.long_link = Some(LongLinkEndpoints {
        hosts: vec!["long.example".into()],
        ports: vec![8080, 443],
        backup_ips: vec![ip("10.0.2.2")],
        ..LongLinkEndpoints::default()
    });
    let mut h = H::new(cfg.clone());
    assert!(h.log.contains(&Output::Resolve {
        host: "long.example".into()
    }));
    let a = h.input(Input::Resolved {
        host: "long.example".into(),
        addrs: vec![ip("10.0.1.1")],
    });
    // Every port of every IP, IP-major; the race starts with the first.
    let c = connects(&a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1.ip(), ip("10.0.1.1"));

    // No answer within Mars's 2 s: the backups are used.
    let mut h = H::new(cfg);
    let a = h.advance(secs(2));
    let c = connects(&a);
    assert_eq!(c.len(), 1, "{a:?}");
    assert_eq!(c[0].1.ip(), ip("10.0.2.2"));
}

#[test]
fn stn_reuses_resolve_answers_until_they_fail() {
    let mut cfg = Config::for_profile(Profile::Stn);
    cfg.short_link.hosts = vec!["svc.example".into()];
    let mut h = H::new(cfg);
    let resolves = |h: &H| {
        h.log
            .iter()
            .filter(|a| matches!(a, Output::Resolve { .. }))
            .count()
    };
    let a = h.submit(short_task("a"));
    h.input(Input::Resolved {
        host: "svc.example".into(),
        addrs: vec![ip("10.0.0.7")],
    });
    let (conn, _) = connects(&h.log)[0];
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(a).is_ok());
    // Within the TTL: no new lookup.
    h.advance(secs(5));
    let b = h.submit(short_task("b").retry_count(1));
    assert_eq!(resolves(&h), 1);
    // The race fails (a reset; stn then skips the address; a refusal would
    // end the task, `refusal.rs`): the answer is dropped.
    let (conn, _) = *connects(&h.log).last().unwrap_or_else(|| unreachable!());
    h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Reset));
    assert_eq!(h.reports(b).len(), 1, "{:?}", h.log);
    h.advance(secs(1));
    assert_eq!(resolves(&h), 2, "asked again after the failure");
}

#[test]
fn read_write_timeout_ends_a_trickling_response() {
    // Mars, Wi-Fi: F = 12 s, RW = F + 5 333 ms; bytes every 5 s stay under
    // the 8 s packet gap, so the read-write timer decides.
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").retry_count(0));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    let sent = h.now;
    let head = Bytes::from_static(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
    h.advance(secs(1));
    h.ev(conn, ConnEvent::Received(head));
    for _ in 0..3 {
        h.advance(secs(5));
        h.ev(conn, ConnEvent::Received(Bytes::from_static(b"abc")));
    }
    h.advance_to(sent + ms(17_332));
    assert!(h.finished(id).is_empty());
    h.advance_to(sent + ms(17_333));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::ReadWrite)));
}

#[test]
fn inactive_app_reconnects_on_the_slowest_schedule() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let s = long_up(&mut h);
    h.e.set_foreground(h.now, false);
    h.drain();
    // Keep the link alive through ten minutes of background: answer noops.
    let mut srv = s;
    let mut last = 0;
    for _ in 0..720 {
        let frames = srv.frames(&h.log[last..]);
        last = h.log.len();
        for f in frames {
            reply(&mut h, &srv, f);
        }
        h.advance(secs(1));
    }
    assert!(h.e.long_link_connected());
    // Inactive now (background ≥ 10 min). The link drops and its reconnect fails.
    h.ev(srv.conn, ConnEvent::Closed(crate::io::CloseReason::Reset));
    let a = h.advance(secs(1));
    let c = connects(&a);
    assert_eq!(
        c.len(),
        1,
        "first reconnect: the last attempt was long ago: {a:?}"
    );
    let failed_start = h.now - secs(1) + ms(500);
    h.ev(c[0].0, ConnEvent::ConnectFailed(ConnectError::Refused));
    // Inactive auto interval 600 s (30 s slack), from the start of that attempt.
    let a = h.advance_to(failed_start + secs(560));
    assert!(connects(&a).is_empty(), "{a:?}");
    let a = h.advance_to(failed_start + secs(600));
    assert_eq!(connects(&a).len(), 1);
    let _ = &mut srv;
}

#[test]
fn mars_long_task_deadline_is_a_batch_error_stn_only_ends_that_task() {
    for (profile, batch) in [(Profile::Mars, true), (Profile::Stn, false)] {
        let mut h = H::new(long_cfg(profile));
        let mut s = long_up(&mut h);
        for f in s.frames(&h.log) {
            reply(&mut h, &s, f);
        }
        let short_lived = h.submit(
            Task::new(1, "", "a")
                .channel(Channel::Long)
                .total_timeout(ms(1_500))
                .retry_count(0),
        );
        let other = h.submit(Task::new(2, "", "b").channel(Channel::Long));
        let acts = h.advance(ms(1_500));
        assert_eq!(
            h.outcome(short_lived),
            Err(Error::Timeout(TimeoutKind::Task))
        );
        assert_eq!(
            closes(&acts).contains(&s.conn),
            batch,
            "{profile}: {acts:?}"
        );
        let rb = h.reports(other);
        assert_eq!(!rb.is_empty(), batch, "{profile}: bystander failed over");
        if batch {
            assert_eq!(
                rb[0].endpoint,
                Some(s.addr),
                "the link's endpoint is reported"
            );
        }
        assert!(h.finished(other).is_empty());
    }
}

// ------------------------------------------------------ response verdicts ----

fn judges(actions: &[Output]) -> Vec<JudgeRequest> {
    actions
        .iter()
        .filter_map(|a| match a {
            Output::Event(Event::Judge(j)) => Some((**j).clone()),
            _ => None,
        })
        .collect()
}

/// Runs the next short attempt (the newest connect) to a 200 with `body`.
fn serve_latest_short(h: &mut H, body: &str) -> Vec<Output> {
    let conn = connects(&h.log).last().expect("a connect").0;
    h.ev(conn, ConnEvent::Connected);
    h.ev(conn, ConnEvent::Received(ok_http(body)))
}

#[test]
fn judged_response_is_held_until_the_verdict_and_accept_delivers_it() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x").judge(true).user_tag(7));
    let a = serve_latest_short(&mut h, "resp");
    let j = judges(&a);
    assert_eq!(j.len(), 1);
    assert_eq!(
        (j[0].id, j[0].attempt, j[0].channel, j[0].user_tag),
        (id, 1, Channel::Short, 7)
    );
    assert_eq!(j[0].response.body, &b"resp"[..]);
    // Held: no outcome, no report yet, the connection already closed.
    assert!(h.finished(id).is_empty());
    assert!(h.reports(id).is_empty());
    assert!(h.e.has_task(id));
    assert_eq!(h.e.open_connections(), 0);
    h.now += ms(5);
    assert!(h.e.judge(h.now, id, Verdict::Accept));
    h.drain();
    assert_eq!(h.outcome(id).expect("ok").body, &b"resp"[..]);
    let r = h.reports(id);
    assert_eq!((r.len(), r[0].error.clone(), r[0].ended), (1, None, h.now));
    // A second verdict, or one for an unknown task, is refused.
    assert!(!h.e.judge(h.now, id, Verdict::Accept));
    assert!(!h.e.judge(h.now, TaskId::INVALID, Verdict::Retry));
    assert!(h.drain().is_empty());
}

#[test]
fn unjudged_tasks_end_without_a_verdict() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x"));
    let a = serve_latest_short(&mut h, "resp");
    assert!(judges(&a).is_empty());
    assert!(h.outcome(id).is_ok());
}

#[test]
fn retry_verdict_counts_the_endpoint_failed_and_retries_then_ends_with_decode() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let id = h.submit(short_task("x").judge(true).retry_count(1));
    serve_latest_short(&mut h, "garbled");
    assert!(h.e.judge(h.now, id, Verdict::Retry));
    h.drain();
    let r = h.reports(id);
    assert_eq!(r.last().and_then(|r| r.error.clone()), Some(Error::Decode));
    assert!(h.finished(id).is_empty(), "one retry left");
    // Mars's short-link retry delay.
    h.advance(secs(1));
    let a = serve_latest_short(&mut h, "garbled again");
    assert_eq!(judges(&a)[0].attempt, 2);
    assert!(h.e.judge(h.now, id, Verdict::Retry));
    h.drain();
    assert_eq!(h.outcome(id), Err(Error::Decode));
    let attempts = h.log.iter().find_map(|a| match a {
        Output::Event(Event::TaskFinished {
            id: i, attempts, ..
        }) if *i == id => Some(*attempts),
        _ => None,
    });
    assert_eq!(attempts, Some(2));
}

#[test]
fn end_verdict_ends_at_once_without_retry_or_parking() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(
        short_task("x")
            .judge(true)
            .retry_count(3)
            .total_timeout(secs(60)),
    );
    serve_latest_short(&mut h, "no");
    assert!(h.e.judge(h.now, id, Verdict::End));
    h.drain();
    assert_eq!(h.outcome(id), Err(Error::Decode));
    assert!(!h.e.has_task(id));
}

#[test]
fn session_timeout_deauths_gives_one_free_retry_and_redoes_running_authed_tasks() {
    let mut h = H::new(unhedged(Profile::Stn));
    h.e.set_authed(h.now, true);
    h.drain();
    let src = h.submit(
        short_task("src")
            .judge(true)
            .need_authed(true)
            .retry_count(0),
    );
    let other = h.submit(short_task("other").need_authed(true).retry_count(1));
    let free = h.submit(short_task("free").retry_count(0));
    let c = connects(&h.log);
    assert_eq!(c.len(), 3, "all three running");
    // The other two are connected and waiting for their responses.
    h.ev(c[1].0, ConnEvent::Connected);
    h.ev(c[2].0, ConnEvent::Connected);
    h.ev(c[0].0, ConnEvent::Connected);
    h.ev(c[0].0, ConnEvent::Received(ok_http("expired")));
    assert!(h.e.judge(h.now, src, Verdict::SessionTimeout));
    let a = h.drain();
    // The other need-auth task's attempt is stopped; the free one runs on.
    assert!(closes(&a).contains(&c[1].0));
    assert!(!closes(&a).contains(&c[2].0));
    assert_eq!(
        h.reports(other).last().and_then(|r| r.error.clone()),
        Some(Error::Decode)
    );
    // Unauthenticated now: nothing restarts until the app logs in again.
    assert!(connects(&a).is_empty());
    h.advance(secs(2));
    assert_eq!(connects(&h.log).len(), 3);
    h.e.set_authed(h.now, true);
    let a = h.drain();
    let again = connects(&a);
    assert_eq!(again.len(), 2, "both need-auth tasks start again at once");
    // The source had no retries: its session-timeout retry was free.
    for (conn, _) in again {
        serve_short(&mut h, conn, "fresh");
    }
    let j = judges(&h.log);
    assert_eq!(j.last().map(|j| (j.id, j.attempt)), Some((src, 2)));
    assert!(h.e.judge(h.now, src, Verdict::Accept));
    h.drain();
    assert!(h.outcome(src).is_ok());
    assert!(h.outcome(other).is_ok());
    h.ev(c[2].0, ConnEvent::Received(ok_http("untouched")));
    assert!(h.outcome(free).is_ok());
}

#[test]
fn session_timeout_free_retry_is_once_per_task() {
    let mut h = H::new(short_cfg(Profile::Stn));
    h.e.set_authed(h.now, true);
    let id = h.submit(short_task("x").judge(true).need_authed(true).retry_count(0));
    serve_latest_short(&mut h, "expired");
    assert!(h.e.judge(h.now, id, Verdict::SessionTimeout));
    h.e.set_authed(h.now, true);
    h.drain();
    serve_latest_short(&mut h, "expired again");
    assert!(h.e.judge(h.now, id, Verdict::SessionTimeout));
    h.drain();
    assert_eq!(h.outcome(id), Err(Error::Decode));
}

#[test]
fn retry_all_redoes_every_running_task_and_drops_the_long_link() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let mut s = long_up(&mut h);
    let src = h.submit(
        Task::new(100, "", "a")
            .channel(Channel::Long)
            .judge(true)
            .retry_count(1),
    );
    let peer = h.submit(
        Task::new(101, "", "b")
            .channel(Channel::Long)
            .retry_count(1),
    );
    let frames = s.frames(&h.log);
    let f = frames
        .iter()
        .find(|f| f.cmd_id == 100)
        .expect("sent")
        .clone();
    let a = reply(&mut h, &s, Frame::new(100, f.seq, "stale"));
    let j = judges(&a);
    assert_eq!((j[0].id, j[0].channel), (src, Channel::Long));
    assert!(h.e.judge(h.now, src, Verdict::RetryAll));
    let a = h.drain();
    assert!(closes(&a).contains(&s.conn), "the long link is dropped");
    assert!(a.contains(&Output::Event(Event::LongLink(LinkStatus::Disconnected))));
    for id in [src, peer] {
        assert!(h.finished(id).is_empty(), "{id} retries");
        assert!(h.reports(id).last().is_some_and(|r| r.error.is_some()));
    }
}

#[test]
fn retry_verdict_on_the_long_link_drops_it() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let mut s = long_up(&mut h);
    let id = h.submit(
        Task::new(100, "", "a")
            .channel(Channel::Long)
            .judge(true)
            .retry_count(0),
    );
    let f = s
        .frames(&h.log)
        .into_iter()
        .find(|f| f.cmd_id == 100)
        .expect("sent");
    reply(&mut h, &s, Frame::new(100, f.seq, "bad"));
    assert!(h.e.judge(h.now, id, Verdict::Retry));
    let a = h.drain();
    assert!(closes(&a).contains(&s.conn));
    assert_eq!(h.outcome(id), Err(Error::Decode));
}

#[test]
fn a_judged_task_still_times_out_and_can_be_cancelled() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let slow = h.submit(short_task("x").judge(true).total_timeout(secs(5)));
    serve_latest_short(&mut h, "r");
    let cancelled = h.submit(short_task("y").judge(true));
    serve_latest_short(&mut h, "r");
    h.e.cancel(h.now, cancelled);
    h.drain();
    assert_eq!(h.outcome(cancelled), Err(Error::Cancelled));
    assert_eq!(
        h.reports(cancelled).last().and_then(|r| r.error.clone()),
        Some(Error::Cancelled)
    );
    h.advance(secs(6));
    assert_eq!(h.outcome(slow), Err(TimeoutKind::Task.into()));
    assert!(!h.e.judge(h.now, slow, Verdict::Accept));
}

// ---------------------------------------------------------------- hedging ----

#[test]
fn a_silent_request_is_hedged_and_the_hedge_can_win() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x").hedge(true));
    let (first, _) = connects(&h.log)[0];
    h.now += ms(50);
    h.ev(first, ConnEvent::Connected);
    let sent = h.now;
    // RTT hint 50 ms: 4 RTTs is under the 600 ms floor.
    let a = h.advance(ms(599));
    assert!(connects(&a).is_empty(), "no hedge yet: {a:?}");
    let a = h.advance(ms(1));
    let hedge = connects(&a);
    assert_eq!(hedge.len(), 1, "hedge at send + 600 ms: {a:?}");
    assert_eq!(h.now, sent + ms(600));
    let a = h.ev(hedge[0].0, ConnEvent::Connected);
    assert_eq!(sends(&a).len(), 1, "the same request again");
    let a = h.ev(hedge[0].0, ConnEvent::Received(ok_http("via hedge")));
    assert!(closes(&a).contains(&first), "the first exchange is stopped");
    assert_eq!(h.outcome(id).expect("ok").body, &b"via hedge"[..]);
    let r = h.reports(id);
    assert_eq!(r.len(), 1, "one attempt");
    assert_eq!((r[0].hedges, r[0].connect_attempts), (1, 2));
    assert_eq!(h.e.open_connections(), 0);
    // A late answer on the stopped connection is ignored.
    assert!(h.ev(first, ConnEvent::Received(ok_http("late"))).is_empty());
}

#[test]
fn the_first_exchange_still_wins_over_a_running_hedge() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x").hedge(true));
    let (first, _) = connects(&h.log)[0];
    h.ev(first, ConnEvent::Connected);
    let a = h.advance(secs(1));
    let hedge = connects(&a)[0].0;
    let a = h.ev(first, ConnEvent::Received(ok_http("first")));
    assert!(closes(&a).contains(&hedge));
    assert_eq!(h.outcome(id).expect("ok").body, &b"first"[..]);
    assert_eq!(h.reports(id)[0].hedges, 1);
}

#[test]
fn a_hedge_takes_over_when_the_first_exchange_fails() {
    let mut h = H::new(short_cfg(Profile::Stn));
    let id = h.submit(short_task("x").hedge(true).retry_count(0));
    let (first, _) = connects(&h.log)[0];
    h.ev(first, ConnEvent::Connected);
    let a = h.advance(secs(1));
    let hedge = connects(&a)[0].0;
    h.ev(hedge, ConnEvent::Connected);
    // The first connection dies: no retry is used, the hedge carries on.
    h.ev(first, ConnEvent::Closed(crate::io::CloseReason::Reset));
    assert!(h.finished(id).is_empty());
    h.ev(hedge, ConnEvent::Received(ok_http("saved")));
    assert_eq!(h.outcome(id).expect("ok").body, &b"saved"[..]);
    let done = h.log.iter().find_map(|a| match a {
        Output::Event(Event::TaskFinished {
            id: i, attempts, ..
        }) if *i == id => Some(*attempts),
        _ => None,
    });
    assert_eq!(done, Some(1));
}

#[test]
fn at_most_two_hedges_one_at_a_time() {
    let mut h = H::new(short_cfg(Profile::Stn));
    h.submit(short_task("x").hedge(true).total_timeout(secs(60)));
    let (first, _) = connects(&h.log)[0];
    h.ev(first, ConnEvent::Connected);
    let mut hedges = Vec::new();
    for _ in 0..40 {
        let a = h.advance(ms(250));
        for (c, _) in connects(&a) {
            // Each hedge connects; its request then goes unanswered too.
            h.ev(c, ConnEvent::Connected);
            hedges.push(c);
        }
    }
    assert_eq!(hedges.len(), 2, "{hedges:?}");
    // A hedge that fails frees the slot for the next one, within the cap.
    assert!(h.e.open_connections() <= 3);
}

#[test]
fn no_hedge_after_a_response_byte_for_large_requests_unmarked_tasks_or_under_mars() {
    // A response has started: the transfer is under way.
    let mut h = H::new(short_cfg(Profile::Stn));
    h.submit(short_task("x").hedge(true));
    let (c, _) = connects(&h.log)[0];
    h.ev(c, ConnEvent::Connected);
    h.ev(
        c,
        ConnEvent::Received(Bytes::from_static(b"HTTP/1.1 200 OK\r\n")),
    );
    assert!(connects(&h.advance(secs(5))).is_empty());
    // A large request.
    let mut h = H::new(short_cfg(Profile::Stn));
    h.submit(short_task(&"x".repeat(9 * 1024)).hedge(true));
    let (c, _) = connects(&h.log)[0];
    h.ev(c, ConnEvent::Connected);
    assert!(connects(&h.advance(secs(5))).is_empty());
    // A task that does not say its replay is harmless (the default).
    let mut h = H::new(short_cfg(Profile::Stn));
    h.submit(short_task("x"));
    let (c, _) = connects(&h.log)[0];
    h.ev(c, ConnEvent::Connected);
    assert!(connects(&h.advance(secs(5))).is_empty());
    // Mars never hedges.
    let mut h = H::new(short_cfg(Profile::Mars));
    h.submit(short_task("x").hedge(true));
    let (c, _) = connects(&h.log)[0];
    h.ev(c, ConnEvent::Connected);
    assert!(connects(&h.advance(secs(5))).is_empty());
}

/// Calls, one after another, with two black-holed endpoints (SYNs never
/// answered) beside a live one: the endpoints each call connects to.
fn calls_beside_black_holes(profile: Profile, calls: usize) -> Vec<Vec<IpAddr>> {
    let live = ip("10.0.0.3");
    let cfg =
        Config::for_profile(profile).short_link_ips([ip("10.0.0.1"), ip("10.0.0.2"), live], 80);
    let mut h = H::new(cfg);
    let mut tried = Vec::new();
    for i in 0..calls {
        let before = connects(&h.log).len();
        let id = h.submit(short_task(&format!("call {i}")).retry_count(0));
        let mut waited = 0;
        while h.e.has_task(id) {
            let new = connects(&h.log)[before..].to_vec();
            if let Some(&(conn, _)) = new.iter().find(|(_, a)| a.ip() == live) {
                serve_short(&mut h, conn, "ok");
                break;
            }
            h.advance(Duration::from_millis(100));
            waited += 1;
            assert!(
                waited < 600,
                "{profile:?}: call {i} reaches the live endpoint"
            );
        }
        assert!(h.outcome(id).is_ok(), "{profile:?}: call {i}");
        tried.push(
            connects(&h.log)[before..]
                .iter()
                .map(|(_, a)| a.ip())
                .collect(),
        );
    }
    tried
}

#[test]
fn abandoned_syns_demote_black_holes() {
    // Once a black hole's SYNs have been abandoned, later calls go to the
    // live endpoint first: every call after the first two connects there
    // alone.
    let tried = calls_beside_black_holes(Profile::Stn, 10);
    for (i, t) in tried.iter().enumerate().skip(2) {
        assert_eq!(t, &[ip("10.0.0.3")], "call {i}: {tried:?}");
    }
}

#[test]
fn an_abandoned_attempt_is_reported_but_stays_open_and_can_win() {
    // Two endpoints, no RTT hint: the second attempt (250 ms, the other
    // endpoint) is abandoned 1.6 s after its start. Its endpoint gets the
    // failure at once, but its socket is not closed (the OS would still
    // retransmit its SYN); when it connects later the task runs on it, and
    // the success is recorded too. (The first attempt is Mars's own floor
    // attempt: kept too, but judged only at its timeout or a win.)
    let c = unhedged(Profile::Stn).short_link_ips([ip("10.0.0.1"), ip("10.0.0.2")], 80);
    let mut h = H::new(c);
    let id = h.submit(short_task("x").retry_count(0));
    h.advance(ms(250));
    let started = connects(&h.log);
    assert_eq!(started.len(), 2, "{started:?}");
    let (probe, addr) = started[1];
    assert_ne!(addr, started[0].1);
    let a = h.advance(ms(1_700));
    assert!(
        !closes(&a).contains(&probe),
        "abandoned attempt closed: {a:?}"
    );
    assert!(h.e.out.owns(probe));
    assert!(connects(&h.log).len() > 3, "fresh attempts started");
    let stats = h.e.endpoint_history().endpoint(addr).expect("recorded");
    assert_eq!(stats.records & 1, 1, "the abandon is a failure of {addr}");
    assert!(stats.last_fail.is_some_and(|t| t <= h.now));
    let floor = started[0].1;
    assert!(
        h.e.endpoint_history()
            .endpoint(floor)
            .is_none_or(|s| s.last_fail.is_none()),
        "no verdict on the floor attempt yet"
    );
    serve_short(&mut h, probe, "late");
    assert_eq!(h.outcome(id).expect("ok").body, &b"late"[..]);
    let r = h.reports(id);
    assert_eq!(r.last().and_then(|r| r.endpoint), Some(addr));
    let stats = h.e.endpoint_history().endpoint(addr).expect("recorded");
    assert!(stats.last_success.is_some(), "the win is recorded too");
    // Every other attempt was closed with the race, the winner with its
    // (non-keep-alive) exchange, except the floor attempt: started before
    // the winner on another address, it had not waited the outpaced
    // threshold (2 x the winner's ~1.7 s + 100 ms) and is kept until then.
    let floor_conn = started[0].0;
    assert_eq!(h.e.open_connections(), 1);
    assert!(h.e.out.owns(floor_conn));
    // Still unanswered then: closed and a failure of its address.
    let a = h.advance(ms(2_000));
    assert!(closes(&a).contains(&floor_conn), "{a:?}");
    assert_eq!(h.e.open_connections(), 0);
    let stats = h.e.endpoint_history().endpoint(floor).expect("recorded");
    assert!(stats.last_fail.is_some(), "the floor attempt was outpaced");
}

// ------------------------------------------------------------ socket pool ----

fn keep_alive_task(body: &str) -> Task {
    short_task(body).header("Connection", "Keep-Alive")
}

/// Runs one keep-alive task on a fresh connection; returns the connection.
fn pooled_conn(h: &mut H) -> ConnId {
    let id = h.submit(keep_alive_task("a"));
    let (conn, _) = *connects(&h.log).last().expect("connect");
    h.ev(conn, ConnEvent::Connected);
    let a = h.ev(conn, ConnEvent::Received(ok_http("one")));
    assert!(!closes(&a).contains(&conn), "kept for reuse: {a:?}");
    assert!(h.outcome(id).is_ok());
    conn
}

#[test]
fn keep_alive_tasks_reuse_the_connection() {
    let mut h = H::new(short_cfg(Profile::Mars));
    let conn = pooled_conn(&mut h);
    assert_eq!(h.e.open_connections(), 1);
    let before = connects(&h.log).len();
    let id = h.submit(keep_alive_task("b"));
    assert_eq!(connects(&h.log).len(), before, "no new connect");
    let s = sends(&h.log);
    assert_eq!(
        s.last().map(|(c, _)| *c),
        Some(conn),
        "sent on the pooled connection"
    );
    h.ev(conn, ConnEvent::Received(ok_http("two")));
    assert_eq!(h.outcome(id).expect("ok").body, &b"two"[..]);
    let r = h.reports(id);
    assert_eq!((r[0].connect_attempts, r[0].connect_time), (0, None));
    // A task without the header does not use (or fill) the pool.
    let plain = h.submit(short_task("c"));
    let (fresh, _) = *connects(&h.log).last().expect("connect");
    assert_ne!(fresh, conn);
    serve_short(&mut h, fresh, "three");
    assert!(h.outcome(plain).is_ok());
    assert!(closes(&h.log).contains(&fresh));
}

#[test]
fn a_closing_response_is_not_pooled() {
    let mut h = H::new(short_cfg(Profile::Mars));
    h.submit(keep_alive_task("a"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    let reply = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
    let a = h.ev(conn, ConnEvent::Received(Bytes::from(reply)));
    assert!(closes(&a).contains(&conn));
    assert_eq!(h.e.open_connections(), 0);
}

#[test]
fn idle_connections_expire_and_die_with_their_peer_or_the_network() {
    let mut h = H::new(short_cfg(Profile::Stn));
    h.submit(keep_alive_task("a"));
    let (conn, _) = connects(&h.log)[0];
    h.ev(conn, ConnEvent::Connected);
    let reply = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2, max=100\r\nContent-Length: 1\r\n\r\nx";
    h.ev(conn, ConnEvent::Received(Bytes::from(reply)));
    assert_eq!(h.e.open_connections(), 1);
    let a = h.advance(secs(2));
    assert_eq!(
        closes(&a),
        vec![conn],
        "closed at the server's idle timeout"
    );
    // Closed by the peer while idle: forgotten, the next task connects.
    let conn = pooled_conn(&mut h);
    assert!(h
        .ev(conn, ConnEvent::Closed(crate::io::CloseReason::Eof))
        .is_empty());
    assert_eq!(h.e.open_connections(), 0);
    // A network change closes idle connections.
    let conn = pooled_conn(&mut h);
    h.e.network_changed(h.now, NetworkKind::Mobile);
    assert!(closes(&h.drain()).contains(&conn));
}

#[test]
fn a_stale_pooled_connection_is_redone_at_once_and_turns_the_pool_off() {
    for profile in [Profile::Stn, Profile::Mars] {
        let mut h = H::new(short_cfg(profile));
        let conn = pooled_conn(&mut h);
        let id = h.submit(keep_alive_task("b").retry_count(0));
        // The server had closed it: reset before any response byte.
        let a = h.ev(conn, ConnEvent::Closed(crate::io::CloseReason::Reset));
        if profile == Profile::Stn {
            // Redone at once on a fresh connection, no retry used.
            let (fresh, _) = connects(&a)[0];
            serve_short(&mut h, fresh, "ok");
            assert!(h.outcome(id).is_ok());
            // The pool is off now: the fresh connection is closed, not kept.
            assert!(closes(&h.log).contains(&fresh));
        } else {
            // Mars: the attempt failed, and there was no retry left.
            assert!(h.outcome(id).is_err());
        }
    }
}

#[test]
fn a_first_packet_timeout_on_a_pooled_connection_turns_the_pool_off_only_under_mars() {
    for profile in [Profile::Stn, Profile::Mars] {
        let mut h = H::new(short_cfg(profile));
        pooled_conn(&mut h);
        let id = h.submit(keep_alive_task("b").retry_count(1).hedge(false));
        // The reused connection stays silent: the attempt times out and the
        // retry connects afresh.
        let before = connects(&h.log).len();
        let mut waited = 0;
        while connects(&h.log).len() == before {
            h.advance(secs(1));
            waited += 1;
            assert!(waited < 120, "{profile:?}: the retry connects");
        }
        let first = h.reports(id)[0].error.clone();
        assert_eq!(
            first,
            Some(Error::Timeout(TimeoutKind::FirstPacket)),
            "{profile:?}"
        );
        let (fresh, _) = *connects(&h.log).last().expect("connect");
        serve_short(&mut h, fresh, "ok");
        assert!(h.outcome(id).is_ok(), "{profile:?}");
        let kept = !closes(&h.log).contains(&fresh);
        // stn: a timeout is no proof the connection was stale, so the pool
        // stays on and keeps the fresh connection; Mars turns it off.
        assert_eq!(kept, profile == Profile::Stn, "{profile:?}");
    }
}

/// `n` long-link tasks all in flight at once against a healthy server that
/// answers every frame, in order, one every `gap`. Returns how many tasks
/// succeeded and how many times the link went down.
fn deep_long_queue(mut cfg: Config, n: u32, gap: Duration) -> (usize, usize) {
    cfg.long.max_in_flight_tasks = n as usize + 8;
    cfg.max_queued_tasks = n as usize + 8;
    let mut h = H::new(cfg);
    let mut s = long_up(&mut h);
    let mut backlog: VecDeque<Frame> = s.frames(&h.log).into();
    let ids: Vec<TaskId> = (0..n)
        .map(|i| {
            let task = Task::new(100, "", format!("req {i}"))
                .channel(Channel::Long)
                .limit_flow(false)
                .limit_frequency(false);
            let id = h.e.submit(h.now, task).expect("accepted");
            let a = h.drain();
            backlog.extend(s.frames(&a));
            id
        })
        .collect();
    let mut downs = 0;
    let mut guard = 0;
    while let Some(f) = backlog.pop_front() {
        guard += 1;
        assert!(guard < 10 * n as usize, "the server keeps answering");
        let mut a = h.advance(gap);
        if !h.e.long_link_connected() {
            downs += 1;
            break;
        }
        a.extend(reply(&mut h, &s, Frame::new(f.cmd_id, f.seq, "ok")));
        backlog.extend(s.frames(&a));
    }
    let ok = ids
        .iter()
        .filter(|id| matches!(h.finished(**id).first(), Some(Ok(_))))
        .count();
    (ok, downs)
}

#[test]
fn a_deep_queue_on_a_healthy_long_link_is_not_a_dead_link_under_stn() {
    // 10,000 tasks answered at 400 per second: the last waits 25 s for its
    // turn, past the default first-packet and read-write timeouts (and
    // within the 40 s task deadline).
    let (ok, downs) = deep_long_queue(long_cfg(Profile::Stn), 10_000, ms(5) / 2);
    assert_eq!((ok, downs), (10_000, 0));
}

#[test]
fn timing_pipelined_tasks_from_their_write_drops_a_deep_healthy_queue() {
    // What stn did before (and Mars does): the queue reads as a dead link.
    let mut cfg = long_cfg(Profile::Stn);
    cfg.long.wait_follows_link_progress = false;
    let (ok, downs) = deep_long_queue(cfg, 10_000, ms(5) / 2);
    assert_eq!(downs, 1, "a first-packet timeout drops the link");
    assert!(ok < 10_000, "{ok}");
}

/// Outputs are queued by the thousand: the large payloads (reports, verdict
/// requests) are boxed so one output stays a few words.
#[test]
fn outputs_stay_small() {
    assert!(std::mem::size_of::<Output>() <= 64);
    assert!(std::mem::size_of::<Event>() <= 64);
}

// ------------------------------------------------------- verdict probes ----

/// A call over two endpoints with a 40 ms connect RTT known (stagger 130 ms,
/// outpaced threshold 2 x 40 + 100 = 180 ms): the first never answers until
/// `first_answers_at` (if ever), the second connects 40 ms after its start
/// and wins. Returns the harness, the first attempt's connection and address.
fn first_loses_by_a_stagger(first_answers_at: Option<u64>) -> (H, ConnId, SocketAddr) {
    let c = unhedged(Profile::Stn).short_link_ips([ip("10.0.0.1"), ip("10.0.0.2")], 80);
    let mut h = H::new(c);
    h.e.connect_sample(ms(40));
    let t0 = h.now;
    let id = h.submit(short_task("x").retry_count(0));
    h.advance(ms(130));
    let started = connects(&h.log);
    assert_eq!(started.len(), 2, "{started:?}");
    let ((first, first_addr), (second, second_addr)) = (started[0], started[1]);
    assert_ne!(first_addr, second_addr);
    h.advance_to(t0 + ms(170));
    serve_short(&mut h, second, "ok");
    assert_eq!(h.outcome(id).expect("ok").body, &b"ok"[..]);
    // At the win the first has waited 170 ms, under the threshold: it is
    // neither judged nor closed.
    assert!(!closes(&h.log).contains(&first), "closed at the win");
    assert!(h.e.out.owns(first));
    assert!(h
        .e
        .endpoint_history()
        .endpoint(first_addr)
        .is_none_or(|s| s.last_fail.is_none()));
    if let Some(at) = first_answers_at {
        h.advance_to(t0 + ms(at));
        let a = h.ev(first, ConnEvent::Connected);
        assert!(closes(&a).contains(&first), "{a:?}");
    }
    (h, first, first_addr)
}

#[test]
fn a_black_hole_that_loses_within_the_threshold_is_judged_at_it() {
    let (mut h, first, addr) = first_loses_by_a_stagger(None);
    let t0 = h.now - ms(170);
    let a = h.advance_to(t0 + ms(179));
    assert!(!closes(&a).contains(&first), "closed early: {a:?}");
    let a = h.advance_to(t0 + ms(181));
    assert_eq!(closes(&a), vec![first], "{a:?}");
    let stats = h.e.endpoint_history().endpoint(addr).expect("recorded");
    assert_eq!(
        stats.last_fail,
        Some(t0 + ms(180)),
        "outpaced at the threshold"
    );
    assert_eq!(h.e.open_connections(), 0);
    // The late answer of a closed probe is ignored.
    assert!(h.ev(first, ConnEvent::Connected).is_empty());
}

#[test]
fn a_slower_loser_that_connects_within_the_threshold_gets_no_verdict() {
    let (mut h, _, addr) = first_loses_by_a_stagger(Some(175));
    assert_eq!(h.e.open_connections(), 0);
    h.advance(ms(1_000));
    assert!(h
        .e
        .endpoint_history()
        .endpoint(addr)
        .is_none_or(|s| s.last_fail.is_none()));
}

#[test]
fn a_probe_that_fails_is_reported_and_a_network_change_drops_probes() {
    let (mut h, first, addr) = first_loses_by_a_stagger(None);
    h.now += ms(5);
    h.ev(first, ConnEvent::ConnectFailed(ConnectError::Refused));
    assert_eq!(h.e.open_connections(), 0);
    let stats = h.e.endpoint_history().endpoint(addr).expect("recorded");
    assert!(stats.last_fail.is_some());

    let (mut h, first, _) = first_loses_by_a_stagger(None);
    h.e.network_changed(h.now, NetworkKind::Mobile);
    let a = h.drain();
    assert!(closes(&a).contains(&first), "{a:?}");
    assert_eq!(h.e.open_connections(), 0);
}
