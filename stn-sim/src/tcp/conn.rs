//! One TCP connection end as a sans-IO machine: segments and timeouts in,
//! segments and socket events out. Both the client and the server side use
//! it; they differ only in how they start ([`TcpConn::connect`] sends a SYN,
//! [`TcpConn::accept`] answers one). All transitions live here; the parts
//! (scoreboard, receiver, ACK policy, RTO, window) each own their state.

use std::collections::VecDeque;
use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::{ConnectError, Duration, Instant};

use super::ack::{AckNow, DelayedAck};
use super::metrics::{Cached, MetricsReport, XNU_RTT_UPDATES_TO_SAVE};
use super::recv::Receiver;
use super::rto::{RtoState, LINUX_RTO_MIN};
use super::scoreboard::{AckedInfo, Scoreboard};
use super::send_buf::SendBuffer;
use super::syn::{SYNACK_RETRIES, SYNACK_TIMEOUT_INIT};
use super::window::{CaState, Window};
use super::{Flags, ProbePolicy, RtoPolicy, SackBlocks, Segment, TcpStack};
use crate::socket::{SocketError, SocketEvent};

/// Linux's rate limit on answers to out-of-window segments and duplicate
/// SYNs (`tcp_invalid_ratelimit`, 500 ms; `tcp_oow_rate_limited`).
const OOW_RATE_LIMIT: Duration = Duration::from_millis(500);
/// The largest SYN-ACK back-off (`TCP_RTO_MAX`).
const SYNACK_TIMEOUT_MAX: Duration = Duration::from_secs(120);

/// A server's half-open connection (Linux's request sock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HalfOpen {
    /// When the first SYN-ACK left (`snt_synack`).
    first_synack: Instant,
    /// The SYN-ACK timer (`rsk_timer`).
    timer_at: Instant,
    /// Timer expiries so far (`num_timeout`).
    num_timeout: u32,
    /// SYN-ACKs sent again, by the timer or for a duplicate SYN
    /// (`num_retrans`).
    num_retrans: u32,
    /// The last answer to a duplicate SYN (`last_oow_ack_time`).
    last_oow: Option<Instant>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Client: SYNs going out on the OS schedule.
    SynSent {
        start: Instant,
        syns_sent: usize,
        last_syn: Instant,
    },
    /// Server: SYN-ACK sent, retransmitted on Linux's schedule.
    SynReceived(HalfOpen),
    /// Data may flow; also covers FIN_WAIT, CLOSE_WAIT and LAST_ACK, which
    /// are tracked by the send buffer's FIN and the receiver's.
    Established,
    /// Closed first and both FINs are done: re-acknowledge late FINs.
    TimeWait {
        until: Instant,
    },
    Closed,
}

/// The sender's retransmission timers. Linux multiplexes one timer
/// (`icsk_pending`: RTO, loss probe or RACK's reordering timer, at most one
/// armed); xnu runs its REXMT and PTO timers side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Timers {
    rto: Option<Instant>,
    probe: Option<Instant>,
    reorder: Option<Instant>,
}

impl Timers {
    fn next(&self) -> Option<Instant> {
        [self.rto, self.probe, self.reorder]
            .into_iter()
            .flatten()
            .min()
    }
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
    buf: SendBuffer,
    board: Scoreboard,
    window: Window,
    rto: RtoState,
    timers: Timers,
    closed_first: bool,
    /// The first retransmission of the current recovery (`retrans_stamp`),
    /// against which an ACK's echo proves a retransmission spurious.
    retrans_stamp: Option<Instant>,
    /// The tail loss probe in progress: `snd_nxt` when it left and whether
    /// it was a retransmission (`tlp_high_seq`, `tlp_retrans`).
    tlp: Option<(u64, bool)>,
    /// Duplicate ACKs since the last new ACK (xnu's `t_dupacks`).
    dupacks: u32,
    // Receive side.
    recv: Receiver,
    ack: DelayedAck,
    /// The last challenge ACK to a SYN on an open connection.
    last_challenge: Option<Instant>,
    // The host's route cache.
    /// What the cache held for the peer when the connection was made.
    cached: Cached,
    /// RTT samples taken (xnu's `t_rttupdated`).
    rtt_updates: u32,
    /// Whether the handshake completed.
    was_established: bool,
    /// The report for the cache, once due; `metrics_done` once handed over.
    metrics_due: Option<MetricsReport>,
    metrics_done: bool,
    // Outputs.
    out: VecDeque<Segment>,
    events: VecDeque<SocketEvent>,
}

