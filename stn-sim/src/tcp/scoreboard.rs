//! The sender's scoreboard: every segment sent and not yet cumulatively
//! acknowledged, with the tags Linux keeps per `skb` (SACKed, lost,
//! retransmitted) and RACK's record of the latest delivery (RFC 8985 §6).

use std::collections::VecDeque;

use stn_proto::{Duration, Instant};

/// One segment on the scoreboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sent {
    /// First sequence number.
    pub(crate) seq: u64,
    /// One past the last (a FIN counts one).
    pub(crate) end: u64,
    /// Carries the FIN.
    pub(crate) fin: bool,
    /// Last (re)transmission.
    pub(crate) xmit: Instant,
    /// Ever retransmitted (`TCPCB_EVER_RETRANS`).
    pub(crate) retransmitted: bool,
    /// SACKed by the receiver (`TCPCB_SACKED_ACKED`).
    pub(crate) sacked: bool,
    /// Marked lost (`TCPCB_LOST`).
    pub(crate) lost: bool,
    /// Retransmitted since it was marked lost and that copy is in flight
    /// (`TCPCB_SACKED_RETRANS`).
    pub(crate) rexmit_out: bool,
}

impl Sent {
    /// Still counted in flight (`tcp_packets_in_flight`).
    fn in_flight(&self) -> bool {
        !self.sacked && (!self.lost || self.rexmit_out)
    }

    /// Waiting to be retransmitted.
    pub(crate) fn needs_retransmit(&self) -> bool {
        self.lost && !self.rexmit_out && !self.sacked
    }
}

/// What an ACK did to the scoreboard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AckedInfo {
    /// Segments newly acknowledged cumulatively.
    pub(crate) acked: u32,
    /// Segments newly SACKed.
    pub(crate) sacked: u32,
    /// Send time of the oldest newly (cumulatively) acknowledged segment
    /// that was never retransmitted, when none of them was (Karn's rule:
    /// Linux's `seq_rtt_us`).
    pub(crate) first_ackt: Option<Instant>,
    /// Some newly acknowledged segment had been retransmitted
    /// (`FLAG_RETRANS_DATA_ACKED`).
    pub(crate) retrans_acked: bool,
    /// Send time of the oldest newly SACKed never-retransmitted segment
    /// (`sack_rtt_us`).
    pub(crate) first_sackt: Option<Instant>,
}

/// RACK's state (`tp->rack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rack {
    /// Send time and end of the most recently sent segment delivered.
    xmit: Option<Instant>,
    end_seq: u64,
    /// RTT of that delivery.
    rtt: Duration,
    /// A delivery moved the record since the last loss check.
    advanced: bool,
}

/// The scoreboard.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<Sent>,
    rack: Rack,
    /// The lowest RTT seen (Linux's windowed `rtt_min`, unwindowed here).
    min_rtt: Option<Duration>,
}

impl Scoreboard {
    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Segments sent and not cumulatively acknowledged (`packets_out`).
    pub(crate) fn packets_out(&self) -> usize {
        self.segs.len()
    }

    /// `tcp_packets_in_flight`: packets out − SACKed − lost + retransmitted.
    pub(crate) fn in_flight(&self) -> u32 {
        u32::try_from(self.segs.iter().filter(|s| s.in_flight()).count()).unwrap_or(u32::MAX)
    }

    /// SACKed segments (`sacked_out`).
    pub(crate) fn sacked_out(&self) -> usize {
        self.segs.iter().filter(|s| s.sacked).count()
    }

