//! The driver loop: one task owns the [`Engine`] and applies the drain rule.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant as StdInstant;

use async_channel::{Receiver, Sender, TrySendError};
use bytes::Bytes;
use futures_core::Stream;
use stn_proto::engine::{Action, Engine, Input, JudgeRequest, LinkStatus, Report, Verdict};
use stn_proto::error::Response;
use stn_proto::io::{ConnEvent, ConnId};
use stn_proto::long_link::IdentifyDecision;
use stn_proto::net::NetworkKind;
use stn_proto::task::{Task, TaskId};

use crate::clock::Clock;
use crate::conn::{self, LiveGuard};
use crate::error::Error;
use crate::runtime::{AsyncTimer, Runtime};

/// How a task ended, with what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The engine's id for the task (`None` if it was refused before getting one).
    pub id: Option<TaskId>,
    /// The response, or why there is none.
    pub outcome: Result<Response, Error>,
    /// Attempts the task made (0 if it never started one).
    pub attempts: u32,
}

/// A server push received on the long link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Bytes,
}

/// What one endpoint looks like to the engine's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointState {
    /// The endpoint.
    pub addr: SocketAddr,
    /// Whether it is banned now.
    pub banned: bool,
}

/// A debug snapshot of the driver and its engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Tasks the engine holds (queued, running or parked).
    pub engine_tasks: usize,
    /// `send` calls waiting for their task to end.
    pub waiting: usize,
    /// Connections the engine considers open.
    pub engine_connections: usize,
    /// Connections the driver has a handle for.
    pub driver_connections: usize,
    /// Connection tasks still running (they end shortly after a close).
    pub live_connection_tasks: usize,
    /// Short-link attempts running.
    pub short_in_flight: usize,
    /// Tasks awaiting a response on the long link.
    pub long_in_flight: usize,
    /// The long link's last reported status.
    pub long_link: Option<LinkStatus>,
    /// Every endpoint the driver has connected to, with its ban state.
    pub endpoints: Vec<EndpointState>,
    /// Pushes dropped because a subscriber did not keep up.
    pub pushes_dropped: u64,
}

/// Requests from the client handles to the driver.
pub(crate) enum Command {
    Submit {
        ticket: u64,
        task: Task,
        reply: Sender<Finished>,
    },
}

/// Unbounded, small, rare (or, for cancels, at most one per `send`) control messages.
pub(crate) enum Control {
    Cancel(u64),
    NetworkChanged(NetworkKind),
    NetworkLost,
    NetworkAvailable(NetworkKind),
    Foreground(bool),
    Authed(bool),
    Subscribe(Sender<Push>),
    Snapshot(Sender<Snapshot>),
    Shutdown(Sender<()>),
}

/// The app's response judge (Mars `Buf2Resp`), see `Builder::judge`.
pub(crate) type Judge = Arc<dyn Fn(&JudgeRequest) -> Verdict + Send + Sync>;

struct Pending {
    ticket: u64,
    reply: Sender<Finished>,
    span: tracing::Span,
}

/// Most messages handled from one queue before the others get a turn.
const BATCH: usize = 64;
/// Rounds of work in one poll before yielding to the executor.
const ROUNDS: usize = 16;

/// The driver loop (a future spawned on the runtime).
pub(crate) struct Driver {
    rt: Arc<dyn Runtime>,
    engine: Engine,
    clock: Clock,
    timer: Pin<Box<dyn AsyncTimer>>,
    timer_at: Option<StdInstant>,
    commands: Pin<Box<Receiver<Command>>>,
    control: Pin<Box<Receiver<Control>>>,
    events: Pin<Box<Receiver<Input>>>,
    events_tx: Sender<Input>,
    conns: BTreeMap<ConnId, Sender<Bytes>>,
    live: Arc<AtomicUsize>,
    pending: BTreeMap<TaskId, Pending>,
    tickets: BTreeMap<u64, TaskId>,
    subscribers: Vec<Sender<Push>>,
    pushes_dropped: u64,
    identify: IdentifyDecision,
    judge: Option<Judge>,
    endpoints: BTreeSet<SocketAddr>,
    long_link: Option<LinkStatus>,
    shutdown_waiters: Vec<Sender<()>>,
    done: bool,
}

pub(crate) struct DriverParts {
    pub(crate) rt: Arc<dyn Runtime>,
    pub(crate) engine: Engine,
    pub(crate) clock: Clock,
    pub(crate) commands: Receiver<Command>,
    pub(crate) control: Receiver<Control>,
    pub(crate) event_capacity: usize,
    pub(crate) identify: IdentifyDecision,
    pub(crate) judge: Option<Judge>,
}

