//! The TCP model: segments, per-OS stack parameters, SYN schedules, the RTO
//! estimator and the connection state machine. Every loss-recovery rule
//! comes from the kernel's source or an RFC, cited where it is implemented;
//! `docs/sim-tcp.md` lists them with what is left out.
//!
//! Modelled: the three-way handshake with the OS SYN schedule, a Linux
//! server's SYN-ACK timer and its answers to duplicate SYNs, and which SYN
//! the SYN-ACK's timestamp echoes; RST for refused ports; segmenting at the
//! MSS; a Reno-style window growth (initial window 10, slow start,
//! congestion avoidance) capped by a fixed receive window (`max_window`, 64
//! segments), reduced on loss by each stack's CUBIC factor, with Linux's
//! proportional rate reduction in recovery; the receiver's ACK policy
//! ([`AckPolicy`]: Linux's quick-ack and ping-pong modes and delayed-ACK
//! timer, xnu's); Linux's timer wheel, which fires every TCP timer up to
//! one wheel granule late ([`TimerPolicy`]); RFC 7323 timestamps with the echo rule of §4.3, RTT
//! samples by Karn's rule or the echo; each stack's RTT estimator and RTO
//! ([`RtoPolicy`], [`RttEstimator`], [`LinuxRtt`]); SACK (three blocks);
//! loss detection by RACK (Linux) or by duplicate ACKs with Early
//! Retransmit (xnu); the tail loss probe ([`ProbePolicy`]); recovery that
//! retransmits only the segments marked lost; a timeout that marks every
//! unacknowledged segment lost; FIN close and TIME_WAIT (60 s) for the side
//! that closed first.
//!
//! Not modelled: flow control beyond the fixed receive-window cap (the
//! receiving application always reads at once), CUBIC's growth curve,
//! D-SACK, F-RTO, Nagle, TSO, pacing, window scaling and MSS negotiation,
//! the timestamp and SACK option bytes on the wire, sequence-number wrap and
//! random ISNs (both sides start at 0), keep-alives, FIN_WAIT_2 timeouts,
//! path MTU. Each host keeps a per-destination RTT cache (`metrics`:
//! Linux's `tcp_metrics`, xnu's route metrics).

mod ack;
mod conn;
mod metrics;
mod probe;
mod recv;
mod rto;
mod rtt;
mod scoreboard;
mod send_buf;
mod syn;
mod wheel;
mod window;

pub use ack::AckPolicy;
pub(crate) use conn::TcpConn;
pub(crate) use metrics::RouteCache;
pub use probe::ProbePolicy;
pub use rto::RtoPolicy;
pub use rtt::{LinuxRtt, RttEstimator};
pub use syn::{SynSchedule, SYNACK_GIVE_UP, SYNACK_RETRANSMIT_OFFSETS};
pub use wheel::TimerPolicy;

use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::{Duration, Instant};

/// IPv4 + TCP header bytes counted on the wire for every segment (the
/// timestamp option's 12 bytes are not counted; MSS stays 1460).
pub const HEADER_BYTES: usize = 40;

/// TCP flag bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flags(u8);

impl Flags {
    /// FIN.
    pub const FIN: Flags = Flags(0x01);
    /// SYN.
    pub const SYN: Flags = Flags(0x02);
    /// RST.
    pub const RST: Flags = Flags(0x04);
    /// PSH: the last segment of a write (Linux's `tcp_mark_push`).
    pub const PSH: Flags = Flags(0x08);
    /// ACK.
    pub const ACK: Flags = Flags(0x10);

    /// Flags from raw bits (as recorded in a [`crate::trace::PacketRecord`]).
    pub const fn from_bits(bits: u8) -> Flags {
        Flags(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// `true` when every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Union.
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// One TCP segment in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Flags.
    pub flags: Flags,
    /// Sequence number of the first byte (or of the SYN/FIN).
    pub seq: u64,
    /// Cumulative acknowledgement (meaningful with `ACK`).
    pub ack: u64,
    /// Payload.
    pub payload: Bytes,
    /// Timestamp value: the send time.
    pub ts_val: Instant,
    /// Timestamp echo: the `ts_val` of the segment being acknowledged.
    pub ts_ecr: Option<Instant>,
    /// SACK blocks (RFC 2018), most recent first.
    pub sack: SackBlocks,
}

/// Up to three SACK blocks (`[start, end)`), what fits beside the
/// timestamp option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(u64, u64); 3],
    len: u8,
}

impl SackBlocks {
    /// The first three of `blocks`.
    pub fn from_slice(blocks: &[(u64, u64)]) -> Self {
        let mut s = SackBlocks::default();
        for (slot, b) in s.blocks.iter_mut().zip(blocks) {
            *slot = *b;
            s.len += 1;
        }
        s
    }

    /// The blocks.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..usize::from(self.len)]
    }
}

impl Segment {
    /// Bytes on the wire.
    pub fn wire_len(&self) -> usize {
        HEADER_BYTES + self.payload.len()
    }

