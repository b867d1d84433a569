//! The reference server: the Mars sample protocol over real sockets, for
//! examples, tests and benchmarks.
//!
//! It listens on up to two TCP addresses:
//!
//! - **Long link** (Mars §5.1): 20-byte-header frames decoded with
//!   [`stn_proto::codec::longlink`], bounded by [`ServerConfig::max_frame_body`].
//!   Each received frame is answered by kind:
//!
//!   | received frame                         | answer                                                       |
//!   |----------------------------------------|--------------------------------------------------------------|
//!   | seq `0xFFFFFFFE` (identify, §5.4)      | same cmd id and seq, body [`identify_response_body`]`(req)`  |
//!   | cmd id 6 (noop / heartbeat, §5.3)      | cmd id 6, same seq, the request body echoed (normally empty) |
//!   | cmd id [`ServerConfig::hello_cmd_id`]  | same cmd id and seq, body [`hello_response_body`], after [`ServerConfig::delay`] |
//!   | anything else                          | nothing (logged at debug level, counted in [`Stats::unknown_frames`]) |
//!
//!   A frame that cannot be decoded (bad header length, wrong client
//!   version, a body over the cap) closes that connection with a log line.
//!   Server pushes are frames with seq 0: [`ServerHandle::push`] sends one to
//!   every connected long-link client, and [`ServerConfig::push_every`] sends
//!   one periodically.
//!
//! - **Short link** (Mars §6): HTTP/1.1. `POST` to one of
//!   [`ServerConfig::cgi_paths`] (default `/mars/hello2`) → `200` with
//!   `Content-Length` and [`hello_response_body`], after
//!   [`ServerConfig::delay`]. An unknown path → `404`; another method on a
//!   CGI path → `405`; a chunked request body → `411`; a head or body over
//!   the caps → `431` / `413`; a malformed request → `400` (a parse error
//!   closes the connection; a 404 or 405 keeps it open when the request
//!   allows keep-alive). `Connection: close` (or HTTP/1.0 without
//!   `keep-alive`) closes the connection after the response; otherwise it
//!   stays open for the next request until [`ServerConfig::idle_timeout`].
//!
//! Test faults ([`Fault`]) can be chosen per server and changed at run time
//! with [`ServerHandle::set_fault`].
//!
//! **Hostile clients** are bounded as a deployment would bound them: a
//! connection cap and a per-IP cap ([`ServerConfig::max_connections`],
//! [`ServerConfig::max_connections_per_ip`]), a deadline for a whole request
//! or frame ([`ServerConfig::request_timeout`]: slowloris), an idle timeout
//! on each link, a write timeout, TCP keepalive, output capped in bytes per
//! long link ([`ServerConfig::max_pending_output`]), and one byte budget for
//! everything buffered across all connections
//! ([`ServerConfig::buffer_budget`], [`Stats::buffered_bytes`]): when it is
//! full the server stops reading rather than growing. Refusals and accept
//! errors are logged once per period, not once per event. See
//! `docs/server-limits.md`.
//!
//! ```
//! use stn_server::{Server, ServerConfig};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::start(ServerConfig::default()).await?;
//! let mut conn = tokio::net::TcpStream::connect(server.short_addr().unwrap()).await?;
//! conn.write_all(b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi").await?;
//! let mut response = Vec::new();
//! conn.read_to_end(&mut response).await?;
//! assert!(response.starts_with(b"HTTP/1.1 200 OK\r\n"));
//! assert!(response.ends_with(b"\r\n\r\nhi")); // the default answer echoes the body
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod admission;
mod budget;
mod early_tls;
mod frames;
// The server's fuzz target bodies: only under cargo-fuzz's `cfg(fuzzing)` and in tests.
#[cfg(any(fuzzing, test))]
pub mod fuzzing;
mod inbuf;
mod listen;
mod long;
mod request;
mod short;
pub mod tls;

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use stn_proto::codec::longlink::{CodecConfig, Frame, DEFAULT_MAX_BODY, PUSH_SEQ};
use stn_proto::codec::{MarsCodec, SharedCodec};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use admission::{Admission, RateLimitedLog, Refusal, Slot};
use budget::Budget;
use request::RequestLimits;
use tls::ServerStream;

/// The Mars sample's hello command id (`kSayHello2` on Android).
pub const DEFAULT_HELLO_CMD_ID: u32 = 8;
/// Command id of the periodic pushes (the Mars sample's push-message cmd id).
pub const DEFAULT_PUSH_CMD_ID: u32 = 10001;
/// The Mars sample's short-link CGI path.
pub const DEFAULT_CGI_PATH: &str = "/mars/hello2";
/// What an identify response body starts with; the request body follows.
pub const IDENTIFY_OK_PREFIX: &[u8] = b"stn-identify-ok:";
/// The text a sized response body is made of, repeated and cut to size.
pub const GREETING: &[u8] = b"Hello from stn! ";
/// What [`Fault::Garbage`] sends instead of a response: on the long link its
/// first four bytes are a `head_length` of 0x47415242 (far over any cap); on
/// the short link it is a line that is no HTTP status line.
pub const GARBAGE: &[u8] = b"GARBAGE! this is not a response\r\n\r\n";

