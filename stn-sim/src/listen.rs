//! A listening host's finite capacity: the SYN backlog (half-open
//! connections), the accept queue and the rate at which the application
//! takes connections off it, and the CPU its handshakes cost.
//!
//! Modelled on Linux without SYN cookies: a SYN is dropped when the SYN
//! backlog or the accept queue is full; the ACK that would complete a
//! handshake is dropped while the accept queue is full (the connection
//! stays half-open and its SYN-ACK is retransmitted); a completed
//! connection waits in the accept queue until the application's accept
//! loop takes it, and only then does the application see it and its bytes.

use std::collections::VecDeque;

use stn_proto::{Duration, Instant};

use crate::host::ServerConnId;

/// What a listening host can take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capacity {
    /// Half-open connections (SYN received, handshake not completed) the
    /// host keeps; further SYNs are dropped.
    pub syn_backlog: u32,
    /// Completed connections waiting for the application's `accept`.
    pub accept_backlog: u32,
    /// Connections per second the application's accept loop takes.
    pub accept_rate: f64,
    /// Server CPU per accepted connection (kernel and accept path); delays
    /// the application's first replies on it.
    pub handshake_cost: Duration,
    /// Server CPU per TLS ClientHello answered (the asymmetric operations);
    /// delays the server's flight.
    pub tls_cost: Duration,
    /// CPU workers sharing the handshake work (at least one).
    pub workers: u32,
}

/// What the capacity limits did, counted since the host started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapacityStats {
    /// SYNs dropped because the SYN backlog or the accept queue was full.
    pub syn_drops: u64,
    /// Handshake-completing segments dropped because the accept queue was
    /// full.
    pub ack_drops: u64,
    /// Connections the application accepted.
    pub accepted: u64,
    /// The longest the accept queue was.
    pub peak_accept_queue: u64,
}

impl CapacityStats {
    /// Connection attempts the queues turned away (SYNs and ACKs dropped).
    pub fn overflows(&self) -> u64 {
        self.syn_drops + self.ack_drops
    }
}

/// The queues and CPU of one listening host.
#[derive(Debug)]
pub(crate) struct ListenQueue {
    cap: Capacity,
    half_open: u32,
    accept: VecDeque<ServerConnId>,
    /// When the accept loop can take the next connection.
    next_accept: Instant,
    /// The accept tick already scheduled.
    tick: Option<Instant>,
    /// When each CPU worker is next free.
    workers: Vec<Instant>,
    stats: CapacityStats,
}

impl ListenQueue {
    pub(crate) fn new(cap: Capacity) -> Self {
        ListenQueue {
            cap,
            half_open: 0,
            accept: VecDeque::new(),
            next_accept: Instant::ZERO,
            tick: None,
            workers: vec![Instant::ZERO; cap.workers.max(1) as usize],
            stats: CapacityStats::default(),
        }
    }

    pub(crate) fn stats(&self) -> CapacityStats {
        self.stats
    }

    fn accept_full(&self) -> bool {
        self.accept.len() >= self.cap.accept_backlog as usize
    }

    /// Whether a new SYN is taken (counts the drop when not).
    pub(crate) fn admit_syn(&mut self) -> bool {
        if self.accept_full() || self.half_open >= self.cap.syn_backlog {
            self.stats.syn_drops += 1;
            return false;
        }
        self.half_open += 1;
        true
    }

    /// Whether a segment for a half-open connection may reach it (counts
    /// the drop when not): not while the accept queue is full.
    pub(crate) fn admit_handshake_segment(&mut self) -> bool {
        if self.accept_full() {
            self.stats.ack_drops += 1;
            return false;
        }
        true
    }

    /// A half-open connection ended without completing.
    pub(crate) fn forget_half_open(&mut self) {
        self.half_open = self.half_open.saturating_sub(1);
    }

    /// A half-open connection completed: it waits in the accept queue.
    /// Returns the time of the accept tick to schedule, if one is needed.
    pub(crate) fn completed(&mut self, now: Instant, id: ServerConnId) -> Option<Instant> {
        self.forget_half_open();
        self.accept.push_back(id);
        self.stats.peak_accept_queue = self.stats.peak_accept_queue.max(self.accept.len() as u64);
        self.schedule(now)
    }

