//! What a client sees of a simulated TCP socket.

use bytes::Bytes;
use stn_proto::ConnectError;

use crate::ids::Fnv64;

/// A client-side socket handle, unique for the whole run (never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SocketId(pub u64);

/// Something that happened on a client socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketEvent {
    /// The connection is up: the three-way handshake completed (the
    /// SYN-ACK arrived) and, on a TLS socket, the TLS handshake too.
    Connected,
    /// TLS sockets only ([`crate::tls`]): the TCP handshake completed and
    /// the TLS handshake starts; `Connected` or `ConnectFailed` follows.
    TcpConnected,
    /// TLS sockets only, right after `TcpConnected`: the handshake resumes
    /// with a ticket that allows early data and the client enables it, so up
    /// to `max` bytes written before `Connected` go at once as early data
    /// (RFC 8446 §2.3); should the server reject them, the socket sends them
    /// again once the handshake completes.
    EarlyData {
        /// `max_early_data_size` of the ticket.
        max: u32,
    },
    /// The connection attempt failed: `Refused` (RST answered the SYN) or
    /// `TimedOut` (the OS SYN schedule gave up).
    ConnectFailed(ConnectError),
    /// In-order bytes from the peer.
    Data(Bytes),
    /// The peer closed its side (FIN, end of stream); every byte before it
    /// was delivered.
    Closed,
    /// The peer reset the connection (RST).
    Reset,
    /// The OS gave up retransmitting data (`ETIMEDOUT` on an established
    /// connection).
    TimedOut,
}

impl SocketEvent {
    /// A short name for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            SocketEvent::Connected => "connected",
            SocketEvent::TcpConnected => "tcp-connected",
            SocketEvent::EarlyData { .. } => "early-data",
            SocketEvent::ConnectFailed(_) => "connect-failed",
            SocketEvent::Data(_) => "data",
            SocketEvent::Closed => "closed",
            SocketEvent::Reset => "reset",
            SocketEvent::TimedOut => "timed-out",
        }
    }

    pub(crate) fn hash_into(&self, h: &mut Fnv64) {
        match self {
            SocketEvent::Connected => h.write_u8(1),
            SocketEvent::ConnectFailed(e) => {
                h.write_u8(2);
                let (code, os) = match e {
                    ConnectError::Refused => (1, 0),
                    ConnectError::Reset => (2, 0),
                    ConnectError::TimedOut => (3, 0),
                    ConnectError::Unreachable => (4, 0),
                    ConnectError::AttemptTimeout => (5, 0),
                    ConnectError::Other(os) => (6, *os),
                    // The code TLS failures had in the OS-error slot, so
                    // traces hash as they did before TLS had a variant.
                    ConnectError::Tls(f) => (6, f.code()),
                    ConnectError::Proxy(f) => (7, f.code()),
                };
                h.write_u8(code);
                h.write(&os.to_le_bytes());
            }
            SocketEvent::Data(b) => {
                h.write_u8(3);
                h.write_u64(b.len() as u64);
                h.write(b);
            }
            SocketEvent::Closed => h.write_u8(4),
            SocketEvent::Reset => h.write_u8(5),
            SocketEvent::TimedOut => h.write_u8(6),
            SocketEvent::TcpConnected => h.write_u8(7),
            SocketEvent::EarlyData { max } => {
                h.write_u8(8);
                h.write(&max.to_le_bytes());
            }
        }
    }
}

/// Why a socket operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SocketError {
    /// The socket does not exist, belongs to another client, or was closed
    /// by the client.
    #[error("unknown or closed socket")]
    UnknownSocket,
    /// The connection can no longer send (it failed, was reset, or `close`
    /// was already called).
    #[error("socket can no longer send")]
    NotWritable,
}