/// A misbehaviour for tests, applied by the whole server (see
/// [`ServerConfig::fault`] and [`ServerHandle::set_fault`]).
///
/// Except for `NeverRespond`, faults hit only the answers to *requests* (long
/// link hello frames, short-link CGI POSTs); noops and identify are still
/// answered, so a client sees a healthy link with a broken task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Behave.
    #[default]
    None,
    /// Accept, read everything, never write a byte (no noop echo, no
    /// identify answer, no response; pushes are still sent). The connection
    /// stays open until the client closes it, the server shuts down, or the
    /// client sends nothing for [`ServerConfig::idle_timeout`] (short link;
    /// the long link's idle timeout is
    /// [`ServerConfig::long_idle_timeout`]).
    NeverRespond,
    /// Write the first half of the response (at least one byte), stall
    /// briefly, then reset the connection (RST through `SO_LINGER` 0).
    ResetMidResponse,
    /// Send [`GARBAGE`] instead of the response, then answer nothing more on
    /// that connection and leave it open until the client closes it (or
    /// sends nothing for [`ServerConfig::idle_timeout`]).
    Garbage,
    /// Send a header announcing a huge body — long link: `body_length =
    /// 0xFFFFFFFF` with the request's cmd id and seq; short link: `200` with
    /// `Content-Length: 1099511627776` (1 TiB) — and no body, then answer
    /// nothing more and leave the connection open until the client closes it
    /// (or sends nothing for [`ServerConfig::idle_timeout`]).
    OversizeLength,
}

impl Fault {
    const ALL: [Fault; 5] = [
        Fault::None,
        Fault::NeverRespond,
        Fault::ResetMidResponse,
        Fault::Garbage,
        Fault::OversizeLength,
    ];

    fn to_u8(self) -> u8 {
        match self {
            Fault::None => 0,
            Fault::NeverRespond => 1,
            Fault::ResetMidResponse => 2,
            Fault::Garbage => 3,
            Fault::OversizeLength => 4,
        }
    }

    fn from_u8(v: u8) -> Fault {
        Fault::ALL.get(usize::from(v)).copied().unwrap_or_default()
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::None => "none",
            Fault::NeverRespond => "never-respond",
            Fault::ResetMidResponse => "reset-mid-response",
            Fault::Garbage => "garbage",
            Fault::OversizeLength => "oversize-length",
        })
    }
}

impl std::str::FromStr for Fault {
    type Err = String;

    /// Parses the [`Display`](fmt::Display) names (`none`, `never-respond`,
    /// `reset-mid-response`, `garbage`, `oversize-length`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Fault::ALL
            .into_iter()
            .find(|f| f.to_string() == s)
            .ok_or_else(|| {
                format!("unknown fault {s:?}: expected none, never-respond, reset-mid-response, garbage or oversize-length")
            })
    }
}

