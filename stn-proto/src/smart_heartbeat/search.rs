//! stn's smart heartbeat: a bracketing search for the longest idle time the
//! path keeps a flow, per network.
//!
//! A heartbeat answered after the link was idle for `t` proves the path
//! keeps a flow idle that long (`good`); a heartbeat lost after `t` of idle
//! (no answer in time, or a reset) says it does not (`bad`). One answer is
//! enough proof, where Mars waits for five at each value and three more at
//! the minimum on every connection. Each heartbeat beyond `good` is a probe;
//! a lost probe costs the link, so the search takes at most one such loss
//! per phase:
//!
//! 1. nothing known: probe `initial + coarse_step` (Mars's minimum, 3.5
//!    min, is what every network is assumed to keep, so the search starts a
//!    step above it with the minimum to fall back on);
//! 2. only `good`: probe `good + max(coarse_step, good / 4)` (60 s or a
//!    quarter: NAT timeouts spread from a minute to an hour, and most keep
//!    flows past the ceiling) up to `ceiling`;
//! 3. only `bad`: probe `initial` if the loss was above it, else halve the
//!    loss, not below `floor`;
//! 4. both: probe `good + fine_step` (20 s) until the bracket is no wider
//!    than that, then settle at `good - margin`.
//!
//! A probe's loss reconnects at once (the network is fine: the search
//! found the path's limit). While a probe is pending or the link is idle
//! beyond `good`, a task is not written at once: a noop goes first and the
//! task follows its answer, so no task is written into a flow the path
//! already forgot (`SmartHeartbeat::must_probe_first`). In the foreground
//! nothing is probed: the interval is the smaller of `initial` and the
//! proven one. A heartbeat at or below `good` that is lost
//! `max_fail_count` times in a row means the path changed: the record
//! starts again from that loss. A settled record is searched again after
//! `reprobe_after` (7 days, as Mars).
//!
//! Idle times are measured since the last byte either way; the heartbeat's
//! slot is armed at the last write, so the answer to the previous frame
//! makes the idle time one round trip shorter than the slot's interval. A
//! heartbeat whose idle time is within `idle_slack` of the interval it was
//! scheduled at counts as that interval.

use super::records::{Records, Stamped};
use crate::time::{Duration, Instant};

/// The search's constants.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchConfig {
    /// The first interval on a network with no record (Mars's minimum).
    pub initial: Duration,
    /// The shortest interval the search goes down to.
    pub floor: Duration,
    /// The longest interval used (Mars's `MaxHeartInterval - SuccessStep`).
    pub ceiling: Duration,
    /// The smallest step up while no probe has been lost (the step is a
    /// quarter of the proven idle time when that is more).
    pub coarse_step: Duration,
    /// The step up inside a bracket, and its final width.
    pub fine_step: Duration,
    /// How far below the proven idle time a settled record's interval is.
    pub margin: Duration,
    /// Heartbeats at a proven interval lost in a row before the record is
    /// searched again from that loss.
    pub max_fail_count: u32,
    /// A settled record unchanged this long is searched again.
    pub reprobe_after: Duration,
    /// A heartbeat this close to its scheduled interval counts as that
    /// interval (see the module docs).
    pub idle_slack: Duration,
}

impl SearchConfig {
    /// stn's values (docs/heartbeat.md says why).
    pub const STN: SearchConfig = SearchConfig {
        initial: Duration::from_secs(210),
        floor: Duration::from_secs(60),
        ceiling: Duration::from_secs(580),
        coarse_step: Duration::from_secs(60),
        fine_step: Duration::from_secs(20),
        margin: Duration::from_secs(10),
        max_fail_count: 2,
        reprobe_after: Duration::from_secs(7 * 24 * 3600),
        idle_slack: Duration::from_secs(2),
    };
}

/// What one network's heartbeats proved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SearchRecord {
    /// The longest idle time after which a heartbeat was answered.
    pub(crate) good: Option<Duration>,
    /// The shortest idle time after which a probe was lost.
    pub(crate) bad: Option<Duration>,
    /// Heartbeats at or below `good` lost in a row.
    pub(crate) fails: u32,
    /// When `good` or `bad` last changed.
    pub(crate) changed: Instant,
}

impl Stamped for SearchRecord {
    fn changed(&self) -> Instant {
        self.changed
    }
}