    /// A completed connection ended before it was accepted.
    pub(crate) fn forget_waiting(&mut self, id: ServerConnId) {
        self.accept.retain(|&c| c != id);
    }

    fn schedule(&mut self, now: Instant) -> Option<Instant> {
        if self.tick.is_some() || self.accept.is_empty() {
            return None;
        }
        let at = self.next_accept.max(now);
        self.tick = Some(at);
        Some(at)
    }

    /// The accept tick at `now`: the connection the application takes (if
    /// any is waiting) and the next tick to schedule.
    pub(crate) fn accept_tick(&mut self, now: Instant) -> (Option<ServerConnId>, Option<Instant>) {
        if self.tick != Some(now) {
            return (None, None); // superseded
        }
        self.tick = None;
        let taken = self.accept.pop_front();
        if taken.is_some() {
            self.stats.accepted += 1;
            let gap = 1.0 / self.cap.accept_rate.max(1e-9);
            self.next_accept = now + Duration::from_secs_f64(gap.min(1e6));
        }
        (taken, self.schedule(now))
    }

    /// Runs a CPU job of `cost` from `now` on the first free worker; returns
    /// how long after `now` it finishes.
    fn run_job(&mut self, now: Instant, cost: Duration) -> Duration {
        if cost.is_zero() {
            return Duration::ZERO;
        }
        let Some(w) = self.workers.iter_mut().min() else {
            return Duration::ZERO;
        };
        let done = (*w).max(now) + cost;
        *w = done;
        done.saturating_duration_since(now)
    }

    /// The delay an accepted connection's first replies take.
    pub(crate) fn accept_delay(&mut self, now: Instant) -> Duration {
        self.run_job(now, self.cap.handshake_cost)
    }

    /// The delay the server's answer to a TLS ClientHello takes.
    pub(crate) fn hello_delay(&mut self, now: Instant) -> Duration {
        self.run_job(now, self.cap.tls_cost)
    }

    /// The host went down at `now`: every queue is empty and the CPU's
    /// booked work is gone with it.
    pub(crate) fn clear(&mut self, now: Instant) {
        self.half_open = 0;
        self.accept.clear();
        self.tick = None;
        self.next_accept = now;
        self.workers.fill(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap() -> Capacity {
        Capacity {
            syn_backlog: 2,
            accept_backlog: 1,
            accept_rate: 10.0,
            handshake_cost: Duration::from_millis(3),
            tls_cost: Duration::ZERO,
            workers: 1,
        }
    }

    #[test]
    fn full_queues_drop_syns_and_handshake_acks() {
        let mut q = ListenQueue::new(cap());
        assert!(q.admit_syn() && q.admit_syn());
        assert!(!q.admit_syn(), "the SYN backlog holds two");
        assert_eq!(
            q.completed(Instant::ZERO, ServerConnId(0)),
            Some(Instant::ZERO)
        );
        assert!(!q.admit_handshake_segment(), "the accept queue holds one");
        assert!(!q.admit_syn(), "a full accept queue drops SYNs too");
        let s = q.stats();
        assert_eq!((s.syn_drops, s.ack_drops, s.peak_accept_queue), (2, 1, 1));
    }

    #[test]
    fn the_accept_loop_keeps_its_rate_and_the_cpu_queues_jobs() {
        let mut q = ListenQueue::new(cap());
        let t0 = Instant::from_secs(1);
        q.admit_syn();
        q.admit_syn();
        assert_eq!(q.completed(t0, ServerConnId(0)), Some(t0));
        let (taken, next) = q.accept_tick(t0);
        assert_eq!((taken, next), (Some(ServerConnId(0)), None));
        // The next connection waits for the accept loop's 100 ms gap.
        assert_eq!(
            q.completed(t0, ServerConnId(1)),
            Some(t0 + Duration::from_millis(100))
        );
        assert_eq!(
            q.accept_tick(t0),
            (None, None),
            "a superseded tick takes nothing"
        );
        assert_eq!(q.accept_delay(t0), Duration::from_millis(3));
        assert_eq!(
            q.accept_delay(t0),
            Duration::from_millis(6),
            "one worker: jobs queue"
        );
        assert_eq!(q.stats().accepted, 1);
    }
}
