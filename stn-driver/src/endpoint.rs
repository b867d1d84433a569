//! Endpoints as an app writes them: `10.0.0.1`, `example.com`,
//! `10.0.0.1:8080`, `[2001:db8::1]:8080`, `example.com:8080`, or a
//! [`SocketAddr`].

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

/// Longest host name (RFC 1035: 253 characters in text form).
const MAX_HOST_LEN: usize = 253;
/// Longest label of a host name (RFC 1035).
const MAX_LABEL_LEN: usize = 63;
/// Why port 0 is refused: nothing listens there, and the OS would pick any.
pub(crate) const PORT_ZERO: &str = "port 0 is not a port a server listens on: give 1 to 65535";

/// Where to connect: an IP address or a host name, with or without a port.
///
/// Parse one from text with [`str::parse`]; a [`SocketAddr`] or an
/// [`IpAddr`] converts with `From`.
///
/// ```
/// use stn_driver::Endpoint;
///
/// let e: Endpoint = "example.com:8080".parse().unwrap();
/// assert_eq!(e.port(), Some(8080));
/// assert_eq!(e.host_name(), Some("example.com"));
/// let e: Endpoint = "[::1]:80".parse().unwrap();
/// assert_eq!(e.ip(), Some("::1".parse().unwrap()));
/// assert!("example.com:http".parse::<Endpoint>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    host: EndpointHost,
    port: Option<u16>,
}

/// The address part of an [`Endpoint`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum EndpointHost {
    Ip(IpAddr),
    Name(String),
}

/// Why a string is not an [`Endpoint`]; the message names the input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid endpoint {input:?}: {reason}")]
pub struct EndpointError {
    /// The text as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl Endpoint {
    /// The IP, if the endpoint is an address rather than a host name.
    pub fn ip(&self) -> Option<IpAddr> {
        match self.host {
            EndpointHost::Ip(ip) => Some(ip),
            EndpointHost::Name(_) => None,
        }
    }

    /// The host name, if the endpoint is one (resolved when the engine asks).
    pub fn host_name(&self) -> Option<&str> {
        match &self.host {
            EndpointHost::Name(name) => Some(name),
            EndpointHost::Ip(_) => None,
        }
    }

    /// The port, if the endpoint names one.
    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.port) {
            (EndpointHost::Ip(IpAddr::V6(ip)), Some(port)) => write!(f, "[{ip}]:{port}"),
            (EndpointHost::Ip(ip), Some(port)) => write!(f, "{ip}:{port}"),
            (EndpointHost::Ip(ip), None) => write!(f, "{ip}"),
            (EndpointHost::Name(name), Some(port)) => write!(f, "{name}:{port}"),
            (EndpointHost::Name(name), None) => f.write_str(name),
        }
    }
}

impl From<SocketAddr> for Endpoint {
    fn from(addr: SocketAddr) -> Self {
        Endpoint {
            host: EndpointHost::Ip(addr.ip()),
            port: Some(addr.port()),
        }
    }
}

impl From<IpAddr> for Endpoint {
    fn from(ip: IpAddr) -> Self {
        Endpoint {
            host: EndpointHost::Ip(ip),
            port: None,
        }
    }
}

/// Whether `name` is a host name a resolver can be asked for: dot-separated
/// labels of letters, digits, `-` and `_` (seen in practice), none empty or
/// longer than 63, at most 253 in all, an optional final dot.
fn valid_host_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= MAX_HOST_LEN
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= MAX_LABEL_LEN
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        // All-numeric dotted names are malformed IPv4 addresses
        // (`10.0.0.256`, `1.2.3`), not host names.
        && !name.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason| EndpointError {
            input: s.to_owned(),
            reason,
        };
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(ip.into());
        }
        if s.contains("://") {
            return Err(fail(
                "a URL is not an endpoint: give HOST or HOST:PORT, without the scheme and path",
            ));
        }
        if let Ok(addr) = s.parse::<SocketAddr>() {
            if addr.port() == 0 {
                return Err(fail(PORT_ZERO));
            }
            return Ok(addr.into());
        }
        if s.starts_with('[') {
            return Err(fail("expected [IPv6]:port"));
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((host, port)) => {
                if host.contains(':') {
                    return Err(fail(
                        "an IPv6 address with a port needs brackets: [IPv6]:port",
                    ));
                }
                let port = port
                    .parse::<u16>()
                    .map_err(|_| fail("the port must be a number from 1 to 65535"))?;
                if port == 0 {
                    return Err(fail(PORT_ZERO));
                }
                (host, Some(port))
            }
            None => (s, None),
        };
        if host.is_empty() {
            return Err(fail("no host before the port"));
        }
        if !valid_host_name(host) {
            return Err(fail(
                "not an IP address or a host name (letters, digits, '-', '_' and dots)",
            ));
        }
        Ok(Endpoint {
            host: EndpointHost::Name(host.to_owned()),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let cases: &[(&str, &str, Option<u16>)] = &[
            ("10.0.0.1", "10.0.0.1", None),
            ("10.0.0.1:80", "10.0.0.1:80", Some(80)),
            ("::1", "::1", None),
            ("[::1]:8080", "[::1]:8080", Some(8080)),
            ("localhost", "localhost", None),
            ("localhost:1", "localhost:1", Some(1)),
            (
                "a-b.example_x.com.:65535",
                "a-b.example_x.com.:65535",
                Some(65535),
            ),
        ];
        for &(input, shown, port) in cases {
            let e: Endpoint = input.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(e.to_string(), shown);
            assert_eq!(e.port(), port, "{input}");
        }
        let e: Endpoint = "localhost:1".parse().unwrap();
        assert_eq!((e.host_name(), e.ip()), (Some("localhost"), None));
    }

    #[test]
    fn rejected_forms_name_the_input() {
        for input in [
            "",
            ":80",
            "host:",
            "host:65536",
            "host:-1",
            "host:http",
            "1:2:3:4:5:6:7:8:9:80",
            "[::1]",
            "[::1]:x",
            "[::1",
            "a b",
            "a..b",
            "-a.com",
            "10.0.0.256",
            "1.2.3",
            "127.0.0.1:80:90",
            "h/ost",
            "localhost:0",
            "127.0.0.1:0",
            "[::1]:0",
            "http://127.0.0.1:18080",
            "https://example.com/mars/hello2",
            &"a".repeat(64),
            &format!("{}.com", "a.".repeat(130)),
        ] {
            let err = input.parse::<Endpoint>().unwrap_err();
            assert_eq!(err.input, input);
            assert!(err.to_string().contains(&format!("{input:?}")), "{err}");
        }
    }

    #[test]
    fn a_url_and_port_zero_get_their_own_reason() {
        let err = "http://127.0.0.1:18080".parse::<Endpoint>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid endpoint \"http://127.0.0.1:18080\": a URL is not an endpoint: give HOST or \
             HOST:PORT, without the scheme and path"
        );
        for zero in ["127.0.0.1:0", "localhost:0"] {
            let err = zero.parse::<Endpoint>().unwrap_err();
            assert_eq!(err.reason, PORT_ZERO, "{zero}");
        }
    }

    #[test]
    fn conversions() {
        let addr: SocketAddr = "192.0.2.1:9".parse().unwrap();
        assert_eq!(Endpoint::from(addr).to_string(), "192.0.2.1:9");
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(Endpoint::from(ip).ip(), Some(ip));
    }
}
