//! When a receiver acknowledges: Linux's delayed-ACK machine (quick-ack
//! mode at connection start, ping-pong mode for request/response traffic,
//! the adaptive `ato`) and xnu's (delay a lone segment without PSH).

use stn_proto::{Duration, Instant};

use super::TimerPolicy;

/// A stack's delayed-ACK rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckPolicy {
    /// Linux (`net/ipv4/tcp_input.c`: `tcp_event_data_recv`,
    /// `__tcp_ack_snd_check`, `tcp_enter_quickack_mode`;
    /// `net/ipv4/tcp_output.c`: `tcp_send_delayed_ack`,
    /// `tcp_event_data_sent`; `net/ipv4/tcp_timer.c`:
    /// `tcp_delack_timer_handler`; `tcp.c`: `tcp_cleanup_rbuf`).
    Linux,
    /// xnu's legacy strategy (`tcp_cc_delay_ack`, `tcp_delack_enabled` 3,
    /// as in xnu-4570, 2017): a segment without PSH that is the only one
    /// unacknowledged waits up to `tcp_delack` (100 ms); anything else is
    /// acknowledged at once. The stretch-ACK mode of bulk transfers is not
    /// modelled.
    XnuLegacy,
}

/// `TCP_ATO_MIN` and `TCP_DELACK_MIN`: HZ/25.
pub(crate) const LINUX_ATO_MIN: Duration = Duration::from_millis(40);
/// `TCP_DELACK_MAX`: HZ/5.
pub(crate) const LINUX_DELACK_MAX: Duration = Duration::from_millis(200);
/// The bound `tcp_send_delayed_ack` starts from outside ping-pong mode
/// (`HZ / 2`).
const LINUX_ATO_CAP: Duration = Duration::from_millis(500);
/// `TCP_MAX_QUICKACKS`.
pub(crate) const LINUX_MAX_QUICKACKS: u32 = 16;
/// `tcp_initialize_rcv_mss`' first guess of the peer's MSS
/// (`TCP_MSS_DEFAULT`, 536).
const LINUX_RCV_MSS_GUESS: u64 = 536;
/// `TCP_MIN_MSS`.
const LINUX_MIN_MSS: u64 = 88;
/// xnu's `tcp_delack` (`TCP_RETRANSHZ / 10`).
pub(crate) const XNU_DELACK: Duration = Duration::from_millis(100);

/// What the receiver does about an ACK it owes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AckNow {
    /// Send it now.
    Now,
    /// Leave it to the delayed-ACK timer (already armed).
    Later,
}

/// One receiver's ACK state (`icsk_ack`).
#[derive(Clone, Debug)]
pub(crate) struct DelayedAck {
    policy: AckPolicy,
    /// An ACK of new data is owed (`ICSK_ACK_SCHED`).
    scheduled: bool,
    /// Quick-ACK credits (`icsk_ack.quick`).
    quick: u32,
    /// Ping-pong (interactive) mode: `pingpong >= tcp_pingpong_thresh` (1).
    pingpong: bool,
    /// The delayed-ACK timeout (`icsk_ack.ato`); zero before the first data.
    ato: Duration,
    /// When data last arrived (`icsk_ack.lrcvtime`).
    lrcvtime: Option<Instant>,
    /// `ICSK_ACK_PUSHED` / `ICSK_ACK_PUSHED2`.
    pushed: bool,
    pushed2: bool,
    /// A one-time immediate ACK is due (`ICSK_ACK_NOW`).
    now_due: bool,
    /// The delayed-ACK timer: when it is due (`icsk_ack.timeout`) and when
    /// the kernel's timer actually fires.
    timer: Option<(Instant, Instant)>,
    timers: TimerPolicy,
    /// Linux's estimate of the peer's MSS (`icsk_ack.rcv_mss`) and the last
    /// small segment's size (`last_seg_size`).
    rcv_mss: u64,
    last_seg_size: u64,
    /// Quick-ACK credits a burst of data earns: half the receive window in
    /// peer-sized segments, at most 16 (`tcp_incr_quickack`).
    quick_budget: u32,
    /// Segments received and not yet acknowledged (xnu's `t_unacksegs`).
    unacked_segs: u32,
}

