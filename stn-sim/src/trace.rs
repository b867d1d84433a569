//! The run trace: every delivered or dropped packet, every socket event
//! handed to a client and every client note, folded into a stable hash.
//!
//! The hash is FNV-1a 64 over a fixed little-endian encoding of each event
//! (no `std` hasher, whose output may change between releases or be randomly
//! keyed), so two runs agree bit for bit exactly when their hashes agree.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use stn_proto::Instant;

use crate::ids::ClientId;
pub use crate::ids::Fnv64;
use crate::path::Direction;
use crate::socket::{SocketEvent, SocketId};
use crate::tcp::Segment;

/// Why a packet never arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DropReason {
    /// The link's loss model (Bernoulli, Gilbert–Elliott or an outage) dropped it.
    Loss,
    /// The bottleneck queue was full (drop-tail).
    QueueFull,
    /// No host or path exists for the destination address.
    NoRoute,
    /// The middlebox had forgotten the flow ([`crate::middlebox`]).
    Middlebox,
}

/// The header fields of a packet as recorded in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRecord {
    /// Sender address.
    pub src: SocketAddr,
    /// Receiver address.
    pub dst: SocketAddr,
    /// TCP flags bits (see [`crate::tcp::Flags`]).
    pub flags: u8,
    /// Sequence number.
    pub seq: u64,
    /// Acknowledgement number.
    pub ack: u64,
    /// Payload length in bytes.
    pub len: usize,
    /// Bytes on the wire (payload plus headers).
    pub wire_len: usize,
}

impl PacketRecord {
    /// The record of `seg`.
    pub fn of(seg: &Segment) -> Self {
        PacketRecord {
            src: seg.src,
            dst: seg.dst,
            flags: seg.flags.bits(),
            seq: seg.seq,
            ack: seg.ack,
            len: seg.payload.len(),
            wire_len: seg.wire_len(),
        }
    }
}

/// One entry of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// A packet reached the far end of its link at `at`.
    Delivered {
        /// Arrival time.
        at: Instant,
        /// Which direction of the path.
        dir: Direction,
        /// Header summary.
        packet: PacketRecord,
    },
    /// A packet was dropped when it was offered to its link at `at`.
    Dropped {
        /// Time the packet was sent.
        at: Instant,
        /// Which direction of the path.
        dir: Direction,
        /// Why.
        reason: DropReason,
        /// Header summary.
        packet: PacketRecord,
    },
    /// A socket event was handed to a client.
    Socket {
        /// Delivery time.
        at: Instant,
        /// The receiving client.
        client: ClientId,
        /// The socket.
        socket: SocketId,
        /// The event.
        event: SocketEvent,
    },
    /// A client-defined note (a call finished, a decision taken, ...).
    Note {
        /// Time of the note.
        at: Instant,
        /// The client that wrote it.
        client: ClientId,
        /// A static label.
        label: &'static str,
        /// A value attached to the label.
        value: u64,
    },
}

impl TraceEvent {
    /// The virtual time of the event.
    pub fn at(&self) -> Instant {
        match self {
            TraceEvent::Delivered { at, .. }
            | TraceEvent::Dropped { at, .. }
            | TraceEvent::Socket { at, .. }
            | TraceEvent::Note { at, .. } => *at,
        }
    }
}

/// Right-aligns a time for one-line event listings.
fn pad(at: &Instant) -> String {
    format!("{:>12}", format!("{at:?}"))
}

fn flag_letters(bits: u8) -> String {
    let mut s = String::new();
    for (bit, c) in [(0x02, 'S'), (0x01, 'F'), (0x04, 'R'), (0x10, '.')] {
        if bits & bit != 0 {
            s.push(c);
        }
    }
    s
}

impl fmt::Display for PacketRecord {
    /// `10.0.0.1:32768 > 10.0.0.2:8080 [S.] seq=0 ack=1 len=0`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} > {} [{}] seq={} ack={} len={}",
            self.src,
            self.dst,
            flag_letters(self.flags),
            self.seq,
            self.ack,
            self.len
        )
    }
}

impl fmt::Display for TraceEvent {
    /// One line per event, tcpdump-like, for debugging failed runs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = |d: &Direction| match d {
            Direction::Up => "up  ",
            Direction::Down => "down",
        };
        match self {
            TraceEvent::Delivered { at, dir: d, packet } => {
                write!(f, "{} {} deliver {packet}", pad(at), dir(d))
            }
            TraceEvent::Dropped {
                at,
                dir: d,
                reason,
                packet,
            } => {
                write!(f, "{} {} DROP({reason:?}) {packet}", pad(at), dir(d))
            }
            TraceEvent::Socket {
                at,
                client,
                socket,
                event,
            } => match event {
                SocketEvent::Data(b) => {
                    write!(
                        f,
                        "{} client {} socket {}: data {} bytes",
                        pad(at),
                        client.0,
                        socket.0,
                        b.len()
                    )
                }
                other => write!(
                    f,
                    "{} client {} socket {}: {other:?}",
                    pad(at),
                    client.0,
                    socket.0
                ),
            },
            TraceEvent::Note {
                at,
                client,
                label,
                value,
            } => {
                write!(f, "{} client {} note {label} = {value}", pad(at), client.0)
            }
        }
    }
}

