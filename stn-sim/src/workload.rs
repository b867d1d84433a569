//! The benchmark's application loop as a reusable harness.
//!
//! A [`CallClient`] is anything that can carry one request/response "call"
//! (a CGI in Mars terms): a peer model of [`crate::clients::peers`], or later stn-proto's
//! engine behind a small adapter (`submit(task)` → `TaskFinished`). The
//! workloads drive it:
//! - [`SequentialWorkload`]: the Mars benchmark loop (mars-stn.md §10.1,
//!   peers.md §0): one call at a time, the next one started the instant the
//!   previous one ends, until `target_successes` successes (benchmark: 500)
//!   or `max_calls` calls; every call is recorded.
//! - [`SingleShot`]: one call at the client's start time (the sensitivity
//!   test: one request at t = 0 into a "100% loss for R s" network).
//!
//! [`WorkloadStats`] summarises the records the way the benchmark reports
//! them: attempts (= calls started; a failed call counts one attempt, as in
//! mars-stn.md §10.1), successes, total time, mean and nearest-rank
//! percentiles of successful call durations.

use stn_proto::ConnectError;
use stn_proto::{Duration, Instant};

use crate::units::duration_nanos_saturating;

use crate::client::{ClientCx, SimClient};
use crate::socket::{SocketEvent, SocketId};

/// Identifies one call of a workload (0, 1, 2, … in start order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// What to send in one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSpec {
    /// Request body size in bytes (the benchmark's protobuf body is tens of
    /// bytes; its 64 KB / 128 KB variants set this).
    pub request_len: usize,
}

/// A successful call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSuccess {
    /// HTTP status (or 200 for non-HTTP clients that succeeded).
    pub status: u16,
    /// Response bytes received (head + body).
    pub response_len: usize,
}

/// Why a call failed (the client gave up on it; workloads never retry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallFailure {
    /// A per-attempt connect timeout of the client fired (on the last route).
    ConnectTimeout,
    /// The OS reported the connect failure (refused, or SYN schedule exhausted).
    ConnectFailed(ConnectError),
    /// No response byte within the client's idle read timeout.
    ReadTimeout,
    /// The request could not be written within the write timeout.
    WriteTimeout,
    /// An idle request timer covering the whole call fired
    /// (NSURLSession's `timeoutIntervalForRequest`).
    RequestTimeout,
    /// The connection was reset, or the OS gave up retransmitting.
    Reset,
    /// The server closed before the response was complete.
    UnexpectedEof,
    /// The response could not be framed.
    BadResponse,
    /// The client refused the call without sending anything (e.g. a limit).
    Rejected,
}

/// What a call cost on the wire (peers.md §8.4: count SYNs and requests as
/// cost, not only calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCost {
    /// TCP connection attempts started for this call.
    pub connects: u32,
    /// SYNs sent by those attempts. Derived from the stack's SYN schedule and
    /// how long each attempt lasted (the socket seam does not expose SYN
    /// counts); SYN-ACK retransmissions by the server are not counted.
    pub syns: u32,
    /// Times the request was handed to a connection (retries count again).
    pub requests: u32,
    /// The call ran on a pooled (already established) connection at least once.
    pub reused: bool,
}

impl CallCost {
    /// Adds `other`'s counters to these.
    pub fn add(&mut self, other: &CallCost) {
        self.connects += other.connects;
        self.syns += other.syns;
        self.requests += other.requests;
        self.reused |= other.reused;
    }
}

/// The end of one call, as a [`CallClient`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallOutcome {
    /// Which call.
    pub id: CallId,
    /// Success or the reason for failure.
    pub result: Result<CallSuccess, CallFailure>,
    /// Wire cost.
    pub cost: CallCost,
}

/// A client that can carry calls inside a simulation.
///
/// Contract:
/// - [`CallClient::start_call`] starts a call *now*; the client must end it
///   exactly once by making a [`CallOutcome`] with the same id available from
///   [`CallClient::poll_outcome`] (possibly already during `start_call`).
/// - The call client owns its [`ClientCx`]'s wake-up timer
///   ([`ClientCx::set_wakeup`]); the workload never sets it and forwards every
///   [`SimClient::on_wakeup`] and socket event.
/// - After every call into the client the workload drains `poll_outcome`.
///
/// A sans-IO engine fits directly: `start_call` = `submit`, the callbacks =
/// `handle_input` / `handle_timeout`, then drain `poll_output` (socket
/// operations, and `TaskFinished` → a [`CallOutcome`]) and set the wake-up to
/// `poll_timeout()`.
pub trait CallClient {
    /// Starts call `id` now.
    fn start_call(&mut self, cx: &mut ClientCx<'_>, id: CallId, spec: &CallSpec);

    /// A socket event for one of this client's sockets.
    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent);

