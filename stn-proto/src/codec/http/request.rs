//! The short-link request encoder: Mars's fixed POST head, byte for byte.

use bytes::{BufMut, BytesMut};

use crate::net::SocketAddr;

/// What the encoder needs besides the body: the CGI path, the `Host` value and
/// the task's own headers.
///
/// ```
/// use stn_proto::codec::http::RequestHead;
/// use std::net::SocketAddr;
///
/// let addr: SocketAddr = "10.0.0.1:8080".parse().unwrap();
/// // A host name was used to find the address: it goes into `Host`.
/// assert_eq!(RequestHead::new("/cgi", Some("example.com"), addr).host, "example.com");
/// // A bare IP endpoint: `Host` is the IP:port text.
/// assert_eq!(RequestHead::new("/cgi", None, addr).host, "10.0.0.1:8080");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// The request target, e.g. `/cgi-bin/micromsg-bin/newsync`. Must start
    /// with `/` and hold only visible ASCII (no spaces, CR or LF).
    pub cgi: String,
    /// The `Host` value: the host name whose lookup produced the address, or
    /// the `ip:port` text when there was none (see [`RequestHead::new`]).
    pub host: String,
    /// The task's own headers, applied in order with insert-or-update
    /// semantics: a name equal (ignoring ASCII case) to one already present
    /// replaces its value and keeps the first spelling, as Mars's
    /// case-insensitive `std::map` does. They may override the fixed headers
    /// (`Connection: Keep-Alive` …) except the framing ones: a
    /// `Transfer-Encoding`, or a `Content-Length` other than the body length,
    /// is rejected.
    pub extra_headers: Vec<(String, String)>,
}

impl RequestHead {
    /// A head for `cgi`, with `Host` set to `host` when the address came from a
    /// host name, or to the address's `ip:port` text otherwise (IPv6 in
    /// brackets: `[::1]:80`). No extra headers.
    pub fn new(cgi: impl Into<String>, host: Option<&str>, addr: SocketAddr) -> Self {
        RequestHead {
            cgi: cgi.into(),
            host: match host {
                Some(h) => h.to_owned(),
                None => addr.to_string(),
            },
            extra_headers: Vec::new(),
        }
    }

    /// Adds one extra header (builder style); see
    /// [`extra_headers`](RequestHead::extra_headers) for the merge rule.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }
}

/// Why a request could not be encoded. Nothing is written to the output
/// buffer when encoding fails, so header injection cannot happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RequestError {
    /// The CGI path does not start with `/`, or holds a byte outside visible
    /// ASCII (space, CR, LF, other control bytes, non-ASCII).
    #[error("invalid cgi path {0:?}: must start with '/' and hold only visible ASCII")]
    BadCgi(String),
    /// The `Host` value is empty or holds a byte outside visible ASCII.
    #[error("invalid Host {0:?}: must be non-empty visible ASCII")]
    BadHost(String),
    /// A header name is empty or not an RFC 9110 token (this covers CR, LF,
    /// `:` and whitespace).
    #[error("invalid header name {0:?}")]
    BadHeaderName(String),
    /// A header value holds CR, LF, NUL or another control byte (HTAB is
    /// allowed).
    #[error("invalid value for header {name:?}: control characters are not allowed")]
    BadHeaderValue {
        /// The header whose value was rejected.
        name: String,
    },
    /// An extra header would change the message framing: `Transfer-Encoding`,
    /// or a `Content-Length` different from the body length.
    #[error("header {0:?} conflicts with the framing the encoder writes")]
    FramingHeader(String),
}

/// The fixed headers, in the order Mars inserts them (`shortlink_packer.cc`);
/// `Content-Length` and `Host` are filled in per request.
const FIXED: [(&str, &str); 5] = [
    ("Accept", "*/*"),
    ("User-Agent", "MicroMessenger Client"),
    ("Cache-Control", "no-cache"),
    ("Content-Type", "application/octet-stream"),
    ("Connection", "close"),
];