    /// The RST a host answers `seg` with when it matches no connection
    /// (RFC 793 "reset generation").
    pub fn reset_for(now: Instant, seg: &Segment) -> Segment {
        let (flags, seq, ack) = if seg.flags.contains(Flags::ACK) {
            (Flags::RST, seg.ack, 0)
        } else {
            let syn_fin = u64::from(seg.flags.contains(Flags::SYN))
                + u64::from(seg.flags.contains(Flags::FIN));
            (
                Flags::RST.with(Flags::ACK),
                0,
                seg.seq + seg.payload.len() as u64 + syn_fin,
            )
        };
        Segment {
            src: seg.dst,
            dst: seg.src,
            flags,
            seq,
            ack,
            payload: Bytes::new(),
            ts_val: now,
            ts_ecr: None,
            sack: SackBlocks::default(),
        }
    }

    /// `true` when this is a SYN without ACK (a connection request).
    pub fn is_syn_only(&self) -> bool {
        self.flags.contains(Flags::SYN) && !self.flags.contains(Flags::ACK)
    }
}

/// Per-host TCP parameters: which OS the stack behaves like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpStack {
    /// SYN retransmissions on connect.
    pub syn_schedule: SynSchedule,
    /// Data retransmission timeout rules.
    pub rto: RtoPolicy,
    /// Tail loss probe rules.
    pub probe: ProbePolicy,
    /// Delayed-ACK rules.
    pub acks: AckPolicy,
    /// How the stack's timers round their expiry.
    pub timers: TimerPolicy,
    /// Maximum segment size (payload bytes per segment).
    pub mss: usize,
    /// Initial congestion window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// Largest window in segments: the peer's receive window, fixed.
    pub max_window: u32,
    /// How long the side that closed first stays in TIME_WAIT.
    pub time_wait: Duration,
}

impl TcpStack {
    /// Linux before 6.5 (the Android GKI kernels up to android14-6.1): the
    /// exponential SYN schedule; timers, RACK-TLP and delayed ACKs as
    /// Linux 4.14–6.4 have them (`docs/sim-tcp.md`).
    pub fn linux_classic() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::LinuxClassic,
            rto: RtoPolicy::Linux,
            probe: ProbePolicy::Linux,
            acks: AckPolicy::Linux,
            timers: TimerPolicy::LinuxHz250,
            mss: 1460,
            initial_window: 10,
            max_window: 64,
            time_wait: Duration::from_secs(60),
        }
    }

    /// Linux 6.5 and later: the first SYN back-offs linear
    /// (`tcp_syn_linear_timeouts`, commit ccce324dabfe); the rest as
    /// [`TcpStack::linux_classic`].
    pub fn linux_6_5() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::Linux65,
            ..Self::linux_classic()
        }
    }

    /// iOS/macOS (xnu), as xnu-4570 (2017) has it: before RACK
    /// (xnu-11215, 2024) and the "modern" ACK strategy (xnu-7195, 2020).
    pub fn xnu() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::Xnu,
            rto: RtoPolicy::Xnu,
            probe: ProbePolicy::Xnu2017,
            acks: AckPolicy::XnuLegacy,
            timers: TimerPolicy::Exact,
            ..Self::linux_classic()
        }
    }

    /// When an attempt started at `start` against a black hole sends its
    /// SYNs, and when it gives up: each gap of the schedule is armed when
    /// the previous SYN leaves and fires on the stack's timers, so Linux's
    /// SYNs drift later than the nominal offsets (0, 1.024, 3.04, 7.168 s…).
    ///
    /// ```
    /// use stn_proto::Instant;
    /// use stn_sim::tcp::TcpStack;
    /// let (syns, give_up) = TcpStack::linux_classic().syn_times(Instant::ZERO);
    /// let ms: Vec<u64> = syns.iter().map(|t| t.as_nanos() / 1_000_000).collect();
    /// assert_eq!(ms, [0, 1024, 3040, 7168, 15_360, 31_488, 65_536]);
    /// assert_eq!(give_up, Instant::from_millis(131_072));
    /// ```
    pub fn syn_times(&self, start: Instant) -> (Vec<Instant>, Instant) {
        let schedule = &self.syn_schedule;
        let give_up = schedule.give_up();
        let mut syns = vec![start];
        let (mut at, mut prev) = (start, Duration::ZERO);
        for i in 1.. {
            match schedule.syn_offset(i) {
                Some(o) if o < give_up => {
                    at = self.timers.expiry(at, o.saturating_sub(prev));
                    prev = o;
                    syns.push(at);
                }
                _ => break,
            }
        }
        (syns, self.timers.expiry(at, give_up.saturating_sub(prev)))
    }
}

impl Default for TcpStack {
    /// [`TcpStack::linux_classic`].
    fn default() -> Self {
        Self::linux_classic()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux ≥ 6.5 against a black hole: `tcp_syn_linear_timeouts` (4)
    /// keeps the first back-offs at 1 s, then they double; each gap is
    /// armed when the previous SYN leaves and fires at the end of its
    /// wheel bucket (`calc_wheel_index`: 32 ms granules up to 504 jiffies,
    /// 256 ms up to 4032, 2.048 s up to 32256). E.g. the second gap, armed
    /// at jiffy 256 for 250 jiffies, lands in the bucket ending at 512.
    #[test]
    fn linux_6_5_syns_on_the_wheel() {
        let (syns, give_up) = TcpStack::linux_6_5().syn_times(Instant::ZERO);
        let ms: Vec<u64> = syns.iter().map(|t| t.as_nanos() / 1_000_000).collect();
        assert_eq!(
            ms,
            [0, 1024, 2048, 3072, 4096, 5120, 7136, 11_264, 19_456, 35_584, 69_632]
        );
        assert_eq!(give_up, Instant::from_millis(135_168));
    }
}
