//! Connecting through an HTTP CONNECT or SOCKS5 proxy ([`Builder::proxy`](crate::Builder::proxy)).
//!
//! The engine races and bans the endpoints behind the proxy as it would
//! without one; each connect it asks for goes through the proxy (or
//! direct, while [`ProxyRoute`](stn_proto::proxy::ProxyRoute) bypasses a
//! failing proxy): TCP to the proxy, the handshake
//! ([`ProxyHandshake`](stn_proto::proxy::ProxyHandshake), bounded by its
//! timeout), then TLS, if the client has it, through the tunnel to the
//! endpoint's own name. A failure on the way ends the connect with
//! [`ConnectError::Proxy`](stn_proto::ConnectError::Proxy), and the task's
//! error carries a [`ProxyError`] naming the proxy and its answer
//! ([`Error::proxy_error`](crate::Error::proxy_error)).
//!
//! Remote DNS (the default): host names are resolved by the proxy. The
//! engine still needs one address per host to race and ban, so the driver
//! answers its lookups with a placeholder from the discard-only prefix
//! `100::/64` (RFC 6666) that stands for the name, and asks the proxy for
//! the name when the engine connects to it (SOCKS5 address type 3, or the
//! name in `CONNECT host:port`). Reports and errors name the placeholder
//! as the endpoint; [`ProxyError`] names the host. With
//! [`Proxy::local_dns`], names are resolved locally and the proxy is asked
//! for the IP (Mars's behaviour).

pub(crate) mod connect;
mod names;
mod state;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use stn_proto::proxy::{Credentials, Fallback, ProxyFailure, ProxyProtocol, ProxyTarget};

use crate::endpoint::Endpoint;

pub(crate) use state::ProxyState;

/// Default [`Proxy::handshake_timeout`]: 5 s from the TCP connect to the
/// proxy until its tunnel is open.
pub const DEFAULT_PROXY_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A proxy for every connection of a client, short and long link.
///
/// ```
/// use stn_driver::Proxy;
///
/// let http = Proxy::http("127.0.0.1:3128").credentials("alice", "s3cret");
/// let socks = Proxy::socks5("proxy.corp.example:1080").proxy_only();
/// let parsed = Proxy::parse("socks5h://alice:s3cret@127.0.0.1:1080").unwrap();
/// assert_eq!(parsed.to_string(), "socks5://127.0.0.1:1080 (remote DNS)");
/// # let _ = (http, socks);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    protocol: ProxyProtocol,
    address: String,
    credentials: Option<(String, String)>,
    remote_dns: bool,
    fallback: Fallback,
    handshake_timeout: Duration,
}

impl Proxy {
    fn new(protocol: ProxyProtocol, address: impl Into<String>) -> Self {
        Proxy {
            protocol,
            address: address.into(),
            credentials: None,
            remote_dns: true,
            fallback: Fallback::Direct,
            handshake_timeout: DEFAULT_PROXY_HANDSHAKE_TIMEOUT,
        }
    }

    /// An HTTP proxy's CONNECT tunnel at `address` (`IP:port`,
    /// `[IPv6]:port` or `host:port`; a host name is resolved at each
    /// connect, as Mars does).
    pub fn http(address: impl Into<String>) -> Self {
        Self::new(ProxyProtocol::HttpConnect, address)
    }

    /// A SOCKS5 proxy at `address` (as for [`http`](Self::http)).
    pub fn socks5(address: impl Into<String>) -> Self {
        Self::new(ProxyProtocol::Socks5, address)
    }

    /// A proxy written as a URL: `http://`, `socks5://` (names resolved
    /// locally, as curl does) or `socks5h://` (names resolved by the proxy),
    /// with optional `user:password@` (no percent-decoding) and a port.
    ///
    /// # Errors
    ///
    /// [`ProxyConfigError`] naming the text and what is wrong with it.
    pub fn parse(url: &str) -> Result<Self, ProxyConfigError> {
        let fail = |reason: &str| ProxyConfigError::new(url, reason);
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| fail("expected http://, socks5:// or socks5h://"))?;
        let mut proxy = match scheme {
            "http" => Proxy::http(""),
            "socks5" => Proxy::socks5("").local_dns(),
            "socks5h" => Proxy::socks5(""),
            _ => return Err(fail("the scheme must be http, socks5 or socks5h")),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let address = match rest.rsplit_once('@') {
            Some((userinfo, address)) => {
                let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                proxy = proxy.credentials(user, pass);
                address
            }
            None => rest,
        };
        proxy.address = address.to_owned();
        proxy.checked().map(|_| proxy)
    }