/// Appends a Mars short-link request (head and body) to `dst`.
///
/// The request line is `POST <cgi> HTTP/1.1`. The headers are the fixed set
/// `Accept: */*`, `User-Agent: MicroMessenger Client`, `Cache-Control:
/// no-cache`, `Content-Type: application/octet-stream`, `Connection: close`,
/// `Content-Length: <body length>`, `Host: <head.host>`, then
/// `head.extra_headers` merged with insert-or-update semantics. Like Mars
/// (headers live in a `std::map` ordered by `strcasecmp`), they are emitted
/// sorted by their ASCII-lowercased names, not in insertion order; each line
/// is `Name: value\r\n`, and an empty line ends the head.
///
/// Everything is validated before anything is written: on error `dst` is
/// unchanged.
///
/// ```
/// use bytes::BytesMut;
/// use stn_proto::codec::http::{encode_request, RequestHead};
///
/// let head = RequestHead {
///     cgi: "/mmtls/echo".into(),
///     host: "example.com".into(),
///     extra_headers: vec![],
/// };
/// let mut out = BytesMut::new();
/// encode_request(&head, b"hi", &mut out).unwrap();
/// assert_eq!(
///     &out[..],
///     &b"POST /mmtls/echo HTTP/1.1\r\n\
///        Accept: */*\r\n\
///        Cache-Control: no-cache\r\n\
///        Connection: close\r\n\
///        Content-Length: 2\r\n\
///        Content-Type: application/octet-stream\r\n\
///        Host: example.com\r\n\
///        User-Agent: MicroMessenger Client\r\n\
///        \r\n\
///        hi"[..]
/// );
/// ```
pub fn encode_request(
    head: &RequestHead,
    body: &[u8],
    dst: &mut BytesMut,
) -> Result<(), RequestError> {
    check_request(
        &head.cgi,
        Some(&head.host),
        &head.extra_headers,
        Some(body.len()),
    )?;
    let content_length = body.len().to_string();

    // Insertion order first (the spelling of the first insertion is kept),
    // sorted afterwards.
    let mut fields: Vec<(&str, &str)> =
        Vec::with_capacity(FIXED.len() + 2 + head.extra_headers.len());
    fields.extend_from_slice(&FIXED);
    fields.push(("Content-Length", &content_length));
    fields.push(("Host", &head.host));
    for (name, value) in &head.extra_headers {
        match fields
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some(slot) => slot.1 = value,
            None => fields.push((name, value)),
        }
    }
    // strcasecmp order: byte-wise comparison of the lowercased names. Names are
    // unique ignoring case, so the order is total.
    fields.sort_by(|a, b| {
        a.0.bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.0.bytes().map(|c| c.to_ascii_lowercase()))
    });

    let head_len = 5
        + head.cgi.len()
        + 11
        + fields
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum::<usize>()
        + 2;
    dst.reserve(head_len + body.len());
    dst.put_slice(b"POST ");
    dst.put_slice(head.cgi.as_bytes());
    dst.put_slice(b" HTTP/1.1\r\n");
    for (name, value) in &fields {
        dst.put_slice(name.as_bytes());
        dst.put_slice(b": ");
        dst.put_slice(value.as_bytes());
        dst.put_slice(b"\r\n");
    }
    dst.put_slice(b"\r\n");
    dst.put_slice(body);
    Ok(())
}

/// Checks a request's parts the way [`encode_request`] does, without
/// encoding it: the CGI path, the `Host` value when given, and the extra
/// headers (a `Content-Length` among them against `body_len`, when given).
/// The first rule broken is the error.
///
/// ```
/// use stn_proto::codec::http::{check_request, RequestError};
/// assert_eq!(check_request("/mars/hello2", None, &[], Some(2)), Ok(()));
/// let e = check_request("mars/hello2", None, &[], Some(2)).unwrap_err();
/// assert_eq!(e, RequestError::BadCgi("mars/hello2".into()));
/// assert_eq!(
///     e.to_string(),
///     "invalid cgi path \"mars/hello2\": must start with '/' and hold only visible ASCII"
/// );
/// ```
///
/// # Errors
///
/// The [`RequestError`] [`encode_request`] would return.
pub fn check_request(
    cgi: &str,
    host: Option<&str>,
    extra_headers: &[(String, String)],
    body_len: Option<usize>,
) -> Result<(), RequestError> {
    if !valid_cgi(cgi) {
        return Err(RequestError::BadCgi(cgi.to_owned()));
    }
    if let Some(host) = host {
        if host.is_empty() || !host.bytes().all(is_visible_ascii) {
            return Err(RequestError::BadHost(host.to_owned()));
        }
    }
    for (name, value) in extra_headers {
        if !valid_name(name) {
            return Err(RequestError::BadHeaderName(name.clone()));
        }
        if !value.bytes().all(is_value_byte) {
            return Err(RequestError::BadHeaderValue { name: name.clone() });
        }
        if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length")
                && body_len.is_some_and(|n| value.trim_matches([' ', '\t']) != n.to_string()))
        {
            return Err(RequestError::FramingHeader(name.clone()));
        }
    }
    Ok(())
}

