//! One TCP connection end as a sans-IO machine: segments and timeouts in,
//! segments and socket events out. Both the client and the server side use
//! it; they differ only in how they start ([`TcpConn::connect`] sends a SYN,
//! [`TcpConn::accept`] answers one). All transitions live here.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::ConnectError;
use stn_proto::Instant;

use super::{Flags, RttEstimator, Segment, TcpStack, SYNACK_GIVE_UP, SYNACK_RETRANSMIT_OFFSETS};
use crate::socket::{SocketError, SocketEvent};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Client: SYNs going out on the OS schedule.
    SynSent {
        start: Instant,
        syns_sent: usize,
    },
    /// Server: SYN-ACK sent, retransmitted on the Linux schedule.
    SynReceived {
        first_syn: Instant,
        synack_retx: usize,
    },
    /// Data may flow; also covers FIN_WAIT, CLOSE_WAIT and LAST_ACK, which are
    /// tracked by `fin_seq` / `fin_received`.
    Established,
    /// Closed first and both FINs are done: re-acknowledge late FINs.
    TimeWait {
        until: Instant,
    },
    Closed,
}

/// One end of a TCP connection. Sequence numbers start at 0 on both sides
/// (SYN = 0, first data byte = 1) and never wrap.
#[derive(Debug)]
pub(crate) struct TcpConn {
    local: SocketAddr,
    remote: SocketAddr,
    stack: TcpStack,
    state: State,
    // Send side.
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// Unacknowledged and unsent bytes; `buf[0]` has sequence number `buf_start`.
    buf: Vec<u8>,
    buf_start: u64,
    /// Sequence number of our FIN once the application closed.
    fin_seq: Option<u64>,
    closed_first: bool,
    /// Congestion window and slow-start threshold, in segments.
    cwnd: u32,
    ssthresh: u32,
    /// Segments acknowledged towards the next congestion-avoidance increase.
    ca_acked: u32,
    dupacks: u32,
    backoff: u32,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    // Receive side.
    rcv_nxt: u64,
    ooo: BTreeMap<u64, Bytes>,
    peer_fin_seq: Option<u64>,
    fin_received: bool,
    ts_recent: Option<Instant>,
    // Outputs.
    out: VecDeque<Segment>,
    events: VecDeque<SocketEvent>,
}

