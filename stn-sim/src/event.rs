//! The discrete-event queue: events ordered by virtual time, ties broken by
//! insertion order so that a run is the same bit for bit every time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use stn_proto::Instant;

/// A min-queue of events keyed by `(time, sequence number)`.
///
/// Two events scheduled for the same instant pop in the order they were
/// pushed (FIFO), never in an order that depends on the payload or on memory
/// addresses.
///
/// ```
/// use stn_sim::event::EventQueue;
/// use stn_proto::Instant;
/// let mut q = EventQueue::new();
/// q.push(Instant::from_millis(5), "late");
/// q.push(Instant::from_millis(1), "first");
/// q.push(Instant::from_millis(1), "second");
/// assert_eq!(q.pop(), Some((Instant::from_millis(1), "first")));
/// assert_eq!(q.pop(), Some((Instant::from_millis(1), "second")));
/// assert_eq!(q.pop(), Some((Instant::from_millis(5), "late")));
/// assert_eq!(q.pop(), None);
/// ```
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

#[derive(Debug)]
struct Entry<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Instant, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.heap.pop().map(|e| (e.at, e.event))
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// `true` when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_pop_in_push_order_and_time_orders_first() {
        let mut q = EventQueue::new();
        for i in 0..100u64 {
            q.push(Instant::from_millis(i % 7), i);
        }
        let mut last = (Instant::ZERO, 0u64);
        let mut first = true;
        while let Some((t, v)) = q.pop() {
            if !first {
                assert!(
                    t > last.0 || (t == last.0 && v > last.1),
                    "{t:?} {v} after {last:?}"
                );
            }
            first = false;
            last = (t, v);
        }
        assert!(q.is_empty());
    }
}
