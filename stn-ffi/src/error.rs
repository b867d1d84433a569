//! The one exception every call throws: [`StnError`], with a kind, the
//! message, the last attempt's cause, the HTTP status and the TLS failure
//! the Rust error carries.

use stn_tokio::proto;
use stn_tokio::proto::Error as ProtoError;

/// What kind of failure an [`StnError`] is. `docs/errors.md` lists every
/// error behind each kind and what to do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum ErrorKind {
    /// A deadline passed: the task's own, or an attempt's (first packet,
    /// packet gap, read-write, long poll, heartbeat, connect).
    Timeout,
    /// Every connection candidate failed (refused, reset, unreachable,
    /// the OS gave up).
    Connect,
    /// A host name did not resolve, or nothing was left to connect to.
    Dns,
    /// A TLS handshake failed, or TLS failed on an open connection
    /// ([`StnError::Failure::tls_failure`] says how).
    Tls,
    /// The server answered with a status other than 200
    /// ([`StnError::Failure::http_status`]).
    HttpStatus,
    /// An open connection closed, reset or failed to write mid-exchange.
    Socket,
    /// The reply broke the HTTP or long-link framing, or exceeded a cap.
    Protocol,
    /// The app's judge said the reply could not be decoded (or threw).
    Decode,
    /// Mars's anti-avalanche limits refused the task (frequency or flow);
    /// the message gives the configured numbers and how to opt out.
    Limit,
    /// A local decision ended the task: no network, the long link is
    /// unavailable or disabled by the app.
    Local,
    /// The task was cancelled: `clear_tasks`, or the caller's coroutine or
    /// asyncio task was cancelled.
    Cancelled,
    /// The client did not accept the task: it breaks a rule (the message
    /// names it), needs a link (long or short) none is configured for, or
    /// the queue is full.
    Refused,
    /// The client is shut down.
    Shutdown,
    /// The client configuration was refused (an endpoint, a port, TLS).
    Config,
    /// Ban history that is not a history this engine wrote.
    History,
    /// A call that cannot work where it was made: a blocking call from
    /// inside one of the client's own callbacks (it would wait for itself).
    Usage,
    /// A failure this version of the bindings has no kind for (the message
    /// says what it is).
    Other,
}

/// Why a TLS handshake or a TLS exchange failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum TlsFailure {
    /// The chain does not lead to a trusted root (a wrong CA).
    UnknownIssuer,
    /// The certificate is not valid for the name asked for.
    NameMismatch,
    /// The certificate expired or is not yet valid.
    Expired,
    /// No certificate in the chain has a pinned SPKI hash.
    PinMismatch,
    /// The certificate was rejected for another reason.
    BadCertificate,
    /// A plaintext server answered the ClientHello.
    NotTls,
    /// The server closed the connection during the handshake.
    ClosedInHandshake,
    /// The handshake did not finish within the handshake timeout.
    HandshakeTimeout,
    /// The server sent a fatal alert with this code (RFC 8446 §6).
    Alert {
        /// The alert's code (40 handshake failure, 80 internal error, …).
        code: u8,
    },
    /// No common version, cipher suite or ALPN protocol.
    Negotiation,
    /// The configured server name is not a DNS name or an IP.
    InvalidServerName,
    /// A corrupt or unexpected record, a decrypt failure.
    Protocol,
    /// A failure this version of the bindings has no name for.
    Other,
}

/// Mars's `(err_type, err_code)` pair for the failure, as Mars reports it to
/// `OnTaskEnd` (for apps whose servers or dashboards speak Mars's codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Record)]
pub struct MarsCode {
    /// Mars's `ErrCmdType` (`kEctLocal` 9, `kEctSocket` 4, `kEctHttp` 5, …).
    pub err_type: i32,
    /// The code within it (a status, `kEctLocalTaskTimeout` -1, …).
    pub err_code: i32,
}

/// The exception of every fallible call: one variant, [`Failure`](Self::Failure),
/// whose [`kind`](ErrorKind) says what happened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum StnError {
    /// A task, a configuration or a control call failed.
    #[error("{detail}")]
    Failure {
        /// What kind of failure.
        kind: ErrorKind,
        /// The whole story in one line, as the Rust error's `Display`
        /// says it ("task timed out; last attempt: could not connect to
        /// 127.0.0.1:9: connection refused").
        detail: String,
        /// What the task's last attempt ran into, when the task ended
        /// another way (its deadline passed after failed attempts).
        last_attempt: Option<String>,
        /// The kind of [`last_attempt`](Self::Failure::last_attempt).
        last_attempt_kind: Option<ErrorKind>,
        /// The HTTP status, for [`ErrorKind::HttpStatus`].
        http_status: Option<u16>,
        /// How TLS failed, for [`ErrorKind::Tls`] (or a last attempt's TLS
        /// failure).
        tls_failure: Option<TlsFailure>,
        /// The operating system's (or the TLS library's) words for the I/O
        /// error behind the failure, when there was one.
        os_error: Option<String>,
        /// Mars's codes for a task's failure (`None` for other calls).
        mars_code: Option<MarsCode>,
        /// Attempts the task made (0 for other calls).
        attempts: u32,
    },
}

