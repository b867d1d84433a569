//! The TCP model: segments, per-OS stack parameters, SYN schedules, the RTO
//! estimator and the connection state machine.
//!
//! Modelled: three-way handshake with the OS SYN retransmission schedule and
//! a Linux server's SYN-ACK retransmissions (and answers to duplicate SYNs);
//! RST for refused ports; segmenting at the MSS; a Reno-style congestion
//! window (initial window 10 segments, slow start, congestion avoidance,
//! `ssthresh` = flight/2 and a one-segment window after an RTO, `cwnd` =
//! `ssthresh` after a fast retransmit; no fast-recovery window inflation)
//! capped by a fixed receive window (`max_window`, 64 segments);
//! cumulative ACKs sent at once for every data segment (no delayed ACK) and
//! themselves subject to loss; out-of-order buffering with in-order delivery;
//! RFC 6298 RTT estimation from timestamps (RFC 7323 echo, so retransmitted
//! segments still give samples, as with Linux's and xnu's default timestamps);
//! RTO with exponential back-off and a cap, go-back-N after an RTO, fast
//! retransmit of the first unacknowledged segment on the third duplicate ACK;
//! FIN close and TIME_WAIT (60 s) for the side that closed first.
//!
//! Not modelled: flow control beyond the fixed receive-window cap (the
//! receiving application always reads at once), NewReno partial-ACK
//! recovery, SACK, tail-loss probes, delayed ACKs, Nagle, sequence-number wrap and
//! random ISNs (both sides start at 0), MSS/option negotiation, keep-alives,
//! FIN_WAIT_2 timeouts, path MTU.

mod conn;
mod rto;
mod syn;

pub(crate) use conn::TcpConn;
pub use rto::{RtoPolicy, RttEstimator};
pub use syn::{SynSchedule, SYNACK_GIVE_UP, SYNACK_RETRANSMIT_OFFSETS};

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
    /// Linux before 6.5 (Android up to android14-6.1 kernels).
    pub fn linux_classic() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::LinuxClassic,
            rto: RtoPolicy::Linux,
            mss: 1460,
            initial_window: 10,
            max_window: 64,
            time_wait: Duration::from_secs(60),
        }
    }

    /// Linux 6.5 and later.
    pub fn linux_6_5() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::Linux65,
            ..Self::linux_classic()
        }
    }

    /// iOS/macOS (xnu).
    pub fn xnu() -> Self {
        TcpStack {
            syn_schedule: SynSchedule::Xnu,
            rto: RtoPolicy::Xnu,
            ..Self::linux_classic()
        }
    }
}

impl Default for TcpStack {
    /// [`TcpStack::linux_classic`].
    fn default() -> Self {
        Self::linux_classic()
    }
}