/// The trace of one run: a running hash plus, optionally, the events.
#[derive(Clone, Debug)]
pub struct Trace {
    hash: Fnv64,
    len: u64,
    keep: bool,
    events: Vec<TraceEvent>,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Trace {
    /// An empty trace; `keep_events = false` keeps only the hash and count
    /// (for long benchmark runs).
    pub fn new(keep_events: bool) -> Self {
        Trace {
            hash: Fnv64::new(),
            len: 0,
            keep: keep_events,
            events: Vec::new(),
        }
    }

    /// Starts or stops keeping events (the hash always covers everything).
    pub fn set_keep_events(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// The hash of everything recorded so far.
    pub fn hash(&self) -> u64 {
        self.hash.finish()
    }

    /// Number of events recorded (kept or not).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `true` when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kept events (empty when created with `keep_events = false`).
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Records a packet that arrived. The payload bytes are hashed too.
    pub(crate) fn delivered(&mut self, at: Instant, dir: Direction, seg: &Segment) {
        let packet = PacketRecord::of(seg);
        self.hash.write_u8(1);
        self.hash.write_u64(at.as_nanos());
        self.hash.write_u8(dir as u8);
        hash_packet(&mut self.hash, &packet);
        self.hash.write(&seg.payload);
        self.push(TraceEvent::Delivered { at, dir, packet });
    }

    /// Records a packet that was dropped.
    pub(crate) fn dropped(
        &mut self,
        at: Instant,
        dir: Direction,
        reason: DropReason,
        seg: &Segment,
    ) {
        let packet = PacketRecord::of(seg);
        self.hash.write_u8(2);
        self.hash.write_u64(at.as_nanos());
        self.hash.write_u8(dir as u8);
        self.hash.write_u8(reason as u8);
        hash_packet(&mut self.hash, &packet);
        self.hash.write(&seg.payload);
        self.push(TraceEvent::Dropped {
            at,
            dir,
            reason,
            packet,
        });
    }

    /// Records a socket event handed to a client.
    pub(crate) fn socket(
        &mut self,
        at: Instant,
        client: ClientId,
        socket: SocketId,
        event: &SocketEvent,
    ) {
        self.hash.write_u8(3);
        self.hash.write_u64(at.as_nanos());
        self.hash.write_u64(u64::from(client.0));
        self.hash.write_u64(socket.0);
        event.hash_into(&mut self.hash);
        self.push(TraceEvent::Socket {
            at,
            client,
            socket,
            event: event.clone(),
        });
    }

    /// Records a client note.
    pub(crate) fn note(&mut self, at: Instant, client: ClientId, label: &'static str, value: u64) {
        self.hash.write_u8(4);
        self.hash.write_u64(at.as_nanos());
        self.hash.write_u64(u64::from(client.0));
        self.hash.write_u64(label.len() as u64);
        self.hash.write(label.as_bytes());
        self.hash.write_u64(value);
        self.push(TraceEvent::Note {
            at,
            client,
            label,
            value,
        });
    }

    fn push(&mut self, e: TraceEvent) {
        self.len += 1;
        if self.keep {
            self.events.push(e);
        }
    }
}

fn hash_addr(h: &mut Fnv64, a: &SocketAddr) {
    match a.ip() {
        IpAddr::V4(v4) => {
            h.write_u8(4);
            h.write(&v4.octets());
        }
        IpAddr::V6(v6) => {
            h.write_u8(6);
            h.write(&v6.octets());
        }
    }
    h.write(&a.port().to_le_bytes());
}

fn hash_packet(h: &mut Fnv64, p: &PacketRecord) {
    hash_addr(h, &p.src);
    hash_addr(h, &p.dst);
    h.write_u8(p.flags);
    h.write_u64(p.seq);
    h.write_u64(p.ack);
    h.write_u64(p.len as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_one_line_each() {
        let mut t = Trace::new(true);
        t.note(Instant::from_millis(1500), ClientId(2), "call-ok", 7);
        assert_eq!(
            t.events()[0].to_string(),
            "        1.5s client 2 note call-ok = 7"
        );
    }

    #[test]
    fn fnv_known_vectors() {
        assert_eq!(Fnv64::new().finish(), 0xcbf29ce484222325);
        let mut h = Fnv64::new();
        h.write(b"foobar");
        assert_eq!(h.finish(), 0x85944171f73967e8);
    }

    #[test]
    fn notes_change_the_hash_and_order_matters() {
        let mut a = Trace::new(true);
        let mut b = Trace::new(false);
        a.note(Instant::from_secs(1), ClientId(0), "x", 1);
        a.note(Instant::from_secs(2), ClientId(0), "y", 2);
        b.note(Instant::from_secs(2), ClientId(0), "y", 2);
        b.note(Instant::from_secs(1), ClientId(0), "x", 1);
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.len(), 2);
        assert_eq!(b.len(), 2);
        assert_eq!(a.events().len(), 2);
        assert!(b.events().is_empty());
    }
}
