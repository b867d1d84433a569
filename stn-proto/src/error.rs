//! How a task can end: [`Response`] on success, otherwise an [`Error`] in one
//! of Mars's error families.
//!
//! Every submitted task ends exactly once with an [`Outcome`]. [`Error`] groups
//! failures the way Mars does (local, rejected by a limit, DNS, dial, socket,
//! timeout, HTTP status, protocol, decode, cancelled); [`Error::mars_code`]
//! gives the `(err_type, err_code)` pair Mars would report to `OnTaskEnd`, and
//! [`Error::is_retryable`] says whether an attempt failing this way may be
//! retried (Mars `__SingleRespHandle`).

use core::fmt;

use bytes::Bytes;

use crate::limit::LimitKind;
use crate::net::{ConnectError, SocketAddr};
use crate::task::TaskError;

/// Mars's `ErrCmdType` values and the error codes stn maps to
/// (`mars/stn/stn.h`). Kept as named constants so the mapping in
/// [`Error::mars_code`] reads like Mars's own source.
pub(crate) mod mars {
    #[cfg(test)]
    /// `kEctOK`.
    pub(crate) const ECT_OK: i32 = 0;
    /// `kEctDns`.
    pub(crate) const ECT_DNS: i32 = 3;
    /// `kEctSocket`.
    pub(crate) const ECT_SOCKET: i32 = 4;
    /// `kEctHttp`.
    pub(crate) const ECT_HTTP: i32 = 5;
    /// `kEctNetMsgXP` (long-link message exchange).
    pub(crate) const ECT_NET_MSG_XP: i32 = 6;
    /// `kEctEnDecode` (the app's Req2Buf/Buf2Resp).
    pub(crate) const ECT_EN_DECODE: i32 = 7;
    /// `kEctLocal`.
    pub(crate) const ECT_LOCAL: i32 = 9;

    /// `kEctLocalTaskTimeout`.
    pub(crate) const LOCAL_TASK_TIMEOUT: i32 = -1;
    /// `kEctLocalAntiAvalanche` (frequency or flow limit).
    pub(crate) const LOCAL_ANTI_AVALANCHE: i32 = -4;
    /// `kEctLocalNoNet`.
    pub(crate) const LOCAL_NO_NET: i32 = -6;
    /// `kEctLocalCancel`.
    pub(crate) const LOCAL_CANCEL: i32 = -7;
    /// `kEctLocalReset`.
    pub(crate) const LOCAL_RESET: i32 = -9;
    /// `kEctLocalLongLinkUnAvailable`.
    pub(crate) const LOCAL_LONG_LINK_UNAVAILABLE: i32 = -16;

    /// `kEctHttpFirstPkgTimeout` (and `kEctLongFirstPkgTimeout`).
    pub(crate) const FIRST_PKG_TIMEOUT: i32 = -500;
    /// `kEctHttpPkgPkgTimeout` (and `kEctLongPkgPkgTimeout`).
    pub(crate) const PKG_PKG_TIMEOUT: i32 = -501;
    /// `kEctHttpReadWriteTimeout` (and `kEctLongReadWriteTimeout`).
    pub(crate) const READ_WRITE_TIMEOUT: i32 = -502;
    /// `kEctHttpLongPollingTimeout`.
    pub(crate) const HTTP_LONG_POLLING_TIMEOUT: i32 = -503;

    /// `kEctSocketMakeSocketPrepared` (connect failed).
    pub(crate) const SOCKET_MAKE_SOCKET_PREPARED: i32 = -10087;
    /// `kEctSocketShutdown` (closed by the peer / EOF mid-response).
    pub(crate) const SOCKET_SHUTDOWN: i32 = -10090;
    /// `kEctSocketRecvErr` (read failed; also Mars's noop-timeout code).
    pub(crate) const SOCKET_RECV_ERR: i32 = -10091;
    /// `kEctSocketSendErr`.
    pub(crate) const SOCKET_SEND_ERR: i32 = -10092;
    /// `kEctHttpSplitHttpHeadAndBody` (bad header or body).
    pub(crate) const HTTP_SPLIT_HEAD_AND_BODY: i32 = -10194;
    /// `kEctHttpParseStatusLine`.
    pub(crate) const HTTP_PARSE_STATUS_LINE: i32 = -10195;
    /// `kEctNetMsgXPHandleBufferErr` (long-link frame could not be unpacked).
    pub(crate) const NET_MSG_XP_HANDLE_BUFFER_ERR: i32 = -10504;
    /// `kEctDnsMakeSocketPrepared` (no address to connect to).
    pub(crate) const DNS_MAKE_SOCKET_PREPARED: i32 = -10606;
}

