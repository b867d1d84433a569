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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use std::time::Duration;

use stn_proto::{Channel, Config, HttpReply, SubmitError, TaskId};
use stn_proto::{DnsError, ErrorFamily, LocalError, SocketError, TlsFailure};
use stn_proto::{Error as ProtoError, LimitKind, Report, TimeoutKind};

/// Why a task did not get a response.
///
/// Ask it what kind of failure it is with [`kind`](Self::kind) (or
/// [`is_timeout`](Self::is_timeout), [`is_connect`](Self::is_connect),
/// [`is_dns`](Self::is_dns), [`is_tls`](Self::is_tls),
/// [`is_http`](Self::is_http)), which look through a task timeout to what its
/// last attempt ran into; [`status`](Self::status) and
/// [`http_reply`](Self::http_reply) give a non-200 reply, [`addr`](Self::addr)
/// the endpoint, [`is_retryable`](Self::is_retryable) whether sending again
/// may help under the client's profile. `docs/errors.md` lists every error.
///
/// ```
/// use stn_driver::{Error, ErrorKind};
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
/// // The deadline ended it; a refused connect is why.
/// assert_eq!(e.kind(), ErrorKind::Connect);
/// assert!(e.is_connect() && !e.is_timeout());
/// assert_eq!(e.addr(), Some("127.0.0.1:9".parse().unwrap()));
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
        /// library's error of a failed handshake, the resolver's error of a
        /// name that did not resolve. Also the
        /// [`source`](std::error::Error::source).
        io: Option<IoCause>,
        /// For a rejection by an anti-avalanche limit: the configured
        /// numbers and how to opt out.
        detail: Option<Arc<str>>,
        /// Where the attempt that decided the failure ran, and what stopped
        /// it (see [`Attempt`]).
        attempt: Option<Box<Attempt>>,
        /// Whether sending the task again may help, under the client's
        /// profile ([`Error::is_retryable`]).
        retryable: bool,
    },
    /// The engine refused the task before it got an id (invalid task, no
    /// long or short link configured for it, queue full).
    Refused(SubmitError),
    /// The client was shut down (or its driver is gone) before the task ended.
    Shutdown,
}

/// The attempt behind a task's failure (its last failed attempt), from the
/// engine's per-attempt [`Report`](stn_proto::Report).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// The link it used.
    pub channel: Channel,
    /// The endpoint that carried it, if a connection was made.
    pub endpoint: Option<SocketAddr>,
    /// The value of its timer that fired (first packet, packet gap,
    /// read-write, long poll), if one did.
    pub timeout: Option<Duration>,
    /// A short-link reply with a status other than 200: status, headers, body.
    pub http_reply: Option<HttpReply>,
}

impl Attempt {
    /// The attempt an engine report describes.
    pub(crate) fn of(r: &Report) -> Self {
        Attempt {
            channel: r.channel,
            endpoint: r.endpoint,
            timeout: r.timeout,
            http_reply: r.http_reply.clone(),
        }
    }
}