impl DelayedAck {
    /// A fresh connection's state; `rcv_wnd` is the receive window offered,
    /// `mss` the local MSS.
    pub(crate) fn new(policy: AckPolicy, timers: TimerPolicy, rcv_wnd: u64, mss: u64) -> Self {
        let rcv_mss = LINUX_RCV_MSS_GUESS
            .min(mss)
            .min(rcv_wnd / 2)
            .max(LINUX_MIN_MSS);
        DelayedAck {
            policy,
            scheduled: false,
            quick: 0,
            pingpong: false,
            ato: Duration::ZERO,
            lrcvtime: None,
            pushed: false,
            pushed2: false,
            now_due: false,
            timer: None,
            timers,
            rcv_mss,
            last_seg_size: 0,
            quick_budget: u32::try_from((rcv_wnd / (2 * rcv_mss)).max(2))
                .unwrap_or(u32::MAX)
                .min(LINUX_MAX_QUICKACKS),
            unacked_segs: 0,
        }
    }

    /// The connection completed its handshake at `now` (`tcp_finish_connect`
    /// sets `lrcvtime`).
    pub(crate) fn on_established(&mut self, now: Instant) {
        self.lrcvtime = Some(now);
    }

    /// When the delayed-ACK timer fires, if armed.
    pub(crate) fn timeout(&self) -> Option<Instant> {
        self.timer.map(|(_, fires)| fires)
    }

    fn arm(&mut self, now: Instant, due: Instant) {
        self.timer = Some((due, self.timers.expiry(now, due - now)));
    }

    /// In-order or out-of-order data of `len` bytes arrived
    /// (`tcp_event_data_recv`, with `tcp_measure_rcv_mss`); `rto` is the
    /// connection's current RTO.
    pub(crate) fn on_data(&mut self, now: Instant, len: u64, psh: bool, mss: u64, rto: Duration) {
        self.scheduled = true;
        self.unacked_segs = self.unacked_segs.saturating_add(1);
        if self.policy == AckPolicy::XnuLegacy {
            return;
        }
        self.measure_rcv_mss(len, psh, mss);
        if self.ato.is_zero() {
            // The first data: start the delayed-ACK engine in quick mode.
            self.incr_quickack();
            self.ato = LINUX_ATO_MIN;
        } else if let Some(last) = self.lrcvtime {
            let m = now - last;
            if m <= LINUX_ATO_MIN / 2 {
                self.ato = self.ato / 2 + LINUX_ATO_MIN / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(rto);
            } else if m > rto {
                // Too long a gap: the sender restarts from a small window.
                self.incr_quickack();
            }
        }
        self.lrcvtime = Some(now);
    }

    fn measure_rcv_mss(&mut self, len: u64, psh: bool, mss: u64) {
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(mss);
            if psh {
                self.pushed = true;
            }
            return;
        }
        if len >= LINUX_RCV_MSS_GUESS || (len >= LINUX_MIN_MSS && !psh) {
            let lss = self.last_seg_size;
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        if self.pushed {
            self.pushed2 = true;
        }
        self.pushed = true;
    }

    fn incr_quickack(&mut self) {
        self.quick = self.quick.max(self.quick_budget);
    }

    /// `tcp_enter_quickack_mode`: a duplicate or out-of-window segment
    /// (our ACK was probably lost): ACK every segment for a while.
    pub(crate) fn enter_quickack_mode(&mut self) {
        if self.policy != AckPolicy::Linux {
            return;
        }
        self.incr_quickack();
        self.pingpong = false;
        self.ato = LINUX_ATO_MIN;
    }

    /// A one-time immediate ACK is due (`ICSK_ACK_NOW`: a hole filled, an
    /// out-of-order or duplicate segment).
    pub(crate) fn ack_now(&mut self) {
        self.scheduled = true;
        self.now_due = true;
    }

