//! The error a [`Client::send`](crate::Client::send) ends with, and the I/O
//! errors behind it.
//!
//! The engine's errors ([`stn_proto::Error`]) are plain values: a
//! refused connect is `ConnectError::Refused`, whatever the OS said. The
//! driver sees the `io::Error` itself (the OS error, or the TLS library's
//! error for a failed handshake, with the `rustls::Error` inside) and keeps
//! the latest one per endpoint in a small table ([`Causes`]), so the
//! [`Error`] a task ends with carries the `io::Error` behind it as its
//! [`source`](std::error::Error::source).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use stn_proto::TaskId;
use stn_proto::{Config, SubmitError};
use stn_proto::{Error as ProtoError, LimitKind, TimeoutKind};

/// Why a task did not get a response.
///
/// ```
/// use stn_driver::Error;
/// use stn_driver::proto::{Error as ProtoError, TimeoutKind};
/// use stn_driver::proto::ConnectError;
///
/// let e = Error::from(ProtoError::Timeout(TimeoutKind::Task)).with_last_attempt(Some(
///     ProtoError::Connect { addr: Some("127.0.0.1:9".parse().unwrap()), error: ConnectError::Refused },
/// ));
/// assert_eq!(
///     e.to_string(),
///     "task timed out; last attempt: could not connect to 127.0.0.1:9: connection refused"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The task ran and failed: the engine's typed error (Mars error
    /// families: local, dial, socket, timeout, HTTP status, protocol, decode,
    /// rejected by a limit, cancelled), with what else the driver knows.
    Task {
        /// How the task ended.
        error: ProtoError,
        /// What its last attempt ran into, when the task ended another way:
        /// a task whose deadline passed after retries or while parked
        /// ([`TimeoutKind::Task`](stn_proto::TimeoutKind::Task)) says
        /// here that its connects were refused, say.
        last_attempt: Option<ProtoError>,
        /// The I/O error behind `error` (or `last_attempt`), when the driver
        /// saw one: the OS error of a refused or reset connection, the TLS
        /// library's error of a failed handshake. Also the
        /// [`source`](std::error::Error::source).
        io: Option<IoCause>,
        /// For a rejection by an anti-avalanche limit: the configured
        /// numbers and how to opt out.
        detail: Option<Arc<str>>,
    },
    /// The engine refused the task before it got an id (invalid task, no
    /// long link configured, queue full).
    Refused(SubmitError),
    /// The client was shut down (or its driver is gone) before the task ended.
    Shutdown,
}

impl Error {
    /// The engine's error, if the task ran and failed.
    pub fn task_error(&self) -> Option<&stn_proto::Error> {
        match self {
            Error::Task { error, .. } => Some(error),
            _ => None,
        }
    }

    /// What the last attempt ran into, if the task ended another way
    /// (see [`Error::Task`]).
    pub fn last_attempt(&self) -> Option<&stn_proto::Error> {
        match self {
            Error::Task { last_attempt, .. } => last_attempt.as_ref(),
            _ => None,
        }
    }

    /// The I/O error behind the failure, if the driver saw one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Task { io: Some(io), .. } => Some(io.get()),
            _ => None,
        }
    }

    /// The TLS library's error behind a failed handshake or a TLS failure
    /// on an open connection, if that is what happened.
    pub fn tls_error(&self) -> Option<&rustls::Error> {
        self.io_error()?.get_ref()?.downcast_ref::<rustls::Error>()
    }

    /// The same error with `last` as its last attempt's cause (ignored
    /// unless this is [`Error::Task`]).
    #[must_use]
    pub fn with_last_attempt(mut self, last: Option<ProtoError>) -> Self {
        if let Error::Task { last_attempt, .. } = &mut self {
            *last_attempt = last;
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Task {
                error,
                last_attempt,
                detail,
                ..
            } => {
                write!(f, "{error}")?;
                if let Some(detail) = detail {
                    write!(f, ": {detail}")?;
                }
                if let Some(last) = last_attempt {
                    write!(f, "; last attempt: {last}")?;
                }
                Ok(())
            }
            Error::Refused(e) => write!(f, "task refused: {e}"),
            Error::Shutdown => f.write_str("the client is shut down"),
        }
    }
}

impl std::error::Error for Error {
    /// The `io::Error` behind the failure if the driver saw one, else the
    /// engine error's own source (an invalid task's [`TaskError`](stn_proto::TaskError)).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Task { io: Some(io), .. } => Some(io.get()),
            Error::Task { error, .. } => error.source(),
            Error::Refused(e) => e.source(),
            Error::Shutdown => None,
        }
    }
}

impl From<stn_proto::Error> for Error {
    fn from(e: stn_proto::Error) -> Self {
        match e {
            stn_proto::Error::Shutdown => Error::Shutdown,
            error => Error::Task {
                error,
                last_attempt: None,
                io: None,
                detail: None,
            },
        }
    }
}

