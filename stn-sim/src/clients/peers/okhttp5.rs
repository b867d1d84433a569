//! OkHttp 5 as its documentation recommends using it (peers.md §1, §8.1).

use std::net::SocketAddr;

use stn_proto::Duration;

use crate::clients::peers::pooled::{PeerClient, PeerConfig, PoolConfig, Stagger};
use crate::clients::peers::Kernel;

/// OkHttp 5.x with one shared `OkHttpClient`: a connection pool (5 idle,
/// 5 min keep-alive), fast fallback (a new route every 250 ms while earlier
/// attempts are still connecting, each with its own 10 s connect timeout;
/// the first TCP success wins), 10 s idle read timeout, and
/// `retryOnConnectionFailure` (peers.md §1.2): a stale pooled connection is
/// retried once on a new connection, a fresh connection's non-timeout
/// exchange failure moves on to routes not yet failed, a read timeout after
/// the request went out is never retried.
///
/// Modelled on [`PeerClient`]. Not modelled: the 10 s write timeout (no
/// send-buffer progress in the seam), DNS (routes are given), IPv6/IPv4
/// interleaving (routes are tried in the given order), the route database
/// (it only reorders routes whose first exchange failed, which the
/// benchmark's one-server setups never show), TLS, HTTP/2, the pooled
/// connection health check, the Dispatcher limits (calls are sequential).
#[derive(Clone, Copy, Debug)]
pub struct OkHttp5;

impl OkHttp5 {
    /// The fast-fallback stagger (`connectDelayNanos`).
    pub const FAST_FALLBACK_STAGGER: Duration = Duration::from_millis(250);

    /// The recommended configuration for `routes` (the addresses a host
    /// name resolves to) on `kernel`.
    pub fn config(routes: Vec<SocketAddr>, kernel: Kernel) -> PeerConfig {
        PeerConfig {
            name: "OkHttp 5 (shared client)",
            routes,
            stack: kernel.stack(),
            path: "/mars/hello2".into(),
            connect_timeout: Some(Duration::from_secs(10)),
            stagger: Stagger::Fixed(Self::FAST_FALLBACK_STAGGER),
            read_timeout: Some(Duration::from_secs(10)),
            request_timeout: None,
            pool: Some(PoolConfig {
                max_idle: 5,
                keep_alive: Duration::from_secs(300),
            }),
            connection_close: false,
            retry_stale_pooled: true,
            retry_other_routes: true,
        }
    }

    /// A client with [`OkHttp5::config`].
    pub fn recommended(routes: Vec<SocketAddr>, kernel: Kernel) -> PeerClient {
        PeerClient::new(Self::config(routes, kernel))
    }
}
