//! Which of the driver's sockets and lookups are ready to be polled.
//!
//! The driver polls every connection and DNS lookup itself, from its one
//! task, instead of a task per connection talking to it through channels:
//! a request then costs no cross-task hop between the engine and its socket.
//! Each connection (and lookup) gets its own [`Waker`]; waking it queues the
//! connection's [`Token`] here and wakes the driver, which polls only what
//! was queued — never a sweep of every connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};

use atomic_waker::AtomicWaker;
use stn_proto::ConnId;

/// What a wake-up is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Token {
    /// A connection (connect, read or write readiness).
    Conn(ConnId),
    /// A DNS lookup, by the driver's own number.
    Resolve(u64),
}

/// The queue of ready tokens, shared by the driver and its wakers.
#[derive(Debug, Default)]
pub(crate) struct ReadySet {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Vec<Token>>,
    driver: AtomicWaker,
}

/// One connection's or lookup's waker, with the flag that keeps it in the
/// queue at most once.
#[derive(Debug)]
pub(crate) struct TokenWaker {
    token: Token,
    queued: AtomicBool,
    shared: Arc<Shared>,
}

impl Wake for TokenWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.shared.push(self.token);
        }
        self.shared.driver.wake();
    }
}

impl TokenWaker {
    /// Marks the token as taken off the queue: a wake from now on queues it
    /// again. Called just before the driver polls it.
    pub(crate) fn unqueue(&self) {
        self.queued.store(false, Ordering::Release);
    }

    /// Queues the token without waking the driver (the driver itself asks:
    /// it is running and takes the queue again before it sleeps).
    pub(crate) fn schedule(&self) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.shared.push(self.token);
        }
    }
}

impl Shared {
    fn push(&self, token: Token) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(token);
    }
}

impl ReadySet {
    /// A waker for `token`, and its handle for [`TokenWaker::unqueue`] and
    /// [`TokenWaker::schedule`]. The token starts queued, so the driver
    /// polls it (and registers its waker) once.
    pub(crate) fn waker(&self, token: Token) -> (Arc<TokenWaker>, Waker) {
        let handle = Arc::new(TokenWaker {
            token,
            queued: AtomicBool::new(true),
            shared: self.shared.clone(),
        });
        self.shared.push(token);
        let waker = Waker::from(handle.clone());
        (handle, waker)
    }

    /// Registers the driver task's waker (called at the start of every poll).
    pub(crate) fn register(&self, waker: &Waker) {
        self.shared.driver.register(waker);
    }

    /// Moves the queued tokens into `out` (which is cleared first).
    pub(crate) fn take(&self, out: &mut Vec<Token>) {
        out.clear();
        let mut queue = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *queue, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_queued_once_until_unqueued() {
        let set = ReadySet::default();
        let (handle, waker) = set.waker(Token::Resolve(7));
        waker.wake_by_ref();
        handle.schedule();
        let mut out = Vec::new();
        set.take(&mut out);
        assert_eq!(out, vec![Token::Resolve(7)]);
        // Still marked queued: another wake adds nothing until unqueued.
        waker.wake_by_ref();
        set.take(&mut out);
        assert!(out.is_empty());
        handle.unqueue();
        waker.wake_by_ref();
        set.take(&mut out);
        assert_eq!(out, vec![Token::Resolve(7)]);
    }
}
