//! The receiving half of a connection: reassembly, the SACK blocks it
//! reports, the peer's FIN, and which timestamp it echoes.

use std::collections::BTreeMap;

use bytes::Bytes;
use stn_proto::Instant;

use super::{SackBlocks, Segment};

/// SACK blocks a receiver remembers (`TCP_NUM_SACKS`); three fit beside the
/// timestamp option and are sent.
const SACKS_KEPT: usize = 4;

/// What one arriving segment did to the receive side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Received {
    /// Bytes now deliverable in order.
    pub(crate) delivered: Vec<Bytes>,
    /// Payload bytes the segment carried.
    pub(crate) len: u64,
    /// Nothing new: every byte (and the FIN) was already received.
    pub(crate) duplicate: bool,
    /// Stored out of order.
    pub(crate) out_of_order: bool,
    /// The segment filled the last hole (the out-of-order queue drained).
    pub(crate) filled_hole: bool,
    /// The peer's FIN was reached just now.
    pub(crate) fin: bool,
}

/// The receive side.
#[derive(Clone, Debug, Default)]
pub(crate) struct Receiver {
    /// Next sequence number expected.
    pub(crate) rcv_nxt: u64,
    /// `rcv_nxt` when we last sent an ACK (`rcv_wup`).
    rcv_wup: u64,
    ooo: BTreeMap<u64, Bytes>,
    /// SACK blocks, most recently changed first (`selective_acks`).
    sacks: Vec<(u64, u64)>,
    peer_fin_seq: Option<u64>,
    fin_received: bool,
    /// The timestamp we echo (`ts_recent`).
    ts_recent: Option<Instant>,
}

impl Receiver {
    /// Expects `rcv_nxt` next (after the peer's SYN).
    pub(crate) fn start(&mut self, rcv_nxt: u64, ts: Instant) {
        self.rcv_nxt = rcv_nxt;
        self.rcv_wup = rcv_nxt;
        self.ts_recent = Some(ts);
    }

    /// The timestamp to echo.
    pub(crate) fn ts_recent(&self) -> Option<Instant> {
        self.ts_recent
    }

    /// `true` once the peer's FIN was received in order.
    pub(crate) fn fin_received(&self) -> bool {
        self.fin_received
    }

    /// In-order data received but not yet acknowledged.
    pub(crate) fn unacked(&self) -> u64 {
        self.rcv_nxt - self.rcv_wup
    }

    /// `true` while data waits out of order.
    pub(crate) fn has_holes(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// An ACK of everything in order left.
    pub(crate) fn on_ack_sent(&mut self) {
        self.rcv_wup = self.rcv_nxt;
    }

    /// The SACK blocks to send (at most three, most recent first).
    pub(crate) fn sack_blocks(&self) -> SackBlocks {
        SackBlocks::from_slice(&self.sacks)
    }

    /// RFC 7323 §4.3 as Linux does it (`tcp_replace_ts_recent`): a segment
    /// that starts at or before the left edge of the window we last
    /// advertised (`rcv_wup`) and whose timestamp is not older (PAWS)
    /// updates the timestamp we echo.
    pub(crate) fn update_ts_recent(&mut self, seg: &Segment) {
        if seg.seq <= self.rcv_wup && self.ts_recent.is_none_or(|t| seg.ts_val >= t) {
            self.ts_recent = Some(seg.ts_val);
        }
    }

    /// Takes a segment's payload and FIN.
    pub(crate) fn on_segment(&mut self, seg: &Segment, fin: bool) -> Received {
        let mut r = Received {
            len: seg.payload.len() as u64,
            ..Received::default()
        };
        if self.fin_received {
            // Nothing follows the peer's FIN: a retransmission at most.
            r.duplicate = true;
            return r;
        }
        let had_holes = self.has_holes();
        let end = seg.seq + r.len;
        if r.len > 0 {
            if end <= self.rcv_nxt {
                r.duplicate = true;
            } else if seg.seq <= self.rcv_nxt {
                let skip = (self.rcv_nxt - seg.seq) as usize;
                r.delivered.push(seg.payload.slice(skip..));
                self.rcv_nxt = end;
            } else {
                r.out_of_order = true;
                let keep = self
                    .ooo
                    .get(&seg.seq)
                    .is_none_or(|b| b.len() < seg.payload.len());
                if keep {
                    self.ooo.insert(seg.seq, seg.payload.clone());
                }
                self.sack_new_ofo(seg.seq, end);
            }
        }
        if fin {
            self.peer_fin_seq = Some(end);
        }
        while let Some((&s, _)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            let Some((s, p)) = self.ooo.pop_first() else {
                break;
            };
            let e = s + p.len() as u64;
            if e > self.rcv_nxt {
                r.delivered.push(p.slice((self.rcv_nxt - s) as usize..));
                self.rcv_nxt = e;
            }
        }
        self.sacks.retain(|&(_, e)| e > self.rcv_nxt);
        if had_holes && !self.has_holes() {
            r.filled_hole = true;
        }
        if !self.fin_received && self.peer_fin_seq == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.fin_received = true;
            r.fin = true;
        }
        r
    }