/// What kind of failure an [`Error`] is ([`Error::kind`]).
///
/// A task that ran out of time after failed attempts is of its last
/// attempt's kind (refused connects: [`Connect`](Self::Connect)); only a
/// timeout with no other cause is [`Timeout`](Self::Timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A deadline passed: an attempt's timer (first packet, packet gap,
    /// read-write, long poll, heartbeat, connect), or the task's own with no
    /// other cause.
    Timeout,
    /// No connection could be made (refused, reset, unreachable, the OS or
    /// stn gave up on the connect).
    Connect,
    /// A host name did not resolve, or nothing was left to connect to.
    Dns,
    /// A TLS handshake failed, or TLS failed on an open connection.
    Tls,
    /// The server answered with a status other than 200 ([`Error::status`]).
    Http,
    /// An open connection closed, reset or failed to write mid-exchange.
    Socket,
    /// The reply broke the HTTP or long-link framing, or exceeded a cap.
    Protocol,
    /// The app's judge could not decode the reply.
    Decode,
    /// An anti-avalanche limit (frequency or flow) refused the task.
    Limit,
    /// A local decision ended the task: no network, the long link is
    /// unavailable or disabled, an attempt interrupted by a network change.
    Local,
    /// The task was cancelled (its `send` dropped, `clear_tasks`).
    Cancelled,
    /// The engine did not take the task: it breaks a rule (the message names
    /// it), needs a link the client has not configured, or the queue is full.
    Refused,
    /// The client is shut down.
    Shutdown,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::Dns => "dns",
            ErrorKind::Tls => "tls",
            ErrorKind::Http => "http",
            ErrorKind::Socket => "socket",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Decode => "decode",
            ErrorKind::Limit => "limit",
            ErrorKind::Local => "local",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Refused => "refused",
            ErrorKind::Shutdown => "shutdown",
        })
    }
}

impl ErrorKind {
    /// The kind of an engine error.
    pub fn of(e: &ProtoError) -> Self {
        match e {
            ProtoError::Local(LocalError::InvalidTask(_)) => ErrorKind::Refused,
            ProtoError::Local(_) => ErrorKind::Local,
            ProtoError::Rejected(_) => ErrorKind::Limit,
            ProtoError::Dns(_) => ErrorKind::Dns,
            _ if tls_failure_of(e).is_some() => ErrorKind::Tls,
            ProtoError::Connect { .. } => ErrorKind::Connect,
            ProtoError::Socket(_) => ErrorKind::Socket,
            ProtoError::Timeout(_) => ErrorKind::Timeout,
            ProtoError::Http { .. } => ErrorKind::Http,
            ProtoError::Protocol(_) => ErrorKind::Protocol,
            ProtoError::Decode => ErrorKind::Decode,
            ProtoError::Cancelled => ErrorKind::Cancelled,
            ProtoError::Shutdown => ErrorKind::Shutdown,
            // Engine errors added later than this driver: their own family
            // says what they are nearest to.
            _ => match e.family() {
                ErrorFamily::Dial => ErrorKind::Connect,
                ErrorFamily::Socket => ErrorKind::Socket,
                ErrorFamily::Timeout => ErrorKind::Timeout,
                ErrorFamily::Dns => ErrorKind::Dns,
                ErrorFamily::Protocol => ErrorKind::Protocol,
                _ => ErrorKind::Local,
            },
        }
    }
}