impl SearchRecord {
    fn new(now: Instant) -> Self {
        SearchRecord {
            good: None,
            bad: None,
            fails: 0,
            changed: now,
        }
    }

    /// The next probe's interval, or `None` once settled.
    pub(crate) fn next_probe(&self, cfg: &SearchConfig) -> Option<Duration> {
        if self.at_ceiling(cfg) {
            return None;
        }
        // `initial` is what every network is assumed to keep: the search
        // starts a step above it, with `initial` to fall back on. An answer
        // after a short idle (a noop sent before a task) does not pull it
        // below that first step.
        let first = cfg.initial + cfg.coarse_step;
        let probe = match (self.good, self.bad) {
            (None, None) => Some(first),
            (Some(g), None) => Some((g + cfg.coarse_step.max(g / 4)).max(first)),
            (None, Some(b)) if b > cfg.initial => Some(cfg.initial),
            (None, Some(b)) => (b > cfg.floor).then(|| (b / 2).max(cfg.floor)),
            (Some(g), Some(b)) => {
                let p = (g + cfg.fine_step).max(cfg.floor);
                (b > p).then_some(p)
            }
        };
        probe.map(|p| p.clamp(cfg.floor, cfg.ceiling))
    }

    /// Whether an idle time at (or within the slack of) the ceiling is proven.
    fn at_ceiling(&self, cfg: &SearchConfig) -> bool {
        self.good.is_some_and(|g| g + cfg.idle_slack >= cfg.ceiling)
    }

    /// The interval of a settled record.
    pub(crate) fn settled(&self, cfg: &SearchConfig) -> Duration {
        if self.at_ceiling(cfg) {
            return cfg.ceiling;
        }
        match (self.good, self.bad) {
            (Some(g), None) => g.min(cfg.ceiling),
            (Some(g), Some(_)) => g.saturating_sub(cfg.margin).max(cfg.floor),
            (None, Some(_)) => cfg.floor,
            (None, None) => cfg.initial,
        }
    }

    /// The foreground's interval: `initial`, or less where a probe was
    /// lost below it (the proven idle time less the margin, else the floor).
    fn foreground(&self, cfg: &SearchConfig) -> Duration {
        match (self.good, self.bad) {
            (_, None) => cfg.initial,
            (_, Some(b)) if b > cfg.initial => cfg.initial,
            (Some(g), Some(_)) => g.saturating_sub(cfg.margin).max(cfg.floor),
            (None, Some(_)) => cfg.floor,
        }
        .min(cfg.initial)
    }
}

/// A heartbeat awaiting its answer: the idle time it tests.
#[derive(Clone, Copy, Debug)]
struct Pending {
    idle: Duration,
}

/// stn's smart heartbeat. See the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct SearchSmart {
    cfg: SearchConfig,
    /// The current network's label, once a connection is established on it.
    current: Option<String>,
    records: Records<SearchRecord>,
    pending: Option<Pending>,
}

impl SearchSmart {
    pub(crate) fn new(cfg: SearchConfig) -> Self {
        SearchSmart {
            cfg,
            current: None,
            records: Records::default(),
            pending: None,
        }
    }

    fn record(&self) -> Option<&SearchRecord> {
        self.current.as_deref().and_then(|l| self.records.get(l))
    }

    /// A connection is established on the network labelled `label`.
    pub(crate) fn on_established(&mut self, now: Instant, label: &str) {
        self.pending = None;
        if !self.records.contains(label) {
            self.records.insert(label, SearchRecord::new(now));
        }
        self.current = Some(label.to_owned());
    }

    /// Forgets the record of `label`.
    pub(crate) fn forget(&mut self, label: &str) {
        self.records.remove(label);
        if self.current.as_deref() == Some(label) {
            self.current = None;
        }
    }

    /// A heartbeat went out after `idle` without a byte; the slot was
    /// armed at `scheduled`.
    pub(crate) fn on_heartbeat_start(&mut self, idle: Duration, scheduled: Duration) {
        let idle = if idle + self.cfg.idle_slack >= scheduled {
            idle.max(scheduled)
        } else {
            idle
        };
        self.pending = Some(Pending { idle });
    }

    /// The pending heartbeat ended without telling anything (the app or a
    /// network change took the link down, a task timer fired).
    pub(crate) fn abandon(&mut self) {
        self.pending = None;
    }