/// A successful task: the server's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The reply body, still in the app's own framing (Mars hands it to `Buf2Resp`).
    pub body: Bytes,
    /// The HTTP status for a short-link reply (always 200 here: other statuses
    /// are [`Error::Http`]); `None` for the long link. Also `None` for a
    /// `send_only` task, which completes without a reply (empty body).
    pub status: Option<u16>,
    /// The reply frame's `cmdid` on the long link; the task's own `cmd_id` on
    /// the short link.
    pub cmd_id: u32,
    /// The HTTP reply's header fields (short link); empty on the long link,
    /// whose frames have none.
    pub headers: Headers,
}

/// The header fields of an HTTP reply, in the order received, names as the
/// server spelled them, values trimmed.
///
/// ```
/// use stn_proto::Headers;
/// let h = Headers::from(vec![("Content-Type".to_owned(), "text/plain".to_owned())]);
/// assert_eq!(h.get("content-type"), Some("text/plain"));
/// assert_eq!(h.iter().count(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
// Boxed: every task's outcome passes through the engine's outputs, which stay
// small (a thin pointer; a boxed slice is two words, and shrinking the
// parser's vector to one would reallocate it); the long link's replies have
// no headers and allocate nothing.
#[allow(clippy::box_collection)]
pub struct Headers(Option<Box<Vec<(String, String)>>>);

impl Headers {
    /// The first value of header `name`, compared ignoring ASCII case.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields()
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every `(name, value)`, in the order received.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields().iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.fields().len()
    }

    /// Whether there are none (always so on the long link).
    pub fn is_empty(&self) -> bool {
        self.fields().is_empty()
    }

    fn fields(&self) -> &[(String, String)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl From<Vec<(String, String)>> for Headers {
    fn from(fields: Vec<(String, String)>) -> Self {
        Headers((!fields.is_empty()).then(|| Box::new(fields)))
    }
}

/// A short-link reply whose status was not 200: what the server said with
/// its [`Error::Http`] (an error page, a JSON problem report), carried by
/// the attempt's [`Report::http_reply`](crate::Report::http_reply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// Its header fields.
    pub headers: Headers,
    /// Its body (de-chunked, within the exchange's body cap).
    pub body: Bytes,
}

/// How a task ended.
pub type Outcome = Result<Response, Error>;

/// The broad class of an [`Error`], for metrics and coarse handling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorFamily {
    /// Decided locally, nothing went wrong on the network ([`Error::Local`]).
    Local,
    /// Refused by an anti-avalanche limit ([`Error::Rejected`]).
    Rejected,
    /// Name resolution ([`Error::Dns`]).
    Dns,
    /// Establishing a connection ([`Error::Connect`]).
    Dial,
    /// An established connection failed ([`Error::Socket`]).
    Socket,
    /// A deadline passed ([`Error::Timeout`]).
    Timeout,
    /// The server answered with a non-200 status ([`Error::Http`]).
    Http,
    /// The bytes received made no sense ([`Error::Protocol`]).
    Protocol,
    /// The app could not decode the reply ([`Error::Decode`]).
    Decode,
    /// The task was cancelled or the engine shut down
    /// ([`Error::Cancelled`], [`Error::Shutdown`]).
    Cancelled,
}

