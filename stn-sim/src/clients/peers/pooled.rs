//! One HTTP/1.1 client machine for the pooled, multi-route peer models
//! (OkHttp 5, NSURLSession): staggered connection racing across routes,
//! per-attempt connect timeouts, idle read / request timers, a keep-alive
//! connection pool and the retry rules of the library being modelled.
//!
//! Everything that differs between the libraries is a [`PeerConfig`] field;
//! the transitions live here once.

use std::collections::VecDeque;
use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::client::ClientCx;
use crate::clients::peers::keep_alive::{keep_alive_post, says_close};
use crate::clients::peers::syns_sent;
use crate::http;
use crate::socket::{SocketEvent, SocketId};
use crate::tcp::{RtoPolicy, RttEstimator, TcpStack};
use crate::workload::{
    CallClient, CallCost, CallFailure, CallId, CallOutcome, CallSpec, CallSuccess,
};

/// When the next route's connection attempt starts while earlier ones are
/// still connecting. In every variant, a route is also launched at once
/// when no attempt is in flight (the previous ones failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stagger {
    /// A fixed delay after the previous launch (OkHttp 5 fast fallback:
    /// 250 ms, `FastFallbackExchangeFinder.connectDelayNanos`).
    Fixed(Duration),
    /// Apple's Happy Eyeballs (peers.md §2, §8.2): the next address starts
    /// "around the time we send out a SYN retransmission for the first
    /// address" — the xnu RTO from the handshake RTT history of this client
    /// (`max(srtt + 4·rttvar, 100 ms) + 200 ms`) clamped to `[min, max]`, or
    /// `without_history` (1 s, the first SYN retransmission) before any sample.
    FirstSynRetransmit {
        /// Delay before any RTT sample.
        without_history: Duration,
        /// Lower clamp.
        min: Duration,
        /// Upper clamp.
        max: Duration,
    },
}

/// The connection pool of a shared client/session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Idle connections kept (the least recently used beyond this are closed).
    pub max_idle: usize,
    /// An idle connection is closed after this long unused.
    pub keep_alive: Duration,
}

/// What a [`PeerClient`] does; see the constructors in
/// [`crate::clients::peers::OkHttp5`] and [`crate::clients::peers::NsUrlSession`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerConfig {
    /// A short name for reports.
    pub name: &'static str,
    /// The addresses the host name resolves to, in the order tried (an IP
    /// literal: one route).
    pub routes: Vec<SocketAddr>,
    /// The client's TCP stack (SYN schedule, RTO).
    pub stack: TcpStack,
    /// Request path.
    pub path: String,
    /// Per-attempt connect timeout; `None`: only the OS SYN schedule and the
    /// request timer end an attempt.
    pub connect_timeout: Option<Duration>,
    /// Stagger between route attempts.
    pub stagger: Stagger,
    /// Idle read timeout: from the request handed to the socket to the first
    /// response byte, and between bytes (OkHttp `readTimeout`).
    pub read_timeout: Option<Duration>,
    /// Idle request timer: starts with the call, covers connecting, reset by
    /// every received byte (NSURLSession `timeoutIntervalForRequest`).
    pub request_timeout: Option<Duration>,
    /// Keep-alive pool; `None` = a new client/session per call: no reuse and
    /// the connection is closed after the response.
    pub pool: Option<PoolConfig>,
    /// Send `Connection: close` on requests (OkHttp 2017 benchmark header).
    pub connection_close: bool,
    /// A pooled connection that fails before the response completes with a
    /// non-timeout error (reset, EOF) is retried once on a new connection
    /// (OkHttp `retryOnConnectionFailure`, peers.md §1.2).
    pub retry_stale_pooled: bool,
    /// A fresh connection that fails mid-exchange with a non-timeout error is
    /// retried on the routes that have not failed in this call (OkHttp 4/5
    /// route planner). Timeouts after sending are never retried.
    pub retry_other_routes: bool,
}

#[derive(Debug)]
struct Attempt {
    socket: SocketId,
    route: usize,
    launched: Instant,
    deadline: Instant,
    /// TLS: TCP is up and the handshake runs (its SYNs are counted).
    tcp_up: bool,
}

