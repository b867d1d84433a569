//! The short-link exchange: one attempt of one task over fresh TCP
//! connection(s), Mars's `ShortLink` (docs/mars-stn.md §6).
//!
//! A [`ShortLinkExchange`] races the candidate addresses ([`crate::race`]),
//! sends the Mars HTTP `POST` ([`crate::codec::http::encode_request`]) on the
//! connection that wins, parses the response incrementally and boundedly
//! ([`ResponseParser`]), enforces the per-attempt timers, and ends exactly
//! once with an [`ExchangeResult`]. Retries, candidate ordering, bans and the
//! timeout formulas are the engine's business: an exchange is one attempt.
//!
//! # Rules
//!
//! - **Racing.** The race's attempts are mapped to fresh [`ConnId`]s from the
//!   caller's [`ConnIds`]; its `Connect`/`Cancel` become
//!   [`IoAction::Connect`]/[`IoAction::Close`]. An empty candidate list ends
//!   the exchange with [`DnsError::NoCandidates`]; a failed race with
//!   [`Error::Connect`] naming the last address that failed and how.
//! - **Timers** (§2.3) start when the request is sent, which is the moment the
//!   winning connection reports [`ConnEvent::Connected`] (Mars calls `OnSend`
//!   right after the TCP connect):
//!   - no response byte within `first_packet` → [`TimeoutKind::FirstPacket`]
//!     (with `long_polling` set, that duration replaces it →
//!     [`TimeoutKind::LongPolling`]);
//!   - after a byte, no further byte within `packet_gap` of the last one →
//!     [`TimeoutKind::PacketGap`];
//!   - the response not complete within `read_write` of the send →
//!     [`TimeoutKind::ReadWrite`];
//!   - the task's `deadline`, at any phase → [`TimeoutKind::Task`].
//!
//!   A deadline at or before `now` has passed. When several have passed by
//!   the time the machine is woken, the earliest decides; at equal instants
//!   Mars's check order (task, read-write, long-polling, first-packet,
//!   packet-gap) breaks the tie. Every input first processes the deadlines up
//!   to its `now`, so the outcome does not depend on how punctually
//!   [`ShortLinkExchange::handle_timeout`] was called.
//! - **Response.** Status 200 → `Ok` with the response; any other status →
//!   [`Error::Http`]; malformed or over-limit → [`Error::Protocol`] (an
//!   over-limit `Content-Length` fails when the head is parsed, before any of
//!   the body is buffered); EOF before the end → [`SocketError::ClosedByPeer`];
//!   reset or a socket error → [`SocketError::Reset`].
//! - **Connections.** When the exchange ends, every connection still open or
//!   connecting gets an [`IoAction::Close`]; one that ended by its own event
//!   ([`ConnEvent::ConnectFailed`], [`ConnEvent::Closed`]) gets none. Events
//!   for ids the exchange does not know, or has closed, are ignored, as is
//!   everything after the end. `Received` before `Connected` is dropped; a
//!   duplicate `Connected` is ignored; `Closed` while connecting is a failed
//!   connect; `ConnectFailed` after `Connected` is a reset.
//! - **Invalid requests** (a cgi, host or header the encoder refuses) end the
//!   exchange at [`ShortLinkExchange::start`], before any connect, with
//!   [`Error::Local`] ([`TaskError`]). So does a deadline already passed
//!   ([`TimeoutKind::Task`]).
//! - **Endpoint reports** ([`EndpointReport`], for the ban history, §4.2): every
//!   racing attempt that connected or failed (attempts cancelled without a
//!   verdict — stn's abandoned or lost attempts — are not reported), and the
//!   winner's post-connect outcome: success, or a failure for a timeout, HTTP
//!   status, protocol or socket error (Mars's short link counts all of these
//!   against the address). Cancellation and the task deadline say nothing
//!   about the address and are not reported.
//!
//! Action order when the exchange ends: the `Close`s, then the post-connect
//! [`ExchangeAction::Endpoint`] (if any), then [`ExchangeAction::Finished`],
//! which is always the last action.
//!
//! # Example
//!
//! (The example runs as the unit test `examples::short_link`.)

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::codec::http::{
    encode_request, HttpError, HttpLimits, HttpResponse, HttpVersion, Progress, RequestError,
    RequestHead, ResponseParser,
};
use crate::error::{DnsError, Error, HttpReply, ProtocolError, SocketError, TimeoutKind};
use crate::io::{CloseReason, ConnEvent, ConnId, ConnIds, IoAction};
use crate::net::{ConnectError, SocketAddr};
use crate::race::{AttemptId, AttemptResult, FailReason, Race, RaceAction, RaceConfig};
use crate::small_map::SmallMap;
use crate::task::TaskError;
use crate::time::{Duration, Instant, MonotonicClock};

#[cfg(test)]
mod tests;

/// The per-attempt timers of one exchange, all measured from the moment the
/// request is sent (see the module docs). The engine computes them
/// (`crate::timeout`); the exchange only enforces them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExchangeTimeouts {
    /// No response byte within this → [`TimeoutKind::FirstPacket`]. Not used
    /// when `long_polling` is set.
    pub first_packet: Duration,
    /// The whole response not received within this → [`TimeoutKind::ReadWrite`].
    pub read_write: Duration,
    /// After the first byte, no further byte within this of the last one →
    /// [`TimeoutKind::PacketGap`].
    pub packet_gap: Duration,
    /// A long poll: no response byte within this → [`TimeoutKind::LongPolling`]
    /// (replaces `first_packet`).
    pub long_polling: Option<Duration>,
}