/// Everything the server can be told. [`Default`] listens on
/// `127.0.0.1:0` for both links and behaves like the Mars sample server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Long-link listen address (port 0: any free port); `None`: no long link.
    pub long_addr: Option<SocketAddr>,
    /// Short-link (HTTP) listen address; `None`: no short link.
    pub short_addr: Option<SocketAddr>,
    /// Processing delay before each hello / CGI response (not before noop or
    /// identify answers). Requests on one long link are delayed
    /// independently, so concurrent requests are answered concurrently.
    pub delay: Duration,
    /// Size of each hello / CGI response body: `None` echoes the request
    /// body; `Some(n)` sends `n` bytes of [`GREETING`] repeated. See
    /// [`hello_response_body`].
    pub response_size: Option<usize>,
    /// Command id answered as hello on the long link.
    pub hello_cmd_id: u32,
    /// Command id of periodic pushes ([`push_every`](Self::push_every)).
    pub push_cmd_id: u32,
    /// Push a frame (cmd id [`push_cmd_id`](Self::push_cmd_id), seq 0, body
    /// `push <n>` with `n` counting from 1) to every long-link client at this
    /// interval.
    pub push_every: Option<Duration>,
    /// Long-link client version: written into every frame; received frames
    /// with another value close the connection (Mars §5.1). A setting of
    /// the default codec (Mars's 20-byte header); a
    /// [`long_link_codec`](Self::long_link_codec) has its own.
    pub client_version: u32,
    /// The long-link frame format: `None` (the default) is Mars's 20-byte
    /// header with [`client_version`](Self::client_version); `Some` serves a
    /// deployment's own packer, the same
    /// [`LongLinkCodec`](stn_proto::codec::LongLinkCodec) its clients use.
    /// The codec also says which frames are noops (echoed with its
    /// `noop_response`). Bodies stay capped by
    /// [`max_frame_body`](Self::max_frame_body) whatever the codec.
    pub long_link_codec: Option<SharedCodec>,
    /// Largest long-link frame body accepted; a header announcing more closes
    /// the connection before any of the body is read.
    pub max_frame_body: usize,
    /// CGI paths answered on the short link (exact match, query ignored).
    pub cgi_paths: Vec<String>,
    /// Largest HTTP request head (request line, headers, empty line).
    pub max_http_head: usize,
    /// Most HTTP request header fields.
    pub max_http_headers: usize,
    /// Largest HTTP request body (`Content-Length`).
    pub max_http_body: usize,
    /// How long a short-link connection may sit without sending a byte while
    /// the server waits for a request; also advertised as `Keep-Alive:
    /// timeout=<secs>` on kept-alive responses, and the longest the server
    /// waits for a client to close after a fault that answers nothing more.
    /// Default 60 s.
    pub idle_timeout: Duration,
    /// Deadline for a whole request from its first byte: on the short link
    /// the head and body (a request not complete by then gets `408` and the
    /// connection closes), on the long link one frame (the connection
    /// closes). A peer trickling a byte every few seconds (slowloris) is cut
    /// off here, however often it sends. Default 30 s.
    pub request_timeout: Duration,
    /// The long-link heartbeat interval clients keep (Mars
    /// `MinHeartInterval`, 3.5 min, the default); see
    /// [`idle_heartbeats`](Self::idle_heartbeats).
    pub heartbeat_interval: Duration,
    /// A long link with no complete frame for this many
    /// [`heartbeat_interval`](Self::heartbeat_interval)s is closed (its
    /// client is gone, or idles without heartbeats). Default 2 (7 min).
    pub idle_heartbeats: u32,
    /// A write (a response, a push) that cannot finish within this resets
    /// the connection: its peer does not read, or is gone. Default 30 s.
    pub write_timeout: Duration,
    /// TCP keepalive on accepted sockets: idle time before the first probe
    /// (`None`: off). Reaps peers that vanished without a FIN or RST. Default
    /// 60 s.
    pub keepalive_idle: Option<Duration>,
    /// Time between keepalive probes. Default 10 s.
    pub keepalive_interval: Duration,
    /// Unanswered keepalive probes before the kernel drops the connection.
    /// Default 3 (a dead peer is reaped about 90 s after its last packet).
    pub keepalive_probes: u32,
    /// Most connections open at once, both links together; past it a new
    /// connection is reset at once (rate-limited log line, counted in
    /// [`Stats::connections_refused`]). Default 10,000.
    pub max_connections: usize,
    /// Most connections open at once from one IP address, both links
    /// together; refused like [`max_connections`](Self::max_connections).
    /// Default 512 (mobile carriers put many users behind one address).
    pub max_connections_per_ip: usize,
    /// Listen backlog of each listener (the kernel caps it at
    /// `net.core.somaxconn`). Default 1,024.
    pub listen_backlog: u32,
    /// Bytes of output one long-link connection may hold: delayed replies
    /// and queued pushes. At the cap the server stops reading that client
    /// until replies leave, and drops pushes to it (with a log line).
    /// Default 2 MiB.
    pub max_pending_output: usize,
    /// Bytes the server may buffer across all connections: read buffers,
    /// delayed replies, queued pushes, responses being written. When it is
    /// full the server stops reading rather than growing: growing a buffer
    /// past 16 KiB is allowed only below three quarters of it, so the last
    /// quarter stays for small requests. Read buffers are allocated only
    /// when a socket has data, and freed when empty. Output already decided
    /// may exceed it by one reply per connection. See [`Stats::buffered_bytes`].
    /// Default 64 MiB.
    pub buffer_budget: usize,
    /// The fault to start with.
    pub fault: Fault,
    /// TLS on both links (rustls; [`tls::server_config`] makes one from PEM
    /// files, [`tls::ServerTls::new`] wraps it). `None`: plaintext.
    pub tls: Option<tls::ServerTls>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        ServerConfig {
            long_addr: Some(loopback),
            short_addr: Some(loopback),
            delay: Duration::ZERO,
            response_size: None,
            hello_cmd_id: DEFAULT_HELLO_CMD_ID,
            push_cmd_id: DEFAULT_PUSH_CMD_ID,
            push_every: None,
            client_version: 0,
            long_link_codec: None,
            max_frame_body: DEFAULT_MAX_BODY,
            cgi_paths: vec![DEFAULT_CGI_PATH.to_owned()],
            max_http_head: 16 * 1024,
            max_http_headers: 64,
            max_http_body: 1024 * 1024,
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            heartbeat_interval: Duration::from_millis(210_000),
            idle_heartbeats: 2,
            write_timeout: Duration::from_secs(30),
            keepalive_idle: Some(Duration::from_secs(60)),
            keepalive_interval: Duration::from_secs(10),
            keepalive_probes: 3,
            max_connections: 10_000,
            max_connections_per_ip: 512,
            listen_backlog: 1024,
            max_pending_output: 2 * 1024 * 1024,
            buffer_budget: 64 * 1024 * 1024,
            fault: Fault::None,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// The long-link codec in use: [`long_link_codec`](Self::long_link_codec),
    /// or Mars's header with [`client_version`](Self::client_version).
    fn frame_codec(&self) -> SharedCodec {
        self.long_link_codec.clone().unwrap_or_else(|| {
            SharedCodec::new(MarsCodec::new(CodecConfig {
                client_version: self.client_version,
                max_body_len: self.max_frame_body,
                ..CodecConfig::default()
            }))
        })
    }

    /// How long a long link may go without a complete frame:
    /// [`heartbeat_interval`](Self::heartbeat_interval) ×
    /// [`idle_heartbeats`](Self::idle_heartbeats).
    pub fn long_idle_timeout(&self) -> Duration {
        self.heartbeat_interval.saturating_mul(self.idle_heartbeats)
    }

    /// The largest message a connection must be able to buffer whole: a
    /// long-link frame or a short-link request, whichever link is served.
    fn largest_message(&self) -> usize {
        let frame = self.long_addr.map_or(0, |_| {
            frames::max_frame(self.frame_codec().get(), self.max_frame_body)
        });
        let request = self
            .short_addr
            .map_or(0, |_| self.max_http_head.saturating_add(self.max_http_body));
        frame.max(request)
    }

    fn validate(&self) -> Result<(), ServerError> {
        let check = |ok: bool, why: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(ServerError::Config(why))
            }
        };
        check(
            self.long_addr.is_some() || self.short_addr.is_some(),
            "neither long_addr nor short_addr is set",
        )?;
        check(
            self.cgi_paths.iter().all(|p| p.starts_with('/')),
            "every CGI path must start with '/'",
        )?;
        check(
            self.max_http_head > 0 && self.max_http_headers > 0,
            "HTTP head caps must be positive",
        )?;
        check(
            self.push_every != Some(Duration::ZERO),
            "push_every must be positive",
        )?;
        for (d, why) in [
            (self.idle_timeout, "idle_timeout must be positive"),
            (self.request_timeout, "request_timeout must be positive"),
            (self.write_timeout, "write_timeout must be positive"),
            (
                self.long_idle_timeout(),
                "heartbeat_interval and idle_heartbeats must be positive",
            ),
        ] {
            check(!d.is_zero(), why)?;
        }
        check(
            self.keepalive_idle != Some(Duration::ZERO)
                && !self.keepalive_interval.is_zero()
                && self.keepalive_probes > 0,
            "keepalive idle time, interval and probes must be positive",
        )?;
        check(
            self.max_connections > 0 && self.max_connections_per_ip > 0 && self.listen_backlog > 0,
            "max_connections, max_connections_per_ip and listen_backlog must be positive",
        )?;
        check(
            self.max_pending_output > 0,
            "max_pending_output must be positive",
        )?;
        // Large buffers may use three quarters of the budget: the largest
        // message must fit there, or it could never be read.
        check(
            self.largest_message() <= self.buffer_budget - self.buffer_budget / 4,
            "buffer_budget must be at least 4/3 of the largest frame or request (max_frame_body, max_http_head + max_http_body)",
        )
    }

    fn request_limits(&self) -> RequestLimits {
        RequestLimits {
            max_head_len: self.max_http_head,
            max_headers: self.max_http_headers,
            max_body_len: self.max_http_body,
        }
    }
}

