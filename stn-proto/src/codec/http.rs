//! The short-link HTTP/1.1 codec: Mars's request head and a bounded,
//! incremental response parser (reference `mars-stn.md` §6).
//!
//! A short-link task is one `POST <cgi>` on a fresh connection (`Connection:
//! close`), answered by one response; only status 200 carries a usable body.
//! [`encode_request`] writes the request exactly as Mars does; a
//! [`ResponseParser`] takes the response bytes in whatever chunks the socket
//! delivers, with every size capped by [`HttpLimits`] (Mars caps nothing but
//! the head), and never panics on network input.
//!
//! ```
//! use bytes::BytesMut;
//! use stn_proto::codec::http::{
//!     encode_request, HttpError, HttpLimits, Progress, RequestHead, ResponseParser,
//! };
//!
//! // The request.
//! let head = RequestHead::new("/echo", Some("example.com"), "192.0.2.1:80".parse().unwrap())
//!     .with_header("Connection", "Keep-Alive");
//! let mut out = BytesMut::new();
//! encode_request(&head, b"ping", &mut out).unwrap();
//! assert!(out.starts_with(b"POST /echo HTTP/1.1\r\nAccept: */*\r\n"));
//!
//! // The response, in two pieces.
//! let mut parser = ResponseParser::new(HttpLimits::default());
//! assert_eq!(parser.feed(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap(), Progress::Partial);
//! assert!(parser.first_byte_received());
//! let Progress::Complete(response) = parser.feed(b"ngth: 4\r\n\r\npong").unwrap() else {
//!     panic!("complete")
//! };
//! assert_eq!(response.header("content-length"), Some("4"));
//! assert_eq!(response.into_result().unwrap(), &b"pong"[..]);
//!
//! // Any status but 200 is an error carrying it.
//! let mut parser = ResponseParser::new(HttpLimits::default());
//! let Progress::Complete(response) = parser.feed(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n").unwrap() else {
//!     panic!("complete")
//! };
//! assert_eq!(response.into_result(), Err(HttpError::Status(503)));
//! ```

mod request;
mod response;

pub use request::{check_request, encode_request, RequestError, RequestHead};
pub use response::{Progress, ResponseParser};

use bytes::Bytes;

/// Size caps for one response (and the one framing choice Mars makes
/// differently from RFC 9112).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest head (status line, header lines and the empty line), and
    /// separately the largest total of a response's interim (1xx) heads, the
    /// largest chunked-body trailer section and chunk-size line.
    /// Exceeding it fails as soon as the first byte over the limit arrives.
    pub max_head_len: usize,
    /// Most header fields in one head.
    pub max_headers: usize,
    /// Largest body. A `Content-Length` over it fails when the head is parsed;
    /// a chunk size fails as soon as its digits take the total over it.
    pub max_body_len: usize,
    /// Accept a body delimited by the connection close (neither
    /// `Content-Length` nor `chunked`) when [`ResponseParser::finish_eof`] is
    /// called. Mars never completes such a response; `false` in every profile.
    pub read_until_close: bool,
}

/// The protocol version of a response's status line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HttpVersion {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

/// A complete final response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code (never 1xx except 101).
    pub status: u16,
    /// The status line's version.
    pub version: HttpVersion,
    /// The header fields in received order, names as sent, values with the
    /// surrounding whitespace removed.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Bytes,
}

impl HttpResponse {
    /// The first value of header `name`, compared ignoring ASCII case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body if the status is 200, else [`HttpError::Status`]: Mars hands
    /// only a 200 body to `Buf2Resp` and ends every other status with
    /// `(kEctHttp, status)` (3xx included: redirects are not followed).
    pub fn into_result(self) -> Result<Bytes, HttpError> {
        if self.status == 200 {
            Ok(self.body)
        } else {
            Err(HttpError::Status(self.status))
        }
    }
}

/// Why a response could not be used. Mars's mapping: [`BadStatusLine`] is
/// `(kEctHttp, kEctHttpParseStatusLine = -10195)`; the head, header and body
/// errors are `(kEctHttp, kEctHttpSplitHttpHeadAndBody = -10194)`;
/// [`UnexpectedEof`] is `(kEctSocket, kEctSocketShutdown)`; [`Status`] is
/// `(kEctHttp, status)`.
///
/// [`BadStatusLine`]: HttpError::BadStatusLine
/// [`UnexpectedEof`]: HttpError::UnexpectedEof
/// [`Status`]: HttpError::Status
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The status line is not `HTTP/1.0` or `HTTP/1.1`, a space, three digits
    /// (100 or more) and an optional reason.
    #[error("malformed HTTP status line")]
    BadStatusLine,
    /// A header line is malformed, or the framing headers are unusable.
    #[error("malformed HTTP header: {0}")]
    BadHeader(&'static str),
    /// The head (or a chunked body's trailer section) exceeded its limit.
    #[error("HTTP head larger than {limit} bytes")]
    HeadTooLarge {
        /// [`HttpLimits::max_head_len`].
        limit: usize,
    },
    /// The interim (1xx) responses before the final one exceeded, together,
    /// the head limit (a server that keeps sending `100 Continue`).
    #[error("interim (1xx) HTTP responses larger than {limit} bytes together")]
    InterimTooLarge {
        /// [`HttpLimits::max_head_len`].
        limit: usize,
    },
    /// The head has more header fields than allowed.
    #[error("more than {limit} HTTP header fields")]
    TooManyHeaders {
        /// [`HttpLimits::max_headers`].
        limit: usize,
    },
    /// The body is, or was declared to be, larger than allowed.
    #[error("HTTP body of {len} bytes exceeds the {limit}-byte limit")]
    BodyTooLarge {
        /// The declared length (`Content-Length`, or the chunk sizes so far);
        /// `limit + 1` for a close-delimited body.
        len: u64,
        /// [`HttpLimits::max_body_len`].
        limit: usize,
    },
    /// The chunked framing is malformed.
    #[error("malformed HTTP chunked body: {0}")]
    BadChunk(&'static str),
    /// `Content-Length` is not a decimal number, overflows, or appears with
    /// different values.
    #[error("invalid HTTP Content-Length")]
    BadContentLength,
    /// The connection closed before the response was complete.
    #[error("connection closed before the HTTP response was complete")]
    UnexpectedEof,
    /// The response is complete but its status is not 200.
    #[error("HTTP status {0}")]
    Status(u16),
    /// A caller error: [`ResponseParser::finish_eof`] after the response was
    /// already returned.
    #[error("the HTTP response was already returned")]
    AlreadyComplete,
}

/// Parses one whole response already in memory (`data` is everything the
/// peer sent before closing): [`ResponseParser::feed`] then, if needed,
/// [`ResponseParser::finish_eof`].
///
/// ```
/// use stn_proto::codec::http::{decode_response, HttpError, HttpLimits};
///
/// let r = decode_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
///                         HttpLimits::default()).unwrap();
/// assert_eq!(r.body, &b"hi"[..]);
/// assert_eq!(decode_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhi", HttpLimits::default()),
///            Err(HttpError::UnexpectedEof));
/// ```
pub fn decode_response(data: &[u8], limits: HttpLimits) -> Result<HttpResponse, HttpError> {
    let mut parser = ResponseParser::new(limits);
    match parser.feed(data)? {
        Progress::Complete(response) => Ok(response),
        Progress::Partial | Progress::AfterEnd => parser.finish_eof(),
    }
}
