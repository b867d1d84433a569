//! Heartbeat (noop) and identify scheduling for one long-link connection
//! (Mars `LongLink` noop alarm and `longlink_identify_checker.cc`; reference
//! §5.3 and §5.4).
//!
//! One [`Heartbeat`] lives as long as one connection. Its first slot is due
//! right after connect (where it only asks for identify), then every
//! `interval` (3.5 min), re-armed by every
//! write. At a slot it sends a noop if the send queue is empty and waits
//! `response_timeout` for the answer; a missing answer is
//! [`HeartbeatAction::Timeout`] and the caller disconnects. At the first slot
//! it asks the app whether to send an identify (auth) packet instead. A
//! plain answer ("no identify") sends a noop, except at the first slot (the
//! connect: Mars's first noop comes one interval later) and after a write
//! made while the app was deciding (that write re-armed the slot): stn never
//! writes a noop right behind or just before a request, which a peer reading
//! one frame per read (the Mars sample proxy) would drop.
//!
//! The frames themselves (noop cmdid 6, seq [`NOOP_SEQ`]; identify seq
//! [`IDENTIFY_SEQ`]) are built by the caller's codec; this machine only says
//! when. **After every call, drain [`Heartbeat::poll_action`] until `None`,
//! then read [`Heartbeat::poll_timeout`].** Inputs are applied before due
//! timers, so a response that arrives just as its deadline passes still counts.
//!
//! (The example runs as the unit test `examples::heartbeat`.)

use std::collections::VecDeque;

use bytes::Bytes;

use crate::smart_heartbeat::SmartHeartbeatConfig;
use crate::time::{Duration, Instant, MonotonicClock};

/// stn's noop response timeout scaled from the measured RTT.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RttScaledTimeout {
    /// Timeout = `multiplier × RTT` ...
    pub multiplier: u32,
    /// ... but at least this ...
    pub min: Duration,
    /// ... and at most this.
    pub max: Duration,
}

/// Constants of the `Heartbeat`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeartbeatConfig {
    /// Time from the last write to the next noop slot (Mars
    /// `MinHeartInterval`: 3.5 min): always under
    /// [`SmartHeartbeatConfig::Fixed`], else while the app is active (Mars)
    /// or in the foreground (stn), where the smart heartbeat does not go
    /// above it.
    pub interval: Duration,
    /// Wait for a noop or identify response (Mars: 8 s).
    pub response_timeout: Duration,
    /// Wait used when the interval that just ended lasted at least
    /// `late_after` — the alarm was delayed by device sleep and the link is
    /// probably dead (Mars: 5 s).
    pub late_response_timeout: Duration,
    /// See `late_response_timeout` (Mars: 15 min).
    pub late_after: Duration,
    /// stn: a shorter timeout from the RTT (see `Heartbeat::set_rtt`); `None` = Mars's fixed ones.
    pub rtt_scaled: Option<RttScaledTimeout>,
    /// How the interval is learned per network (`docs/heartbeat.md`);
    /// [`SmartHeartbeatConfig::Fixed`] keeps [`interval`](Self::interval).
    pub smart: SmartHeartbeatConfig,
}

/// The app's answer to `HeartbeatAction::AskIdentify` (Mars
/// `GetLonglinkIdentifyCheckBuffer`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentifyDecision {
    /// Send `body` with `cmd_id` (seq [`IDENTIFY_SEQ`](crate::codec::longlink::IDENTIFY_SEQ)) instead of the noop (`kCheckNow`).
    Now {
        /// The identify request body.
        body: Bytes,
        /// Its command id.
        cmd_id: u32,
    },
    /// Not yet: send the noop and ask again at the next slot (`kCheckNext`).
    Next,
    /// Never for this connection (`kCheckNever`).
    Never,
}

/// Where identify stands on this connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IdentifyState {
    /// Not asked yet: the app is asked at the next slot.
    NotAsked,
    /// [`HeartbeatAction::AskIdentify`] was emitted; waiting for the answer.
    Asking,
    /// The app said "next" (or the server rejected it): ask again at the next slot.
    Next,
    /// The identify frame was sent; waiting for the response.
    Sent,
    /// The server accepted it.
    Done,
    /// The app said "never".
    Never,
}