    /// The oldest segment.
    pub(crate) fn head(&self) -> Option<&Sent> {
        self.segs.front()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Sent> {
        self.segs.get(i)
    }

    /// `true` when some segment waits to be retransmitted.
    pub(crate) fn any_lost(&self) -> bool {
        self.segs.iter().any(Sent::needs_retransmit)
    }

    /// The first segment waiting to be retransmitted.
    pub(crate) fn next_lost(&self) -> Option<usize> {
        self.segs.iter().position(Sent::needs_retransmit)
    }

    /// A new segment left.
    pub(crate) fn push(&mut self, seq: u64, end: u64, fin: bool, now: Instant) {
        self.segs.push_back(Sent {
            seq,
            end,
            fin,
            xmit: now,
            retransmitted: false,
            sacked: false,
            lost: false,
            rexmit_out: false,
        });
    }

    /// Segment `i` was retransmitted at `now`.
    pub(crate) fn retransmitted(&mut self, i: usize, now: Instant) {
        if let Some(s) = self.segs.get_mut(i) {
            s.xmit = now;
            s.retransmitted = true;
            if s.lost {
                s.rexmit_out = true;
            }
        }
    }

    /// Marks segment `i` lost (`tcp_mark_skb_lost`); a lost retransmission
    /// is due again.
    fn mark_lost(&mut self, i: usize) {
        if let Some(s) = self.segs.get_mut(i) {
            if s.sacked {
                return;
            }
            s.lost = true;
            s.rexmit_out = false;
        }
    }

    /// Marks every segment lost but the SACKed ones (go-back-N after a
    /// timeout with the SACK information kept; Linux's
    /// `tcp_timeout_mark_lost` with RACK spares segments sent less than
    /// an RTT ago, other than the head).
    pub(crate) fn mark_all_lost(&mut self, now: Instant, spare_recent: bool) {
        let rtt = self.rack.rtt;
        for i in 0..self.segs.len() {
            let recent = spare_recent && i > 0 && now - self.segs[i].xmit < rtt;
            if !recent {
                self.mark_lost(i);
            }
        }
    }

    /// Forgets every SACK and loss tag (xnu's `tcp_free_sackholes` on a
    /// timeout, before it resends from `snd_una`).
    pub(crate) fn clear_tags(&mut self) {
        for s in &mut self.segs {
            s.sacked = false;
            s.lost = false;
            s.rexmit_out = false;
        }
    }

    /// Un-marks every loss (an undo after a spurious retransmission).
    pub(crate) fn unmark_lost(&mut self) {
        for s in &mut self.segs {
            s.lost = false;
            s.rexmit_out = false;
        }
    }

    /// Applies a cumulative ACK up to `ack` and the SACK `blocks`, at `now`.
    pub(crate) fn on_ack(&mut self, now: Instant, ack: u64, blocks: &[(u64, u64)]) -> AckedInfo {
        let mut info = AckedInfo::default();
        for &(start, end) in blocks {
            for i in 0..self.segs.len() {
                let s = self.segs[i];
                if s.sacked || s.seq < start || s.end > end || s.end <= ack {
                    continue;
                }
                self.segs[i].sacked = true;
                info.sacked += 1;
                if !s.retransmitted {
                    info.first_sackt = Some(info.first_sackt.map_or(s.xmit, |t| t.min(s.xmit)));
                }
                self.rack_advance(now, s.xmit, s.end, s.retransmitted);
            }
        }
        let mut first_ackt: Option<Instant> = None;
        while let Some(s) = self.segs.front().copied() {
            if s.end > ack {
                break;
            }
            self.segs.pop_front();
            info.acked += 1;
            if s.retransmitted {
                info.retrans_acked = true;
            } else if !s.sacked {
                first_ackt = Some(first_ackt.map_or(s.xmit, |t| t.min(s.xmit)));
            }
            if !s.sacked {
                self.rack_advance(now, s.xmit, s.end, s.retransmitted);
            }
        }
        if !info.retrans_acked {
            info.first_ackt = first_ackt;
        }
        info
    }

    /// `tcp_rack_advance`: a delivery of a segment sent at `xmit`; an
    /// ambiguous one (retransmitted, and acknowledged faster than the
    /// lowest RTT) does not count.
    fn rack_advance(&mut self, now: Instant, xmit: Instant, end: u64, retransmitted: bool) {
        let rtt = now - xmit;
        if retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        let later = match self.rack.xmit {
            None => true,
            Some(t) => xmit > t || (xmit == t && end > self.rack.end_seq),
        };
        if later {
            self.rack.xmit = Some(xmit);
            self.rack.end_seq = end;
        }
    }

    /// Records an RTT sample for the lowest-RTT filter.
    pub(crate) fn note_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// RACK's loss detection (`tcp_rack_detect_loss`, RFC 8985 §6.2): a
    /// segment sent before the latest delivered one is lost once
    /// RACK.rtt + `reo_wnd` has passed since it was sent. Returns how many
    /// it marked and, for the others still waiting, the longest remaining
    /// wait (the reordering timer).
    pub(crate) fn rack_detect_loss(
        &mut self,
        now: Instant,
        reo_wnd: Duration,
    ) -> (u32, Option<Duration>) {
        let Some(rack_xmit) = self.rack.xmit else {
            return (0, None);
        };
        let mut marked = 0;
        let mut wait: Option<Duration> = None;
        // In send order: the retransmitted ones count by their new send time.
        let mut order: Vec<usize> = (0..self.segs.len()).collect();
        order.sort_by_key(|&i| (self.segs[i].xmit, self.segs[i].seq));
        for i in order {
            let s = self.segs[i];
            if s.sacked || (s.lost && !s.rexmit_out) {
                continue;
            }
            let sent_before =
                s.xmit < rack_xmit || (s.xmit == rack_xmit && s.end < self.rack.end_seq);
            if !sent_before {
                break;
            }
            let deadline = s.xmit + self.rack.rtt + reo_wnd;
            if deadline <= now {
                self.mark_lost(i);
                marked += 1;
            } else {
                let left = deadline - now;
                wait = Some(wait.map_or(left, |w| w.max(left)));
            }
        }
        (marked, wait)
    }

    /// Runs RACK if a delivery advanced its record (`tcp_rack_mark_lost`).
    pub(crate) fn rack_mark_lost(
        &mut self,
        now: Instant,
        reo_wnd: Duration,
    ) -> (u32, Option<Duration>) {
        if !self.rack.advanced {
            return (0, None);
        }
        self.rack.advanced = false;
        self.rack_detect_loss(now, reo_wnd)
    }

    /// RACK's reordering window (`tcp_rack_reo_wnd`): none in recovery, or
    /// once as many segments were SACKed as the duplicate-ACK threshold
    /// (3) before any reordering was seen; else a quarter of the lowest RTT,
    /// at most srtt.
    pub(crate) fn rack_reo_wnd(&self, in_recovery: bool, srtt: Option<Duration>) -> Duration {
        if in_recovery || self.sacked_out() >= 3 {
            return Duration::ZERO;
        }
        let quarter = self.min_rtt.map_or(Duration::ZERO, |m| m / 4);
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// xnu's duplicate-ACK threshold as lowered by Early Retransmit
    /// (`tcp_early_rexmt_check`, RFC 5827): with fewer than four segments
    /// outstanding (plus the duplicate ACKs already counted) and nothing
    /// new to send, one less than that count, at least 1.
    pub(crate) fn xnu_rexmt_thresh(&self, dupacks: u32, more_to_send: bool) -> u32 {
        let osegs = u32::try_from(self.segs.len()).unwrap_or(u32::MAX) + dupacks;
        if !more_to_send && osegs < 4 {
            osegs.saturating_sub(1).clamp(1, 3).max(dupacks)
        } else {
            3
        }
    }

    /// Marks the head and every hole below the highest SACKed segment lost
    /// (xnu's SACK recovery retransmits the holes in order).
    pub(crate) fn mark_holes_lost(&mut self) {
        let last_sacked = self.segs.iter().rposition(|s| s.sacked);
        let upto = last_sacked.unwrap_or(0);
        for i in 0..=upto.min(self.segs.len().saturating_sub(1)) {
            if !self.segs[i].sacked && !self.segs[i].lost {
                self.mark_lost(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..n {
            b.push(1 + k * 100, 101 + k * 100, false, at(k));
        }
        b
    }

    #[test]
    fn karn_and_sack_rtt() {
        let mut b = board(3);
        let info = b.on_ack(at(100), 101, &[]);
        assert_eq!(info.acked, 1);
        assert_eq!(info.first_ackt, Some(at(0)));
        b.retransmitted(0, at(150));
        let info = b.on_ack(at(200), 201, &[(201, 301)]);
        assert!(info.retrans_acked);
        assert_eq!(info.first_ackt, None);
        assert_eq!(info.first_sackt, Some(at(2)));
        assert_eq!(b.sacked_out(), 1);
    }

    #[test]
    fn rack_marks_a_segment_lost_one_rtt_after_a_later_one_was_delivered() {
        // Segments at 0, 1, 2 ms; the first is lost, the second SACKed at
        // 61 ms (RACK.rtt 60 ms): the first is lost at 0 + 60 + reo_wnd.
        let mut b = board(3);
        b.note_rtt(Duration::from_millis(60));
        b.on_ack(at(61), 1, &[(101, 201)]);
        let reo = b.rack_reo_wnd(false, Some(Duration::from_millis(60)));
        assert_eq!(reo, Duration::from_millis(15));
        let (marked, wait) = b.rack_mark_lost(at(61), reo);
        assert_eq!(marked, 0);
        assert_eq!(wait, Some(Duration::from_millis(14)));
        let (marked, _) = b.rack_detect_loss(at(75), reo);
        assert_eq!(marked, 1);
        assert_eq!(b.next_lost(), Some(0));
        // Three SACKed segments: no reordering window (DupThresh).
        let mut b = board(5);
        b.note_rtt(Duration::from_millis(60));
        b.on_ack(at(64), 1, &[(101, 401)]);
        assert_eq!(b.rack_reo_wnd(false, None), Duration::ZERO);
        let (marked, _) = b.rack_mark_lost(at(64), Duration::ZERO);
        assert_eq!(marked, 1);
    }

    #[test]
    fn a_timeout_marks_everything_lost_but_recent_and_sacked_segments() {
        let mut b = Scoreboard::default();
        for (k, t) in [0u64, 1, 2, 30].into_iter().enumerate() {
            let k = k as u64;
            b.push(1 + k * 100, 101 + k * 100, false, at(t));
        }
        b.on_ack(at(60), 1, &[(201, 301)]);
        b.mark_all_lost(at(61), true);
        // RACK.rtt is 58 ms: the head and segment 1 lost; segment 2 SACKed;
        // segment 3, sent 31 ms ago, spared.
        let lost: Vec<bool> = (0..4).map(|i| b.get(i).unwrap().lost).collect();
        assert_eq!(lost, vec![true, true, false, false]);
        assert_eq!(b.in_flight(), 1);
        assert_eq!(b.next_lost(), Some(0));
    }

    #[test]
    fn xnu_early_retransmit_lowers_the_threshold_for_short_flights() {
        let b = board(2);
        assert_eq!(b.xnu_rexmt_thresh(0, false), 1);
        assert_eq!(b.xnu_rexmt_thresh(0, true), 3);
        let b = board(5);
        assert_eq!(b.xnu_rexmt_thresh(0, false), 3);
    }
}