/// The body of a hello (long link) or CGI (short link) response: the request
/// body when `response_size` is `None`, else `response_size` bytes of
/// [`GREETING`] repeated (`"Hello from stn! Hello from stn! Hel"` for 35).
pub fn hello_response_body(request_body: &[u8], response_size: Option<usize>) -> Bytes {
    match response_size {
        None => Bytes::copy_from_slice(request_body),
        Some(n) => GREETING.iter().copied().cycle().take(n).collect(),
    }
}

/// The body of an identify response: [`IDENTIFY_OK_PREFIX`] followed by the
/// identify request's body, so a client can check the answer is for the
/// buffer it sent.
pub fn identify_response_body(request_body: &[u8]) -> Bytes {
    let mut body = BytesMut::with_capacity(IDENTIFY_OK_PREFIX.len() + request_body.len());
    body.extend_from_slice(IDENTIFY_OK_PREFIX);
    body.extend_from_slice(request_body);
    body.freeze()
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding a listener failed.
    // The OS error is the source, not part of this message: printing the
    // chain (anyhow, `stn serve`) then names it once.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The configuration cannot work.
    #[error("invalid server configuration: {0}")]
    Config(&'static str),
}

/// A snapshot of the server's counters ([`ServerHandle::stats`]). All counts
/// are totals since start, except the `*_open` ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Long-link connections accepted.
    pub long_connections: u64,
    /// Long-link connections open now.
    pub long_connections_open: u64,
    /// Short-link connections accepted.
    pub short_connections: u64,
    /// Long-link frames received and decoded.
    pub frames_received: u64,
    /// Noops echoed.
    pub noops_answered: u64,
    /// Identify requests answered.
    pub identifies_answered: u64,
    /// Hello frames answered (queued for writing, after the delay).
    pub long_requests_served: u64,
    /// Short-link requests answered with 200.
    pub short_requests_served: u64,
    /// Short-link requests answered with an error status.
    pub short_error_responses: u64,
    /// Long-link frames with a cmd id the server does not answer.
    pub unknown_frames: u64,
    /// Push frames queued (one per connection per push).
    pub pushes_sent: u64,
    /// Connections closed for a protocol error (bad frame, bad request).
    pub protocol_errors: u64,
    /// Requests (long link: frames) answered with a [`Fault`] instead of a
    /// proper response, or left unanswered by [`Fault::NeverRespond`].
    pub faults_injected: u64,
    /// Short-link connections open now.
    pub short_connections_open: u64,
    /// Connections reset at accept by [`ServerConfig::max_connections`] or
    /// [`ServerConfig::max_connections_per_ip`].
    pub connections_refused: u64,
    /// Accept calls that failed (out of descriptors and the like).
    pub accept_errors: u64,
    /// Long links closed for sending no frame for the idle timeout.
    pub idle_closes: u64,
    /// Connections closed because a request or frame did not complete
    /// within [`ServerConfig::request_timeout`].
    pub deadline_closes: u64,
    /// Connections reset because a write did not finish within
    /// [`ServerConfig::write_timeout`].
    pub write_timeouts: u64,
    /// Connections closed because their TLS handshake failed or did not
    /// finish within [`ServerConfig::request_timeout`] (TLS servers only).
    pub tls_failures: u64,
    /// TLS connections whose early data (0-RTT) the server accepted: a
    /// request in it is read before the handshake ends (servers with
    /// [`tls::enable_early_data`] only).
    pub tls_early_data: u64,
    /// Bytes buffered now across all connections (read buffers, delayed
    /// replies, queued pushes, responses being written): what
    /// [`ServerConfig::buffer_budget`] bounds.
    pub buffered_bytes: u64,
    /// The most [`buffered_bytes`](Self::buffered_bytes) ever was.
    pub peak_buffered_bytes: u64,
}

