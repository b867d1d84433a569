//! The proxy handshake as a sans-IO machine: the bytes to write, the bytes
//! read, and whether the tunnel is open.

use std::net::IpAddr;

use bytes::{BufMut, Bytes, BytesMut};

use super::{base64, Credentials, ProxyFailure, ProxyProtocol, ProxyTarget};

/// Default cap on an HTTP proxy's answer head, interim (1xx) heads
/// included: 8 KiB, far above a CONNECT answer (tinyproxy's is about 40
/// bytes) and far below what a hostile proxy could send.
pub const DEFAULT_MAX_HEAD: usize = 8 * 1024;

/// Longest HTTP status line kept for error messages.
const MAX_STATUS_LINE: usize = 120;

/// Where a handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeStatus {
    /// Waiting for the proxy (send what [`ProxyHandshake::poll_transmit`]
    /// gives, feed what arrives).
    InProgress,
    /// The tunnel is open: bytes from now on are the target's.
    Open,
    /// The handshake failed; close the connection.
    Failed(ProxyFailure),
}

/// What the machine waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// HTTP: the answer head to CONNECT.
    HttpHead,
    /// SOCKS5: the method selection (RFC 1928 §3).
    SocksMethod,
    /// SOCKS5: the username/password status (RFC 1929 §2).
    SocksAuth,
    /// SOCKS5: the CONNECT reply (RFC 1928 §6).
    SocksReply,
    Open,
    Failed(ProxyFailure),
}

/// One connection's handshake with an HTTP CONNECT (RFC 9110 §9.3.6) or
/// SOCKS5 (RFC 1928, with RFC 1929 username/password) proxy.
///
/// The caller connects to the proxy, then loops: write what
/// [`poll_transmit`](Self::poll_transmit) gives, read, and feed the bytes
/// to [`handle_input`](Self::handle_input), which says how many it took;
/// once [`status`](Self::status) is [`HandshakeStatus::Open`], the bytes it
/// did not take (and everything after) belong to the tunnel. The machine
/// holds at most the reply it is waiting for: an HTTP head up to its cap
/// (8 KiB by default, interim heads included), a SOCKS5 reply of at most
/// 262 bytes. It never panics on any input. Time is the caller's: it bounds
/// the whole exchange with a timeout of its own.
///
/// The exchanges, one message at a time (no pipelining: every proxy
/// understands a handshake that waits for each answer):
///
/// - HTTP: `CONNECT host:port HTTP/1.1` with `Host` and, with credentials,
///   `Proxy-Authorization: Basic` (RFC 7617); any 2xx opens the tunnel,
///   1xx heads are skipped, anything else fails with its status.
/// - SOCKS5: a greeting offering one method (username/password with
///   credentials, none without, as Mars does), the RFC 1929 sub-negotiation
///   when chosen, then CONNECT with the target's address type: IPv4, IPv6,
///   or a domain name, which the proxy resolves (remote DNS).
///
/// ```
/// use stn_proto::proxy::{HandshakeStatus, ProxyHandshake, ProxyProtocol, ProxyTarget};
///
/// let target = ProxyTarget::name("example.com", 443).unwrap();
/// let mut hs = ProxyHandshake::new(ProxyProtocol::HttpConnect, target, None);
/// let request = hs.poll_transmit().unwrap();
/// assert!(request.starts_with(b"CONNECT example.com:443 HTTP/1.1\r\n"));
/// let answer = b"HTTP/1.1 200 Connection established\r\n\r\n\x16\x03";
/// let used = hs.handle_input(answer);
/// assert_eq!(hs.status(), HandshakeStatus::Open);
/// assert_eq!(&answer[used..], b"\x16\x03"); // the tunnel's first bytes
/// ```
#[derive(Clone, Debug)]
pub struct ProxyHandshake {
    state: State,
    target: ProxyTarget,
    credentials: Option<Credentials>,
    pending: Option<Bytes>,
    buf: Vec<u8>,
    max_head: usize,
    /// Bytes of HTTP answer heads taken so far (interim ones included).
    head_bytes: usize,
    status_line: Option<String>,
}

impl ProxyHandshake {
    /// A handshake that opens a tunnel to `target` through a proxy speaking
    /// `protocol`, with `credentials` if the proxy wants them. Its first
    /// message is ready in [`poll_transmit`](Self::poll_transmit).
    pub fn new(
        protocol: ProxyProtocol,
        target: ProxyTarget,
        credentials: Option<Credentials>,
    ) -> Self {
        let mut hs = ProxyHandshake {
            state: State::Failed(ProxyFailure::InvalidTarget),
            target,
            credentials,
            pending: None,
            buf: Vec::new(),
            max_head: DEFAULT_MAX_HEAD,
            head_bytes: 0,
            status_line: None,
        };
        if let Some(why) = hs.target.invalid_for(protocol) {
            hs.state = State::Failed(why);
            return hs;
        }
        match protocol {
            ProxyProtocol::HttpConnect => {
                hs.pending = Some(hs.connect_request());
                hs.state = State::HttpHead;
            }
            ProxyProtocol::Socks5 => {
                let method = if hs.credentials.is_some() {
                    METHOD_USER_PASS
                } else {
                    METHOD_NONE
                };
                hs.pending = Some(Bytes::copy_from_slice(&[SOCKS_VERSION, 1, method]));
                hs.state = State::SocksMethod;
            }
        }
        hs
    }

