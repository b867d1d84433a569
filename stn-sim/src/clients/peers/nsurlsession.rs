//! NSURLSession / AFNetworking (peers.md §2, §8.2).

use std::net::SocketAddr;

use stn_proto::Duration;

use crate::clients::peers::pooled::{PeerClient, PeerConfig, PoolConfig, Stagger};
use crate::tcp::TcpStack;

/// NSURLSession on iOS (xnu TCP: SYNs at 0, 1, 2, 3, 4, 5, 7, 11, 19, 35 s).
///
/// Both variants: one idle request timer of 60 s
/// (`timeoutIntervalForRequest`) that starts with the task, covers
/// connecting and is reset by every received byte (not by the handshake:
/// a SYN-ACK carries no data; an inference); no per-attempt connect
/// timeout (xnu's own 75 s limit comes later); no read timeout of its own;
/// **no retry of a POST** (QA1941 retries only idempotent requests), so a
/// failed pooled connection fails the call (`-1005`).
///
/// Not modelled: `timeoutIntervalForResource` (7 days), `waitsForConnectivity`
/// (the path stays "satisfied" under packet loss, so it never applies here),
/// DNS and the 25 ms AAAA wait (routes are given), RFC 6724 sorting, the
/// automatic retry of idempotent requests (the benchmark only POSTs), TLS,
/// HTTP/2.
#[derive(Clone, Copy, Debug)]
pub struct NsUrlSession;

impl NsUrlSession {
    /// `timeoutIntervalForRequest` default.
    pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

    fn base(routes: Vec<SocketAddr>) -> PeerConfig {
        PeerConfig {
            name: "NSURLSession",
            routes,
            stack: TcpStack::xnu(),
            path: "/mars/hello2".into(),
            connect_timeout: None,
            stagger: Stagger::FirstSynRetransmit {
                without_history: Duration::from_secs(1),
                min: Duration::from_millis(100),
                max: Duration::from_secs(2),
            },
            read_timeout: None,
            request_timeout: Some(Self::REQUEST_TIMEOUT),
            pool: None,
            connection_close: false,
            retry_stale_pooled: false,
            retry_other_routes: false,
        }
    }

    /// As benchmarked (`[AFHTTPSessionManager manager]` per request): a new
    /// session per request, so no connection reuse; one IP literal.
    pub fn benchmarked_config(server: SocketAddr) -> PeerConfig {
        PeerConfig {
            name: "NSURLSession (session per request)",
            ..Self::base(vec![server])
        }
    }

    /// As recommended: one shared session, pool of 6 connections per host,
    /// Happy Eyeballs across `routes` — the next address starts when the
    /// previous attempt would send its first SYN retransmission (1 s without
    /// RTT history, else the xnu RTO from handshake RTTs clamped to
    /// 0.1–2 s). Idle keep-alive: Apple documents none; **assumed 300 s**,
    /// the same as OkHttp's pool, so neither side is favoured.
    pub fn recommended_config(routes: Vec<SocketAddr>) -> PeerConfig {
        PeerConfig {
            name: "NSURLSession (shared session)",
            pool: Some(PoolConfig {
                max_idle: 6,
                keep_alive: Duration::from_secs(300),
            }),
            ..Self::base(routes)
        }
    }

    /// A client with [`NsUrlSession::benchmarked_config`].
    pub fn benchmarked(server: SocketAddr) -> PeerClient {
        PeerClient::new(Self::benchmarked_config(server))
    }

    /// A client with [`NsUrlSession::recommended_config`].
    pub fn recommended(routes: Vec<SocketAddr>) -> PeerClient {
        PeerClient::new(Self::recommended_config(routes))
    }
}