/// One attempt of one short-link task: where to connect and what to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExchangeRequest {
    /// Addresses to race, in the engine's order (bans applied); duplicates
    /// are separate attempts. Empty → [`DnsError::NoCandidates`].
    pub candidates: Vec<SocketAddr>,
    /// The `Host` header; `None` → the winning address as `ip:port`.
    pub host: Option<String>,
    /// The request path (must start with `/`).
    pub cgi: String,
    /// Extra headers, insert-or-update over Mars's fixed ones (case-insensitive).
    pub headers: Vec<(String, String)>,
    /// The request body (the app's own framing).
    pub body: Bytes,
    /// A recent RTT to these servers, for the race's stagger.
    pub rtt_hint: Option<Duration>,
    /// The per-attempt timers.
    pub timeouts: ExchangeTimeouts,
    /// The task's deadline: nothing of the exchange outlives it
    /// ([`TimeoutKind::Task`]).
    pub deadline: Option<Instant>,
    /// The request may go as TLS early data when a connection offers it
    /// ([`ConnEvent::EarlyData`]): the task allows it and the profile uses it.
    pub early_data: bool,
}

/// Configuration of a `ShortLinkExchange`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExchangeConfig {
    /// How to race the candidates.
    pub race: RaceConfig,
    /// Size caps for the response.
    pub http: HttpLimits,
}

/// One outcome to record in the endpoint (ban) history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EndpointReport {
    /// The address.
    pub addr: SocketAddr,
    /// Success (connected, or a usable response) or failure.
    pub ok: bool,
    /// The TCP connect time, when the address connected.
    pub connect_time: Option<Duration>,
    /// What failed, for a failure.
    pub error: Option<Error>,
}

impl EndpointReport {
    /// What a racing attempt's end says about its address: a connect time,
    /// a connect failure, an abandoned attempt (its SYNs went unanswered for
    /// longer than a retransmission and a round trip: a failure, so a black
    /// hole is demoted like a refusing endpoint — the history never bans the
    /// last candidate), one outpaced by a later attempt on another address
    /// (also a failure), or — another attempt was merely faster — nothing.
    /// A proxy that failed itself says nothing about the endpoint behind
    /// it ([`ConnectError::blames_endpoint`]): nothing either.
    pub(crate) fn from_attempt(addr: SocketAddr, result: AttemptResult) -> Option<Self> {
        match result {
            AttemptResult::Failed(error) if !error.blames_endpoint() => None,
            AttemptResult::Connected { connect_time } => Some(EndpointReport {
                addr,
                ok: true,
                connect_time: Some(connect_time),
                error: None,
            }),
            AttemptResult::Failed(error) => Some(EndpointReport {
                addr,
                ok: false,
                connect_time: None,
                error: Some(Error::Connect {
                    addr: Some(addr),
                    error,
                }),
            }),
            AttemptResult::Abandoned | AttemptResult::Outpaced => Some(EndpointReport {
                addr,
                ok: false,
                connect_time: None,
                error: Some(Error::Connect {
                    addr: Some(addr),
                    error: ConnectError::AttemptTimeout,
                }),
            }),
            AttemptResult::Lost => None,
        }
    }
}

/// How an exchange ended, with its measurements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExchangeResult {
    /// The status-200 response, or why the attempt failed.
    pub outcome: Result<HttpResponse, Error>,
    /// The address that won the race, if one did.
    pub endpoint: Option<SocketAddr>,
    /// The winner's TCP connect time.
    pub connect_time: Option<Duration>,
    /// From the send of the request to the first response byte.
    pub first_packet_after: Option<Duration>,
    /// The TLS handshake on the winning connection: from its TCP connect
    /// ([`ConnEvent::TcpConnected`](crate::io::ConnEvent::TcpConnected)) to
    /// its `Connected`. `None` without TLS, on a reused connection, or when
    /// the executor does not report the TCP connect.
    pub handshake_time: Option<Duration>,
    /// The request went as TLS early data, before the handshake completed.
    pub early_data: bool,
    /// When the request was sent (the timers' origin), if it was.
    pub request_sent_at: Option<Instant>,
    /// Request bytes sent.
    pub bytes_sent: u64,
    /// Response bytes received on the winning connection.
    pub bytes_received: u64,
    /// Connection attempts started by the race.
    pub connect_attempts: u32,
    /// The exchange ran on a pooled connection
    /// ([`ShortLinkExchange::start_reused`]).
    pub reused: bool,
    /// The exchange failed because its race did: every candidate was tried
    /// and each refused or failed TLS permanently
    /// ([`Race::failed_deterministically`]).
    pub connect_deterministic: bool,
    /// The connection left open for reuse: the request asked for
    /// `Connection: Keep-Alive`, the response was a 200 that allows it, and
    /// nothing followed it. The caller now owns it (no `Close` was queued).
    pub kept: Option<KeptConn>,
    /// The value of the per-attempt timer that ended the attempt, if one did.
    pub timeout: Option<Duration>,
    /// The reply, when its status was not 200 (the outcome is then
    /// [`Error::Http`]).
    pub http_reply: Option<HttpReply>,
}

