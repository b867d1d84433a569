//! Proxies: the HTTP CONNECT and SOCKS5 handshakes as a sans-IO machine
//! ([`ProxyHandshake`]), the failures they end with ([`ProxyFailure`]),
//! and the choice between the proxy and a direct connect with the proxy's
//! own failure handling ([`ProxyRoute`]).
//!
//! The engine does not know about proxies: it races and bans the
//! endpoints behind the proxy, as without one, and the executor (stn's
//! driver) runs each connect through the proxy: TCP to the proxy, the
//! handshake, then TLS (if any) through the tunnel to the endpoint's own
//! name, and only then reports the connection up. A connect that fails on
//! the way ends with [`ConnectError::Proxy`](crate::ConnectError::Proxy):
//! when the proxy could not reach the endpoint
//! ([`ProxyFailure::is_target_failure`]) it counts against the endpoint
//! like any failed connect; when the proxy itself failed it counts against
//! nothing in the endpoint history, and [`ProxyRoute`] decides when to go
//! direct instead.

mod base64;
mod failure;
mod handshake;
mod route;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;

pub use failure::{http_reason, socks5_reply_meaning, ProxyFailure};
pub use handshake::{HandshakeStatus, ProxyHandshake, DEFAULT_MAX_HEAD};
pub use route::{Fallback, ProxyRoute, Route, RouteConfig, RouteResult};

/// The protocol a proxy speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProxyProtocol {
    /// An HTTP proxy's CONNECT tunnel (RFC 9110 §9.3.6), Mars's
    /// `kProxyHttpTunel`.
    HttpConnect,
    /// SOCKS5 (RFC 1928), Mars's `kProxySocks5`.
    Socks5,
}

impl core::fmt::Display for ProxyProtocol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ProxyProtocol::HttpConnect => "HTTP CONNECT",
            ProxyProtocol::Socks5 => "SOCKS5",
        })
    }
}

/// Where a tunnel leads: an address, or a host name the proxy resolves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProxyTarget {
    /// An IP address and port.
    Addr(SocketAddr),
    /// A host name and port, resolved by the proxy (remote DNS).
    Name {
        /// The host name.
        host: String,
        /// The port.
        port: u16,
    },
}

impl ProxyTarget {
    /// A host name target; `None` if `host` is empty, longer than 255
    /// bytes (SOCKS5's limit) or has bytes other than visible ASCII.
    pub fn name(host: impl Into<String>, port: u16) -> Option<Self> {
        let host = host.into();
        valid_host(&host).then_some(ProxyTarget::Name { host, port })
    }

    /// `host:port`, with IPv6 addresses in brackets (the CONNECT request
    /// target and `Host` header).
    pub fn authority(&self) -> String {
        match self {
            ProxyTarget::Addr(addr) => {
                SocketAddr::new(addr.ip().to_canonical(), addr.port()).to_string()
            }
            ProxyTarget::Name { host, port } => format!("{host}:{port}"),
        }
    }

    /// Why this target cannot go in a `protocol` request, if it cannot.
    fn invalid_for(&self, _protocol: ProxyProtocol) -> Option<ProxyFailure> {
        match self {
            ProxyTarget::Name { host, .. } if !valid_host(host) => {
                Some(ProxyFailure::InvalidTarget)
            }
            _ => None,
        }
    }
}

impl core::fmt::Display for ProxyTarget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.authority())
    }
}

fn valid_host(host: &str) -> bool {
    (1..=255).contains(&host.len()) && host.bytes().all(|b| b.is_ascii_graphic())
}

/// A proxy's username and password: HTTP Basic (RFC 7617) for CONNECT,
/// username/password (RFC 1929) for SOCKS5.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Credentials {
    username: String,
    password: String,
}

impl Credentials {
    /// The credentials `username` and `password`.
    ///
    /// # Errors
    ///
    /// A sentence saying what is wrong: the username is empty, either is
    /// longer than 255 bytes (RFC 1929's fields), or the username has a
    /// colon or either has a control character (RFC 7617 §2's user-id and
    /// password).
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Result<Self, String> {
        let (username, password) = (username.into(), password.into());
        if username.is_empty() {
            return Err("the proxy username is empty".into());
        }
        if username.len() > 255 || password.len() > 255 {
            return Err("the proxy username and password must each be at most 255 bytes".into());
        }
        if username.contains(':') {
            return Err("the proxy username must not contain ':' (HTTP Basic)".into());
        }
        if username
            .chars()
            .chain(password.chars())
            .any(char::is_control)
        {
            return Err(
                "the proxy username and password must not contain control characters".into(),
            );
        }
        Ok(Credentials { username, password })
    }

    /// The username.
    pub fn username(&self) -> &str {
        &self.username
    }
}

impl core::fmt::Debug for Credentials {
    /// The username only: the password never goes into a log.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}