/// What the [`Heartbeat`] asks the caller to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeartbeatAction {
    /// Send a noop frame (seq [`NOOP_SEQ`]); answer with [`Heartbeat::on_noop_response`].
    SendNoop,
    /// Ask the app for its identify decision; answer with [`Heartbeat::identify_answer`].
    AskIdentify,
    /// Send the identify frame (seq [`IDENTIFY_SEQ`]) even if the queue is busy;
    /// answer with [`Heartbeat::on_identify_response`].
    SendIdentify {
        /// Command id chosen by the app.
        cmd_id: u32,
        /// Body given by the app.
        body: Bytes,
    },
    /// No response in time: disconnect (Mars `kEctSocketRecvErr`). The machine
    /// is finished after this.
    Timeout {
        /// Whether the identify (rather than a noop) went unanswered.
        identify: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    deadline: Instant,
    identify: bool,
}

/// Noop and identify scheduling for one long-link connection.
#[derive(Clone, Debug)]
pub(crate) struct Heartbeat {
    config: HeartbeatConfig,
    clock: MonotonicClock,
    /// The interval the slot is armed with (the smart heartbeat's choice).
    interval: Duration,
    /// Slots fired so far (the first one at connect).
    slots_fired: u64,
    /// Times the slot was armed (slots and writes).
    arms: u64,
    next_slot: Instant,
    slot_armed_at: Instant,
    pending: Option<Pending>,
    identify: IdentifyState,
    /// Whether the slot that asked for identify ended a "late" interval.
    ask_late: bool,
    /// Something was written since the slot that asked for identify: that
    /// write re-armed the slot, so a plain answer sends no noop (Mars never
    /// writes a noop right behind a request; a peer reading one frame per
    /// read would drop it).
    written_since_ask: bool,
    /// The outstanding ask is the connection's first (at connect). Mars's
    /// first noop comes one interval after connect, so a plain answer to it
    /// sends none: the first frame on a new link is the app's.
    ask_at_connect: bool,
    queue_empty: bool,
    rtt: Option<Duration>,
    dead: bool,
    actions: VecDeque<HeartbeatAction>,
}

