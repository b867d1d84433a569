//! Bounded broadcast streams of what the engine reports to the app: one
//! [`Events`] stream per subscriber, each holding at most its capacity. A
//! stream the app reads too slowly drops its *oldest* entries (the newest
//! status and reports matter most) and counts them in
//! [`Events::lagged`], so the driver never waits for a reader and never
//! grows.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

struct Queue<T> {
    items: VecDeque<T>,
    capacity: usize,
    lagged: u64,
    waker: Option<Waker>,
    closed: bool,
}

type Shared<T> = Arc<Mutex<Queue<T>>>;

/// A poisoned lock only means a reader panicked mid-read; the queue itself
/// is still consistent (every update is a single push or pop).
fn lock<T>(q: &Shared<T>) -> MutexGuard<'_, Queue<T>> {
    q.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A stream of engine events for the app: per-attempt
/// [`Report`](stn_proto::Report)s from
/// [`Client::reports`](crate::Client::reports), long-link
/// [`LinkStatus`](stn_proto::LinkStatus) changes from
/// [`Client::link_status`](crate::Client::link_status).
///
/// Bounded by the builder's [`event_capacity`](crate::Builder::event_capacity):
/// when it is full the oldest entry is dropped and counted in
/// [`lagged`](Self::lagged). A [`Stream`], or call [`next`](Self::next); it
/// ends (`None`) once the client is shut down and the buffered entries are
/// read.
pub struct Events<T> {
    queue: Shared<T>,
}

impl<T> fmt::Debug for Events<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = lock(&self.queue);
        f.debug_struct("Events")
            .field("buffered", &q.items.len())
            .field("capacity", &q.capacity)
            .field("lagged", &q.lagged)
            .field("closed", &q.closed)
            .finish()
    }
}

impl<T> Events<T> {
    /// The next entry; `None` once the client is shut down and every
    /// buffered entry was read.
    pub async fn next(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_entry(cx)).await
    }

    /// The next entry if one is buffered now (never waits).
    pub fn try_next(&mut self) -> Option<T> {
        lock(&self.queue).items.pop_front()
    }

    /// Entries this stream dropped (oldest first) because it was full.
    pub fn lagged(&self) -> u64 {
        lock(&self.queue).lagged
    }

    fn poll_entry(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut q = lock(&self.queue);
        if let Some(item) = q.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if q.closed {
            return Poll::Ready(None);
        }
        q.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<T> Stream for Events<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.poll_entry(cx)
    }
}

impl<T> Drop for Events<T> {
    fn drop(&mut self) {
        // Tells the driver to forget this subscriber at its next publish.
        lock(&self.queue).closed = true;
    }
}

/// The driver's end of every stream of one kind.
pub(crate) struct Publisher<T> {
    subscribers: Vec<Shared<T>>,
}

impl<T> Default for Publisher<T> {
    fn default() -> Self {
        Publisher {
            subscribers: Vec::new(),
        }
    }
}

impl<T: Clone> Publisher<T> {
    /// Adds a subscriber's queue.
    pub(crate) fn add(&mut self, queue: Subscription<T>) {
        self.subscribers.push(queue.0);
    }

    /// Adds a subscriber's queue whose first entry is `current` (a state
    /// stream: a subscriber learns where things stand, then each change).
    pub(crate) fn add_with_current(&mut self, queue: Subscription<T>, current: Option<&T>) {
        if let Some(item) = current {
            let mut q = lock(&queue.0);
            q.items.push_back(item.clone());
            // The app may already wait on the stream.
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        }
        self.add(queue);
    }

    /// Offers `item` to every stream, dropping each full one's oldest entry,
    /// and forgets streams the app dropped.
    pub(crate) fn publish(&mut self, item: &T) {
        self.subscribers.retain(|s| {
            let mut q = lock(s);
            if q.closed {
                return false;
            }
            if q.items.len() >= q.capacity {
                q.items.pop_front();
                q.lagged += 1;
            }
            q.items.push_back(item.clone());
            if let Some(w) = q.waker.take() {
                w.wake();
            }
            true
        });
    }

    /// Ends every stream (after its buffered entries).
    pub(crate) fn close(&mut self) {
        for s in self.subscribers.drain(..) {
            let mut q = lock(&s);
            q.closed = true;
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        }
    }
}

/// A new stream's queue, on its way to the driver.
pub(crate) struct Subscription<T>(Shared<T>);

/// A new stream holding at most `capacity` entries, and its queue for the
/// driver's [`Publisher::add`].
pub(crate) fn channel<T>(capacity: usize) -> (Subscription<T>, Events<T>) {
    let queue = Arc::new(Mutex::new(Queue {
        items: VecDeque::new(),
        capacity: capacity.max(1),
        lagged: 0,
        waker: None,
        closed: false,
    }));
    (Subscription(queue.clone()), Events { queue })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_stream_drops_its_oldest_and_counts_them() {
        let mut publisher = Publisher::default();
        let (sub, mut rx) = channel::<u32>(2);
        publisher.add(sub);
        for i in 0..5 {
            publisher.publish(&i);
        }
        assert_eq!(rx.lagged(), 3);
        assert_eq!(rx.try_next(), Some(3));
        assert_eq!(rx.try_next(), Some(4));
        assert_eq!(rx.try_next(), None);
        publisher.publish(&5);
        publisher.close();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(rx.poll_entry(&mut cx), Poll::Ready(Some(5)));
        assert_eq!(rx.poll_entry(&mut cx), Poll::Ready(None), "closed");
    }

    #[test]
    fn a_dropped_stream_is_forgotten() {
        let mut publisher = Publisher::default();
        let (sub, rx) = channel::<u32>(2);
        publisher.add(sub);
        drop(rx);
        publisher.publish(&1);
        assert!(publisher.subscribers.is_empty());
    }
}