#[derive(Debug)]
struct IdleConn {
    socket: SocketId,
    route: usize,
    since: Instant,
}

#[derive(Debug)]
enum Phase {
    Connecting {
        attempts: Vec<Attempt>,
        pending: VecDeque<usize>,
        next_launch: Instant,
        first_error: Option<CallFailure>,
    },
    Exchange {
        socket: SocketId,
        route: usize,
        reused: bool,
        read_deadline: Instant,
        response: Vec<u8>,
    },
}

#[derive(Debug)]
struct Call {
    id: CallId,
    request: Bytes,
    phase: Phase,
    cost: CallCost,
    request_deadline: Instant,
    retried_stale: bool,
    failed_routes: Vec<bool>,
}

/// How an exchange on an established connection ended badly.
enum ExchangeEnd {
    Retryable(CallFailure),
    Final(CallFailure),
}

/// The pooled multi-route HTTP client machine. Implements
/// [`CallClient`]; one call in flight at a time (the benchmark's
/// synchronous loop), idle connections pooled between calls.
#[derive(Debug)]
pub struct PeerClient {
    cfg: PeerConfig,
    call: Option<Call>,
    idle: Vec<IdleConn>,
    outcomes: VecDeque<CallOutcome>,
    handshake_rtt: RttEstimator,
}

