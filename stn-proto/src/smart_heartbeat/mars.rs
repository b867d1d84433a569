//! Mars's smart heartbeat, transcribed from `mars/stn/src/smart_heartbeat.cc`
//! (constants `mars/stn/config.h`; called from `mars/stn/src/longlink.cc`).
//! Each method is the Mars function it names, in the same order of
//! statements, so the two can be read side by side. Differences: times are
//! the `now` passed in (Mars `time(NULL)` and tick counts); the records live
//! in memory and are persisted through the engine's export (Mars
//! `Heartbeat.ini`); the `report_smart_heart_` callback (unset in Mars's
//! own long link) and `SetHeartBeat`'s override are left out.

use super::records::{Records, Stamped};
use crate::net::NetworkKind;
use crate::time::{Duration, Instant};

/// Mars's constants (`mars/stn/config.h`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MarsSmartConfig {
    /// `MinHeartInterval` (3.5 min): the interval while active, on a new
    /// network, and the floor.
    pub min: Duration,
    /// `MaxHeartInterval` (10 min); the largest interval used is
    /// `max - success_step`.
    pub max: Duration,
    /// `HeartStep` (60 s): the increase after `base_success_count` successes.
    pub heart_step: Duration,
    /// `SuccessStep` (20 s): the margin below a failed value, and the
    /// probe after `reprobe_after`.
    pub success_step: Duration,
    /// `MaxHeartFailCount` (2).
    pub max_fail_count: u32,
    /// `BaseSuccCount` (5).
    pub base_success_count: u32,
    /// `NetStableTestCount` (3): heartbeats at the minimum on every new
    /// connection before the learned value is used.
    pub stable_test_count: u32,
    /// A stable value unchanged this long is probed 20 s higher (7 days).
    pub reprobe_after: Duration,
    /// `JudgeDozeStyle`: an alarm this far off its interval counts as doze
    /// (20 s).
    pub doze_drift: Duration,
}

impl MarsSmartConfig {
    /// Mars's values (`config.h` at the `Tencent/mars` head).
    pub const MARS: MarsSmartConfig = MarsSmartConfig {
        min: Duration::from_secs(210),
        max: Duration::from_secs(600),
        heart_step: Duration::from_secs(60),
        success_step: Duration::from_secs(20),
        max_fail_count: 2,
        base_success_count: 5,
        stable_test_count: 3,
        reprobe_after: Duration::from_secs(7 * 24 * 3600),
        doze_drift: Duration::from_secs(20),
    };
}

/// `TSmartHeartBeatType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeartType {
    /// `kNoSmartHeartBeat`.
    None = 0,
    /// `kSmartHeartBeat`.
    Smart = 1,
    /// `kDozeModeHeart`.
    Doze = 2,
}

impl HeartType {
    /// The type a value found now gets (`__IsDozeStyle() ? kDozeModeHeart : kSmartHeartBeat`).
    fn found(doze: bool) -> Self {
        if doze {
            HeartType::Doze
        } else {
            HeartType::Smart
        }
    }

    pub(crate) fn from_u8(v: u8) -> Self {
        match v {
            1 => HeartType::Smart,
            2 => HeartType::Doze,
            _ => HeartType::None,
        }
    }
}

/// One network's record (`NetHeartbeatInfo`, less its label).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MarsRecord {
    /// `net_type_` (kept, as Mars keeps it; it decides nothing).
    pub(crate) net_type: u8,
    /// `cur_heart_`.
    pub(crate) cur_heart: Duration,
    /// `heart_type_`.
    pub(crate) heart_type: HeartType,
    /// `is_stable_`.
    pub(crate) stable: bool,
    /// `last_modify_time_`.
    pub(crate) last_modified: Instant,
    /// `fail_heart_count_`.
    pub(crate) fail_count: u32,
    /// `succ_heart_count_` (not persisted: 0 when loaded).
    pub(crate) succ_count: u32,
    /// `min_heart_fail_count_`.
    pub(crate) min_heart_fail_count: u32,
}

impl Stamped for MarsRecord {
    fn changed(&self) -> Instant {
        self.last_modified
    }
}

impl MarsRecord {
    /// `NetHeartbeatInfo::Clear`.
    fn cleared(min: Duration) -> Self {
        MarsRecord {
            net_type: net_type(NetworkKind::None),
            cur_heart: min,
            heart_type: HeartType::None,
            stable: false,
            last_modified: Instant::ZERO,
            fail_count: 0,
            succ_count: 0,
            min_heart_fail_count: 0,
        }
    }
}

/// Mars's `kNoNet`/`kWifi`/`kMobile`/`kOtherNet` numbering.
fn net_type(kind: NetworkKind) -> u8 {
    match kind {
        NetworkKind::None => 0,
        NetworkKind::Wifi => 1,
        NetworkKind::Mobile => 2,
        NetworkKind::Other => 3,
    }
}