/// What an ending hands the caller besides its outcome and report.
#[derive(Debug, Default)]
struct Ending {
    /// The winner, left open for reuse.
    kept: Option<KeptConn>,
    /// A reply with a status other than 200, kept for the app.
    http_reply: Option<HttpReply>,
}

/// A connection an exchange left open for the next one (Mars's keep-alive
/// socket pool, reference §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptConn {
    /// The connection.
    pub conn: ConnId,
    /// Its peer.
    pub addr: SocketAddr,
    /// How long the server keeps it idle (`Keep-Alive: timeout=N`), if it said.
    pub idle_timeout: Option<Duration>,
}

/// What the caller must do; drain with [`ShortLinkExchange::poll_action`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExchangeAction {
    /// A socket operation.
    Io(IoAction),
    /// Record an outcome in the endpoint history.
    Endpoint(EndpointReport),
    /// A loser of the won race, still connecting, is handed over unjudged
    /// ([`RaceAction::Linger`]): the exchange forgets `conn`, and the caller
    /// owns it, reports `addr` failed if it has neither connected nor failed
    /// by `until`, and closes it.
    Linger {
        /// The loser's connection.
        conn: ConnId,
        /// Its address.
        addr: SocketAddr,
        /// When its verdict is due.
        until: Instant,
    },
    /// The exchange is over. Emitted exactly once, always last. Boxed: it
    /// is the largest action and the rarest.
    Finished(Box<ExchangeResult>),
}

/// Where one of the exchange's connections stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnState {
    /// Racing: waiting for `Connected` or `ConnectFailed`.
    Connecting(AttemptId),
    /// Connected and carrying the exchange (the race's winner).
    Open,
    /// The race's winner, carrying the request as early data while its TLS
    /// handshake completes; `Connected` makes it `Open`.
    Early,
    /// Closed by us or ended by its own event: nothing more is expected.
    Gone,
}

/// One short-link attempt as a sans-IO machine. See the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct ShortLinkExchange {
    http: HttpLimits,
    request: Request,
    timeouts: ExchangeTimeouts,
    deadline: Option<Instant>,
    clock: MonotonicClock,
    /// `None` on a pooled connection, or when the exchange ended before
    /// racing (invalid request, expired deadline). Kept after the win: it
    /// still cancels or hands over the losers, and counts the connects.
    race: Option<Race>,
    /// The request may go as early data ([`ExchangeRequest::early_data`]).
    early_allowed: bool,
    /// Started on a pooled connection.
    reused: bool,
    conns: SmallMap<ConnId, ConnState>,
    attempts: SmallMap<AttemptId, ConnId>,
    phase: Phase,
    actions: VecDeque<ExchangeAction>,
}

/// What the exchange sends.
#[derive(Clone, Debug)]
struct Request {
    host: Option<String>,
    cgi: String,
    headers: Vec<(String, String)>,
    body: Bytes,
    /// The request asks for `Connection: Keep-Alive`.
    keep_alive: bool,
}

/// Where the exchange stands.
#[derive(Clone, Debug)]
enum Phase {
    /// Racing the candidates for a connection.
    Racing {
        /// The most recent connect failure, for the race's failure error.
        last_failure: Option<(SocketAddr, ConnectError)>,
    },
    /// The request is out on the winner; the response is being read.
    Exchanging(Box<OnWinner>),
    /// Ended: `Finished` is queued (or was given out).
    Done,
}

/// The winning connection and what happened on it.
#[derive(Clone, Debug)]
struct OnWinner {
    conn: ConnId,
    addr: SocketAddr,
    /// Its TCP connect time (`None` on a pooled connection).
    connect_time: Option<Duration>,
    handshake: Handshake,
    parser: ResponseParser,
    /// When the request was sent: the timers' origin.
    sent_at: Instant,
    bytes_sent: u64,
    first_byte_at: Option<Instant>,
    last_recv_at: Option<Instant>,
    bytes_received: u64,
}

/// The winner's TLS handshake.
#[derive(Clone, Copy, Debug)]
enum Handshake {
    /// Complete (or none: plain TCP, a pooled connection), with its time if
    /// it was measured; `early`: the request went as early data before it
    /// completed.
    Done { time: Option<Duration>, early: bool },
    /// The request went as early data; the handshake runs on. `tcp_at`:
    /// when the TCP connect completed, if the executor said.
    Early { tcp_at: Option<Instant> },
}

