//! The server-wide byte budget: every read buffer, delayed reply and queued
//! push of every connection is charged to one counter, so what hostile
//! clients can make the server hold is bounded by
//! [`ServerConfig::buffer_budget`](super::ServerConfig::buffer_budget)
//! however many connections they open.
//!
//! A connection that cannot get the bytes it needs stops reading (its peer
//! then sees TCP back-pressure) and waits until another connection releases
//! some, or until one of its own deadlines closes it.
//!
//! Growth is split in two so that a crowd of large partial messages cannot
//! starve small ones: a connection may grow its charge up to
//! [`SMALL_CHARGE`] while the total is under the whole budget, but past that
//! only while the total stays under three quarters of it. The last quarter
//! is thus kept for small requests (heartbeats, ordinary calls), which keep
//! being served while the large ones wait.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// A connection's charge up to which it may use the whole budget; above it,
/// only the first three quarters.
pub(super) const SMALL_CHARGE: usize = 16 * 1024;

/// How long a waiter sleeps before retrying even without a wake-up (a
/// release between a failed try and the wait registering is not lost then).
const RETRY: Duration = Duration::from_millis(50);

/// The shared counter. See the module docs.
#[derive(Debug)]
pub(super) struct Budget {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    freed: Notify,
}

impl Budget {
    pub(super) fn new(limit: usize) -> Self {
        Budget {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// The cap on the total for a charge that would reach `new_charge`.
    fn ceiling(&self, new_charge: usize) -> usize {
        if new_charge <= SMALL_CHARGE {
            self.limit
        } else {
            self.limit - self.limit / 4
        }
    }

    /// Bytes charged now, across all connections.
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The largest total ever charged.
    pub(super) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Adds `n` if the total stays within the ceiling for a charge growing
    /// to `new_charge`.
    fn try_add(&self, n: usize, new_charge: usize) -> bool {
        let ceiling = self.ceiling(new_charge);
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let Some(next) = used.checked_add(n).filter(|&t| t <= ceiling) else {
                return false;
            };
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(next, Ordering::Relaxed);
                    return true;
                }
                Err(now) => used = now,
            }
        }
    }

    /// Adds `n` unconditionally: for output the server has already decided
    /// to produce (a reply to a request it has read). Reading stops while
    /// the total is over the budget, so this exceeds it by at most one reply
    /// per connection.
    pub(super) fn force_add(&self, n: usize) {
        let next = self.used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        self.peak.fetch_max(next, Ordering::Relaxed);
    }

    pub(super) fn release(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::Relaxed);
            self.freed.notify_waiters();
        }
    }

    /// Waits until some bytes are released (or a short retry period passes).
    pub(super) async fn wait_for_release(&self) {
        let _ = tokio::time::timeout(RETRY, self.freed.notified()).await;
    }
}

/// What one connection holds of the [`Budget`]; released when dropped.
#[derive(Debug)]
pub(super) struct Charge<'a> {
    budget: &'a Budget,
    held: usize,
}

impl<'a> Charge<'a> {
    pub(super) fn new(budget: &'a Budget) -> Self {
        Charge { budget, held: 0 }
    }

    /// Bytes held.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// Moves the charge to `total` bytes if the budget allows it (shrinking
    /// always does). `false`: nothing changed.
    pub(super) fn try_set(&mut self, total: usize) -> bool {
        if total <= self.held {
            self.budget.release(self.held - total);
            self.held = total;
            return true;
        }
        if self.budget.try_add(total - self.held, total) {
            self.held = total;
            true
        } else {
            false
        }
    }

    /// Adds `n` bytes whatever the budget (see [`Budget::force_add`]).
    pub(super) fn force_add(&mut self, n: usize) {
        self.budget.force_add(n);
        self.held = self.held.saturating_add(n);
    }

    /// Gives back `n` bytes (at most what is held).
    pub(super) fn sub(&mut self, n: usize) {
        let n = n.min(self.held);
        self.budget.release(n);
        self.held -= n;
    }

    /// Waits until the budget may have room again.
    pub(super) async fn budget_wait(&self) {
        self.budget.wait_for_release().await;
    }

    /// Whether the budget is over the ceiling for growing this charge: the
    /// connection should not read more until it is not.
    pub(super) fn budget_full(&self) -> bool {
        self.budget.used() >= self.budget.ceiling(self.held.saturating_add(1))
    }
}

impl Drop for Charge<'_> {
    fn drop(&mut self) {
        self.budget.release(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stay_within_the_budget_and_are_released() {
        let budget = Budget::new(64 * 1024);
        let mut a = Charge::new(&budget);
        let mut b = Charge::new(&budget);
        // Large charges stop at three quarters (48 KiB) ...
        assert!(a.try_set(40 * 1024));
        assert!(!b.try_set(20 * 1024));
        // ... small ones may use the last quarter.
        assert!(b.try_set(SMALL_CHARGE));
        assert_eq!(budget.used(), 56 * 1024);
        let mut c = Charge::new(&budget);
        assert!(!c.try_set(SMALL_CHARGE));
        assert!(c.try_set(8 * 1024));
        assert_eq!(budget.used(), 64 * 1024);
        assert!(!c.try_set(8 * 1024 + 1));
        assert!(c.budget_full());
        // Shrinking always works and frees room.
        assert!(a.try_set(1024));
        assert!(c.try_set(9 * 1024));
        drop((a, b, c));
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.peak(), 64 * 1024);
    }

    #[test]
    fn forced_output_is_counted_and_released() {
        let budget = Budget::new(1024);
        let mut a = Charge::new(&budget);
        a.force_add(4096);
        assert_eq!(budget.used(), 4096);
        assert!(a.budget_full());
        a.sub(10_000);
        assert_eq!((a.held(), budget.used()), (0, 0));
    }
}