    /// The username and password to give the proxy: HTTP Basic
    /// (`Proxy-Authorization`) or SOCKS5 username/password (RFC 1929).
    #[must_use]
    pub fn credentials(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some((username.into(), password.into()));
        self
    }

    /// Resolve host names locally and ask the proxy for the IP (Mars's
    /// behaviour), instead of letting the proxy resolve them.
    #[must_use]
    pub fn local_dns(mut self) -> Self {
        self.remote_dns = false;
        self
    }

    /// Never connect directly, even while the proxy fails (by default a
    /// failing proxy is bypassed for a while, see
    /// [`ProxyRoute`](stn_proto::proxy::ProxyRoute)).
    #[must_use]
    pub fn proxy_only(mut self) -> Self {
        self.fallback = Fallback::Never;
        self
    }

    /// Longest the proxy may take from the TCP connect to an open tunnel
    /// (default [`DEFAULT_PROXY_HANDSHAKE_TIMEOUT`]); the race's attempt
    /// deadline may end a connect first.
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The proxy's settings, checked.
    pub(crate) fn checked(&self) -> Result<Settings, ProxyConfigError> {
        let fail = |reason: &str| ProxyConfigError::new(&self.address, reason);
        let endpoint: Endpoint = self
            .address
            .parse()
            .map_err(|e: crate::EndpointError| fail(e.reason))?;
        let port = endpoint
            .port()
            .filter(|p| *p != 0)
            .ok_or_else(|| fail("the proxy address needs a port"))?;
        let host = match (endpoint.ip(), endpoint.host_name()) {
            (Some(ip), _) => ProxyHost::Ip(SocketAddr::new(ip, port)),
            (None, Some(name)) => ProxyHost::Name(name.to_owned(), port),
            (None, None) => return Err(fail("no host")),
        };
        let credentials = match &self.credentials {
            Some((user, pass)) => Some(Credentials::new(user, pass).map_err(|e| fail(&e))?),
            None => None,
        };
        Ok(Settings {
            protocol: self.protocol,
            host,
            credentials,
            remote_dns: self.remote_dns,
            fallback: self.fallback,
            handshake_timeout: self.handshake_timeout,
            label: self.to_string(),
        })
    }
}

