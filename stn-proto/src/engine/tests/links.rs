//! Named long links besides the main one: each connects to its own
//! endpoints, carries the tasks that name it, and says which link it is in
//! its status, pushes, identify and reports; a removed link ends its tasks
//! once, naming itself.

use super::*;
use crate::io::CloseReason;
use crate::link_name::LinkName;

fn name(s: &str) -> LinkName {
    LinkName::new(s).unwrap_or_else(|e| panic!("{e}"))
}

fn endpoints(ip_s: &str, port: u16) -> LongLinkEndpoints {
    LongLinkEndpoints {
        ips: vec![ip(ip_s)],
        ports: vec![port],
        ..LongLinkEndpoints::default()
    }
}

/// The main long link on 10.0.1.1:8080, `push` on 10.0.2.1:8082 and `bad`
/// on 10.0.3.1:8083, every one with the profile's long-link settings.
fn three_links(profile: Profile) -> H {
    let mut h = H::new(long_cfg(profile));
    for (n, ip_s, port) in [("push", "10.0.2.1", 8082), ("bad", "10.0.3.1", 8083)] {
        let spec = LinkSpec::new(endpoints(ip_s, port), h.e.config().long().clone());
        h.e.add_link(h.now, name(n), spec)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    h.advance(ms(1));
    h
}

/// Connections to `port` opened and not closed or failed since.
fn open_to(h: &H, port: u16) -> Vec<ConnId> {
    let mut open = Vec::new();
    for a in &h.log {
        match a {
            Output::Io(IoAction::Connect { conn, addr }) if addr.port() == port => open.push(*conn),
            Output::Io(IoAction::Close { conn }) => open.retain(|c| c != conn),
            _ => {}
        }
    }
    open
}

/// The statuses `link` reported, in order.
fn statuses(h: &H, link: &LinkName) -> Vec<LinkStatus> {
    h.log
        .iter()
        .filter_map(|a| match a {
            Output::Event(Event::Link { link: l, event }) if l == link => match **event {
                Event::LongLink(s) => Some(s),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Brings up the named link's connection to `port`; identify answered
/// "never" on that link.
fn link_up(h: &mut H, link: &LinkName, port: u16) -> LongServer {
    let conn = *open_to(h, port).first().expect("a connect to the link");
    let a = h.ev(conn, ConnEvent::Connected);
    let ask = Output::Event(Event::Link {
        link: link.clone(),
        event: Box::new(Event::AskIdentify),
    });
    assert!(a.contains(&ask), "{link} asks for its identify: {a:?}");
    assert!(
        !a.contains(&Output::Event(Event::AskIdentify)),
        "not as the main link"
    );
    h.e.link_identify_answer(h.now, link, IdentifyDecision::Never);
    h.drain();
    let addr = connects(&h.log)
        .into_iter()
        .find(|(c, _)| *c == conn)
        .map(|(_, a)| a)
        .unwrap_or_else(|| unreachable!());
    LongServer {
        conn,
        addr,
        dec: FrameDecoder::new(CodecConfig::default()),
    }
}

/// Answers every task frame the server saw with "resp" and the body.
fn answer_all(h: &mut H, s: &mut LongServer) {
    let frames = s.frames(&h.log);
    for f in frames.iter().filter(|f| f.cmd_id >= 100) {
        let body = [&b"resp-"[..], &f.body[..]].concat();
        reply(h, s, Frame::new(f.cmd_id, f.seq, body));
    }
}

#[test]
fn two_links_one_refused_its_tasks_fail_with_the_cause_the_others_succeed() {
    let mut h = three_links(Profile::Stn);
    let (push, bad) = (name("push"), name("bad"));
    let long = |body: &str| Task::new(100, "", body.to_owned()).channel(Channel::Long);
    let main_id = h.submit(long("m"));
    let push_id = h.submit(long("p").on_link(push.clone()));
    let bad_ids: Vec<TaskId> = (0..2)
        .map(|i| h.submit(long(&format!("b{i}")).on_link(bad.clone())))
        .collect();
    // Every id is distinct though each link's engine numbers its own.
    let mut all = vec![main_id, push_id];
    all.extend(&bad_ids);
    assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 4);
    // The failing link: its only endpoint refuses.
    let refused = *open_to(&h, 8083).first().expect("bad connects");
    h.ev(refused, ConnEvent::ConnectFailed(ConnectError::Refused));
    for id in &bad_ids {
        match h.outcome(*id) {
            Err(Error::Connect {
                addr: Some(a),
                error: ConnectError::Refused,
            }) => assert_eq!(a, "10.0.3.1:8083".parse().unwrap()),
            other => panic!("expected the refusal on bad, got {other:?}"),
        }
    }
    assert!(statuses(&h, &bad).contains(&LinkStatus::Disconnected));
    // The others come up and carry their own tasks.
    let mut main = long_up(&mut h);
    let mut ps = link_up(&mut h, &push, 8082);
    assert_eq!(
        statuses(&h, &push).last(),
        Some(&LinkStatus::Connected { addr: ps.addr })
    );
    assert_eq!(h.e.link_connected(&push), Some(true));
    assert_eq!(h.e.link_connected(&bad), Some(false));
    assert!(h.e.long_link_connected());
    answer_all(&mut h, &mut main);
    answer_all(&mut h, &mut ps);
    assert_eq!(h.outcome(main_id).expect("main ok").body, &b"resp-m"[..]);
    assert_eq!(h.outcome(push_id).expect("push ok").body, &b"resp-p"[..]);
    // Each report names its link (the main link: none).
    let link_of = |h: &H, id| {
        h.reports(id)
            .iter()
            .map(|r| r.link.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(link_of(&h, main_id), vec![None]);
    assert_eq!(link_of(&h, push_id), vec![Some(push.clone())]);
    assert_eq!(h.reports(push_id)[0].endpoint, Some(ps.addr));
    assert_eq!(link_of(&h, bad_ids[0]), vec![]);
    // A push on a named link says which link.
    let a = reply(&mut h, &ps, Frame::new(77, 0, "pushed"));
    assert!(a.contains(&Output::Event(Event::Link {
        link: push.clone(),
        event: Box::new(Event::Push {
            cmd_id: 77,
            body: Bytes::from_static(b"pushed")
        })
    })));
    assert!(!a
        .iter()
        .any(|o| matches!(o, Output::Event(Event::Push { .. }))));
}

#[test]
fn removing_a_link_ends_its_queued_and_in_flight_tasks_once_naming_it() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let push = name("push");
    let mut long = h.e.config().long().clone();
    long.max_in_flight_tasks = 1;
    let spec = LinkSpec::new(endpoints("10.0.2.1", 8082), long);
    h.e.add_link(h.now, push.clone(), spec.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    h.advance(ms(1));
    let s = link_up(&mut h, &push, 8082);
    let task = |b: &str| Task::new(100, "", b.to_owned()).on_link(push.clone());
    let in_flight = h.submit(task("a"));
    let queued = h.submit(task("b"));
    assert_eq!(h.e.link_in_flight(&push), Some(1));
    let main_id = h.submit(Task::new(100, "", "m").channel(Channel::Long));
    assert!(h.e.has_task(in_flight) && h.e.has_task(queued));
    let a = {
        h.e.remove_link(h.now, &push)
            .unwrap_or_else(|e| panic!("{e}"));
        h.drain()
    };
    let removed: Error = LocalError::LinkRemoved { link: push.clone() }.into();
    for id in [in_flight, queued] {
        assert_eq!(h.outcome(id), Err(removed.clone()));
        assert!(!h.e.has_task(id));
    }
    assert!(removed.to_string().contains("\"push\""), "{removed}");
    // The attempt in flight is reported with the cause; the link's
    // connection closes; the main link's task is untouched.
    let r = h.reports(in_flight);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].error, Some(removed));
    assert!(a.contains(&Output::Io(IoAction::Close { conn: s.conn })));
    assert!(h.e.has_task(main_id));
    assert_eq!(h.e.open_connections(), open_to(&h, 8080).len());
    assert_eq!(h.e.links().count(), 0);
    assert_eq!(h.e.link_connected(&push), None);
    // Late events on its connection are ignored; its name is unknown now.
    h.ev(s.conn, ConnEvent::Closed(CloseReason::Reset));
    assert_eq!(
        h.e.submit(h.now, task("c")),
        Err(SubmitError::UnknownLink(push.clone()))
    );
    // Added again, it is a fresh link that runs tasks.
    h.e.add_link(h.now, push.clone(), spec)
        .unwrap_or_else(|e| panic!("{e}"));
    h.advance(ms(1));
    let mut s2 = link_up(&mut h, &push, 8082);
    assert_ne!(s2.conn, s.conn);
    let again = h.submit(task("d"));
    answer_all(&mut h, &mut s2);
    assert_eq!(h.outcome(again).expect("ok").body, &b"resp-d"[..]);
}

#[test]
fn a_task_naming_an_unknown_link_or_only_the_short_link_is_refused_at_submit() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let ghost = name("ghost");
    let err =
        h.e.submit(h.now, Task::new(100, "", "x").on_link(ghost.clone()));
    assert_eq!(err, Err(SubmitError::UnknownLink(ghost.clone())));
    assert!(err.unwrap_err().to_string().contains("\"ghost\""));
    let spec = LinkSpec::new(endpoints("10.0.2.1", 8082), h.e.config().long().clone());
    h.e.add_link(h.now, ghost.clone(), spec.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    let short = Task::new(0, "/cgi", "x").on_link(ghost.clone());
    assert_eq!(
        h.e.submit(h.now, short),
        Err(SubmitError::ShortOnlyOnLink(ghost.clone()))
    );
    assert_eq!(h.e.task_count(), 0);
    assert!(h
        .drain()
        .iter()
        .all(|o| !matches!(o, Output::Event(Event::TaskFinished { .. }))));
    // The cap, a taken name, and endpoints with nothing to connect to.
    assert_eq!(
        h.e.add_link(h.now, ghost.clone(), spec.clone()),
        Err(LinkError::Exists(ghost))
    );
    for i in 1..MAX_LINKS {
        h.e.add_link(h.now, name(&format!("l{i}")), spec.clone())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        h.e.add_link(h.now, name("one-more"), spec.clone()),
        Err(LinkError::TooMany)
    );
    h.e.remove_link(h.now, &name("l1"))
        .unwrap_or_else(|e| panic!("{e}"));
    let empty = LinkSpec::new(LongLinkEndpoints::default(), h.e.config().long().clone());
    assert_eq!(
        h.e.add_link(h.now, name("empty"), empty),
        Err(LinkError::NoEndpoints(name("empty")))
    );
    h.e.shutdown(h.now);
    assert_eq!(
        h.e.add_link(h.now, name("late"), spec),
        Err(LinkError::ShutDown)
    );
    h.drain();
    assert_eq!(h.e.open_connections(), 0);
    assert_eq!(h.e.poll_timeout(), None);
}

#[test]
fn a_link_has_its_own_heartbeat_and_identify() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let push = name("push");
    let mut long = h.e.config().long().clone();
    long.heartbeat.interval = secs(30);
    long.heartbeat.smart = crate::smart_heartbeat::SmartHeartbeatConfig::Fixed;
    let spec = LinkSpec::new(endpoints("10.0.2.1", 8082), long);
    h.e.add_link(h.now, push.clone(), spec)
        .unwrap_or_else(|e| panic!("{e}"));
    h.advance(ms(1));
    let conn = *open_to(&h, 8082).first().expect("connect");
    h.ev(conn, ConnEvent::Connected);
    // Its identify goes on its own connection.
    let decision = IdentifyDecision::Now {
        cmd_id: 42,
        body: Bytes::from_static(b"who"),
    };
    h.e.link_identify_answer(h.now, &push, decision);
    h.drain();
    let mut s = LongServer {
        conn,
        addr: "10.0.2.1:8082".parse().unwrap(),
        dec: FrameDecoder::new(CodecConfig::default()),
    };
    let frames = s.frames(&h.log);
    assert!(
        frames
            .iter()
            .any(|f| f.cmd_id == 42 && &f.body[..] == b"who"),
        "{frames:?}"
    );
    let id_frame = frames.iter().find(|f| f.cmd_id == 42).map(|f| f.seq);
    let a = reply(&mut h, &s, Frame::new(42, id_frame.unwrap_or(0), "ok"));
    assert!(a.iter().any(|o| matches!(
        o,
        Output::Event(Event::Link { link, event })
            if *link == push && matches!(**event, Event::IdentifyResponse { cmd_id: 42, .. })
    )));
    // Its noop comes on its own interval, on its own connection.
    h.advance(secs(31));
    let noops = s
        .frames(&h.log)
        .into_iter()
        .filter(|f| f.cmd_id == NOOP_CMD_ID)
        .count();
    assert!(noops >= 1, "a noop within 31 s on the named link");
}