#[derive(Debug, Default)]
struct Counters {
    long_connections: AtomicU64,
    long_connections_open: AtomicU64,
    short_connections: AtomicU64,
    frames_received: AtomicU64,
    noops_answered: AtomicU64,
    identifies_answered: AtomicU64,
    long_requests_served: AtomicU64,
    short_requests_served: AtomicU64,
    short_error_responses: AtomicU64,
    unknown_frames: AtomicU64,
    pushes_sent: AtomicU64,
    protocol_errors: AtomicU64,
    faults_injected: AtomicU64,
    short_connections_open: AtomicU64,
    connections_refused: AtomicU64,
    accept_errors: AtomicU64,
    idle_closes: AtomicU64,
    deadline_closes: AtomicU64,
    write_timeouts: AtomicU64,
    tls_failures: AtomicU64,
    tls_early_data: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    fn snapshot(&self, budget: &Budget) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            long_connections: get(&self.long_connections),
            long_connections_open: get(&self.long_connections_open),
            short_connections: get(&self.short_connections),
            frames_received: get(&self.frames_received),
            noops_answered: get(&self.noops_answered),
            identifies_answered: get(&self.identifies_answered),
            long_requests_served: get(&self.long_requests_served),
            short_requests_served: get(&self.short_requests_served),
            short_error_responses: get(&self.short_error_responses),
            unknown_frames: get(&self.unknown_frames),
            pushes_sent: get(&self.pushes_sent),
            protocol_errors: get(&self.protocol_errors),
            faults_injected: get(&self.faults_injected),
            short_connections_open: get(&self.short_connections_open),
            connections_refused: get(&self.connections_refused),
            accept_errors: get(&self.accept_errors),
            idle_closes: get(&self.idle_closes),
            deadline_closes: get(&self.deadline_closes),
            write_timeouts: get(&self.write_timeouts),
            tls_failures: get(&self.tls_failures),
            tls_early_data: get(&self.tls_early_data),
            buffered_bytes: budget.used() as u64,
            peak_buffered_bytes: budget.peak() as u64,
        }
    }
}