    /// `__tcp_ack_snd_check` after a segment: `unacked` is the in-order data
    /// not yet acknowledged (`rcv_nxt - rcv_wup`), `ofo` whether an
    /// out-of-order queue exists, `psh` whether the segment had PSH, `srtt`
    /// the smoothed RTT.
    pub(crate) fn check(
        &mut self,
        now: Instant,
        unacked: u64,
        ofo: bool,
        psh: bool,
        srtt: Option<Duration>,
    ) -> AckNow {
        if !self.scheduled {
            return AckNow::Later;
        }
        match self.policy {
            AckPolicy::Linux => {
                let quick = self.quick > 0 && !self.pingpong;
                if unacked > self.rcv_mss || quick || self.now_due || ofo {
                    // Out of order: the first dupacks go at once (later
                    // ones may be compressed by up to 1 ms, not modelled).
                    return AckNow::Now;
                }
                self.send_delayed(now, srtt)
            }
            AckPolicy::XnuLegacy => {
                if !psh && self.unacked_segs == 1 && !self.now_due && !ofo {
                    if self.timer.is_none() {
                        self.arm(now, now + XNU_DELACK);
                    }
                    AckNow::Later
                } else {
                    AckNow::Now
                }
            }
        }
    }

    /// `tcp_send_delayed_ack`.
    fn send_delayed(&mut self, now: Instant, srtt: Option<Duration>) -> AckNow {
        let mut ato = self.ato;
        if ato > LINUX_ATO_MIN {
            let mut max_ato = if self.pingpong || self.pushed {
                LINUX_DELACK_MAX
            } else {
                LINUX_ATO_CAP
            };
            if let Some(s) = srtt {
                let rtt = s.max(LINUX_ATO_MIN);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        let mut timeout = now + ato;
        if let Some((pending, _)) = self.timer {
            // About to fire anyway: ACK now.
            if pending <= now + ato / 4 {
                return AckNow::Now;
            }
            if pending <= timeout {
                return AckNow::Later;
            }
            timeout = pending.min(timeout);
        }
        self.arm(now, timeout);
        AckNow::Later
    }

    /// The application read the data at once (`tcp_cleanup_rbuf`): `true`
    /// when that sends the owed ACK now.
    pub(crate) fn on_read(&self, unacked: u64) -> bool {
        self.policy == AckPolicy::Linux
            && self.scheduled
            && (unacked > self.rcv_mss || self.pushed2 || (self.pushed && !self.pingpong))
    }

    /// A segment carrying an ACK of everything received left
    /// (`tcp_event_ack_sent`): spends a quick-ACK credit if it acknowledged
    /// new data, and clears the owed ACK and its timer.
    pub(crate) fn on_ack_sent(&mut self) {
        if self.scheduled && self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = LINUX_ATO_MIN;
            }
        }
        self.scheduled = false;
        self.pushed = false;
        self.pushed2 = false;
        self.now_due = false;
        self.timer = None;
        self.unacked_segs = 0;
    }

    /// New data left at `now` (`tcp_event_data_sent`): an answer within
    /// `ato` of the last data received makes the connection interactive
    /// (ping-pong mode, threshold 1).
    pub(crate) fn on_data_sent(&mut self, now: Instant) {
        if self.policy != AckPolicy::Linux {
            return;
        }
        if let Some(last) = self.lrcvtime {
            if now - last < self.ato {
                self.pingpong = true;
            }
        }
    }

    /// The FIN arrived (`tcp_fin`: CLOSE_WAIT enters ping-pong mode).
    pub(crate) fn on_fin(&mut self) {
        self.scheduled = true;
        if self.policy == AckPolicy::Linux {
            self.pingpong = true;
        }
    }

    /// The delayed-ACK timer fired: `true` when an ACK is owed and goes now
    /// (`tcp_delack_timer_handler`: outside ping-pong mode a missed delayed
    /// ACK inflates `ato`, inside it leaves ping-pong mode).
    pub(crate) fn on_timer(&mut self, now: Instant, rto: Duration) -> bool {
        match self.timer {
            Some((_, fires)) if fires <= now => {}
            _ => return false,
        }
        self.timer = None;
        if !self.scheduled {
            return false;
        }
        if self.policy == AckPolicy::Linux {
            if self.pingpong {
                self.pingpong = false;
                self.ato = LINUX_ATO_MIN;
            } else {
                self.ato = (self.ato * 2).min(rto);
            }
        }
        true
    }