/// The TLS failure inside an engine error, if it is one.
pub(crate) fn tls_failure_of(e: &ProtoError) -> Option<TlsFailure> {
    match e {
        ProtoError::Connect { error, .. } => error.tls_failure(),
        ProtoError::Socket(SocketError::Tls(f)) => Some(*f),
        _ => None,
    }
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

    /// The engine error that says why: the last attempt's, when the task
    /// ended another way (its deadline), else the task's own.
    pub fn cause(&self) -> Option<&stn_proto::Error> {
        self.last_attempt().or_else(|| self.task_error())
    }

    /// What kind of failure this is, looking through a task timeout to what
    /// its last attempt ran into.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Task { .. } => self.cause().map_or(ErrorKind::Local, ErrorKind::of),
            Error::Refused(SubmitError::ShutDown) | Error::Shutdown => ErrorKind::Shutdown,
            Error::Refused(_) => ErrorKind::Refused,
        }
    }

    /// A deadline passed with no other cause: an attempt's timer (the
    /// long link's first-packet timeout, say), or the task's own deadline
    /// before any attempt failed otherwise.
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout
    }

    /// No connection could be made (refused, reset, unreachable, timed out
    /// connecting), TLS aside ([`is_tls`](Self::is_tls)).
    pub fn is_connect(&self) -> bool {
        self.kind() == ErrorKind::Connect
    }

    /// A host name did not resolve (the resolver's error is the
    /// [`source`](std::error::Error::source)), or no address was left.
    pub fn is_dns(&self) -> bool {
        self.kind() == ErrorKind::Dns
    }

    /// A TLS handshake failed, or TLS failed on an open connection.
    pub fn is_tls(&self) -> bool {
        self.kind() == ErrorKind::Tls
    }

    /// The server answered with a status other than 200.
    pub fn is_http(&self) -> bool {
        self.kind() == ErrorKind::Http
    }

    /// The HTTP status of a non-200 reply.
    pub fn status(&self) -> Option<u16> {
        match self.cause()? {
            ProtoError::Http { status } => Some(*status),
            _ => None,
        }
    }

    /// A non-200 reply's status, headers and body.
    pub fn http_reply(&self) -> Option<&HttpReply> {
        self.attempt()?.http_reply.as_ref()
    }

    /// The endpoint involved: the address a failed connect went to, else
    /// the endpoint that carried the failed attempt.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self.cause() {
            Some(ProtoError::Connect {
                addr: Some(addr), ..
            }) => Some(*addr),
            _ => self.attempt()?.endpoint,
        }
    }

    /// The value of the attempt's timer that fired, for a timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.attempt()?.timeout
    }

    /// The attempt behind the failure, if one ran.
    pub fn attempt(&self) -> Option<&Attempt> {
        match self {
            Error::Task { attempt, .. } => attempt.as_deref(),
            _ => None,
        }
    }

    /// Whether sending the task again may help: a failure of the network
    /// or the server (under the client's profile's HTTP rule: under `stn` a
    /// 4xx other than 408 and 429 is not retried, under the Mars profiles
    /// every status is), a full queue; not an invalid task, a limit, a
    /// decode failure, a cancel or a shutdown.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Task { retryable, .. } => *retryable,
            Error::Refused(e) => matches!(e, SubmitError::QueueFull),
            Error::Shutdown => false,
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
    #[cfg(feature = "tls")]
    pub fn tls_error(&self) -> Option<&rustls::Error> {
        self.io_error()?.get_ref()?.downcast_ref::<rustls::Error>()
    }

    /// What the proxy answered, if a connect through the client's proxy
    /// ([`Builder::proxy`](crate::Builder::proxy)) is what failed: which
    /// proxy, the tunnel asked for, the typed failure and the proxy's
    /// status line.
    pub fn proxy_error(&self) -> Option<&crate::proxy::ProxyError> {
        self.io_error()?.get_ref()?.downcast_ref()
    }

    /// The same error with `last` as its last attempt's cause (ignored
    /// unless this is [`Error::Task`]).
    #[must_use]
    pub fn with_last_attempt(mut self, last: Option<ProtoError>) -> Self {
        if let Error::Task {
            last_attempt,
            retryable,
            ..
        } = &mut self
        {
            if let Some(last) = &last {
                *retryable = last.is_retryable();
            }
            *last_attempt = last;
        }
        self
    }
}

/// What an attempt's context adds to its error's message: the timer's
/// value, the endpoint (unless the error names it) and the link.
struct Context<'a>(&'a ProtoError, &'a Attempt);

impl fmt::Display for Context<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Context(error, attempt) = *self;
        let mut parts: Vec<String> = Vec::with_capacity(3);
        if let Some(t) = attempt.timeout {
            parts.push(format!("after {}", duration_text(t)));
        }
        let names_addr = matches!(error, ProtoError::Connect { addr: Some(_), .. });
        if let (Some(addr), false) = (attempt.endpoint, names_addr) {
            parts.push(format!("from {addr}"));
        }
        // The link says which one waited or answered; with neither an
        // endpoint nor a timer to name, it adds nothing.
        if parts.is_empty() {
            return Ok(());
        }
        parts.push(match attempt.channel {
            Channel::Long => "long link".to_owned(),
            _ => "short link".to_owned(),
        });
        write!(f, " ({})", parts.join(", "))
    }
}