impl TcpConn {
    fn blank(local: SocketAddr, remote: SocketAddr, stack: TcpStack, state: State) -> Self {
        let beta = match stack.rto {
            RtoPolicy::Linux => (717, 1024),
            RtoPolicy::Xnu => (4, 5),
        };
        let mss = stack.mss.max(1) as u64;
        let rcv_wnd = u64::from(stack.max_window.max(1)) * mss;
        TcpConn {
            local,
            remote,
            window: Window::new(stack.initial_window, stack.max_window, beta),
            rto: RtoState::new(stack.rto),
            ack: DelayedAck::new(stack.acks, stack.timers, rcv_wnd, mss),
            stack,
            state,
            snd_una: 0,
            snd_nxt: 0,
            buf: SendBuffer::new(1),
            board: Scoreboard::default(),
            timers: Timers::default(),
            closed_first: false,
            retrans_stamp: None,
            tlp: None,
            dupacks: 0,
            recv: Receiver::default(),
            last_challenge: None,
            cached: Cached::default(),
            rtt_updates: 0,
            was_established: false,
            metrics_due: None,
            metrics_done: false,
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Client side: starts a connection attempt and sends the first SYN;
    /// `cached` is what the host's route cache holds for the peer (the
    /// kernel reads it when the handshake completes; the model when the
    /// connection is made).
    pub(crate) fn connect(
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        stack: TcpStack,
        cached: Cached,
    ) -> Self {
        let mut c = Self::blank(
            local,
            remote,
            stack,
            State::SynSent {
                start: now,
                syns_sent: 0,
                last_syn: now,
            },
        );
        c.cached = cached;
        c.send_syn(now);
        c
    }

    /// Server side: answers a SYN with a SYN-ACK. The request keeps this
    /// SYN's timestamp as the one it echoes: duplicate SYNs do not change it
    /// (`tcp_check_req` answers them before any timestamp update).
    pub(crate) fn accept(
        now: Instant,
        local: SocketAddr,
        syn: &Segment,
        stack: TcpStack,
        cached: Cached,
    ) -> Self {
        let timer_at = stack.timers.expiry(now, SYNACK_TIMEOUT_INIT);
        let mut c = Self::blank(
            local,
            syn.src,
            stack,
            State::SynReceived(HalfOpen {
                first_synack: now,
                timer_at,
                num_timeout: 0,
                num_retrans: 0,
                last_oow: None,
            }),
        );
        c.recv.start(syn.seq + 1, syn.ts_val);
        c.snd_nxt = 1;
        c.cached = cached;
        // xnu's `tcp_mss` on the SYN: the estimator starts from the cache.
        c.seed_xnu_from_cache();
        c.send_synack(now);
        c
    }

    /// The connection's report for its host's route cache, once, when it
    /// is due (see [`super::metrics`]).
    pub(crate) fn take_metrics(&mut self) -> Option<MetricsReport> {
        if self.metrics_done {
            return None;
        }
        if self.stack.rto == RtoPolicy::Xnu
            && self.state == State::Closed
            && self.was_established
            && self.rtt_updates >= XNU_RTT_UPDATES_TO_SAVE
        {
            self.metrics_due = Some(MetricsReport::Xnu {
                srtt: self.rto.srtt().unwrap_or(Duration::ZERO),
                rttvar: self.rto.rttvar(),
            });
        }
        let r = self.metrics_due.take();
        self.metrics_done |= r.is_some();
        r
    }

    fn seed_xnu_from_cache(&mut self) {
        if self.stack.rto == RtoPolicy::Xnu {
            if let Some(rtt) = self.cached.rtt {
                self.rto.seed_xnu(rtt, self.cached.rttvar);
            }
        }
    }

    /// Linux's `tcp_init_metrics` at the end of the handshake: the first
    /// RTO from a cached RTT above the handshake's srtt, else the 3 s
    /// fallback when the handshake left no sample.
    fn init_metrics(&mut self) {
        let srtt = self.rto.srtt().unwrap_or(Duration::ZERO);
        match self.cached.rtt {
            Some(crtt) if self.stack.rto == RtoPolicy::Linux && crtt > srtt => {
                self.rto.seed_linux_rto(crtt);
            }
            _ => self.rto.fall_back(),
        }
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
        // Data in flight always has a timer that will repair its loss.
        debug_assert!(
            self.state != State::Established
                || self.board.is_empty()
                || self.timers.next().is_some(),
            "unacknowledged data without a retransmission timer"
        );
        match self.state {
            State::SynSent {
                syns_sent,
                last_syn,
                ..
            } => {
                // Each SYN re-arms the timer for the schedule's next gap.
                let schedule = &self.stack.syn_schedule;
                let give_up = schedule.give_up();
                let prev = schedule
                    .syn_offset(syns_sent.saturating_sub(1))
                    .unwrap_or(Duration::ZERO);
                let next = schedule
                    .syn_offset(syns_sent)
                    .map_or(give_up, |o| o.min(give_up));
                Some(
                    self.stack
                        .timers
                        .expiry(last_syn, next.saturating_sub(prev)),
                )
            }
            State::SynReceived(h) => Some(h.timer_at),
            State::Established => [self.timers.next(), self.ack.timeout()]
                .into_iter()
                .flatten()
                .min(),
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
            State::SynSent { syns_sent, .. } => {
                let give_up = self.stack.syn_schedule.give_up();
                match self.stack.syn_schedule.syn_offset(syns_sent) {
                    Some(o) if o < give_up => self.send_syn(now),
                    _ => {
                        self.events
                            .push_back(SocketEvent::ConnectFailed(ConnectError::TimedOut));
                        self.state = State::Closed;
                    }
                }
            }
            State::SynReceived(mut h) => {
                // `reqsk_timer_handler`: resend until tcp_synack_retries
                // expiries, each time doubling from 1 s.
                if h.num_timeout >= SYNACK_RETRIES {
                    self.state = State::Closed;
                    return;
                }
                h.num_timeout += 1;
                h.num_retrans += 1;
                h.timer_at = self.at(now, synack_timeout(h.num_timeout));
                self.state = State::SynReceived(h);
                self.send_synack(now);
            }
            State::Established => self.on_established_timer(now),
            State::TimeWait { .. } => self.state = State::Closed,
            State::Closed => {}
        }
    }

    /// Queues application bytes (allowed while connecting: sent once
    /// established).
    pub(crate) fn send(&mut self, now: Instant, data: &[u8]) -> Result<(), SocketError> {
        match self.state {
            State::SynSent { .. } | State::SynReceived(_) | State::Established
                if self.buf.fin_seq().is_none() =>
            {
                self.buf.push(data);
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
            State::SynSent { .. } | State::SynReceived(_) => self.state = State::Closed,
            State::Established if self.buf.fin_seq().is_none() => {
                self.buf.close();
                self.closed_first = !self.recv.fin_received();
                self.fill(now);
                self.check_done(now);
            }
            _ => {}
        }
    }

    /// Abortive close: RST if established, then gone.
    pub(crate) fn abort(&mut self, now: Instant) {
        if self.state == State::Established {
            let rst = self.segment(now, Flags::RST.with(Flags::ACK), self.snd_nxt, Bytes::new());
            self.out.push_back(rst);
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
            State::SynSent {
                start, syns_sent, ..
            } => {
                if seg.flags.contains(Flags::SYN.with(Flags::ACK)) && seg.ack == 1 {
                    self.client_established(now, seg, start, syns_sent);
                }
                return;
            }
            State::SynReceived(h) => {
                if seg.is_syn_only() {
                    self.duplicate_syn(now, h);
                    return;
                }
                if !seg.flags.contains(Flags::ACK) || seg.ack < 1 {
                    return;
                }
                self.server_established(now, seg, h);
                // The completing ACK may carry data: fall through.
            }
            State::Established | State::TimeWait { .. } => {}
        }
        if seg.flags.contains(Flags::SYN) {
            // A retransmitted SYN-ACK (our ACK was lost) or a stale SYN on
            // an open connection: a challenge ACK (RFC 5961 §4.2), rate
            // limited, echoing what we already echo.
            if !rate_limited(&mut self.last_challenge, now) {
                self.send_ack(now);
            }
            return;
        }
        self.recv.update_ts_recent(seg);
        if seg.flags.contains(Flags::ACK) {
            self.on_ack(now, seg);
        }
        let had_data = !seg.payload.is_empty() || seg.flags.contains(Flags::FIN);
        if had_data {
            self.on_data(now, seg);
        }
        self.fill(now);
        if had_data {
            self.ack_if_owed(now, seg.flags.contains(Flags::PSH));
        }
        self.check_done(now);
    }

    // ---- handshake --------------------------------------------------------

    fn client_established(
        &mut self,
        now: Instant,
        seg: &Segment,
        start: Instant,
        syns_sent: usize,
    ) {
        self.snd_una = 1;
        self.snd_nxt = 1;
        self.recv.start(seg.seq + 1, seg.ts_val);
        // The SYN's RTT: by its send time if it went once (Karn), else by
        // the echo, which names the SYN the server's request was made from.
        let sample = if syns_sent <= 1 {
            Some(now - start)
        } else {
            seg.ts_ecr.map(|echo| now - echo)
        };
        // xnu's `tcp_mss` runs on the SYN-ACK's options, before its sample.
        self.seed_xnu_from_cache();
        if let Some(rtt) = sample {
            self.take_sample(rtt);
        }
        self.init_metrics();
        // More than one SYN retransmission that was not spurious (the echo
        // is not the first SYN's): start from one segment.
        let spurious = seg.ts_ecr == Some(start);
        if self.stack.rto == RtoPolicy::Linux && syns_sent > 2 && !spurious {
            self.window.restart_from_one();
        }
        self.state = State::Established;
        self.was_established = true;
        self.ack.on_established(now);
        self.events.push_back(SocketEvent::Connected);
        self.send_ack(now);
        self.fill(now);
    }

    fn duplicate_syn(&mut self, now: Instant, mut h: HalfOpen) {
        // `tcp_check_req`: answer (rate limited) and push the timer out.
        if rate_limited(&mut h.last_oow, now) {
            self.state = State::SynReceived(h);
            return;
        }
        h.num_retrans += 1;
        h.timer_at = self.at(now, synack_timeout(h.num_timeout));
        self.state = State::SynReceived(h);
        self.send_synack(now);
    }

    fn server_established(&mut self, now: Instant, seg: &Segment, h: HalfOpen) {
        self.snd_una = 1;
        // `tcp_synack_rtt_meas`: by the SYN-ACK's send time if it went
        // once, else by the echo.
        let sample = if h.num_retrans == 0 {
            Some(now - h.first_synack)
        } else {
            seg.ts_ecr.map(|echo| now - echo)
        };
        if let Some(rtt) = sample {
            self.take_sample(rtt);
        }
        self.init_metrics();
        let spurious = seg.ts_ecr == Some(h.first_synack);
        if self.stack.rto == RtoPolicy::Linux && h.num_retrans > 1 && !spurious {
            self.window.restart_from_one();
        }
        self.state = State::Established;
        self.was_established = true;
        self.ack.on_established(now);
        self.events.push_back(SocketEvent::Connected);
    }

    /// When a timer armed now for `delay` fires on this stack.
    fn at(&self, now: Instant, delay: Duration) -> Instant {
        self.stack.timers.expiry(now, delay)
    }

    fn take_sample(&mut self, rtt: Duration) {
        self.rtt_updates = self.rtt_updates.saturating_add(1);
        self.rto.sample(rtt, self.snd_una, self.snd_nxt);
        self.board.note_rtt(rtt);
    }

    // ---- output -------------------------------------------------------------

    fn segment(&mut self, now: Instant, flags: Flags, seq: u64, payload: Bytes) -> Segment {
        Segment {
            src: self.local,
            dst: self.remote,
            flags,
            seq,
            ack: self.recv.rcv_nxt,
            payload,
            ts_val: now,
            ts_ecr: self.recv.ts_recent(),
            sack: self.recv.sack_blocks(),
        }
    }

    /// Puts a segment carrying an ACK of everything received on the wire.
    fn emit(&mut self, seg: Segment) {
        if seg.flags.contains(Flags::ACK) {
            self.recv.on_ack_sent();
            self.ack.on_ack_sent();
        }
        self.out.push_back(seg);
    }

    fn send_syn(&mut self, now: Instant) {
        if let State::SynSent {
            start, syns_sent, ..
        } = self.state
        {
            self.state = State::SynSent {
                start,
                syns_sent: syns_sent + 1,
                last_syn: now,
            };
        }
        self.out.push_back(Segment {
            src: self.local,
            dst: self.remote,
            flags: Flags::SYN,
            seq: 0,
            ack: 0,
            payload: Bytes::new(),
            ts_val: now,
            ts_ecr: None,
            sack: SackBlocks::default(),
        });
    }

    fn send_synack(&mut self, now: Instant) {
        let s = self.segment(now, Flags::SYN.with(Flags::ACK), 0, Bytes::new());
        self.out.push_back(s);
    }

    fn send_ack(&mut self, now: Instant) {
        let s = self.segment(now, Flags::ACK, self.snd_nxt, Bytes::new());
        self.emit(s);
    }

    /// Sends the segment `[seq, seq + len)` (plus its FIN) from the send
    /// buffer.
    fn transmit(&mut self, now: Instant, seq: u64, len: u64, fin: bool, psh: bool) {
        let mut flags = Flags::ACK;
        if fin {
            flags = flags.with(Flags::FIN);
        }
        if psh {
            flags = flags.with(Flags::PSH);
        }
        let payload = if len > 0 {
            self.buf.slice(seq, len)
        } else {
            Bytes::new()
        };
        let s = self.segment(now, flags, seq, payload);
        self.emit(s);
        self.window.on_sent(1);
    }

    fn mss(&self) -> u64 {
        self.stack.mss.max(1) as u64
    }

    /// Retransmits what is marked lost, then sends new data, while the
    /// window allows (`tcp_xmit_retransmit_queue`, `tcp_write_xmit`).
    fn fill(&mut self, now: Instant) {
        if self.state != State::Established {
            return;
        }
        self.retransmit_lost(now);
        let prior_out = self.board.packets_out();
        let mut sent = 0usize;
        while self.board.in_flight() < self.window.cwnd {
            if !self.send_new_segment(now) {
                break;
            }
            sent += 1;
        }
        if sent > 0 {
            self.on_new_data_sent(now, prior_out);
        }
    }

    /// Cuts and sends the next new segment if the receive window has room.
    fn send_new_segment(&mut self, now: Instant) -> bool {
        let mss = self.mss();
        let wnd_end = self.snd_una + u64::from(self.stack.max_window.max(1)) * mss;
        let room = wnd_end.saturating_sub(self.snd_nxt);
        let Some((len, fin, psh)) = self.buf.next_segment(self.snd_nxt, mss, room) else {
            return false;
        };
        if len == 0 && !fin {
            return false;
        }
        if len > 0 && room == 0 {
            return false;
        }
        let seq = self.snd_nxt;
        let end = seq + len + u64::from(fin);
        self.transmit(now, seq, len, fin, psh);
        self.board.push(seq, end, fin, now);
        self.snd_nxt = end;
        self.ack.on_data_sent(now);
        true
    }

    /// Retransmits lost segments in order while the window allows.
    fn retransmit_lost(&mut self, now: Instant) {
        while self.board.in_flight() < self.window.cwnd {
            let Some(i) = self.board.next_lost() else {
                break;
            };
            self.retransmit(now, i);
            if i == 0 && self.stack.rto == RtoPolicy::Linux && self.timers.reorder.is_none() {
                // Retransmitting the head restarts the RTO from now.
                self.arm_rto(self.at(now, self.rto.rto()));
            }
        }
    }

    fn retransmit(&mut self, now: Instant, i: usize) {
        let Some(s) = self.board.get(i).copied() else {
            return;
        };
        let len = s.end - s.seq - u64::from(s.fin);
        let psh = !s.fin && s.end == self.buf.data_end();
        self.transmit(now, s.seq, len, s.fin, psh);
        self.board.retransmitted(i, now);
        self.retrans_stamp.get_or_insert(now);
        if self.stack.probe == ProbePolicy::Xnu2017 && self.timers.rto.is_none() {
            // xnu's `tcp_output` arms REXMT whenever it sends and none is set.
            self.timers.rto = Some(self.at(now, self.rto.rto()));
        }
    }

    /// Timers after new data left (`tcp_event_new_data_sent` and the loss
    /// probe at the end of `tcp_write_xmit`; xnu's `tcp_output`).
    fn on_new_data_sent(&mut self, now: Instant, prior_out: usize) {
        match self.stack.probe {
            ProbePolicy::Linux => {
                if prior_out == 0 || self.timers.probe.is_some() {
                    self.rearm_rto(now);
                }
                self.schedule_loss_probe(now, false);
            }
            ProbePolicy::Xnu2017 => {
                if self.timers.rto.is_none() {
                    self.timers.rto = Some(self.at(now, self.rto.rto()));
                }
                self.xnu_arm_probe(now);
            }
        }
    }

    // ---- Linux's one retransmission timer -----------------------------------

    fn arm_rto(&mut self, at: Instant) {
        if self.stack.probe == ProbePolicy::Linux {
            self.timers = Timers {
                rto: Some(at),
                ..Timers::default()
            };
        } else {
            self.timers.rto = Some(at);
        }
    }

    /// `tcp_rearm_rto`: the RTO from now, or — when it replaces a loss probe
    /// or reordering timer — from the head's last transmission.
    fn rearm_rto(&mut self, now: Instant) {
        if self.board.is_empty() {
            self.timers = Timers::default();
            return;
        }
        let rto = self.rto.rto();
        let at = if self.timers.probe.is_some() || self.timers.reorder.is_some() {
            let head = self.board.head().map_or(now, |h| h.xmit);
            let due = head + rto;
            let left = if due > now {
                due - now
            } else {
                Duration::from_nanos(1)
            };
            self.at(now, left)
        } else {
            self.at(now, rto)
        };
        self.arm_rto(at);
    }

    /// `tcp_schedule_loss_probe`: arms the probe when the connection is in
    /// the Open or CWR state; `advancing_rto` when an ACK is about to
    /// restart the RTO from now.
    fn schedule_loss_probe(&mut self, now: Instant, advancing_rto: bool) -> bool {
        if self.board.is_empty() || !matches!(self.window.state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout =
            ProbePolicy::linux_pto(self.rto.srtt(), self.board.packets_out(), LINUX_RTO_MIN);
        let rto_delta = if advancing_rto {
            Some(self.rto.rto())
        } else {
            self.board
                .head()
                .map(|h| h.xmit + self.rto.rto())
                .filter(|&at| at > now)
                .map(|at| at - now)
        };
        if let Some(d) = rto_delta {
            timeout = timeout.min(d);
        }
        self.timers = Timers {
            probe: Some(self.at(now, timeout)),
            ..Timers::default()
        };
        true
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, now: Instant) {
        let probe_sent = if self.tlp.is_some() {
            false
        } else if self
            .buf
            .next_segment(self.snd_nxt, self.mss(), self.mss())
            .is_some()
        {
            // New data, whatever the window (`push_one` 2).
            let sent = self.send_new_segment(now);
            if sent {
                self.tlp = Some((self.snd_nxt, false));
            }
            sent
        } else if let Some(last) = self.board.packets_out().checked_sub(1) {
            self.retransmit(now, last);
            self.tlp = Some((self.snd_nxt, true));
            true
        } else {
            false
        };
        if probe_sent {
            // Restart the RTO from now.
            self.timers = Timers::default();
        }
        self.rearm_rto(now);
    }

    /// `tcp_process_tlp_ack`: ends the probe episode; an ACK beyond the
    /// probed sequence after a retransmitted probe means the probe repaired
    /// a loss: reduce the window once.
    fn process_tlp_ack(&mut self, ack: u64, advanced: bool, sacked: bool) {
        let Some((high, retrans)) = self.tlp else {
            return;
        };
        if ack < high {
            return;
        }
        if !retrans {
            self.tlp = None;
        } else if ack > high {
            self.window.cwr();
            self.window.end_reduction();
            self.tlp = None;
        } else if !advanced && !sacked {
            self.tlp = None;
        }
    }

    // ---- xnu's probe ---------------------------------------------------------

    /// xnu-4570's PTO when new data leaves.
    fn xnu_arm_probe(&mut self, now: Instant) {
        let outstanding = self.snd_nxt - self.snd_una;
        let in_recovery = matches!(self.window.state, CaState::Recovery { .. });
        if outstanding == 0 || in_recovery || self.rto.backoff() > 0 || self.tlp.is_some() {
            return;
        }
        let Some(srtt) = self.rto.srtt() else {
            return;
        };
        let rexmtval = self.rto.xnu_rexmtval();
        let mut pto = ProbePolicy::xnu_pto(srtt, rexmtval, outstanding == self.mss());
        if self.rto.rto() < pto {
            // The probe takes the RTO's place; the RTO moves after it.
            pto = self.rto.rto();
            self.timers.rto = Some(self.at(now, pto + self.rto.xnu_unslopped()));
        }
        self.timers.probe = Some(self.at(now, pto));
    }

    /// xnu-4570's `TCPT_PTO`: new data if any, else the last segment again.
    fn xnu_send_probe(&mut self, now: Instant) {
        self.timers.probe = None;
        let in_recovery = matches!(self.window.state, CaState::Recovery { .. });
        if self.board.is_empty()
            || self.rto.backoff() > 0
            || in_recovery
            || self.board.sacked_out() > 0
        {
            return;
        }
        if self
            .buf
            .next_segment(self.snd_nxt, self.mss(), self.mss())
            .is_some()
        {
            self.send_new_segment(now);
        } else if let Some(last) = self.board.packets_out().checked_sub(1) {
            self.retransmit(now, last);
        }
        self.tlp = Some((self.snd_nxt, true));
    }

    // ---- input: ACKs ----------------------------------------------------------

    fn on_ack(&mut self, now: Instant, seg: &Segment) {
        let ack = seg.ack;
        if ack > self.snd_nxt {
            return;
        }
        let advanced = ack > self.snd_una;
        let info = self.board.on_ack(now, ack, seg.sack.as_slice());
        if advanced {
            self.snd_una = ack;
            self.buf.release(ack);
        }
        let acked_any = info.acked > 0;
        self.rtt_from_ack(now, seg, &info, advanced);
        let pure_dup = !advanced
            && seg.payload.is_empty()
            && !seg.flags.contains(Flags::FIN)
            && !self.board.is_empty()
            && ack == self.snd_una;
        match self.stack.probe {
            ProbePolicy::Linux => {
                self.process_tlp_ack(ack, advanced, info.sacked > 0);
                self.linux_loss_recovery(now, seg, &info, advanced);
            }
            ProbePolicy::Xnu2017 => {
                if advanced {
                    self.tlp = None;
                }
                self.xnu_loss_recovery(now, &info, advanced, pure_dup);
            }
        }
        if acked_any && !self.window.in_reduction() {
            let segs = info.acked + info.sacked;
            self.window.grow(segs);
        }
        if self.board.is_empty() {
            self.timers = Timers::default();
            self.rto.on_recovered();
            self.retrans_stamp = None;
        } else if self.stack.probe == ProbePolicy::Xnu2017 && self.timers.rto.is_none() {
            // xnu's `tcp_output` keeps REXMT armed while data is out.
            self.timers.rto = Some(self.at(now, self.rto.rto()));
        }
    }

    /// RTT from an ACK (Linux's `tcp_clean_rtx_queue` and
    /// `tcp_ack_update_rtt`: a segment never retransmitted by its send time,
    /// else a SACKed one's, else the timestamp echo when data was acked;
    /// xnu's `tcp_compute_rtt`: the echo on every new ACK).
    fn rtt_from_ack(&mut self, now: Instant, seg: &Segment, info: &AckedInfo, advanced: bool) {
        let sample = match self.stack.rto {
            RtoPolicy::Linux => info
                .first_ackt
                .or(info.first_sackt)
                .map(|t| now - t)
                .or_else(|| {
                    (info.acked > 0)
                        .then_some(seg.ts_ecr)
                        .flatten()
                        .map(|echo| now - echo)
                }),
            RtoPolicy::Xnu => advanced.then_some(seg.ts_ecr).flatten().map(|e| now - e),
        };
        if let Some(rtt) = sample {
            self.take_sample(rtt);
        }
    }

    /// Linux's `tcp_fastretrans_alert` with RACK (`tcp_recovery` 1) and the
    /// timers `tcp_ack` sets after it.
    fn linux_loss_recovery(
        &mut self,
        now: Instant,
        seg: &Segment,
        info: &AckedInfo,
        advanced: bool,
    ) {
        let mut set_xmit_timer = info.acked > 0;
        // State exits once the episode's data is acknowledged.
        match self.window.state {
            CaState::Recovery { high_seq } | CaState::Loss { high_seq }
                if self.snd_una >= high_seq =>
            {
                if matches!(self.window.state, CaState::Recovery { .. }) {
                    self.window.end_reduction();
                } else {
                    self.window.state = CaState::Open;
                }
                self.retrans_stamp = None;
            }
            CaState::Cwr => self.window.end_reduction(),
            _ => {}
        }
        // An ACK whose echo predates our first retransmission: it was the
        // original that got through (`tcp_try_undo_loss`/`_recovery`).
        if advanced
            && matches!(
                self.window.state,
                CaState::Loss { .. } | CaState::Recovery { .. }
            )
            && self
                .retrans_stamp
                .zip(seg.ts_ecr)
                .is_some_and(|(first, echo)| echo < first)
        {
            self.board.unmark_lost();
            self.window.undo();
            self.retrans_stamp = None;
        }
        let in_recovery = matches!(
            self.window.state,
            CaState::Recovery { .. } | CaState::Loss { .. }
        );
        let reo = self.board.rack_reo_wnd(in_recovery, self.rto.srtt());
        let (marked, wait) = self.board.rack_mark_lost(now, reo);
        if let Some(w) = wait {
            // The reordering timer (`ICSK_TIME_REO_TIMEOUT`) replaces the
            // pending one.
            self.timers = Timers {
                reorder: Some(self.at(now, w + Duration::from_millis(2))),
                ..Timers::default()
            };
            set_xmit_timer = false;
        }
        if matches!(
            self.window.state,
            CaState::Open | CaState::Disorder | CaState::Cwr
        ) {
            if self.board.any_lost() {
                self.window.enter_recovery(self.snd_nxt);
            } else if self.board.sacked_out() > 0 {
                self.window.state = CaState::Disorder;
            } else if self.window.state == CaState::Disorder {
                self.window.state = CaState::Open;
            }
        }
        if self.window.in_reduction() {
            let delivered = info.acked + info.sacked;
            let in_flight = self.board.in_flight();
            self.window.prr(delivered, in_flight, marked, advanced);
        }
        if set_xmit_timer && !self.board.is_empty() && !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// xnu's duplicate-ACK recovery with Early Retransmit and SACK holes.
    fn xnu_loss_recovery(&mut self, now: Instant, info: &AckedInfo, advanced: bool, dup: bool) {
        if advanced {
            self.dupacks = 0;
            if let CaState::Recovery { high_seq } = self.window.state {
                if self.snd_una >= high_seq {
                    self.window.end_reduction();
                } else {
                    self.board.mark_holes_lost();
                }
            } else if let CaState::Loss { high_seq } = self.window.state {
                if self.snd_una >= high_seq {
                    self.window.state = CaState::Open;
                }
            }
            // A new ACK restarts the REXMT timer; all acknowledged stops
            // both timers.
            if self.board.is_empty() {
                self.timers = Timers::default();
            } else {
                self.timers.rto = Some(self.at(now, self.rto.rto()));
            }
            return;
        }
        if !dup {
            return;
        }
        self.dupacks += 1;
        let more = self
            .buf
            .next_segment(self.snd_nxt, self.mss(), self.mss())
            .is_some();
        let thresh = self.board.xnu_rexmt_thresh(self.dupacks - 1, more);
        match self.window.state {
            CaState::Recovery { .. } if info.sacked > 0 => self.board.mark_holes_lost(),
            CaState::Recovery { .. } => {}
            // Not again inside the window a timeout is repairing (NewReno's
            // `snd_recover` rule).
            CaState::Loss { .. } => {}
            _ if self.dupacks >= thresh => {
                self.window.enter_recovery_halved(self.snd_nxt);
                self.board.mark_holes_lost();
                self.timers.probe = None;
                self.timers.rto = None;
                // The fast retransmit of snd_una goes whatever the window
                // (BSD's one-segment `snd_cwnd` around `tcp_output`).
                if let Some(i) = self.board.next_lost() {
                    self.retransmit(now, i);
                }
            }
            _ => {}
        }
    }

    // ---- input: data --------------------------------------------------------

    fn on_data(&mut self, now: Instant, seg: &Segment) {
        let fin = seg.flags.contains(Flags::FIN);
        let got = self.recv.on_segment(seg, fin);
        if got.len > 0 {
            let rto = self.rto.rto();
            self.ack.on_data(
                now,
                got.len,
                seg.flags.contains(Flags::PSH),
                self.mss(),
                rto,
            );
        }
        if got.duplicate {
            // A retransmission of what we have: our ACK was probably lost.
            self.ack.enter_quickack_mode();
            self.ack.ack_now();
        }
        if got.out_of_order || got.filled_hole {
            self.ack.ack_now();
        }
        // Everything delivered precedes the FIN (the receiver stops at it).
        for b in got.delivered {
            if !b.is_empty() {
                self.events.push_back(SocketEvent::Data(b));
            }
        }
        if got.fin {
            self.ack.on_fin();
            if self.buf.fin_seq().is_some() {
                // Our FIN is out: FIN_WAIT and CLOSING answer at once.
                self.ack.ack_now();
            }
            self.events.push_back(SocketEvent::Closed);
        }
    }

    /// Sends the owed ACK if the policy says now (or the application's read
    /// does); otherwise the delayed-ACK timer has it.
    fn ack_if_owed(&mut self, now: Instant, psh: bool) {
        let unacked = self.recv.unacked();
        let decision = self
            .ack
            .check(now, unacked, self.recv.has_holes(), psh, self.rto.srtt());
        if decision == AckNow::Now || self.ack.on_read(unacked) {
            self.send_ack(now);
        }
    }

    // ---- timers -----------------------------------------------------------------

    fn on_established_timer(&mut self, now: Instant) {
        if self.ack.timeout().is_some_and(|t| t <= now) && self.ack.on_timer(now, self.rto.rto()) {
            self.send_ack(now);
        }
        if self.timers.reorder.is_some_and(|t| t <= now) {
            self.on_reorder_timeout(now);
        }
        if self.timers.probe.is_some_and(|t| t <= now) {
            match self.stack.probe {
                ProbePolicy::Linux => {
                    self.send_loss_probe(now);
                }
                ProbePolicy::Xnu2017 => self.xnu_send_probe(now),
            }
        }
        if self.timers.rto.is_some_and(|t| t <= now) {
            self.timers.rto = None;
            self.on_rto(now);
        }
        self.check_done(now);
    }

    /// `tcp_rack_reo_timeout`.
    fn on_reorder_timeout(&mut self, now: Instant) {
        let in_recovery = matches!(
            self.window.state,
            CaState::Recovery { .. } | CaState::Loss { .. }
        );
        let reo = self.board.rack_reo_wnd(in_recovery, self.rto.srtt());
        let (marked, wait) = self.board.rack_detect_loss(now, reo);
        if marked > 0 {
            if !matches!(
                self.window.state,
                CaState::Recovery { .. } | CaState::Loss { .. }
            ) {
                self.window.enter_recovery(self.snd_nxt);
                let in_flight = self.board.in_flight();
                self.window.prr(1, in_flight, marked, false);
            }
            self.retransmit_lost(now);
        }
        match wait {
            Some(w) => self.timers.reorder = Some(self.at(now, w + Duration::from_millis(2))),
            // The RTO takes over, counted from the head's last send.
            None => self.rearm_rto(now),
        }
    }

    /// The retransmission timeout (`tcp_retransmit_timer`; xnu's
    /// `TCPT_REXMT`).
    fn on_rto(&mut self, now: Instant) {
        if self.board.is_empty() {
            return;
        }
        self.tlp = None;
        if !self.rto.on_timeout(now) {
            self.events.push_back(SocketEvent::TimedOut);
            self.state = State::Closed;
            return;
        }
        let first_timeout = self.rto.backoff() == 1;
        match self.stack.rto {
            RtoPolicy::Linux => self.board.mark_all_lost(now, true),
            RtoPolicy::Xnu => {
                // `tcp_free_sackholes`, then go back to snd_una.
                self.board.clear_tags();
                self.board.mark_all_lost(now, false);
                self.dupacks = 0;
            }
        }
        let in_flight = self.board.in_flight();
        self.window
            .enter_loss(self.snd_nxt, in_flight, first_timeout);
        // The head goes again whatever the window.
        if let Some(i) = self.board.next_lost() {
            self.retransmit(now, i);
        }
        self.timers = Timers {
            rto: Some(self.at(now, self.rto.rto())),
            ..Timers::default()
        };
    }

    /// Both FINs done: TIME_WAIT for the side that closed first, else gone.
    fn check_done(&mut self, now: Instant) {
        let our_fin_acked = self.buf.fin_seq().is_some_and(|f| self.snd_una > f);
        if self.stack.rto == RtoPolicy::Linux
            && self.state == State::Established
            && our_fin_acked
            && self.metrics_due.is_none()
            && !self.metrics_done
        {
            // `tcp_update_metrics`: FIN-WAIT-1 → TIME-WAIT (or FIN-WAIT-2
            // as a time-wait socket), or LAST-ACK → CLOSED.
            self.metrics_due = Some(MetricsReport::Linux {
                srtt: self.rto.srtt().filter(|_| self.rto.backoff() == 0),
            });
        }
        if self.state == State::Established && self.recv.fin_received() && our_fin_acked {
            self.state = if self.closed_first {
                State::TimeWait {
                    until: self.at(now, self.stack.time_wait),
                }
            } else {
                State::Closed
            };
        }
    }
}

/// `reqsk_timeout`: 1 s doubled per expiry, at most `TCP_RTO_MAX`.
fn synack_timeout(num_timeout: u32) -> Duration {
    SYNACK_TIMEOUT_INIT
        .saturating_mul(1u32.checked_shl(num_timeout).unwrap_or(u32::MAX))
        .min(SYNACK_TIMEOUT_MAX)
}

/// `__tcp_oow_rate_limited`: `true` (and nothing recorded) within 500 ms
/// of the last answer.
fn rate_limited(last: &mut Option<Instant>, now: Instant) -> bool {
    if last.is_some_and(|t| now - t < OOW_RATE_LIMIT) {
        return true;
    }
    *last = Some(now);
    false
}

#[cfg(test)]
mod tests;
