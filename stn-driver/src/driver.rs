//! The driver loop: one task owns the [`Engine`], applies the drain rule and
//! polls every socket and lookup the engine asked for.
//!
//! A request costs one hop in (the submission queue) and one out (its
//! oneshot reply): the engine's writes go straight into the connection's
//! queue and out on the socket in the same poll, and a read is handed to the
//! engine the moment it completes. Only connections whose wakers fired are
//! polled ([`ReadySet`]).
//!
//! The read budget: every byte read is counted as held by the engine until
//! the engine acts on that connection's input (emits any action while
//! draining after it: a finished task, a push, a write, a close …) or the
//! connection ends. The engine holds at most a partial response or frame per
//! connection, so this over-counts rather than under-counts, except for the
//! tail of one read that starts the next response. When the count reaches
//! the budget, readable connections wait (their tasks' timeouts still run)
//! until it frees: the client does not grow.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant as StdInstant;

use async_channel::Receiver;
use bytes::Bytes;
use futures_channel::oneshot;
use futures_core::Stream;
use stn_proto::Error as ProtoError;
use stn_proto::ImportError;
use stn_proto::NetworkKind;
use stn_proto::{ConnEvent, ConnId, IoAction};
use stn_proto::{
    Engine, Event, IdentifyDecision, Input, JudgeRequest, LinkError, LinkName, LinkStatus, Output,
    Report, Verdict,
};

use crate::links::{LinkHooks, LinkOptions, LinkUpdate};
use stn_proto::{Task, TaskId};

use crate::clock::Clock;
use crate::conn::{Conn, Step, TlsPlan, READ_CHUNK};
use crate::dial::Dialer;
use crate::error::{Attempt, Causes, Error};
use crate::events::{Publisher, Subscription};
use crate::hooks::{
    guard_body_source, identify_accepted, Identify, IdentifyJudge, IdentifyResponse,
};
use crate::outcome::{EndpointState, Finished, Push, Snapshot};
use crate::proxy::ProxyState;
use crate::pushes::{Offer, Subscriber};
use crate::ready::{ReadySet, Token, TokenWaker};
use crate::runtime::{AsyncTimer, BoxFuture, Runtime};
use crate::tls::{ClientTls, TlsStats};

/// Most IP → host name entries kept for TLS server names (resolver answers
/// are small; this only bounds a resolver that keeps changing its answer).
const MAX_TLS_NAMES: usize = 1024;

/// The one tracing target of every client event and span, so that
/// `RUST_LOG=stn=debug` (or `stn=info`) shows the client whichever adapter
/// runs it; `stn` also prefixes the crates' module targets (`stn_tokio::…`).
pub(crate) const TRACE_TARGET: &str = "stn";

/// A submitted task's answer. Boxed: the reply channel's shared state
/// lives as long as the task is in flight, and holds room for its value.
pub(crate) type Reply = oneshot::Sender<Box<Finished>>;

/// Requests from the client handles to the driver.
pub(crate) enum Command {
    Submit {
        ticket: u64,
        task: Task,
        reply: Reply,
    },
}

/// Unbounded, small, rare (or, for cancels, at most one per `send`) control messages.
pub(crate) enum Control {
    Cancel(u64),
    NetworkChanged(NetworkKind),
    NetworkLost,
    NetworkAvailable(NetworkKind),
    NetworkLabel(String),
    Foreground(bool),
    Authed(bool),
    HostAuthed {
        host: String,
        user_id: Option<String>,
        authed: bool,
    },
    LongLinkEnabled(bool),
    AddLink(Box<LinkOptions>, oneshot::Sender<Result<(), LinkError>>),
    RemoveLink(LinkName, oneshot::Sender<Result<(), LinkError>>),
    SubscribeLinks(Subscription<LinkUpdate>),
    Subscribe(Subscriber),
    SubscribeReports(Subscription<Report>),
    SubscribeLinkStatus(Subscription<LinkStatus>),
    ExportHistory(oneshot::Sender<Vec<u8>>),
    ImportHistory(Vec<u8>, oneshot::Sender<Result<usize, ImportError>>),
    RedoTasks,
    ClearTasks,
    MakeSureLongLink,
    Snapshot(oneshot::Sender<Snapshot>),
    Shutdown(oneshot::Sender<()>),
}

/// The app's response judge (Mars `Buf2Resp`), see `Builder::judge`.
pub(crate) type Judge = Arc<dyn Fn(&JudgeRequest) -> Verdict + Send + Sync>;

