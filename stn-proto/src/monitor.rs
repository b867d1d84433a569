//! App activity and the long link's reconnect schedule (Mars
//! `active_logic.cc` and `longlink_connect_monitor.cc`; reference §5.5).
//!
//! - [`Activity`] tracks foreground/background and derives Mars's five
//!   activity columns ([`ActivityState`]).
//! - [`ConnectMonitor`] decides *when* the long link should (re)connect: after
//!   a disconnect, when a task needs the link, on a network change, on a
//!   foreground change. It never connects itself; it emits
//!   [`MonitorAction::Connect`] and is told what the link did.
//!
//! Both are sans-IO: `now` is passed in and the same inputs give the same
//! actions. **After every call, drain [`ConnectMonitor::poll_action`] until
//! `None`, then read [`ConnectMonitor::poll_timeout`].**
//!
//! (The example runs as the unit test `examples::monitor`.)

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::time::{Duration, Instant, MonotonicClock};

/// Mars's activity columns, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ActivityState {
    /// Foreground, less than 1 min since the last foreground change.
    FgUnder1Min,
    /// Foreground for 1 to 10 min.
    Fg1To10Min,
    /// Foreground for 10 min or more.
    FgOver10Min,
    /// Background, but still active (less than 10 min in the background).
    BackgroundActive,
    /// Background for 10 min or more.
    Inactive,
}

impl ActivityState {
    /// The column index into Mars's interval tables (0..5).
    pub(crate) const fn column(self) -> usize {
        match self {
            ActivityState::FgUnder1Min => 0,
            ActivityState::Fg1To10Min => 1,
            ActivityState::FgOver10Min => 2,
            ActivityState::BackgroundActive => 3,
            ActivityState::Inactive => 4,
        }
    }

    /// Whether the app counts as active (every column but `Inactive`).
    pub(crate) const fn is_active(self) -> bool {
        !matches!(self, ActivityState::Inactive)
    }
}

/// Thresholds of `Activity`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ActivityConfig {
    /// Background this long makes the app inactive (Mars `INACTIVE_TIMEOUT`:
    /// 10 min; Mars on Apple never starts this timer — use `Duration::MAX`).
    pub inactive_after: Duration,
    /// End of the "foreground < 1 min" column.
    pub fg_short: Duration,
    /// End of the "foreground 1–10 min" column.
    pub fg_long: Duration,
}

/// Foreground/background tracking (Mars `ActiveLogic`): active = foreground,
/// or background for less than `inactive_after`.
///
/// (The example runs as the unit test `examples::monitor_activity`.)
#[derive(Clone, Debug)]
pub(crate) struct Activity {
    config: ActivityConfig,
    foreground: bool,
    changed_at: Instant,
}

impl Activity {
    /// Starts in the foreground or background at `now` (the last change).
    pub(crate) fn new(now: Instant, config: ActivityConfig, foreground: bool) -> Self {
        Activity {
            config,
            foreground,
            changed_at: now,
        }
    }

    /// Records a foreground change; returns whether anything changed. A repeat
    /// of the current state is ignored so it does not restart the columns.
    pub(crate) fn set_foreground(&mut self, now: Instant, foreground: bool) -> bool {
        if foreground == self.foreground {
            return false;
        }
        self.foreground = foreground;
        self.changed_at = now.max(self.changed_at);
        true
    }

    /// Whether the app is in the foreground.
    pub(crate) fn is_foreground(&self) -> bool {
        self.foreground
    }

    /// Whether the app is active at `now`.
    pub(crate) fn is_active(&self, now: Instant) -> bool {
        self.state(now).is_active()
    }

    /// The activity column at `now`.
    pub(crate) fn state(&self, now: Instant) -> ActivityState {
        let since = now - self.changed_at;
        match (self.foreground, since) {
            (true, s) if s < self.config.fg_short => ActivityState::FgUnder1Min,
            (true, s) if s < self.config.fg_long => ActivityState::Fg1To10Min,
            (true, _) => ActivityState::FgOver10Min,
            (false, s) if s < self.config.inactive_after => ActivityState::BackgroundActive,
            (false, _) => ActivityState::Inactive,
        }
    }

