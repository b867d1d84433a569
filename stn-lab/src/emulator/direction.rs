//! One direction of the emulated link: packets read from one TUN device go
//! through stn-sim's [`Link`] (the simulator's own link model, time passed
//! in) and are written to the other TUN device at the instant it returns.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use stn_proto::Rng;
use stn_sim::link::{Link, LinkSchedule, LinkStats, LinkVerdict};
use tun::AsyncDevice;

use super::packet::{classify, PacketKind};

/// Packets one direction holds in flight at most (on top of the link
/// model's own bottleneck queue): 4096 full-size packets are 6 MB, more than
/// any scenario's delay × rate; beyond it packets are dropped and counted.
const MAX_IN_FLIGHT: usize = 4096;
/// Distinct connection attempts remembered per reset (for the count only).
const MAX_TRACKED_CONNECTS: usize = 65_536;
/// Read buffer: a TUN device without offloads hands over one IP packet of
/// at most the MTU; 64 KiB covers any IPv4 packet.
const READ_BUFFER: usize = 65_536;

/// What one direction did since the last
/// [`LinkEmulator::set_path`](super::LinkEmulator::set_path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// The link model's counters (offered, delivered, lost, queue drops,
    /// peak queue).
    pub link: LinkStats,
    /// TCP SYNs without ACK offered (connection attempts and their
    /// retransmissions).
    pub syns: u64,
    /// Distinct connection attempts among them (source port and initial
    /// sequence number).
    pub connects: u64,
    /// Non-IPv4 packets the emulator did not forward (IPv6 neighbour
    /// discovery and the like).
    pub not_ipv4: u64,
    /// Packets dropped because 4096 were already in flight.
    pub overflow_drops: u64,
    /// Packets written to the far side.
    pub written: u64,
    /// Writes the far TUN device refused.
    pub write_errors: u64,
    /// How late the latest-written packet was against the link model's
    /// delivery instant (timer granularity and scheduling on a loaded
    /// machine).
    pub max_late: Duration,
    /// Sum of every written packet's lateness (mean = this / `written`).
    pub total_late: Duration,
}

/// The link model and counters of one direction, shared between its pipe
/// task and the lab's control calls.
#[derive(Debug)]
struct State {
    link: Link,
    /// Real instant of the link model's time zero (the scenario's t = 0).
    origin: Instant,
    stats: DirectionStats,
    connects: BTreeSet<(u16, u32)>,
}

/// A handle on one direction's state.
#[derive(Clone, Debug)]
pub(crate) struct DirectionShared(Arc<Mutex<State>>);

impl DirectionShared {
    /// A direction following `schedule` from now on.
    pub(crate) fn new(schedule: LinkSchedule, seed: u64) -> Self {
        DirectionShared(Arc::new(Mutex::new(State {
            link: new_link(schedule, seed),
            origin: Instant::now(),
            stats: DirectionStats::default(),
            connects: BTreeSet::new(),
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain counters and the link model: still consistent
        // if a holder panicked.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `schedule` at t = 0 now, with fresh random streams and zeroed
    /// counters. Packets already in flight are still delivered.
    pub(crate) fn reset(&self, schedule: LinkSchedule, seed: u64) {
        let mut s = self.lock();
        s.link = new_link(schedule, seed);
        s.origin = Instant::now();
        s.stats = DirectionStats::default();
        s.connects.clear();
    }

    /// The counters since the last reset.
    pub(crate) fn stats(&self) -> DirectionStats {
        let s = self.lock();
        DirectionStats {
            link: s.link.stats(),
            ..s.stats
        }
    }

    /// Passes one packet read at `read_at` through the link model: the
    /// real instant it is due at the far side, or `None` when it is lost,
    /// dropped or not forwarded.
    fn offer(&self, packet: &[u8], read_at: Instant) -> Option<Instant> {
        let mut s = self.lock();
        match classify(packet) {
            PacketKind::NotIpv4 => {
                s.stats.not_ipv4 += 1;
                return None;
            }
            PacketKind::Syn { src_port, isn } => {
                s.stats.syns += 1;
                if s.connects.len() < MAX_TRACKED_CONNECTS && s.connects.insert((src_port, isn)) {
                    s.stats.connects += 1;
                }
            }
            PacketKind::Other => {}
        }
        let since = read_at.saturating_duration_since(s.origin);
        let now =
            stn_proto::Instant::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX));
        match s.link.offer(now, packet.len()) {
            LinkVerdict::Deliver(at) => Some(s.origin + Duration::from_nanos(at.as_nanos())),
            LinkVerdict::Lost | LinkVerdict::QueueFull => None,
        }
    }

    fn count_overflow(&self) {
        self.lock().stats.overflow_drops += 1;
    }

    fn count_write(&self, late: Duration, ok: bool) {
        let mut s = self.lock();
        if ok {
            s.stats.written += 1;
            s.stats.max_late = s.stats.max_late.max(late);
            s.stats.total_late += late;
        } else {
            s.stats.write_errors += 1;
        }
    }
}

fn new_link(schedule: LinkSchedule, seed: u64) -> Link {
    Link::new(schedule, Rng::derive(seed, 1), Rng::derive(seed, 2))
}

/// Moves packets from `from` to `to` through `shared`'s link model until
/// reading fails (the device is gone) or the task is dropped.
pub(crate) async fn pipe(
    from: Arc<AsyncDevice>,
    to: Arc<AsyncDevice>,
    shared: DirectionShared,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; READ_BUFFER];
    // (due instant, packet); due instants never decrease (see `push`).
    let mut in_flight: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    loop {
        let due = in_flight.front().map(|(at, _)| *at);
        tokio::select! {
            read = from.recv(&mut buf) => {
                let n = read?;
                let packet = &buf[..n];
                if let Some(at) = shared.offer(packet, Instant::now()) {
                    if in_flight.len() >= MAX_IN_FLIGHT {
                        shared.count_overflow();
                    } else {
                        // The link model never reorders; after a reset its
                        // new instants may precede older packets', which
                        // still leave first (a wire is FIFO).
                        let at = in_flight.back().map_or(at, |(last, _)| at.max(*last));
                        in_flight.push_back((at, packet.to_vec()));
                    }
                }
            }
            () = sleep_until(due), if due.is_some() => {
                let now = Instant::now();
                while let Some((at, packet)) = pop_due(&mut in_flight, now) {
                    let ok = to.send(&packet).await.is_ok();
                    shared.count_write(Instant::now().saturating_duration_since(at), ok);
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

/// The first packet in flight if its due instant has come.
fn pop_due(
    in_flight: &mut VecDeque<(Instant, Vec<u8>)>,
    now: Instant,
) -> Option<(Instant, Vec<u8>)> {
    if in_flight.front().is_some_and(|(at, _)| *at <= now) {
        in_flight.pop_front()
    } else {
        None
    }
}
