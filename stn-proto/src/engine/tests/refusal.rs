//! A connect whose every candidate refused (`Config::connect_refusal_ends_task`,
//! stn): the tasks that can only use that link end within that one connect
//! round with the refusal and its address; Mars retries the short link and
//! leaves long-link waiters queued until their task timeout.

use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap_or_else(|_| unreachable!())
}

/// A client with two long-link endpoints on port 8080.
fn two_long(profile: Profile) -> Config {
    Config::for_profile(profile)
        .short_link_ips([ip("10.0.0.1")], 80)
        .long_link_ips([ip("10.0.1.1"), ip("10.0.1.2")], 8080)
}

/// Submits a long-only task at start and refuses every long-link connect
/// until the first connect round has failed (the link reported down).
fn long_only_refused(profile: Profile) -> (H, TaskId) {
    let mut h = H::new(two_long(profile));
    let id = h.submit(Task::new(3, "", "x").channel(Channel::Long).retry_count(2));
    for _ in 0..100 {
        refuse_pending(&mut h, 8080);
        if link_events(&h, LinkStatus::Disconnected) > 0 {
            return (h, id);
        }
        h.advance(ms(50));
    }
    panic!("the first long-link connect did not fail: {:?}", h.log);
}

/// Refuses every connect to `port` logged and not yet answered.
fn refuse_pending(h: &mut H, port: u16) {
    loop {
        let open: Vec<ConnId> = connects(&h.log)
            .into_iter()
            .filter(|(c, a)| a.port() == port && h.e.out.owns(*c))
            .map(|(c, _)| c)
            .collect();
        let Some(&conn) = open.first() else {
            return;
        };
        h.ev(conn, ConnEvent::ConnectFailed(ConnectError::Refused));
    }
}

/// How many times the long link reported `status`.
fn link_events(h: &H, status: LinkStatus) -> usize {
    h.log
        .iter()
        .filter(|a| **a == Output::Event(Event::LongLink(status)))
        .count()
}

#[test]
fn a_long_only_task_ends_when_every_long_link_candidate_refused() {
    let (h, id) = long_only_refused(Profile::Stn);
    // The last refusal and its address, within the one round: no reconnect
    // was waited for.
    match h.outcome(id) {
        Err(Error::Connect {
            addr: Some(a),
            error: ConnectError::Refused,
        }) => assert!([addr("10.0.1.1:8080"), addr("10.0.1.2:8080")].contains(&a)),
        other => panic!("expected the refusal with its address, got {other:?}"),
    }
    // One connect round: the link was not tried again.
    assert_eq!(link_events(&h, LinkStatus::Connecting), 1);
}

#[test]
fn every_queued_long_only_task_ends_with_the_refusal() {
    let mut h = H::new(long_cfg(Profile::Stn));
    let ids: Vec<TaskId> = (0..3)
        .map(|i| h.submit(Task::new(3, "", format!("x{i}")).channel(Channel::Long)))
        .collect();
    refuse_pending(&mut h, 8080);
    for id in ids {
        assert_eq!(
            h.outcome(id),
            Err(Error::Connect {
                addr: Some(addr("10.0.1.1:8080")),
                error: ConnectError::Refused,
            })
        );
    }
}

#[test]
fn mars_leaves_long_link_waiters_queued_until_their_task_timeout() {
    for profile in [Profile::Mars, Profile::Mars2017] {
        let (mut h, id) = long_only_refused(profile);
        assert!(h.finished(id).is_empty(), "{profile:?}: still waiting");
        // It keeps waiting through the reconnects, refused each time, and
        // ends at its deadline.
        for _ in 0..600 {
            if !h.finished(id).is_empty() {
                break;
            }
            h.advance(ms(100));
            refuse_pending(&mut h, 8080);
        }
        assert_eq!(
            h.outcome(id),
            Err(Error::Timeout(TimeoutKind::Task)),
            "{profile:?}"
        );
    }
}