    /// Whether the connection is in ping-pong mode (for tests).
    #[cfg(test)]
    pub(crate) fn is_pingpong(&self) -> bool {
        self.pingpong
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    const RTO: Duration = Duration::from_millis(260);

    #[test]
    fn linux_acks_the_first_segments_at_once_then_delays_in_pingpong() {
        let mut a = DelayedAck::new(AckPolicy::Linux, TimerPolicy::Exact, 64 * 1460, 1460);
        a.on_established(at(0));
        // A request: quick mode, ACK now.
        a.on_data(at(100), 200, true, 1460, RTO);
        assert_eq!(a.check(at(100), 200, false, true, None), AckNow::Now);
        a.on_ack_sent();
        // The answer goes out 1 ms later: ping-pong mode.
        a.on_data_sent(at(101));
        assert!(a.is_pingpong());
        // The next request: no quick ACK in ping-pong mode; delayed 40 ms,
        // and not sent on read either.
        a.on_data(at(300), 200, true, 1460, RTO);
        assert_eq!(a.check(at(300), 200, false, true, None), AckNow::Later);
        assert_eq!(a.timeout(), Some(at(340)));
        assert!(!a.on_read(200));
        // Nothing answers: the timer sends it and leaves ping-pong mode.
        assert!(a.on_timer(at(340), RTO));
        assert!(!a.is_pingpong());
    }

    #[test]
    fn linux_outside_pingpong_a_read_acks_a_pushed_segment() {
        let mut a = DelayedAck::new(AckPolicy::Linux, TimerPolicy::Exact, 64 * 1460, 1460);
        a.on_established(at(0));
        for k in 0..LINUX_MAX_QUICKACKS {
            a.on_data(at(10 + u64::from(k) * 100), 100, true, 1460, RTO);
            assert_eq!(a.check(at(10), 100, false, true, None), AckNow::Now);
            a.on_ack_sent();
        }
        // Quick credits spent, not interactive: delayed, but the read of a
        // pushed segment sends it.
        a.on_data(at(5000), 100, true, 1460, Duration::from_secs(10));
        assert_eq!(a.check(at(5000), 100, false, true, None), AckNow::Later);
        assert!(a.on_read(100));
    }

    #[test]
    fn linux_out_of_order_and_two_full_segments_ack_at_once() {
        let mut a = DelayedAck::new(AckPolicy::Linux, TimerPolicy::Exact, 64 * 1460, 1460);
        a.on_established(at(0));
        a.on_data(at(1), 1460, false, 1460, RTO);
        a.on_ack_sent();
        a.on_data_sent(at(2)); // ping-pong
        a.on_data(at(50), 1460, false, 1460, RTO);
        assert_eq!(a.check(at(50), 1460, false, false, None), AckNow::Later);
        a.on_data(at(51), 1460, false, 1460, RTO);
        assert_eq!(a.check(at(51), 2920, false, false, None), AckNow::Now);
        a.on_ack_sent();
        a.on_data(at(60), 1460, false, 1460, RTO);
        assert_eq!(a.check(at(60), 0, true, false, None), AckNow::Now);
    }

    #[test]
    fn xnu_delays_only_a_lone_segment_without_psh() {
        let mut a = DelayedAck::new(AckPolicy::XnuLegacy, TimerPolicy::Exact, 64 * 1460, 1460);
        a.on_data(at(0), 300, true, 1460, RTO);
        assert_eq!(a.check(at(0), 300, false, true, None), AckNow::Now);
        a.on_ack_sent();
        a.on_data(at(10), 1460, false, 1460, RTO);
        assert_eq!(a.check(at(10), 1460, false, false, None), AckNow::Later);
        assert_eq!(a.timeout(), Some(at(110)));
        a.on_data(at(11), 1460, false, 1460, RTO);
        assert_eq!(a.check(at(11), 2920, false, false, None), AckNow::Now);
    }
}
