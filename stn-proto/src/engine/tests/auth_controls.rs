//! Script tests of auth per host and user (Mars `MakesureAuthed(host,
//! user_id)`), the `user_id` scoping of session-timeout redos, and
//! disabling / enabling the long link at run time (Mars `DisableLongLink`).

use super::*;

/// Short link to one fixed debug address, so tasks with their own host
/// connect at once (no resolve) and keep their host for auth.
fn debug_cfg() -> Config {
    let mut c = unhedged(Profile::Stn);
    c.short_link.debug = Some(SocketAddr::from(([10, 0, 0, 1], 80)));
    c
}

fn on_host(host: &str, body: &str) -> Task {
    short_task(body).host(host).need_authed(true)
}

/// Answers every connect of `conns` with a 200.
fn serve_all(h: &mut H, conns: &[(ConnId, SocketAddr)]) {
    for (conn, _) in conns {
        serve_short(h, *conn, "ok");
    }
}

/// Plays a server for up to `rounds` seconds: accepts long-link
/// reconnects, answers every task frame and short request with "ok",
/// accepts every verdict.
fn serve_everything(h: &mut H, s: &mut LongServer, rounds: usize) {
    let mut seen = 0;
    for _ in 0..rounds {
        while seen < h.log.len() {
            let new: Vec<Output> = h.log[seen..].to_vec();
            seen = h.log.len();
            let closed = closes(&h.log);
            for (conn, addr) in connects(&new) {
                if closed.contains(&conn) {
                    continue;
                }
                if addr.port() == 8080 {
                    h.ev(conn, ConnEvent::Connected);
                    h.e.identify_answer(h.now, IdentifyDecision::Never);
                    h.drain();
                    *s = LongServer {
                        conn,
                        addr,
                        dec: FrameDecoder::new(CodecConfig::default()),
                    };
                } else {
                    serve_short(h, conn, "ok");
                }
            }
            for f in s.frames(&new) {
                if f.cmd_id != NOOP_CMD_ID && f.seq < 0xFFFF_FFF0 {
                    reply(h, s, Frame::new(f.cmd_id, f.seq, "ok"));
                }
            }
            for j in judges(&new) {
                h.e.judge(h.now, j.id, Verdict::Accept);
                h.drain();
            }
        }
        h.advance(secs(1));
    }
}

fn error_of_last_report(h: &H, id: TaskId) -> Option<Error> {
    h.reports(id).last().and_then(|r| r.error.clone())
}

#[test]
fn a_need_auth_task_waits_only_for_its_own_host() {
    let mut h = H::new(debug_cfg());
    assert!(h.e.set_host_authed(h.now, "a.example", None, true));
    h.drain();
    let a = h.submit(on_host("a.example", "a"));
    assert_eq!(connects(&h.log).len(), 1, "a's host is authed: it starts");
    let b = h.submit(on_host("b.example", "b"));
    let open = h.submit(short_task("no auth").host("b.example"));
    let first = connects(&h.log);
    assert_eq!(first.len(), 2, "b waits; the no-auth task goes");
    serve_all(&mut h, &first);
    assert!(h.outcome(a).is_ok() && h.outcome(open).is_ok());
    h.advance(secs(30));
    assert_eq!(connects(&h.log).len(), 2, "b still waits");
    assert!(h.e.set_host_authed(h.now, "b.example", None, true));
    let started = connects(&h.drain());
    assert_eq!(started.len(), 1, "b starts when its host is authed");
    serve_all(&mut h, &started);
    for id in [a, b, open] {
        assert!(h.outcome(id).is_ok());
    }
}

#[test]
fn auth_is_per_user_and_set_authed_is_every_host_and_user() {
    let mut h = H::new(debug_cfg());
    h.e.set_host_authed(h.now, "a.example", Some("u1"), true);
    h.drain();
    let u1 = h.submit(on_host("a.example", "1").user_id("u1"));
    let u2 = h.submit(on_host("a.example", "2").user_id("u2"));
    let nobody = h.submit(on_host("a.example", "3"));
    assert_eq!(connects(&h.log).len(), 1, "only u1's session is up");
    // The simple form opens every host and user.
    h.e.set_authed(h.now, true);
    assert_eq!(connects(&h.drain()).len(), 2);
    // And forgets the per-key answers: u1 off, then everyone off.
    h.e.set_host_authed(h.now, "a.example", Some("u1"), false);
    let late = h.submit(on_host("a.example", "4").user_id("u1"));
    assert_eq!(connects(&h.log).len(), 3, "u1 is off again");
    h.e.set_authed(h.now, false);
    h.e.set_authed(h.now, true);
    assert_eq!(
        connects(&h.drain()).len(),
        1,
        "set_authed forgot u1's answer"
    );
    let all = connects(&h.log);
    serve_all(&mut h, &all);
    for id in [u1, u2, nobody, late] {
        assert!(h.outcome(id).is_ok());
    }
}