struct Pending {
    ticket: u64,
    reply: Reply,
    /// The task's span, when DEBUG tracing was on at submit (boxed: most
    /// clients run without it, and every task in flight holds this field).
    span: Option<Box<tracing::Span>>,
}

impl Pending {
    fn span(&self) -> tracing::Span {
        self.span
            .as_deref()
            .map_or_else(tracing::Span::none, Clone::clone)
    }
}

/// A DNS lookup the driver polls.
struct Lookup {
    host: String,
    future: BoxFuture<io::Result<Vec<IpAddr>>>,
    handle: Arc<TokenWaker>,
    waker: Waker,
}

/// Most messages handled from one queue before the others get a turn.
const BATCH: usize = 64;
/// Rounds of work in one poll before yielding to the executor.
const ROUNDS: usize = 16;
/// Reads from one connection before the others get a turn.
const READS_PER_TURN: usize = 4;

/// The driver loop (a future spawned on the runtime).
pub(crate) struct Driver {
    rt: Arc<dyn Runtime>,
    engine: Engine,
    clock: Clock,
    timer: Pin<Box<dyn AsyncTimer>>,
    timer_at: Option<StdInstant>,
    commands: Pin<Box<Receiver<Command>>>,
    control: Pin<Box<Receiver<Control>>>,
    ready: ReadySet,
    /// The tokens being polled this round (kept to reuse its allocation).
    polling: Vec<Token>,
    conns: BTreeMap<ConnId, Conn>,
    lookups: BTreeMap<u64, Lookup>,
    next_lookup: u64,
    /// The one read buffer, allocated at the first read.
    read_buf: Vec<u8>,
    /// Received bytes the engine may still hold, over every connection.
    held: usize,
    peak_held: usize,
    read_budget: usize,
    /// Connections that had data to read while the budget was used up.
    starved: Vec<ConnId>,
    pending: BTreeMap<TaskId, Pending>,
    tickets: BTreeMap<u64, TaskId>,
    subscribers: Vec<Subscriber>,
    pushes_dropped: u64,
    reports: Publisher<Report>,
    link_status: Publisher<LinkStatus>,
    /// The named long links' hooks and last statuses.
    links: BTreeMap<LinkName, LinkHooks>,
    links_status: Publisher<LinkUpdate>,
    identify: Identify,
    identify_judge: Option<IdentifyJudge>,
    judge: Option<Judge>,
    endpoints: BTreeSet<SocketAddr>,
    long_link: Option<LinkStatus>,
    shutdown_waiters: Vec<oneshot::Sender<()>>,
    /// Replies were sent since the loop last yielded with nothing to do.
    replied: bool,
    done: bool,
    /// TLS on every connection, when the client has it.
    tls: Option<ClientTls>,
    /// The host name each resolved IP came from: its TLS server name.
    tls_names: BTreeMap<IpAddr, String>,
    tls_stats: TlsStats,
    /// Each endpoint's last I/O error, for the errors tasks end with.
    causes: Causes,
    /// The total timeout of tasks that set none (`Builder::timeout`).
    default_timeout: Option<std::time::Duration>,
    /// The proxy every connect goes through, when the client has one.
    proxy: Option<ProxyState>,
    /// Every TCP connect (NAT64 on an IPv6-only network).
    dialer: Dialer,
}

pub(crate) struct DriverParts {
    pub(crate) rt: Arc<dyn Runtime>,
    pub(crate) engine: Engine,
    pub(crate) clock: Clock,
    pub(crate) commands: Receiver<Command>,
    pub(crate) control: Receiver<Control>,
    pub(crate) read_budget: usize,
    pub(crate) identify: Identify,
    pub(crate) identify_judge: Option<IdentifyJudge>,
    /// The hooks of the named links the engine was built with.
    pub(crate) links: BTreeMap<LinkName, LinkHooks>,
    pub(crate) judge: Option<Judge>,
    pub(crate) tls: Option<ClientTls>,
    pub(crate) default_timeout: Option<std::time::Duration>,
    pub(crate) proxy: Option<ProxyState>,
}