impl StnError {
    /// An error of `kind` with only a message.
    pub(crate) fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        StnError::Failure {
            kind,
            detail: detail.into(),
            last_attempt: None,
            last_attempt_kind: None,
            http_status: None,
            tls_failure: None,
            os_error: None,
            mars_code: None,
            attempts: 0,
        }
    }

    /// The client is shut down.
    pub(crate) fn shutdown() -> Self {
        Self::new(ErrorKind::Shutdown, stn_tokio::Error::Shutdown.to_string())
    }

    /// Its kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StnError::Failure { kind, .. } => *kind,
        }
    }

    /// How a task sent through the Rust client ended without a response,
    /// after `attempts` attempts.
    pub(crate) fn from_task(error: &stn_tokio::Error, attempts: u32) -> Self {
        let task = error.task_error();
        let last = error.last_attempt();
        // The task's own kind; the Rust error's kind() (which looks through
        // a task timeout) is `last_attempt_kind` here.
        let kind = match task {
            Some(e) => kind_of(e),
            None => ErrorKind::from(error.kind()),
        };
        StnError::Failure {
            kind,
            detail: error.to_string(),
            last_attempt: last.map(ToString::to_string),
            last_attempt_kind: last.map(kind_of),
            http_status: error.status(),
            tls_failure: task
                .and_then(tls_failure_of)
                .or_else(|| last.and_then(tls_failure_of)),
            os_error: error.io_error().map(ToString::to_string),
            mars_code: task.map(|e| {
                let (err_type, err_code) = e.mars_code();
                MarsCode { err_type, err_code }
            }),
            attempts,
        }
    }
}

/// The kind of an engine error (the Rust client's [`stn_driver::ErrorKind`]).
pub(crate) fn kind_of(e: &ProtoError) -> ErrorKind {
    ErrorKind::from(stn_driver::ErrorKind::of(e))
}

impl From<stn_driver::ErrorKind> for ErrorKind {
    fn from(kind: stn_driver::ErrorKind) -> Self {
        use stn_driver::ErrorKind as K;
        match kind {
            K::Timeout => ErrorKind::Timeout,
            K::Connect => ErrorKind::Connect,
            K::Dns => ErrorKind::Dns,
            K::Tls => ErrorKind::Tls,
            K::Http => ErrorKind::HttpStatus,
            K::Socket => ErrorKind::Socket,
            K::Protocol => ErrorKind::Protocol,
            K::Decode => ErrorKind::Decode,
            K::Limit => ErrorKind::Limit,
            K::Local => ErrorKind::Local,
            K::Cancelled => ErrorKind::Cancelled,
            K::Refused => ErrorKind::Refused,
            K::Shutdown => ErrorKind::Shutdown,
            _ => ErrorKind::Other,
        }
    }
}

/// The TLS failure inside an engine error, if it is one.
fn tls_failure_of(e: &ProtoError) -> Option<TlsFailure> {
    let failure = match e {
        ProtoError::Connect { error, .. } => error.tls_failure(),
        ProtoError::Socket(proto::SocketError::Tls(f)) => Some(*f),
        _ => None,
    }?;
    Some(TlsFailure::from(failure))
}

impl From<proto::TlsFailure> for TlsFailure {
    fn from(f: proto::TlsFailure) -> Self {
        use proto::TlsFailure as F;
        match f {
            F::UnknownIssuer => TlsFailure::UnknownIssuer,
            F::NameMismatch => TlsFailure::NameMismatch,
            F::Expired => TlsFailure::Expired,
            F::PinMismatch => TlsFailure::PinMismatch,
            F::BadCertificate => TlsFailure::BadCertificate,
            F::NotTls => TlsFailure::NotTls,
            F::ClosedInHandshake => TlsFailure::ClosedInHandshake,
            F::HandshakeTimeout => TlsFailure::HandshakeTimeout,
            F::Alert(code) => TlsFailure::Alert { code },
            F::Negotiation => TlsFailure::Negotiation,
            F::InvalidServerName => TlsFailure::InvalidServerName,
            F::Protocol => TlsFailure::Protocol,
            _ => TlsFailure::Other,
        }
    }
}

impl From<stn_tokio::BuildError> for StnError {
    fn from(e: stn_tokio::BuildError) -> Self {
        StnError::new(ErrorKind::Config, e.to_string())
    }
}

#[cfg(feature = "tls")]
impl From<stn_tokio::tls::TlsConfigError> for StnError {
    fn from(e: stn_tokio::tls::TlsConfigError) -> Self {
        StnError::new(ErrorKind::Config, e.to_string())
    }
}

impl From<stn_driver::HistoryError> for StnError {
    fn from(e: stn_driver::HistoryError) -> Self {
        match e {
            stn_driver::HistoryError::Shutdown => StnError::shutdown(),
            other => StnError::new(ErrorKind::History, other.to_string()),
        }
    }
}