    /// The wake-up time the client set has come.
    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>);

    /// The next finished call, if any.
    fn poll_outcome(&mut self) -> Option<CallOutcome>;
}

impl<T: CallClient + ?Sized> CallClient for Box<T> {
    fn start_call(&mut self, cx: &mut ClientCx<'_>, id: CallId, spec: &CallSpec) {
        (**self).start_call(cx, id, spec);
    }
    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        (**self).on_socket_event(cx, socket, event);
    }
    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        (**self).on_wakeup(cx);
    }
    fn poll_outcome(&mut self) -> Option<CallOutcome> {
        (**self).poll_outcome()
    }
}

/// One finished call as a workload records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Which call.
    pub id: CallId,
    /// When the workload started it.
    pub started: Instant,
    /// When its outcome arrived.
    pub finished: Instant,
    /// Success or failure.
    pub result: Result<CallSuccess, CallFailure>,
    /// Wire cost.
    pub cost: CallCost,
}

impl CallRecord {
    /// The record of the call that `out` ended at `finished`, started at
    /// `started`.
    pub fn ended(out: CallOutcome, started: Instant, finished: Instant) -> Self {
        CallRecord {
            id: out.id,
            started,
            finished,
            result: out.result,
            cost: out.cost,
        }
    }

    /// `finished - started`.
    pub fn duration(&self) -> Duration {
        self.finished - self.started
    }

    /// `true` for a successful call.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }
}

/// Parameters of a [`SequentialWorkload`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequentialConfig {
    /// Request body size of every call.
    pub request_len: usize,
    /// Stop after this many successful calls (benchmark: 500).
    pub target_successes: u64,
    /// Stop after this many calls in all (bounds hopeless networks).
    pub max_calls: u64,
}

impl SequentialConfig {
    /// The Mars benchmark: 500 successes of a small request (64-byte body),
    /// at most 5000 calls.
    pub fn benchmark() -> Self {
        SequentialConfig {
            request_len: 64,
            target_successes: 500,
            max_calls: 5000,
        }
    }

    /// [`SequentialConfig::benchmark`] with another success target (and
    /// `max_calls` = 10 × target).
    pub fn until_successes(target: u64) -> Self {
        SequentialConfig {
            target_successes: target,
            max_calls: target.saturating_mul(10),
            ..Self::benchmark()
        }
    }
}

/// Shared bookkeeping of the workloads: the in-flight call and the records.
#[derive(Debug)]
struct Ledger {
    spec: CallSpec,
    in_flight: Option<(CallId, Instant)>,
    next_id: u64,
    records: Vec<CallRecord>,
    successes: u64,
}

impl Ledger {
    fn new(spec: CallSpec) -> Self {
        Ledger {
            spec,
            in_flight: None,
            next_id: 0,
            records: Vec::new(),
            successes: 0,
        }
    }

    fn start<C: CallClient>(&mut self, client: &mut C, cx: &mut ClientCx<'_>) {
        let id = CallId(self.next_id);
        self.next_id += 1;
        self.in_flight = Some((id, cx.now()));
        client.start_call(cx, id, &self.spec);
    }

    /// Records every available outcome; returns how many ended the in-flight call.
    fn drain<C: CallClient>(&mut self, client: &mut C, cx: &mut ClientCx<'_>) -> bool {
        let mut ended = false;
        while let Some(out) = client.poll_outcome() {
            let Some((id, started)) = self.in_flight else {
                continue; // an outcome for no call: a broken client; ignore it
            };
            if out.id != id {
                continue;
            }
            self.in_flight = None;
            let rec = CallRecord::ended(out, started, cx.now());
            let nanos = duration_nanos_saturating(rec.duration());
            if rec.is_ok() {
                self.successes += 1;
                cx.note("workload-call-ok", nanos);
            } else {
                cx.note("workload-call-failed", nanos);
            }
            self.records.push(rec);
            ended = true;
        }
        ended
    }
}