impl Driver {
    pub(crate) fn new(parts: DriverParts) -> Self {
        let timer = parts.rt.new_timer(parts.rt.now());
        Driver {
            timer,
            timer_at: None,
            engine: parts.engine,
            clock: parts.clock,
            commands: Box::pin(parts.commands),
            control: Box::pin(parts.control),
            ready: ReadySet::default(),
            polling: Vec::new(),
            conns: BTreeMap::new(),
            lookups: BTreeMap::new(),
            next_lookup: 0,
            read_buf: Vec::new(),
            held: 0,
            peak_held: 0,
            read_budget: parts.read_budget.max(1),
            starved: Vec::new(),
            pending: BTreeMap::new(),
            tickets: BTreeMap::new(),
            subscribers: Vec::new(),
            pushes_dropped: 0,
            reports: Publisher::default(),
            link_status: Publisher::default(),
            links: parts.links,
            links_status: Publisher::default(),
            identify: parts.identify,
            identify_judge: parts.identify_judge,
            judge: parts.judge,
            endpoints: BTreeSet::new(),
            long_link: None,
            shutdown_waiters: Vec::new(),
            replied: false,
            done: false,
            tls: parts.tls,
            tls_names: BTreeMap::new(),
            tls_stats: TlsStats::default(),
            causes: Causes::default(),
            default_timeout: parts.default_timeout,
            proxy: parts.proxy,
            dialer: Dialer::new(parts.rt.clone(), parts.clock),
            rt: parts.rt,
        }
    }

    fn now(&self) -> stn_proto::Instant {
        self.clock.to_proto(self.rt.now())
    }

