//! The I/O vocabulary between the machines and whoever executes their actions
//! (an adapter with real sockets, or the simulator): connection ids, the
//! socket operations the core asks for, and the socket events fed back.

use bytes::Bytes;

use crate::id_map::DenseId;
use crate::net::{ConnectError, SocketAddr};
use crate::tls::TlsFailure;

/// Names one TCP connection for its whole life. Ids are never reused within
/// one engine, so a late event for a closed connection can be recognised and
/// ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

impl core::fmt::Display for ConnId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "conn#{}", self.0)
    }
}

/// Hands out fresh [`ConnId`]s. One allocator per engine; machines that open
/// connections borrow it in the calls that may connect.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnIds {
    next: u64,
}

impl ConnIds {
    /// An allocator starting at `ConnId(1)`.
    pub(crate) const fn new() -> Self {
        ConnIds { next: 1 }
    }

    /// The next unused id.
    pub(crate) fn next_id(&mut self) -> ConnId {
        let id = ConnId(self.next.max(1));
        self.next = id.0.saturating_add(1);
        id
    }
}

/// A socket operation the core asks the executor to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoAction {
    /// Open a TCP connection to `addr`; answer with [`ConnEvent::Connected`]
    /// or [`ConnEvent::ConnectFailed`] unless a [`IoAction::Close`] for the
    /// same id comes first.
    Connect {
        /// The new connection's id.
        conn: ConnId,
        /// Where to connect.
        addr: SocketAddr,
    },
    /// Write `data` on the connection, in order after earlier sends.
    Send {
        /// The connection.
        conn: ConnId,
        /// Bytes to write.
        data: Bytes,
    },
    /// Close the connection (or abandon the connect in progress). No further
    /// events for this id are expected; any that arrive are ignored.
    Close {
        /// The connection.
        conn: ConnId,
    },
}

impl IoAction {
    /// The connection the action is about.
    pub fn conn(&self) -> ConnId {
        match self {
            IoAction::Connect { conn, .. }
            | IoAction::Send { conn, .. }
            | IoAction::Close { conn } => *conn,
        }
    }
}

/// What happened on a connection, as the executor saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnEvent {
    /// The connection is up: the TCP handshake completed (and the TLS
    /// handshake, if [`ConnEvent::TcpConnected`] came first).
    Connected,
    /// The TCP handshake completed and a TLS handshake now runs on the
    /// connection; [`ConnEvent::Connected`] or [`ConnEvent::ConnectFailed`]
    /// follows. Optional: it only moves the end of the connect time (the
    /// RTT sample) to the TCP connect, before the handshake's round trips.
    TcpConnected,
    /// The TCP handshake completed, a TLS 1.3 handshake that resumes a
    /// session now runs on the connection, and up to `max` bytes may be sent
    /// at once as early data (0-RTT, RFC 8446 §2.3): the resumed session's
    /// ticket allows it and the client enabled it.
    ///
    /// Early data can be replayed by an attacker (RFC 8446 §8), so the engine
    /// sends only a request whose task allows it
    /// ([`Task::early_data`](crate::Task::early_data)) and that fits in
    /// `max`, and only on a short-link connection it has just opened; for
    /// anything else it waits for [`ConnEvent::Connected`]. Either way the
    /// executor then finishes the handshake and reports `Connected` (or
    /// [`ConnEvent::ConnectFailed`]). Bytes sent before `Connected` travel as
    /// early data; should the server reject early data, the executor sends
    /// them again once the handshake completes (as tokio-rustls does), so the
    /// engine never resends them itself. Optional, like `TcpConnected`,
    /// which it follows.
    EarlyData {
        /// How many bytes of early data the session allows
        /// (`max_early_data_size` of its ticket, less any already sent).
        max: u32,
    },
    /// The connect attempt failed.
    ConnectFailed(ConnectError),
    /// Bytes arrived (any chunking).
    Received(Bytes),
    /// The connection ended.
    Closed(CloseReason),
}

/// How an established connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CloseReason {
    /// The peer closed its side cleanly (EOF).
    Eof,
    /// The connection was reset (RST).
    Reset,
    /// A read or write failed with this OS error code (0 if unknown).
    Error(i32),
    /// TLS ended the connection (a fatal alert, a corrupt record): the
    /// typed cause.
    Tls(TlsFailure),
}

impl core::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CloseReason::Eof => f.write_str("closed by peer"),
            CloseReason::Reset => f.write_str("connection reset"),
            CloseReason::Error(code) => write!(f, "socket error (os error {code})"),
            CloseReason::Tls(tls) => write!(f, "TLS failed: {tls}"),
        }
    }
}

impl CloseReason {
    /// An open connection ended by a TLS failure.
    pub const fn tls(failure: TlsFailure) -> CloseReason {
        CloseReason::Tls(failure)
    }

    /// The TLS failure this is, if it is one ([`CloseReason::tls`]).
    pub const fn tls_failure(&self) -> Option<TlsFailure> {
        match self {
            CloseReason::Tls(failure) => Some(*failure),
            _ => None,
        }
    }
}

/// Connection ids are handed out in order: a dense key for the engine's tables.
impl DenseId for ConnId {
    fn to_raw(self) -> u64 {
        self.0
    }
    fn from_raw(raw: u64) -> Self {
        ConnId(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_start_at_one() {
        let mut ids = ConnIds::new();
        let a = ids.next_id();
        let b = ids.next_id();
        assert_eq!(a, ConnId(1));
        assert_eq!(b, ConnId(2));
        let mut d = ConnIds::default();
        assert_eq!(d.next_id(), ConnId(1));
    }
}
