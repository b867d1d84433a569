//! A bounded HTTP/1.x *request* reader for the reference server's short link.
//! stn-proto only parses responses (the client side); a server needs the
//! other direction, and only the subset Mars clients send: a request line,
//! header fields and a `Content-Length` body. Chunked request bodies are
//! refused (411), as are heads and bodies over the configured caps.
//!
//! This module finds the end of the head within the head cap and frames the
//! body; `httparse` tokenizes the head itself (request line and fields).

use bytes::{Bytes, BytesMut};

/// Caps for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RequestLimits {
    /// Largest head: request line, header lines and the empty line.
    pub(crate) max_head_len: usize,
    /// Most header fields.
    pub(crate) max_headers: usize,
    /// Largest `Content-Length`.
    pub(crate) max_body_len: usize,
}

/// The request line's protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    Http10,
    Http11,
}

/// One complete request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The request target as sent (origin form `/cgi?q` or absolute form
    /// `http://host/cgi` when the client goes through a proxy).
    pub(crate) target: String,
    pub(crate) version: Version,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Bytes,
}

impl Request {
    /// The first value of header `name`, ignoring ASCII case.
    #[cfg(test)]
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The path of the target, without query and, for the absolute form,
    /// without scheme and authority.
    pub(crate) fn path(&self) -> &str {
        let target = self.target.as_str();
        let path = match target.find("://") {
            Some(i) => {
                let after = &target[i + 3..];
                after.find('/').map_or("/", |j| &after[j..])
            }
            None => target,
        };
        path.split(['?', '#']).next().unwrap_or(path)
    }

    /// Whether the connection stays open after the response: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    pub(crate) fn keep_alive(&self) -> bool {
        let has = |token: &str| {
            self.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
                .flat_map(|(_, v)| v.split(','))
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        match self.version {
            Version::Http11 => !has("close"),
            Version::Http10 => has("keep-alive") && !has("close"),
        }
    }
}

/// Why a request was refused; each maps to the status the server answers
/// before closing the connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RequestError {
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("request head larger than {0} bytes")]
    HeadTooLarge(usize),
    #[error("more than {0} header fields")]
    TooManyHeaders(usize),
    #[error("request body of {len} bytes exceeds the {limit}-byte limit")]
    BodyTooLarge { len: u64, limit: usize },
    #[error("Transfer-Encoding request bodies are not supported; send Content-Length")]
    LengthRequired,
    #[error("unsupported HTTP version")]
    Version,
}

impl RequestError {
    /// The response status for this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            RequestError::Malformed(_) => 400,
            RequestError::HeadTooLarge(_) | RequestError::TooManyHeaders(_) => 431,
            RequestError::BodyTooLarge { .. } => 413,
            RequestError::LengthRequired => 411,
            RequestError::Version => 505,
        }
    }
}

/// The parsed head of the request in progress, waiting for its body.
#[derive(Debug)]
struct Head {
    method: String,
    target: String,
    version: Version,
    headers: Vec<(String, String)>,
    head_len: usize,
    body_len: usize,
}

/// Incremental request parser over the connection's read buffer.
///
/// Call [`parse`](Self::parse) after every read; it takes a complete request
/// off the front of the buffer (leaving pipelined bytes for the next call) and
/// never looks at more than `max_head_len` bytes for a head.
#[derive(Debug)]
pub(crate) struct RequestParser {
    limits: RequestLimits,
    /// Bytes of the buffer already searched for the end of the head.
    scanned: usize,
    head: Option<Head>,
    /// A `100 Continue` is owed for the current head.
    continue_pending: bool,
}

impl RequestParser {
    pub(crate) fn new(limits: RequestLimits) -> Self {
        RequestParser {
            limits,
            scanned: 0,
            head: None,
            continue_pending: false,
        }
    }

    /// Parses from the front of `buf`. `Ok(None)`: read more.
    pub(crate) fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Request>, RequestError> {
        if self.head.is_none() {
            let Some(head_len) = self.find_head_end(buf)? else {
                return Ok(None);
            };
            let head = parse_head(&buf[..head_len], head_len, &self.limits)?;
            self.continue_pending = head.body_len > 0
                && buf.len() < head_len + head.body_len
                && header(&head.headers, "expect")
                    .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
            self.head = Some(head);
        }
        let Some(head) = &self.head else {
            return Ok(None);
        };
        let total = head.head_len + head.body_len;
        if buf.len() < total {
            return Ok(None);
        }
        let head = self.head.take().unwrap_or_else(|| unreachable!());
        let mut whole = buf.split_to(total);
        let body = whole.split_off(head.head_len).freeze();
        self.scanned = 0;
        self.continue_pending = false;
        Ok(Some(Request {
            method: head.method,
            target: head.target,
            version: head.version,
            headers: head.headers,
            body,
        }))
    }

