//! TLS 1.3 over the simulated TCP: the handshake's round trips and bytes,
//! session resumption with tickets kept per server name, and the record
//! layer's overhead on application data (`docs/sim-tls.md` gives every
//! modelling choice and its source).
//!
//! No cryptography runs: the records carry a one-byte tag saying which
//! message they are and filler of the real message's size. What is
//! modelled is what costs time on a lossy path:
//! - a **full handshake** (RFC 8446 §2, figure 1): after the TCP handshake
//!   the client sends its ClientHello; the server answers with one flight
//!   of [`SERVER_FLIGHT_FULL_LEN`] bytes (ServerHello … certificate chain …
//!   Finished), several segments that meet loss, bandwidth and the
//!   simulated TCP's own retransmission like any data; the client then
//!   sends its Finished, ahead of its first request: one more round trip;
//! - a **resumed handshake** (RFC 8446 §2.2, figure 3): the ClientHello
//!   carries a ticket, the server's flight has no certificate
//!   ([`SERVER_FLIGHT_RESUMED_LEN`], one segment): still one round trip;
//! - **tickets**: after the client's Finished the server sends
//!   [`TICKETS_PER_HANDSHAKE`] NewSessionTicket messages (RFC 8446 §4.6.1);
//!   the client keeps them per server name (at most
//!   [`MAX_TICKETS_PER_SERVER`]) and spends one per resumption (single
//!   use, RFC 8446 §C.4), so a ticket lost with its connection is not there
//!   for the next one;
//! - **0-RTT (early data, RFC 8446 §2.3)**, where a server enables it
//!   ([`TlsServer::with_early_data`]; off by default): its tickets allow
//!   [`MAX_EARLY_DATA`] bytes, and a client that enables early data
//!   ([`TlsClientConfig::early_data`]) and resumes with such a ticket may
//!   send application data right after its ClientHello (the socket reports
//!   [`crate::socket::SocketEvent::EarlyData`] after `TcpConnected`). The
//!   server accepts it only for a ticket it issued and still holds (single
//!   use, same server name) and then answers at once, after its own flight
//!   (half-RTT data); otherwise it skips the early records and the client
//!   sends them again after the handshake (as tokio-rustls does).
//!
//! The client's side lives in the network's client sockets
//! ([`crate::Simulation::set_client_tls`] turns it on per client): the
//! socket reports [`crate::socket::SocketEvent::TcpConnected`] when TCP is
//! up and [`crate::socket::SocketEvent::Connected`] when the handshake is
//! done; a handshake that outlives [`TlsClientConfig::handshake_timeout`]
//! fails the connect with [`stn_proto::TlsFailure::HandshakeTimeout`].
//! The server's side is [`TlsServer`], a wrapper around any
//! [`crate::host::ServerApp`].

mod client;
mod record;
mod server;
#[cfg(test)]
mod tests;

pub(crate) use client::{SessionOutput, TicketStore, TlsSession};
pub use server::TlsServer;

use stn_proto::Duration;