/// The benchmark loop: sequential calls until enough successes.
///
/// ```
/// use stn_sim::{Simulation, apps::FixedResponseApp, path::PathSchedule, preset::Preset};
/// use stn_sim::clients::peers::{Kernel, OkHttp2017};
/// use stn_sim::workload::{SequentialConfig, SequentialWorkload, WorkloadStats};
/// use stn_proto::{Duration, Instant};
///
/// let server: std::net::SocketAddr = "10.0.0.2:8080".parse().unwrap();
/// let mut sim = Simulation::new(1);
/// sim.add_host(server.ip(), PathSchedule::constant(Preset::ThreeG.conditions()));
/// sim.listen(server, FixedResponseApp::new(100, Duration::ZERO)).unwrap();
/// let peer = OkHttp2017::benchmarked(server, Kernel::LinuxClassic);
/// let stack = peer.stack();
/// let id = sim.add_client(SequentialWorkload::new(peer, SequentialConfig::until_successes(5)), stack);
/// sim.run_until_finished(Instant::from_secs(600));
/// let stats = WorkloadStats::from_records(sim.client(id).records());
/// assert_eq!((stats.successes, stats.attempts), (5, 5));
/// ```
#[derive(Debug)]
pub struct SequentialWorkload<C> {
    client: C,
    cfg: SequentialConfig,
    ledger: Ledger,
}

impl<C: CallClient> SequentialWorkload<C> {
    /// A workload that has not started yet.
    pub fn new(client: C, cfg: SequentialConfig) -> Self {
        let spec = CallSpec {
            request_len: cfg.request_len,
        };
        SequentialWorkload {
            client,
            cfg,
            ledger: Ledger::new(spec),
        }
    }

    /// Every finished call, in order.
    pub fn records(&self) -> &[CallRecord] {
        &self.ledger.records
    }

    /// Successful calls so far.
    pub fn successes(&self) -> u64 {
        self.ledger.successes
    }

    /// The call client.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// Summary of the records so far.
    pub fn stats(&self) -> WorkloadStats {
        WorkloadStats::from_records(&self.ledger.records)
    }

    fn after_callback(&mut self, cx: &mut ClientCx<'_>) {
        // A call may end synchronously inside start_call, so loop.
        while self.ledger.drain(&mut self.client, cx) {
            if self.is_finished() {
                return;
            }
            self.ledger.start(&mut self.client, cx);
        }
    }
}

impl<C: CallClient> SimClient for SequentialWorkload<C> {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        if !self.is_finished() {
            self.ledger.start(&mut self.client, cx);
            self.after_callback(cx);
        }
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        self.client.on_socket_event(cx, socket, event);
        self.after_callback(cx);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        self.client.on_wakeup(cx);
        self.after_callback(cx);
    }

    fn is_finished(&self) -> bool {
        self.ledger.in_flight.is_none()
            && (self.ledger.successes >= self.cfg.target_successes
                || self.ledger.records.len() as u64 >= self.cfg.max_calls)
    }
}

/// One call at the client's start time; records its completion or failure.
///
/// The client keeps receiving events afterwards (e.g. a pooled connection
/// closing) but the workload is finished once the call ended.
#[derive(Debug)]
pub struct SingleShot<C> {
    client: C,
    ledger: Ledger,
}

impl<C: CallClient> SingleShot<C> {
    /// One call with a `request_len`-byte body.
    pub fn new(client: C, request_len: usize) -> Self {
        SingleShot {
            client,
            ledger: Ledger::new(CallSpec { request_len }),
        }
    }

    /// The call, once it ended.
    pub fn record(&self) -> Option<&CallRecord> {
        self.ledger.records.first()
    }

    /// The call client.
    pub fn client(&self) -> &C {
        &self.client
    }
}

impl<C: CallClient> SimClient for SingleShot<C> {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        if self.ledger.next_id == 0 {
            self.ledger.start(&mut self.client, cx);
            self.ledger.drain(&mut self.client, cx);
        }
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        self.client.on_socket_event(cx, socket, event);
        self.ledger.drain(&mut self.client, cx);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        self.client.on_wakeup(cx);
        self.ledger.drain(&mut self.client, cx);
    }

    fn is_finished(&self) -> bool {
        !self.ledger.records.is_empty()
    }
}