/// A duration as a person reads it: `250 ms`, `12 s`, `3.51 s`.
pub(crate) fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Task {
                error,
                last_attempt,
                detail,
                attempt,
                ..
            } => {
                write!(f, "{error}")?;
                if let (None, Some(a)) = (last_attempt, attempt) {
                    write!(f, "{}", Context(error, a))?;
                }
                if let Some(detail) = detail {
                    write!(f, ": {detail}")?;
                }
                if let Some(last) = last_attempt {
                    write!(f, "; last attempt: {last}")?;
                    if let Some(a) = attempt {
                        write!(f, "{}", Context(last, a))?;
                    }
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
    /// The engine's error alone; retryable by the status-blind rule
    /// ([`stn_proto::Error::is_retryable`]).
    fn from(e: stn_proto::Error) -> Self {
        match e {
            stn_proto::Error::Shutdown => Error::Shutdown,
            error => Error::Task {
                retryable: error.is_retryable(),
                error,
                last_attempt: None,
                io: None,
                detail: None,
                attempt: None,
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
/// oldest causes, never memory). Also the most host names whose failed
/// lookup is kept.
const MAX_ENDPOINT_CAUSES: usize = 256;

/// The latest I/O error per endpoint, the latest failed lookup per host, and
/// each running task's latest failed attempt (from the engine's per-attempt
/// reports): what the driver needs to say what happened when a task ends.
/// Bounded: endpoints and hosts up to [`MAX_ENDPOINT_CAUSES`], tasks by the
/// engine's own cap (the driver notes only tasks it is waiting for, and
/// forgets one when it ends).
#[derive(Debug, Default)]
pub(crate) struct Causes {
    by_endpoint: BTreeMap<SocketAddr, IoCause>,
    /// Hosts whose last lookup failed, with the resolver's error.
    lookups_failed: BTreeMap<String, IoCause>,
    /// Hosts being looked up now.
    resolving: BTreeSet<String>,
    attempts: BTreeMap<TaskId, LastAttempt>,
    /// The host a task names itself ([`Task::host`](stn_proto::Task::host)),
    /// for the few that do.
    task_hosts: BTreeMap<TaskId, String>,
}

/// A task's latest failed attempt.
#[derive(Debug, Default)]
struct LastAttempt {
    /// Its error, unless it only ran out of the task's time (then the
    /// attempt before it says more).
    error: Option<ProtoError>,
    /// Where it ran and what stopped it.
    attempt: Option<Attempt>,
}

impl Causes {
    /// A connect to, or a connection with, `addr` failed with `e` (or, with
    /// `None`, ended or connected without an I/O error: an older error no
    /// longer describes it).
    pub(crate) fn note_endpoint(&mut self, addr: SocketAddr, e: Option<io::Error>) {
        match e {
            Some(e) => bounded_insert(&mut self.by_endpoint, addr, IoCause::new(e)),
            None => {
                self.by_endpoint.remove(&addr);
            }
        }
    }

    /// A lookup of `host` started.
    pub(crate) fn note_resolving(&mut self, host: &str) {
        if self.resolving.len() < MAX_ENDPOINT_CAUSES {
            self.resolving.insert(host.to_owned());
        }
    }

    /// The lookup of `host` ended: with the resolver's error, or (`None`)
    /// with addresses.
    pub(crate) fn note_resolved(&mut self, host: &str, e: Option<io::Error>) {
        self.resolving.remove(host);
        match e {
            Some(e) => bounded_insert(&mut self.lookups_failed, host.to_owned(), IoCause::new(e)),
            None => {
                self.lookups_failed.remove(host);
            }
        }
    }

    /// Task `id` names its own host.
    pub(crate) fn note_task_host(&mut self, id: TaskId, host: String) {
        self.task_hosts.insert(id, host);
    }

    /// Task `id`'s attempt, `attempt`, ended with `error` (`None`: it
    /// succeeded). "Timed out" at the task's deadline does not replace a
    /// real cause: the refusal before it says more. A success forgets the
    /// failures before it.
    pub(crate) fn note_attempt(
        &mut self,
        id: TaskId,
        error: Option<&ProtoError>,
        attempt: Attempt,
    ) {
        let last = self.attempts.entry(id).or_default();
        match error {
            Some(ProtoError::Timeout(TimeoutKind::Task)) if last.error.is_some() => {}
            Some(e) => {
                last.error = Some(e.clone());
                last.attempt = Some(attempt);
            }
            None => *last = LastAttempt::default(),
        }
    }

    /// Forgets task `id` (it ended).
    pub(crate) fn forget(&mut self, id: TaskId) {
        self.attempts.remove(&id);
        self.task_hosts.remove(&id);
    }

    /// The error task `id` ends with: the engine's `error`, its last
    /// attempt's cause when that differs, where that attempt ran, the I/O
    /// error behind them and, for a limit, what the limit is (from
    /// `config`). "No addresses" after a lookup that failed (or never
    /// answered) is that lookup's failure, with the resolver's error.
    /// Forgets the task.
    pub(crate) fn finish(&mut self, id: TaskId, error: ProtoError, config: &Config) -> Error {
        let last = self.attempts.remove(&id).unwrap_or_default();
        let task_host = self.task_hosts.remove(&id);
        let from_last_attempt = last.error.as_ref() == Some(&error);
        let mut last_attempt = last.error.filter(|e| *e != error);
        let mut error = error;
        let no_addresses = ProtoError::Dns(DnsError::NoCandidates);
        let mut dns_io = None;
        if error == no_addresses || last_attempt.as_ref() == Some(&no_addresses) {
            if let Some((host, io)) = self.lookup_failure(task_host.as_deref(), config) {
                let failed = ProtoError::Dns(DnsError::ResolveFailed { host });
                for e in std::iter::once(&mut error).chain(last_attempt.as_mut()) {
                    if *e == no_addresses {
                        e.clone_from(&failed);
                    }
                }
                dns_io = Some(io);
            }
        }
        // The attempt's context belongs to the error it decided.
        let attempt = (from_last_attempt || last_attempt.is_some())
            .then_some(last.attempt)
            .flatten()
            .map(Box::new);
        let deciding = last_attempt.as_ref().unwrap_or(&error);
        let addr = match deciding {
            ProtoError::Connect { addr, .. } => *addr,
            ProtoError::Socket(_) | ProtoError::Protocol(_) => {
                attempt.as_ref().and_then(|a| a.endpoint)
            }
            _ => None,
        };
        let io = dns_io.or_else(|| addr.and_then(|a| self.by_endpoint.get(&a).cloned()));
        let retryable = match deciding {
            ProtoError::Http { status } => config.http_retry().retries(*status),
            other => other.is_retryable(),
        };
        let detail = match &error {
            ProtoError::Rejected(kind) => Some(limit_detail(*kind, config)),
            ProtoError::Connect { .. } => proxy_detail(io.as_ref()),
            _ => None,
        };
        match Error::from(error) {
            Error::Task { error, .. } => Error::Task {
                error,
                last_attempt,
                io,
                detail,
                attempt,
                retryable,
            },
            other => other,
        }
    }

    /// The host whose lookup left a task without addresses, and why: its
    /// own host, else the first configured host whose last lookup failed or
    /// is still unanswered (the engine stopped waiting for it).
    fn lookup_failure(
        &self,
        task_host: Option<&str>,
        config: &Config,
    ) -> Option<(String, IoCause)> {
        let configured = || {
            let short = config.short_link();
            let long = config
                .long_link()
                .map(|l| l.hosts.as_slice())
                .unwrap_or(&[]);
            short
                .hosts
                .iter()
                .chain(short.host_ports.iter().map(|(h, _)| h))
                .chain(long)
                .map(String::as_str)
                .collect::<Vec<_>>()
        };
        let hosts = match task_host {
            Some(h) => vec![h],
            None => configured(),
        };
        hosts.into_iter().find_map(|h| {
            if let Some(io) = self.lookups_failed.get(h) {
                return Some((h.to_owned(), io.clone()));
            }
            self.resolving.contains(h).then(|| {
                let e = io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the resolver did not answer within the resolve timeout",
                );
                (h.to_owned(), IoCause::new(e))
            })
        })
    }
}

/// Inserts into a table of at most [`MAX_ENDPOINT_CAUSES`] entries, dropping
/// the first (lowest) key when a new one would not fit.
fn bounded_insert<K: Ord>(map: &mut BTreeMap<K, IoCause>, key: K, value: IoCause) {
    if map.len() >= MAX_ENDPOINT_CAUSES && !map.contains_key(&key) {
        map.pop_first();
    }
    map.insert(key, value);
}

/// For a connect through a proxy that failed: which proxy and tunnel.
fn proxy_detail(io: Option<&IoCause>) -> Option<Arc<str>> {
    let proxy = io?
        .get()
        .get_ref()?
        .downcast_ref::<crate::proxy::ProxyError>()?;
    Some(format!("proxy {}, asked for {}", proxy.proxy, proxy.target).into())
}

/// What a limit that rejected a task is, with its configured numbers.
fn limit_detail(kind: LimitKind, config: &Config) -> Arc<str> {
    let text = match kind {
        LimitKind::Frequency => {
            let f = &config.limits().frequency;
            format!(
                "the same request body was sent more than {} times since the frequency table \
                 was last cleared (every {} min; a body sent {}+ times in the last {} min stays, \
                 its count capped at {}); the limit applies under every profile, and \
                 Config::limits.frequency holds these numbers",
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

    /// A short-link attempt on `endpoint` (if it connected).
    fn short(endpoint: Option<SocketAddr>) -> Attempt {
        Attempt {
            channel: Channel::Short,
            endpoint,
            timeout: None,
            http_reply: None,
        }
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
        causes.note_attempt(id, Some(&last), short(None));
        causes.note_attempt(id, Some(&last), short(None));
        causes.note_attempt(
            id,
            Some(&ProtoError::Timeout(TimeoutKind::Task)),
            short(None),
        );
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
        causes.note_attempt(id, Some(&error), short(None));
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

    #[test]
    fn a_timeout_names_the_timer_its_value_the_endpoint_and_the_link() {
        let mut causes = Causes::default();
        let id = TaskId::new(3);
        let addr: SocketAddr = "127.0.0.1:18081".parse().unwrap();
        let first_packet = ProtoError::Timeout(TimeoutKind::FirstPacket);
        let attempt = Attempt {
            channel: Channel::Long,
            endpoint: Some(addr),
            timeout: Some(Duration::from_secs(12)),
            http_reply: None,
        };
        causes.note_attempt(id, Some(&first_packet), attempt);
        let e = causes.finish(id, first_packet, &Config::default());
        assert_eq!(
            e.to_string(),
            "no reply within the first-packet timeout (after 12 s, from 127.0.0.1:18081, long link)"
        );
        assert!(e.is_timeout() && e.is_retryable());
        assert_eq!(e.addr(), Some(addr));
        assert_eq!(e.timeout(), Some(Duration::from_secs(12)));
        assert_eq!(e.kind(), ErrorKind::Timeout);
    }

    #[test]
    fn a_non_200_keeps_its_reply_and_retries_by_the_profiles_rule() {
        use stn_proto::{Headers, Profile};
        let addr: SocketAddr = "127.0.0.1:18080".parse().unwrap();
        let reply = HttpReply {
            status: 404,
            headers: Headers::from(vec![("Content-Type".into(), "text/plain".into())]),
            body: bytes::Bytes::from_static(b"no such cgi"),
        };
        for (profile, retryable) in [(Profile::Stn, false), (Profile::Mars, true)] {
            let mut causes = Causes::default();
            let id = TaskId::new(1);
            let http = ProtoError::Http { status: 404 };
            let attempt = Attempt {
                http_reply: Some(reply.clone()),
                ..short(Some(addr))
            };
            causes.note_attempt(id, Some(&http), attempt);
            let e = causes.finish(id, http, &Config::for_profile(profile));
            assert!(e.is_http(), "{e}");
            assert_eq!(e.status(), Some(404));
            assert_eq!(e.is_retryable(), retryable, "{profile:?}");
            let kept = e.http_reply().expect("the reply");
            assert_eq!(kept.body, &b"no such cgi"[..]);
            assert_eq!(kept.headers.get("content-type"), Some("text/plain"));
            assert_eq!(
                e.to_string(),
                "server answered HTTP 404 (from 127.0.0.1:18080, short link)"
            );
        }
        // A 503 is worth another try under either profile.
        let e = Error::from(ProtoError::Http { status: 503 });
        assert!(e.is_retryable());
    }

    #[test]
    fn no_addresses_after_a_failed_lookup_is_that_lookups_failure() {
        let mut config = Config::default();
        config.short_link_mut().hosts = vec!["nosuch.invalid".into()];
        let mut causes = Causes::default();
        causes.note_resolving("nosuch.invalid");
        causes.note_resolved(
            "nosuch.invalid",
            Some(io::Error::other("Name or service not known")),
        );
        let id = TaskId::new(1);
        let none = ProtoError::Dns(DnsError::NoCandidates);
        causes.note_attempt(id, Some(&none), short(None));
        let e = causes.finish(id, none.clone(), &config);
        assert!(e.is_dns());
        assert_eq!(e.to_string(), "could not resolve nosuch.invalid");
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("Name or service not known")
        );
        // A lookup the engine stopped waiting for says so.
        let mut causes = Causes::default();
        causes.note_resolving("slow.example");
        let id = TaskId::new(2);
        causes.note_task_host(id, "slow.example".into());
        let e = causes.finish(id, none.clone(), &config);
        assert_eq!(e.to_string(), "could not resolve slow.example");
        assert_eq!(
            e.io_error().map(io::Error::kind),
            Some(io::ErrorKind::TimedOut)
        );
        // An answer that came forgets the failure: nothing to blame.
        let mut causes = Causes::default();
        causes.note_resolved("nosuch.invalid", Some(io::Error::other("x")));
        causes.note_resolved("nosuch.invalid", None);
        let e = causes.finish(TaskId::new(3), none.clone(), &config);
        assert_eq!(e.task_error(), Some(&none));
    }

    #[test]
    fn kinds_look_through_the_task_timeout() {
        let (_, refused) = refused(9);
        let timed_out = Error::from(ProtoError::Timeout(TimeoutKind::Task));
        assert_eq!(timed_out.kind(), ErrorKind::Timeout);
        assert!(!timed_out.is_retryable());
        let e = timed_out.with_last_attempt(Some(refused));
        assert_eq!(e.kind(), ErrorKind::Connect);
        assert!(e.is_retryable());
        let tls = ProtoError::Connect {
            addr: None,
            error: ConnectError::Tls(TlsFailure::UnknownIssuer),
        };
        assert!(Error::from(tls).is_tls());
        assert_eq!(
            Error::from(SubmitError::NoLongLink).kind(),
            ErrorKind::Refused
        );
        assert!(Error::from(SubmitError::QueueFull).is_retryable());
        assert_eq!(Error::Shutdown.kind(), ErrorKind::Shutdown);
        assert_eq!(duration_text(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration_text(Duration::from_millis(3512)), "3.51 s");
    }
}