/// How long [`ServerHandle::shutdown`] lets connections close on their own.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Encoded frames waiting to be written to one long-link connection.
const PUSH_QUEUE: usize = 256;

/// How often a rate-limited log line may repeat.
const LOG_PERIOD: Duration = Duration::from_secs(5);

/// One long-link connection's push queue, with the bytes queued in it.
#[derive(Debug)]
struct LinkQueue {
    tx: mpsc::Sender<Bytes>,
    queued: Arc<AtomicUsize>,
}

/// State shared by the handle and every connection task.
#[derive(Debug)]
struct Shared {
    config: ServerConfig,
    /// `config.frame_codec()`, resolved once.
    codec: SharedCodec,
    fault: AtomicU8,
    counters: Counters,
    budget: Budget,
    admission: Admission,
    /// Push queues of the open long-link connections, by connection number.
    long_links: Mutex<BTreeMap<u64, LinkQueue>>,
    next_conn: AtomicU64,
    refusal_log: RateLimitedLog,
    accept_error_log: RateLimitedLog,
    push_drop_log: RateLimitedLog,
}

/// `frame` on the wire in `codec`'s format.
fn encode_frame(
    codec: &dyn stn_proto::codec::LongLinkCodec,
    frame: &Frame,
) -> Result<Bytes, stn_proto::codec::longlink::EncodeError> {
    let mut wire = bytes::BytesMut::with_capacity(frame.encoded_len());
    codec.encode(frame, &mut wire)?;
    Ok(wire.freeze())
}

impl Shared {
    fn fault(&self) -> Fault {
        Fault::from_u8(self.fault.load(Ordering::Relaxed))
    }