    /// The same handshake with another cap on the HTTP answer head (at
    /// least 64 bytes).
    #[must_use]
    pub fn with_max_head(mut self, max_head: usize) -> Self {
        self.max_head = max_head.max(64);
        self
    }

    /// Bytes to write to the proxy now, if any.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.pending.take()
    }

    /// Where the handshake stands.
    pub fn status(&self) -> HandshakeStatus {
        match self.state {
            State::Open => HandshakeStatus::Open,
            State::Failed(f) => HandshakeStatus::Failed(f),
            _ => HandshakeStatus::InProgress,
        }
    }

    /// The HTTP proxy's status line (printable ASCII, at most 120
    /// characters), once its answer head is complete.
    pub fn status_line(&self) -> Option<&str> {
        self.status_line.as_deref()
    }

    /// Feeds bytes read from the proxy; returns how many the handshake took.
    /// When the tunnel opens, the rest of `data` is the target's. Bytes fed
    /// after the handshake ended are not taken.
    pub fn handle_input(&mut self, data: &[u8]) -> usize {
        let mut used = 0;
        while used < data.len() && self.in_progress() {
            let byte = data[used];
            used += 1;
            match self.state {
                State::HttpHead => self.http_byte(byte),
                State::SocksMethod => self.socks_method_byte(byte),
                State::SocksAuth => self.socks_auth_byte(byte),
                State::SocksReply => self.socks_reply_byte(byte),
                State::Open | State::Failed(_) => {}
            }
        }
        used
    }

    /// The proxy closed the connection: a handshake still in progress fails.
    pub fn handle_eof(&mut self) {
        if self.in_progress() {
            self.fail(ProxyFailure::Closed);
        }
    }

    /// Reply bytes held now.
    #[cfg(test)]
    pub(super) fn buffered(&self) -> usize {
        self.buf.len()
    }

    fn in_progress(&self) -> bool {
        !matches!(self.state, State::Open | State::Failed(_))
    }

    fn fail(&mut self, failure: ProxyFailure) {
        self.state = State::Failed(failure);
        self.pending = None;
        self.buf = Vec::new();
    }

    /// Switches to `state` after a complete reply: the buffer starts over.
    fn advance(&mut self, state: State) {
        self.state = state;
        self.buf.clear();
        if state == State::Open {
            self.buf = Vec::new();
        }
    }

    // ---- HTTP CONNECT ----

    fn connect_request(&self) -> Bytes {
        let authority = self.target.authority();
        let mut req = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
        if let Some(c) = &self.credentials {
            let token = base64::encode(format!("{}:{}", c.username, c.password).as_bytes());
            req.push_str("Proxy-Authorization: Basic ");
            req.push_str(&token);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        Bytes::from(req)
    }

    fn http_byte(&mut self, byte: u8) {
        self.buf.push(byte);
        // Garbage (a SOCKS server, a TLS server) is known at its first bytes.
        let prefix = b"HTTP/";
        let n = self.buf.len().min(prefix.len());
        if self.buf[..n] != prefix[..n] {
            self.fail(ProxyFailure::BadHttp);
            return;
        }
        self.head_bytes += 1;
        if self.buf.ends_with(b"\n\n") || self.buf.ends_with(b"\n\r\n") {
            self.http_head_done();
        } else if self.head_bytes >= self.max_head {
            self.fail(ProxyFailure::HeadTooLarge);
        }
    }

    fn http_head_done(&mut self) {
        let line_end = self
            .buf
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(self.buf.len());
        let line = &self.buf[..line_end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(status) = parse_status_line(line) else {
            self.fail(ProxyFailure::BadHttp);
            return;
        };
        self.status_line = Some(printable(line));
        match status {
            // An interim head: the final one follows, within the same cap.
            100..=199 => self.buf.clear(),
            200..=299 => self.advance(State::Open),
            other => self.fail(ProxyFailure::HttpStatus(other)),
        }
    }

    // ---- SOCKS5 ----

    fn socks_method_byte(&mut self, byte: u8) {
        self.buf.push(byte);
        if self.buf[0] != SOCKS_VERSION {
            self.fail(ProxyFailure::BadGreeting);
            return;
        }
        if self.buf.len() < 2 {
            return;
        }
        let offered = if self.credentials.is_some() {
            METHOD_USER_PASS
        } else {
            METHOD_NONE
        };
        match self.buf[1] {
            METHOD_NO_ACCEPTABLE => self.fail(ProxyFailure::NoAcceptableMethod),
            m if m != offered => self.fail(ProxyFailure::UnexpectedMethod(m)),
            METHOD_USER_PASS => {
                self.pending = Some(self.auth_request());
                self.advance(State::SocksAuth);
            }
            _ => {
                self.pending = Some(self.socks_connect_request());
                self.advance(State::SocksReply);
            }
        }
    }

    fn auth_request(&self) -> Bytes {
        let (user, pass) = self.credentials.as_ref().map_or((&[][..], &[][..]), |c| {
            (c.username.as_bytes(), c.password.as_bytes())
        });
        let mut out = BytesMut::with_capacity(3 + user.len() + pass.len());
        out.put_u8(AUTH_VERSION);
        // Credentials::new keeps both within 255 bytes.
        out.put_u8(u8::try_from(user.len()).unwrap_or(u8::MAX));
        out.put_slice(&user[..user.len().min(255)]);
        out.put_u8(u8::try_from(pass.len()).unwrap_or(u8::MAX));
        out.put_slice(&pass[..pass.len().min(255)]);
        out.freeze()
    }

    fn socks_auth_byte(&mut self, byte: u8) {
        self.buf.push(byte);
        if self.buf[0] != AUTH_VERSION {
            self.fail(ProxyFailure::BadAuthReply);
            return;
        }
        if self.buf.len() < 2 {
            return;
        }
        match self.buf[1] {
            0 => {
                self.pending = Some(self.socks_connect_request());
                self.advance(State::SocksReply);
            }
            status => self.fail(ProxyFailure::AuthRejected(status)),
        }
    }

    fn socks_connect_request(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(22);
        out.put_slice(&[SOCKS_VERSION, CMD_CONNECT, 0]);
        let port = match &self.target {
            ProxyTarget::Addr(addr) => {
                match addr.ip().to_canonical() {
                    IpAddr::V4(v4) => {
                        out.put_u8(ATYP_V4);
                        out.put_slice(&v4.octets());
                    }
                    IpAddr::V6(v6) => {
                        out.put_u8(ATYP_V6);
                        out.put_slice(&v6.octets());
                    }
                }
                addr.port()
            }
            ProxyTarget::Name { host, port } => {
                out.put_u8(ATYP_NAME);
                // Checked by invalid_for: 1..=255 bytes.
                out.put_u8(u8::try_from(host.len()).unwrap_or(u8::MAX));
                out.put_slice(&host.as_bytes()[..host.len().min(255)]);
                *port
            }
        };
        out.put_u16(port);
        out.freeze()
    }

    fn socks_reply_byte(&mut self, byte: u8) {
        self.buf.push(byte);
        let b = &self.buf;
        if b[0] != SOCKS_VERSION {
            self.fail(ProxyFailure::BadSocks5Reply);
            return;
        }
        if b.len() < 2 {
            return;
        }
        if b[1] != 0 {
            // A refusing proxy may close right after the code: it is enough.
            let code = b[1];
            self.fail(ProxyFailure::Socks5Reply(code));
            return;
        }
        if b.len() < 5 {
            return;
        }
        let total = match b[3] {
            ATYP_V4 => 4 + 4 + 2,
            ATYP_V6 => 4 + 16 + 2,
            ATYP_NAME => 4 + 1 + usize::from(b[4]) + 2,
            _ => {
                self.fail(ProxyFailure::BadSocks5Reply);
                return;
            }
        };
        if b.len() >= total {
            self.advance(State::Open);
        }
    }
}

const SOCKS_VERSION: u8 = 5;
const AUTH_VERSION: u8 = 1;
const METHOD_NONE: u8 = 0;
const METHOD_USER_PASS: u8 = 2;
const METHOD_NO_ACCEPTABLE: u8 = 0xFF;
const CMD_CONNECT: u8 = 1;
const ATYP_V4: u8 = 1;
const ATYP_NAME: u8 = 3;
const ATYP_V6: u8 = 4;

/// The status of an `HTTP/1.x NNN reason` line, if it is one.
fn parse_status_line(line: &[u8]) -> Option<u16> {
    let rest = line.strip_prefix(b"HTTP/1.")?;
    let (&minor, rest) = rest.split_first()?;
    if !minor.is_ascii_digit() {
        return None;
    }
    let rest = rest.strip_prefix(b" ")?;
    let digits = rest.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) || !matches!(rest.get(3), None | Some(b' ')) {
        return None;
    }
    let status = digits
        .iter()
        .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    (100..=999).contains(&status).then_some(status)
}

/// `line` as printable ASCII (others become `?`), at most
/// [`MAX_STATUS_LINE`] characters.
fn printable(line: &[u8]) -> String {
    line.iter()
        .take(MAX_STATUS_LINE)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}
