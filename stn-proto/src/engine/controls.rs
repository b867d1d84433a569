//! The app's runtime controls (Mars `RedoTasks`, `ClearTasks`,
//! `MakesureLonglinkConnected`, `DisableLongLink`): commands that act on
//! every task or on the long link at once.

use crate::error::{Error, LocalError};
use crate::long_link::DisconnectReason;
use crate::task::{Channel, TaskId};
use crate::time::Instant;

use std::sync::Arc;

use super::queue::Class;
use super::{Engine, Link, LinkStatus, Stage, Stopped};

impl Engine {
    /// Redoes every task (Mars `RedoTasks`): forgets resolved addresses,
    /// stops every running short-link attempt and starts it again
    /// ([`LocalError::Interrupted`]: free under the stn profile, which does
    /// not charge a retry for a network change; under the Mars profiles it
    /// uses a retry), reconnects the long link at once (its tasks in
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
        let ids: Vec<TaskId> = self.tasks.keys().collect();
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

    /// Turns the long link off or back on at run time (Mars
    /// `DisableLongLink`; Mars has no way back but a restart).
    ///
    /// Disabling closes the long link (or abandons its connect) and stops
    /// reconnecting. Its tasks in flight are interrupted
    /// ([`LocalError::Interrupted`], as on a network change) and retried:
    /// a task that may use the short link goes there, now and from then on
    /// ([`Channel::Both`], and under
    /// [`ChannelChoice::AtSubmit`](super::ChannelChoice::AtSubmit) a task
    /// that chose the long link at submit). A task that can only use the
    /// long link ends at once with
    /// [`LocalError::LongLinkDisabled`], whether it was queued, in flight
    /// or submitted later, rather than wait for a link that will not come.
    /// Mars sends every task to its short-link manager once the long link is
    /// disabled, long-only ones too, where a task without a CGI fails; stn
    /// ends them with the long link named as the cause. Mars also leaves the
    /// connection itself open; stn closes it, so the server sees the client
    /// go. [`Event::LongLink`](super::Event::LongLink) reports
    /// [`LinkStatus::Disabled`].
    ///
    /// Enabling starts a fresh long link (identify again, the reconnect
    /// schedule from the start) and connects at once. Nothing happens if
    /// the link is already in the asked state, no long link is configured,
    /// or the engine is shut down.
    ///
    /// ```
    /// use stn_proto::{Channel, Config, Engine, Event, Instant, LocalError, Output, Task};
    /// use stn_proto::config::LongLinkEndpoints;
    ///
    /// let mut config = Config::default();
    /// let mut long = LongLinkEndpoints::default();
    /// long.ips = vec!["127.0.0.1".parse().unwrap()];
    /// long.ports = vec![8081];
    /// config.set_long_link(Some(long));
    /// let mut engine = Engine::new(Instant::ZERO, config);
    /// engine.set_long_link_enabled(Instant::ZERO, false);
    /// let id = engine.submit(Instant::ZERO, Task::new(7, "", "x").channel(Channel::Long)).unwrap();
    /// let ended = std::iter::from_fn(|| engine.poll_output()).find_map(|o| match o {
    ///     Output::Event(Event::TaskFinished { id: done, outcome, .. }) if done == id => Some(outcome),
    ///     _ => None,
    /// });
    /// assert_eq!(ended, Some(Err(LocalError::LongLinkDisabled.into())));
    /// ```
    pub fn set_long_link_enabled(&mut self, now: Instant, enabled: bool) {
        let now = self.clock.observe(now);
        if self.shut_down || self.config.long_link.is_none() || enabled != self.long_disabled {
            return;
        }
        if enabled {
            self.long_disabled = false;
            self.long = Some(self.fresh_long_link(now));
        } else {
            self.leave_long_link(now);
            if let Some(long) = self.long.as_mut() {
                long.disconnect(now, DisconnectReason::User);
            }
            // Drains the closes and interrupted tasks while the link is
            // still there to say them; its monitor's timers go with it.
            self.pump_long(now);
            self.long = None;
            self.long_disabled = true;
            self.long_wants_connect = false;
            self.emit_link(LinkStatus::Disabled);
        }
        self.run(now);
    }

    /// Before the long link goes: every task that can only use it ends
    /// now (a response awaiting a verdict is left to the verdict: a retry
    /// then ends it); every other task the long link would carry is moved to
    /// the short link (one pass over the tasks: a rare command). Tasks of
    /// either link running on it are interrupted by the disconnect after.
    fn leave_long_link(&mut self, now: Instant) {
        let mut long_class: Vec<(TaskId, bool, bool)> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.class == Class::LongOnly)
            .map(|(id, e)| {
                let may_go_short = e.task.effective_channel().is_ok_and(Channel::allows_short);
                (id, may_go_short, matches!(e.stage, Stage::Judging(_)))
            })
            .collect();
        // In id order whatever the task table's iteration order.
        long_class.sort_unstable_by_key(|(id, ..)| *id);
        let gone: Error = LocalError::LongLinkDisabled.into();
        for (id, may_go_short, judging) in long_class {
            if may_go_short {
                let Some(e) = self.tasks.get(&id) else {
                    continue;
                };
                let gate = e
                    .gate
                    .as_ref()
                    .map(|_| Arc::new(self.auth_key(&e.task, Class::ShortOnly)));
                if let Some(e) = self.tasks.get_mut(&id) {
                    e.class = Class::ShortOnly;
                    e.gate.clone_from(&gate);
                }
                self.queue.reclass(id, Class::ShortOnly, gate);
            } else if !judging {
                self.stop_with_report(now, id, gone.clone());
                self.finish(id, Err(gone.clone()));
            }
        }
    }

    /// Whether the app disabled the long link
    /// ([`set_long_link_enabled`](Self::set_long_link_enabled)).
    pub fn long_link_disabled(&self) -> bool {
        self.long_disabled
    }

    /// Stops every running short-link attempt as interrupted and lets each
    /// task retry or end (a network change and [`redo_tasks`](Self::redo_tasks)).
    pub(super) fn redo_short_attempts(&mut self, now: Instant) {
        let running: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.running_on(Link::Short).is_some())
            .map(|(id, _)| id)
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
