//! A sequential "fresh connection per request" HTTP client: the skeleton of
//! the OkHttp-2017 peer as the Mars benchmark ran it (peers.md §0, §8.1):
//! one call at a time, a new TCP connection per call, `Connection: close`,
//! one attempt per call (no retry), a connect timeout per attempt and an
//! idle read timeout; a failed call is counted and the next call starts at
//! once.
//!
//! Simplifications: the read timer starts when the connection is up and the
//! request is handed to the socket (a kernel send buffer takes a small
//! request at once, so "request fully written" ≈ "connected"); there is no
//! separate write timeout.

use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::ConnectError;
use stn_proto::{Duration, Instant};

use crate::client::{ClientCx, SimClient};
use crate::http;
use crate::socket::{SocketEvent, SocketId};

/// Parameters of a [`FreshConnClient`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreshConnConfig {
    /// The server (an IP literal, as in the benchmark: no DNS, one route).
    pub server: SocketAddr,
    /// Request path.
    pub path: String,
    /// Request body size in bytes.
    pub request_body_len: usize,
    /// Per-attempt connect timeout (OkHttp: 10 s).
    pub connect_timeout: Duration,
    /// Idle read timeout: to the first response byte and between bytes
    /// (OkHttp: 10 s).
    pub read_timeout: Duration,
    /// Stop after this many successful calls.
    pub target_successes: u64,
    /// Stop after this many calls in all (a bound for hopeless networks).
    pub max_calls: u64,
}

impl FreshConnConfig {
    /// OkHttp 2.x as benchmarked: POST `/mars/hello2`, 10 s connect and read
    /// timeouts, until 500 successes (at most 5000 calls).
    pub fn okhttp_2017(server: SocketAddr) -> Self {
        FreshConnConfig {
            server,
            path: "/mars/hello2".into(),
            request_body_len: 64,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(10),
            target_successes: 500,
            max_calls: 5000,
        }
    }
}

/// Why a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The client's connect timeout passed first.
    ConnectTimeout,
    /// The OS reported the connect failure (refused, or SYN schedule exhausted).
    ConnectFailed(ConnectError),
    /// No response byte within the read timeout.
    ReadTimeout,
    /// Reset, or the OS gave up retransmitting.
    Reset,
    /// The server closed before the response was complete.
    UnexpectedEof,
    /// The response could not be framed.
    BadResponse,
}

/// The end of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// When the call started (connect issued).
    pub started: Instant,
    /// When it ended.
    pub finished: Instant,
    /// HTTP status and response length, or the error.
    pub result: Result<(u16, usize), CallError>,
}

impl CallRecord {
    /// `finished - started`.
    pub fn duration(&self) -> Duration {
        self.finished - self.started
    }
}

#[derive(Debug)]
enum Phase {
    Connecting,
    AwaitingResponse,
}

#[derive(Debug)]
struct Call {
    started: Instant,
    socket: SocketId,
    phase: Phase,
    deadline: Instant,
    response: Vec<u8>,
}

/// The client model. Results are in [`FreshConnClient::calls`].
#[derive(Debug)]
pub struct FreshConnClient {
    cfg: FreshConnConfig,
    request: Bytes,
    current: Option<Call>,
    calls: Vec<CallRecord>,
    successes: u64,
}

impl FreshConnClient {
    /// A client that has not started yet.
    pub fn new(cfg: FreshConnConfig) -> Self {
        let body: Vec<u8> = (0..cfg.request_body_len).map(|i| (i % 253) as u8).collect();
        let request = Bytes::from(http::post(&cfg.path, &cfg.server.to_string(), &body));
        FreshConnClient {
            cfg,
            request,
            current: None,
            calls: Vec::new(),
            successes: 0,
        }
    }

    /// Every finished call, in order.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Successful calls so far.
    pub fn successes(&self) -> u64 {
        self.successes
    }

    /// Bytes of each request on the wire (head + body).
    pub fn request_len(&self) -> usize {
        self.request.len()
    }

    fn begin_call(&mut self, cx: &mut ClientCx<'_>) {
        if self.is_finished() {
            cx.set_wakeup(None);
            return;
        }
        let now = cx.now();
        let socket = cx.connect(self.cfg.server);
        let deadline = now + self.cfg.connect_timeout;
        self.current = Some(Call {
            started: now,
            socket,
            phase: Phase::Connecting,
            deadline,
            response: Vec::new(),
        });
        cx.set_wakeup(Some(deadline));
    }

    fn finish(&mut self, cx: &mut ClientCx<'_>, result: Result<(u16, usize), CallError>) {
        let Some(call) = self.current.take() else {
            return;
        };
        // The socket may already be gone (failed or reset); nothing to undo then.
        let _ = cx.close(call.socket);
        let rec = CallRecord {
            started: call.started,
            finished: cx.now(),
            result,
        };
        let nanos = u64::try_from(rec.duration().as_nanos()).unwrap_or(u64::MAX);
        match result {
            Ok(_) => {
                self.successes += 1;
                cx.note("call-ok", nanos);
            }
            Err(_) => cx.note("call-failed", nanos),
        }
        self.calls.push(rec);
        self.begin_call(cx);
    }
}

impl SimClient for FreshConnClient {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        self.begin_call(cx);
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        let Some(call) = self.current.as_mut() else {
            return;
        };
        if call.socket != socket {
            return;
        }
        match event {
            SocketEvent::Connected => {
                if cx.send(socket, &self.request).is_err() {
                    self.finish(cx, Err(CallError::Reset));
                    return;
                }
                call.phase = Phase::AwaitingResponse;
                call.deadline = cx.now() + self.cfg.read_timeout;
                cx.set_wakeup(Some(call.deadline));
            }
            // This client writes once connected; it sends no early data.
            SocketEvent::EarlyData { .. } => {}
            // TLS: TCP is up and the handshake runs under the read timeout
            // (OkHttp sets the socket's read timeout before the handshake).
            SocketEvent::TcpConnected => {
                call.deadline = cx.now() + self.cfg.read_timeout;
                cx.set_wakeup(Some(call.deadline));
            }
            SocketEvent::ConnectFailed(e) => self.finish(cx, Err(CallError::ConnectFailed(e))),
            SocketEvent::Data(d) => {
                call.response.extend_from_slice(&d);
                call.deadline = cx.now() + self.cfg.read_timeout;
                cx.set_wakeup(Some(call.deadline));
                match http::message_len(&call.response) {
                    Ok(Some(n)) if call.response.len() >= n => {
                        let status = http::status(&call.response).unwrap_or(0);
                        self.finish(cx, Ok((status, n)));
                    }
                    Ok(_) => {}
                    Err(_) => self.finish(cx, Err(CallError::BadResponse)),
                }
            }
            SocketEvent::Closed => self.finish(cx, Err(CallError::UnexpectedEof)),
            SocketEvent::Reset | SocketEvent::TimedOut => self.finish(cx, Err(CallError::Reset)),
        }
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        let Some(call) = self.current.as_ref() else {
            return;
        };
        if cx.now() < call.deadline {
            cx.set_wakeup(Some(call.deadline));
            return;
        }
        let err = match call.phase {
            Phase::Connecting => CallError::ConnectTimeout,
            Phase::AwaitingResponse => CallError::ReadTimeout,
        };
        self.finish(cx, Err(err));
    }

    fn is_finished(&self) -> bool {
        self.successes >= self.cfg.target_successes || self.calls.len() as u64 >= self.cfg.max_calls
    }
}
