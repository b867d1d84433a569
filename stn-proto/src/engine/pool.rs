//! The short link's keep-alive socket pool (Mars `socket_pool.h`,
//! reference §6): a task that sends `Connection: Keep-Alive` leaves its
//! connection open after a reusable 200, and the next such task to the same
//! address sends its request on it instead of racing a new one.

use std::collections::BTreeMap;

use crate::io::{ConnEvent, ConnId};
use crate::net::SocketAddr;
use crate::short_link::KeptConn;
use crate::task::Task;
use crate::time::{Duration, Instant};

use super::conns::Owner;
use super::outbox::Outbox;

/// How the short-link socket pool works ([`Config::socket_pool`](crate::Config::socket_pool)).
///
/// Only tasks whose headers say `Connection: Keep-Alive` use it (as in
/// Mars): they leave their connection here after a 200 that allows reuse
/// (HTTP/1.1 without `Connection: close`, nothing after the response) and
/// take one from here, for the first candidate address that has one, instead
/// of racing. An idle connection is closed after the server's
/// `Keep-Alive: timeout` (or [`PoolConfig::max_idle`], whichever is
/// shorter), when its peer closes it or sends anything, and on a network
/// change; the pool holds at most [`PoolConfig::max_idle_conns`].
///
/// A reused connection can turn out dead (the server closed it just before
/// the request): if the attempt fails before any response byte, Mars turns
/// the pool off for 5 minutes ([`PoolConfig::disable_after_stale`]);
/// [`PoolConfig::free_retry_on_stale`] (stn) also redoes the attempt at once
/// on a fresh connection without using one of the task's retries, as
/// browsers and OkHttp do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Longest an idle connection is kept.
    pub max_idle: Duration,
    /// Most idle connections kept (the oldest is closed first).
    pub max_idle_conns: usize,
    /// How long the pool is off after a reused connection failed before a
    /// response (Mars `BAN_INTERVAL`: 5 min).
    pub disable_after_stale: Duration,
    /// Redo an attempt that failed on a stale pooled connection at once,
    /// without using a retry.
    pub free_retry_on_stale: bool,
    /// Whether a reused connection that times out before any response byte
    /// counts as stale. Mars: yes (any failure before a decodable
    /// response). stn: no — on a lossy or slow path a timeout says nothing
    /// about the connection, and turning the pool off makes every later
    /// call pay a fresh handshake; only a connection the peer closed or
    /// reset before answering is stale.
    pub stale_on_timeout: bool,
}

/// One idle pooled connection.
#[derive(Clone, Copy, Debug)]
struct Idle {
    addr: SocketAddr,
    since: Instant,
    until: Instant,
}

/// Whether `task` asks for keep-alive (Mars: `Connection: Keep-Alive`).
pub(super) fn wants_keep_alive(task: &Task) -> bool {
    task.headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("keep-alive")
    })
}

/// The idle keep-alive connections ([`PoolConfig`]); `None` config: no pool.
#[derive(Clone, Debug)]
pub(super) struct Pool {
    config: Option<PoolConfig>,
    idle: BTreeMap<ConnId, Idle>,
    /// The pool is off until then (after a stale reuse).
    off_until: Instant,
}

impl Pool {
    pub(super) fn new(now: Instant, config: Option<PoolConfig>) -> Self {
        Pool {
            config,
            idle: BTreeMap::new(),
            off_until: now,
        }
    }

    /// Takes an idle connection to the first of `candidates` that has one.
    pub(super) fn take(
        &mut self,
        now: Instant,
        candidates: &[SocketAddr],
    ) -> Option<(ConnId, SocketAddr)> {
        self.config?;
        if self.off_until > now {
            return None;
        }
        let conn = candidates.iter().find_map(|addr| {
            self.idle
                .iter()
                .filter(|(_, idle)| idle.addr == *addr && idle.until > now)
                .min_by_key(|(_, idle)| std::cmp::Reverse(idle.since))
                .map(|(conn, _)| *conn)
        })?;
        let idle = self.idle.remove(&conn)?;
        Some((conn, idle.addr))
    }

    /// Takes over a connection an exchange kept (or closes it when the pool
    /// is off, `closing`, or full of newer ones).
    pub(super) fn put(&mut self, now: Instant, kept: KeptConn, closing: bool, out: &mut Outbox) {
        out.hand_over(kept.conn, Owner::Pool);
        let Some(cfg) = self.config else {
            self.close(kept.conn, out);
            return;
        };
        if self.off_until > now || closing {
            self.close(kept.conn, out);
            return;
        }
        let idle = kept
            .idle_timeout
            .map_or(cfg.max_idle, |t| t.min(cfg.max_idle));
        if idle.is_zero() {
            self.close(kept.conn, out);
            return;
        }
        self.idle.insert(
            kept.conn,
            Idle {
                addr: kept.addr,
                since: now,
                until: now + idle,
            },
        );
        while self.idle.len() > cfg.max_idle_conns {
            let oldest = self
                .idle
                .iter()
                .min_by_key(|(_, idle)| idle.since)
                .map(|(c, _)| *c);
            match oldest {
                Some(c) => self.close(c, out),
                None => break,
            }
        }
    }

    /// An attempt on a connection taken from the pool failed before any
    /// response byte (`timed_out`: by a timeout). If that makes the
    /// connection stale ([`PoolConfig::stale_on_timeout`]), the pool turns
    /// off for [`PoolConfig::disable_after_stale`] and closes what it holds;
    /// returns then whether the attempt is redone at once without using a
    /// retry ([`PoolConfig::free_retry_on_stale`]).
    pub(super) fn stale_reuse(
        &mut self,
        now: Instant,
        timed_out: bool,
        out: &mut Outbox,
    ) -> Option<bool> {
        let cfg = self.config.filter(|c| c.stale_on_timeout || !timed_out)?;
        self.off_until = now + cfg.disable_after_stale;
        self.clear(out);
        Some(cfg.free_retry_on_stale)
    }

    fn close(&mut self, conn: ConnId, out: &mut Outbox) {
        self.idle.remove(&conn);
        out.close(Owner::Pool, conn);
    }

    /// Closes every pooled connection (network change).
    pub(super) fn clear(&mut self, out: &mut Outbox) {
        let conns: Vec<ConnId> = self.idle.keys().copied().collect();
        for conn in conns {
            self.close(conn, out);
        }
    }

    /// Forgets every pooled connection (shutdown closes them all).
    pub(super) fn forget_all(&mut self) {
        self.idle.clear();
    }

    /// Closes idle connections whose time is up.
    pub(super) fn expire(&mut self, now: Instant, out: &mut Outbox) {
        let due: Vec<ConnId> = self
            .idle
            .iter()
            .filter(|(_, idle)| idle.until <= now)
            .map(|(c, _)| *c)
            .collect();
        for conn in due {
            self.close(conn, out);
        }
    }

    /// Something happened on an idle pooled connection: it is of no further
    /// use (closed by the peer, or data nobody asked for).
    pub(super) fn event(&mut self, conn: ConnId, event: &ConnEvent, out: &mut Outbox) {
        match event {
            ConnEvent::Connected | ConnEvent::TcpConnected | ConnEvent::EarlyData { .. } => {}
            ConnEvent::Received(_) => self.close(conn, out),
            // Already forgotten by the outbox.
            ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_) => {
                self.idle.remove(&conn);
            }
        }
    }

    /// The earliest idle expiry.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.idle.values().map(|idle| idle.until).min()
    }
}