#[test]
fn a_session_timeout_on_one_host_deauths_that_host_only() {
    let mut h = H::new(debug_cfg());
    h.e.set_authed(h.now, true);
    h.drain();
    let src = h.submit(on_host("a.example", "src").judge(true).retry_count(0));
    serve_latest_short(&mut h, "expired");
    assert!(h.e.judge(h.now, src, Verdict::SessionTimeout));
    h.drain();
    let before = connects(&h.log).len();
    let on_a = h.submit(on_host("a.example", "a2"));
    let on_b = h.submit(on_host("b.example", "b"));
    let a = connects(&h.log);
    assert_eq!(a.len(), before + 1, "b still authed, a waits");
    serve_short(&mut h, a[a.len() - 1].0, "b");
    assert!(h.outcome(on_b).is_ok());
    // The app logs in again on a: the source (its free retry) and a2 go.
    h.e.set_host_authed(h.now, "a.example", None, true);
    let again = connects(&h.drain());
    assert_eq!(again.len(), 2);
    for (conn, _) in &again {
        serve_short(&mut h, *conn, "fresh");
    }
    assert!(h.e.judge(h.now, src, Verdict::Accept));
    h.drain();
    assert!(h.outcome(src).is_ok());
    assert!(h.outcome(on_a).is_ok());
}

#[test]
fn a_session_timeout_redoes_long_link_tasks_of_its_user_and_every_short_need_auth_task() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let mut s = long_up(&mut h);
    h.e.set_authed(h.now, true);
    h.drain();
    let long = |body: &str, user: &str| {
        Task::new(100, "", Bytes::copy_from_slice(body.as_bytes()))
            .channel(Channel::Long)
            .need_authed(true)
            .user_id(user)
            .retry_count(1)
    };
    let src = h.submit(long("src", "u1").judge(true));
    let same_user = h.submit(long("same", "u1"));
    let other_user = h.submit(long("other", "u2"));
    let short_other_user = h.submit(short_task("short").need_authed(true).user_id("u2"));
    let short_conn = connects(&h.log).last().expect("short connect").0;
    h.ev(short_conn, ConnEvent::Connected);
    let frames = s.frames(&h.log);
    let src_frame = frames
        .iter()
        .find(|f| f.body.as_ref() == b"src")
        .expect("src sent");
    reply(&mut h, &s, Frame::new(100, src_frame.seq, "expired"));
    assert!(h.e.judge(h.now, src, Verdict::SessionTimeout));
    h.drain();
    // Same user on the long link: redone as a batch error (a retry used).
    assert_eq!(error_of_last_report(&h, same_user), Some(Error::Decode));
    // Another user's long-link task is not redone; Mars drops the link
    // after the batch error, which interrupts it.
    assert_eq!(
        error_of_last_report(&h, other_user),
        Some(LocalError::Interrupted.into())
    );
    // The short link redoes every need-auth task, whatever its user.
    assert_eq!(
        error_of_last_report(&h, short_other_user),
        Some(Error::Decode)
    );
    // Only u1 (on the long link's host "") was de-authed.
    assert!(h.finished(same_user).is_empty() && h.finished(other_user).is_empty());
    h.e.set_authed(h.now, true);
    h.drain();
    serve_everything(&mut h, &mut s, 20);
    for id in [src, same_user, other_user, short_other_user] {
        assert!(h.outcome(id).is_ok(), "task {id}");
    }
}

