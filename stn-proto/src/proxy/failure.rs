//! Why a connect through a proxy failed, and whose fault it was.

/// What went wrong on the way through a proxy: reaching the proxy, its
/// handshake, or its answer about the target. Carried by
/// [`ConnectError::Proxy`](crate::ConnectError::Proxy).
///
/// [`is_target_failure`](Self::is_target_failure) tells the two kinds
/// apart: the proxy worked but could not reach the endpoint behind it
/// (which counts against that endpoint, like a refused direct connect), or
/// the proxy itself failed (which counts against the proxy, never against
/// the endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProxyFailure {
    /// The proxy's host name did not resolve.
    Unresolved,
    /// The proxy refused the TCP connection (nothing listens there).
    Refused,
    /// No route to the proxy.
    Unreachable,
    /// The operating system gave up connecting to the proxy.
    ConnectTimedOut,
    /// Another OS error on the connection to the proxy, with its code (0 if
    /// unknown).
    Io(i32),
    /// The proxy reset the connection before its answer was complete.
    Reset,
    /// The proxy closed the connection before its answer was complete.
    Closed,
    /// The proxy did not finish its handshake within the handshake timeout
    /// (or never answered the connect).
    Timeout,
    /// The answer to the SOCKS5 greeting was not SOCKS5 (RFC 1928 §3: the
    /// first byte must be 5).
    BadGreeting,
    /// The SOCKS5 proxy accepts none of the offered authentication methods
    /// (method `0xFF`): it wants credentials the client has not got, or
    /// refuses the ones it offered.
    NoAcceptableMethod,
    /// The SOCKS5 proxy chose a method the client did not offer.
    UnexpectedMethod(u8),
    /// The SOCKS5 proxy rejected the username and password (RFC 1929 §2: a
    /// status other than 0).
    AuthRejected(u8),
    /// The answer to the username/password request was malformed.
    BadAuthReply,
    /// The SOCKS5 proxy answered the CONNECT request with this reply code
    /// (RFC 1928 §6; [`socks5_reply_meaning`]).
    Socks5Reply(u8),
    /// The SOCKS5 CONNECT reply was malformed (version, reserved byte or
    /// address type).
    BadSocks5Reply,
    /// The HTTP proxy answered CONNECT with this status (not 2xx).
    HttpStatus(u16),
    /// The HTTP proxy's answer is not an HTTP response head.
    BadHttp,
    /// The HTTP proxy's answer head grew past the cap without ending (an
    /// endless header).
    HeadTooLarge,
    /// The target cannot be put in a proxy request (a host name with
    /// spaces or control characters, or longer than SOCKS5's 255 bytes).
    InvalidTarget,
}

impl ProxyFailure {
    /// The first of the codes of [`ProxyFailure::code`] (negative, below the
    /// TLS failures' and every OS error code).
    pub const CODE_BASE: i32 = -0x8_0000;

    /// A stable number for this failure (for logs, metrics and hashes).
    pub const fn code(self) -> i32 {
        let offset = match self {
            ProxyFailure::Unresolved => 1,
            ProxyFailure::Refused => 2,
            ProxyFailure::Unreachable => 3,
            ProxyFailure::ConnectTimedOut => 4,
            ProxyFailure::Reset => 5,
            ProxyFailure::Closed => 6,
            ProxyFailure::Timeout => 7,
            ProxyFailure::BadGreeting => 8,
            ProxyFailure::NoAcceptableMethod => 9,
            ProxyFailure::BadAuthReply => 10,
            ProxyFailure::BadSocks5Reply => 11,
            ProxyFailure::BadHttp => 12,
            ProxyFailure::HeadTooLarge => 13,
            ProxyFailure::InvalidTarget => 14,
            ProxyFailure::UnexpectedMethod(m) => 0x100 + m as i32,
            ProxyFailure::AuthRejected(s) => 0x200 + s as i32,
            ProxyFailure::Socks5Reply(r) => 0x300 + r as i32,
            ProxyFailure::HttpStatus(s) => 0x1000 + s as i32,
            ProxyFailure::Io(_) => 0x2_0000,
        };
        Self::CODE_BASE - offset
    }