impl ShortLinkExchange {
    /// The exchange before any connection: the request checked (an
    /// invalid one or a passed deadline finishes it at once).
    fn prepare(now: Instant, cfg: &ExchangeConfig, req: ExchangeRequest) -> Self {
        let mut clock = MonotonicClock::new();
        let now = clock.observe(now);
        let keep_alive = req.headers.iter().any(|(k, v)| {
            k.eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("keep-alive")
        });
        let mut ex = ShortLinkExchange {
            http: cfg.http,
            request: Request {
                host: req.host,
                cgi: req.cgi,
                headers: req.headers,
                body: req.body,
                keep_alive,
            },
            timeouts: req.timeouts,
            deadline: req.deadline,
            clock,
            race: None,
            early_allowed: req.early_data,
            reused: false,
            conns: SmallMap::default(),
            attempts: SmallMap::default(),
            phase: Phase::Racing { last_failure: None },
            actions: VecDeque::new(),
        };
        // Reject a request that cannot be encoded before opening any socket.
        // Only an absent host depends on the winner, and `ip:port` is always
        // valid, so any address stands in for it here.
        let probe = SocketAddr::from(([0, 0, 0, 0], 0));
        if let Err(e) = ex.request.encode(probe) {
            ex.finish(Err(e), None, Ending::default());
            return ex;
        }
        if ex.deadline.is_some_and(|d| d <= now) {
            ex.finish(
                Err(Error::Timeout(TimeoutKind::Task)),
                None,
                Ending::default(),
            );
            return ex;
        }
        ex
    }

    /// Starts the attempt at `now`: the first `Connect` is queued at once
    /// (unless the request is invalid, the deadline has passed or there are no
    /// candidates, in which case `Finished` is queued instead).
    pub(crate) fn start(
        now: Instant,
        cfg: &ExchangeConfig,
        req: ExchangeRequest,
        ids: &mut ConnIds,
    ) -> Self {
        let mut req = req;
        let candidates = std::mem::take(&mut req.candidates);
        let (rtt_hint, deadline) = (req.rtt_hint, req.deadline);
        let mut ex = ShortLinkExchange::prepare(now, cfg, req);
        if ex.is_done() {
            return ex;
        }
        let now = ex.clock.latest();
        ex.race = Some(Race::new(now, cfg.race, candidates, rtt_hint, deadline));
        ex.drain_race(now, ids, None);
        ex.expire(now);
        ex
    }

    /// Starts the attempt on `conn`, an open connection to `addr` kept by an
    /// earlier exchange ([`ExchangeResult::kept`]): no race, the request is
    /// sent at once. Everything else is as for [`start`](Self::start); a
    /// failure is counted against `addr` like any post-connect failure.
    pub(crate) fn start_reused(
        now: Instant,
        cfg: &ExchangeConfig,
        req: ExchangeRequest,
        conn: ConnId,
        addr: SocketAddr,
    ) -> Self {
        let mut ex = ShortLinkExchange::prepare(now, cfg, req);
        if ex.is_done() {
            return ex;
        }
        ex.reused = true;
        let now = ex.clock.latest();
        ex.conns.insert(conn, ConnState::Open);
        let plain = Handshake::Done {
            time: None,
            early: false,
        };
        ex.send_on(now, conn, addr, None, plain);
        ex.expire(now);
        ex
    }

    fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    fn on_winner(&self) -> Option<&OnWinner> {
        match &self.phase {
            Phase::Exchanging(w) => Some(w),
            _ => None,
        }
    }

    /// Whether `conn` is one of this exchange's connections that is still
    /// connecting or open. Events for any other id are ignored.
    pub(crate) fn owns(&self, conn: ConnId) -> bool {
        matches!(
            self.conns.get(&conn),
            Some(ConnState::Connecting(_) | ConnState::Open | ConnState::Early)
        )
    }

    /// When the request was sent (the race was won), if it was and the
    /// exchange runs on.
    pub(crate) fn request_sent_at(&self) -> Option<Instant> {
        self.on_winner().map(|w| w.sent_at)
    }

    /// When the first response byte arrived, if one did and the exchange
    /// runs on.
    pub(crate) fn first_byte_at(&self) -> Option<Instant> {
        self.on_winner().and_then(|w| w.first_byte_at)
    }

    /// Connection attempts the race has started so far.
    pub(crate) fn connect_attempts(&self) -> u32 {
        self.race.as_ref().map_or(0, Race::attempts_started)
    }

