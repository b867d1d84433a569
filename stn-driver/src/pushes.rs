//! Server pushes fanned out to the app's [`Pushes`] streams, each bounded in
//! entries and in bytes: a stream the app never reads holds at most its
//! budget, and later pushes are dropped (and counted) instead of queued.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use async_channel::{Receiver, Sender, TrySendError};
use futures_core::Stream;

use crate::outcome::Push;

/// Server pushes (see [`Client::pushes`](crate::Client::pushes)): a
/// [`Stream`], or call [`next`](Self::next).
pub struct Pushes {
    rx: Pin<Box<Receiver<Push>>>,
    queued: Arc<AtomicUsize>,
}

impl fmt::Debug for Pushes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pushes")
            .field("buffered", &self.rx.len())
            .field("buffered_bytes", &self.queued.load(Ordering::Relaxed))
            .finish()
    }
}

impl Pushes {
    /// The next push; `None` once the client is shut down.
    pub async fn next(&mut self) -> Option<Push> {
        std::future::poll_fn(|cx| self.poll_push(cx)).await
    }

    fn poll_push(&mut self, cx: &mut Context<'_>) -> Poll<Option<Push>> {
        let push = std::task::ready!(self.rx.as_mut().poll_next(cx));
        if let Some(p) = &push {
            self.queued.fetch_sub(p.body.len(), Ordering::AcqRel);
        }
        Poll::Ready(push)
    }
}

impl Stream for Pushes {
    type Item = Push;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Push>> {
        self.poll_push(cx)
    }
}

/// The driver's end of one [`Pushes`] stream.
#[derive(Debug)]
pub(crate) struct Subscriber {
    tx: Sender<Push>,
    queued: Arc<AtomicUsize>,
    max_bytes: usize,
}

/// What offering a push to a subscriber did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Queued,
    /// Its stream is full (in entries or bytes): the push is dropped for it.
    Dropped,
    /// Its stream is gone: forget the subscriber.
    Gone,
}

/// A new stream holding at most `max_entries` pushes and `max_bytes` bytes
/// of push bodies.
pub(crate) fn channel(max_entries: usize, max_bytes: usize) -> (Subscriber, Pushes) {
    let (tx, rx) = async_channel::bounded(max_entries.max(1));
    let queued = Arc::new(AtomicUsize::new(0));
    (
        Subscriber {
            tx,
            queued: queued.clone(),
            max_bytes,
        },
        Pushes {
            rx: Box::pin(rx),
            queued,
        },
    )
}

impl Subscriber {
    /// Queues `push` unless that would exceed the stream's budget.
    pub(crate) fn offer(&self, push: &Push) -> Offer {
        let len = push.body.len();
        if self.queued.load(Ordering::Acquire).saturating_add(len) > self.max_bytes {
            return if self.tx.is_closed() {
                Offer::Gone
            } else {
                Offer::Dropped
            };
        }
        // Counted before it is visible, so the reader's subtraction never
        // comes first.
        self.queued.fetch_add(len, Ordering::AcqRel);
        match self.tx.try_send(push.clone()) {
            Ok(()) => Offer::Queued,
            Err(e) => {
                self.queued.fetch_sub(len, Ordering::AcqRel);
                match e {
                    TrySendError::Full(_) => Offer::Dropped,
                    TrySendError::Closed(_) => Offer::Gone,
                }
            }
        }
    }

    /// Bytes of push bodies waiting in this stream.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn push(len: usize) -> Push {
        Push {
            link: None,
            cmd_id: 1,
            body: Bytes::from(vec![7u8; len]),
        }
    }

    #[test]
    fn a_stream_holds_at_most_its_bytes_and_entries() {
        let (sub, mut rx) = channel(3, 100);
        assert_eq!(sub.offer(&push(60)), Offer::Queued);
        assert_eq!(sub.offer(&push(60)), Offer::Dropped, "over 100 bytes");
        assert_eq!(sub.offer(&push(40)), Offer::Queued);
        assert_eq!(sub.queued_bytes(), 100);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let first = rx.poll_push(&mut cx).map(|p| p.map(|p| p.body.len()));
        assert_eq!(first, Poll::Ready(Some(60)));
        assert_eq!(sub.queued_bytes(), 40, "reading frees its bytes");
        assert_eq!(sub.offer(&push(0)), Offer::Queued);
        assert_eq!(sub.offer(&push(0)), Offer::Queued);
        assert_eq!(sub.offer(&push(0)), Offer::Dropped, "over 3 entries");
        drop(rx);
        assert_eq!(sub.offer(&push(1)), Offer::Gone);
    }
}