impl TcpConn {
    fn blank(local: SocketAddr, remote: SocketAddr, stack: TcpStack, state: State) -> Self {
        let cwnd = stack.initial_window.clamp(1, stack.max_window.max(1));
        TcpConn {
            local,
            remote,
            stack,
            state,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            buf: Vec::new(),
            buf_start: 1,
            fin_seq: None,
            closed_first: false,
            cwnd,
            ssthresh: u32::MAX,
            ca_acked: 0,
            dupacks: 0,
            backoff: 0,
            rtt: RttEstimator::new(),
            rto_at: None,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            peer_fin_seq: None,
            fin_received: false,
            ts_recent: None,
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Client side: starts a connection attempt and sends the first SYN.
    pub(crate) fn connect(
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        stack: TcpStack,
    ) -> Self {
        let mut c = Self::blank(
            local,
            remote,
            stack,
            State::SynSent {
                start: now,
                syns_sent: 0,
            },
        );
        c.send_syn(now);
        c
    }

    /// Server side: answers a SYN with a SYN-ACK.
    pub(crate) fn accept(now: Instant, local: SocketAddr, syn: &Segment, stack: TcpStack) -> Self {
        let mut c = Self::blank(
            local,
            syn.src,
            stack,
            State::SynReceived {
                first_syn: now,
                synack_retx: 0,
            },
        );
        c.rcv_nxt = syn.seq + 1;
        c.ts_recent = Some(syn.ts_val);
        c.snd_nxt = 1;
        c.snd_max = 1;
        c.send_synack(now);
        c
    }

    /// `true` once nothing more will happen on this connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Next segment to put on the wire.
    pub(crate) fn poll_transmit(&mut self) -> Option<Segment> {
        self.out.pop_front()
    }

    /// Next event for the owner of this end.
    pub(crate) fn poll_event(&mut self) -> Option<SocketEvent> {
        self.events.pop_front()
    }

    /// When [`TcpConn::handle_timeout`] next has work.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::SynSent { start, syns_sent } => {
                let give_up = self.stack.syn_schedule.give_up();
                let next = self
                    .stack
                    .syn_schedule
                    .syn_offset(syns_sent)
                    .map_or(give_up, |o| o.min(give_up));
                Some(start + next)
            }
            State::SynReceived {
                first_syn,
                synack_retx,
            } => Some(
                first_syn
                    + SYNACK_RETRANSMIT_OFFSETS
                        .get(synack_retx)
                        .copied()
                        .unwrap_or(SYNACK_GIVE_UP),
            ),
            State::Established => self.rto_at,
            State::TimeWait { until } => Some(until),
            State::Closed => None,
        }
    }

    /// Fires whatever timer is due; does nothing when called early.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        match self.poll_timeout() {
            Some(at) if at <= now => {}
            _ => return,
        }
        match self.state {
            State::SynSent { start, syns_sent } => {
                let give_up = self.stack.syn_schedule.give_up();
                match self.stack.syn_schedule.syn_offset(syns_sent) {
                    Some(o) if o < give_up && start + o <= now => self.send_syn(now),
                    _ => {
                        self.events
                            .push_back(SocketEvent::ConnectFailed(ConnectError::TimedOut));
                        self.state = State::Closed;
                    }
                }
            }
            State::SynReceived {
                first_syn,
                synack_retx,
            } => {
                if synack_retx < SYNACK_RETRANSMIT_OFFSETS.len() {
                    self.state = State::SynReceived {
                        first_syn,
                        synack_retx: synack_retx + 1,
                    };
                    self.send_synack(now);
                } else {
                    self.state = State::Closed;
                }
            }
            State::Established => self.on_rto(now),
            State::TimeWait { .. } => self.state = State::Closed,
            State::Closed => {}
        }
    }

    /// Queues application bytes (allowed while connecting: sent once
    /// established).
    pub(crate) fn send(&mut self, now: Instant, data: &[u8]) -> Result<(), SocketError> {
        match self.state {
            State::SynSent { .. } | State::SynReceived { .. } | State::Established
                if self.fin_seq.is_none() =>
            {
                self.buf.extend_from_slice(data);
                self.fill(now);
                Ok(())
            }
            _ => Err(SocketError::NotWritable),
        }
    }

    /// Graceful close: FIN after the queued bytes. A connection still in its
    /// handshake is dropped silently (as the kernel does).
    pub(crate) fn close(&mut self, now: Instant) {
        match self.state {
            State::SynSent { .. } | State::SynReceived { .. } => self.state = State::Closed,
            State::Established if self.fin_seq.is_none() => {
                self.fin_seq = Some(self.buf_start + self.buf.len() as u64);
                self.closed_first = !self.fin_received;
                self.fill(now);
                self.check_done(now);
            }
            _ => {}
        }
    }

    /// Abortive close: RST if established, then gone.
    pub(crate) fn abort(&mut self, now: Instant) {
        if self.state == State::Established {
            self.out.push_back(self.segment(
                now,
                Flags::RST.with(Flags::ACK),
                self.snd_nxt,
                Bytes::new(),
            ));
        }
        self.state = State::Closed;
    }

    /// Processes an arriving segment.
    pub(crate) fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        if seg.flags.contains(Flags::RST) {
            match self.state {
                State::SynSent { .. } => {
                    self.events
                        .push_back(SocketEvent::ConnectFailed(ConnectError::Refused));
                }
                State::Established => self.events.push_back(SocketEvent::Reset),
                _ => {}
            }
            self.state = State::Closed;
            return;
        }
        match self.state {
            State::Closed => return,
            State::SynSent { syns_sent, .. } => {
                if seg.flags.contains(Flags::SYN.with(Flags::ACK)) && seg.ack == 1 {
                    self.snd_una = 1;
                    self.snd_nxt = 1;
                    self.snd_max = 1;
                    self.rcv_nxt = seg.seq + 1;
                    self.ts_recent = Some(seg.ts_val);
                    match (syns_sent > 1, self.stack.rto.after_syn_retransmit()) {
                        // A retransmitted SYN: Linux takes no sample and
                        // falls back to a 3 s RTO (docs/lab.md).
                        (true, Some(rto)) => self.rtt = RttEstimator::with_no_sample_rto(rto),
                        _ => {
                            if let Some(echo) = seg.ts_ecr {
                                self.rtt.sample(now - echo);
                            }
                        }
                    }
                    self.state = State::Established;
                    self.events.push_back(SocketEvent::Connected);
                    self.send_ack(now);
                    self.fill(now);
                }
                return;
            }
            State::SynReceived { .. } => {
                if seg.is_syn_only() {
                    // The client retransmitted its SYN: answer it (Linux does),
                    // without touching the SYN-ACK retransmission schedule.
                    self.ts_recent = Some(seg.ts_val);
                    self.send_synack(now);
                    return;
                }
                if !seg.flags.contains(Flags::ACK) || seg.ack < 1 {
                    return;
                }
                self.snd_una = 1;
                if let Some(echo) = seg.ts_ecr {
                    self.rtt.sample(now - echo);
                }
                self.state = State::Established;
                self.events.push_back(SocketEvent::Connected);
                // The completing ACK may carry data: fall through.
            }
            State::Established | State::TimeWait { .. } => {}
        }
        if seg.flags.contains(Flags::SYN) {
            // A retransmitted SYN-ACK (our ACK was lost) or a stale SYN: echo
            // its timestamp (RFC 7323: it is at the left edge) so the peer's
            // RTT sample is right.
            self.ts_recent = Some(self.ts_recent.map_or(seg.ts_val, |t| t.max(seg.ts_val)));
            self.send_ack(now);
            return;
        }
        if seg.flags.contains(Flags::ACK) {
            self.on_ack(now, seg);
        }
        if !seg.payload.is_empty() || seg.flags.contains(Flags::FIN) {
            self.on_data(seg);
            self.send_ack(now);
        }
        self.fill(now);
        self.check_done(now);
    }

    fn segment(&self, now: Instant, flags: Flags, seq: u64, payload: Bytes) -> Segment {
        Segment {
            src: self.local,
            dst: self.remote,
            flags,
            seq,
            ack: self.rcv_nxt,
            payload,
            ts_val: now,
            ts_ecr: self.ts_recent,
        }
    }

    fn send_syn(&mut self, now: Instant) {
        if let State::SynSent { start, syns_sent } = self.state {
            self.state = State::SynSent {
                start,
                syns_sent: syns_sent + 1,
            };
        }
        let mut s = self.segment(now, Flags::SYN, 0, Bytes::new());
        s.ack = 0;
        s.ts_ecr = None;
        self.out.push_back(s);
    }

    fn send_synack(&mut self, now: Instant) {
        self.out
            .push_back(self.segment(now, Flags::SYN.with(Flags::ACK), 0, Bytes::new()));
    }

    fn send_ack(&mut self, now: Instant) {
        self.out
            .push_back(self.segment(now, Flags::ACK, self.snd_nxt, Bytes::new()));
    }

    fn data_end(&self) -> u64 {
        self.buf_start + self.buf.len() as u64
    }

    /// Bytes `[seq, seq + len)` of the send buffer.
    fn slice(&self, seq: u64, len: u64) -> Bytes {
        let off = (seq - self.buf_start) as usize;
        Bytes::copy_from_slice(&self.buf[off..off + len as usize])
    }

    /// Sends new (or, after an RTO, re-sent) segments while the window allows.
    fn fill(&mut self, now: Instant) {
        if self.state != State::Established {
            return;
        }
        let mss = self.stack.mss.max(1) as u64;
        loop {
            let in_flight = self.snd_nxt - self.snd_una;
            let limit = u64::from(self.cwnd) * mss;
            if in_flight >= limit {
                break;
            }
            let data_end = self.data_end();
            if self.snd_nxt < data_end {
                let len = mss.min(data_end - self.snd_nxt).min(limit - in_flight);
                let payload = self.slice(self.snd_nxt, len);
                let mut flags = Flags::ACK;
                let mut consumed = len;
                if self.fin_seq == Some(self.snd_nxt + len) {
                    flags = flags.with(Flags::FIN);
                    consumed += 1;
                }
                self.out
                    .push_back(self.segment(now, flags, self.snd_nxt, payload));
                self.snd_nxt += consumed;
            } else if self.fin_seq == Some(self.snd_nxt) {
                self.out.push_back(self.segment(
                    now,
                    Flags::FIN.with(Flags::ACK),
                    self.snd_nxt,
                    Bytes::new(),
                ));
                self.snd_nxt += 1;
            } else {
                break;
            }
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
        if self.snd_una < self.snd_max && self.rto_at.is_none() {
            self.rto_at = Some(now + self.stack.rto.rto(&self.rtt, self.backoff));
        }
    }

    fn on_rto(&mut self, now: Instant) {
        self.rto_at = None;
        if self.snd_una >= self.snd_max {
            return;
        }
        if self.backoff >= self.stack.rto.max_retransmissions() {
            self.events.push_back(SocketEvent::TimedOut);
            self.state = State::Closed;
            return;
        }
        // Go-back-N from the first unacknowledged byte with a one-segment
        // window (RFC 5681 §3.1: ssthresh = flight / 2, cwnd = 1).
        self.ssthresh = self.halved_flight();
        self.backoff += 1;
        self.snd_nxt = self.snd_una;
        self.cwnd = 1;
        self.ca_acked = 0;
        self.dupacks = 0;
        self.fill(now);
    }

    fn on_ack(&mut self, now: Instant, seg: &Segment) {
        let ack = seg.ack;
        if ack > self.snd_max {
            return;
        }
        if ack > self.snd_una {
            let new_start = ack.min(self.data_end());
            if new_start > self.buf_start {
                self.buf.drain(..(new_start - self.buf_start) as usize);
                self.buf_start = new_start;
            }
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            if let Some(echo) = seg.ts_ecr {
                self.rtt.sample(now - echo);
            }
            self.backoff = 0;
            self.dupacks = 0;
            let segs =
                u32::try_from(acked.div_ceil(self.stack.mss.max(1) as u64)).unwrap_or(u32::MAX);
            self.grow_window(segs);
            self.rto_at = (self.snd_una < self.snd_max)
                .then(|| now + self.stack.rto.rto(&self.rtt, self.backoff));
        } else if ack == self.snd_una
            && self.snd_una < self.snd_max
            && seg.payload.is_empty()
            && !seg.flags.contains(Flags::FIN)
        {
            self.dupacks += 1;
            if self.dupacks == 3 {
                // Fast retransmit (RFC 5681 §3.2, without window inflation).
                self.ssthresh = self.halved_flight();
                self.cwnd = self.ssthresh;
                self.ca_acked = 0;
                self.retransmit_head(now);
            }
        }
    }

    /// Half the segments in flight, at least 2 (RFC 5681 eq. 4).
    fn halved_flight(&self) -> u32 {
        let flight = (self.snd_max - self.snd_una).div_ceil(self.stack.mss.max(1) as u64);
        u32::try_from(flight / 2).unwrap_or(u32::MAX).max(2)
    }

    /// Slow start below ssthresh, then one segment per window of ACKs;
    /// never above the receive-window cap.
    fn grow_window(&mut self, segs: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(segs);
        } else {
            self.ca_acked = self.ca_acked.saturating_add(segs);
            while self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += 1;
            }
        }
        self.cwnd = self.cwnd.min(self.stack.max_window.max(1));
    }

    /// Fast retransmit: re-send the first unacknowledged segment only.
    fn retransmit_head(&mut self, now: Instant) {
        let mss = self.stack.mss.max(1) as u64;
        let data_end = self.data_end();
        if self.snd_una < data_end {
            let len = mss.min(data_end - self.snd_una);
            let mut flags = Flags::ACK;
            if self.fin_seq == Some(self.snd_una + len) && self.snd_max > self.snd_una + len {
                flags = flags.with(Flags::FIN);
            }
            let payload = self.slice(self.snd_una, len);
            self.out
                .push_back(self.segment(now, flags, self.snd_una, payload));
        } else if self.fin_seq == Some(self.snd_una) {
            self.out.push_back(self.segment(
                now,
                Flags::FIN.with(Flags::ACK),
                self.snd_una,
                Bytes::new(),
            ));
        }
    }

    fn on_data(&mut self, seg: &Segment) {
        let len = seg.payload.len() as u64;
        if seg.seq <= self.rcv_nxt {
            // RFC 7323: remember the timestamp of segments at the left edge.
            self.ts_recent = Some(self.ts_recent.map_or(seg.ts_val, |t| t.max(seg.ts_val)));
        }
        if len > 0 {
            let end = seg.seq + len;
            if end <= self.rcv_nxt {
                // Duplicate: only re-acknowledged.
            } else if seg.seq <= self.rcv_nxt {
                let skip = (self.rcv_nxt - seg.seq) as usize;
                self.deliver(seg.payload.slice(skip..));
                self.rcv_nxt = end;
            } else {
                let keep = self
                    .ooo
                    .get(&seg.seq)
                    .is_none_or(|b| b.len() < seg.payload.len());
                if keep {
                    self.ooo.insert(seg.seq, seg.payload.clone());
                }
            }
        }
        if seg.flags.contains(Flags::FIN) {
            self.peer_fin_seq = Some(seg.seq + len);
        }
        while let Some((&s, _)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            let Some((s, p)) = self.ooo.pop_first() else {
                break;
            };
            let end = s + p.len() as u64;
            if end > self.rcv_nxt {
                self.deliver(p.slice((self.rcv_nxt - s) as usize..));
                self.rcv_nxt = end;
            }
        }
        if !self.fin_received && self.peer_fin_seq == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.fin_received = true;
            self.events.push_back(SocketEvent::Closed);
        }
    }

    fn deliver(&mut self, bytes: Bytes) {
        if !bytes.is_empty() && !self.fin_received {
            self.events.push_back(SocketEvent::Data(bytes));
        }
    }

    /// Both FINs done: TIME_WAIT for the side that closed first, else gone.
    fn check_done(&mut self, now: Instant) {
        let our_fin_acked = self.fin_seq.is_some_and(|f| self.snd_una > f);
        if self.state == State::Established && self.fin_received && our_fin_acked {
            self.state = if self.closed_first {
                State::TimeWait {
                    until: now + self.stack.time_wait,
                }
            } else {
                State::Closed
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::Duration;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// Two ends wired back to back with a fixed one-way delay and a loss
    /// filter (by index of the segment sent, in each direction).
    struct Pair {
        now: Instant,
        a: TcpConn,
        b: Option<TcpConn>,
        owd: Duration,
        in_flight: Vec<(Instant, bool, Segment)>,
        drop_a: Vec<usize>,
        sent_a: usize,
        a_events: Vec<SocketEvent>,
        b_events: Vec<SocketEvent>,
        a_sends: Vec<(Instant, Segment)>,
    }

    impl Pair {
        fn new(owd_ms: u64) -> Self {
            Self::with(owd_ms, TcpStack::linux_classic(), Vec::new())
        }

        /// A pair on `stack` whose client-side segments `drop_a` (by index)
        /// are lost, the first SYN included.
        fn with(owd_ms: u64, stack: TcpStack, drop_a: Vec<usize>) -> Self {
            let a = TcpConn::connect(
                Instant::ZERO,
                addr("10.0.0.1:40000"),
                addr("10.0.0.2:80"),
                stack,
            );
            let mut p = Pair {
                now: Instant::ZERO,
                a,
                b: None,
                owd: Duration::from_millis(owd_ms),
                in_flight: Vec::new(),
                drop_a,
                sent_a: 0,
                a_events: Vec::new(),
                b_events: Vec::new(),
                a_sends: Vec::new(),
            };
            p.pump();
            p
        }

        fn pump(&mut self) {
            while let Some(s) = self.a.poll_transmit() {
                self.a_sends.push((self.now, s.clone()));
                if !self.drop_a.contains(&self.sent_a) {
                    self.in_flight.push((self.now + self.owd, true, s));
                }
                self.sent_a += 1;
            }
            while let Some(e) = self.a.poll_event() {
                self.a_events.push(e);
            }
            if let Some(b) = self.b.as_mut() {
                while let Some(s) = b.poll_transmit() {
                    self.in_flight.push((self.now + self.owd, false, s));
                }
                while let Some(e) = b.poll_event() {
                    self.b_events.push(e);
                }
            }
        }

        /// Sends `hello` from a now, runs until `end`, checks that it
        /// arrived, and returns when each copy of it left a.
        fn hello_sends(&mut self, end: Instant) -> Vec<Instant> {
            self.a.send(self.now, b"hello").unwrap();
            self.pump();
            self.run_until(end);
            assert_eq!(self.received_by_b(), b"hello");
            self.a_sends
                .iter()
                .filter(|(_, s)| s.payload.as_ref() == b"hello")
                .map(|(t, _)| *t)
                .collect()
        }

        fn run_until(&mut self, end: Instant) {
            loop {
                let next_pkt = self.in_flight.iter().map(|x| x.0).min();
                let next_timer = [
                    self.a.poll_timeout(),
                    self.b.as_ref().and_then(|b| b.poll_timeout()),
                ]
                .into_iter()
                .flatten()
                .min();
                let Some(t) = [next_pkt, next_timer].into_iter().flatten().min() else {
                    break;
                };
                if t > end {
                    break;
                }
                self.now = t;
                if let Some(i) = self.in_flight.iter().position(|x| x.0 == t) {
                    let (_, to_b, seg) = self.in_flight.remove(i);
                    if to_b {
                        match self.b.as_mut() {
                            Some(b) => b.handle_segment(t, &seg),
                            None => {
                                self.b = Some(TcpConn::accept(
                                    t,
                                    seg.dst,
                                    &seg,
                                    TcpStack::linux_classic(),
                                ))
                            }
                        }
                    } else {
                        self.a.handle_segment(t, &seg);
                    }
                } else {
                    self.a.handle_timeout(t);
                    if let Some(b) = self.b.as_mut() {
                        b.handle_timeout(t);
                    }
                }
                self.pump();
            }
            self.now = end;
        }

        fn received_by_b(&self) -> Vec<u8> {
            self.b_events
                .iter()
                .filter_map(|e| {
                    if let SocketEvent::Data(d) = e {
                        Some(d.to_vec())
                    } else {
                        None
                    }
                })
                .flatten()
                .collect()
        }
    }

    #[test]
    fn handshake_transfer_and_close() {
        let mut p = Pair::new(50);
        p.run_until(Instant::from_millis(100));
        assert_eq!(p.a_events, vec![SocketEvent::Connected]);
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        p.a.send(p.now, &data).unwrap();
        p.a.close(p.now);
        p.pump();
        p.run_until(Instant::from_secs(5));
        assert_eq!(p.received_by_b(), data);
        assert_eq!(p.b_events.first(), Some(&SocketEvent::Connected));
        assert_eq!(p.b_events.last(), Some(&SocketEvent::Closed));
        // b closes too: a sees EOF, then both are finished (a via TIME_WAIT).
        let b = p.b.as_mut().unwrap();
        b.close(p.now);
        p.pump();
        p.run_until(Instant::from_secs(100));
        assert_eq!(p.a_events.last(), Some(&SocketEvent::Closed));
        assert!(p.a.is_closed());
        assert!(p.b.as_ref().unwrap().is_closed());
    }

    #[test]
    fn lost_request_is_retransmitted_with_backoff() {
        let mut p = Pair::new(100);
        p.run_until(Instant::from_millis(250));
        assert_eq!(p.a_events, vec![SocketEvent::Connected]);
        // Segments so far from a: SYN (0), ACK (1). Drop the request (2) and
        // its first retransmission (3).
        p.drop_a = vec![2, 3];
        let sends = p.hello_sends(Instant::from_secs(10));
        assert_eq!(sends.len(), 3);
        // RTT sample 200 ms → RTO 600 ms, then doubled to 1.2 s.
        assert_eq!(sends[1] - sends[0], Duration::from_millis(600));
        assert_eq!(sends[2] - sends[1], Duration::from_millis(1200));
    }

    /// The first retransmission of a request on a connection whose SYN was
    /// lost once, on `stack`.
    fn first_retransmission_after_a_lost_syn(stack: TcpStack) -> Duration {
        // Drop the first SYN (0); the second SYN (1) and its ACK (2) pass;
        // drop the request (3).
        let mut p = Pair::with(100, stack, vec![0, 3]);
        p.run_until(Instant::from_millis(1250));
        assert_eq!(p.a_events, vec![SocketEvent::Connected]);
        let sends = p.hello_sends(Instant::from_secs(20));
        assert_eq!(sends.len(), 2);
        sends[1] - sends[0]
    }

    #[test]
    fn linux_falls_back_to_a_3_s_rto_after_a_retransmitted_syn() {
        // No RTT sample from the handshake (Karn's rule): 3 s, not 600 ms.
        assert_eq!(
            first_retransmission_after_a_lost_syn(TcpStack::linux_classic()),
            Duration::from_secs(3)
        );
        assert_eq!(
            first_retransmission_after_a_lost_syn(TcpStack::linux_6_5()),
            Duration::from_secs(3)
        );
        // xnu as modelled samples the SYN-ACK: srtt 200 ms → 800 ms.
        assert_eq!(
            first_retransmission_after_a_lost_syn(TcpStack::xnu()),
            Duration::from_millis(800)
        );
    }

    #[test]
    fn third_duplicate_ack_triggers_fast_retransmit() {
        let mut p = Pair::new(100);
        p.run_until(Instant::from_millis(250));
        // SYN (0) and ACK (1) went out; drop the third data segment (4).
        p.drop_a = vec![4];
        let data = vec![9u8; 8 * 1460];
        let t = p.now;
        p.a.send(t, &data).unwrap();
        p.pump();
        p.run_until(Instant::from_secs(5));
        assert_eq!(p.received_by_b(), data);
        let lost_seq = 1 + 2 * 1460;
        let sends: Vec<Instant> = p
            .a_sends
            .iter()
            .filter(|(_, s)| s.seq == lost_seq && !s.payload.is_empty())
            .map(|(at, _)| *at)
            .collect();
        // Re-sent one RTT later, when the duplicate ACKs are back: long
        // before the 600 ms RTO.
        assert_eq!(sends, vec![t, t + Duration::from_millis(200)]);
    }
}