#[test]
fn a_refusal_among_timeouts_is_not_deterministic() {
    // One endpoint refuses, the other's SYN goes unanswered: the network may
    // be at fault, so the task keeps waiting for the long link.
    let mut h = H::new(two_long(Profile::Stn));
    let id = h.submit(Task::new(3, "", "x").channel(Channel::Long));
    let first = connects(&h.log)
        .into_iter()
        .find(|(_, a)| a.port() == 8080)
        .expect("long connect");
    h.ev(first.0, ConnEvent::ConnectFailed(ConnectError::Refused));
    for _ in 0..100 {
        let second = connects(&h.log)
            .into_iter()
            .filter(|(_, a)| a.port() == 8080)
            .find(|(c, _)| *c != first.0);
        if let Some((conn, _)) = second {
            h.ev(conn, ConnEvent::ConnectFailed(ConnectError::TimedOut));
            break;
        }
        h.advance(ms(50));
    }
    assert!(!h.e.long_link_connected());
    assert!(h.finished(id).is_empty(), "still waiting: {:?}", h.log);
}

/// A short-only task with retries and a total timeout whose one endpoint
/// refuses; returns the harness, the task and how many connects were made
/// before it ended (or 10 s passed).
fn short_refused(profile: Profile) -> (H, TaskId, usize) {
    let mut h = H::new(unhedged(profile));
    let id = h.submit(
        short_task("x")
            .retry_count(3)
            .total_timeout(Duration::from_secs(30)),
    );
    for _ in 0..100 {
        refuse_pending(&mut h, 80);
        if !h.finished(id).is_empty() {
            break;
        }
        h.advance(ms(100));
    }
    let tried = connects(&h.log).len();
    (h, id, tried)
}

#[test]
fn a_short_only_task_ends_when_every_candidate_refused() {
    let (h, id, tried) = short_refused(Profile::Stn);
    assert_eq!(tried, 1, "no retry, no replay");
    assert_eq!(
        h.outcome(id),
        Err(Error::Connect {
            addr: Some(addr("10.0.0.1:80")),
            error: ConnectError::Refused,
        })
    );
    // Its one attempt is reported with the refusal.
    let reports = h.reports(id);
    assert_eq!(reports.len(), 1);
    assert!(matches!(
        reports[0].error,
        Some(Error::Connect {
            error: ConnectError::Refused,
            ..
        })
    ));
}

#[test]
fn mars_retries_a_short_link_refusal() {
    let (h, id, tried) = short_refused(Profile::Mars);
    assert!(
        tried >= 4,
        "the first attempt and its three retries: {tried}"
    );
    assert!(h.finished(id).len() <= 1);
}

#[test]
fn a_long_only_task_submitted_after_the_refusal_is_told_at_once() {
    let (mut h, first) = long_only_refused(Profile::Stn);
    assert!(h.outcome(first).is_err());
    // Within the monitor's task interval no connect starts for it: the
    // refusal the last round met is its answer.
    h.advance(ms(500));
    let late = h.submit(Task::new(3, "", "y").channel(Channel::Long));
    assert_eq!(link_events(&h, LinkStatus::Connecting), 1, "no new round");
    assert!(matches!(
        h.outcome(late),
        Err(Error::Connect {
            error: ConnectError::Refused,
            ..
        })
    ));
    // A task that may use the short link is not affected.
    let both = h.submit(Task::new(3, "/cgi", "z").channel(Channel::Both));
    assert!(h.finished(both).is_empty());
    // Once a connect round starts again, a task waits for it.
    h.advance(secs(5));
    assert_eq!(link_events(&h, LinkStatus::Connecting), 2, "the next round");
    let waiting = h.submit(Task::new(3, "", "w").channel(Channel::Long));
    assert!(h.finished(waiting).is_empty());
}

#[test]
fn mars_queues_a_long_only_task_submitted_after_the_refusal() {
    let (mut h, _) = long_only_refused(Profile::Mars);
    h.advance(ms(500));
    let late = h.submit(Task::new(3, "", "y").channel(Channel::Long));
    assert!(h.finished(late).is_empty());
}
