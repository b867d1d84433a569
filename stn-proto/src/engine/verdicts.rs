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

use crate::io::{CloseReason, ConnEvent, ConnId, IoAction};
use crate::net::{ConnectError, SocketAddr};
use crate::race::AttemptResult;
use crate::short_link::EndpointReport;
use crate::time::Instant;

use std::collections::BTreeMap;

use super::conns::Owner;
use super::timer_set::TimerSet;
use super::Engine;

/// One lingering loser.
#[derive(Clone, Copy, Debug)]
pub(super) struct Probe {
    pub(super) addr: SocketAddr,
    /// Its verdict is due then.
    pub(super) until: Instant,
}

/// The lingering losers, with their due times in a deadline index (the
/// engine's next timeout and the expired probes are found without a pass
/// over all of them).
#[derive(Debug, Default)]
pub(super) struct Probes {
    by_conn: BTreeMap<ConnId, Probe>,
    due: TimerSet<ConnId>,
}

impl Probes {
    pub(super) fn len(&self) -> usize {
        self.by_conn.len()
    }

    #[cfg(any(test, fuzzing))]
    pub(super) fn iter(&self) -> impl Iterator<Item = (&ConnId, &Probe)> {
        self.by_conn.iter()
    }

    fn get(&self, conn: ConnId) -> Option<Probe> {
        self.by_conn.get(&conn).copied()
    }

    fn insert(&mut self, conn: ConnId, probe: Probe) {
        self.due.set(conn, Some(probe.until));
        self.by_conn.insert(conn, probe);
    }

    fn remove(&mut self, conn: ConnId) {
        self.due.set(conn, None);
        self.by_conn.remove(&conn);
    }

    /// The probes due at `now`, in connection order.
    fn due(&self, now: Instant) -> Vec<(ConnId, SocketAddr)> {
        self.due
            .due(now)
            .into_iter()
            .filter_map(|c| self.by_conn.get(&c).map(|p| (c, p.addr)))
            .collect()
    }

    fn first(&self) -> Option<Instant> {
        self.due.first()
    }

    fn conns(&self) -> Vec<ConnId> {
        self.by_conn.keys().copied().collect()
    }

    /// Forgets every probe (their connections are closed by the caller).
    pub(super) fn clear(&mut self) {
        *self = Probes::default();
    }
}

impl Engine {
    /// Most verdict probes kept at once: one full race per short-link slot.
    pub(super) fn max_verdict_probes(&self) -> usize {
        self.config
            .max_in_flight_short
            .max(1)
            .saturating_mul(self.config.exchange.race.max_open())
    }

    /// Takes over a loser an exchange handed over (it owned `conn` until now).
    pub(super) fn verdict_take(
        &mut self,
        now: Instant,
        conn: ConnId,
        addr: SocketAddr,
        until: Instant,
    ) {
        if self.conns.owner(conn).is_none() {
            return; // already closed or never opened
        }
        self.conns.insert(conn, Owner::Verdict);
        if until <= now || self.shut_down || self.verdicts.len() >= self.max_verdict_probes() {
            // No time left to wait, or no room: closed without a verdict.
            self.emit_io(Owner::Verdict, IoAction::Close { conn });
            return;
        }
        self.verdicts.insert(conn, Probe { addr, until });
    }

    /// An event on a verdict probe.
    pub(super) fn verdict_event(&mut self, now: Instant, conn: ConnId, event: &ConnEvent) {
        let Some(probe) = self.verdicts.get(conn) else {
            return;
        };
        let error = match event {
            // It answered: merely slower than the winner, no verdict.
            ConnEvent::Connected
            | ConnEvent::TcpConnected
            | ConnEvent::EarlyData { .. }
            | ConnEvent::Received(_) => {
                self.verdict_close(conn);
                return;
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
        // Already forgotten by `conn_event`.
        self.verdicts.remove(conn);
        self.verdict_report(now, probe.addr, AttemptResult::Failed(error));
    }

    /// Judges the probes whose time is up: unanswered, they were outpaced.
    pub(super) fn verdict_expire(&mut self, now: Instant) {
        for (conn, addr) in self.verdicts.due(now) {
            self.verdict_close(conn);
            self.verdict_report(now, addr, AttemptResult::Outpaced);
        }
    }

    /// Closes every probe without a verdict (network change, shutdown).
    pub(super) fn verdict_clear(&mut self) {
        for conn in self.verdicts.conns() {
            self.verdict_close(conn);
        }
    }

    /// The earliest verdict due.
    pub(super) fn verdict_timeout(&self) -> Option<Instant> {
        self.verdicts.first()
    }

    fn verdict_close(&mut self, conn: ConnId) {
        self.verdicts.remove(conn);
        self.emit_io(Owner::Verdict, IoAction::Close { conn });
    }

    fn verdict_report(&mut self, now: Instant, addr: SocketAddr, result: AttemptResult) {
        if let Some(r) = EndpointReport::from_attempt(addr, result) {
            self.endpoint_report(now, r);
        }
    }
}