/// `current_net_heart_info_` while its `net_detail_` is not empty.
#[derive(Clone, Debug)]
struct Current {
    label: String,
    rec: MarsRecord,
}

/// Mars's `SmartHeartbeat`.
#[derive(Clone, Debug)]
pub(crate) struct MarsSmart {
    cfg: MarsSmartConfig,
    /// `is_wait_heart_response_`.
    waiting: bool,
    /// `success_heart_count_`: successes on this connection.
    success_count: u32,
    /// `last_heart_`: the interval last handed out.
    last: Duration,
    /// `pre_heart_`.
    pre: Duration,
    /// `cur_heart_`.
    cur: Duration,
    /// `current_net_heart_info_` (`None`: `net_detail_` empty).
    current: Option<Current>,
    /// The INI's sections.
    ini: Records<MarsRecord>,
    /// `doze_mode_count_`, `normal_mode_count_`.
    doze_count: u32,
    normal_count: u32,
    /// `noop_start_tick_` (`None`: invalid).
    noop_start: Option<Instant>,
}

impl MarsSmart {
    pub(crate) fn new(cfg: MarsSmartConfig) -> Self {
        MarsSmart {
            waiting: false,
            success_count: 0,
            last: cfg.min,
            pre: cfg.min,
            cur: cfg.min,
            current: None,
            ini: Records::default(),
            doze_count: 0,
            normal_count: 0,
            noop_start: None,
            cfg,
        }
    }

    /// `OnHeartbeatStart`.
    pub(crate) fn on_heartbeat_start(&mut self, now: Instant) {
        self.noop_start = Some(now);
        self.waiting = true;
    }

    /// `OnLongLinkEstablished`.
    pub(crate) fn on_established(&mut self, now: Instant, label: &str, network: NetworkKind) {
        self.load_ini(now, label, network);
        self.success_count = 0;
        self.pre = self.cfg.min;
        self.cur = self.cfg.min;
    }

    /// `OnLongLinkDisconnect`.
    pub(crate) fn on_disconnect(&mut self, now: Instant) {
        self.on_heart_result(now, false, false);
        let Some(c) = self.current.as_mut() else {
            // A cleared record is not stable: Mars returns here too.
            return;
        };
        c.rec.succ_count = 0;
        if !c.rec.stable {
            return;
        }
        self.last = self.cfg.min;
    }

    /// `OnHeartResult(_sucess, _fail_of_timeout)`.
    pub(crate) fn on_heart_result(&mut self, now: Instant, success: bool, timeout: bool) {
        if !self.waiting {
            return;
        }
        self.pre = self.cur;
        self.cur = self.last;
        self.waiting = false;
        let cfg = self.cfg.clone();
        let top = cfg.max.saturating_sub(cfg.success_step);
        let doze = self.is_doze_style();
        let Some(c) = self.current.as_mut() else {
            return;
        };
        if success {
            self.success_count += 1;
        }
        if self.success_count <= cfg.stable_test_count {
            c.rec.min_heart_fail_count = if success {
                0
            } else {
                c.rec.min_heart_fail_count.saturating_add(1)
            };
            return;
        }
        if self.last != c.rec.cur_heart {
            // "last heart & cur_heart not match, ignore"
            return;
        }
        let rec = &mut c.rec;
        if success {
            if self.last == self.pre {
                rec.succ_count += 1;
                rec.fail_count = 0;
            }
        } else {
            if timeout {
                rec.succ_count = 0;
            }
            rec.fail_count += 1;
        }

        if success && rec.stable {
            // Already at the maximum: nothing bigger to try.
            if rec.cur_heart >= top {
                return;
            }
            // Unchanged for 7 days: probe a bigger value.
            if now - rec.last_modified >= cfg.reprobe_after && rec.cur_heart < top {
                rec.cur_heart += cfg.success_step;
                rec.succ_count = 0;
                rec.stable = false;
                rec.fail_count = 0;
                self.save_ini(now);
            }
            return;
        }

        if success {
            if rec.succ_count >= cfg.base_success_count {
                if rec.cur_heart >= top {
                    // Already the maximum: make it stable.
                    rec.cur_heart = top;
                    rec.succ_count = 0;
                    rec.stable = true;
                    rec.heart_type = HeartType::found(doze);
                } else {
                    rec.succ_count = 0;
                    rec.cur_heart = if doze {
                        top
                    } else {
                        (rec.cur_heart + cfg.heart_step).min(top)
                    };
                }
            }
        } else {
            if self.last == cfg.min {
                return;
            }
            if rec.fail_count >= cfg.max_fail_count {
                if rec.stable {
                    // The old value no longer keeps the link: relearn.
                    rec.cur_heart = cfg.min;
                    rec.succ_count = 0;
                    rec.stable = false;
                    rec.fail_count = 0;
                } else {
                    let back = rec
                        .cur_heart
                        .saturating_sub(cfg.heart_step + cfg.success_step);
                    rec.cur_heart = if doze {
                        cfg.min
                    } else if back > cfg.min {
                        back
                    } else {
                        cfg.min
                    };
                    rec.succ_count = 0;
                    rec.fail_count = 0;
                    rec.stable = true;
                    rec.heart_type = HeartType::found(doze);
                }
            }
        }
        self.save_ini(now);
    }