#[test]
fn disabling_the_long_link_moves_tasks_short_ends_long_only_ones_and_stops_reconnecting() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let mut s = long_up(&mut h);
    let long_only = h.submit(Task::new(100, "", "lo").channel(Channel::Long));
    let both = h.submit(Task::new(101, "/cgi", "both"));
    let judged = h.submit(
        Task::new(102, "", "judged")
            .channel(Channel::Long)
            .judge(true),
    );
    let short = h.submit(short_task("short"));
    let short_conn = connects(&h.log).last().expect("short connect").0;
    let frames = s.frames(&h.log);
    assert_eq!(frames.iter().filter(|f| f.cmd_id >= 100).count(), 3);
    let judged_seq = frames.iter().find(|f| f.cmd_id == 102).map(|f| f.seq);
    reply(&mut h, &s, Frame::new(102, judged_seq.unwrap_or(0), "held"));
    assert_eq!(judges(&h.log).len(), 1);
    let before = connects(&h.log).len();

    h.e.set_long_link_enabled(h.now, false);
    let a = h.drain();
    assert!(h.e.long_link_disabled());
    assert!(closes(&a).contains(&s.conn), "the long link is closed");
    assert!(a.contains(&Output::Event(Event::LongLink(LinkStatus::Disabled))));
    assert_eq!(
        h.outcome(long_only),
        Err(LocalError::LongLinkDisabled.into())
    );
    // The Both task was interrupted on the long link and goes short now.
    let moved = connects(&a);
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].1.port(), 80);
    assert!(h.finished(short).is_empty() && h.finished(judged).is_empty());
    serve_short(&mut h, moved[0].0, "ok");
    serve_short(&mut h, short_conn, "ok");
    assert!(h.outcome(both).is_ok());
    assert!(h.outcome(short).is_ok());
    // A long-only task submitted now ends at once; a Both one goes short.
    let late_long = h.submit(Task::new(103, "", "late").channel(Channel::Long));
    assert_eq!(
        h.outcome(late_long),
        Err(LocalError::LongLinkDisabled.into())
    );
    let late_both = h.submit(Task::new(104, "/cgi", "late both"));
    let late_conn = connects(&h.log).last().expect("late connect").0;
    serve_short(&mut h, late_conn, "ok");
    assert!(h.outcome(late_both).is_ok());
    // The verdict on the held response asks a retry: nowhere to go.
    assert!(h.e.judge(h.now, judged, Verdict::Retry));
    h.drain();
    assert_eq!(h.outcome(judged), Err(LocalError::LongLinkDisabled.into()));
    // No reconnect, however long we wait.
    h.advance(secs(120));
    let after = connects(&h.log);
    assert!(after[before..].iter().all(|(_, a)| a.port() == 80));
    assert_eq!(h.e.long_in_flight(), 0);
    assert_eq!(after.len(), before + 2, "the moved task and the late one");
    h.e.make_sure_long_link_connected(h.now);
    assert!(connects(&h.drain()).is_empty(), "disabled means disabled");

    // Enabling connects at once and carries long tasks again.
    h.e.set_long_link_enabled(h.now, true);
    let a = h.drain();
    assert!(!h.e.long_link_disabled());
    let (conn, addr) = *connects(&a)
        .iter()
        .find(|(_, a)| a.port() == 8080)
        .expect("reconnect at once");
    assert!(a.contains(&Output::Event(Event::LongLink(LinkStatus::Connecting))));
    h.ev(conn, ConnEvent::Connected);
    h.e.identify_answer(h.now, IdentifyDecision::Never);
    h.drain();
    s = LongServer {
        conn,
        addr,
        dec: FrameDecoder::new(CodecConfig::default()),
    };
    let back = h.submit(Task::new(105, "", "back").channel(Channel::Long));
    let f = s.frames(&h.log);
    let seq = f.iter().find(|f| f.cmd_id == 105).map(|f| f.seq);
    reply(&mut h, &s, Frame::new(105, seq.unwrap_or(0), "yes"));
    assert!(h.outcome(back).is_ok());
}

#[test]
fn mars_tasks_that_chose_the_long_link_at_submit_go_short_when_it_is_disabled() {
    let mut h = H::new(long_cfg(Profile::Mars));
    let mut s = long_up(&mut h);
    // Mars decides at submit: the link is up, so both go long.
    let a = h.submit(Task::new(100, "/cgi", "a"));
    let b = h.submit(Task::new(101, "/cgi", "b"));
    assert_eq!(
        s.frames(&h.log).iter().filter(|f| f.cmd_id >= 100).count(),
        2
    );
    let before = connects(&h.log).len();
    h.e.set_long_link_enabled(h.now, false);
    h.drain();
    h.advance(secs(5));
    let shorts: Vec<_> = connects(&h.log)[before..].to_vec();
    assert_eq!(shorts.len(), 2, "both retried on the short link");
    assert!(shorts.iter().all(|(_, a)| a.port() == 80));
    serve_all(&mut h, &shorts);
    assert!(h.outcome(a).is_ok());
    assert!(h.outcome(b).is_ok());
}

#[test]
fn disabling_twice_or_without_a_long_link_does_nothing() {
    let mut h = H::new(short_cfg(Profile::Stn));
    h.e.set_long_link_enabled(h.now, false);
    assert!(h.drain().is_empty());
    assert!(!h.e.long_link_disabled());
    let mut h = H::new(long_cfg(Profile::Stn));
    h.e.set_long_link_enabled(h.now, true);
    assert!(h.drain().is_empty(), "already enabled");
    h.e.set_long_link_enabled(h.now, false);
    h.drain();
    h.e.set_long_link_enabled(h.now, false);
    assert!(h.drain().is_empty(), "already disabled");
}
