//! The app's verdict on a response (Mars `Buf2Resp` and its
//! `TaskFailHandleType`): hold a judged task's response, then settle the task
//! — and, for an expired session or "retry all", the other running tasks —
//! as the verdict says.

use crate::error::{Error, Response};
use crate::long_link::DisconnectReason;
use crate::task::{Channel, Task, TaskId};
use crate::time::{Duration, Instant};

use super::{Engine, Event, JudgeRequest, Pending, Report, Retry, Stage, Verdict};

impl Engine {
    /// A response arrived for `id`: end the task with it, or, if the task
    /// asked to be judged, hold it and ask the app.
    pub(super) fn respond(&mut self, id: TaskId, response: Response, report: Report) {
        let Some(e) = self.tasks.get_mut(&id) else {
            return;
        };
        if !e.task.judge {
            self.emit_report(report);
            self.finish(id, Ok(response));
            return;
        }
        let request = JudgeRequest {
            id,
            attempt: e.attempts,
            channel: report.channel,
            user_tag: e.task.user_tag,
            response: response.clone(),
        };
        e.stage = Stage::Judging(Box::new(Pending { response, report }));
        self.emit(Event::Judge(Box::new(request)));
    }

    /// The app's verdict on the response of [`Event::Judge`] for `id`.
    ///
    /// Returns `false` (and changes nothing) if `id` is not waiting for a
    /// verdict: unknown, already ended (cancelled, timed out), judged
    /// already, or the engine is shut down. See [`Verdict`] for what each
    /// verdict does. The task's deadline keeps running while the app judges.
    pub fn judge(&mut self, now: Instant, id: TaskId, verdict: Verdict) -> bool {
        let now = self.clock.observe(now);
        if self.shut_down {
            return false;
        }
        let Some(Pending {
            response,
            mut report,
        }) = self.take_judged(id).map(|p| *p)
        else {
            return false;
        };
        let channel = report.channel;
        report.ended = now;
        if verdict == Verdict::Accept {
            self.emit_report(report);
            self.finish(id, Ok(response));
            self.run(now);
            return true;
        }
        report.error = Some(Error::Decode);
        let endpoint = report.endpoint;
        self.emit_report(report);
        let mut drop_long = channel == Channel::Long;
        match verdict {
            Verdict::Accept => {}
            Verdict::End => self.end_failed(now, id, Error::Decode),
            Verdict::Retry => {
                // Mars: the endpoint served something the app cannot use.
                if let Some(addr) = endpoint {
                    self.record_endpoint(now, addr, false);
                }
                self.retry_or_end(now, id, Error::Decode, retry(channel, false, None));
            }
            Verdict::SessionTimeout => {
                // Only the session of this task's host and user expired.
                let user = self.tasks.get(&id).and_then(|e| e.task.user_id.clone());
                if let Some(key) = self.source_auth_key(id) {
                    self.auth.revoke(key);
                }
                let free = self
                    .tasks
                    .get_mut(&id)
                    .map(|e| !std::mem::replace(&mut e.session_retry_used, true))
                    .unwrap_or(false);
                self.retry_or_end(
                    now,
                    id,
                    Error::Decode,
                    retry(channel, free, Some(Duration::ZERO)),
                );
                let scope = Scope::NeedAuth { user };
                drop_long |= self.redo_running(now, id, &scope, Some(Duration::ZERO));
            }
            Verdict::RetryAll => {
                self.retry_or_end(now, id, Error::Decode, retry(channel, false, None));
                drop_long |= self.redo_running(now, id, &Scope::All, None);
            }
        }
        if drop_long && verdict != Verdict::End {
            // Mars drops the long link after a batch error on it; the tasks
            // still in flight there are redone (Interrupted).
            if let Some(long) = self.long.as_mut().filter(|l| l.is_connected()) {
                long.disconnect(now, DisconnectReason::Reset);
            }
            self.pump_long(now);
        }
        self.run(now);
        true
    }

    /// Takes the response `id` holds for a verdict, leaving it queued (out
    /// of the queue); `None` if it holds none.
    pub(super) fn take_judged(&mut self, id: TaskId) -> Option<Box<Pending>> {
        let e = self.tasks.get_mut(&id)?;
        match std::mem::replace(&mut e.stage, Stage::Queued) {
            Stage::Judging(p) => Some(p),
            other => {
                e.stage = other;
                None
            }
        }
    }

    /// The auth key a session timeout on `id` revokes: the one it waits
    /// for, or (a task that needs no auth) the one it would.
    fn source_auth_key(&self, id: TaskId) -> Option<super::AuthKey> {
        let e = self.tasks.get(&id)?;
        Some(match &e.gate {
            Some(key) => (**key).clone(),
            None => self.auth_key(&e.task, e.class),
        })
    }

    /// Stops every task (but `source`) with an attempt in flight or a
    /// response awaiting a verdict, within `scope`, and retries it (using
    /// one of its retries) or ends it with [`Error::Decode`]. Returns
    /// whether any of them was on the long link.
    fn redo_running(
        &mut self,
        now: Instant,
        source: TaskId,
        scope: &Scope,
        delay: Option<Duration>,
    ) -> bool {
        let mut hit: Vec<(TaskId, Channel)> = self
            .tasks
            .iter()
            .filter(|(id, _)| *id != source)
            .filter_map(|(id, e)| Some((id, e, e.busy_channel()?)))
            .filter(|(_, e, channel)| scope.covers(&e.task, *channel))
            .map(|(id, _, channel)| (id, channel))
            .collect();
        // In id order whatever the task table's iteration order.
        hit.sort_unstable_by_key(|(id, _)| *id);
        let mut on_long = false;
        for (id, channel) in hit {
            on_long |= channel == Channel::Long;
            self.stop_with_report(now, id, Error::Decode);
            self.retry_or_end(now, id, Error::Decode, retry(channel, false, delay));
        }
        on_long
    }
}

/// Which running tasks a batch verdict redoes.
enum Scope {
    /// Every one (Mars `kTaskFailHandleRetryAllTasks`).
    All,
    /// A session timeout (Mars `kTaskFailHandleSessionTimeout`): the
    /// need-auth tasks; on the long link only those of the same user
    /// (Mars's `LongLinkTaskManager::RetryTasks` takes the user id; its
    /// short-link manager ignores it).
    NeedAuth { user: Option<String> },
}

impl Scope {
    fn covers(&self, task: &Task, channel: Channel) -> bool {
        match self {
            Scope::All => true,
            Scope::NeedAuth { user } => {
                task.need_authed && (channel != Channel::Long || task.user_id == *user)
            }
        }
    }
}

fn retry(channel: Channel, free: bool, delay: Option<Duration>) -> Retry {
    Retry {
        channel,
        retryable: true,
        free,
        delay,
    }
}