    /// When the app turns inactive, if it is in the background and still active at `now`.
    pub(crate) fn inactive_at(&self, now: Instant) -> Option<Instant> {
        let at = self.changed_at + self.config.inactive_after;
        (!self.foreground && at > now && at != Instant::MAX).then_some(at)
    }
}

/// stn's reconnect back-off, used instead of Mars's plain tables' first
/// entries (see [`ConnectMonitorConfig::for_profile`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectBackoff {
    /// Interval after the first failure.
    pub first: Duration,
    /// Growth per further consecutive failure.
    pub factor: u32,
    /// Random extra of up to this many per mille of the interval, drawn once
    /// per failure, so clients that lost a server together do not retry in
    /// lock-step.
    pub max_jitter_permille: u32,
    /// A link that stayed up this long resets the failure count.
    pub stable_after: Duration,
}

/// Constants of the `ConnectMonitor`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectMonitorConfig {
    /// Activity thresholds.
    pub activity: ActivityConfig,
    /// "Task needs the long link" intervals per activity column (Mars: 5, 10, 20, 30, 300 s).
    pub task_intervals: [Duration; 5],
    /// Auto-reconnect intervals per column (Mars: 15, 30, 120, 300, 600 s;
    /// v1.3: 15, 30, 240, 300, 600 s). With a back-off these are its caps.
    pub auto_intervals: [Duration; 5],
    /// When inactive, connect this much before the interval has passed (Mars: 30 s).
    pub inactive_slack: Duration,
    /// After a disconnect or failed connect, re-evaluate this much later (Mars: 500 ms).
    pub disconnect_settle: Duration,
    /// stn's exponential back-off; `None` = Mars's plain tables.
    pub backoff: Option<ReconnectBackoff>,
    /// Connect at once when the app comes to the foreground (stn), instead of
    /// the auto interval (Mars).
    pub immediate_on_foreground: bool,
    // Seed of the jitter generator (unused without a back-off). The engine
    // derives it from `Config::seed` (give every client its own: a fleet
    // sharing one seed would jitter in lock-step), so it is not a knob here.
    pub(crate) seed: u64,
}

/// Why the monitor asks for a connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ConnectReason {
    /// A task is waiting for the long link (Mars `MakeSureConnected`).
    TaskNeedsLink,
    /// Automatic reconnect (after a disconnect, at startup, on an activity change).
    Auto,
    /// The network changed.
    NetworkChange,
    /// The app came to the foreground (stn profile).
    Foreground,
}

/// What the [`ConnectMonitor`] asks the caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MonitorAction {
    /// Start connecting the long link now. Answer with
    /// [`ConnectMonitor::on_connect_started`] (optional), then
    /// [`ConnectMonitor::on_connected`] or [`ConnectMonitor::on_disconnected`].
    Connect {
        /// Which trigger fired.
        reason: ConnectReason,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// Down; the monitor may ask for a connect.
    Down,
    /// A connect was asked for or is in progress.
    Connecting,
    /// Up.
    Connected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    Task,
    Auto,
    NetworkChange,
    Foreground,
}

impl Row {
    const fn reason(self) -> ConnectReason {
        match self {
            Row::Task => ConnectReason::TaskNeedsLink,
            Row::Auto => ConnectReason::Auto,
            Row::NetworkChange => ConnectReason::NetworkChange,
            Row::Foreground => ConnectReason::Foreground,
        }
    }
}

