//! The congestion window and the sender's congestion state (Linux's
//! `icsk_ca_state`), with proportional rate reduction in recovery.

/// Linux's congestion states (`tcp_fastretrans_alert`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaState {
    /// Nothing dubious.
    Open,
    /// SACKs or duplicate ACKs seen, no loss proven.
    Disorder,
    /// The window was reduced without recovery (a tail loss probe repaired
    /// a loss).
    Cwr,
    /// Retransmitting what loss detection marked lost, until `high_seq` is
    /// acknowledged.
    Recovery { high_seq: u64 },
    /// After a retransmission timeout, until `high_seq` is acknowledged.
    Loss { high_seq: u64 },
}

/// The congestion window (segments) and its state.
#[derive(Clone, Debug)]
pub(crate) struct Window {
    pub(crate) cwnd: u32,
    pub(crate) ssthresh: u32,
    /// Segments acknowledged towards the next congestion-avoidance step.
    ca_acked: u32,
    max: u32,
    /// The multiplicative decrease as (numerator, denominator): CUBIC's β.
    beta: (u32, u32),
    pub(crate) state: CaState,
    /// Window and threshold before the last reduction (for an undo).
    prior_cwnd: u32,
    prior_ssthresh: u32,
    /// PRR's counters (RFC 6937): delivered and sent since recovery began.
    prr_delivered: u32,
    prr_out: u32,
}

impl Window {
    /// `initial` segments, capped at `max`; `beta` the stack's decrease.
    pub(crate) fn new(initial: u32, max: u32, beta: (u32, u32)) -> Self {
        let max = max.max(1);
        Window {
            cwnd: initial.clamp(1, max),
            ssthresh: u32::MAX,
            ca_acked: 0,
            max,
            beta,
            state: CaState::Open,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            prr_delivered: 0,
            prr_out: 0,
        }
    }

    /// The handshake needed retransmissions (Linux's `tcp_init_transfer`:
    /// more than one and not spurious): start from one segment.
    pub(crate) fn restart_from_one(&mut self) {
        self.cwnd = 1;
    }