/// ClientHello bytes (a record): one X25519 key share, SNI, ALPN, the
/// usual extensions, padded to 512 bytes as BoringSSL and browsers do.
pub const CLIENT_HELLO_LEN: usize = 512;
/// Extra ClientHello bytes when it offers a ticket (the `pre_shared_key`
/// extension: the ticket, its age and a 32-byte binder).
pub const CLIENT_HELLO_PSK_EXTRA: usize = 230;
/// The server's first flight of a full handshake: ServerHello (~128 B),
/// ChangeCipherSpec (6 B), EncryptedExtensions, a two-certificate RSA-2048
/// chain (leaf + intermediate, ~3.5 KB), CertificateVerify (~264 B),
/// Finished, with the records' headers and tags: four segments of 1460.
pub const SERVER_FLIGHT_FULL_LEN: usize = 4_200;
/// The server's first flight of a resumed handshake: ServerHello with
/// `pre_shared_key`, ChangeCipherSpec, EncryptedExtensions, Finished.
pub const SERVER_FLIGHT_RESUMED_LEN: usize = 250;
/// The client's ChangeCipherSpec and Finished.
pub const CLIENT_FINISHED_LEN: usize = 64;
/// One NewSessionTicket record.
pub const TICKET_LEN: usize = 250;
/// Tickets a server sends after each handshake (rustls' and OpenSSL's
/// default: 2).
pub const TICKETS_PER_HANDSHAKE: usize = 2;
/// Tickets a client keeps per server name (rustls'
/// `ClientSessionMemoryCache`: 8).
pub const MAX_TICKETS_PER_SERVER: u32 = 8;
/// Bytes a TLS 1.3 record adds to application data: 5 header bytes, the
/// inner content type and a 16-byte AEAD tag (RFC 8446 §5.2).
pub const RECORD_OVERHEAD: usize = 22;
/// Largest plaintext per record (RFC 8446 §5.1: 2^14).
pub const MAX_PLAINTEXT: usize = 16_384;

/// `max_early_data_size` of the tickets of a server that enables early
/// data: BoringSSL's `kMaxEarlyDataAccepted` (14,336 plaintext bytes; rustls
/// has no default, its BoGo shim uses the same value to match BoringSSL).
pub const MAX_EARLY_DATA: u32 = 14_336;
/// Extra ClientHello bytes when it offers early data (the empty
/// `early_data` extension: type and length).
pub const CLIENT_HELLO_EARLY_EXTRA: usize = 4;
/// Extra bytes in the server's resumed flight when it accepts early data
/// (the empty `early_data` extension in EncryptedExtensions).
pub const SERVER_FLIGHT_EARLY_EXTRA: usize = 4;
/// The client's EndOfEarlyData (a 4-byte handshake message in a record
/// under the early keys), sent before its Finished when the server
/// accepted early data (RFC 8446 §4.5).
pub const END_OF_EARLY_DATA_LEN: usize = 26;
/// Sessions a server with early data on keeps (rustls'
/// `ServerSessionMemoryCache` of its default `ServerConfig`: 256); the
/// oldest is forgotten first.
pub const SERVER_SESSION_CACHE: usize = 256;

/// The handshake timeout of stn's driver (`stn_driver::tls`'s
/// `DEFAULT_HANDSHAKE_TIMEOUT`): 5 s from the TCP connect.
pub const STN_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How a client does TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsClientConfig {
    /// The server name (SNI); tickets are kept per name.
    pub server_name: String,
    /// The handshake must complete this long after the TCP connect or the
    /// connect fails with `HandshakeTimeout`; `None`: the client's own
    /// timers bound it (the peers' read or request timeouts).
    pub handshake_timeout: Option<Duration>,
    /// Offer a kept ticket when there is one (TLS 1.3 resumption).
    pub resumption: bool,
    /// Send early data when the resumed ticket allows it (rustls'
    /// `ClientConfig::enable_early_data`); what is sent early is the
    /// client's choice (the socket offers, the client writes).
    pub early_data: bool,
}

impl TlsClientConfig {
    /// stn's driver (and the Mars profiles run through it): resumption on,
    /// a 5 s handshake timeout, early data enabled (the engine decides what
    /// goes early: only stn's profile, only tasks that allow it).
    pub fn stn(server_name: &str) -> Self {
        TlsClientConfig {
            server_name: server_name.to_owned(),
            handshake_timeout: Some(STN_HANDSHAKE_TIMEOUT),
            resumption: true,
            early_data: true,
        }
    }

    /// A peer library (OkHttp, NSURLSession): resumption on; the
    /// handshake is bounded by the peer model's own timers; no early data
    /// (OkHttp has no 0-RTT API, and `docs/peers.md` records none for
    /// either).
    pub fn peer(server_name: &str) -> Self {
        TlsClientConfig {
            server_name: server_name.to_owned(),
            handshake_timeout: None,
            resumption: true,
            early_data: false,
        }
    }
}
