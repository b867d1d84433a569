//! The app's runtime controls (Mars `RedoTasks`, `ClearTasks`,
//! `MakesureLonglinkConnected`): commands that act on every task or on the
//! long link at once.

use crate::error::{Error, LocalError};
use crate::task::{Channel, TaskId};
use crate::time::Instant;

use super::{Engine, Link, Stopped};

impl Engine {
    /// Redoes every task (Mars `RedoTasks`): forgets resolved addresses,
    /// stops every running short-link attempt and starts it again
    /// ([`LocalError::Interrupted`]: free under
    /// [`Config::free_retry_on_network_change`](super::Config::free_retry_on_network_change),
    /// else it uses a retry), reconnects the long link at once (its tasks in
    /// flight are redone the same way) and replays parked tasks. Bans and
    /// timeouts are kept: unlike a network change, the network is the same.
    pub fn redo_tasks(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        self.dns.clear();
        self.redo_short_attempts(now);
        if let Some(long) = self.long.as_mut() {
            long.on_network_change(now);
        }
        self.pump_long(now);
        self.replay_zombies(now);
        self.run(now);
    }

    /// Ends every task now with [`Error::Cancelled`] (Mars `ClearTasks`,
    /// which drops them silently: here each still ends exactly once) and
    /// closes their connections. Returns how many there were.
    pub fn clear_tasks(&mut self, now: Instant) -> usize {
        let now = self.clock.observe(now);
        let ids: Vec<TaskId> = self.tasks.keys().copied().collect();
        for &id in &ids {
            self.stop_with_report(now, id, Error::Cancelled);
            self.finish(id, Err(Error::Cancelled));
        }
        self.run(now);
        ids.len()
    }

    /// Asks for the long link now if it is down (Mars
    /// `MakesureLonglinkConnected`): its monitor connects as soon as its
    /// schedule allows (at once unless a connect just failed). Nothing
    /// happens if the link is up or connecting, or there is no long link.
    pub fn make_sure_long_link_connected(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.shut_down {
            return;
        }
        if let Some(long) = self.long.as_mut().filter(|l| !l.is_connected()) {
            long.task_needs_link(now);
        }
        self.pump_long(now);
        self.run(now);
    }

    /// Stops every running short-link attempt as interrupted and lets each
    /// task retry or end (a network change and [`redo_tasks`](Self::redo_tasks)).
    pub(super) fn redo_short_attempts(&mut self, now: Instant) {
        let running: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.running_on(Link::Short).is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in running {
            if let Some(Stopped::Running(attempt)) = self.stop_attempt(now, id) {
                let error = LocalError::Interrupted.into();
                let report = self.bare_report(id, attempt, now, &error);
                self.attempt_failed(now, id, error, Channel::Short, report);
            }
        }
    }
}