    /// Slow start below ssthresh, then one segment per window of ACKs;
    /// never above the receive-window cap.
    pub(crate) fn grow(&mut self, segs: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(segs);
        } else {
            self.ca_acked = self.ca_acked.saturating_add(segs);
            while self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += 1;
            }
        }
        self.cwnd = self.cwnd.min(self.max);
    }

    /// The decreased threshold: β × cwnd, at least 2 (CUBIC's
    /// `bictcp_recalc_ssthresh`; xnu's `tcp_cubic_backoff`).
    fn reduced(&self) -> u32 {
        (self.cwnd * self.beta.0 / self.beta.1).max(2)
    }

    /// Enters recovery (`tcp_enter_recovery` with `tcp_init_cwnd_reduction`)
    /// until `high_seq` is acknowledged.
    pub(crate) fn enter_recovery(&mut self, high_seq: u64) {
        self.save_prior();
        self.ssthresh = self.reduced();
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.state = CaState::Recovery { high_seq };
    }

    /// xnu's fast recovery: the window drops to the threshold at once.
    pub(crate) fn enter_recovery_halved(&mut self, high_seq: u64) {
        self.enter_recovery(high_seq);
        self.cwnd = self.ssthresh;
    }

    /// A tail loss probe repaired a loss (`tcp_process_tlp_ack`): the window
    /// is reduced once, no recovery.
    pub(crate) fn cwr(&mut self) {
        self.save_prior();
        self.ssthresh = self.reduced();
        self.cwnd = self.ssthresh.min(self.cwnd);
        self.state = CaState::Cwr;
    }

    /// `tcp_enter_loss`: reduce the threshold unless this loss episode
    /// already did, and restart from what is still in flight plus one.
    pub(crate) fn enter_loss(&mut self, high_seq: u64, in_flight: u32, first_timeout: bool) {
        let reduce = matches!(self.state, CaState::Open | CaState::Disorder) || first_timeout;
        if reduce {
            self.save_prior();
            self.ssthresh = self.reduced();
        }
        self.cwnd = in_flight + 1;
        self.ca_acked = 0;
        self.state = CaState::Loss { high_seq };
    }

    fn save_prior(&mut self) {
        self.prior_cwnd = self.cwnd;
        self.prior_ssthresh = self.ssthresh;
    }

    /// Undoes the last reduction (a retransmission proved spurious).
    pub(crate) fn undo(&mut self) {
        if self.prior_cwnd > 0 {
            self.cwnd = self.cwnd.max(self.prior_cwnd).min(self.max);
            self.ssthresh = self.ssthresh.max(self.prior_ssthresh);
        }
        self.state = CaState::Open;
    }

    /// Leaves recovery or CWR: the window settles at the threshold
    /// (`tcp_end_cwnd_reduction`).
    pub(crate) fn end_reduction(&mut self) {
        if self.ssthresh < u32::MAX {
            self.cwnd = self.cwnd.min(self.ssthresh).max(1);
        }
        self.state = CaState::Open;
    }

    /// `true` in recovery or CWR (`tcp_in_cwnd_reduction`).
    pub(crate) fn in_reduction(&self) -> bool {
        matches!(self.state, CaState::Recovery { .. } | CaState::Cwr)
    }

    /// Counts segments sent during the reduction (PRR's `prr_out`).
    pub(crate) fn on_sent(&mut self, segs: u32) {
        if self.in_reduction() {
            self.prr_out = self.prr_out.saturating_add(segs);
        }
    }

    /// `tcp_cwnd_reduction` (PRR, RFC 6937): `delivered` segments were
    /// newly acknowledged or SACKed, `in_flight` remain in flight, `lost`
    /// were newly marked lost, `una_advanced` the ACK moved `snd_una`.
    pub(crate) fn prr(&mut self, delivered: u32, in_flight: u32, lost: u32, una_advanced: bool) {
        if delivered == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered = self.prr_delivered.saturating_add(delivered);
        let ss = i64::from(self.ssthresh);
        let delta = ss - i64::from(in_flight);
        let sndcnt = if delta < 0 {
            let dividend = ss * i64::from(self.prr_delivered) + i64::from(self.prior_cwnd) - 1;
            dividend / i64::from(self.prior_cwnd) - i64::from(self.prr_out)
        } else if una_advanced && lost == 0 {
            delta.min(
                (i64::from(self.prr_delivered) - i64::from(self.prr_out)).max(i64::from(delivered))
                    + 1,
            )
        } else {
            delta.min(i64::from(delivered))
        };
        // Force a fast retransmit upon entering recovery.
        let sndcnt = sndcnt.max(i64::from(self.prr_out == 0));
        let cwnd = i64::from(in_flight) + sndcnt.max(0);
        self.cwnd = u32::try_from(cwnd).unwrap_or(u32::MAX).clamp(1, self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBIC: (u32, u32) = (717, 1024);

    #[test]
    fn slow_start_then_congestion_avoidance_within_the_cap() {
        let mut w = Window::new(10, 64, CUBIC);
        w.grow(10);
        assert_eq!(w.cwnd, 20);
        w.ssthresh = 20;
        w.grow(20);
        assert_eq!(w.cwnd, 21);
        w.grow(1000);
        assert!(w.cwnd <= 64);
    }

    #[test]
    fn recovery_reduces_by_cubic_beta_and_prr_paces_the_retransmissions() {
        let mut w = Window::new(10, 64, CUBIC);
        w.enter_recovery(100);
        assert_eq!(w.ssthresh, 7);
        // The first ACK in recovery: at least the fast retransmit.
        w.prr(1, 8, 1, false);
        assert_eq!(w.cwnd, 9);
        w.on_sent(1);
        w.end_reduction();
        assert_eq!(w.cwnd, 7);
    }

    #[test]
    fn a_timeout_restarts_from_one_and_an_undo_restores() {
        let mut w = Window::new(10, 64, CUBIC);
        w.enter_loss(100, 0, true);
        assert_eq!((w.cwnd, w.ssthresh), (1, 7));
        w.undo();
        assert_eq!((w.cwnd, w.ssthresh), (10, u32::MAX));
    }
}