impl Driver {
    pub(crate) fn new(parts: DriverParts) -> Self {
        let (events_tx, events) = async_channel::bounded(parts.event_capacity.max(1));
        let timer = parts.rt.new_timer(parts.rt.now());
        Driver {
            timer,
            timer_at: None,
            engine: parts.engine,
            clock: parts.clock,
            commands: Box::pin(parts.commands),
            control: Box::pin(parts.control),
            events: Box::pin(events),
            events_tx,
            conns: BTreeMap::new(),
            live: Arc::new(AtomicUsize::new(0)),
            pending: BTreeMap::new(),
            tickets: BTreeMap::new(),
            subscribers: Vec::new(),
            pushes_dropped: 0,
            identify: parts.identify,
            judge: parts.judge,
            endpoints: BTreeSet::new(),
            long_link: None,
            shutdown_waiters: Vec::new(),
            done: false,
            rt: parts.rt,
        }
    }

    fn now(&self) -> stn_proto::time::Instant {
        self.clock.to_proto(self.rt.now())
    }

    /// The drain rule: run every action the engine has queued.
    fn drain(&mut self) {
        while let Some(action) = self.engine.poll_action() {
            self.execute(action);
        }
    }

    fn execute(&mut self, action: Action) {
        match action {
            Action::Connect { conn, addr } => {
                tracing::debug!(%conn, %addr, "connect");
                self.endpoints.insert(addr);
                let (tx, rx) = async_channel::unbounded();
                self.conns.insert(conn, tx);
                let connect = self.rt.connect(addr);
                let live = LiveGuard::new(&self.live);
                let events = self.events_tx.clone();
                self.rt
                    .spawn(Box::pin(conn::run(conn, addr, connect, events, rx, live)));
            }
            Action::Send { conn, data } => {
                // Unbounded per connection: the engine's own caps (queued
                // tasks, in-flight limits, body sizes) bound what it writes.
                if let Some(tx) = self.conns.get(&conn) {
                    let _ = tx.try_send(data);
                }
            }
            Action::Close { conn } => {
                tracing::trace!(%conn, "close");
                self.conns.remove(&conn);
            }
            Action::Resolve { host } => {
                tracing::debug!(%host, "resolve");
                let lookup = self.rt.resolve(host.clone());
                let events = self.events_tx.clone();
                self.rt.spawn(Box::pin(async move {
                    let input = match lookup.await.map(distinct_ips) {
                        Ok(addrs) if !addrs.is_empty() => Input::Resolved { host, addrs },
                        Ok(_) => Input::ResolveFailed { host },
                        Err(error) => {
                            tracing::debug!(%host, %error, "resolve failed");
                            Input::ResolveFailed { host }
                        }
                    };
                    let _ = events.send(input).await;
                }));
            }
            Action::TaskFinished {
                id,
                outcome,
                attempts,
                ..
            } => {
                let Some(p) = self.pending.remove(&id) else {
                    return;
                };
                self.tickets.remove(&p.ticket);
                match &outcome {
                    Ok(r) => {
                        tracing::debug!(parent: &p.span, attempts, bytes = r.body.len(), "task succeeded")
                    }
                    Err(error) => tracing::debug!(parent: &p.span, attempts, %error, "task failed"),
                }
                let _ = p.reply.try_send(Finished {
                    id: Some(id),
                    outcome: outcome.map_err(Error::from),
                    attempts,
                });
            }
            Action::Push { cmd_id, body } => {
                tracing::debug!(cmd_id, len = body.len(), "push");
                let push = Push { cmd_id, body };
                let mut dropped = 0;
                self.subscribers.retain(|s| match s.try_send(push.clone()) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        dropped += 1;
                        true
                    }
                    Err(TrySendError::Closed(_)) => false,
                });
                if dropped > 0 {
                    tracing::warn!(
                        cmd_id,
                        dropped,
                        "push dropped: a subscriber is not keeping up"
                    );
                    self.pushes_dropped += dropped;
                }
            }
            Action::AskIdentify => {
                let now = self.now();
                self.engine.identify_answer(now, self.identify.clone());
            }
            Action::IdentifyResponse { cmd_id, body } => {
                tracing::debug!(cmd_id, len = body.len(), "identify response");
            }
            Action::Judge(request) => {
                let verdict = self.judge_response(&request);
                let now = self.now();
                self.engine.judge(now, request.id, verdict);
            }
            Action::Report(report) => self.report(&report),
            Action::LongLink(status) => {
                tracing::debug!(?status, "long link");
                self.long_link = Some(status);
            }
        }
    }

    /// Runs the app's judge on a response. A judge that panics has not
    /// understood the response: the task ends with a decode error instead of
    /// taking the driver (and every other task) down with it.
    fn judge_response(&self, request: &JudgeRequest) -> Verdict {
        let Some(judge) = self.judge.as_ref() else {
            return Verdict::Accept;
        };
        let span = self
            .pending
            .get(&request.id)
            .map_or_else(tracing::Span::none, |p| p.span.clone());
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge(request))) {
            Ok(verdict) => {
                tracing::debug!(parent: &span, attempt = request.attempt, ?verdict, "response judged");
                verdict
            }
            Err(_) => {
                tracing::error!(parent: &span, attempt = request.attempt, "the response judge panicked; ending the task");
                Verdict::End
            }
        }
    }

    fn report(&self, r: &Report) {
        let span = self
            .pending
            .get(&r.task)
            .map_or_else(tracing::Span::none, |p| p.span.clone());
        let duration_ms = (r.ended - r.started).as_secs_f64() * 1e3;
        match &r.error {
            None => tracing::debug!(
                parent: &span, attempt = r.attempt, channel = ?r.channel, endpoint = ?r.endpoint,
                duration_ms, connect_attempts = r.connect_attempts, bytes_sent = r.bytes_sent,
                bytes_received = r.bytes_received, "attempt succeeded"
            ),
            Some(error) => tracing::debug!(
                parent: &span, attempt = r.attempt, channel = ?r.channel, endpoint = ?r.endpoint,
                duration_ms, connect_attempts = r.connect_attempts, %error, "attempt failed"
            ),
        }
    }

    fn on_command(&mut self, cmd: Command) {
        let now = self.now();
        match cmd {
            Command::Submit {
                ticket,
                task,
                reply,
            } => {
                if reply.is_closed() {
                    // The send future was dropped before its task got here.
                    return;
                }
                let mut task = task;
                if self.judge.is_some() {
                    task.judge = true;
                }
                let (cmd_id, cgi, channel) = (task.cmd_id, task.cgi.clone(), task.channel);
                match self.engine.submit(now, task) {
                    Ok(id) => {
                        let span =
                            tracing::debug_span!("stn_task", id = id.get(), cmd_id, %cgi, ?channel);
                        tracing::debug!(parent: &span, "task submitted");
                        self.pending.insert(
                            id,
                            Pending {
                                ticket,
                                reply,
                                span,
                            },
                        );
                        self.tickets.insert(ticket, id);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "task refused");
                        let _ = reply.try_send(Finished {
                            id: None,
                            outcome: Err(e.into()),
                            attempts: 0,
                        });
                    }
                }
            }
        }
        self.drain();
    }

    fn on_control(&mut self, ctl: Control) {
        let now = self.now();
        match ctl {
            Control::Cancel(ticket) => {
                if let Some(id) = self.tickets.get(&ticket).copied() {
                    tracing::debug!(id = id.get(), "task cancelled (send dropped)");
                    self.engine.cancel(now, id);
                }
            }
            Control::NetworkChanged(kind) => self.engine.network_changed(now, kind),
            Control::NetworkLost => self.engine.network_lost(now),
            Control::NetworkAvailable(kind) => self.engine.network_available(now, kind),
            Control::Foreground(fg) => self.engine.set_foreground(now, fg),
            Control::Authed(authed) => self.engine.set_authed(now, authed),
            Control::Subscribe(tx) => self.subscribers.push(tx),
            Control::Snapshot(tx) => {
                let _ = tx.try_send(self.snapshot(now));
            }
            Control::Shutdown(tx) => {
                self.shutdown_waiters.push(tx);
                self.shutdown();
            }
        }
        self.drain();
    }

    fn snapshot(&self, now: stn_proto::time::Instant) -> Snapshot {
        let history = self.engine.endpoint_history();
        Snapshot {
            engine_tasks: self.engine.task_count(),
            waiting: self.pending.len(),
            engine_connections: self.engine.open_connections(),
            driver_connections: self.conns.len(),
            live_connection_tasks: self.live.load(Ordering::Relaxed),
            short_in_flight: self.engine.short_in_flight(),
            long_in_flight: self.engine.long_in_flight(),
            long_link: self.long_link,
            endpoints: self
                .endpoints
                .iter()
                .map(|&addr| EndpointState {
                    addr,
                    banned: history.is_banned(now, addr),
                })
                .collect(),
            pushes_dropped: self.pushes_dropped,
        }
    }

    fn on_input(&mut self, input: Input) {
        if let Input::Conn {
            conn,
            event: ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_),
        } = &input
        {
            // The connection task has ended: forget its write queue.
            self.conns.remove(conn);
        }
        let now = self.now();
        self.engine.handle_input(now, input);
        self.drain();
    }

    /// Ends every task with [`Error::Shutdown`] and stops the loop.
    fn shutdown(&mut self) {
        if self.done {
            return;
        }
        let now = self.now();
        self.engine.shutdown(now);
        self.drain();
        // The engine ended each of its tasks; anything left is a driver-side straggler.
        for (_, p) in std::mem::take(&mut self.pending) {
            let _ = p.reply.try_send(Finished {
                id: None,
                outcome: Err(Error::Shutdown),
                attempts: 0,
            });
        }
        self.tickets.clear();
        self.conns.clear();
        self.subscribers.clear();
        self.commands.close();
        while let Ok(Command::Submit { reply, .. }) = self.commands.try_recv() {
            let _ = reply.try_send(Finished {
                id: None,
                outcome: Err(Error::Shutdown),
                attempts: 0,
            });
        }
        self.control.close();
        while let Ok(ctl) = self.control.try_recv() {
            match ctl {
                Control::Shutdown(tx) => self.shutdown_waiters.push(tx),
                Control::Snapshot(tx) => {
                    let _ = tx.try_send(self.snapshot(now));
                }
                _ => {}
            }
        }
        for w in self.shutdown_waiters.drain(..) {
            let _ = w.try_send(());
        }
        self.done = true;
        tracing::debug!("driver shut down");
    }

    /// Points the timer at the engine's next deadline; true if it has passed.
    fn timer_due(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(at) = self.engine.poll_timeout() else {
            self.timer_at = None;
            return false;
        };
        let Some(at) = self.clock.to_std(at) else {
            self.timer_at = None;
            return false;
        };
        if self.timer_at != Some(at) {
            self.timer.as_mut().reset(at);
            self.timer_at = Some(at);
        }
        self.timer.as_mut().poll(cx).is_ready() || self.rt.now() >= at
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        for _ in 0..ROUNDS {
            if this.done {
                return Poll::Ready(());
            }
            let mut progressed = false;
            for _ in 0..BATCH {
                match this.control.as_mut().poll_next(cx) {
                    Poll::Ready(Some(ctl)) => {
                        progressed = true;
                        this.on_control(ctl);
                        if this.done {
                            return Poll::Ready(());
                        }
                    }
                    _ => break,
                }
            }
            for _ in 0..BATCH {
                match this.events.as_mut().poll_next(cx) {
                    Poll::Ready(Some(input)) => {
                        progressed = true;
                        this.on_input(input);
                    }
                    _ => break,
                }
            }
            for _ in 0..BATCH {
                match this.commands.as_mut().poll_next(cx) {
                    Poll::Ready(Some(cmd)) => {
                        progressed = true;
                        this.on_command(cmd);
                    }
                    Poll::Ready(None) => {
                        // Every client handle is gone.
                        this.shutdown();
                        return Poll::Ready(());
                    }
                    Poll::Pending => break,
                }
            }
            if this.timer_due(cx) {
                progressed = true;
                let now = this.now();
                this.engine.handle_timeout(now);
                this.drain();
                // Force a fresh reset: the engine may return the same deadline
                // again only if it made progress, and the timer has fired.
                this.timer_at = None;
            }
            if !progressed {
                return Poll::Pending;
            }
        }
        // Plenty done: let other tasks run, then come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Dropped without a shutdown (the runtime went away): each waiting
        // send sees its reply channel close and ends with Error::Shutdown.
        if !self.done {
            tracing::debug!(waiting = self.pending.len(), "driver dropped");
        }
    }
}

/// The distinct IPs of a resolver's answer, in its order.
///
/// The OS resolver (getaddrinfo) answers with one entry per socket type
/// and protocol, so one address usually comes back two or three times;
/// left in, each copy would be raced as a separate candidate. The engine
/// keeps repeats in [`Input::Resolved`] on purpose (the Mars benchmark's
/// `onNewDns` returns one IP four times), so the repeats are dropped here,
/// where they are known to be an artefact of the OS lookup.
fn distinct_ips(addrs: Vec<IpAddr>) -> Vec<IpAddr> {
    let mut ips = Vec::with_capacity(addrs.len());
    for ip in addrs {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    ips
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn distinct_ips_keeps_order_and_drops_repeats() {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let b = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(distinct_ips(vec![a, b, a, b, a]), vec![a, b]);
        assert!(distinct_ips(Vec::new()).is_empty());
    }
}