/// A task refused or ended by a local decision.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// The task failed its checks at submission (Mars `kEctLocalTaskParam`,
    /// `kEctLocalChannelSelect` or `kEctLocalStartTaskFail`, see
    /// [`TaskError::mars_code`]).
    #[error("invalid task: {0}")]
    InvalidTask(#[from] TaskError),
    /// No network and the long link is down, for a
    /// [`network_status_sensitive`](crate::task::Task::network_status_sensitive)
    /// task (Mars `kEctLocalNoNet`).
    #[error("no network")]
    NoNetwork,
    /// The running attempt was abandoned because the network changed or all
    /// tasks were redone (Mars `kEctLocalCancel` with the default handling:
    /// the task is retried if it has retries left).
    #[error("attempt interrupted by a network change")]
    Interrupted,
    /// The task needs the long link and the long link is gone
    /// (Mars `kEctLocalLongLinkUnAvailable`).
    #[error("the long link is unavailable")]
    LongLinkUnavailable,
    /// The task can only use the long link and the app has disabled it
    /// ([`Engine::set_long_link_enabled`](crate::Engine::set_long_link_enabled)`(false)`;
    /// Mars `DisableLongLink`, reported with Mars's
    /// `kEctLocalLongLinkUnAvailable` code).
    #[error("the long link is disabled by the app (set_long_link_enabled(false))")]
    LongLinkDisabled,
    /// The task ran on a named long link and the app removed that link
    /// ([`Engine::remove_link`](crate::Engine::remove_link)) while the task
    /// was queued or in flight on it (reported with Mars's
    /// `kEctLocalLongLinkUnAvailable` code).
    #[error("the long link {link:?} was removed (remove_link) while the task was on it")]
    LinkRemoved {
        /// The link removed.
        link: crate::LinkName,
    },
}

/// Name resolution failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DnsError {
    /// The resolver gave no answer or an error for this host.
    #[error("could not resolve {host}")]
    ResolveFailed {
        /// The host name looked up.
        host: String,
    },
    /// Nothing to connect to: resolution and configuration left the
    /// candidate list empty (or every candidate was banned).
    #[error("no addresses to connect to")]
    NoCandidates,
}

/// An established connection failed during the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// The peer closed the connection (EOF) before the reply was complete.
    #[error("connection closed by the peer")]
    ClosedByPeer,
    /// The connection was reset (or reading failed) mid-exchange.
    #[error("connection reset during the exchange")]
    Reset,
    /// Writing the request failed.
    #[error("writing to the connection failed")]
    WriteFailed,
    /// TLS failed on the open connection (a fatal alert, a corrupt record).
    #[error("TLS failed during the exchange: {0}")]
    Tls(crate::tls::TlsFailure),
}

/// Which deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeoutKind {
    /// The whole task, all attempts included (Mars task timeout). Final.
    Task,
    /// No reply byte within the first-packet timeout.
    FirstPacket,
    /// Too long between two reply packets (Mars pkg-pkg timeout).
    PacketGap,
    /// The attempt's read-write budget ran out.
    ReadWrite,
    /// A long poll got no reply in time.
    LongPolling,
    /// The long link's heartbeat (noop) or identify reply did not arrive.
    Heartbeat,
    /// Connecting took too long (every racing attempt ran out of time).
    Connect,
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutKind::Task => "task timed out",
            TimeoutKind::FirstPacket => "no reply within the first-packet timeout",
            TimeoutKind::PacketGap => "too long a gap between reply packets",
            TimeoutKind::ReadWrite => "read-write timeout",
            TimeoutKind::LongPolling => "long poll timed out",
            TimeoutKind::Heartbeat => "heartbeat (noop) reply timed out",
            TimeoutKind::Connect => "connect timed out",
        })
    }
}

/// The bytes received broke the protocol. The codecs have their own, richer
/// error types and convert into this one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The HTTP status line could not be parsed.
    #[error("malformed HTTP status line")]
    BadStatusLine,
    /// An HTTP header could not be parsed.
    #[error("malformed HTTP header")]
    BadHeader,
    /// The HTTP head exceeded its size cap.
    #[error("HTTP head exceeds the size limit")]
    HeadTooLarge,
    /// The interim (1xx) responses before the final one exceeded the head
    /// size cap together.
    #[error("interim (1xx) HTTP responses exceed the head size limit")]
    InterimTooLarge,
    /// The HTTP body exceeded its size cap.
    #[error("HTTP body exceeds the size limit")]
    BodyTooLarge,
    /// Chunked transfer encoding was malformed.
    #[error("malformed chunked encoding")]
    BadChunk,
    /// A long-link frame header was malformed.
    #[error("malformed long-link frame header")]
    BadFrameHeader,
    /// A long-link frame carried a client version other than the configured one.
    #[error("long-link frame has the wrong client version")]
    VersionMismatch,
    /// A long-link frame exceeded its size cap.
    #[error("long-link frame exceeds the size limit")]
    FrameTooLarge,
    /// The connection ended in the middle of a reply.
    #[error("connection ended in the middle of a reply")]
    UnexpectedEof,
    /// Anything else, described.
    #[error("protocol error: {0}")]
    Other(String),
}