    fn links(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, LinkQueue>> {
        // A panic elsewhere while holding the lock leaves a map that is still
        // consistent (inserts and removes are single operations).
        self.long_links
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, cmd_id: u32, body: Bytes) -> usize {
        let frame = Frame::new(cmd_id, PUSH_SEQ, body);
        let wire = match encode_frame(self.codec.get(), &frame) {
            Ok(wire) => wire,
            Err(err) => {
                tracing::warn!(%err, "push not sent");
                return 0;
            }
        };
        let mut sent = 0;
        let mut dropped = 0u64;
        let cap = self.config.max_pending_output;
        for queue in self.links().values() {
            let queued = queue.queued.load(Ordering::Relaxed);
            // Charged before it is queued: the connection releases it when
            // written, or when it closes with the push still queued.
            if queued.saturating_add(wire.len()) <= cap {
                self.budget.force_add(wire.len());
                queue.queued.fetch_add(wire.len(), Ordering::Relaxed);
                if queue.tx.try_send(wire.clone()).is_ok() {
                    sent += 1;
                    bump(&self.counters.pushes_sent);
                    continue;
                }
                queue.queued.fetch_sub(wire.len(), Ordering::Relaxed);
                self.budget.release(wire.len());
            }
            dropped += 1;
        }
        if dropped > 0 {
            if let Some(earlier) = self.push_drop_log.hit() {
                tracing::warn!(dropped, earlier, "push dropped: connections not keeping up");
            }
        }
        sent
    }
}

/// The reference server. Start it with [`Server::start`].
#[derive(Debug)]
pub struct Server(());

impl Server {
    /// Binds the configured listeners and starts serving in background tasks
    /// on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ServerError::Bind`] if a listener cannot be bound;
    /// [`ServerError::Config`] if neither link is configured, a CGI path does
    /// not start with `/`, a cap, count, timeout or interval is zero, or
    /// `buffer_budget` cannot hold the largest frame or request (see its
    /// docs).
    pub async fn start(config: ServerConfig) -> Result<ServerHandle, ServerError> {
        config.validate()?;
        let long = bind(config.long_addr, config.listen_backlog)?;
        let short = bind(config.short_addr, config.listen_backlog)?;
        let long_addr = long.as_ref().map(|(_, addr)| *addr);
        let short_addr = short.as_ref().map(|(_, addr)| *addr);

        let shared = Arc::new(Shared {
            fault: AtomicU8::new(config.fault.to_u8()),
            budget: Budget::new(config.buffer_budget),
            codec: config.frame_codec(),
            config,
            counters: Counters::default(),
            admission: Admission::default(),
            long_links: Mutex::new(BTreeMap::new()),
            next_conn: AtomicU64::new(1),
            refusal_log: RateLimitedLog::new(LOG_PERIOD),
            accept_error_log: RateLimitedLog::new(LOG_PERIOD),
            push_drop_log: RateLimitedLog::new(LOG_PERIOD),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        if let Some((listener, addr)) = long {
            tracing::info!(%addr, "long link listening");
            tasks.spawn(accept_loop(
                listener,
                Link::Long,
                shared.clone(),
                stop_rx.clone(),
            ));
        }
        if let Some((listener, addr)) = short {
            tracing::info!(%addr, "short link listening");
            tasks.spawn(accept_loop(
                listener,
                Link::Short,
                shared.clone(),
                stop_rx.clone(),
            ));
        }
        if let Some(every) = shared.config.push_every {
            tasks.spawn(periodic_push(every, shared.clone(), stop_rx));
        }
        Ok(ServerHandle {
            shared,
            long_addr,
            short_addr,
            stop: stop_tx,
            tasks,
        })
    }
}

/// Binds a listener on `addr` (if any) and reads back the bound address.
fn bind(
    addr: Option<SocketAddr>,
    backlog: u32,
) -> Result<Option<(TcpListener, SocketAddr)>, ServerError> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let bound = || {
        let listener = listen::bind(addr, backlog)?;
        let local = listener.local_addr()?;
        Ok::<_, io::Error>((listener, local))
    };
    bound()
        .map(Some)
        .map_err(|source| ServerError::Bind { addr, source })
}

/// A running server. Dropping it stops the server too (without waiting for
/// the connections to close); [`shutdown`](Self::shutdown) waits.
#[derive(Debug)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    long_addr: Option<SocketAddr>,
    short_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl ServerHandle {
    /// The bound long-link address (with the real port when 0 was asked).
    pub fn long_addr(&self) -> Option<SocketAddr> {
        self.long_addr
    }

    /// The bound short-link address.
    pub fn short_addr(&self) -> Option<SocketAddr> {
        self.short_addr
    }

    /// The configuration the server runs with (its `fault` is the starting
    /// one; see [`fault`](Self::fault) for the current one).
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Sends a server push — a frame with `cmd_id`, seq 0 and `body` — to
    /// every open long-link connection. Returns how many connections it was
    /// queued to; a connection whose queue is full (a client that does not
    /// read) misses it, with a log line.
    pub fn push(&self, cmd_id: u32, body: impl Into<Bytes>) -> usize {
        self.shared.push(cmd_id, body.into())
    }

    /// Changes the fault for requests received from now on.
    pub fn set_fault(&self, fault: Fault) {
        self.shared.fault.store(fault.to_u8(), Ordering::Relaxed);
    }

    /// The current fault.
    pub fn fault(&self) -> Fault {
        self.shared.fault()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.shared.counters.snapshot(&self.shared.budget)
    }

    /// Stops accepting, closes every connection and waits until all the
    /// server's tasks have ended. Connections get [`SHUTDOWN_GRACE`] to
    /// notice (one blocked writing to a client that does not read may not);
    /// whatever is left then is aborted.
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        let tasks = &mut self.tasks;
        let drain = async {
            while let Some(res) = tasks.join_next().await {
                if let Err(err) = res {
                    if err.is_panic() {
                        tracing::error!(%err, "server task panicked");
                    }
                }
            }
        };
        if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
            tracing::warn!("connections still busy after the shutdown grace period: aborting them");
            self.tasks.shutdown().await;
        }
        tracing::info!("server stopped");
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        // Connection tasks watch this flag; the JoinSet aborts the rest.
        self.stop.send_replace(true);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Long,
    Short,
}

/// Resolves when the server is told to stop (or its handle is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // An error means the sender (the handle) was dropped: stop as well.
    let _ = stop.wait_for(|&s| s).await;
}