impl Heartbeat {
    /// A heartbeat for a connection established at `now`. The first slot is
    /// due at `now`: report the send queue with
    /// [`set_send_queue_empty`](Self::set_send_queue_empty) if it is busy,
    /// then call [`handle_timeout`](Self::handle_timeout).
    pub(crate) fn new(now: Instant, config: HeartbeatConfig) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        Heartbeat {
            interval: config.interval,
            config,
            clock,
            slots_fired: 0,
            arms: 0,
            next_slot: now,
            slot_armed_at: now,
            pending: None,
            identify: IdentifyState::NotAsked,
            ask_late: false,
            written_since_ask: false,
            ask_at_connect: false,
            queue_empty: true,
            rtt: None,
            dead: false,
            actions: VecDeque::new(),
        }
    }

    #[cfg(test)]
    /// Tells whether the connection's send queue is empty. A noop is sent only
    /// when it is (Mars `SendWhenNoData`); a slot that finds it busy sends
    /// nothing and arms no timeout.
    pub(crate) fn set_send_queue_empty(&mut self, empty: bool) {
        self.queue_empty = empty;
    }

    /// Arms the slot with `interval` from the instant it was last armed
    /// (the last write or slot): called right after each, this is Mars's
    /// `GetNextHeartbeatInterval` at every arm.
    pub(crate) fn set_interval(&mut self, interval: Duration) {
        self.interval = interval;
        if !self.dead {
            self.next_slot = self.slot_armed_at + interval;
        }
    }

    /// Slots fired so far (the first one at connect).
    pub(crate) fn slots_fired(&self) -> u64 {
        self.slots_fired
    }

    /// Times the slot was armed so far (by a slot or a write).
    pub(crate) fn arms(&self) -> u64 {
        self.arms
    }

    /// Whether a noop or identify awaits its answer.
    pub(crate) fn is_waiting(&self) -> bool {
        self.pending.is_some()
    }

    /// Sends a noop now unless one (or the identify) already awaits its
    /// answer: stn tests a link that may be dead before writing a task on it.
    pub(crate) fn probe(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if !self.dead && self.pending.is_none() {
            self.send_noop(now, false);
        }
        self.refresh(now);
    }

    /// The connection's smoothed RTT, used by the stn profile's timeout.
    pub(crate) fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
    }

    /// Something was written on the connection: the next slot is one
    /// interval from now.
    pub(crate) fn on_write(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if !self.dead {
            self.arm_slot(now);
            self.written_since_ask = true;
        }
        self.refresh(now);
    }

    /// A noop response arrived.
    pub(crate) fn on_noop_response(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.pending.is_some_and(|p| !p.identify) {
            self.pending = None;
        }
        self.refresh(now);
    }

    /// The identify response arrived and the app judged it (`ok` = accepted;
    /// a rejection means ask again at the next slot, as Mars does).
    pub(crate) fn on_identify_response(&mut self, now: Instant, ok: bool) {
        let now = self.clock.observe(now);
        if !self.dead && self.identify == IdentifyState::Sent {
            self.identify = if ok {
                IdentifyState::Done
            } else {
                IdentifyState::Next
            };
            if self.pending.is_some_and(|p| p.identify) {
                self.pending = None;
            }
        }
        self.refresh(now);
    }

    /// The app's answer to [`HeartbeatAction::AskIdentify`]. Ignored unless
    /// an ask is outstanding.
    pub(crate) fn identify_answer(&mut self, now: Instant, decision: IdentifyDecision) {
        let now = self.clock.observe(now);
        if !self.dead && self.identify == IdentifyState::Asking {
            let late = self.ask_late;
            match decision {
                IdentifyDecision::Now { body, cmd_id } => {
                    self.identify = IdentifyState::Sent;
                    self.actions
                        .push_back(HeartbeatAction::SendIdentify { cmd_id, body });
                    // Replaces a noop sent while the app was deciding: both prove liveness.
                    self.pending = Some(Pending {
                        deadline: now + self.response_timeout(late),
                        identify: true,
                    });
                }
                IdentifyDecision::Next | IdentifyDecision::Never => {
                    self.identify = if decision == IdentifyDecision::Next {
                        IdentifyState::Next
                    } else {
                        IdentifyState::Never
                    };
                    if self.pending.is_none() && !self.written_since_ask && !self.ask_at_connect {
                        self.send_noop(now, late);
                    }
                }
            }
        }
        self.refresh(now);
    }

    /// Fires the slot or the response timeout due at `now`. Idempotent; safe
    /// to call early.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.refresh(now);
    }

    /// The next action, if any.
    pub(crate) fn poll_action(&mut self) -> Option<HeartbeatAction> {
        self.actions.pop_front()
    }

    /// The next deadline: the next slot or the pending response's timeout
    /// (`None` once timed out).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.dead {
            return None;
        }
        Some(match self.pending {
            Some(p) => p.deadline.min(self.next_slot),
            None => self.next_slot,
        })
    }

    /// Where identify stands.
    pub(crate) fn identify_state(&self) -> IdentifyState {
        self.identify
    }

    #[cfg(test)]
    /// Whether a response timed out (the machine does nothing more).
    pub(crate) fn is_timed_out(&self) -> bool {
        self.dead
    }

    /// The response timeout for a probe sent now; `late` = the interval that
    /// just ended lasted at least `late_after`.
    pub(crate) fn response_timeout(&self, late: bool) -> Duration {
        let fixed = if late {
            self.config.late_response_timeout
        } else {
            self.config.response_timeout
        };
        match (&self.config.rtt_scaled, self.rtt) {
            (Some(s), Some(rtt)) => rtt
                .checked_mul(s.multiplier)
                .unwrap_or(Duration::MAX)
                .clamp(s.min, s.max.max(s.min))
                .min(fixed),
            _ => fixed,
        }
    }

    fn arm_slot(&mut self, now: Instant) {
        self.arms += 1;
        self.slot_armed_at = now;
        self.next_slot = now + self.interval;
    }

    fn send_noop(&mut self, now: Instant, late: bool) {
        if !self.queue_empty {
            return;
        }
        self.actions.push_back(HeartbeatAction::SendNoop);
        self.pending = Some(Pending {
            deadline: now + self.response_timeout(late),
            identify: false,
        });
    }

    /// The one place where timers fire.
    fn refresh(&mut self, now: Instant) {
        if self.dead {
            return;
        }
        if let Some(p) = self.pending {
            if now >= p.deadline {
                self.dead = true;
                self.pending = None;
                self.actions.push_back(HeartbeatAction::Timeout {
                    identify: p.identify,
                });
                return;
            }
        }
        if now >= self.next_slot {
            let late = now - self.slot_armed_at >= self.config.late_after;
            self.slots_fired += 1;
            self.arm_slot(now);
            if self.pending.is_some() {
                // One probe at a time; the pending one already tests the link.
                return;
            }
            match self.identify {
                IdentifyState::NotAsked | IdentifyState::Next => {
                    self.ask_at_connect = self.identify == IdentifyState::NotAsked;
                    self.identify = IdentifyState::Asking;
                    self.ask_late = late;
                    self.written_since_ask = false;
                    self.actions.push_back(HeartbeatAction::AskIdentify);
                }
                // While the app is deciding, keep the link probed.
                IdentifyState::Asking
                | IdentifyState::Sent
                | IdentifyState::Done
                | IdentifyState::Never => self.send_noop(now, late),
            }
        }
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

    fn drain(h: &mut Heartbeat) -> Vec<HeartbeatAction> {
        std::iter::from_fn(|| h.poll_action()).collect()
    }

    use HeartbeatAction::{AskIdentify, SendNoop};

    /// A Mars heartbeat connected at `t0` whose app declined identify for
    /// good, with a noop just sent at `t0`.
    fn mars_never(t0: Instant) -> Heartbeat {
        let mut h = Heartbeat::new(t0, HeartbeatConfig::for_profile(Profile::Mars));
        assert_eq!(h.poll_timeout(), Some(t0));
        h.handle_timeout(t0);
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.identify_answer(t0, IdentifyDecision::Never);
        assert_eq!(drain(&mut h), vec![], "no noop at connect (Mars)");
        assert_eq!(h.poll_timeout(), Some(t0 + Duration::from_secs(210)));
        // The first slot, one interval later, brought forward to t0 so the
        // times below read from it.
        h.next_slot = t0;
        h.handle_timeout(t0);
        assert_eq!(drain(&mut h), vec![SendNoop]);
        h
    }

    #[test]
    fn noop_at_a_slot_then_every_interval() {
        let mut h = mars_never(t(100));
        assert_eq!(h.poll_timeout(), Some(t(108)));
        h.on_noop_response(t(101));
        assert_eq!(h.poll_timeout(), Some(t(310)));
        h.handle_timeout(t(309));
        assert_eq!(drain(&mut h), vec![]);
        h.handle_timeout(t(310));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        h.on_noop_response(t(311));
        h.handle_timeout(t(520));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        assert_eq!(h.identify_state(), IdentifyState::Never);
    }

    #[test]
    fn writes_rearm_the_interval() {
        let mut h = mars_never(t(0));
        h.on_noop_response(t(1));
        h.on_write(t(100));
        assert_eq!(h.poll_timeout(), Some(t(310)));
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![]);
        h.on_write(t(300));
        h.handle_timeout(t(310));
        assert_eq!(drain(&mut h), vec![]);
        h.handle_timeout(t(510));
        assert_eq!(drain(&mut h), vec![SendNoop]);
    }

    #[test]
    fn no_noop_right_behind_a_write_made_while_asking() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.on_write(t(0));
        h.identify_answer(t(0), IdentifyDecision::Never);
        assert_eq!(drain(&mut h), vec![], "the request re-armed the slot");
        assert_eq!(h.poll_timeout(), Some(t(210)), "and no response timeout");
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![SendNoop]);
    }

    #[test]
    fn no_noop_while_the_queue_is_busy() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.set_send_queue_empty(false);
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.identify_answer(t(0), IdentifyDecision::Never);
        assert_eq!(drain(&mut h), vec![], "busy queue: no noop");
        assert_eq!(h.poll_timeout(), Some(t(210)), "and no response timeout");
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![]);
        assert_eq!(h.poll_timeout(), Some(t(420)));
        h.set_send_queue_empty(true);
        h.handle_timeout(t(420));
        assert_eq!(drain(&mut h), vec![SendNoop]);
    }

    #[test]
    fn response_timeout_is_8s_or_5s_after_a_long_interval() {
        // Normal interval: 8 s.
        let mut h = mars_never(t(0));
        h.on_noop_response(t(1));
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        assert_eq!(h.poll_timeout(), Some(t(218)));
        h.on_noop_response(t(211));
        // The next alarm fires 15 min after it was armed (device slept): 5 s.
        h.handle_timeout(t(210 + 15 * 60));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        assert_eq!(h.poll_timeout(), Some(t(210 + 15 * 60 + 5)));
        h.on_noop_response(t(1111));
        // 15 min minus a millisecond: still 8 s.
        let armed = t(1110);
        h.handle_timeout(armed + Duration::from_millis(15 * 60 * 1000 - 1));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        assert_eq!(
            h.poll_timeout(),
            Some(armed + Duration::from_millis(15 * 60 * 1000 - 1 + 8000))
        );
    }

    #[test]
    fn noop_timeout_ends_the_machine() {
        let mut h = mars_never(t(0));
        h.handle_timeout(ms(7_999));
        assert_eq!(drain(&mut h), vec![]);
        h.handle_timeout(t(8));
        assert_eq!(
            drain(&mut h),
            vec![HeartbeatAction::Timeout { identify: false }]
        );
        assert!(h.is_timed_out());
        assert_eq!(h.poll_timeout(), None);
        h.on_noop_response(t(9));
        h.on_write(t(9));
        h.handle_timeout(t(10_000));
        assert_eq!(drain(&mut h), vec![], "nothing after the timeout");
    }

    #[test]
    fn a_response_at_the_deadline_still_counts() {
        let mut h = mars_never(t(0));
        h.on_noop_response(t(8));
        assert_eq!(drain(&mut h), vec![]);
        assert!(!h.is_timed_out());
    }

    #[test]
    fn identify_now_replaces_the_noop() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        // Identify is sent even with a busy queue (Mars uses `Send`, not `SendWhenNoData`).
        h.set_send_queue_empty(false);
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        let body = Bytes::from_static(b"auth");
        h.identify_answer(
            ms(10),
            IdentifyDecision::Now {
                body: body.clone(),
                cmd_id: 0x0100,
            },
        );
        assert_eq!(
            drain(&mut h),
            vec![HeartbeatAction::SendIdentify {
                cmd_id: 0x0100,
                body
            }]
        );
        assert_eq!(h.identify_state(), IdentifyState::Sent);
        assert_eq!(h.poll_timeout(), Some(ms(8_010)));
        // A noop response does not answer the identify.
        h.on_noop_response(t(1));
        assert_eq!(h.poll_timeout(), Some(ms(8_010)));
        h.on_identify_response(t(1), true);
        assert_eq!(h.identify_state(), IdentifyState::Done);
        assert_eq!(h.poll_timeout(), Some(t(210)));
        h.set_send_queue_empty(true);
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![SendNoop], "identify done: plain noops");
    }

    #[test]
    fn identify_rejected_asks_again_next_slot() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.handle_timeout(t(0));
        drain(&mut h);
        h.identify_answer(
            t(0),
            IdentifyDecision::Now {
                body: Bytes::new(),
                cmd_id: 1,
            },
        );
        drain(&mut h);
        h.on_identify_response(t(1), false);
        assert_eq!(h.identify_state(), IdentifyState::Next);
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
    }

    #[test]
    fn identify_next_sends_a_noop_and_asks_again() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.identify_answer(t(0), IdentifyDecision::Next);
        assert_eq!(drain(&mut h), vec![], "no noop at connect");
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.identify_answer(t(210), IdentifyDecision::Never);
        assert_eq!(drain(&mut h), vec![SendNoop]);
        h.on_noop_response(t(211));
        h.handle_timeout(t(420));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        // Unsolicited answers are ignored.
        h.identify_answer(t(421), IdentifyDecision::Next);
        assert_eq!(drain(&mut h), vec![]);
        assert_eq!(h.identify_state(), IdentifyState::Never);
    }

    #[test]
    fn identify_timeout_is_reported_as_such() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.handle_timeout(t(0));
        drain(&mut h);
        h.identify_answer(
            t(0),
            IdentifyDecision::Now {
                body: Bytes::new(),
                cmd_id: 1,
            },
        );
        drain(&mut h);
        h.handle_timeout(t(8));
        assert_eq!(
            drain(&mut h),
            vec![HeartbeatAction::Timeout { identify: true }]
        );
    }

    #[test]
    fn a_slow_identify_answer_does_not_stop_noops() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        // No answer yet: the next slot probes the link with a noop.
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        h.identify_answer(
            t(211),
            IdentifyDecision::Now {
                body: Bytes::new(),
                cmd_id: 9,
            },
        );
        assert_eq!(
            drain(&mut h),
            vec![HeartbeatAction::SendIdentify {
                cmd_id: 9,
                body: Bytes::new()
            }]
        );
        assert_eq!(h.poll_timeout(), Some(t(219)));
    }

    #[test]
    fn stn_scales_the_timeout_from_the_rtt() {
        let mut h = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Stn));
        assert_eq!(
            h.response_timeout(false),
            Duration::from_secs(8),
            "no RTT yet"
        );
        h.set_rtt(Duration::from_millis(100));
        assert_eq!(h.response_timeout(false), Duration::from_secs(3));
        h.set_rtt(Duration::from_millis(1_000));
        assert_eq!(h.response_timeout(false), Duration::from_secs(6));
        assert_eq!(h.response_timeout(true), Duration::from_secs(5));
        h.set_rtt(Duration::from_secs(60));
        assert_eq!(h.response_timeout(false), Duration::from_secs(8));
        h.set_rtt(Duration::MAX);
        assert_eq!(h.response_timeout(false), Duration::from_secs(8));
        // Mars ignores the RTT.
        let mut m = Heartbeat::new(t(0), HeartbeatConfig::for_profile(Profile::Mars));
        m.set_rtt(Duration::from_millis(100));
        assert_eq!(m.response_timeout(false), Duration::from_secs(8));
        // The stn schedule is Mars's.
        h.handle_timeout(t(0));
        assert_eq!(drain(&mut h), vec![AskIdentify]);
        h.set_rtt(Duration::from_millis(100));
        h.identify_answer(t(0), IdentifyDecision::Never);
        assert_eq!(drain(&mut h), vec![], "no noop at connect");
        h.handle_timeout(t(210));
        assert_eq!(drain(&mut h), vec![SendNoop]);
        assert_eq!(h.poll_timeout(), Some(t(213)));
        h.on_noop_response(t(211));
        assert_eq!(h.poll_timeout(), Some(t(420)));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Advance(u64),
        Fire,
        Write,
        QueueEmpty(bool),
        NoopResp,
        IdentifyResp(bool),
        Answer(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..1_200_000).prop_map(Op::Advance),
            Just(Op::Fire),
            Just(Op::Write),
            any::<bool>().prop_map(Op::QueueEmpty),
            Just(Op::NoopResp),
            any::<bool>().prop_map(Op::IdentifyResp),
            (0u8..3).prop_map(Op::Answer),
        ]
    }

    fn run_ops(
        profile: Profile,
        ops: &[Op],
    ) -> Result<Vec<(Instant, HeartbeatAction)>, TestCaseError> {
        let mut h = Heartbeat::new(t(1), HeartbeatConfig::for_profile(profile));
        h.set_rtt(Duration::from_millis(300));
        let mut now = t(1);
        let mut queue_empty = true;
        let mut trace = Vec::new();
        for op in ops {
            match op {
                Op::Advance(d) => {
                    now += Duration::from_millis(*d);
                    continue;
                }
                Op::Fire => {
                    let Some(d) = h.poll_timeout() else { continue };
                    now = now.max(d);
                    h.handle_timeout(now);
                }
                Op::Write => h.on_write(now),
                Op::QueueEmpty(e) => {
                    queue_empty = *e;
                    h.set_send_queue_empty(*e);
                    continue;
                }
                Op::NoopResp => h.on_noop_response(now),
                Op::IdentifyResp(ok) => h.on_identify_response(now, *ok),
                Op::Answer(k) => {
                    let d = match k {
                        0 => IdentifyDecision::Now {
                            body: Bytes::from_static(b"id"),
                            cmd_id: 7,
                        },
                        1 => IdentifyDecision::Next,
                        _ => IdentifyDecision::Never,
                    };
                    h.identify_answer(now, d);
                }
            }
            let dead_before = trace
                .iter()
                .any(|(_, a)| matches!(a, HeartbeatAction::Timeout { .. }));
            while let Some(a) = h.poll_action() {
                prop_assert!(!dead_before, "action after a timeout");
                if a == SendNoop {
                    prop_assert!(queue_empty, "noop with a busy queue");
                }
                trace.push((now, a));
            }
            prop_assert!(
                h.poll_timeout().is_none_or(|d| d > now),
                "deadline not in the future"
            );
        }
        Ok(trace)
    }

    proptest! {
        #[test]
        fn heartbeat_invariants_and_determinism(
            profile in prop_oneof![Just(Profile::Mars), Just(Profile::Stn)],
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let a = run_ops(profile, &ops)?;
            let b = run_ops(profile, &ops)?;
            prop_assert_eq!(a, b);
        }
    }
}