/// Why a task (or one attempt of it) failed.
///
/// ```
/// use stn_proto::{Error, ErrorFamily, TimeoutKind};
/// let e = Error::Timeout(TimeoutKind::FirstPacket);
/// assert_eq!(e.family(), ErrorFamily::Timeout);
/// assert_eq!(e.mars_code(), (5, -500)); // kEctHttp, kEctHttpFirstPkgTimeout
/// assert!(e.is_retryable());
/// assert!(!Error::Timeout(TimeoutKind::Task).is_retryable());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Refused or ended by a local decision.
    #[error(transparent)]
    Local(#[from] LocalError),
    /// Refused by an anti-avalanche limit.
    #[error("rejected by the {0}")]
    Rejected(LimitKind),
    /// Name resolution failed.
    #[error(transparent)]
    Dns(#[from] DnsError),
    /// Every connection candidate failed; the last one tried and its error.
    #[error("could not connect{}: {error}", at(.addr))]
    Connect {
        /// The last address tried, if any was.
        addr: Option<SocketAddr>,
        /// How that attempt failed.
        error: ConnectError,
    },
    /// An established connection failed mid-exchange.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// A deadline passed.
    #[error("{0}")]
    Timeout(TimeoutKind),
    /// The server answered with a status other than 200.
    #[error("server answered HTTP {status}")]
    Http {
        /// The status code.
        status: u16,
    },
    /// The reply broke the HTTP or long-link protocol.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The app could not decode the reply (or encode the request).
    #[error("the app could not decode the reply")]
    Decode,
    /// The caller cancelled the task.
    #[error("task cancelled")]
    Cancelled,
    /// The engine shut down before the task finished.
    #[error("engine shut down")]
    Shutdown,
}

/// A connect failure is an error in its own right (the engine wraps it in
/// [`Error::Connect`] with the address).
impl std::error::Error for ConnectError {}

/// How a connection ended, as an error for the apps that surface it.
impl std::error::Error for crate::io::CloseReason {}

/// A TLS failure is an error in its own right (inside
/// [`SocketError::Tls`] and [`ConnectError::tls`]).
impl std::error::Error for crate::tls::TlsFailure {}

fn at(addr: &Option<SocketAddr>) -> String {
    match addr {
        Some(a) => format!(" to {a}"),
        None => String::new(),
    }
}

impl From<TaskError> for Error {
    fn from(e: TaskError) -> Self {
        Error::Local(LocalError::InvalidTask(e))
    }
}

impl From<LimitKind> for Error {
    fn from(kind: LimitKind) -> Self {
        Error::Rejected(kind)
    }
}

impl From<TimeoutKind> for Error {
    fn from(kind: TimeoutKind) -> Self {
        Error::Timeout(kind)
    }
}

impl Error {
    /// The family this error belongs to.
    pub fn family(&self) -> ErrorFamily {
        match self {
            Error::Local(_) => ErrorFamily::Local,
            Error::Rejected(_) => ErrorFamily::Rejected,
            Error::Dns(_) => ErrorFamily::Dns,
            Error::Connect { .. } => ErrorFamily::Dial,
            Error::Socket(_) => ErrorFamily::Socket,
            Error::Timeout(_) => ErrorFamily::Timeout,
            Error::Http { .. } => ErrorFamily::Http,
            Error::Protocol(_) => ErrorFamily::Protocol,
            Error::Decode => ErrorFamily::Decode,
            Error::Cancelled | Error::Shutdown => ErrorFamily::Cancelled,
        }
    }

    /// The `(err_type, err_code)` pair Mars reports to `OnTaskEnd` for the
    /// same failure (constants in `mars`):
    ///
    /// | error | Mars |
    /// |---|---|
    /// | `Local(InvalidTask(e))` | `(kEctLocal 9, e.mars_code())`: -12 TaskParam, -5 ChannelSelect, -3 StartTaskFail |
    /// | `Local(NoNetwork)` | `(9, -6 NoNet)` |
    /// | `Local(Interrupted)` | `(9, -7 Cancel)` |
    /// | `Local(LongLinkUnavailable)` | `(9, -16 LongLinkUnAvailable)` |
    /// | `Rejected(_)` | `(9, -4 AntiAvalanche)` (both limits; Mars's -13 is unused there) |
    /// | `Dns(_)` | `(kEctDns 3, -10606 DnsMakeSocketPrepared)` |
    /// | `Connect { .. }` | `(kEctSocket 4, -10087 MakeSocketPrepared)` |
    /// | `Socket(ClosedByPeer)` | `(4, -10090 Shutdown)` |
    /// | `Socket(Reset)` | `(4, -10091 RecvErr)` (Mars may give the raw errno instead) |
    /// | `Socket(WriteFailed)` | `(4, -10092 SendErr)` |
    /// | `Timeout(Task)` | `(9, -1 TaskTimeout)` |
    /// | `Timeout(FirstPacket / PacketGap / ReadWrite)` | `(kEctHttp 5, -500 / -501 / -502)` |
    /// | `Timeout(LongPolling)` | `(5, -503 LongPollingTimeout)` |
    /// | `Timeout(Heartbeat)` | `(4, -10091 RecvErr)` (Mars's noop-timeout disconnect) |
    /// | `Timeout(Connect)` | `(4, -10087 MakeSocketPrepared)` |
    /// | `Http { status }` | `(5, status)` |
    /// | `Protocol(BadStatusLine)` | `(5, -10195 ParseStatusLine)` |
    /// | `Protocol(BadHeader / HeadTooLarge / InterimTooLarge / BodyTooLarge / BadChunk)` | `(5, -10194 SplitHttpHeadAndBody)` |
    /// | `Protocol(BadFrameHeader / VersionMismatch / FrameTooLarge / Other)` | `(kEctNetMsgXP 6, -10504 HandleBufferErr)` |
    /// | `Protocol(UnexpectedEof)` | `(4, -10090 Shutdown)` (Mars: EOF before the parser finished) |
    /// | `Decode` | `(kEctEnDecode 7, 0)` (Mars passes the app's own code, 0 unless set) |
    /// | `Cancelled` | `(9, -7 Cancel)` |
    /// | `Shutdown` | `(9, -9 Reset)` (Mars `Reset()` ends pending tasks so) |
    ///
    /// The per-attempt timeouts use the short-link (`kEctHttp`) pair; on the
    /// long link Mars reports the same code under `kEctNetMsgXP` (6).
    pub fn mars_code(&self) -> (i32, i32) {
        use mars::*;
        match self {
            Error::Local(local) => (
                ECT_LOCAL,
                match local {
                    LocalError::InvalidTask(e) => e.mars_code(),
                    LocalError::NoNetwork => LOCAL_NO_NET,
                    LocalError::Interrupted => LOCAL_CANCEL,
                    LocalError::LongLinkUnavailable
                    | LocalError::LongLinkDisabled
                    | LocalError::LinkRemoved { .. } => LOCAL_LONG_LINK_UNAVAILABLE,
                },
            ),
            Error::Rejected(_) => (ECT_LOCAL, LOCAL_ANTI_AVALANCHE),
            Error::Dns(_) => (ECT_DNS, DNS_MAKE_SOCKET_PREPARED),
            Error::Connect { .. } => (ECT_SOCKET, SOCKET_MAKE_SOCKET_PREPARED),
            Error::Socket(e) => (
                ECT_SOCKET,
                match e {
                    SocketError::ClosedByPeer => SOCKET_SHUTDOWN,
                    SocketError::Reset | SocketError::Tls(_) => SOCKET_RECV_ERR,
                    SocketError::WriteFailed => SOCKET_SEND_ERR,
                },
            ),
            Error::Timeout(kind) => match kind {
                TimeoutKind::Task => (ECT_LOCAL, LOCAL_TASK_TIMEOUT),
                TimeoutKind::FirstPacket => (ECT_HTTP, FIRST_PKG_TIMEOUT),
                TimeoutKind::PacketGap => (ECT_HTTP, PKG_PKG_TIMEOUT),
                TimeoutKind::ReadWrite => (ECT_HTTP, READ_WRITE_TIMEOUT),
                TimeoutKind::LongPolling => (ECT_HTTP, HTTP_LONG_POLLING_TIMEOUT),
                TimeoutKind::Heartbeat => (ECT_SOCKET, SOCKET_RECV_ERR),
                TimeoutKind::Connect => (ECT_SOCKET, SOCKET_MAKE_SOCKET_PREPARED),
            },
            Error::Http { status } => (ECT_HTTP, i32::from(*status)),
            Error::Protocol(e) => match e {
                ProtocolError::BadStatusLine => (ECT_HTTP, HTTP_PARSE_STATUS_LINE),
                ProtocolError::BadHeader
                | ProtocolError::HeadTooLarge
                | ProtocolError::InterimTooLarge
                | ProtocolError::BodyTooLarge
                | ProtocolError::BadChunk => (ECT_HTTP, HTTP_SPLIT_HEAD_AND_BODY),
                ProtocolError::BadFrameHeader
                | ProtocolError::VersionMismatch
                | ProtocolError::FrameTooLarge
                | ProtocolError::Other(_) => (ECT_NET_MSG_XP, NET_MSG_XP_HANDLE_BUFFER_ERR),
                ProtocolError::UnexpectedEof => (ECT_SOCKET, SOCKET_SHUTDOWN),
            },
            Error::Decode => (ECT_EN_DECODE, 0),
            Error::Cancelled => (ECT_LOCAL, LOCAL_CANCEL),
            Error::Shutdown => (ECT_LOCAL, LOCAL_RESET),
        }
    }

    /// Whether the attempt that failed this way may be retried, if the task
    /// has retries and time left (Mars `__SingleRespHandle`).
    ///
    /// Not retryable (the task ends): the task timeout, a cancel or shutdown,
    /// an anti-avalanche rejection, an invalid task, no network, an unavailable
    /// or disabled long link, and a decode failure (Mars's `TaskEnd` handling of
    /// `kEctEnDecode`). Retryable: every network failure — DNS, connect,
    /// socket, the per-attempt timeouts, non-200 HTTP statuses, protocol
    /// errors — and an attempt interrupted by a network change.
    ///
    /// The engine narrows the HTTP case with its
    /// [`Config::http_retry`](crate::engine::Config::http_retry) policy
    /// (under the stn profile a 404 is not retried); this method is the
    /// status-blind rule, Mars's.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Local(local) => matches!(local, LocalError::Interrupted),
            Error::Timeout(kind) => *kind != TimeoutKind::Task,
            Error::Dns(_)
            | Error::Connect { .. }
            | Error::Socket(_)
            | Error::Http { .. }
            | Error::Protocol(_) => true,
            Error::Rejected(_) | Error::Decode | Error::Cancelled | Error::Shutdown => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Channel, Task};
    use quickcheck::{Arbitrary, Gen, QuickCheck};

    /// One value of every variant (and sub-variant), with its expected Mars
    /// pair, family and retryability.
    fn table() -> Vec<(Error, (i32, i32), ErrorFamily, bool)> {
        use ErrorFamily as F;
        let addr: SocketAddr = "10.0.0.1:443".parse().unwrap_or_else(|_| unreachable!());
        vec![
            (
                TaskError::TooManyRetries { retry_count: 31 }.into(),
                (9, -12),
                F::Local,
                false,
            ),
            (
                TaskError::NoChannel {
                    requested: Channel::Long,
                }
                .into(),
                (9, -5),
                F::Local,
                false,
            ),
            (
                TaskError::SendOnlyNeedsLongLink.into(),
                (9, -3),
                F::Local,
                false,
            ),
            (LocalError::NoNetwork.into(), (9, -6), F::Local, false),
            (LocalError::Interrupted.into(), (9, -7), F::Local, true),
            (
                LocalError::LongLinkUnavailable.into(),
                (9, -16),
                F::Local,
                false,
            ),
            (
                LocalError::LongLinkDisabled.into(),
                (9, -16),
                F::Local,
                false,
            ),
            (
                LocalError::LinkRemoved {
                    link: crate::LinkName::new("push").unwrap(),
                }
                .into(),
                (9, -16),
                F::Local,
                false,
            ),
            (LimitKind::Frequency.into(), (9, -4), F::Rejected, false),
            (LimitKind::Flow.into(), (9, -4), F::Rejected, false),
            (
                DnsError::ResolveFailed {
                    host: "example.com".into(),
                }
                .into(),
                (3, -10606),
                F::Dns,
                true,
            ),
            (DnsError::NoCandidates.into(), (3, -10606), F::Dns, true),
            (
                Error::Connect {
                    addr: Some(addr),
                    error: ConnectError::Refused,
                },
                (4, -10087),
                F::Dial,
                true,
            ),
            (
                Error::Connect {
                    addr: None,
                    error: ConnectError::AttemptTimeout,
                },
                (4, -10087),
                F::Dial,
                true,
            ),
            (
                SocketError::ClosedByPeer.into(),
                (4, -10090),
                F::Socket,
                true,
            ),
            (SocketError::Reset.into(), (4, -10091), F::Socket, true),
            (
                SocketError::WriteFailed.into(),
                (4, -10092),
                F::Socket,
                true,
            ),
            (TimeoutKind::Task.into(), (9, -1), F::Timeout, false),
            (TimeoutKind::FirstPacket.into(), (5, -500), F::Timeout, true),
            (TimeoutKind::PacketGap.into(), (5, -501), F::Timeout, true),
            (TimeoutKind::ReadWrite.into(), (5, -502), F::Timeout, true),
            (TimeoutKind::LongPolling.into(), (5, -503), F::Timeout, true),
            (TimeoutKind::Heartbeat.into(), (4, -10091), F::Timeout, true),
            (TimeoutKind::Connect.into(), (4, -10087), F::Timeout, true),
            (Error::Http { status: 404 }, (5, 404), F::Http, true),
            (Error::Http { status: 503 }, (5, 503), F::Http, true),
            (
                ProtocolError::BadStatusLine.into(),
                (5, -10195),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::BadHeader.into(),
                (5, -10194),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::HeadTooLarge.into(),
                (5, -10194),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::BodyTooLarge.into(),
                (5, -10194),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::BadChunk.into(),
                (5, -10194),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::BadFrameHeader.into(),
                (6, -10504),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::VersionMismatch.into(),
                (6, -10504),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::FrameTooLarge.into(),
                (6, -10504),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::UnexpectedEof.into(),
                (4, -10090),
                F::Protocol,
                true,
            ),
            (
                ProtocolError::Other("odd".into()).into(),
                (6, -10504),
                F::Protocol,
                true,
            ),
            (Error::Decode, (7, 0), F::Decode, false),
            (Error::Cancelled, (9, -7), F::Cancelled, false),
            (Error::Shutdown, (9, -9), F::Cancelled, false),
        ]
    }

    #[test]
    fn mars_code_family_and_retry_for_every_variant() {
        for (error, code, family, retryable) in table() {
            assert_eq!(error.mars_code(), code, "mars_code of {error:?}");
            assert_eq!(error.family(), family, "family of {error:?}");
            assert_eq!(error.is_retryable(), retryable, "is_retryable of {error:?}");
        }
    }

    #[test]
    fn table_covers_every_family() {
        let families: std::collections::BTreeSet<_> =
            table().iter().map(|(e, ..)| e.family()).collect();
        assert_eq!(families.len(), 10);
    }

    #[test]
    fn no_error_claims_success() {
        for (error, ..) in table() {
            assert_ne!(error.mars_code().0, mars::ECT_OK, "{error:?}");
        }
    }

    #[test]
    fn invalid_task_converts_with_its_own_code() {
        let err = Task::new(0, "", "")
            .validate()
            .map_err(Error::from)
            .expect_err("task without a channel is invalid");
        assert_eq!(err.mars_code(), (9, -5));
        assert_eq!(err.family(), ErrorFamily::Local);
    }

    #[test]
    fn messages_are_clear() {
        let addr: SocketAddr = "10.0.0.1:443".parse().unwrap_or_else(|_| unreachable!());
        assert_eq!(
            Error::Connect {
                addr: Some(addr),
                error: ConnectError::Refused
            }
            .to_string(),
            "could not connect to 10.0.0.1:443: connection refused"
        );
        assert_eq!(
            Error::Connect {
                addr: None,
                error: ConnectError::TimedOut
            }
            .to_string(),
            "could not connect: connect timed out (OS)"
        );
        assert_eq!(
            Error::Http { status: 502 }.to_string(),
            "server answered HTTP 502"
        );
        assert_eq!(
            Error::from(TimeoutKind::PacketGap).to_string(),
            "too long a gap between reply packets"
        );
        assert_eq!(
            Error::from(LimitKind::Frequency).to_string(),
            "rejected by the frequency limit (too many identical request bodies; \
             opt out per task with Task::limit_frequency(false))"
        );
        assert_eq!(
            Error::from(TaskError::TooManyRetries { retry_count: 40 }).to_string(),
            "invalid task: retry count 40 exceeds the maximum of 30"
        );
        assert_eq!(
            Error::from(DnsError::ResolveFailed {
                host: "example.com".into()
            })
            .to_string(),
            "could not resolve example.com"
        );
        assert_eq!(
            Error::from(ProtocolError::Other("bad magic".into())).to_string(),
            "protocol error: bad magic"
        );
        // Every message is non-empty and has no trailing punctuation.
        for (error, ..) in table() {
            let msg = error.to_string();
            assert!(!msg.is_empty() && !msg.ends_with('.'), "{msg:?}");
        }
    }

    #[test]
    fn outcome_carries_the_response() {
        let ok: Outcome = Ok(Response {
            body: Bytes::from_static(b"hi"),
            status: Some(200),
            cmd_id: 7,
            headers: Headers::default(),
        });
        assert_eq!(ok.as_ref().map(|r| r.body.len()), Ok(2));
        let failed: Outcome = Err(Error::Cancelled);
        assert_eq!(failed.map_err(|e| e.family()), Err(ErrorFamily::Cancelled));
    }

    /// Picks any row of the table (quickcheck needs an owned, cloneable value).
    #[derive(Clone, Debug)]
    struct AnyError(Error);

    impl Arbitrary for AnyError {
        fn arbitrary(g: &mut Gen) -> Self {
            let rows = table();
            let i = usize::arbitrary(g) % rows.len();
            let mut e = rows[i].0.clone();
            if let Error::Http { status } = &mut e {
                *status = u16::arbitrary(g);
            }
            AnyError(e)
        }
    }

    #[test]
    fn quickcheck_retry_law() {
        // Final errors are exactly the local/limit/cancel/decode ones plus the
        // task timeout; network-family errors are always retryable.
        fn law(e: AnyError) -> bool {
            let e = e.0;
            let network = matches!(
                e.family(),
                ErrorFamily::Dns
                    | ErrorFamily::Dial
                    | ErrorFamily::Socket
                    | ErrorFamily::Http
                    | ErrorFamily::Protocol
            );
            let timeout_retry =
                e.family() == ErrorFamily::Timeout && e != Error::Timeout(TimeoutKind::Task);
            let interrupted = e == Error::Local(LocalError::Interrupted);
            e.is_retryable() == (network || timeout_retry || interrupted)
        }
        QuickCheck::new()
            .tests(500)
            .quickcheck(law as fn(AnyError) -> bool);
    }

    #[test]
    fn quickcheck_http_status_passes_through() {
        fn law(status: u16) -> bool {
            Error::Http { status }.mars_code() == (mars::ECT_HTTP, i32::from(status))
        }
        QuickCheck::new().quickcheck(law as fn(u16) -> bool);
    }
}