impl PeerClient {
    /// A client with no connections yet.
    pub fn new(cfg: PeerConfig) -> Self {
        PeerClient {
            cfg,
            call: None,
            idle: Vec::new(),
            outcomes: VecDeque::new(),
            handshake_rtt: RttEstimator::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PeerConfig {
        &self.cfg
    }

    /// The TCP stack to add this client with.
    pub fn stack(&self) -> TcpStack {
        self.cfg.stack.clone()
    }

    /// Idle pooled connections right now.
    pub fn idle_connections(&self) -> usize {
        self.idle.len()
    }

    fn stagger_delay(&self) -> Duration {
        match self.cfg.stagger {
            Stagger::Fixed(d) => d,
            Stagger::FirstSynRetransmit {
                without_history,
                min,
                max,
            } => match self.handshake_rtt.srtt() {
                None => without_history,
                Some(_) => RtoPolicy::Xnu.base_rto(&self.handshake_rtt).clamp(min, max),
            },
        }
    }

    fn build_request(&self, len: usize) -> Bytes {
        let body: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let host = self
            .cfg
            .routes
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        Bytes::from(if self.cfg.connection_close {
            http::post(&self.cfg.path, &host, &body)
        } else {
            keep_alive_post(&self.cfg.path, &host, &body)
        })
    }

    fn expire_idle(&mut self, cx: &mut ClientCx<'_>) {
        let Some(pool) = self.cfg.pool else {
            return;
        };
        let now = cx.now();
        self.idle.retain(|c| {
            let keep = c.since + pool.keep_alive > now;
            if !keep {
                let _ = cx.close(c.socket);
            }
            keep
        });
    }

    fn begin_connect(&mut self, cx: &mut ClientCx<'_>, routes: VecDeque<usize>) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        call.phase = Phase::Connecting {
            attempts: Vec::new(),
            pending: routes,
            next_launch: cx.now(),
            first_error: None,
        };
    }

    fn begin_exchange(
        &mut self,
        cx: &mut ClientCx<'_>,
        socket: SocketId,
        route: usize,
        reused: bool,
    ) {
        let read_timeout = self.cfg.read_timeout;
        let Some(call) = self.call.as_mut() else {
            return;
        };
        call.cost.requests += 1;
        call.cost.reused |= reused;
        call.phase = Phase::Exchange {
            socket,
            route,
            reused,
            read_deadline: read_timeout.map_or(Instant::MAX, |d| cx.now() + d),
            response: Vec::new(),
        };
        if cx.send(socket, &call.request).is_err() {
            self.exchange_failed(cx, ExchangeEnd::Retryable(CallFailure::Reset));
        }
    }

    /// Ends the call: closes whatever it still holds, queues the outcome.
    fn finish(&mut self, cx: &mut ClientCx<'_>, result: Result<CallSuccess, CallFailure>) {
        let Some(call) = self.call.take() else {
            return;
        };
        let mut cost = call.cost;
        match call.phase {
            Phase::Connecting { attempts, .. } => {
                for a in attempts {
                    cost.syns += syns_sent(&self.cfg.stack.syn_schedule, cx.now() - a.launched);
                    let _ = cx.close(a.socket);
                }
            }
            Phase::Exchange { socket, .. } => {
                let _ = cx.close(socket);
            }
        }
        self.outcomes.push_back(CallOutcome {
            id: call.id,
            result,
            cost,
        });
    }

    fn exchange_failed(&mut self, cx: &mut ClientCx<'_>, end: ExchangeEnd) {
        let Some(Call {
            phase:
                Phase::Exchange {
                    socket,
                    route,
                    reused,
                    ..
                },
            retried_stale,
            ..
        }) = self.call
        else {
            return;
        };
        let _ = cx.abort(socket);
        let err = match end {
            ExchangeEnd::Final(e) => return self.finish(cx, Err(e)),
            ExchangeEnd::Retryable(e) => e,
        };
        let n_routes = self.cfg.routes.len();
        if reused && self.cfg.retry_stale_pooled && !retried_stale {
            // Stale pooled connection: the same route once more, then the
            // others (a new route selection), as OkHttp's planner does.
            let mut routes: VecDeque<usize> = (0..n_routes).filter(|r| *r != route).collect();
            routes.push_front(route);
            if let Some(call) = self.call.as_mut() {
                call.retried_stale = true;
            }
            self.begin_connect(cx, routes);
            return;
        }
        let mut rest = VecDeque::new();
        if let Some(call) = self.call.as_mut() {
            if let Some(f) = call.failed_routes.get_mut(route) {
                *f = true;
            }
            if !reused && self.cfg.retry_other_routes {
                rest = (0..n_routes).filter(|r| !call.failed_routes[*r]).collect();
            }
        }
        if rest.is_empty() {
            self.finish(cx, Err(err));
        } else {
            self.begin_connect(cx, rest);
        }
    }

    /// Handles every deadline and launch due at `now`, then re-arms the wake-up.
    fn advance(&mut self, cx: &mut ClientCx<'_>) {
        self.expire_idle(cx);
        let now = cx.now();
        if self
            .call
            .as_ref()
            .is_some_and(|c| c.request_deadline <= now)
        {
            self.finish(cx, Err(CallFailure::RequestTimeout));
        }
        let stagger = self.stagger_delay();
        let connect_timeout = self.cfg.connect_timeout;
        let schedule = self.cfg.stack.syn_schedule.clone();
        if let Some(call) = self.call.as_mut() {
            match &mut call.phase {
                Phase::Connecting {
                    attempts,
                    pending,
                    next_launch,
                    first_error,
                } => {
                    attempts.retain(|a| {
                        if a.deadline > now {
                            return true;
                        }
                        if !a.tcp_up {
                            call.cost.syns += syns_sent(&schedule, now - a.launched);
                        }
                        let _ = cx.close(a.socket);
                        first_error.get_or_insert(CallFailure::ConnectTimeout);
                        if let Some(f) = call.failed_routes.get_mut(a.route) {
                            *f = true;
                        }
                        false
                    });
                    while !pending.is_empty() && (attempts.is_empty() || *next_launch <= now) {
                        let Some(route) = pending.pop_front() else {
                            break;
                        };
                        let socket = cx.connect(self.cfg.routes[route]);
                        call.cost.connects += 1;
                        attempts.push(Attempt {
                            socket,
                            route,
                            launched: now,
                            deadline: connect_timeout.map_or(Instant::MAX, |d| now + d),
                            tcp_up: false,
                        });
                        *next_launch = now + stagger;
                    }
                    if attempts.is_empty() {
                        let err = (*first_error).unwrap_or(CallFailure::ConnectTimeout);
                        self.finish(cx, Err(err));
                    }
                }
                Phase::Exchange { read_deadline, .. } => {
                    if *read_deadline <= now {
                        // A read timeout after the request went out: never retried.
                        self.exchange_failed(cx, ExchangeEnd::Final(CallFailure::ReadTimeout));
                    }
                }
            }
        }
        let next = self.next_deadline();
        cx.set_wakeup(next);
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut t = Instant::MAX;
        if let Some(pool) = self.cfg.pool {
            for c in &self.idle {
                t = t.min(c.since + pool.keep_alive);
            }
        }
        if let Some(call) = &self.call {
            t = t.min(call.request_deadline);
            match &call.phase {
                Phase::Connecting {
                    attempts,
                    pending,
                    next_launch,
                    ..
                } => {
                    for a in attempts {
                        t = t.min(a.deadline);
                    }
                    if !pending.is_empty() {
                        t = t.min(*next_launch);
                    }
                }
                Phase::Exchange { read_deadline, .. } => t = t.min(*read_deadline),
            }
        }
        (t != Instant::MAX).then_some(t)
    }

    fn on_attempt_event(&mut self, cx: &mut ClientCx<'_>, idx: usize, event: SocketEvent) {
        let now = cx.now();
        let schedule = self.cfg.stack.syn_schedule.clone();
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let Phase::Connecting {
            attempts,
            first_error,
            next_launch,
            ..
        } = &mut call.phase
        else {
            return;
        };
        match event {
            SocketEvent::TcpConnected => {
                // TLS: the first TCP success wins the race (OkHttp 5 fast
                // fallback and Apple's Happy Eyeballs race TCP, then do TLS
                // on the winner); the handshake runs under the read timeout
                // (OkHttp's socket timeout), or the request timer alone.
                let read_timeout = self.cfg.read_timeout;
                let mut won = attempts.remove(idx);
                let elapsed = now - won.launched;
                call.cost.syns += syns_sent(&schedule, elapsed);
                if schedule.syn_offset(1).is_none_or(|o| elapsed < o) {
                    self.handshake_rtt.sample(elapsed);
                }
                for a in attempts.drain(..) {
                    call.cost.syns += syns_sent(&schedule, now - a.launched);
                    let _ = cx.close(a.socket);
                }
                // The remaining routes wait: tried only if this handshake fails.
                *next_launch = Instant::MAX;
                won.tcp_up = true;
                won.deadline = read_timeout.map_or(Instant::MAX, |d| now + d);
                attempts.push(won);
            }
            SocketEvent::Connected => {
                let won = attempts.remove(idx);
                if !won.tcp_up {
                    let elapsed = now - won.launched;
                    call.cost.syns += syns_sent(&schedule, elapsed);
                    // An RTT sample only when the first SYN was answered
                    // (Karn's rule: a retransmitted SYN's answer is ambiguous).
                    if schedule.syn_offset(1).is_none_or(|o| elapsed < o) {
                        self.handshake_rtt.sample(elapsed);
                    }
                }
                // The first TCP success wins; the others are cancelled.
                for a in attempts.drain(..) {
                    call.cost.syns += syns_sent(&schedule, now - a.launched);
                    let _ = cx.close(a.socket);
                }
                self.begin_exchange(cx, won.socket, won.route, false);
            }
            SocketEvent::ConnectFailed(e) => {
                let a = attempts.remove(idx);
                if !a.tcp_up {
                    call.cost.syns += syns_sent(&schedule, now - a.launched);
                }
                first_error.get_or_insert(CallFailure::ConnectFailed(e));
                if let Some(f) = call.failed_routes.get_mut(a.route) {
                    *f = true;
                }
            }
            // Nothing else can happen before the handshake completes.
            _ => {}
        }
    }

    fn on_exchange_event(&mut self, cx: &mut ClientCx<'_>, event: SocketEvent) {
        let now = cx.now();
        let (read_timeout, request_timeout, pool) = (
            self.cfg.read_timeout,
            self.cfg.request_timeout,
            self.cfg.pool,
        );
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let Phase::Exchange {
            socket,
            route,
            read_deadline,
            response,
            ..
        } = &mut call.phase
        else {
            return;
        };
        let (socket, route) = (*socket, *route);
        match event {
            SocketEvent::Data(d) => {
                response.extend_from_slice(&d);
                if let Some(rt) = read_timeout {
                    *read_deadline = now + rt;
                }
                if let Some(rt) = request_timeout {
                    call.request_deadline = now + rt;
                }
                match http::message_len(response) {
                    Ok(Some(n)) if response.len() >= n => {
                        let status = http::status(response).unwrap_or(0);
                        let reusable = pool.is_some()
                            && !says_close(response)
                            && !says_close(&call.request)
                            && response.len() == n;
                        let ok = CallSuccess {
                            status,
                            response_len: n,
                        };
                        if reusable {
                            // Hand the connection to the pool; the emptied
                            // phase leaves `finish` nothing to close.
                            call.phase = Phase::Connecting {
                                attempts: Vec::new(),
                                pending: VecDeque::new(),
                                next_launch: now,
                                first_error: None,
                            };
                            self.idle.push(IdleConn {
                                socket,
                                route,
                                since: now,
                            });
                            let max = pool.map_or(0, |p| p.max_idle);
                            while self.idle.len() > max {
                                let old = self.idle.remove(0);
                                let _ = cx.close(old.socket);
                            }
                        }
                        self.finish(cx, Ok(ok));
                    }
                    Ok(_) => {}
                    Err(_) => {
                        self.exchange_failed(cx, ExchangeEnd::Final(CallFailure::BadResponse))
                    }
                }
            }
            SocketEvent::Closed => {
                self.exchange_failed(cx, ExchangeEnd::Retryable(CallFailure::UnexpectedEof));
            }
            SocketEvent::Reset | SocketEvent::TimedOut => {
                self.exchange_failed(cx, ExchangeEnd::Retryable(CallFailure::Reset));
            }
            // No early data: the peers' TLS never enables it.
            SocketEvent::Connected
            | SocketEvent::TcpConnected
            | SocketEvent::EarlyData { .. }
            | SocketEvent::ConnectFailed(_) => {}
        }
    }
}

impl CallClient for PeerClient {
    fn start_call(&mut self, cx: &mut ClientCx<'_>, id: CallId, spec: &CallSpec) {
        if self.call.is_some() || self.cfg.routes.is_empty() {
            self.outcomes.push_back(CallOutcome {
                id,
                result: Err(CallFailure::Rejected),
                cost: CallCost::default(),
            });
            return;
        }
        self.expire_idle(cx);
        let now = cx.now();
        self.call = Some(Call {
            id,
            request: self.build_request(spec.request_len),
            phase: Phase::Connecting {
                attempts: Vec::new(),
                pending: (0..self.cfg.routes.len()).collect(),
                next_launch: now,
                first_error: None,
            },
            cost: CallCost::default(),
            request_deadline: self.cfg.request_timeout.map_or(Instant::MAX, |d| now + d),
            retried_stale: false,
            failed_routes: vec![false; self.cfg.routes.len()],
        });
        // The most recently used idle connection, if any.
        if let Some(conn) = self.idle.pop() {
            self.begin_exchange(cx, conn.socket, conn.route, true);
        }
        self.advance(cx);
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        if let Some(i) = self.idle.iter().position(|c| c.socket == socket) {
            // An idle connection closed, reset or spoke out of turn: evict it.
            let conn = self.idle.remove(i);
            let _ = cx.close(conn.socket);
        } else if let Some(call) = &self.call {
            match &call.phase {
                Phase::Connecting { attempts, .. } => {
                    if let Some(i) = attempts.iter().position(|a| a.socket == socket) {
                        self.on_attempt_event(cx, i, event);
                    }
                }
                Phase::Exchange { socket: s, .. } if *s == socket => {
                    self.on_exchange_event(cx, event);
                }
                Phase::Exchange { .. } => {}
            }
        }
        self.advance(cx);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        self.advance(cx);
    }

    fn poll_outcome(&mut self) -> Option<CallOutcome> {
        self.outcomes.pop_front()
    }
}
