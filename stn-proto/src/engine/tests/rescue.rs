//! The long link's rescue (`Config::long_link_rescue`, stn): a task with no
//! retry left whose first-packet timer drops the link is sent once more on
//! the next connection, within its deadline.

use super::*;

/// Brings the next long-link connection up after `old` (the latest) was
/// dropped: waits (at most 10 s) for the monitor's connect, connects it and
/// answers identify.
fn next_link(h: &mut H, old: ConnId) -> LongServer {
    for _ in 0..100 {
        let found = connects(&h.log)
            .into_iter()
            .rfind(|(_, a)| a.port() == 8080)
            .filter(|(c, _)| *c != old);
        if let Some((conn, addr)) = found {
            h.ev(conn, ConnEvent::Connected);
            h.e.identify_answer(h.now, IdentifyDecision::Never);
            h.drain();
            return LongServer {
                conn,
                addr,
                dec: FrameDecoder::new(CodecConfig::default()),
            };
        }
        h.advance(ms(100));
    }
    panic!("no reconnect after the link was dropped: {:?}", h.log);
}

/// The frames of task `id` the server got on `s`'s connection.
fn task_frames(h: &H, s: &mut LongServer, id: TaskId) -> Vec<Frame> {
    s.frames(&h.log)
        .into_iter()
        .filter(|f| f.seq == id.get())
        .collect()
}

/// Submits `task` on the long link of a fresh engine with its link up, and
/// lets the first attempt's 12 s first-packet timer drop
/// the link. Returns the engine, the task and the dropped link.
fn stalled(cfg: Config, task: Task) -> (H, TaskId, LongServer) {
    let mut h = H::new(cfg);
    let mut s = long_up(&mut h);
    let id = h.submit(task.channel(Channel::Long));
    assert_eq!(task_frames(&h, &mut s, id).len(), 1, "sent on the link");
    let a = h.advance(secs(12) + ms(1));
    assert!(closes(&a).contains(&s.conn), "the stalled link is dropped");
    assert_eq!(
        h.reports(id)[0].error,
        Some(Error::Timeout(TimeoutKind::FirstPacket))
    );
    (h, id, s)
}

fn attempts(h: &H, id: TaskId) -> u32 {
    h.log
        .iter()
        .find_map(|a| match a {
            Output::Event(Event::TaskFinished {
                id: i, attempts, ..
            }) if *i == id => Some(*attempts),
            _ => None,
        })
        .expect("finished")
}

#[test]
fn a_stalled_task_at_retry_0_is_resent_once_on_the_next_link() {
    let task = Task::new(1, "", "a").retry_count(0).hedge(true);
    let (mut h, id, old) = stalled(long_cfg(Profile::Stn), task);
    assert!(h.finished(id).is_empty(), "rescued, not ended");
    let mut s = next_link(&mut h, old.conn);
    let sent = task_frames(&h, &mut s, id);
    assert_eq!(sent.len(), 1, "resent on the new connection");
    reply(&mut h, &s, Frame::new(1, id.get(), "pong"));
    assert_eq!(
        h.outcome(id).map(|r| r.body),
        Ok(Bytes::from_static(b"pong"))
    );
    // The resend is an attempt of its own, with its own report.
    assert_eq!(attempts(&h, id), 2);
    let r = h.reports(id);
    assert_eq!(r.len(), 2);
    assert_eq!((r[1].attempt, r[1].error.clone()), (2, None));
    assert!(h.now < T0 + secs(20), "within the retry-0 deadline");
}

#[test]
fn a_task_that_must_not_be_sent_twice_is_not_rescued() {
    // Not marked as safe to replay (the default).
    let task = Task::new(1, "", "a").retry_count(0);
    let (h, id, _) = stalled(long_cfg(Profile::Stn), task);
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::FirstPacket)));
    // Hedging off for every task turns the rescue off too.
    let mut cfg = long_cfg(Profile::Stn);
    cfg.hedge = None;
    let (h, id, _) = stalled(cfg, Task::new(1, "", "a").retry_count(0).hedge(true));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::FirstPacket)));
    // Mars has no rescue.
    let (h, id, _) = stalled(
        long_cfg(Profile::Mars),
        Task::new(1, "", "a").retry_count(0).hedge(true),
    );
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::FirstPacket)));
}

#[test]
fn a_second_stall_ends_the_task() {
    // One retry: the first stall uses it, the second is rescued, the third
    // ends the task (its deadline, 40 s, is not reached).
    let task = Task::new(1, "", "a").retry_count(1).hedge(true);
    let (mut h, id, old) = stalled(long_cfg(Profile::Stn), task);
    let mut s = next_link(&mut h, old.conn);
    assert_eq!(task_frames(&h, &mut s, id).len(), 1, "the retry");
    h.advance(secs(12) + ms(1));
    assert!(h.finished(id).is_empty(), "rescued after the retry's stall");
    let mut s = next_link(&mut h, s.conn);
    assert_eq!(task_frames(&h, &mut s, id).len(), 1, "the rescue");
    let a = h.advance(secs(12) + ms(1));
    assert!(
        closes(&a).contains(&s.conn),
        "the rescue's stall drops the link"
    );
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::FirstPacket)));
    assert_eq!(attempts(&h, id), 3);
    assert!(h.now < T0 + secs(40));
}

#[test]
fn the_deadline_bounds_the_rescue() {
    let task = Task::new(1, "", "a").retry_count(0).hedge(true);
    let (mut h, id, old) = stalled(long_cfg(Profile::Stn), task);
    let mut s = next_link(&mut h, old.conn);
    assert_eq!(task_frames(&h, &mut s, id).len(), 1);
    // No answer: the retry-0 deadline, (15 s + 5 s) × 1 from submission,
    // ends it, and only it (stn: the link stays).
    h.advance_to(T0 + secs(20) - ms(1));
    assert!(h.finished(id).is_empty());
    let a = h.advance_to(T0 + secs(20));
    assert_eq!(h.outcome(id), Err(Error::Timeout(TimeoutKind::Task)));
    assert!(!closes(&a).contains(&s.conn));
    assert_eq!(attempts(&h, id), 2);
}