    /// `JudgeDozeStyle`, at every heartbeat slot whose alarm fired.
    pub(crate) fn judge_doze(&mut self, now: Instant, active: bool, mobile: bool) {
        if active {
            return;
        }
        let Some(start) = self.noop_start else {
            return;
        };
        if !mobile {
            return;
        }
        let span = now - start;
        let drift = span.abs_diff(self.last);
        if drift >= self.cfg.doze_drift {
            self.doze_count += 1;
            self.normal_count = self.normal_count.saturating_sub(1);
        } else {
            self.normal_count += 1;
            self.doze_count = self.doze_count.saturating_sub(1);
        }
        self.noop_start = None;
    }

    /// `__IsDozeStyle`.
    fn is_doze_style(&self) -> bool {
        self.doze_count >= 2 && self.doze_count > 2 * self.normal_count
    }

    /// `GetNextHeartbeatInterval`; `active_interval` is what an active
    /// app gets (`MinHeartInterval` in Mars: the engine's
    /// `HeartbeatConfig::interval`, equal to it unless the app changed it).
    pub(crate) fn next_interval(&mut self, active: bool, active_interval: Duration) -> Duration {
        let min = self.cfg.min;
        let top = self.cfg.max.saturating_sub(self.cfg.success_step);
        if active {
            self.last = active_interval;
            return active_interval;
        }
        let doze = self.is_doze_style();
        let stable_test = self.cfg.stable_test_count;
        let success_count = self.success_count;
        let max = self.cfg.max;
        let Some(c) = self
            .current
            .as_mut()
            .filter(|_| success_count >= stable_test)
        else {
            self.last = min;
            return min;
        };
        self.last = c.rec.cur_heart;
        if doze && c.rec.heart_type != HeartType::Doze && self.last != top {
            c.rec.cur_heart = min;
            self.last = min;
        }
        if self.last >= max || self.last < min {
            c.rec.cur_heart = min;
            self.last = min;
        }
        self.last
    }

    /// `__LoadINI`: at every connect, the record of the network labelled
    /// `label`.
    fn load_ini(&mut self, now: Instant, label: &str, network: NetworkKind) {
        if label.is_empty() {
            self.current = None;
            return;
        }
        if self.current.as_ref().is_some_and(|c| c.label == label) {
            return;
        }
        let mut rec = MarsRecord::cleared(self.cfg.min);
        rec.net_type = net_type(network);
        match self.ini.get(label) {
            Some(saved) => {
                rec = saved.clone();
                rec.succ_count = 0;
                if rec.cur_heart < self.cfg.min {
                    rec.cur_heart = self.cfg.min;
                }
                if rec.cur_heart > self.cfg.max {
                    rec.cur_heart = self.cfg.max.saturating_sub(self.cfg.success_step);
                }
                if rec.last_modified > now {
                    rec.last_modified = now;
                }
                self.current = Some(Current {
                    label: label.to_owned(),
                    rec,
                });
            }
            None => {
                self.current = Some(Current {
                    label: label.to_owned(),
                    rec,
                });
                self.save_ini(now);
            }
        }
    }

    /// `__SaveINI` (`__LimitINISize` is the store's bound).
    fn save_ini(&mut self, now: Instant) {
        let Some(c) = self.current.as_mut() else {
            return;
        };
        c.rec.last_modified = now;
        let mut saved = c.rec.clone();
        saved.succ_count = 0;
        self.ini.insert(&c.label, saved);
    }

    /// The current record: (curHeart, stable, label).
    pub(crate) fn current(&self) -> Option<(Duration, bool, String)> {
        self.current
            .as_ref()
            .map(|c| (c.rec.cur_heart, c.rec.stable, c.label.clone()))
    }

    /// The saved records (what `Heartbeat.ini` holds).
    pub(crate) fn records(&self) -> &Records<MarsRecord> {
        &self.ini
    }

    /// Merges imported records; the current network's in-memory record is
    /// left as it is (Mars reads the file at the next network change).
    pub(crate) fn import(&mut self, records: Vec<(String, MarsRecord)>) -> usize {
        let mut taken = 0;
        for (label, rec) in records {
            if self.ini.merge(&label, rec) {
                taken += 1;
            }
        }
        taken
    }
}

#[cfg(test)]
mod tests;