    /// Whether the client asked for `100 Continue` before sending the body of
    /// the request in progress; true once per request.
    pub(crate) fn take_continue(&mut self) -> bool {
        std::mem::take(&mut self.continue_pending)
    }

    /// The buffered length the request in progress needs: the whole
    /// request once its head is parsed, else one more byte (the head's
    /// length is unknown until its end arrives).
    pub(crate) fn wanted(&self, buf: &BytesMut) -> usize {
        match &self.head {
            Some(head) => head.head_len + head.body_len,
            None => buf.len() + 1,
        }
    }

    /// Whether the head of the request in progress is parsed (its body is
    /// awaited).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// Whether part of a request has been received (so an EOF now is abrupt).
    pub(crate) fn in_request(&self, buf: &BytesMut) -> bool {
        self.head.is_some() || !buf.is_empty()
    }

    /// The length of the head (through its empty line) once it is all in.
    fn find_head_end(&mut self, buf: &BytesMut) -> Result<Option<usize>, RequestError> {
        let limit = self.limits.max_head_len;
        let window = &buf[..buf.len().min(limit)];
        // Restart a little before where the last scan stopped: the terminator
        // may straddle two reads.
        let from = self.scanned.saturating_sub(3);
        for i in from..window.len() {
            if window[i] == b'\n' {
                let prev = &window[..i];
                if prev.ends_with(b"\n") || prev.ends_with(b"\n\r") {
                    return Ok(Some(i + 1));
                }
            }
        }
        self.scanned = window.len();
        // No end yet: refuse at once what can never become a request (a
        // long-link frame, TLS, garbage), so such a peer gets its 400 now
        // rather than after the request timeout. Before the size check, so
        // the verdict does not depend on how the bytes were split into
        // reads: a prefix that cannot start a request is refused as
        // malformed whether it arrives alone or inside a head's worth.
        reject_early(window, &self.limits)?;
        if buf.len() >= limit {
            return Err(RequestError::HeadTooLarge(limit));
        }
        Ok(None)
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The request-target forms a server meets (RFC 9112 §3.2): origin form
/// (`/path?q`), absolute form (`scheme://authority/path`, through a proxy)
/// and asterisk form (`*`); printable ASCII only. Anything else (`8/a`) is
/// refused rather than routed.
fn valid_target(target: &str) -> bool {
    let printable = !target.is_empty() && target.bytes().all(|b| b.is_ascii_graphic());
    let absolute = target.split_once("://").is_some_and(|(scheme, _)| {
        let mut bytes = scheme.bytes();
        bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    printable && (target.starts_with('/') || absolute || target == "*")
}

/// Maps httparse's verdict on a complete head to the server's refusals.
fn head_error(e: httparse::Error, raw: &[u8], limits: &RequestLimits) -> RequestError {
    match e {
        httparse::Error::TooManyHeaders => RequestError::TooManyHeaders(limits.max_headers),
        httparse::Error::HeaderName => RequestError::Malformed("header name"),
        httparse::Error::HeaderValue => RequestError::Malformed("header value"),
        httparse::Error::Token => RequestError::Malformed("request line"),
        httparse::Error::NewLine => RequestError::Malformed("line ending"),
        httparse::Error::Status => RequestError::Malformed("request line"),
        // httparse knows only HTTP/1.0 and 1.1: another `HTTP/x` is a
        // version we do not support (505), anything else a bad request line.
        httparse::Error::Version => {
            let line = raw.split(|&b| b == b'\n').next().unwrap_or_default();
            if line
                .split(|&b| b == b' ')
                .nth(2)
                .is_some_and(|v| v.starts_with(b"HTTP/"))
            {
                RequestError::Version
            } else {
                RequestError::Malformed("version")
            }
        }
    }
}

/// `httparse`'s verdict on the start of a head whose end has not arrived:
/// an error it would give whatever follows.
fn reject_early(partial: &[u8], limits: &RequestLimits) -> Result<(), RequestError> {
    let slots = limits.max_headers.min(partial.len() / 2 + 1);
    let mut fields = vec![httparse::EMPTY_HEADER; slots];
    match httparse::Request::new(&mut fields).parse(partial) {
        Err(e) => Err(head_error(e, partial, limits)),
        Ok(_) => Ok(()),
    }
}

/// Parses a complete head (`raw` ends with its empty line) with `httparse`,
/// then applies the server's own rules: a target in one of the forms a
/// server meets, UTF-8 text, one `Content-Length` within the body cap, no
/// `Transfer-Encoding`.
fn parse_head(raw: &[u8], head_len: usize, limits: &RequestLimits) -> Result<Head, RequestError> {
    // Every field takes at least two bytes (`a:` and a line end), so a head
    // of `head_len` bytes never needs more slots than this: the allocation
    // follows the bytes received, not the configured count.
    let slots = limits.max_headers.min(head_len / 2 + 1);
    let mut fields = vec![httparse::EMPTY_HEADER; slots];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(raw) {
        Ok(httparse::Status::Complete(n)) if n == head_len => {}
        // The head's end was found by the scan, so anything short of a
        // complete parse ending there is malformed (a stray blank line first).
        Ok(_) => return Err(RequestError::Malformed("request line")),
        Err(e) => return Err(head_error(e, raw, limits)),
    }
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(RequestError::Malformed("request line"));
    };
    if !valid_target(target) {
        return Err(RequestError::Malformed("request target"));
    }
    let version = if minor == 1 {
        Version::Http11
    } else {
        Version::Http10
    };
    let mut headers = Vec::with_capacity(req.headers.len());
    for field in req.headers.iter() {
        let value = std::str::from_utf8(field.value)
            .map_err(|_| RequestError::Malformed("non-UTF-8 head"))?
            .trim_matches([' ', '\t']);
        headers.push((field.name.to_owned(), value.to_owned()));
    }

    if header(&headers, "transfer-encoding").is_some() {
        return Err(RequestError::LengthRequired);
    }
    let mut body_len: Option<u64> = None;
    for (_, value) in headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(RequestError::Malformed("Content-Length"));
        }
        let len: u64 = value
            .parse()
            .map_err(|_| RequestError::Malformed("Content-Length"))?;
        if body_len.is_some_and(|seen| seen != len) {
            return Err(RequestError::Malformed("conflicting Content-Length"));
        }
        body_len = Some(len);
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > limits.max_body_len as u64 {
        return Err(RequestError::BodyTooLarge {
            len: body_len,
            limit: limits.max_body_len,
        });
    }
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version,
        headers,
        head_len,
        // Fits: bounded by max_body_len, a usize.
        body_len: body_len as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RequestLimits = RequestLimits {
        max_head_len: 256,
        max_headers: 4,
        max_body_len: 16,
    };

    fn parse_all(chunks: &[&[u8]]) -> (Vec<Request>, Option<RequestError>) {
        let mut parser = RequestParser::new(LIMITS);
        crate::feed_chunks(chunks, |buf| parser.parse(buf), |_| {})
    }

    const POST: &[u8] =
        b"POST /mars/hello2?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";

    #[test]
    fn whole_and_byte_by_byte_agree() {
        let (whole, err) = parse_all(&[POST]);
        assert_eq!(err, None);
        assert_eq!(whole.len(), 1);
        let r = &whole[0];
        assert_eq!(
            (r.method.as_str(), r.path(), &r.body[..]),
            ("POST", "/mars/hello2", &b"hello"[..])
        );
        assert_eq!(r.header("content-length"), Some("5"));
        assert!(r.keep_alive());
        let bytes: Vec<&[u8]> = POST.chunks(1).collect();
        let (split, err) = parse_all(&bytes);
        assert_eq!(err, None);
        assert_eq!(split, whole);
    }

    #[test]
    fn pipelined_requests_and_bare_lf() {
        let mut wire = POST.to_vec();
        wire.extend_from_slice(b"GET http://h:1/p/q HTTP/1.0\nConnection: keep-alive\n\n");
        wire.extend_from_slice(b"GET / HTTP/1.0\r\n\r\n");
        let (reqs, err) = parse_all(&[&wire]);
        assert_eq!(err, None);
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[1].path(), "/p/q");
        assert!(reqs[1].keep_alive());
        assert!(!reqs[2].keep_alive());
        assert!(reqs[2].body.is_empty());
    }

    #[test]
    fn connection_close_token() {
        let (reqs, _) = parse_all(&[b"POST /a HTTP/1.1\r\nConnection: Keep-Alive, Close\r\n\r\n"]);
        assert!(!reqs[0].keep_alive());
    }

    #[test]
    fn errors_map_to_statuses() {
        let cases: &[(&[u8], u16)] = &[
            (
                b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                411,
            ),
            (b"POST /a HTTP/1.1\r\nContent-Length: 17\r\n\r\n", 413),
            (b"POST /a HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            (
                b"POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (b"POST /a HTTP/2.0\r\n\r\n", 505),
            (b"POST /a\r\n\r\n", 400),
            (b"POST  /a HTTP/1.1\r\n\r\n", 400),
            (b"POST 8/a HTTP/1.1\r\n\r\n", 400),
            (b"POST 1://a/b HTTP/1.1\r\n\r\n", 400),
            (b"POST /a HTTP/1.1\r\nNo colon\r\n\r\n", 400),
            (b"POST /a HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
            (
                b"POST /a HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n\r\n",
                431,
            ),
            (&[b'A'; 300], 431),
        ];
        for (wire, status) in cases {
            let (reqs, err) = parse_all(&[wire]);
            assert!(reqs.is_empty());
            let err =
                err.unwrap_or_else(|| panic!("no error for {:?}", String::from_utf8_lossy(wire)));
            assert_eq!(err.status(), *status, "{err}");
        }
    }

    #[test]
    fn what_can_never_be_a_request_is_refused_before_its_end() {
        // A long-link frame header (20 bytes, binary) and a TLS ClientHello
        // start: no head end will ever come, and none is waited for.
        for wire in [
            &[
                0, 0, 0, 20, 0, 0, 0, 200, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 5,
            ][..],
            &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01][..],
        ] {
            let mut parser = RequestParser::new(LIMITS);
            let mut buf = BytesMut::from(wire);
            let err = parser.parse(&mut buf).unwrap_err();
            assert_eq!(err.status(), 400, "{err}");
        }
        // A valid start still waits for the rest.
        let mut parser = RequestParser::new(LIMITS);
        let mut buf = BytesMut::from(&b"POST /a HTTP/1.1\r\nHost: x"[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
    }

    #[test]
    fn head_cap_is_checked_without_a_terminator() {
        let mut parser = RequestParser::new(LIMITS);
        let mut buf = BytesMut::from(&b"POST /a HTTP/1.1\r\nX: "[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        buf.extend_from_slice(&[b'x'; 300]);
        assert_eq!(parser.parse(&mut buf), Err(RequestError::HeadTooLarge(256)));
    }

    #[test]
    fn expect_continue_is_signalled_once() {
        let mut parser = RequestParser::new(LIMITS);
        let mut buf = BytesMut::from(
            &b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"[..],
        );
        assert_eq!(parser.parse(&mut buf), Ok(None));
        assert!(parser.take_continue());
        assert!(!parser.take_continue());
        assert!(parser.in_request(&buf));
        buf.extend_from_slice(b"hi");
        let req = parser.parse(&mut buf).unwrap().unwrap();
        assert_eq!(&req.body[..], b"hi");
        assert!(buf.is_empty());
        assert!(!parser.in_request(&buf));
    }

    #[test]
    fn garbage_never_panics_and_chunking_does_not_matter() {
        // A cheap deterministic sweep over odd inputs (xorshift over an
        // alphabet of the bytes that matter to the parser).
        const ALPHABET: &[u8] = b"POST /a HTTP/1.1\r\n\n: -0123456789\x00\xff";
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let len = next() % 80;
            let mut wire: Vec<u8> = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            if next() % 2 == 0 {
                wire.splice(0..0, b"POST /a HTTP/1.1\r\n".iter().copied());
            }
            let whole = parse_all(&[&wire]);
            let bytes: Vec<&[u8]> = wire.chunks(1).collect();
            assert_eq!(
                parse_all(&bytes),
                whole,
                "{:?}",
                String::from_utf8_lossy(&wire)
            );
        }
    }
}
