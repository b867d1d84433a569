//! Mars's app hooks through the public `Client` API, on every adapter:
//! per-attempt bodies (Req2Buf), identify with the app's verdict, report and
//! link-status streams, ban-history export and import, runtime controls.
//! The reference server echoes bodies and answers identify with
//! `identify_response_body` (a fixed prefix and the packet's body).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stn_driver::proto::Error as ProtoError;
use stn_driver::proto::IdentifyDecision;
use stn_driver::proto::{BodySource, Channel, Task};
use stn_driver::proto::{LinkStatus, Verdict};
use stn_driver::{Events, HistoryError};
use stn_server::ServerConfig;

use super::{bounded, builder, settle, stats_eventually, Harness, ServerHost};

/// The next link status, bounded (the suite's own bound ends a hang).
async fn next_status<H: Harness>(status: &mut Events<LinkStatus>) -> LinkStatus {
    bounded::<H, _>(Duration::from_secs(20), status.next())
        .await
        .expect("a link status in time")
        .expect("stream open")
}

/// Reads statuses until the link is up; returns its endpoint.
async fn until_connected<H: Harness>(status: &mut Events<LinkStatus>) -> std::net::SocketAddr {
    loop {
        if let LinkStatus::Connected { addr } = next_status::<H>(status).await {
            return addr;
        }
    }
}

/// Req2Buf: the body is built for every attempt, so a need-auth task whose
/// first answer says "session expired" is resent, after the re-login, with
/// bytes built under the new session (short and long link).
pub async fn hook_body_per_attempt<H: Harness>() {
    let server = ServerHost::healthy();
    let session = Arc::new(AtomicU32::new(1));
    let judge_session = session.clone();
    let client = builder::<H>(&server)
        .judge(move |req| {
            if req.response.body.starts_with(b"session-1 ") {
                // The server says the session expired: the app logs in again.
                judge_session.store(2, Ordering::SeqCst);
                Verdict::SessionTimeout
            } else {
                Verdict::Accept
            }
        })
        .build()
        .expect("client");
    client.set_authed(true);
    for channel in [Channel::Short, Channel::Long] {
        session.store(1, Ordering::SeqCst);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, log) = (session.clone(), seen.clone());
        let source = BodySource::new(move |req| {
            log.lock().expect("log").push((req.attempt, req.channel));
            format!(
                "session-{} attempt-{}",
                s.load(Ordering::SeqCst),
                req.attempt
            )
            .into()
        });
        let task = Task::new(8, "/mars/hello2", "fixed body, never sent")
            .channel(channel)
            .need_authed(true)
            .body_source(source);
        let c = client.clone();
        let send = H::spawn(async move { c.send_detailed(task).await });
        // The judge saw the expired session: log in again.
        while session.load(Ordering::SeqCst) != 2 {
            H::sleep(Duration::from_millis(5)).await;
        }
        client.set_authed(true);
        let done = send.await;
        let reply = done.outcome.expect("the retry under the new session");
        assert_eq!(reply.body, "session-2 attempt-2", "{channel:?}");
        assert_eq!(done.attempts, 2, "{channel:?}");
        assert_eq!(
            *seen.lock().expect("log"),
            vec![(1, channel), (2, channel)],
            "one body per attempt"
        );
    }
    // A plain fixed-body send is unchanged.
    let r = client
        .send(Task::new(8, "/mars/hello2", "plain").channel(Channel::Short))
        .await
        .expect("plain send");
    assert_eq!(r.body, "plain");
    client.shutdown().await;
}

/// Identify per connection with the app's verdict: the first connection's
/// token is rejected, the link goes down, and the next connection sends a
/// token built anew, which is accepted. `make_sure_long_link_connected`
/// brings the link back without a task.
pub async fn hook_identify_rotates_and_rejects<H: Harness>() {
    let server = ServerHost::healthy();
    let built = Arc::new(Mutex::new(Vec::new()));
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let (b, v) = (built.clone(), verdicts.clone());
    let client = builder::<H>(&server)
        .identify_with(move |conn| {
            let mut built = b.lock().expect("built");
            built.push(conn.addr);
            let n = built.len();
            IdentifyDecision::Now {
                cmd_id: 9,
                body: format!("token-{n}").into(),
            }
        })
        .identify_verdict(move |answer| {
            let ok = !answer.body.ends_with(b"token-1");
            v.lock().expect("verdicts").push((answer.cmd_id, ok));
            ok
        })
        .build()
        .expect("client");
    let mut status = client.link_status();
    // The first connection's identify is rejected, which takes the link
    // down: the stream shows it (as a change, or as the status it starts
    // with if the subscription arrived after) whatever the scheduling.
    while verdicts.lock().expect("verdicts").is_empty() {
        H::sleep(Duration::from_millis(5)).await;
    }
    while next_status::<H>(&mut status).await != LinkStatus::Disconnected {}
    client.make_sure_long_link_connected();
    assert_eq!(until_connected::<H>(&mut status).await, server.long());
    let r = client
        .send(Task::new(8, "", "after identify").channel(Channel::Long))
        .await
        .expect("long task on the accepted link");
    assert_eq!(r.body, "after identify");
    stats_eventually::<H>(&server, |s| s.identifies_answered >= 2).await;
    while verdicts.lock().expect("verdicts").len() < 2 {
        H::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        verdicts.lock().expect("verdicts")[..2],
        [(9, false), (9, true)]
    );
    let built = built.lock().expect("built").clone();
    assert!(built.len() >= 2, "a packet per connection: {built:?}");
    assert!(
        built.iter().all(|a| *a == Some(server.long())),
        "each built for its connection's endpoint: {built:?}"
    );
    client.shutdown().await;
    // What was buffered is still read, then the stream ends.
    bounded::<H, _>(Duration::from_secs(5), async {
        while status.next().await.is_some() {}
    })
    .await
    .expect("stream ends on shutdown");
}

