//! Verdict probes: short-link race losers kept open until their verdict is
//! due ([`LoserReports::OutpacedAtThreshold`]).
//!
//! A race ends at its win and its exchange drops what is left, but a loser
//! on another address, started before the winner, may not yet have waited
//! the outpaced threshold (twice the winner's connect time plus 100 ms):
//! judged then, a black hole ordered first would never be told apart from
//! a slower path, stay "new" in the history and cost every call a stagger.
//! The engine keeps such a socket until the threshold since its start: if
//! it has not answered by then, its address is reported failed (Outpaced)
//! and it is closed; if it connects, it was merely slower (no verdict,
//! closed); a socket error is reported as any connect failure. At most one
//! race's losers per short attempt, each for at most the threshold, and the
//! table is capped (beyond it a loser is closed without a verdict, as
//! before).
//!
//! A probe that connects is closed, not pooled: the pool holds connections
//! a server has answered with a reusable response (it knows their keep-alive
//! terms), and nothing has been sent on this one.
//!
//! [`LoserReports::OutpacedAtThreshold`]: crate::race::LoserReports::OutpacedAtThreshold

use std::collections::BTreeMap;

use crate::io::{CloseReason, ConnEvent, ConnId};
use crate::net::{ConnectError, SocketAddr};
use crate::race::AttemptResult;
use crate::short_link::EndpointReport;
use crate::time::Instant;

use super::conns::Owner;
use super::outbox::Outbox;
use super::timer_set::TimerSet;

/// The lingering losers, with their due times in a deadline index (the
/// engine's next timeout and the expired probes are found without a pass
/// over all of them).
#[derive(Debug)]
pub(super) struct Probes {
    /// Each lingering loser's address.
    by_conn: BTreeMap<ConnId, SocketAddr>,
    due: TimerSet<ConnId>,
    /// Most probes kept at once.
    max: usize,
}

impl Probes {
    /// At most `max` probes at once.
    pub(super) fn new(max: usize) -> Self {
        Probes {
            by_conn: BTreeMap::new(),
            due: TimerSet::default(),
            max,
        }
    }

    #[cfg(any(test, fuzzing))]
    pub(super) fn len(&self) -> usize {
        self.by_conn.len()
    }

    #[cfg(any(test, fuzzing))]
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Every probe with its due time.
    #[cfg(any(test, fuzzing))]
    pub(super) fn iter(&self) -> impl Iterator<Item = (ConnId, Option<Instant>)> + '_ {
        self.by_conn.keys().map(|c| (*c, self.due.get(*c)))
    }

    /// Takes over a loser an exchange handed over (it owned `conn` until
    /// now): kept until `until`, or closed without a verdict if there is no
    /// time left, no room, or the engine is `closing`.
    pub(super) fn take(
        &mut self,
        now: Instant,
        conn: ConnId,
        addr: SocketAddr,
        until: Instant,
        closing: bool,
        out: &mut Outbox,
    ) {
        if out.owner(conn).is_none() {
            return; // already closed or never opened
        }
        out.hand_over(conn, Owner::Verdict);
        if until <= now || closing || self.by_conn.len() >= self.max {
            out.close(Owner::Verdict, conn);
            return;
        }
        self.due.set(conn, Some(until));
        self.by_conn.insert(conn, addr);
    }

    /// An event on a probe; returns what it says about the probe's address.
    pub(super) fn event(
        &mut self,
        conn: ConnId,
        event: &ConnEvent,
        out: &mut Outbox,
    ) -> Option<EndpointReport> {
        let addr = self.by_conn.get(&conn).copied()?;
        let error = match event {
            // It answered: merely slower than the winner, no verdict.
            ConnEvent::Connected
            | ConnEvent::TcpConnected
            | ConnEvent::EarlyData { .. }
            | ConnEvent::Received(_) => {
                self.close(conn, out);
                return None;
            }
            ConnEvent::ConnectFailed(e) => *e,
            // A close before the connect completed is a failed connect (as
            // in the exchange).
            ConnEvent::Closed(reason) => match reason {
                CloseReason::Eof | CloseReason::Reset => ConnectError::Reset,
                CloseReason::Error(code) => ConnectError::Other(*code),
                CloseReason::Tls(failure) => ConnectError::Tls(*failure),
            },
        };
        // Already forgotten by the outbox.
        self.remove(conn);
        EndpointReport::from_attempt(addr, AttemptResult::Failed(error))
    }

    /// Judges the probes whose time is up: unanswered, they were outpaced.
    /// Closes them and returns their verdicts, in connection order.
    pub(super) fn expire(&mut self, now: Instant, out: &mut Outbox) -> Vec<EndpointReport> {
        let due: Vec<(ConnId, SocketAddr)> = self
            .due
            .due(now)
            .into_iter()
            .filter_map(|c| self.by_conn.get(&c).map(|a| (c, *a)))
            .collect();
        due.into_iter()
            .filter_map(|(conn, addr)| {
                self.close(conn, out);
                EndpointReport::from_attempt(addr, AttemptResult::Outpaced)
            })
            .collect()
    }

    /// Closes every probe without a verdict (network change).
    pub(super) fn clear(&mut self, out: &mut Outbox) {
        let conns: Vec<ConnId> = self.by_conn.keys().copied().collect();
        for conn in conns {
            self.close(conn, out);
        }
    }

    /// Forgets every probe (shutdown closes them all).
    pub(super) fn forget_all(&mut self) {
        self.by_conn.clear();
        self.due = TimerSet::default();
    }

    /// The earliest verdict due.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.due.first()
    }

    fn remove(&mut self, conn: ConnId) {
        self.due.set(conn, None);
        self.by_conn.remove(&conn);
    }

    fn close(&mut self, conn: ConnId, out: &mut Outbox) {
        self.remove(conn);
        out.close(Owner::Verdict, conn);
    }
}