    /// `tcp_sack_new_ofo_skb`: extend the block the segment touches and move
    /// it to the front (merging any it now overlaps), or start a new one.
    fn sack_new_ofo(&mut self, seq: u64, end: u64) {
        if let Some(i) = self.sacks.iter().position(|&(s, e)| seq <= e && s <= end) {
            let (s, e) = self.sacks.remove(i);
            let (mut s, mut e) = (s.min(seq), e.max(end));
            self.sacks.retain(|&(bs, be)| {
                let overlaps = bs <= e && s <= be;
                if overlaps {
                    s = s.min(bs);
                    e = e.max(be);
                }
                !overlaps
            });
            self.sacks.insert(0, (s, e));
        } else {
            self.sacks.insert(0, (seq, end));
            self.sacks.truncate(SACKS_KEPT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::Flags;

    fn seg(seq: u64, len: usize, ts_ms: u64) -> Segment {
        Segment {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
            flags: Flags::ACK,
            seq,
            ack: 0,
            payload: Bytes::from(vec![7u8; len]),
            ts_val: Instant::from_millis(ts_ms),
            ts_ecr: None,
            sack: SackBlocks::default(),
        }
    }

    #[test]
    fn reassembly_and_sack_blocks() {
        let mut r = Receiver::default();
        r.start(1, Instant::ZERO);
        assert!(r.on_segment(&seg(101, 100, 1), false).out_of_order);
        assert!(r.on_segment(&seg(301, 100, 2), false).out_of_order);
        assert_eq!(r.sack_blocks().as_slice(), &[(301, 401), (101, 201)]);
        let got = r.on_segment(&seg(201, 100, 3), false);
        assert!(got.out_of_order);
        assert_eq!(r.sack_blocks().as_slice(), &[(101, 401)]);
        let got = r.on_segment(&seg(1, 100, 4), false);
        assert!(got.filled_hole);
        assert_eq!(got.delivered.iter().map(Bytes::len).sum::<usize>(), 400);
        assert_eq!(r.rcv_nxt, 401);
        assert!(r.sack_blocks().as_slice().is_empty());
        assert!(r.on_segment(&seg(1, 100, 5), false).duplicate);
    }

    #[test]
    fn data_and_fin_in_one_segment_are_both_delivered() {
        let mut r = Receiver::default();
        r.start(1, Instant::ZERO);
        let got = r.on_segment(&seg(1, 100, 1), true);
        assert_eq!(got.delivered.iter().map(Bytes::len).sum::<usize>(), 100);
        assert!(got.fin);
        assert!(r.on_segment(&seg(1, 100, 2), true).duplicate);
    }

    #[test]
    fn echoes_the_segment_at_the_left_edge_of_the_last_ack() {
        let mut r = Receiver::default();
        r.start(1, Instant::ZERO);
        // Two segments before we ACK (a delayed ACK): the echo stays the
        // first one's, so the sender's RTT sample covers the delay.
        let a = seg(1, 100, 10);
        r.update_ts_recent(&a);
        r.on_segment(&a, false);
        let b = seg(101, 100, 20);
        r.update_ts_recent(&b);
        r.on_segment(&b, false);
        assert_eq!(r.ts_recent(), Some(Instant::from_millis(10)));
        r.on_ack_sent();
        let c = seg(201, 100, 30);
        r.update_ts_recent(&c);
        assert_eq!(r.ts_recent(), Some(Instant::from_millis(30)));
    }
}
