//! The long link's heartbeat (noop) and identify schedule, per connection
//! (Mars `LongLink` noop alarms and `longlink_identify_checker.cc`; §5.3,
//! §5.4). Pure bookkeeping: the owner writes the frames and fails the link.

use bytes::Bytes;

use crate::profile::Profile;
use crate::time::{Duration, Instant};

/// Heartbeat and identify constants of a [`LongLink`](super::LongLink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// Time from the last write to the next noop (Mars `MinHeartInterval`:
    /// 210 s; Android's smart heartbeat is not modelled).
    pub interval: Duration,
    /// How long to wait for the noop (or identify) response (Mars: 8 s).
    pub noop_timeout: Duration,
    /// The shorter wait used when the interval that just ended actually lasted
    /// at least [`sleep_threshold`](Self::sleep_threshold) (Mars: 5 s; the
    /// device probably slept through the alarm).
    pub noop_timeout_after_sleep: Duration,
    /// See [`noop_timeout_after_sleep`](Self::noop_timeout_after_sleep) (Mars: 15 min).
    pub sleep_threshold: Duration,
    /// Whether to ask the app for an identify (auth check) packet at the
    /// first noop slot of each connection ([`LongLinkEvent::AskIdentify`](super::LongLinkEvent::AskIdentify)).
    pub identify: bool,
    /// How long to wait for [`LongLink::identify_answer`](super::LongLink::identify_answer)
    /// before sending a plain noop and asking again at the next slot. Mars asks
    /// synchronously; a sans-IO link must not let a silent app stop its heartbeat.
    pub identify_answer_wait: Duration,
}

impl HeartbeatConfig {
    /// Mars's constants in every profile: 3.5 min interval, 8 s (5 s after
    /// sleep) response timeout, identify asked at the first slot.
    pub fn for_profile(profile: Profile) -> Self {
        match profile {
            Profile::Mars2017 | Profile::Mars | Profile::Stn => HeartbeatConfig {
                interval: Duration::from_millis(210_000),
                noop_timeout: Duration::from_secs(8),
                noop_timeout_after_sleep: Duration::from_secs(5),
                sleep_threshold: Duration::from_secs(15 * 60),
                identify: true,
                identify_answer_wait: Duration::from_secs(8),
            },
        }
    }
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig::for_profile(Profile::Stn)
    }
}

/// The app's answer to [`LongLinkEvent::AskIdentify`](super::LongLinkEvent::AskIdentify)
/// (Mars `GetLonglinkIdentifyCheckBuffer`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentifyDecision {
    /// Send this packet (seq `0xFFFFFFFE`) instead of the noop (`kCheckNow`).
    Now {
        /// Its command id.
        cmd_id: u32,
        /// Its body.
        body: Bytes,
    },
    /// Send a noop now and ask again at the next noop slot (`kCheckNext`).
    Next,
    /// Do not identify on this connection (`kCheckNever`).
    Never,
}

/// Where identify stands on the current connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Identify {
    /// Ask the app at the next noop slot.
    Pending,
    /// Asked at `since`; waiting for the app's answer.
    Asking { since: Instant },
    /// Identify packet written; waiting for its response.
    InFlight,
    /// Answered, refused (`Never`) or disabled.
    Done,
}

/// What the heartbeat wants done now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Beat {
    /// Write a noop.
    SendNoop,
    /// Emit `AskIdentify`.
    AskIdentify,
    /// The noop or identify response did not come: fail the link.
    TimedOut,
}

/// Heartbeat state of one connection.
#[derive(Clone, Debug)]
pub(super) struct Heartbeat {
    config: HeartbeatConfig,
    /// When the current interval started (the last write, or the connect).
    interval_start: Instant,
    /// The next noop slot (from the last write).
    next_slot: Instant,
    /// When the outstanding noop or identify response is due.
    response_due: Option<Instant>,
    identify: Identify,
}

impl Heartbeat {
    /// A fresh connection at `now`: the first slot is due at once.
    pub(super) fn new(now: Instant, config: HeartbeatConfig) -> Self {
        let identify = if config.identify {
            Identify::Pending
        } else {
            Identify::Done
        };
        Heartbeat {
            config,
            interval_start: now,
            next_slot: now,
            response_due: None,
            identify,
        }
    }

    pub(super) fn identify(&self) -> Identify {
        self.identify
    }

    /// Something was written at `now`: the interval restarts (Mars re-arms the
    /// noop alarm on every write).
    pub(super) fn on_write(&mut self, now: Instant) {
        self.interval_start = now;
        self.next_slot = now + self.config.interval;
    }

    /// A noop was written at `now`.
    pub(super) fn on_noop_sent(&mut self, now: Instant) {
        // An interval that lasted far longer than asked means the device slept
        // through the alarm: Mars then waits less for the response.
        let timeout = if now - self.interval_start >= self.config.sleep_threshold {
            self.config.noop_timeout_after_sleep
        } else {
            self.config.noop_timeout
        };
        self.response_due = Some(now + timeout);
        self.on_write(now);
    }

    /// The identify packet was written at `now`.
    pub(super) fn on_identify_sent(&mut self, now: Instant) {
        self.identify = Identify::InFlight;
        self.response_due = Some(now + self.config.noop_timeout);
        self.on_write(now);
    }

    /// The app answered `Next` (or did not answer in time).
    pub(super) fn identify_next(&mut self) {
        self.identify = Identify::Pending;
    }

    /// The app answered `Never`.
    pub(super) fn identify_never(&mut self) {
        self.identify = Identify::Done;
    }

    /// A noop response arrived. Returns whether one was awaited.
    pub(super) fn on_noop_response(&mut self) -> bool {
        if self.identify == Identify::InFlight {
            // The identify response is still awaited; its timer stays.
            return false;
        }
        self.response_due.take().is_some()
    }

    /// The identify response arrived. Returns whether one was awaited.
    pub(super) fn on_identify_response(&mut self) -> bool {
        if self.identify != Identify::InFlight {
            return false;
        }
        self.identify = Identify::Done;
        self.response_due = None;
        true
    }

    /// What is due at `now`, if anything. The caller acts on it and calls
    /// the matching `on_*` method, then asks again.
    pub(super) fn due(&mut self, now: Instant) -> Option<Beat> {
        if self.response_due.is_some_and(|t| t <= now) {
            self.response_due = None;
            return Some(Beat::TimedOut);
        }
        if let Identify::Asking { since } = self.identify {
            if now - since >= self.config.identify_answer_wait {
                // No answer: behave as `Next` so the heartbeat never stops.
                self.identify = Identify::Pending;
                return Some(Beat::SendNoop);
            }
            return None;
        }
        if self.response_due.is_some() || self.next_slot > now {
            return None;
        }
        if self.identify == Identify::Pending {
            self.identify = Identify::Asking { since: now };
            return Some(Beat::AskIdentify);
        }
        Some(Beat::SendNoop)
    }

    /// The next instant at which [`due`](Self::due) may return something.
    pub(super) fn next_deadline(&self) -> Instant {
        if let Some(t) = self.response_due {
            return t;
        }
        if let Identify::Asking { since } = self.identify {
            return since + self.config.identify_answer_wait;
        }
        self.next_slot
    }
}
