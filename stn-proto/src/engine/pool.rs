//! The short link's keep-alive socket pool (Mars `socket_pool.h`,
//! reference §6): a task that sends `Connection: Keep-Alive` leaves its
//! connection open after a reusable 200, and the next such task to the same
//! address sends its request on it instead of racing a new one.

use crate::io::{ConnEvent, ConnId, IoAction};
use crate::net::SocketAddr;
use crate::short_link::KeptConn;
use crate::task::Task;
use crate::time::{Duration, Instant};

use super::conns::Owner;
use super::Engine;
use crate::profile::Profile;

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

impl PoolConfig {
    /// The values of profile `p`: the `pool` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(p: Profile) -> Self {
        use crate::profile::knobs::pool as k;
        PoolConfig {
            max_idle: k::max_idle(p),
            max_idle_conns: k::max_idle_conns(p),
            disable_after_stale: k::disable_after_stale(p),
            free_retry_on_stale: k::free_retry_on_stale(p),
            stale_on_timeout: k::stale_on_timeout(p),
        }
    }
}

/// One idle pooled connection.
#[derive(Clone, Copy, Debug)]
pub(super) struct Idle {
    pub(super) addr: SocketAddr,
    pub(super) since: Instant,
    pub(super) until: Instant,
}

/// Whether `task` asks for keep-alive (Mars: `Connection: Keep-Alive`).
pub(super) fn wants_keep_alive(task: &Task) -> bool {
    task.headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("keep-alive")
    })
}

impl Engine {
    /// Takes an idle connection to the first of `candidates` that has one.
    pub(super) fn pool_take(
        &mut self,
        now: Instant,
        candidates: &[SocketAddr],
    ) -> Option<(ConnId, SocketAddr)> {
        self.config.socket_pool?;
        if self.pool_off_until > now {
            return None;
        }
        let conn = candidates.iter().find_map(|addr| {
            self.pool
                .iter()
                .filter(|(_, idle)| idle.addr == *addr && idle.until > now)
                .min_by_key(|(_, idle)| std::cmp::Reverse(idle.since))
                .map(|(conn, _)| *conn)
        })?;
        let idle = self.pool.remove(&conn)?;
        Some((conn, idle.addr))
    }

    /// Puts a connection an exchange kept into the pool (or closes it when
    /// the pool is off or full of newer ones).
    pub(super) fn pool_put(&mut self, now: Instant, kept: KeptConn) {
        self.conns.insert(kept.conn, Owner::Pool);
        let Some(cfg) = self.config.socket_pool else {
            self.pool_close(kept.conn);
            return;
        };
        if self.pool_off_until > now || self.shut_down {
            self.pool_close(kept.conn);
            return;
        }
        let idle = kept
            .idle_timeout
            .map_or(cfg.max_idle, |t| t.min(cfg.max_idle));
        if idle.is_zero() {
            self.pool_close(kept.conn);
            return;
        }
        self.pool.insert(
            kept.conn,
            Idle {
                addr: kept.addr,
                since: now,
                until: now + idle,
            },
        );
        while self.pool.len() > cfg.max_idle_conns {
            let oldest = self
                .pool
                .iter()
                .min_by_key(|(_, idle)| idle.since)
                .map(|(c, _)| *c);
            match oldest {
                Some(c) => self.pool_close(c),
                None => break,
            }
        }
    }

    /// Closes a pooled connection.
    pub(super) fn pool_close(&mut self, conn: ConnId) {
        self.pool.remove(&conn);
        self.emit_io(Owner::Pool, IoAction::Close { conn });
    }

    /// Closes every pooled connection (network change, shutdown).
    pub(super) fn pool_clear(&mut self) {
        let conns: Vec<ConnId> = self.pool.keys().copied().collect();
        for conn in conns {
            self.pool_close(conn);
        }
    }

    /// Closes idle connections whose time is up.
    pub(super) fn pool_expire(&mut self, now: Instant) {
        let due: Vec<ConnId> = self
            .pool
            .iter()
            .filter(|(_, idle)| idle.until <= now)
            .map(|(c, _)| *c)
            .collect();
        for conn in due {
            self.pool_close(conn);
        }
    }

    /// Something happened on an idle pooled connection: it is of no further
    /// use (closed by the peer, or data nobody asked for).
    pub(super) fn pool_event(&mut self, conn: ConnId, event: &ConnEvent) {
        match event {
            ConnEvent::Connected | ConnEvent::TcpConnected | ConnEvent::EarlyData { .. } => {}
            ConnEvent::Received(_) => self.pool_close(conn),
            // Already forgotten by `conn_event`.
            ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_) => {
                self.pool.remove(&conn);
            }
        }
    }

    /// The earliest idle expiry.
    pub(super) fn pool_timeout(&self) -> Option<Instant> {
        self.pool.values().map(|idle| idle.until).min()
    }
}
