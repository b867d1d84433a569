//! Network vocabulary shared by the machines: endpoints, network kinds and the
//! ways a connection attempt can fail.

pub(crate) use std::net::{IpAddr, SocketAddr};

use crate::tls::TlsFailure;

/// What kind of network the device is on. Mars's timeouts distinguish only
/// "mobile" from everything else ("W" = Wi-Fi, other or none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NetworkKind {
    /// Wi-Fi or wired.
    #[default]
    Wifi,
    /// A cellular network (2G/3G/4G/5G): slower minimum rates, longer timeouts.
    Mobile,
    /// Some other network (VPN, unknown).
    Other,
    /// No network at all.
    None,
}

impl NetworkKind {
    /// Mars's "M" column applies; every other kind uses the "W" column.
    pub const fn is_mobile(self) -> bool {
        matches!(self, NetworkKind::Mobile)
    }
}

/// Why a TCP connection attempt failed, as the adapter (or simulator) saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConnectError {
    /// The peer answered with RST (`ECONNREFUSED`).
    Refused,
    /// The connection was reset during the handshake (`ECONNRESET`).
    Reset,
    /// The operating system gave up retransmitting SYNs (`ETIMEDOUT`).
    TimedOut,
    /// No route to the host or network (`EHOSTUNREACH`, `ENETUNREACH`).
    Unreachable,
    /// The attempt was abandoned by stn's own per-attempt deadline.
    AttemptTimeout,
    /// TCP connected but the TLS handshake failed: the typed cause.
    Tls(TlsFailure),
    /// The connect went through a proxy and failed on the way: the proxy
    /// was not reached, its handshake failed, or it could not reach the
    /// endpoint ([`ProxyFailure::is_target_failure`](crate::proxy::ProxyFailure::is_target_failure)).
    Proxy(crate::proxy::ProxyFailure),
    /// Any other OS error, with its raw code where known (0 if unknown).
    Other(i32),
}

impl core::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConnectError::Refused => f.write_str("connection refused"),
            ConnectError::Reset => f.write_str("connection reset during connect"),
            ConnectError::TimedOut => f.write_str("connect timed out (OS)"),
            ConnectError::Unreachable => f.write_str("host or network unreachable"),
            ConnectError::AttemptTimeout => f.write_str("connect attempt deadline passed"),
            ConnectError::Tls(tls) => write!(f, "TLS handshake failed: {tls}"),
            ConnectError::Proxy(failure) => write!(f, "through the proxy: {failure}"),
            ConnectError::Other(code) => write!(f, "connect failed (os error {code})"),
        }
    }
}

impl ConnectError {
    /// A connect attempt whose TCP connect succeeded but whose TLS handshake
    /// failed.
    pub const fn tls(failure: TlsFailure) -> ConnectError {
        ConnectError::Tls(failure)
    }

    /// The TLS failure this is, if it is one ([`ConnectError::tls`]).
    pub const fn tls_failure(&self) -> Option<TlsFailure> {
        match self {
            ConnectError::Tls(failure) => Some(*failure),
            _ => None,
        }
    }

    /// Whether the peer's own answer decided this failure, so that the same
    /// connect made again at once meets it again: a refusal (the host is up
    /// and nothing listens on the port) or a permanent TLS failure
    /// ([`TlsFailure::is_permanent`]). A timeout, a reset or an unreachable
    /// network may be the network's and may heal.
    pub const fn is_deterministic(&self) -> bool {
        match self {
            ConnectError::Refused => true,
            ConnectError::Tls(failure) => failure.is_permanent(),
            _ => false,
        }
    }

    /// The proxy failure this is, if it is one.
    pub const fn proxy_failure(&self) -> Option<crate::proxy::ProxyFailure> {
        match self {
            ConnectError::Proxy(failure) => Some(*failure),
            _ => None,
        }
    }

    /// Whether this failure says something about the endpoint: everything
    /// except a proxy that failed itself (a proxy that could not reach the
    /// endpoint does say something).
    pub const fn blames_endpoint(&self) -> bool {
        match self {
            ConnectError::Proxy(failure) => failure.is_target_failure(),
            _ => true,
        }
    }
}