    /// The pending heartbeat was answered (`ok`) or lost. Returns whether
    /// the loss was a probe's (reconnect at once).
    pub(crate) fn on_result(&mut self, now: Instant, ok: bool) -> bool {
        let Some(p) = self.pending.take() else {
            return false;
        };
        let cfg = self.cfg.clone();
        let Some(rec) = self
            .current
            .as_deref()
            .and_then(|l| self.records.get_mut(l))
        else {
            return false;
        };
        if ok {
            rec.fails = 0;
            if rec.good.is_none_or(|g| p.idle > g) {
                rec.good = Some(p.idle);
                // The path keeps longer idle times than a loss said (the
                // loss was not the path's limit, or the limit grew).
                if rec.bad.is_some_and(|b| b <= p.idle) {
                    rec.bad = None;
                }
                rec.changed = now;
            }
            return false;
        }
        let probe = rec.good.is_none_or(|g| p.idle > g);
        if probe {
            if rec.bad.is_none_or(|b| p.idle < b) {
                rec.bad = Some(p.idle);
                rec.changed = now;
            }
            return true;
        }
        rec.fails += 1;
        if rec.fails >= cfg.max_fail_count {
            // A proven interval no longer keeps the link: search again
            // below this loss.
            rec.good = None;
            rec.bad = Some(p.idle);
            rec.fails = 0;
            rec.changed = now;
        }
        false
    }

    /// The peer closed the link after `idle` with no heartbeat pending:
    /// beyond the proof (or the floor), that is the path's idle limit, as a
    /// lost probe is. Returns whether it was taken so.
    pub(crate) fn idle_close(&mut self, now: Instant, idle: Duration) -> bool {
        if self.pending.is_some() {
            return false;
        }
        let floor = self.cfg.floor;
        let Some(rec) = self
            .current
            .as_deref()
            .and_then(|l| self.records.get_mut(l))
        else {
            return false;
        };
        if idle <= rec.good.unwrap_or(floor) {
            return false;
        }
        if rec.bad.is_none_or(|b| idle < b) {
            rec.bad = Some(idle);
            rec.changed = now;
        }
        true
    }

    /// The interval to arm the heartbeat with; in the foreground at most
    /// `foreground_interval`.
    pub(crate) fn next_interval(
        &mut self,
        now: Instant,
        foreground: bool,
        foreground_interval: Duration,
    ) -> Duration {
        let cfg = &self.cfg;
        let rec = self
            .current
            .clone()
            .and_then(|label| self.records.get_mut(&label));
        let Some(rec) = rec else {
            return if foreground {
                foreground_interval
            } else {
                cfg.initial
            };
        };
        if foreground {
            return rec.foreground(cfg).min(foreground_interval);
        }
        if rec.bad.is_some()
            && rec.next_probe(cfg).is_none()
            && now - rec.changed >= cfg.reprobe_after
        {
            rec.bad = None;
            rec.changed = now;
        }
        rec.next_probe(cfg).unwrap_or_else(|| rec.settled(cfg))
    }

    /// Whether a link idle for `idle` may already be forgotten by the path:
    /// beyond the proven idle time (or, with nothing proven, beyond the
    /// floor), or while a probe awaits its answer.
    pub(crate) fn beyond_proven(&self, idle: Duration) -> bool {
        let Some(rec) = self.record() else {
            return false;
        };
        let proven = rec.good.unwrap_or(self.cfg.floor);
        let probing = self
            .pending
            .is_some_and(|p| rec.good.is_none_or(|g| p.idle > g));
        probing || idle > proven
    }

    /// The current record: (learned interval, settled, label).
    pub(crate) fn current(&self) -> Option<(Duration, bool, String)> {
        let label = self.current.clone()?;
        let rec = self.records.get(&label)?;
        let learned = rec
            .next_probe(&self.cfg)
            .unwrap_or_else(|| rec.settled(&self.cfg));
        Some((learned, rec.next_probe(&self.cfg).is_none(), label))
    }

    /// Every record.
    pub(crate) fn records(&self) -> &Records<SearchRecord> {
        &self.records
    }

    /// Merges imported records (the more recently changed copy wins).
    pub(crate) fn import(&mut self, records: Vec<(String, SearchRecord)>) -> usize {
        let mut taken = 0;
        for (label, rec) in records {
            if self.records.merge(&label, rec) {
                taken += 1;
            }
        }
        taken
    }
}