    /// The drain rule: run every output the engine has queued. Returns how
    /// many there were.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(output) = self.engine.poll_output() {
            n += 1;
            self.execute(output);
        }
        n
    }

    fn execute(&mut self, output: Output) {
        match output {
            Output::Io(IoAction::Connect { conn, addr }) => {
                tracing::debug!(target: TRACE_TARGET, %conn, %addr, "connect");
                self.endpoints.insert(addr);
                let connect = match self.proxy.as_mut() {
                    Some(proxy) => {
                        let now = self.clock.to_proto(self.rt.now());
                        proxy.connect(now, &self.rt, conn, addr, &self.dialer)
                    }
                    None => self.dialer.connect(addr),
                };
                let tls = self.tls_plan(addr);
                // The new token is queued: the next round polls the connect.
                let waker = self.ready.waker(Token::Conn(conn));
                if let Some(old) = self
                    .conns
                    .insert(conn, Conn::new(addr, connect, waker, tls))
                {
                    // Connection ids are never reused; if one were, the old
                    // socket closes here.
                    self.release(old.held);
                }
            }
            Output::Io(IoAction::Send { conn, data }) => {
                // Unbounded per connection: the engine's own caps (queued
                // tasks, in-flight limits, body sizes) bound what it writes.
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.queue_write(data);
                    c.handle().schedule();
                }
            }
            Output::Io(IoAction::Close { conn }) => {
                tracing::trace!(target: TRACE_TARGET, %conn, "close");
                if let Some(proxy) = self.proxy.as_mut() {
                    let now = self.clock.to_proto(self.rt.now());
                    proxy.closed(now, conn);
                }
                self.forget(conn);
            }
            Output::Resolve { host } => {
                let now = self.now();
                if let Some(ip) = self.proxy.as_mut().and_then(|p| p.placeholder(now, &host)) {
                    // The proxy resolves the name (remote DNS).
                    tracing::debug!(target: TRACE_TARGET, %host, placeholder = %ip, "resolve left to the proxy");
                    self.note_tls_names(&host, &[ip]);
                    self.engine.handle_input(
                        now,
                        Input::Resolved {
                            host,
                            addrs: vec![ip],
                        },
                    );
                    return;
                }
                tracing::debug!(target: TRACE_TARGET, %host, "resolve");
                self.causes.note_resolving(&host);
                let id = self.next_lookup;
                self.next_lookup += 1;
                let future = self.rt.resolve(host.clone());
                let (handle, waker) = self.ready.waker(Token::Resolve(id));
                self.lookups.insert(
                    id,
                    Lookup {
                        host,
                        future,
                        handle,
                        waker,
                    },
                );
            }
            Output::Event(Event::TaskFinished {
                id,
                outcome,
                attempts,
                ..
            }) => {
                let Some(p) = self.pending.remove(&id) else {
                    return;
                };
                self.tickets.remove(&p.ticket);
                let config = self.engine.config();
                let outcome = match outcome {
                    Ok(r) => {
                        self.causes.forget(id);
                        Ok(r)
                    }
                    Err(e) => Err(self.causes.finish(id, e, config)),
                };
                match &outcome {
                    Ok(r) => {
                        tracing::debug!(target: TRACE_TARGET, parent: &p.span(), attempts, bytes = r.body.len(), "task succeeded")
                    }
                    // The app's own cancel and shutdown are not failures.
                    Err(
                        e @ (Error::Shutdown
                        | Error::Task {
                            error: ProtoError::Cancelled,
                            ..
                        }),
                    ) => {
                        tracing::debug!(target: TRACE_TARGET, parent: &p.span(), attempts, error = %e, "task ended")
                    }
                    Err(error) => {
                        tracing::warn!(target: TRACE_TARGET, parent: &p.span(), task = id.get(), attempts, %error, "task failed")
                    }
                }
                self.replied = true;
                let _ = p.reply.send(Box::new(Finished {
                    id: Some(id),
                    outcome,
                    attempts,
                }));
            }
            Output::Event(Event::Push { cmd_id, body }) => {
                tracing::debug!(target: TRACE_TARGET, cmd_id, len = body.len(), "push");
                self.push(Push {
                    cmd_id,
                    body,
                    link: None,
                });
            }
            Output::Event(Event::Link { link, event }) => self.link_event(link, *event),
            Output::Event(Event::AskIdentify) => {
                let decision = self.identify.decide(self.long_link_addr());
                let now = self.now();
                self.engine.identify_answer(now, decision);
            }
            Output::Event(Event::IdentifyResponse { cmd_id, body }) => {
                let response = IdentifyResponse {
                    cmd_id,
                    body,
                    addr: self.long_link_addr(),
                };
                let accepted = identify_accepted(self.identify_judge.as_ref(), &response);
                tracing::debug!(target: TRACE_TARGET, cmd_id, len = response.body.len(), accepted, "identify response");
                let now = self.now();
                self.engine.identify_verdict(now, accepted);
            }
            Output::Event(Event::Judge(request)) => {
                let verdict = self.judge_response(&request);
                let now = self.now();
                self.engine.judge(now, request.id, verdict);
            }
            Output::Event(Event::Report(report)) => {
                self.report(&report);
                self.reports.publish(&report);
            }
            Output::Event(Event::LongLink(status)) => {
                match &status {
                    LinkStatus::Connected { addr } => {
                        tracing::info!(target: TRACE_TARGET, %addr, "long link up")
                    }
                    // Only a link that was up goes down; a failed connect
                    // between two down states is a debug detail.
                    LinkStatus::Disconnected
                        if matches!(self.long_link, Some(LinkStatus::Connected { .. })) =>
                    {
                        tracing::info!(target: TRACE_TARGET, "long link down")
                    }
                    LinkStatus::Disabled => {
                        tracing::info!(target: TRACE_TARGET, "long link disabled")
                    }
                    _ => tracing::debug!(target: TRACE_TARGET, ?status, "long link"),
                }
                self.long_link = Some(status);
                self.link_status.publish(&status);
            }
            // Outputs added after this driver was written: nothing to do.
            _ => {}
        }
    }
    /// Offers a push to every subscriber.
    fn push(&mut self, push: Push) {
        let cmd_id = push.cmd_id;
        let mut dropped = 0;
        self.subscribers.retain(|s| match s.offer(&push) {
            Offer::Queued => true,
            Offer::Dropped => {
                dropped += 1;
                true
            }
            Offer::Gone => false,
        });
        if dropped > 0 {
            tracing::warn!(target: TRACE_TARGET,
                cmd_id,
                dropped,
                "push dropped: a subscriber is not keeping up"
            );
            self.pushes_dropped += dropped;
        }
    }

    /// Something on a named long link: its status, a push, its identify.
    fn link_event(&mut self, link: LinkName, event: Event) {
        let now = self.now();
        match event {
            Event::LongLink(status) => {
                tracing::debug!(target: TRACE_TARGET, %link, ?status, "named long link");
                if let Some(hooks) = self.links.get_mut(&link) {
                    hooks.status = Some(status);
                }
                self.links_status.publish(&LinkUpdate { link, status });
            }
            Event::Push { cmd_id, body } => {
                tracing::debug!(target: TRACE_TARGET, %link, cmd_id, len = body.len(), "push");
                self.push(Push {
                    cmd_id,
                    body,
                    link: Some(link),
                });
            }
            Event::AskIdentify => {
                let decision = match self.links.get(&link) {
                    Some(hooks) => hooks.identify.decide(hooks.addr()),
                    None => IdentifyDecision::Never,
                };
                self.engine.link_identify_answer(now, &link, decision);
            }
            Event::IdentifyResponse { cmd_id, body } => {
                let Some(hooks) = self.links.get(&link) else {
                    return;
                };
                let response = IdentifyResponse {
                    cmd_id,
                    body,
                    addr: hooks.addr(),
                };
                let accepted = identify_accepted(hooks.identify_judge.as_ref(), &response);
                tracing::debug!(target: TRACE_TARGET, %link, cmd_id, accepted, "identify response");
                self.engine.link_identify_verdict(now, &link, accepted);
            }
            // Events added after this driver was written: nothing to do.
            _ => {}
        }
    }

    /// The device is on a new network: the proxy is tried first again.
    fn new_network(&mut self) {
        self.dialer.network_changed();
        if let Some(proxy) = self.proxy.as_mut() {
            proxy.network_changed();
        }
    }

    /// The long link's endpoint, if it is up.
    fn long_link_addr(&self) -> Option<SocketAddr> {
        match self.long_link {
            Some(LinkStatus::Connected { addr }) => Some(addr),
            _ => None,
        }
    }

    /// The handshake a connection to `addr` runs, if the client has TLS.
    #[cfg(feature = "tls")]
    fn tls_plan(&self, addr: SocketAddr) -> Option<TlsPlan> {
        let tls = self.tls.as_ref()?;
        let host = self.tls_names.get(&addr.ip()).map(String::as_str);
        let start = tls
            .name_for(addr.ip(), host)
            .map(|server_name| crate::tls::TlsStart {
                config: tls.config.clone(),
                server_name,
            });
        Some(TlsPlan {
            rt: self.rt.clone(),
            start,
            timeout: tls.handshake_timeout,
        })
    }

    /// No client has TLS without the `tls` feature.
    #[cfg(not(feature = "tls"))]
    fn tls_plan(&self, _addr: SocketAddr) -> Option<TlsPlan> {
        self.tls.as_ref().map(|tls| match *tls {})
    }

    /// Remembers which host `addrs` came from, for their TLS server names.
    fn note_tls_names(&mut self, host: &str, addrs: &[IpAddr]) {
        if self.tls.is_none() {
            return;
        }
        for &ip in addrs {
            if self.tls_names.len() >= MAX_TLS_NAMES && !self.tls_names.contains_key(&ip) {
                self.tls_names.clear();
            }
            self.tls_names.insert(ip, host.to_owned());
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
            .map_or_else(tracing::Span::none, Pending::span);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge(request))) {
            Ok(verdict) => {
                tracing::debug!(target: TRACE_TARGET, parent: &span, attempt = request.attempt, ?verdict, "response judged");
                verdict
            }
            Err(_) => {
                tracing::error!(target: TRACE_TARGET, parent: &span, attempt = request.attempt, "the response judge panicked; ending the task");
                Verdict::End
            }
        }
    }

    fn report(&mut self, r: &Report) {
        if self.pending.contains_key(&r.task) {
            self.causes
                .note_attempt(r.task, r.error.as_ref(), Attempt::of(r));
        }
        let span = self
            .pending
            .get(&r.task)
            .map_or_else(tracing::Span::none, Pending::span);
        // The proto's Duration is std's: Debug prints `1.2ms`.
        let duration = r.ended - r.started;

        match &r.error {
            None => tracing::debug!(target: TRACE_TARGET,
                parent: &span, attempt = r.attempt, channel = ?r.channel, endpoint = %OptAddr(r.endpoint),
                ?duration, connect_attempts = r.connect_attempts, bytes_sent = r.bytes_sent,
                bytes_received = r.bytes_received, "attempt succeeded"
            ),
            Some(error) => tracing::debug!(target: TRACE_TARGET,
                parent: &span, attempt = r.attempt, channel = ?r.channel, endpoint = %OptAddr(r.endpoint),
                ?duration, connect_attempts = r.connect_attempts, %error, "attempt failed"
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
                if reply.is_canceled() {
                    // The send future was dropped before its task got here.
                    return;
                }
                let mut task = task;
                if self.judge.is_some() {
                    task.judge = true;
                }
                if task.total_timeout.is_none() {
                    task.total_timeout = self.default_timeout;
                }
                let own_host = task.host.clone();
                guard_body_source(&mut task);
                let (cmd_id, channel) = (task.cmd_id, task.channel);
                let cgi_span = tracing::enabled!(target: TRACE_TARGET, tracing::Level::DEBUG)
                    .then(|| task.cgi.clone());
                match self.engine.submit(now, task) {
                    Ok(id) => {
                        if let Some(host) = own_host {
                            self.causes.note_task_host(id, host);
                        }
                        let span = cgi_span.map(|cgi| {
                            Box::new(tracing::debug_span!(target: TRACE_TARGET, "stn_task", id = id.get(), cmd_id, %cgi, ?channel))
                        });
                        if let Some(span) = &span {
                            tracing::debug!(target: TRACE_TARGET, parent: &**span, "task submitted");
                        }
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
                        tracing::debug!(target: TRACE_TARGET, error = %e, "task refused");
                        let _ = reply.send(Box::new(Finished {
                            id: None,
                            outcome: Err(e.into()),
                            attempts: 0,
                        }));
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
                    tracing::debug!(target: TRACE_TARGET, id = id.get(), "task cancelled (send dropped)");
                    self.engine.cancel(now, id);
                }
            }
            Control::NetworkChanged(kind) => {
                self.new_network();
                self.engine.network_changed(now, kind);
            }
            Control::NetworkLost => self.engine.network_lost(now),
            Control::NetworkAvailable(kind) => {
                self.new_network();
                self.engine.network_available(now, kind);
            }
            Control::NetworkLabel(label) => self.engine.set_network_label(now, &label),
            Control::Foreground(fg) => self.engine.set_foreground(now, fg),
            Control::Authed(authed) => self.engine.set_authed(now, authed),
            Control::HostAuthed {
                host,
                user_id,
                authed,
            } => {
                if !self
                    .engine
                    .set_host_authed(now, &host, user_id.as_deref(), authed)
                {
                    tracing::warn!(target: TRACE_TARGET, %host, ?user_id,
                        "auth answer dropped: 1024 hosts and users already have their own");
                }
            }
            Control::LongLinkEnabled(enabled) => {
                tracing::info!(target: TRACE_TARGET, enabled, "long link enabled by the app");
                self.engine.set_long_link_enabled(now, enabled);
            }
            Control::Subscribe(sub) => self.subscribers.push(sub),
            Control::SubscribeReports(sub) => self.reports.add(sub),
            Control::AddLink(options, tx) => {
                let (name, spec, hooks) = options.into_parts(self.engine.config().long());
                let added = self.engine.add_link(now, name.clone(), spec);
                tracing::info!(target: TRACE_TARGET, link = %name, ?added, "named long link added");
                if added.is_ok() {
                    self.links.insert(name, hooks);
                }
                let _ = tx.send(added);
            }
            Control::RemoveLink(name, tx) => {
                let removed = self.engine.remove_link(now, &name);
                tracing::info!(target: TRACE_TARGET, link = %name, ?removed, "named long link removed");
                self.links.remove(&name);
                let _ = tx.send(removed);
            }
            Control::SubscribeLinks(sub) => {
                self.links_status.add(sub);
            }
            Control::SubscribeLinkStatus(sub) => {
                self.link_status
                    .add_with_current(sub, self.long_link.as_ref());
            }
            Control::ExportHistory(tx) => {
                let bytes = self
                    .engine
                    .export_history(crate::history::wall_clock_secs());
                let _ = tx.send(bytes);
            }
            Control::ImportHistory(bytes, tx) => {
                let result =
                    self.engine
                        .import_history(&bytes, crate::history::wall_clock_secs(), now);
                tracing::debug!(target: TRACE_TARGET, ?result, "ban history imported");
                let _ = tx.send(result);
            }
            Control::RedoTasks => self.engine.redo_tasks(now),
            Control::ClearTasks => {
                let n = self.engine.clear_tasks(now);
                tracing::debug!(target: TRACE_TARGET, tasks = n, "tasks cleared");
            }
            Control::MakeSureLongLink => self.engine.make_sure_long_link_connected(now),
            Control::Snapshot(tx) => {
                let _ = tx.send(self.snapshot(now));
            }
            Control::Shutdown(tx) => {
                self.shutdown_waiters.push(tx);
                self.shutdown();
            }
        }
        self.drain();
    }

    fn snapshot(&self, now: stn_proto::Instant) -> Snapshot {
        let history = self.engine.endpoint_history();
        Snapshot {
            engine_tasks: self.engine.task_count(),
            waiting: self.pending.len(),
            engine_connections: self.engine.open_connections(),
            driver_connections: self.conns.len(),
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
            held_bytes: self.held,
            peak_held_bytes: self.peak_held,
            read_budget: self.read_budget,
            unsent_bytes: self.conns.values().map(Conn::unsent).sum(),
            push_bytes: self.subscribers.iter().map(Subscriber::queued_bytes).sum(),
            tls: self.tls_stats,
        }
    }

    /// Feeds an event of connection `conn` to the engine and drains.
    fn feed(&mut self, conn: ConnId, event: ConnEvent) -> usize {
        let now = self.now();
        self.engine.handle_input(now, Input::Conn { conn, event });
        self.drain()
    }

    /// Drops a connection (closing its socket) and what it held of the budget.
    fn forget(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.remove(&conn) {
            self.release(c.held);
        }
    }

    /// `n` held bytes are no longer held; starved readers get another turn.
    fn release(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.held = self.held.saturating_sub(n);
        for id in self.starved.drain(..) {
            if let Some(c) = self.conns.get(&id) {
                c.handle().schedule();
            }
        }
    }

    /// Polls every token whose waker fired; true if there were any.
    fn poll_ready(&mut self) -> bool {
        let mut polling = std::mem::take(&mut self.polling);
        self.ready.take(&mut polling);
        let any = !polling.is_empty();
        for &token in &polling {
            match token {
                Token::Conn(id) => self.poll_conn(id),
                Token::Resolve(id) => self.poll_lookup(id),
            }
        }
        self.polling = polling;
        any
    }

    fn poll_conn(&mut self, id: ConnId) {
        for _ in 0..READS_PER_TURN {
            let room = self.read_budget.saturating_sub(self.held);
            if room > 0 && self.read_buf.is_empty() {
                // Allocated on demand: a client that never reads holds none.
                self.read_buf = vec![0; READ_CHUNK];
            }
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            conn.handle().unqueue();
            let addr = conn.addr;
            match conn.poll(&mut self.read_buf, room) {
                Step::Idle => return,
                Step::Starved => {
                    if !self.starved.contains(&id) {
                        self.starved.push(id);
                    }
                    return;
                }
                Step::Connected => {
                    if let Some(proxy) = self.proxy.as_mut() {
                        proxy.connected(self.clock.to_proto(self.rt.now()), id);
                    }
                    if let Some(h) = conn.handshaked.take() {
                        tracing::debug!(target: TRACE_TARGET, %id, duration = ?h.duration, resumed = h.resumed, early_accepted = ?h.early, "TLS handshake done");
                        let s = &mut self.tls_stats;
                        s.handshakes += 1;
                        s.resumed += u64::from(h.resumed);
                        s.early_data += u64::from(h.early.is_some());
                        s.early_accepted += u64::from(h.early == Some(true));
                        s.handshake_time += h.duration;
                        s.last_handshake = Some(h.duration);
                    }
                    self.causes.note_endpoint(addr, None);
                    self.feed(id, ConnEvent::Connected);
                }
                Step::TcpConnected => {
                    if let Some(proxy) = self.proxy.as_mut() {
                        proxy.connected(self.clock.to_proto(self.rt.now()), id);
                    }
                    self.feed(id, ConnEvent::TcpConnected);
                }
                Step::EarlyData(max) => {
                    self.feed(id, ConnEvent::EarlyData { max });
                }
                Step::Data(n) => {
                    conn.held += n;
                    self.held += n;
                    self.peak_held = self.peak_held.max(self.held);
                    let data = Bytes::copy_from_slice(&self.read_buf[..n]);
                    if self.feed(id, ConnEvent::Received(data)) > 0 {
                        // The engine acted on this connection's input: what
                        // it buffered is consumed.
                        let held = self
                            .conns
                            .get_mut(&id)
                            .map_or(0, |c| std::mem::take(&mut c.held));
                        self.release(held);
                    }
                }
                Step::ConnectFailed(error, io) => {
                    if let Some(proxy) = self.proxy.as_mut() {
                        proxy.failed(self.clock.to_proto(self.rt.now()), id, &error);
                        if proxy.bypassing() {
                            tracing::debug!(target: TRACE_TARGET, proxy = proxy.label(), "proxy bypassed: connecting directly for a while");
                        }
                    }
                    self.causes.note_endpoint(addr, io);
                    if error.tls_failure().is_some() {
                        self.tls_stats.failed += 1;
                    }
                    tracing::debug!(target: TRACE_TARGET, %id, %error, "connect failed");
                    self.forget(id);
                    self.feed(id, ConnEvent::ConnectFailed(error));
                    return;
                }
                Step::Closed(reason, io) => {
                    self.causes.note_endpoint(addr, io);
                    tracing::debug!(target: TRACE_TARGET, %id, %reason, "connection closed");
                    self.forget(id);
                    self.feed(id, ConnEvent::Closed(reason));
                    return;
                }
            }
        }
        // More may be readable: another turn after the others.
        if let Some(conn) = self.conns.get(&id) {
            conn.handle().schedule();
        }
    }

    fn poll_lookup(&mut self, id: u64) {
        let Some(lookup) = self.lookups.get_mut(&id) else {
            return;
        };
        lookup.handle.unqueue();
        let mut cx = Context::from_waker(&lookup.waker);
        let Poll::Ready(result) = lookup.future.as_mut().poll(&mut cx) else {
            return;
        };
        let Some(Lookup { host, .. }) = self.lookups.remove(&id) else {
            return;
        };
        let input = match result.map(distinct_ips) {
            Ok(addrs) if !addrs.is_empty() => {
                self.causes.note_resolved(&host, None);
                self.note_tls_names(&host, &addrs);
                Input::Resolved { host, addrs }
            }
            Ok(_) => {
                let empty = io::Error::new(io::ErrorKind::NotFound, "the resolver gave no address");
                self.causes.note_resolved(&host, Some(empty));
                Input::ResolveFailed { host }
            }
            Err(error) => {
                tracing::debug!(target: TRACE_TARGET, %host, %error, "resolve failed");
                self.causes.note_resolved(&host, Some(error));
                Input::ResolveFailed { host }
            }
        };
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
            let _ = p.reply.send(Box::new(Finished {
                id: None,
                outcome: Err(Error::Shutdown),
                attempts: 0,
            }));
        }
        self.tickets.clear();
        self.conns.clear();
        self.lookups.clear();
        self.held = 0;
        self.subscribers.clear();
        self.reports.close();
        self.link_status.close();
        self.links_status.close();
        self.commands.close();
        while let Ok(Command::Submit { reply, .. }) = self.commands.try_recv() {
            let _ = reply.send(Box::new(Finished {
                id: None,
                outcome: Err(Error::Shutdown),
                attempts: 0,
            }));
        }
        self.control.close();
        while let Ok(ctl) = self.control.try_recv() {
            match ctl {
                Control::Shutdown(tx) => self.shutdown_waiters.push(tx),
                Control::Snapshot(tx) => {
                    let _ = tx.send(self.snapshot(now));
                }
                _ => {}
            }
        }
        for w in self.shutdown_waiters.drain(..) {
            let _ = w.send(());
        }
        self.done = true;
        tracing::debug!(target: TRACE_TARGET, "driver shut down");
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
        this.ready.register(cx.waker());
        for round in 0..ROUNDS {
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
            progressed |= this.poll_ready();
            for _ in 0..BATCH {
                match this.commands.as_mut().poll_next(cx) {
                    Poll::Ready(Some(cmd)) => {
                        progressed = true;
                        // The two queues do not order one another: a control
                        // sent before this task (`set_authed(false)`, then
                        // `send`) must apply first. A shutdown among them
                        // drops the task's reply, which its caller reads as
                        // shut down.
                        while let Ok(ctl) = this.control.try_recv() {
                            this.on_control(ctl);
                            if this.done {
                                return Poll::Ready(());
                            }
                        }
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
            // The engine's deadline is read once the queues are drained or
            // before yielding (not every round): poll_timeout is the one
            // engine call that costs more with more tasks.
            if (!progressed || round + 1 == ROUNDS) && this.timer_due(cx) {
                progressed = true;
                let now = this.now();
                this.engine.handle_timeout(now);
                this.drain();
                // Force a fresh reset: the engine may return the same deadline
                // again only if it made progress, and the timer has fired.
                this.timer_at = None;
            }
            if !progressed {
                if std::mem::take(&mut this.replied) {
                    // The callers just answered usually send their next
                    // task at once: come back after them (they run on this
                    // thread first) rather than sleep and be woken, which
                    // costs a cross-thread wake-up per batch.
                    cx.waker().wake_by_ref();
                }
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
        // send sees its reply's sender dropped and ends with Error::Shutdown.
        if !self.done {
            tracing::debug!(target: TRACE_TARGET, waiting = self.pending.len(), "driver dropped");
        }
    }
}

/// An address in a log line, or `-` before any connection was made.
struct OptAddr(Option<SocketAddr>);

impl std::fmt::Display for OptAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(a) => a.fmt(f),
            None => f.write_str("-"),
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