    /// Feeds what happened on `conn` at `now`. Deadlines up to `now` are
    /// processed first; events for unknown or closed connections, and
    /// everything after the end, are ignored.
    pub(crate) fn handle_event(
        &mut self,
        now: Instant,
        conn: ConnId,
        ev: ConnEvent,
        ids: &mut ConnIds,
    ) {
        let now = self.clock.observe(now);
        if self.is_done() {
            return;
        }
        self.advance(now, ids);
        if self.is_done() {
            return;
        }
        let Some(&state) = self.conns.get(&conn) else {
            return;
        };
        match (state, ev) {
            (ConnState::Gone, _) => {}
            (ConnState::Connecting(attempt), ConnEvent::Connected) => {
                if let Some(race) = self.race.as_mut() {
                    race.handle_connected(now, attempt);
                }
                self.drain_race(now, ids, None);
                // Should the race not have taken it (it always does for a live
                // attempt), the socket is of no use: close it.
                if self.conns.get(&conn) == Some(&ConnState::Connecting(attempt)) {
                    self.close(conn);
                }
            }
            (ConnState::Connecting(attempt), ConnEvent::TcpConnected) => {
                if let Some(race) = self.race.as_mut() {
                    race.handle_tcp_connected(now, attempt);
                }
                self.drain_race(now, ids, None);
            }
            (ConnState::Connecting(attempt), ConnEvent::EarlyData { max }) => {
                if !self.fits_early(attempt, max) {
                    return self.expire(now);
                }
                // The request goes now, so this attempt wins the race as if
                // connected; the handshake's end is its `Connected`.
                if let Some(race) = self.race.as_mut() {
                    race.handle_connected(now, attempt);
                }
                self.drain_race(now, ids, Some(attempt));
                if self.conns.get(&conn) == Some(&ConnState::Connecting(attempt)) {
                    self.close(conn);
                }
            }
            (ConnState::Open | ConnState::Early, ConnEvent::TcpConnected)
            | (ConnState::Open | ConnState::Early, ConnEvent::EarlyData { .. }) => {}
            (ConnState::Early, ConnEvent::Connected) => {
                self.conns.insert(conn, ConnState::Open);
                if let Phase::Exchanging(w) = &mut self.phase {
                    if let Handshake::Early { tcp_at } = w.handshake {
                        w.handshake = Handshake::Done {
                            time: tcp_at.map(|tcp| now - tcp),
                            early: true,
                        };
                    }
                }
            }
            (ConnState::Early, ConnEvent::ConnectFailed(error)) => {
                // The handshake failed after the request went early: a
                // failed connect of the winner, with its typed cause.
                self.conns.insert(conn, ConnState::Gone);
                let addr = self.on_winner().map(|w| w.addr);
                self.fail_on_winner(Error::Connect { addr, error });
            }
            (ConnState::Connecting(attempt), ConnEvent::ConnectFailed(error)) => {
                self.conns.insert(conn, ConnState::Gone);
                self.connect_failed(now, attempt, error, ids);
            }
            (ConnState::Connecting(attempt), ConnEvent::Closed(reason)) => {
                // A close before the connect completed is a failed connect.
                self.conns.insert(conn, ConnState::Gone);
                let error = match reason {
                    CloseReason::Eof | CloseReason::Reset => ConnectError::Reset,
                    CloseReason::Error(code) => ConnectError::Other(code),
                    CloseReason::Tls(failure) => ConnectError::Tls(failure),
                };
                self.connect_failed(now, attempt, error, ids);
            }
            // Nothing can arrive before the handshake; drop it.
            (ConnState::Connecting(_), ConnEvent::Received(_)) => {}
            (ConnState::Open, ConnEvent::Connected) => {}
            (ConnState::Open | ConnState::Early, ConnEvent::Received(data)) => {
                self.received(now, &data);
            }
            (ConnState::Open | ConnState::Early, ConnEvent::Closed(reason)) => {
                self.conns.insert(conn, ConnState::Gone);
                self.closed(reason);
            }
            (ConnState::Open, ConnEvent::ConnectFailed(_)) => {
                // Contradicts the earlier `Connected`; the socket is dead either way.
                self.conns.insert(conn, ConnState::Gone);
                self.fail_on_winner(Error::Socket(SocketError::Reset));
            }
        }
        self.expire(now);
    }

    /// Processes every deadline at or before `now`. Idempotent; safe to call
    /// early.
    pub(crate) fn handle_timeout(&mut self, now: Instant, ids: &mut ConnIds) {
        let now = self.clock.observe(now);
        if self.is_done() {
            return;
        }
        self.advance(now, ids);
    }

    /// Cancels the attempt: every open or connecting connection is closed and
    /// the exchange finishes with [`Error::Cancelled`] (no endpoint report).
    /// Ignored once finished.
    pub(crate) fn cancel(&mut self, now: Instant) {
        self.clock.observe(now);
        self.finish(Err(Error::Cancelled), None, Ending::default());
    }