async fn accept_loop(
    listener: TcpListener,
    link: Link,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let slot = match Slot::admit(&shared, peer.ip()) {
                        Ok(slot) => slot,
                        Err(refusal) => {
                            refuse(&shared, stream, peer, link, refusal);
                            continue;
                        }
                    };
                    let conn = shared.next_conn.fetch_add(1, Ordering::Relaxed);
                    listen::configure(&stream, &shared.config);
                    let (shared, stop) = (shared.clone(), stop.clone());
                    conns.spawn(async move {
                        let config = &shared.config;
                        let Some(stream) = tls::accept(stream, config.tls.as_ref(), config.request_timeout, conn).await else {
                            bump(&shared.counters.tls_failures);
                            return;
                        };
                        if stream.early_accepted() {
                            bump(&shared.counters.tls_early_data);
                        }
                        match link {
                            Link::Long => {
                                bump(&shared.counters.long_connections);
                                long::serve(stream, peer, conn, shared, stop, slot).await;
                            }
                            Link::Short => {
                                bump(&shared.counters.short_connections);
                                short::serve(stream, peer, conn, shared, stop, slot).await;
                            }
                        }
                    });
                }
                Err(err) => {
                    // Out of descriptors and similar: back off instead of
                    // spinning, and log once a period, not once an attempt.
                    bump(&shared.counters.accept_errors);
                    if let Some(earlier) = shared.accept_error_log.hit() {
                        tracing::warn!(%err, ?link, earlier, "accept failed; backing off");
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                if let Err(err) = done {
                    if err.is_panic() {
                        tracing::error!(%err, ?link, "connection task panicked");
                    }
                }
            }
        }
    }
    drop(listener);
    // Connections see the same stop flag and end on their own.
    while conns.join_next().await.is_some() {}
}

/// Feeds `chunks` into a buffer as a connection's reads would, taking
/// messages off it with `take` until it asks for more, then calling
/// `waiting`; returns the messages and the error that ended the stream.
/// (Parser tests and fuzz bodies.)
#[cfg(any(test, fuzzing))]
fn feed_chunks<T, E>(
    chunks: &[&[u8]],
    mut take: impl FnMut(&mut BytesMut) -> Result<Option<T>, E>,
    mut waiting: impl FnMut(&BytesMut),
) -> (Vec<T>, Option<E>) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match take(&mut buf) {
                Ok(Some(message)) => out.push(message),
                Ok(None) => break,
                Err(err) => return (out, Some(err)),
            }
        }
        waiting(&buf);
    }
    (out, None)
}

/// Pause after a failed accept (EMFILE, ENFILE, ENOBUFS ...): the
/// condition lasts until some connection closes.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Resets a connection over a cap, with a rate-limited log line.
fn refuse(shared: &Shared, stream: TcpStream, peer: SocketAddr, link: Link, refusal: Refusal) {
    bump(&shared.counters.connections_refused);
    listen::reset(stream);
    if let Some(earlier) = shared.refusal_log.hit() {
        let config = &shared.config;
        match refusal {
            Refusal::Total => tracing::warn!(
                %peer, ?link, earlier, open = shared.admission.open(),
                max = config.max_connections,
                "connection refused: server connection cap reached"
            ),
            Refusal::PerIp => tracing::warn!(
                %peer, ?link, earlier, max = config.max_connections_per_ip,
                "connection refused: per-IP connection cap reached"
            ),
        }
    }
}

async fn periodic_push(every: Duration, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = ticker.tick() => {
                n += 1;
                let sent = shared.push(shared.config.push_cmd_id, Bytes::from(format!("push {n}")));
                tracing::debug!(n, sent, "periodic push");
            }
        }
    }
}

/// Closes a connection politely: FIN, then read and discard what the peer
/// still sends (briefly and boundedly), so that unread request bytes do not
/// turn the close into a reset that destroys the response in flight.
async fn close_gracefully(stream: &mut ServerStream, stop: &mut watch::Receiver<bool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.shutdown().await;
    // On the heap, only now: a buffer in the future would be reserved for
    // every connection from its first moment.
    let mut scratch = vec![0u8; 4096];
    let mut left: usize = 1024 * 1024;
    let drain = async {
        while left > 0 {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    tokio::select! {
        _ = stopped(stop) => {}
        _ = tokio::time::timeout(Duration::from_secs(1), drain) => {}
    }
}

/// Reads and discards until the peer closes, the server stops or the peer
/// has sent nothing for `idle`: how a connection idles after a fault that
/// answers nothing more.
async fn discard_until_closed(
    stream: &mut ServerStream,
    stop: &mut watch::Receiver<bool>,
    idle: Duration,
) {
    use tokio::io::AsyncReadExt;
    let mut scratch = vec![0u8; 4096];
    loop {
        tokio::select! {
            _ = stopped(stop) => return,
            read = tokio::time::timeout(idle, stream.read(&mut scratch)) => match read {
                Ok(Ok(0) | Err(_)) | Err(_) => return,
                Ok(Ok(_)) => {}
            },
        }
    }
}

/// Writes the first half of `wire` (at least one byte), waits a moment so the
/// peer receives it, then resets the connection.
async fn reset_mid_response(mut stream: ServerStream, wire: &[u8]) {
    use tokio::io::AsyncWriteExt;
    let half = (wire.len() / 2).max(1).min(wire.len());
    let _ = stream.write_all(&wire[..half]).await;
    let _ = stream.flush().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    if let Err(err) = stream.tcp().set_zero_linger() {
        tracing::warn!(%err, "cannot set SO_LINGER 0; closing normally");
    }
    drop(stream);
}