impl fmt::Display for Proxy {
    /// The proxy as a URL, without credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.protocol {
            ProxyProtocol::HttpConnect => "http",
            ProxyProtocol::Socks5 => "socks5",
        };
        write!(f, "{scheme}://{}", self.address)?;
        if self.remote_dns && self.protocol == ProxyProtocol::Socks5 {
            f.write_str(" (remote DNS)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Proxy {
    /// Never the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("url", &self.to_string())
            .field("username", &self.credentials.as_ref().map(|c| &c.0))
            .field("fallback", &self.fallback)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// Why a [`Proxy`] cannot be used; the message names the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid proxy {input:?}: {reason}")]
pub struct ProxyConfigError {
    /// The address or URL as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ProxyConfigError {
    fn new(input: &str, reason: &str) -> Self {
        ProxyConfigError {
            input: input.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

/// Where the proxy is.
#[derive(Clone, Debug)]
pub(crate) enum ProxyHost {
    Ip(SocketAddr),
    Name(String, u16),
}

/// A checked [`Proxy`].
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) protocol: ProxyProtocol,
    pub(crate) host: ProxyHost,
    pub(crate) credentials: Option<Credentials>,
    pub(crate) remote_dns: bool,
    pub(crate) fallback: Fallback,
    pub(crate) handshake_timeout: Duration,
    /// The proxy as a URL without credentials, for messages.
    pub(crate) label: String,
}

/// A connect through a proxy failed: which proxy, what it was asked, and
/// what it answered. The `io::Error` a task's error carries for such a
/// failure ([`Error::io_error`](crate::Error::io_error)) holds one
/// ([`Error::proxy_error`](crate::Error::proxy_error) finds it).
///
/// ```text
/// proxy http://127.0.0.1:3128, asked for 10.0.0.7:8080: the HTTP proxy answered CONNECT with 407 Proxy Authentication Required ("HTTP/1.0 407 Proxy Authentication Required")
/// ```
#[derive(Debug)]
pub struct ProxyError {
    /// The proxy, as a URL without credentials.
    pub proxy: String,
    /// The tunnel asked for (`host:port`, or the IP and port).
    pub target: String,
    /// What went wrong.
    pub failure: ProxyFailure,
    /// The HTTP proxy's status line, when it answered one.
    pub answer: Option<String>,
    /// The OS error of the connection to the proxy, when there was one.
    pub io: Option<io::Error>,
}

impl ProxyError {
    /// The error as an `io::Error` of a fitting kind, for the driver's
    /// connect path.
    pub(crate) fn into_io(self) -> io::Error {
        let kind = match self.failure {
            ProxyFailure::Refused => io::ErrorKind::ConnectionRefused,
            ProxyFailure::Reset => io::ErrorKind::ConnectionReset,
            ProxyFailure::Timeout | ProxyFailure::ConnectTimedOut => io::ErrorKind::TimedOut,
            ProxyFailure::Closed => io::ErrorKind::UnexpectedEof,
            ProxyFailure::Unreachable => io::ErrorKind::HostUnreachable,
            ProxyFailure::Unresolved => io::ErrorKind::NotFound,
            ProxyFailure::AuthRejected(_) | ProxyFailure::HttpStatus(401 | 407) => {
                io::ErrorKind::PermissionDenied
            }
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }

    /// The proxy failure inside `e`, if `e` is one.
    pub(crate) fn failure_of(e: &io::Error) -> Option<ProxyFailure> {
        e.get_ref()?.downcast_ref::<ProxyError>().map(|p| p.failure)
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "proxy {}, asked for {}: {}",
            self.proxy, self.target, self.failure
        )?;
        if let Some(answer) = &self.answer {
            write!(f, " ({answer:?})")?;
        }
        if let Some(io) = &self.io {
            write!(f, ": {io}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProxyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

/// `target` as the proxy request names it.
pub(crate) fn target_text(target: &ProxyTarget) -> String {
    target.authority()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_urls_are_checked() {
        assert!(Proxy::http("127.0.0.1:3128").checked().is_ok());
        assert!(Proxy::socks5("[::1]:1080").checked().is_ok());
        assert!(Proxy::socks5("proxy.example:1080").checked().is_ok());
        for bad in ["127.0.0.1", "proxy.example", "a b:1", "127.0.0.1:0", ""] {
            let e = Proxy::http(bad).checked().unwrap_err();
            assert_eq!(e.input, bad);
        }
        let e = Proxy::http("127.0.0.1:1")
            .credentials("a:b", "c")
            .checked()
            .unwrap_err();
        assert!(e.reason.contains("':'"), "{e}");
        for bad in ["ftp://x:1", "127.0.0.1:1", "socks5://", "http://u:p@host"] {
            assert!(Proxy::parse(bad).is_err(), "{bad}");
        }
        let p = Proxy::parse("http://alice:pw@127.0.0.1:3128/").unwrap();
        assert_eq!(p.to_string(), "http://127.0.0.1:3128");
        assert!(!format!("{p:?}").contains("pw"));
        let s = p.checked().unwrap();
        assert_eq!(
            s.credentials.as_ref().map(Credentials::username),
            Some("alice")
        );
        assert!(!Proxy::parse("socks5://h:1").unwrap().remote_dns);
        assert!(Proxy::parse("socks5h://h:1").unwrap().remote_dns);
    }

    #[test]
    fn errors_name_the_proxy_the_target_and_the_answer() {
        let e = ProxyError {
            proxy: "http://127.0.0.1:3128".into(),
            target: "10.0.0.7:8080".into(),
            failure: ProxyFailure::HttpStatus(407),
            answer: Some("HTTP/1.0 407 Proxy Authentication Required".into()),
            io: None,
        };
        assert_eq!(
            e.to_string(),
            "proxy http://127.0.0.1:3128, asked for 10.0.0.7:8080: the HTTP proxy answered \
             CONNECT with 407 Proxy Authentication Required (\"HTTP/1.0 407 Proxy \
             Authentication Required\")"
        );
        let io = e.into_io();
        assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(
            ProxyError::failure_of(&io),
            Some(ProxyFailure::HttpStatus(407))
        );
        let refused = ProxyError {
            proxy: "socks5://127.0.0.1:1".into(),
            target: "example.com:80".into(),
            failure: ProxyFailure::Refused,
            answer: None,
            io: Some(io::ErrorKind::ConnectionRefused.into()),
        };
        assert!(std::error::Error::source(&refused).is_some());
        assert_eq!(refused.into_io().kind(), io::ErrorKind::ConnectionRefused);
    }
}