    /// True if the proxy worked but could not reach the endpoint behind it:
    /// SOCKS5 replies 3 (network unreachable), 4 (host unreachable), 5
    /// (connection refused) and 6 (TTL expired), and HTTP 500, 502, 503 and
    /// 504, which proxies answer CONNECT with when the upstream connect
    /// fails (tinyproxy: 500, Squid: 503). Such a failure is the
    /// endpoint's, as a refused direct connect would be; every other
    /// failure is the proxy's own.
    pub const fn is_target_failure(self) -> bool {
        matches!(
            self,
            ProxyFailure::Socks5Reply(3..=6) | ProxyFailure::HttpStatus(500 | 502 | 503 | 504)
        )
    }
}

/// What a SOCKS5 reply code means (RFC 1928 §6).
pub const fn socks5_reply_meaning(code: u8) -> &'static str {
    match code {
        0 => "succeeded",
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned code",
    }
}

/// The reason phrase of the HTTP statuses a proxy answers CONNECT with
/// (RFC 9110 §15), or `""`.
pub const fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

impl core::fmt::Display for ProxyFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ProxyFailure::Unresolved => f.write_str("the proxy's host name did not resolve"),
            ProxyFailure::Refused => f.write_str("the proxy refused the connection"),
            ProxyFailure::Unreachable => f.write_str("the proxy is unreachable (no route)"),
            ProxyFailure::ConnectTimedOut => f.write_str("connecting to the proxy timed out (OS)"),
            ProxyFailure::Io(code) => {
                write!(f, "the connection to the proxy failed (os error {code})")
            }
            ProxyFailure::Reset => {
                f.write_str("the proxy reset the connection during its handshake")
            }
            ProxyFailure::Closed => {
                f.write_str("the proxy closed the connection during its handshake")
            }
            ProxyFailure::Timeout => {
                f.write_str("the proxy did not complete its handshake in time")
            }
            ProxyFailure::BadGreeting => {
                f.write_str("the proxy's answer to the SOCKS5 greeting is not SOCKS5")
            }
            ProxyFailure::NoAcceptableMethod => {
                f.write_str("the SOCKS5 proxy accepts none of the offered authentication methods")
            }
            ProxyFailure::UnexpectedMethod(m) => {
                write!(
                    f,
                    "the SOCKS5 proxy chose authentication method {m}, which was not offered"
                )
            }
            ProxyFailure::AuthRejected(status) => write!(
                f,
                "the SOCKS5 proxy rejected the username and password (status {status})"
            ),
            ProxyFailure::BadAuthReply => {
                f.write_str("the SOCKS5 proxy's answer to the username and password is malformed")
            }
            ProxyFailure::Socks5Reply(code) => write!(
                f,
                "the SOCKS5 proxy answered CONNECT with reply {code}: {}",
                socks5_reply_meaning(*code)
            ),
            ProxyFailure::BadSocks5Reply => {
                f.write_str("the SOCKS5 proxy's CONNECT reply is malformed")
            }
            ProxyFailure::HttpStatus(status) => {
                write!(f, "the HTTP proxy answered CONNECT with {status}")?;
                match http_reason(*status) {
                    "" => Ok(()),
                    reason => write!(f, " {reason}"),
                }
            }
            ProxyFailure::BadHttp => f.write_str("the HTTP proxy's answer to CONNECT is not HTTP"),
            ProxyFailure::HeadTooLarge => {
                f.write_str("the HTTP proxy's answer to CONNECT has a head over the size cap")
            }
            ProxyFailure::InvalidTarget => {
                f.write_str("the target cannot be written in a proxy request")
            }
        }
    }
}

impl std::error::Error for ProxyFailure {}