/// The long link's reconnect scheduler (Mars `LongLinkConnectMonitor`).
///
/// Intervals are measured from the start of the last connect attempt. A
/// trigger connects at once if that long has passed, otherwise it arms a
/// timer for the rest. There is one auto timer (re-armed by every auto
/// evaluation, as Mars's single alarm) and one task timer (Mars polls
/// `MakeSureConnected` from its run loop; the timer stands in for the poll).
/// Only one connect is ever outstanding: nothing is asked while the link is
/// connecting or connected.
#[derive(Clone, Debug)]
pub(crate) struct ConnectMonitor {
    config: ConnectMonitorConfig,
    clock: MonotonicClock,
    activity: Activity,
    link: Link,
    last_attempt_start: Option<Instant>,
    connected_at: Instant,
    failures: u32,
    jitter_permille: u32,
    rng: Rng,
    auto_at: Option<Instant>,
    task_at: Option<Instant>,
    inactive_at: Option<Instant>,
    actions: VecDeque<MonitorAction>,
}

impl ConnectMonitor {
    /// A monitor for a link that is down, with an auto evaluation due at `now`
    /// (Mars connects the long link at startup).
    pub(crate) fn new(now: Instant, config: ConnectMonitorConfig, foreground: bool) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        let rng = Rng::derive(config.seed, 0x6d6f_6e69);
        ConnectMonitor {
            activity: Activity::new(now, config.activity.clone(), foreground),
            config,
            clock,
            link: Link::Down,
            last_attempt_start: None,
            connected_at: now,
            failures: 0,
            jitter_permille: 0,
            rng,
            auto_at: Some(now),
            task_at: None,
            inactive_at: None,
            actions: VecDeque::new(),
        }
    }

    /// The activity tracker.
    pub(crate) fn activity(&self) -> &Activity {
        &self.activity
    }

    #[cfg(test)]
    /// Consecutive failed attempts (drives the stn back-off).
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }

    /// The app moved to the foreground or background: re-evaluates the auto
    /// schedule (stn: connects at once on coming to the foreground).
    pub(crate) fn set_foreground(&mut self, now: Instant, foreground: bool) {
        let now = self.enter(now);
        if self.activity.set_foreground(now, foreground) {
            if foreground && self.config.immediate_on_foreground {
                self.evaluate(now, Row::Foreground);
            } else {
                self.evaluate(now, Row::Auto);
            }
        }
        self.refresh(now);
    }

    /// A task needs the long link: connect if the task interval has passed
    /// since the last attempt started, else when it will have.
    pub(crate) fn task_needs_link(&mut self, now: Instant) {
        let now = self.enter(now);
        self.evaluate(now, Row::Task);
        self.refresh(now);
    }

    /// The network changed. The caller tears down the current link and any
    /// attempt in flight; the monitor asks for a new connect at once (as Mars
    /// does, even if the new network is "none": the engine may hold this call
    /// until a network is available) and forgets past failures, which
    /// belonged to the old network.
    pub(crate) fn on_network_change(&mut self, now: Instant) {
        let now = self.enter(now);
        self.link = Link::Down;
        self.failures = 0;
        self.evaluate(now, Row::NetworkChange);
        self.refresh(now);
    }

    /// The link was lost for a cause that says nothing against the network
    /// or the server (the smart heartbeat's probe found the path's idle
    /// limit): connect again at once, past failures kept. Call after
    /// [`on_disconnected`](Self::on_disconnected).
    pub(crate) fn reconnect_now(&mut self, now: Instant) {
        let now = self.enter(now);
        self.evaluate(now, Row::NetworkChange);
        self.refresh(now);
    }

    /// A connect attempt started (asked for by the monitor or not). Intervals
    /// are measured from here.
    pub(crate) fn on_connect_started(&mut self, now: Instant) {
        let now = self.enter(now);
        self.link = Link::Connecting;
        self.last_attempt_start = Some(now);
        self.clear_timers();
        self.refresh(now);
    }

    /// The long link is connected.
    pub(crate) fn on_connected(&mut self, now: Instant) {
        let now = self.enter(now);
        self.link = Link::Connected;
        self.connected_at = now;
        self.clear_timers();
        self.refresh(now);
    }

    /// The long link disconnected or the connect failed: re-evaluates after
    /// `disconnect_settle` (500 ms).
    pub(crate) fn on_disconnected(&mut self, now: Instant) {
        let now = self.enter(now);
        let stable = self.link == Link::Connected
            && self
                .config
                .backoff
                .as_ref()
                .is_some_and(|b| now - self.connected_at >= b.stable_after);
        self.failures = if stable {
            1
        } else {
            self.failures.saturating_add(1)
        };
        if let Some(b) = &self.config.backoff {
            let bound = u64::from(b.max_jitter_permille) + 1;
            self.jitter_permille = self.rng.below(bound) as u32;
        }
        self.link = Link::Down;
        self.clear_timers();
        self.auto_at = Some(now + self.config.disconnect_settle);
        self.refresh(now);
    }

    /// Fires the timers due at `now`. Idempotent; safe to call early.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        let now = self.enter(now);
        self.refresh(now);
    }

    /// The next action, if any.
    pub(crate) fn poll_action(&mut self) -> Option<MonitorAction> {
        self.actions.pop_front()
    }

    /// The next deadline, if any.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        [self.auto_at, self.task_at, self.inactive_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// The interval of `row` at `now` (zero for network change and stn's foreground).
    fn interval(&self, now: Instant, row: Row) -> Duration {
        let column = self.activity.state(now).column();
        let cap = match row {
            Row::Task => self.config.task_intervals[column],
            Row::Auto => self.config.auto_intervals[column],
            Row::NetworkChange | Row::Foreground => return Duration::ZERO,
        };
        let Some(b) = &self.config.backoff else {
            return cap;
        };
        let doublings = self.failures.saturating_sub(1).min(63);
        let raw = b
            .first
            .checked_mul(b.factor.max(1).saturating_pow(doublings))
            .unwrap_or(Duration::MAX);
        let interval = raw.min(cap);
        let extra = interval
            .checked_mul(self.jitter_permille)
            .map(|d| d / 1000)
            .unwrap_or(Duration::ZERO);
        interval.saturating_add(extra)
    }

    /// The one place where connect decisions are made.
    fn evaluate(&mut self, now: Instant, row: Row) {
        if row != Row::Task {
            // Mars's single alarm is cancelled by every auto evaluation.
            self.auto_at = None;
        }
        if self.link != Link::Down {
            return;
        }
        let interval = self.interval(now, row);
        let slack = if row != Row::NetworkChange && !self.activity.is_active(now) {
            self.config.inactive_slack
        } else {
            Duration::ZERO
        };
        let due = match self.last_attempt_start {
            None => now,
            Some(start) => (start + interval).saturating_sub(slack),
        };
        if due <= now {
            self.link = Link::Connecting;
            self.last_attempt_start = Some(now);
            self.clear_timers();
            self.actions.push_back(MonitorAction::Connect {
                reason: row.reason(),
            });
        } else if row == Row::Task {
            self.task_at = Some(self.task_at.map_or(due, |t| t.min(due)));
        } else {
            self.auto_at = Some(due);
        }
    }

    fn clear_timers(&mut self) {
        self.auto_at = None;
        self.task_at = None;
    }

    /// Clamps `now`. Due timers are fired after the input, not before: a
    /// link-status input supersedes a pending timer (firing it first could ask
    /// for a connect the caller has already started).
    fn enter(&mut self, now: Instant) -> Instant {
        self.clock.observe(now)
    }

    /// Fires due timers and re-derives the activity watch.
    fn refresh(&mut self, now: Instant) {
        if self.inactive_at.is_some_and(|t| t <= now) {
            self.inactive_at = None;
            // Mars re-evaluates on the "became inactive" signal.
            self.evaluate(now, Row::Auto);
        }
        if self.auto_at.is_some_and(|t| t <= now) {
            self.auto_at = None;
            self.evaluate(now, Row::Auto);
        }
        if self.task_at.is_some_and(|t| t <= now) {
            self.task_at = None;
            self.evaluate(now, Row::Task);
        }
        self.inactive_at = if self.link == Link::Down {
            self.activity.inactive_at(now)
        } else {
            None
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use proptest::prelude::*;

    fn t(secs: u64) -> Instant {
        Instant::from_secs(secs)
    }

    fn ms(millis: u64) -> Instant {
        Instant::from_millis(millis)
    }

    fn drain(m: &mut ConnectMonitor) -> Vec<MonitorAction> {
        std::iter::from_fn(|| m.poll_action()).collect()
    }

    const AUTO: MonitorAction = MonitorAction::Connect {
        reason: ConnectReason::Auto,
    };
    const TASK: MonitorAction = MonitorAction::Connect {
        reason: ConnectReason::TaskNeedsLink,
    };
    const NETWORK: MonitorAction = MonitorAction::Connect {
        reason: ConnectReason::NetworkChange,
    };

    /// A monitor whose last attempt started at `start` and failed at
    /// `start + 1 s`, with the app switched to `foreground` at `start`.
    fn failed_at(profile: Profile, start: u64, foreground: bool) -> ConnectMonitor {
        let cfg = ConnectMonitorConfig::for_profile(profile);
        let mut m = ConnectMonitor::new(t(0), cfg, !foreground);
        m.handle_timeout(t(0));
        assert_eq!(drain(&mut m), vec![AUTO]);
        m.on_connected(t(0));
        m.set_foreground(t(start), foreground);
        m.on_disconnected(t(start));
        m.on_connect_started(t(start));
        m.on_disconnected(t(start + 1));
        drain(&mut m);
        m
    }

    #[test]
    fn startup_connects_at_once() {
        let mut m = ConnectMonitor::new(t(5), ConnectMonitorConfig::default(), false);
        assert_eq!(m.poll_timeout(), Some(t(5)));
        m.handle_timeout(t(5));
        assert_eq!(drain(&mut m), vec![AUTO]);
        assert_eq!(m.poll_timeout(), None);
    }

    /// Auto row per column for a Mars profile: the reconnect comes exactly
    /// `interval` after the start of the failed attempt.
    fn auto_schedule(profile: Profile, table: [u64; 5]) {
        // Column by column: (foreground?, seconds since the change when the attempt starts).
        let cases = [(true, 0), (true, 60), (true, 600), (false, 0), (false, 600)];
        for (col, (fg, offset)) in cases.into_iter().enumerate() {
            let mut m = ConnectMonitor::new(t(0), ConnectMonitorConfig::for_profile(profile), !fg);
            m.handle_timeout(t(0));
            assert_eq!(drain(&mut m), vec![AUTO]);
            m.on_connected(t(0));
            // The change that starts the column clock, then time passes while up.
            m.set_foreground(t(1000), fg);
            let start = 1000 + offset;
            m.on_disconnected(t(start));
            m.on_connect_started(t(start));
            m.on_disconnected(t(start + 1));
            assert_eq!(m.activity().state(t(start + 1)).column(), col);
            m.handle_timeout(ms((start + 1) * 1000 + 500));
            assert_eq!(drain(&mut m), vec![], "column {col}");
            // Inactive: Mars connects 30 s early.
            let interval = if col == 4 {
                table[col] - 30
            } else {
                table[col]
            };
            assert_eq!(m.poll_timeout(), Some(t(start + interval)), "column {col}");
            m.handle_timeout(t(start + interval) - Duration::from_nanos(1));
            assert_eq!(drain(&mut m), vec![]);
            m.handle_timeout(t(start + interval));
            assert_eq!(drain(&mut m), vec![AUTO], "column {col}");
        }
    }

    #[test]
    fn mars_auto_row_per_column() {
        auto_schedule(Profile::Mars, [15, 30, 120, 300, 600]);
    }

    #[test]
    fn mars2017_auto_row_is_the_v1_3_table() {
        auto_schedule(Profile::Mars2017, [15, 30, 240, 300, 600]);
    }

    #[test]
    fn mars_task_row_per_column() {
        let table = [5, 10, 20, 30, 300];
        let cases = [(true, 0), (true, 60), (true, 600), (false, 0), (false, 600)];
        for (col, (fg, offset)) in cases.into_iter().enumerate() {
            let mut m =
                ConnectMonitor::new(t(0), ConnectMonitorConfig::for_profile(Profile::Mars), !fg);
            m.handle_timeout(t(0));
            drain(&mut m);
            m.on_connected(t(0));
            m.set_foreground(t(1000), fg);
            let start = 1000 + offset;
            m.on_disconnected(t(start));
            m.on_connect_started(t(start));
            m.on_disconnected(t(start + 1));
            m.task_needs_link(t(start + 2));
            let interval = if col == 4 {
                table[col] - 30
            } else {
                table[col]
            };
            assert_eq!(drain(&mut m), vec![], "column {col}");
            assert!(m.poll_timeout().unwrap() <= t(start + interval));
            m.handle_timeout(t(start + interval));
            assert_eq!(drain(&mut m), vec![TASK], "column {col}");
        }
    }

    #[test]
    fn task_connects_at_once_when_its_interval_has_passed() {
        let mut m = failed_at(Profile::Mars, 100, true);
        // 5 s after the attempt start: the task row allows it, auto (15 s) does not.
        m.task_needs_link(t(104));
        assert_eq!(drain(&mut m), vec![]);
        m.task_needs_link(t(105));
        assert_eq!(drain(&mut m), vec![TASK]);
        // Nothing more while connecting.
        m.task_needs_link(t(200));
        m.handle_timeout(t(300));
        assert_eq!(drain(&mut m), vec![]);
    }

    #[test]
    fn network_change_is_immediate() {
        for p in Profile::ALL {
            let mut m = failed_at(p, 100, true);
            m.on_network_change(ms(101_200));
            assert_eq!(drain(&mut m), vec![NETWORK], "{p}");
            // Even while connected or connecting, a network change reconnects.
            m.on_connected(t(102));
            m.on_network_change(t(103));
            assert_eq!(drain(&mut m), vec![NETWORK], "{p}");
            m.on_network_change(t(103));
            assert_eq!(drain(&mut m), vec![NETWORK], "{p}");
        }
    }

    #[test]
    fn interval_is_measured_from_the_attempt_start() {
        let mut m = failed_at(Profile::Mars, 100, true);
        // The attempt started at 100 and failed at 101: due at 115, not 116.
        assert_eq!(m.poll_timeout(), Some(ms(101_500)));
        m.handle_timeout(ms(101_500));
        assert_eq!(m.poll_timeout(), Some(t(115)));
        // An attempt that hung for 20 s: the 500 ms re-evaluation connects.
        m.handle_timeout(t(115));
        assert_eq!(drain(&mut m), vec![AUTO]);
        m.on_connect_started(t(115));
        m.on_disconnected(t(135));
        assert_eq!(drain(&mut m), vec![]);
        m.handle_timeout(ms(135_499));
        assert_eq!(drain(&mut m), vec![]);
        m.handle_timeout(ms(135_500));
        assert_eq!(drain(&mut m), vec![AUTO]);
    }

    #[test]
    fn disconnect_reevaluates_after_500_ms() {
        let mut m =
            ConnectMonitor::new(t(0), ConnectMonitorConfig::for_profile(Profile::Mars), true);
        m.handle_timeout(t(0));
        drain(&mut m);
        m.on_connected(t(1));
        // Up for an hour: the next connect is due at once, but only after 500 ms.
        m.on_disconnected(t(3600));
        assert_eq!(drain(&mut m), vec![]);
        assert_eq!(m.poll_timeout(), Some(ms(3_600_500)));
        m.handle_timeout(ms(3_600_499));
        assert_eq!(drain(&mut m), vec![]);
        m.handle_timeout(ms(3_600_500));
        assert_eq!(drain(&mut m), vec![AUTO]);
    }

    #[test]
    fn foreground_change_reevaluates_with_the_new_column() {
        // Mars: background-active column (300 s), then foreground (<1 min: 15 s).
        let mut m = failed_at(Profile::Mars, 100, false);
        m.handle_timeout(ms(101_500));
        assert_eq!(m.poll_timeout(), Some(t(400)));
        m.set_foreground(t(110), true);
        assert_eq!(drain(&mut m), vec![]);
        assert_eq!(m.poll_timeout(), Some(t(115)));
        m.handle_timeout(t(115));
        assert_eq!(drain(&mut m), vec![AUTO]);
    }

    #[test]
    fn becoming_inactive_reevaluates() {
        // Background from 100; an attempt at 650 fails. Background-active would
        // give 650 + 300, but at 700 the app turns inactive and the schedule
        // becomes 650 + 600 - 30.
        let mut m =
            ConnectMonitor::new(t(0), ConnectMonitorConfig::for_profile(Profile::Mars), true);
        m.handle_timeout(t(0));
        drain(&mut m);
        m.on_connected(t(0));
        m.set_foreground(t(100), false);
        m.on_connect_started(t(650));
        m.on_disconnected(t(651));
        m.handle_timeout(ms(651_500));
        // Background-active: 650 + 300 = 950, but the watch fires at 700.
        assert_eq!(m.poll_timeout(), Some(t(700)));
        m.handle_timeout(t(700));
        assert_eq!(drain(&mut m), vec![]);
        // Inactive: 650 + 600 - 30.
        assert_eq!(m.poll_timeout(), Some(t(1220)));
    }

    #[test]
    fn stn_backs_off_exponentially_with_a_cap() {
        let mut cfg = ConnectMonitorConfig::for_profile(Profile::Stn);
        if let Some(b) = &mut cfg.backoff {
            b.max_jitter_permille = 0;
        }
        let mut m = ConnectMonitor::new(t(0), cfg, true);
        m.handle_timeout(t(0));
        assert_eq!(drain(&mut m), vec![AUTO]);
        // Keep failing instantly: 1, 2, 4, 8, then the 15 s cap (foreground < 1 min),
        // measured from each attempt start. The 500 ms settle delays the first ones.
        let mut start = Instant::ZERO;
        let mut gaps = Vec::new();
        for _ in 0..7 {
            m.on_connect_started(start);
            m.on_disconnected(start);
            let now = loop {
                let now = m.poll_timeout().expect("a retry is scheduled");
                m.handle_timeout(now);
                if !drain(&mut m).is_empty() {
                    break now;
                }
            };
            gaps.push((now - start).as_millis());
            start = now;
        }
        // At 60 s the app enters the "foreground 1-10 min" column: cap 30 s.
        assert_eq!(gaps, vec![1000, 2000, 4000, 8000, 15000, 15000, 30000]);
        // A stable link resets the back-off.
        m.on_connect_started(start);
        m.on_connected(start);
        m.on_disconnected(start + Duration::from_secs(60));
        assert_eq!(m.failures(), 1);
    }

    #[test]
    fn stn_jitter_is_bounded_and_seeded() {
        let run = |seed| {
            let mut cfg = ConnectMonitorConfig::for_profile(Profile::Stn);
            cfg.seed = seed;
            let mut m = ConnectMonitor::new(t(0), cfg, true);
            m.handle_timeout(t(0));
            drain(&mut m);
            m.on_connect_started(t(10));
            m.on_disconnected(t(10));
            m.handle_timeout(ms(10_500));
            m.poll_timeout().unwrap()
        };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let due = run(seed);
            assert_eq!(due, run(seed), "same seed, same schedule");
            assert!(due >= t(11) && due <= ms(11_200), "{due:?}");
            seen.insert(due);
        }
        assert!(seen.len() > 1, "jitter spreads clients");
    }

    #[test]
    fn stn_connects_at_once_on_foreground() {
        let mut m = failed_at(Profile::Stn, 100, false);
        m.handle_timeout(ms(101_500));
        assert_eq!(drain(&mut m), vec![]);
        m.set_foreground(ms(101_600), true);
        assert_eq!(
            drain(&mut m),
            vec![MonitorAction::Connect {
                reason: ConnectReason::Foreground
            }]
        );
        // Mars waits for the auto interval instead.
        let mut m = failed_at(Profile::Mars, 100, false);
        m.handle_timeout(ms(101_500));
        m.set_foreground(ms(101_600), true);
        assert_eq!(drain(&mut m), vec![]);
    }

    #[test]
    fn odd_call_orders_do_not_panic() {
        let mut m = ConnectMonitor::new(t(10), ConnectMonitorConfig::default(), true);
        m.on_disconnected(t(5));
        m.on_connected(t(1));
        m.on_disconnected(t(0));
        m.on_disconnected(t(0));
        m.handle_timeout(Instant::MAX);
        m.task_needs_link(Instant::MAX);
        m.set_foreground(Instant::MAX, false);
        drain(&mut m);
        assert!(m.poll_timeout().is_none_or(|d| d >= Instant::MAX));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Advance(u64),
        Fire,
        Started,
        Connected,
        Disconnected,
        Task,
        Network,
        Foreground(bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..700_000).prop_map(Op::Advance),
            Just(Op::Fire),
            Just(Op::Started),
            Just(Op::Connected),
            Just(Op::Disconnected),
            Just(Op::Task),
            Just(Op::Network),
            any::<bool>().prop_map(Op::Foreground),
        ]
    }

    fn run_ops(
        profile: Profile,
        seed: u64,
        ops: &[Op],
    ) -> Result<Vec<(Instant, MonitorAction)>, TestCaseError> {
        let mut cfg = ConnectMonitorConfig::for_profile(profile);
        cfg.seed = seed;
        let mut m = ConnectMonitor::new(t(1), cfg, true);
        let mut now = t(1);
        // The caller's view: a connect asked for and not yet answered.
        let mut outstanding = false;
        let mut trace = Vec::new();
        for op in ops {
            match op {
                Op::Advance(d) => {
                    // Time passes with no call: deadlines may now be due.
                    now += Duration::from_millis(*d);
                    continue;
                }
                Op::Fire => {
                    let Some(d) = m.poll_timeout() else { continue };
                    now = now.max(d);
                    m.handle_timeout(now);
                    let after = m.poll_timeout();
                    prop_assert!(after.is_none_or(|a| a > now), "busy loop at {now:?}");
                }
                // The caller only reports what its link does.
                Op::Started if !outstanding => {
                    m.on_connect_started(now);
                    outstanding = true;
                }
                Op::Connected if outstanding => {
                    m.on_connected(now);
                    outstanding = false;
                }
                Op::Started | Op::Connected => continue,
                Op::Disconnected => {
                    m.on_disconnected(now);
                    outstanding = false;
                }
                Op::Task => m.task_needs_link(now),
                Op::Network => {
                    m.on_network_change(now);
                    outstanding = false;
                }
                Op::Foreground(fg) => m.set_foreground(now, *fg),
            }
            while let Some(a) = m.poll_action() {
                prop_assert!(!outstanding, "second Connect while one is outstanding");
                outstanding = true;
                trace.push((now, a));
            }
            prop_assert!(
                m.poll_timeout().is_none_or(|d| d > now),
                "deadline in the past"
            );
        }
        Ok(trace)
    }

    proptest! {
        #[test]
        fn one_connect_at_a_time_and_no_past_deadlines(
            profile in prop_oneof![Just(Profile::Mars2017), Just(Profile::Mars), Just(Profile::Stn)],
            seed in any::<u64>(),
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let a = run_ops(profile, seed, &ops)?;
            let b = run_ops(profile, seed, &ops)?;
            prop_assert_eq!(a, b, "deterministic");
        }
    }
}