/// Per-attempt reports reach the app as a stream (endpoint, connect time,
/// bytes), and a stream read too slowly drops its oldest entries and says
/// how many.
pub async fn hook_reports_stream<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server)
        .event_capacity(2)
        .build()
        .expect("client");
    let mut reports = client.reports();
    let task = |body: &str| {
        Task::new(8, "/mars/hello2", body.to_owned())
            .channel(Channel::Short)
            .limit_frequency(false)
    };
    client.send(task("one")).await.expect("short");
    let r = reports.next().await.expect("a report");
    assert_eq!(r.attempt, 1);
    assert_eq!(r.channel, Channel::Short);
    assert_eq!(r.endpoint, Some(server.short()));
    assert!(r.connect_time.is_some(), "{r:?}");
    assert!(r.bytes_sent > 3 && r.bytes_received >= 3, "{r:?}");
    assert_eq!(r.error, None);
    client
        .send(Task::new(8, "", "long").channel(Channel::Long))
        .await
        .expect("long");
    let r = reports.next().await.expect("a report");
    assert_eq!(
        (r.channel, r.endpoint),
        (Channel::Long, Some(server.long()))
    );
    // Five more attempts unread in a stream of two: the three oldest go.
    for i in 0..5 {
        client.send(task(&format!("t{i}"))).await.expect("short");
    }
    assert_eq!(reports.lagged(), 3);
    let kept: Vec<u64> = std::iter::from_fn(|| reports.try_next())
        .map(|r| r.bytes_sent)
        .collect();
    assert_eq!(kept.len(), 2);
    client.shutdown().await;
}

/// Ban history exported from one client imports into the next; bytes that
/// are not a history are refused and change nothing.
pub async fn hook_ban_history<H: Harness>() {
    let server = ServerHost::healthy();
    let first = builder::<H>(&server).build().expect("client");
    first
        .send(Task::new(8, "/mars/hello2", "x").channel(Channel::Short))
        .await
        .expect("short");
    let saved = first.export_ban_history().await.expect("running");
    first.shutdown().await;
    assert_eq!(first.export_ban_history().await, None, "after shutdown");
    assert_eq!(
        first.import_ban_history(saved.clone()).await,
        Err(HistoryError::Shutdown)
    );

    let second = builder::<H>(&server).build().expect("client");
    let accepted = second
        .import_ban_history(saved)
        .await
        .expect("valid history");
    assert!(accepted >= 1, "the endpoint's record: {accepted}");
    let err = second
        .import_ban_history(b"not a history".to_vec())
        .await
        .expect_err("garbage");
    assert!(matches!(err, HistoryError::Import(_)), "{err:?}");
    assert!(err.to_string().contains("ban history"), "{err}");
    second.shutdown().await;
}

/// `clear_tasks` ends every pending task once, as cancelled; `redo_tasks`
/// restarts a running attempt, and the task still succeeds.
pub async fn hook_clear_and_redo<H: Harness>() {
    let server = ServerHost::start(ServerConfig {
        delay: Duration::from_millis(1500),
        ..ServerConfig::default()
    });
    let client = builder::<H>(&server).build().expect("client");
    let sends: Vec<_> = (0..3)
        .map(|i| {
            let c = client.clone();
            let task = Task::new(8, "/mars/hello2", format!("c{i}")).channel(Channel::Short);
            H::spawn(async move { c.send(task).await })
        })
        .collect();
    let snap = settle::<H, _>(&client, |s| s.engine_tasks == 3).await;
    assert_eq!(snap.engine_tasks, 3, "{snap:?}");
    client.clear_tasks();
    for send in sends {
        let err = send.await.expect_err("a cleared task ends with an error");
        assert_eq!(err.task_error(), Some(&ProtoError::Cancelled), "{err:?}");
    }
    let snap = settle::<H, _>(&client, |s| s.engine_tasks == 0 && s.waiting == 0).await;
    assert_eq!((snap.engine_tasks, snap.waiting), (0, 0), "{snap:?}");

    let c = client.clone();
    let task = Task::new(8, "/mars/hello2", "redone").channel(Channel::Short);
    let send = H::spawn(async move { c.send_detailed(task).await });
    let snap = settle::<H, _>(&client, |s| s.short_in_flight == 1).await;
    assert_eq!(snap.short_in_flight, 1, "{snap:?}");
    client.redo_tasks();
    let done = send.await;
    assert_eq!(done.outcome.expect("redone task").body, "redone");
    assert_eq!(done.attempts, 2, "the interrupted attempt and its redo");
    client.shutdown().await;
}