fn is_visible_ascii(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

fn valid_cgi(cgi: &str) -> bool {
    cgi.starts_with('/') && cgi.bytes().all(is_visible_ascii)
}

/// RFC 9110 `tchar`.
pub(super) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_tchar)
}

/// RFC 9110 field-value bytes: HTAB, SP, VCHAR, obs-text. Excludes CR, LF,
/// NUL, the other controls and DEL.
pub(super) fn is_value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(head: &RequestHead, body: &[u8]) -> Result<String, RequestError> {
        let mut out = BytesMut::new();
        encode_request(head, body, &mut out)?;
        Ok(String::from_utf8(out.to_vec()).unwrap())
    }

    fn head(extra: &[(&str, &str)]) -> RequestHead {
        RequestHead {
            cgi: "/cgi-bin/micromsg-bin/newsync".into(),
            host: "short.weixin.qq.com".into(),
            extra_headers: extra
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn mars_request_exact_bytes() {
        let text = encode(&head(&[]), b"\x00\x01body").unwrap();
        assert_eq!(
            text,
            "POST /cgi-bin/micromsg-bin/newsync HTTP/1.1\r\n\
             Accept: */*\r\n\
             Cache-Control: no-cache\r\n\
             Connection: close\r\n\
             Content-Length: 6\r\n\
             Content-Type: application/octet-stream\r\n\
             Host: short.weixin.qq.com\r\n\
             User-Agent: MicroMessenger Client\r\n\
             \r\n\
             \x00\x01body"
        );
    }

    #[test]
    fn empty_body_has_content_length_zero() {
        let text = encode(&head(&[]), b"").unwrap();
        assert!(text.contains("\r\nContent-Length: 0\r\n"));
        assert!(text.ends_with("User-Agent: MicroMessenger Client\r\n\r\n"));
    }

    #[test]
    fn host_falls_back_to_ip_port_text() {
        let v4: SocketAddr = "192.0.2.7:80".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let h4 = RequestHead::new("/a", None, v4);
        let h6 = RequestHead::new("/a", None, v6);
        assert!(encode(&h4, b"")
            .unwrap()
            .contains("\r\nHost: 192.0.2.7:80\r\n"));
        assert!(encode(&h6, b"")
            .unwrap()
            .contains("\r\nHost: [2001:db8::1]:443\r\n"));
        let named = RequestHead::new("/a", Some("example.com"), v4);
        assert!(encode(&named, b"")
            .unwrap()
            .contains("\r\nHost: example.com\r\n"));
    }

    #[test]
    fn extra_headers_override_case_insensitively_and_sort() {
        let h = head(&[
            ("connection", "Keep-Alive"),
            ("X-Trace", "1"),
            ("user-agent", "stn"),
            ("x-trace", "2"),
            ("Authorization", "Bearer t"),
            ("HOST", "other.example"),
        ]);
        assert_eq!(
            encode(&h, b"").unwrap(),
            "POST /cgi-bin/micromsg-bin/newsync HTTP/1.1\r\n\
             Accept: */*\r\n\
             Authorization: Bearer t\r\n\
             Cache-Control: no-cache\r\n\
             Connection: Keep-Alive\r\n\
             Content-Length: 0\r\n\
             Content-Type: application/octet-stream\r\n\
             Host: other.example\r\n\
             User-Agent: stn\r\n\
             X-Trace: 2\r\n\
             \r\n"
        );
    }

    #[test]
    fn content_length_override_only_when_equal() {
        assert!(encode(&head(&[("content-length", "3")]), b"abc").is_ok());
        assert_eq!(
            encode(&head(&[("Content-Length", "4")]), b"abc"),
            Err(RequestError::FramingHeader("Content-Length".into()))
        );
        assert_eq!(
            encode(&head(&[("Transfer-Encoding", "chunked")]), b"abc"),
            Err(RequestError::FramingHeader("Transfer-Encoding".into()))
        );
    }

    #[test]
    fn header_injection_is_rejected_and_writes_nothing() {
        let cases: Vec<(RequestHead, RequestError)> = vec![
            (
                head(&[("X-A", "v\r\nInjected: 1")]),
                RequestError::BadHeaderValue { name: "X-A".into() },
            ),
            (
                head(&[("X-A", "v\nB: 1")]),
                RequestError::BadHeaderValue { name: "X-A".into() },
            ),
            (
                head(&[("X-A", "v\0")]),
                RequestError::BadHeaderValue { name: "X-A".into() },
            ),
            (
                head(&[("X-A\r\nB", "v")]),
                RequestError::BadHeaderName("X-A\r\nB".into()),
            ),
            (
                head(&[("X A", "v")]),
                RequestError::BadHeaderName("X A".into()),
            ),
            (
                head(&[("X-A:", "v")]),
                RequestError::BadHeaderName("X-A:".into()),
            ),
            (
                head(&[("", "v")]),
                RequestError::BadHeaderName(String::new()),
            ),
            (
                RequestHead {
                    cgi: "/a HTTP/1.1\r\nX: y\r\n".into(),
                    ..head(&[])
                },
                RequestError::BadCgi("/a HTTP/1.1\r\nX: y\r\n".into()),
            ),
            (
                RequestHead {
                    cgi: "/a\nb".into(),
                    ..head(&[])
                },
                RequestError::BadCgi("/a\nb".into()),
            ),
            (
                RequestHead {
                    cgi: "cgi".into(),
                    ..head(&[])
                },
                RequestError::BadCgi("cgi".into()),
            ),
            (
                RequestHead {
                    cgi: String::new(),
                    ..head(&[])
                },
                RequestError::BadCgi(String::new()),
            ),
            (
                RequestHead {
                    host: "h\r\nX: 1".into(),
                    ..head(&[])
                },
                RequestError::BadHost("h\r\nX: 1".into()),
            ),
            (
                RequestHead {
                    host: String::new(),
                    ..head(&[])
                },
                RequestError::BadHost(String::new()),
            ),
        ];
        for (h, want) in cases {
            let mut out = BytesMut::from(&b"prefix"[..]);
            assert_eq!(encode_request(&h, b"body", &mut out), Err(want));
            assert_eq!(&out[..], b"prefix", "nothing written on error");
        }
    }

    #[test]
    fn tab_and_obs_text_values_are_allowed() {
        let text = encode(&head(&[("X-A", "a\tb"), ("X-B", "caf\u{e9}")]), b"").unwrap();
        assert!(text.contains("\r\nX-A: a\tb\r\n"));
        assert!(text.contains("\r\nX-B: caf\u{e9}\r\n"));
    }

    #[test]
    fn appends_after_existing_bytes() {
        let mut out = BytesMut::from(&b"xx"[..]);
        encode_request(&head(&[]), b"b", &mut out).unwrap();
        assert!(out.starts_with(b"xxPOST /cgi-bin"));
        assert!(out.ends_with(b"\r\n\r\nb"));
    }

    proptest::proptest! {
        /// Whatever the extra headers, a successful encoding has exactly one
        /// head terminator before the body and one line per distinct name.
        #[test]
        fn encoded_head_is_well_formed(
            extra in proptest::collection::vec(("[A-Za-z-]{1,6}", "[ -~\t\r\n]{0,8}"), 0..8),
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let h = RequestHead { extra_headers: extra.clone(), ..head(&[]) };
            let mut out = BytesMut::new();
            match encode_request(&h, &body, &mut out) {
                Ok(()) => {
                    let end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
                    proptest::prop_assert_eq!(&out[end + 4..], &body[..]);
                    let head_text = std::str::from_utf8(&out[..end]).unwrap();
                    let names: Vec<String> = head_text.split("\r\n").skip(1)
                        .map(|l| l.split(':').next().unwrap().to_ascii_lowercase()).collect();
                    let mut sorted = names.clone();
                    sorted.sort();
                    sorted.dedup();
                    proptest::prop_assert_eq!(names, sorted);
                    for (_, v) in &extra {
                        proptest::prop_assert!(!v.contains(['\r', '\n']));
                    }
                }
                Err(_) => proptest::prop_assert!(out.is_empty()),
            }
        }
    }
}