impl From<SubmitError> for Error {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::ShutDown => Error::Shutdown,
            other => Error::Refused(other),
        }
    }
}

/// An `io::Error` kept beside an engine error: shared (errors are `Clone`)
/// and compared by kind and message (`io::Error` has no `PartialEq`).
#[derive(Clone, Debug)]
pub struct IoCause(Arc<io::Error>);

impl IoCause {
    /// Keeps `e`.
    pub fn new(e: io::Error) -> Self {
        IoCause(Arc::new(e))
    }

    /// The error.
    pub fn get(&self) -> &io::Error {
        &self.0
    }

    /// Its kind.
    pub fn kind(&self) -> io::ErrorKind {
        self.0.kind()
    }
}

impl PartialEq for IoCause {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for IoCause {}

impl fmt::Display for IoCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Most endpoints whose last I/O error is kept (the engine races at most a
/// few candidates per task; an app with more endpoints than this loses the
/// oldest causes, never memory).
const MAX_ENDPOINT_CAUSES: usize = 256;

/// The latest I/O error per endpoint, and each running task's latest failed
/// attempt (from the engine's per-attempt reports): what the driver needs to
/// say what happened when a task ends. Bounded: endpoints up to
/// [`MAX_ENDPOINT_CAUSES`], tasks by the engine's own cap (the driver notes
/// only tasks it is waiting for, and forgets one when it ends).
#[derive(Debug, Default)]
pub(crate) struct Causes {
    by_endpoint: BTreeMap<SocketAddr, IoCause>,
    attempts: BTreeMap<TaskId, LastAttempt>,
}

/// A task's latest failed attempt.
#[derive(Debug, Default)]
struct LastAttempt {
    /// Its error, unless it only ran out of the task's time (then the
    /// attempt before it says more).
    error: Option<ProtoError>,
    /// The endpoint that carried it, if a connection was made.
    endpoint: Option<SocketAddr>,
}

impl Causes {
    /// A connect to, or a connection with, `addr` failed with `e` (or, with
    /// `None`, ended or connected without an I/O error: an older error no
    /// longer describes it).
    pub(crate) fn note_endpoint(&mut self, addr: SocketAddr, e: Option<io::Error>) {
        match e {
            Some(e) => {
                if self.by_endpoint.len() >= MAX_ENDPOINT_CAUSES
                    && !self.by_endpoint.contains_key(&addr)
                {
                    self.by_endpoint.pop_first();
                }
                self.by_endpoint.insert(addr, IoCause::new(e));
            }
            None => {
                self.by_endpoint.remove(&addr);
            }
        }
    }

    /// Task `id`'s latest attempt ran on `endpoint` (if a connection was
    /// made) and failed with `error` (`None`: it succeeded). "Timed out" at
    /// the task's deadline does not replace a real cause: the refusal
    /// before it says more.
    pub(crate) fn note_attempt(
        &mut self,
        id: TaskId,
        endpoint: Option<SocketAddr>,
        error: Option<&ProtoError>,
    ) {
        let last = self.attempts.entry(id).or_default();
        match error {
            Some(ProtoError::Timeout(TimeoutKind::Task)) if last.error.is_some() => {}
            Some(e) => {
                last.error = Some(e.clone());
                last.endpoint = endpoint;
            }
            None => *last = LastAttempt::default(),
        }
    }

    /// Forgets task `id` (it ended).
    pub(crate) fn forget(&mut self, id: TaskId) {
        self.attempts.remove(&id);
    }

    /// The error task `id` ends with: the engine's `error`, its last
    /// attempt's cause when that differs, the I/O error behind them and,
    /// for a limit, what the limit is (from `config`). Forgets the task.
    pub(crate) fn finish(&mut self, id: TaskId, error: ProtoError, config: &Config) -> Error {
        let last = self.attempts.remove(&id).unwrap_or_default();
        let attempt_addr = last.endpoint;
        let last_attempt = last.error.filter(|e| *e != error);
        let deciding = last_attempt.as_ref().unwrap_or(&error);
        let addr = match deciding {
            ProtoError::Connect { addr, .. } => *addr,
            ProtoError::Socket(_) | ProtoError::Protocol(_) => attempt_addr,
            _ => None,
        };
        let io = addr.and_then(|a| self.by_endpoint.get(&a).cloned());
        let detail = match &error {
            ProtoError::Rejected(kind) => Some(limit_detail(*kind, config)),
            _ => None,
        };
        match Error::from(error) {
            Error::Task { error, .. } => Error::Task {
                error,
                last_attempt,
                io,
                detail,
            },
            other => other,
        }
    }
}

/// What a limit that rejected a task is, with its configured numbers.
fn limit_detail(kind: LimitKind, config: &Config) -> Arc<str> {
    let text = match kind {
        LimitKind::Frequency => {
            let f = &config.limits().frequency;
            format!(
                "the same body was sent more than {} times since the frequency table was last \
                 cleared (every {} min; a body sent {}+ times in the last {} min stays, its \
                 count capped at {}); Config::limits.frequency holds these numbers",
                f.max_count,
                f.clear_interval.as_secs() / 60,
                f.keep_min_count,
                f.keep_window.as_secs() / 60,
                f.keep_count_cap,
            )
        }
        LimitKind::Flow => {
            let f = &config.limits().flow;
            format!(
                "more than {} bytes of requests on a mobile network (the bucket drains {} B/s \
                 while the app is active, {} B/s otherwise); Config::limits.flow holds these \
                 numbers",
                f.capacity, f.active_drain_per_sec, f.inactive_drain_per_sec,
            )
        }
    };
    text.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use stn_proto::ConnectError;

    #[test]
    fn shutdowns_fold_into_one_variant() {
        assert_eq!(Error::from(ProtoError::Shutdown), Error::Shutdown);
        assert_eq!(Error::from(SubmitError::ShutDown), Error::Shutdown);
        assert_eq!(
            Error::from(SubmitError::QueueFull),
            Error::Refused(SubmitError::QueueFull)
        );
        let t = Error::from(ProtoError::Timeout(TimeoutKind::FirstPacket));
        assert_eq!(
            t.task_error(),
            Some(&ProtoError::Timeout(TimeoutKind::FirstPacket))
        );
    }

    fn refused(port: u16) -> (SocketAddr, ProtoError) {
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let error = ProtoError::Connect {
            addr: Some(addr),
            error: ConnectError::Refused,
        };
        (addr, error)
    }

    #[test]
    fn a_timeout_names_its_last_attempt_and_keeps_the_io_error() {
        let mut causes = Causes::default();
        let (addr, last) = refused(9);
        causes.note_endpoint(
            addr,
            Some(io::Error::from(io::ErrorKind::ConnectionRefused)),
        );
        let id = TaskId::new(7);
        // Refused, refused, then the deadline stops the last replay.
        causes.note_attempt(id, None, Some(&last));
        causes.note_attempt(id, None, Some(&last));
        causes.note_attempt(id, None, Some(&ProtoError::Timeout(TimeoutKind::Task)));
        let e = causes.finish(
            id,
            ProtoError::Timeout(TimeoutKind::Task),
            &Config::default(),
        );
        assert_eq!(
            e.to_string(),
            "task timed out; last attempt: could not connect to 127.0.0.1:9: connection refused"
        );
        assert_eq!(e.last_attempt(), Some(&last));
        let io = e.source().and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(
            io.map(io::Error::kind),
            Some(io::ErrorKind::ConnectionRefused)
        );
        assert_eq!(
            e.io_error().map(io::Error::kind),
            Some(io::ErrorKind::ConnectionRefused)
        );
    }

    #[test]
    fn a_later_clean_close_forgets_the_endpoints_old_error() {
        let mut causes = Causes::default();
        let (addr, error) = refused(9);
        causes.note_endpoint(
            addr,
            Some(io::Error::from(io::ErrorKind::ConnectionRefused)),
        );
        causes.note_endpoint(addr, None);
        let id = TaskId::new(1);
        causes.note_attempt(id, None, Some(&error));
        let e = causes.finish(id, error, &Config::default());
        assert!(e.io_error().is_none() && e.source().is_none());
        // The attempt's own error is the outcome: no separate last attempt.
        assert_eq!(e.last_attempt(), None);
        assert!(causes.attempts.is_empty(), "forgotten");
    }

    #[test]
    fn the_table_stays_bounded() {
        let mut causes = Causes::default();
        for port in 0..(MAX_ENDPOINT_CAUSES as u16 * 2) {
            causes.note_endpoint(refused(port).0, Some(io::Error::other("x")));
        }
        assert_eq!(causes.by_endpoint.len(), MAX_ENDPOINT_CAUSES);
    }

    #[test]
    fn a_limit_rejection_says_which_limit_its_numbers_and_the_opt_out() {
        let mut causes = Causes::default();
        let e = causes.finish(
            TaskId::new(1),
            ProtoError::Rejected(LimitKind::Frequency),
            &Config::default(),
        );
        let text = e.to_string();
        for part in [
            "frequency limit",
            "more than 105 times",
            "every 60 min",
            "Task::limit_frequency(false)",
        ] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
        let e = causes.finish(
            TaskId::new(2),
            ProtoError::Rejected(LimitKind::Flow),
            &Config::default(),
        );
        let text = e.to_string();
        for part in ["flow limit", "83886080 bytes", "Task::limit_flow(false)"] {
            assert!(text.contains(part), "{part:?} in {text}");
        }
    }
}