    /// The next action, if any. Drain until `None` after every input.
    pub(crate) fn poll_action(&mut self) -> Option<ExchangeAction> {
        let action = self.actions.pop_front();
        // Drained: give the queue's room back, since thousands of attempts
        // may wait in flight, each otherwise holding room for several actions.
        if action.is_none() && self.actions.capacity() > 0 {
            self.actions = VecDeque::new();
        }
        action
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next; `None` once
    /// finished. After a drain it is later than the latest `now` given.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.is_done() {
            return None;
        }
        let mut t = self
            .next_deadline()
            .map_or(Instant::MAX, |(when, _, _)| when);
        if let Some(race) = self.race.as_ref().filter(|r| !r.is_finished()) {
            if let Some(r) = race.poll_timeout() {
                t = t.min(r);
            }
        }
        (t != Instant::MAX).then_some(t)
    }

    #[cfg(test)]
    /// Whether the exchange has ended (its `Finished` may still be queued).
    pub(crate) fn is_finished(&self) -> bool {
        self.is_done()
    }

    // ---- transitions ----

    /// Deadlines first (an expired one ends everything), then the race's.
    fn advance(&mut self, now: Instant, ids: &mut ConnIds) {
        self.expire(now);
        if self.is_done() {
            return;
        }
        if let Some(race) = self.race.as_mut().filter(|r| !r.is_finished()) {
            race.handle_timeout(now);
            self.drain_race(now, ids, None);
        }
        // A win just now sends the request, which may start zero-length timers.
        self.expire(now);
    }

    /// Ends the exchange if one of its own deadlines is at or before `now`.
    fn expire(&mut self, now: Instant) {
        if self.is_done() {
            return;
        }
        if let Some((when, _, kind)) = self.next_deadline() {
            if when <= now {
                if kind == TimeoutKind::Task {
                    self.finish(Err(Error::Timeout(kind)), None, Ending::default());
                } else {
                    self.fail_on_winner(Error::Timeout(kind));
                }
            }
        }
    }

    /// The configured value of the per-attempt timer `kind` (`None` for the
    /// task's own deadline).
    fn timer_value(&self, kind: TimeoutKind) -> Option<Duration> {
        let t = &self.timeouts;
        match kind {
            TimeoutKind::FirstPacket => Some(t.first_packet),
            TimeoutKind::ReadWrite => Some(t.read_write),
            TimeoutKind::PacketGap => Some(t.packet_gap),
            TimeoutKind::LongPolling => t.long_polling,
            _ => None,
        }
    }

    /// The earliest of the exchange's own deadlines, with Mars's check order
    /// as the tie-break.
    fn next_deadline(&self) -> Option<(Instant, u8, TimeoutKind)> {
        let mut timers: [Option<(Instant, u8, TimeoutKind)>; 3] = [None; 3];
        timers[0] = self.deadline.map(|d| (d, 0, TimeoutKind::Task));
        if let Some(w) = self.on_winner() {
            let (t, sent) = (&self.timeouts, w.sent_at);
            timers[1] = Some((sent + t.read_write, 1, TimeoutKind::ReadWrite));
            timers[2] = match (w.last_recv_at, t.long_polling) {
                (None, Some(lp)) => Some((sent + lp, 2, TimeoutKind::LongPolling)),
                (None, None) => Some((sent + t.first_packet, 3, TimeoutKind::FirstPacket)),
                (Some(last), _) => Some((last + t.packet_gap, 4, TimeoutKind::PacketGap)),
            };
        }
        timers.into_iter().flatten().min()
    }

    fn connect_failed(
        &mut self,
        now: Instant,
        attempt: AttemptId,
        error: ConnectError,
        ids: &mut ConnIds,
    ) {
        if let Some(race) = self.race.as_mut() {
            race.handle_failed(now, attempt, error);
        }
        self.drain_race(now, ids, None);
    }

    /// Translates the race's actions; the one place attempts meet
    /// connections. `early`: the attempt being declared the winner on its
    /// [`ConnEvent::EarlyData`], if it is.
    fn drain_race(&mut self, now: Instant, ids: &mut ConnIds, early: Option<AttemptId>) {
        while let Some(action) = self.race.as_mut().and_then(Race::poll_action) {
            if self.is_done() {
                continue; // drain and drop: the exchange already closed everything
            }
            match action {
                RaceAction::Connect { attempt, addr } => {
                    let conn = ids.next_id();
                    self.conns.insert(conn, ConnState::Connecting(attempt));
                    self.attempts.insert(attempt, conn);
                    self.actions
                        .push_back(ExchangeAction::Io(IoAction::Connect { conn, addr }));
                }
                RaceAction::Cancel { attempt, .. } => {
                    if let Some(&conn) = self.attempts.get(&attempt) {
                        self.close(conn);
                    }
                }
                RaceAction::Linger {
                    attempt,
                    addr,
                    until,
                } => {
                    if let Some(&conn) = self.attempts.get(&attempt) {
                        if self.conns.get(&conn).is_some_and(|s| *s != ConnState::Gone) {
                            // Gone to the exchange: its events go to the new owner.
                            self.conns.insert(conn, ConnState::Gone);
                            self.actions
                                .push_back(ExchangeAction::Linger { conn, addr, until });
                        }
                    }
                }
                RaceAction::Report { addr, result, .. } => self.report_attempt(addr, result),
                RaceAction::Won {
                    attempt,
                    addr,
                    connect_time,
                } => self.won(now, attempt, addr, connect_time, early == Some(attempt)),
                RaceAction::Failed {
                    reason, last_error, ..
                } => {
                    let last_failure = match self.phase {
                        Phase::Racing { last_failure } => last_failure,
                        _ => None,
                    };
                    let error = match (reason, last_failure) {
                        (FailReason::NoCandidates, _) => Error::Dns(DnsError::NoCandidates),
                        (_, Some((addr, error))) => Error::Connect {
                            addr: Some(addr),
                            error,
                        },
                        (_, None) => Error::Connect {
                            addr: None,
                            error: last_error.unwrap_or(ConnectError::AttemptTimeout),
                        },
                    };
                    self.finish(Err(error), None, Ending::default());
                }
            }
        }
    }

    fn report_attempt(&mut self, addr: SocketAddr, result: AttemptResult) {
        if let (AttemptResult::Failed(error), Phase::Racing { last_failure }) =
            (result, &mut self.phase)
        {
            *last_failure = Some((addr, error));
        }
        if let Some(report) = EndpointReport::from_attempt(addr, result) {
            self.actions.push_back(ExchangeAction::Endpoint(report));
        }
    }

    /// The race is won: send the request on the winner (as early data if
    /// `early`); the timers start now.
    fn won(
        &mut self,
        now: Instant,
        attempt: AttemptId,
        addr: SocketAddr,
        connect_time: Duration,
        early: bool,
    ) {
        let Some(&conn) = self.attempts.get(&attempt) else {
            // The race won an attempt we never opened: a broken invariant, but
            // not one worth a panic in release builds.
            debug_assert!(false, "race won unknown attempt {attempt:?}");
            self.finish(
                Err(Error::Socket(SocketError::WriteFailed)),
                None,
                Ending::default(),
            );
            return;
        };
        let tcp_connected = self
            .race
            .as_ref()
            .and_then(|r| r.attempt(attempt))
            .and_then(|a| a.tcp_connected);
        let handshake = if early {
            self.conns.insert(conn, ConnState::Early);
            Handshake::Early {
                tcp_at: tcp_connected,
            }
        } else {
            self.conns.insert(conn, ConnState::Open);
            Handshake::Done {
                time: tcp_connected.map(|tcp| now - tcp),
                early: false,
            }
        };
        self.send_on(now, conn, addr, Some(connect_time), handshake);
    }

    /// Whether the request may go as early data on `attempt`'s connection,
    /// which allows `max` bytes: the exchange allows it and the whole
    /// request fits (a part sent early would gain nothing).
    fn fits_early(&self, attempt: AttemptId, max: u32) -> bool {
        if !self.early_allowed || self.reused {
            return false;
        }
        let Some(addr) = self
            .race
            .as_ref()
            .and_then(|r| r.attempt(attempt))
            .map(|a| a.addr)
        else {
            return false;
        };
        self.request
            .encode(addr)
            .is_ok_and(|data| u32::try_from(data.len()).is_ok_and(|len| len <= max))
    }

    /// Sends the request on `conn` (open); the timers start now.
    fn send_on(
        &mut self,
        now: Instant,
        conn: ConnId,
        addr: SocketAddr,
        connect_time: Option<Duration>,
        handshake: Handshake,
    ) {
        match self.request.encode(addr) {
            Ok(data) => {
                self.phase = Phase::Exchanging(Box::new(OnWinner {
                    conn,
                    addr,
                    connect_time,
                    handshake,
                    parser: ResponseParser::new(self.http),
                    sent_at: now,
                    bytes_sent: data.len() as u64,
                    first_byte_at: None,
                    last_recv_at: None,
                    bytes_received: 0,
                }));
                self.actions
                    .push_back(ExchangeAction::Io(IoAction::Send { conn, data }));
            }
            // Validated in `prepare` (whatever the address); kept total
            // rather than trusted.
            Err(e) => self.finish(Err(e), None, Ending::default()),
        }
    }

    fn received(&mut self, now: Instant, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let Phase::Exchanging(w) = &mut self.phase else {
            return;
        };
        w.bytes_received = w.bytes_received.saturating_add(data.len() as u64);
        if w.first_byte_at.is_none() {
            w.first_byte_at = Some(now);
        }
        w.last_recv_at = Some(now);
        match w.parser.feed(data) {
            Ok(Progress::Partial | Progress::AfterEnd) => {}
            Ok(Progress::Complete(response)) => {
                let trailing = w.parser.excess_len() > 0;
                self.complete(response, trailing);
            }
            Err(e) => self.fail_on_winner(http_error(e)),
        }
    }

    fn closed(&mut self, reason: CloseReason) {
        let error = match reason {
            CloseReason::Eof => match &mut self.phase {
                // A close-delimited body, when the limits accept one.
                // The peer closed: nothing to keep.
                Phase::Exchanging(w) => match w.parser.finish_eof() {
                    Ok(response) => return self.complete(response, true),
                    Err(e) => http_error(e),
                },
                _ => Error::Socket(SocketError::ClosedByPeer),
            },
            CloseReason::Tls(tls) => Error::Socket(SocketError::Tls(tls)),
            CloseReason::Error(_) => Error::Socket(SocketError::Reset),
            CloseReason::Reset => Error::Socket(SocketError::Reset),
        };
        self.fail_on_winner(error);
    }

    fn complete(&mut self, response: HttpResponse, trailing: bool) {
        if response.status != 200 {
            let status = response.status;
            let reply = HttpReply {
                status,
                headers: response.headers.into(),
                body: response.body,
            };
            let error = Error::Http { status };
            let report = self.winner_report(Some(error.clone()));
            let ending = Ending {
                http_reply: Some(reply),
                ..Ending::default()
            };
            return self.finish(Err(error), report, ending);
        }
        let mut kept = None;
        if self.request.keep_alive && !trailing && reusable(&response) {
            if let Some(w) = self.on_winner() {
                kept = Some(KeptConn {
                    conn: w.conn,
                    addr: w.addr,
                    idle_timeout: keep_alive_timeout(&response),
                });
                // Ours no more: `finish` must not close it.
                self.conns.insert(w.conn, ConnState::Gone);
            }
        }
        let report = self.winner_report(None);
        self.finish(
            Ok(response),
            report,
            Ending {
                kept,
                ..Ending::default()
            },
        );
    }

    /// Ends the exchange with a post-connect failure counted against the winner.
    fn fail_on_winner(&mut self, error: Error) {
        let report = self.winner_report(Some(error.clone()));
        self.finish(Err(error), report, Ending::default());
    }

    fn winner_report(&self, error: Option<Error>) -> Option<EndpointReport> {
        let w = self.on_winner()?;
        Some(EndpointReport {
            addr: w.addr,
            ok: error.is_none(),
            connect_time: w.connect_time,
            error,
        })
    }

    fn close(&mut self, conn: ConnId) {
        if let Some(state) = self.conns.get_mut(&conn) {
            if *state != ConnState::Gone {
                *state = ConnState::Gone;
                self.actions
                    .push_back(ExchangeAction::Io(IoAction::Close { conn }));
            }
        }
    }

    /// The single exit: closes what is left (but `kept`, the caller's
    /// now), reports, then `Finished`.
    fn finish(
        &mut self,
        outcome: Result<HttpResponse, Error>,
        report: Option<EndpointReport>,
        ending: Ending,
    ) {
        // The parser's buffers go with the phase.
        let w = match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => return,
            Phase::Racing { .. } => None,
            Phase::Exchanging(w) => Some(w),
        };
        let live: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, s)| **s != ConnState::Gone)
            .map(|(c, _)| *c)
            .collect();
        for conn in live {
            self.close(conn);
        }
        if let Some(report) = report {
            self.actions.push_back(ExchangeAction::Endpoint(report));
        }
        let (handshake_time, early_data) = match w.as_ref().map(|w| w.handshake) {
            Some(Handshake::Done { time, early }) => (time, early),
            Some(Handshake::Early { .. }) => (None, true),
            None => (None, false),
        };
        let connect_deterministic = outcome.is_err()
            && self
                .race
                .as_ref()
                .is_some_and(Race::failed_deterministically);
        let timeout = match &outcome {
            Err(Error::Timeout(kind)) => self.timer_value(*kind),
            _ => None,
        };
        let result = ExchangeResult {
            outcome,
            endpoint: w.as_ref().map(|w| w.addr),
            connect_time: w.as_ref().and_then(|w| w.connect_time),
            handshake_time,
            early_data,
            first_packet_after: w
                .as_ref()
                .and_then(|w| w.first_byte_at.map(|f| f - w.sent_at)),
            request_sent_at: w.as_ref().map(|w| w.sent_at),
            bytes_sent: w.as_ref().map_or(0, |w| w.bytes_sent),
            bytes_received: w.as_ref().map_or(0, |w| w.bytes_received),
            connect_attempts: self.connect_attempts(),
            reused: self.reused,
            connect_deterministic,
            kept: ending.kept,
            timeout,
            http_reply: ending.http_reply,
        };
        self.actions
            .push_back(ExchangeAction::Finished(Box::new(result)));
    }
}