/// A summary of call records, as the benchmark reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkloadStats {
    /// Calls started and finished: the benchmark's "attempts" (each failed
    /// call counts one, mars-stn.md §10.1).
    pub attempts: u64,
    /// Successful calls.
    pub successes: u64,
    /// Failed calls.
    pub failures: u64,
    /// From the first call's start to the last call's end.
    pub total_time: Duration,
    /// Sum of successful call durations (the benchmark's `suc_time`).
    pub success_time: Duration,
    /// Mean successful call duration (`suc_time / task_suc`).
    pub mean_ok: Option<Duration>,
    /// Median of successful call durations (nearest rank).
    pub p50_ok: Option<Duration>,
    /// 95th percentile (nearest rank).
    pub p95_ok: Option<Duration>,
    /// 99th percentile (nearest rank).
    pub p99_ok: Option<Duration>,
    /// Wire cost summed over all calls.
    pub cost: CallCost,
}

impl WorkloadStats {
    /// Summarises `records` (in any order).
    ///
    /// ```
    /// use stn_sim::workload::{CallCost, CallId, CallRecord, CallSuccess, CallFailure, WorkloadStats};
    /// use stn_proto::{Duration, Instant};
    /// let rec = |s: u64, e: u64, ok: bool| CallRecord {
    ///     id: CallId(s), started: Instant::from_secs(s), finished: Instant::from_secs(e),
    ///     result: if ok { Ok(CallSuccess { status: 200, response_len: 1 }) } else { Err(CallFailure::ReadTimeout) },
    ///     cost: CallCost::default(),
    /// };
    /// let s = WorkloadStats::from_records(&[rec(0, 2, true), rec(2, 12, false), rec(12, 16, true)]);
    /// assert_eq!((s.attempts, s.successes, s.failures), (3, 2, 1));
    /// assert_eq!(s.total_time, Duration::from_secs(16));
    /// assert_eq!(s.mean_ok, Some(Duration::from_secs(3)));
    /// assert_eq!(s.p50_ok, Some(Duration::from_secs(2)));
    /// assert_eq!(s.p99_ok, Some(Duration::from_secs(4)));
    /// ```
    pub fn from_records(records: &[CallRecord]) -> Self {
        let mut ok: Vec<Duration> = records
            .iter()
            .filter(|r| r.is_ok())
            .map(CallRecord::duration)
            .collect();
        ok.sort_unstable();
        let success_time: Duration = ok.iter().sum();
        let first = records.iter().map(|r| r.started).min();
        let last = records.iter().map(|r| r.finished).max();
        let mut cost = CallCost::default();
        for r in records {
            cost.add(&r.cost);
        }
        let n = ok.len() as u64;
        WorkloadStats {
            attempts: records.len() as u64,
            successes: n,
            failures: records.len() as u64 - n,
            total_time: match (first, last) {
                (Some(a), Some(b)) => b - a,
                _ => Duration::ZERO,
            },
            success_time,
            mean_ok: (n > 0)
                .then(|| Duration::from_nanos(duration_nanos_saturating(success_time) / n)),
            p50_ok: nearest_rank(&ok, 50),
            p95_ok: nearest_rank(&ok, 95),
            p99_ok: nearest_rank(&ok, 99),
            cost,
        }
    }
}

/// The `pct`-th percentile of `sorted` (ascending) by the nearest-rank
/// method: the value at 1-based rank `⌈pct/100 · n⌉` (rank at least 1), so
/// the result is always one of the samples; `None` for no samples.
///
/// ```
/// use stn_sim::workload::nearest_rank;
/// let v = [1u32, 2, 3, 4, 5, 6, 7, 8, 9, 10];
/// assert_eq!(nearest_rank(&v, 50), Some(5));
/// assert_eq!(nearest_rank(&v, 95), Some(10));
/// assert_eq!(nearest_rank(&v, 0), Some(1));
/// assert_eq!(nearest_rank::<u32>(&[], 50), None);
/// ```
pub fn nearest_rank<T: Copy>(sorted: &[T], pct: u32) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (u64::from(pct.min(100)) * n).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_small_sets() {
        assert_eq!(nearest_rank(&[7u8], 99), Some(7));
        assert_eq!(nearest_rank(&[1u8, 2], 50), Some(1));
        assert_eq!(nearest_rank(&[1u8, 2], 51), Some(2));
        let v: Vec<u32> = (1..=200).collect();
        assert_eq!(nearest_rank(&v, 99), Some(198));
        assert_eq!(nearest_rank(&v, 100), Some(200));
        assert_eq!(nearest_rank(&v, 250), Some(200));
    }

    #[test]
    fn stats_of_nothing() {
        let s = WorkloadStats::from_records(&[]);
        assert_eq!(s.attempts, 0);
        assert_eq!(s.mean_ok, None);
        assert_eq!(s.total_time, Duration::ZERO);
    }
}