impl Request {
    fn encode(&self, addr: SocketAddr) -> Result<Bytes, Error> {
        let mut head = RequestHead::new(self.cgi.clone(), self.host.as_deref(), addr);
        head.extra_headers.clone_from(&self.headers);
        let mut out = BytesMut::new();
        encode_request(&head, &self.body, &mut out).map_err(request_error)?;
        Ok(out.freeze())
    }
}

/// Whether a response lets its connection carry another request: HTTP/1.1
/// unless it says `Connection: close`, HTTP/1.0 only if it says keep-alive.
fn reusable(response: &HttpResponse) -> bool {
    let connection = response.header("connection").map(str::trim);
    let says = |token: &str| {
        connection.is_some_and(|c| c.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    match response.version {
        HttpVersion::Http11 => !says("close"),
        HttpVersion::Http10 => says("keep-alive"),
    }
}

/// The idle timeout from a `Keep-Alive: timeout=N` header.
fn keep_alive_timeout(response: &HttpResponse) -> Option<Duration> {
    let value = response.header("keep-alive")?;
    value.split(',').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("timeout") {
            return None;
        }
        v.trim()
            .parse::<u32>()
            .ok()
            .map(|n| Duration::from_secs(u64::from(n)))
    })
}

/// A request that cannot be encoded is an invalid task.
fn request_error(e: RequestError) -> Error {
    Error::from(TaskError::InvalidRequest(e))
}

/// The typed error for a response the parser rejected (Mars §6 mapping).
fn http_error(e: HttpError) -> Error {
    let p = match e {
        HttpError::BadStatusLine => ProtocolError::BadStatusLine,
        HttpError::BadHeader(_)
        | HttpError::TooManyHeaders { .. }
        | HttpError::BadContentLength => ProtocolError::BadHeader,
        HttpError::HeadTooLarge { .. } => ProtocolError::HeadTooLarge,
        HttpError::InterimTooLarge { .. } => ProtocolError::InterimTooLarge,
        HttpError::BodyTooLarge { .. } => ProtocolError::BodyTooLarge,
        HttpError::BadChunk(_) => ProtocolError::BadChunk,
        HttpError::UnexpectedEof => return Error::Socket(SocketError::ClosedByPeer),
        HttpError::Status(status) => return Error::Http { status },
        HttpError::AlreadyComplete => ProtocolError::Other(e.to_string()),
    };
    Error::Protocol(p)
}
