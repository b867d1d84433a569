//! Server hosts: a TCP stack per IP address whose ports listen (handing
//! bytes to a pluggable [`ServerApp`]), refuse (RST) or black-hole SYNs.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::listen::{Capacity, CapacityStats, ListenQueue};
use crate::socket::SocketEvent;
use crate::tcp::{Flags, RouteCache, Segment, TcpConn, TcpStack};

/// A server-side connection, unique per host for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerConnId(pub u64);

/// What a server application asks its host to do on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerAction {
    /// Write bytes.
    Send(Bytes),
    /// Graceful close (FIN after pending bytes).
    Close,
    /// Abortive close (RST).
    Abort,
    /// Call [`ServerApp::on_wakeup`] for this connection (server-initiated
    /// sends: pushes, heartbeats).
    Wake,
}

/// Actions an application schedules in reply to a callback, each after a
/// processing delay counted from the callback's time. Actions with equal
/// delays run in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerReplies {
    actions: Vec<(Duration, ServerAction)>,
    marks: Marks,
}

/// What an application tells its host about the bytes of one callback, for
/// the host's [`ServerCost`] counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// The bytes were the app's own handshake (TLS), not a request.
    handshake_bytes: bool,
    /// The app's own handshake (TLS) completed.
    secured: bool,
    /// The app answered a handshake's opening (a TLS ClientHello): the
    /// server's asymmetric work, charged to its CPU under a [`Capacity`].
    hello: bool,
}

impl ServerReplies {
    /// Sends `data` after `delay`.
    pub fn send(&mut self, delay: Duration, data: impl Into<Bytes>) {
        self.actions.push((delay, ServerAction::Send(data.into())));
    }

    /// Closes gracefully after `delay`.
    pub fn close(&mut self, delay: Duration) {
        self.actions.push((delay, ServerAction::Close));
    }

    /// Resets the connection after `delay`.
    pub fn abort(&mut self, delay: Duration) {
        self.actions.push((delay, ServerAction::Abort));
    }

    /// Calls [`ServerApp::on_wakeup`] for this connection after `delay`.
    pub fn wake(&mut self, delay: Duration) {
        self.actions.push((delay, ServerAction::Wake));
    }

    /// The scheduled actions.
    pub fn actions(&self) -> &[(Duration, ServerAction)] {
        &self.actions
    }

    /// Says that the bytes just handed to the app were a handshake of its
    /// own (TLS), not a request. The host counts a connection as carrying a
    /// request once its app gets bytes it does not mark so.
    pub fn mark_handshake_bytes(&mut self) {
        self.marks.handshake_bytes = true;
    }

    /// Says that the app's own handshake (TLS) on this connection completed.
    pub fn mark_secured(&mut self) {
        self.marks.secured = true;
    }

    /// Says that the app just answered the opening of its own handshake (a
    /// TLS ClientHello), the work a host's [`Capacity::tls_cost`] charges.
    pub fn mark_hello(&mut self) {
        self.marks.hello = true;
    }

    /// The marks so far, cleared.
    fn take_marks(&mut self) -> Marks {
        std::mem::take(&mut self.marks)
    }
}

/// What connection attempts cost a server host, counted where its stack and
/// listeners see them (not estimated from the clients).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCost {
    /// SYNs that arrived at a listening port, retransmissions included.
    /// SYNs lost on the way, and SYNs to refusing or black-holed ports (a
    /// run's dead endpoints), are not counted.
    pub syns: u64,
    /// TCP handshakes completed (the final ACK arrived).
    pub tcp_handshakes: u64,
    /// Handshakes of the app's own (TLS: the client's Finished arrived).
    pub tls_handshakes: u64,
    /// Connections that completed their TCP handshake and carried no
    /// request: closed, reset or timed out before their app got a request
    /// byte, or still idle when counted (a race's losers, also those whose
    /// close was lost on the way and that the server would hold until an
    /// idle timeout).
    pub wasted_handshakes: u64,
}

impl ServerCost {
    /// Adds `other`'s counters to these.
    pub fn add(&mut self, other: &ServerCost) {
        self.syns += other.syns;
        self.tcp_handshakes += other.tcp_handshakes;
        self.tls_handshakes += other.tls_handshakes;
        self.wasted_handshakes += other.wasted_handshakes;
    }
}

/// How far a server connection got, for [`ServerCost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Usage {
    /// The TCP handshake has not completed.
    Opening,
    /// Handshake completed, no request yet.
    Idle,
    /// Its app got a request byte, or it ended (counted once).
    Settled,
}

/// A server application bound to a listening port: bytes in, bytes out after
/// a processing delay. One value serves every connection of its port; it
/// tells them apart by [`ServerConnId`] (and must buffer partial requests
/// itself, since TCP delivers a byte stream).
pub trait ServerApp {
    /// A connection completed its handshake.
    fn on_accept(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        _peer: SocketAddr,
        _replies: &mut ServerReplies,
    ) {
    }

    /// In-order bytes arrived on `conn`.
    fn on_data(
        &mut self,
        now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    );

    /// The client closed its side (FIN). The default closes ours too.
    fn on_peer_closed(&mut self, _now: Instant, _conn: ServerConnId, replies: &mut ServerReplies) {
        replies.close(Duration::ZERO);
    }

    /// The connection was reset or timed out; it is gone.
    fn on_reset(&mut self, _now: Instant, _conn: ServerConnId) {}

    /// A wake-up requested with [`ServerReplies::wake`] came due (only while
    /// the connection exists).
    fn on_wakeup(&mut self, _now: Instant, _conn: ServerConnId, _replies: &mut ServerReplies) {}
}

/// How a port treats connection attempts.
pub enum PortMode {
    /// Accepts connections and runs the application on them.
    Listen(Box<dyn ServerApp>),
    /// Answers SYNs with RST (connection refused). Ports not configured
    /// behave like this.
    Refuse,
    /// Drops SYNs silently (firewalled: the client's SYN schedule runs out).
    BlackHole,
}

impl fmt::Debug for PortMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortMode::Listen(_) => "Listen(..)",
            PortMode::Refuse => "Refuse",
            PortMode::BlackHole => "BlackHole",
        })
    }
}

#[derive(Debug)]
struct HostConn {
    port: u16,
    peer: SocketAddr,
    conn: TcpConn,
    timer: Option<Instant>,
    usage: Usage,
    /// Counted in the listen queue's half-open connections.
    half_open: bool,
    /// Events held back until the app accepts the connection (`None`: the
    /// app has it).
    held: Option<Vec<SocketEvent>>,
}

/// What a host wants the network to do after an input.
#[derive(Debug, Default)]
pub(crate) struct HostOutput {
    pub(crate) segments: Vec<Segment>,
    pub(crate) timers: Vec<(ServerConnId, Instant)>,
    pub(crate) actions: Vec<(Instant, ServerConnId, ServerAction)>,
    /// When the listen queue's accept loop next runs.
    pub(crate) accept_at: Option<Instant>,
}

/// A server host: one IP address, its ports and their connections.
#[derive(Debug)]
pub struct ServerHost {
    ip: IpAddr,
    stack: TcpStack,
    ports: BTreeMap<u16, PortMode>,
    conns: BTreeMap<ServerConnId, HostConn>,
    by_tuple: BTreeMap<(u16, SocketAddr), ServerConnId>,
    next_conn: u64,
    cost: ServerCost,
    /// The host's per-destination TCP metrics (`tcp::RouteCache`).
    routes: RouteCache,
    /// Finite backlog, accept rate and handshake CPU (`None`: unlimited).
    listen: Option<ListenQueue>,
    /// The host is down: it drops every segment and holds no connection.
    down: bool,
}

impl ServerHost {
    /// A host at `ip` whose stack behaves like `stack` (servers are Linux).
    pub fn new(ip: IpAddr, stack: TcpStack) -> Self {
        ServerHost {
            ip,
            stack,
            ports: BTreeMap::new(),
            conns: BTreeMap::new(),
            by_tuple: BTreeMap::new(),
            next_conn: 0,
            cost: ServerCost::default(),
            routes: RouteCache::default(),
            listen: None,
            down: false,
        }
    }

    /// Gives every listening port of this host the limits of `cap` (from
    /// now on; [`crate::listen`] describes the model).
    pub fn set_capacity(&mut self, cap: Capacity) {
        self.listen = Some(ListenQueue::new(cap));
    }

    /// What the capacity limits did so far (`None`: unlimited host).
    pub fn capacity_stats(&self) -> Option<CapacityStats> {
        self.listen.as_ref().map(ListenQueue::stats)
    }

    /// Takes the host down (it crashed: every connection is forgotten
    /// without a word to the peer, and segments are dropped) or brings it
    /// back up (it answers new SYNs, and RSTs segments of connections it
    /// forgot).
    pub fn set_down(&mut self, now: Instant, down: bool) {
        self.down = down;
        if !down {
            return;
        }
        for (id, mut hc) in std::mem::take(&mut self.conns) {
            if hc.held.is_none() {
                if let Some(PortMode::Listen(app)) = self.ports.get_mut(&hc.port) {
                    app.on_reset(now, id);
                }
            }
            settle(&mut self.cost, &mut hc.usage);
        }
        self.by_tuple.clear();
        if let Some(l) = self.listen.as_mut() {
            l.clear(now);
        }
    }

    /// The host's address.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// Sets how `port` treats new connection attempts (existing connections
    /// are not affected).
    pub fn set_port(&mut self, port: u16, mode: PortMode) {
        self.ports.insert(port, mode);
    }

    /// Connections that completed the handshake so far.
    pub fn accepted(&self) -> u64 {
        self.cost.tcp_handshakes
    }

    /// What connection attempts have cost this host so far; a connection
    /// still idle now (handshake done, no request) counts as wasted.
    pub fn cost(&self) -> ServerCost {
        let idle = self
            .conns
            .values()
            .filter(|c| c.usage == Usage::Idle)
            .count();
        ServerCost {
            wasted_handshakes: self.cost.wasted_handshakes + idle as u64,
            ..self.cost
        }
    }

    /// Connections currently open (any state).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    pub(crate) fn handle_segment(&mut self, now: Instant, seg: &Segment, out: &mut HostOutput) {
        if self.down {
            return;
        }
        let port = seg.dst.port();
        if let Some(&id) = self.by_tuple.get(&(port, seg.src)) {
            if seg.is_syn_only() {
                self.cost.syns += 1;
            }
            if let Some(hc) = self.conns.get_mut(&id) {
                let admitted = match self.listen.as_mut() {
                    Some(l) if hc.half_open && !seg.is_syn_only() => {
                        seg.flags.contains(Flags::RST) || l.admit_handshake_segment()
                    }
                    _ => true,
                };
                if !admitted {
                    return;
                }
                hc.conn.handle_segment(now, seg);
            }
            self.drive(now, id, out);
            return;
        }
        match self.ports.get(&port) {
            Some(PortMode::BlackHole) => {}
            Some(PortMode::Listen(_)) if seg.is_syn_only() => {
                self.cost.syns += 1;
                let gated = self.listen.is_some();
                if let Some(l) = self.listen.as_mut() {
                    if !l.admit_syn() {
                        return;
                    }
                }
                let id = ServerConnId(self.next_conn);
                self.next_conn += 1;
                let cached = self.routes.lookup(now, seg.src.ip());
                let conn = TcpConn::accept(now, seg.dst, seg, self.stack.clone(), cached);
                self.conns.insert(
                    id,
                    HostConn {
                        port,
                        peer: seg.src,
                        conn,
                        timer: None,
                        usage: Usage::Opening,
                        half_open: gated,
                        held: gated.then(Vec::new),
                    },
                );
                self.by_tuple.insert((port, seg.src), id);
                self.drive(now, id, out);
            }
            _ if seg.flags.contains(Flags::RST) => {}
            _ => out.segments.push(Segment::reset_for(now, seg)),
        }
    }

    pub(crate) fn handle_timer(&mut self, now: Instant, id: ServerConnId, out: &mut HostOutput) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        if hc.timer != Some(now) {
            return; // superseded
        }
        hc.timer = None;
        hc.conn.handle_timeout(now);
        self.drive(now, id, out);
    }

    pub(crate) fn handle_action(
        &mut self,
        now: Instant,
        id: ServerConnId,
        action: ServerAction,
        out: &mut HostOutput,
    ) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        match action {
            // A failed write (connection already closing) is dropped, as an
            // application ignoring EPIPE would.
            ServerAction::Send(b) => {
                let _ = hc.conn.send(now, &b);
            }
            ServerAction::Close => hc.conn.close(now),
            ServerAction::Abort => hc.conn.abort(now),
            ServerAction::Wake => {
                if let Some(PortMode::Listen(app)) = self.ports.get_mut(&hc.port) {
                    let mut replies = ServerReplies::default();
                    app.on_wakeup(now, id, &mut replies);
                    for (delay, action) in replies.actions {
                        out.actions.push((now + delay, id, action));
                    }
                }
            }
        }
        self.drive(now, id, out);
    }

    /// The listen queue's accept loop takes its next connection: the app
    /// gets it and the events held for it.
    pub(crate) fn handle_accept(&mut self, now: Instant, out: &mut HostOutput) {
        let Some(l) = self.listen.as_mut() else {
            return;
        };
        let (taken, next) = l.accept_tick(now);
        out.accept_at = next;
        let Some(id) = taken else {
            return;
        };
        let Some(held) = self.conns.get_mut(&id).and_then(|hc| hc.held.take()) else {
            return;
        };
        let delay = self
            .listen
            .as_mut()
            .map_or(Duration::ZERO, |l| l.accept_delay(now));
        let mut replies = ServerReplies::default();
        let mut delayed = 0;
        for ev in std::iter::once(SocketEvent::Connected).chain(held) {
            self.deliver(now, id, ev, &mut replies);
            // The handshake's CPU delays what the app answers at once.
            for a in &mut replies.actions[delayed..] {
                a.0 += delay;
            }
            delayed = replies.actions.len();
        }
        self.finish_drive(now, id, replies, out);
    }

    /// Drains a connection's outputs into `out` and its events into the app
    /// (or holds them while the connection waits to be accepted).
    fn drive(&mut self, now: Instant, id: ServerConnId, out: &mut HostOutput) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        while let Some(s) = hc.conn.poll_transmit() {
            out.segments.push(s);
        }
        let mut replies = ServerReplies::default();
        while let Some(ev) = self.conns.get_mut(&id).and_then(|hc| hc.conn.poll_event()) {
            if matches!(ev, SocketEvent::Connected) {
                self.completed(now, id, out);
            }
            self.deliver(now, id, ev, &mut replies);
        }
        self.finish_drive(now, id, replies, out);
    }

    /// The kernel's side of a completed handshake: counted, and queued for
    /// accept under a listen queue.
    fn completed(&mut self, now: Instant, id: ServerConnId, out: &mut HostOutput) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        self.cost.tcp_handshakes += 1;
        hc.usage = Usage::Idle;
        if hc.half_open {
            hc.half_open = false;
            if let Some(l) = self.listen.as_mut() {
                if let Some(at) = l.completed(now, id) {
                    out.accept_at = Some(at);
                }
            }
        }
    }

    /// Hands one connection event to the app, or holds it until accept.
    fn deliver(
        &mut self,
        now: Instant,
        id: ServerConnId,
        ev: SocketEvent,
        replies: &mut ServerReplies,
    ) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        if let Some(held) = hc.held.as_mut() {
            match ev {
                SocketEvent::Connected => {}
                SocketEvent::Reset | SocketEvent::TimedOut | SocketEvent::ConnectFailed(_) => {
                    settle(&mut self.cost, &mut hc.usage);
                }
                other => held.push(other),
            }
            return;
        }
        let app = match self.ports.get_mut(&hc.port) {
            Some(PortMode::Listen(app)) => Some(app),
            _ => None,
        };
        let ended = match ev {
            SocketEvent::Connected => {
                if let Some(app) = app {
                    app.on_accept(now, id, hc.peer, replies);
                }
                false
            }
            SocketEvent::Data(d) => {
                let before = replies.actions.len();
                if let Some(app) = app {
                    app.on_data(now, id, &d, replies);
                }
                let marks = replies.take_marks();
                self.cost.tls_handshakes += u64::from(marks.secured);
                if !marks.handshake_bytes && hc.usage == Usage::Idle {
                    hc.usage = Usage::Settled;
                }
                if marks.hello {
                    if let Some(l) = self.listen.as_mut() {
                        let delay = l.hello_delay(now);
                        for a in &mut replies.actions[before..] {
                            a.0 += delay;
                        }
                    }
                }
                false
            }
            SocketEvent::Closed => {
                if let Some(app) = app {
                    app.on_peer_closed(now, id, replies);
                }
                true
            }
            // Server sockets are plain TCP (TLS runs in the app).
            SocketEvent::TcpConnected | SocketEvent::EarlyData { .. } => false,
            SocketEvent::Reset | SocketEvent::TimedOut | SocketEvent::ConnectFailed(_) => {
                if let Some(app) = app {
                    app.on_reset(now, id);
                }
                true
            }
        };
        if ended || hc.conn.is_closed() {
            settle(&mut self.cost, &mut hc.usage);
        }
    }

    /// Schedules `replies`, reports metrics, and forgets the connection
    /// once closed or arms its timer.
    fn finish_drive(
        &mut self,
        now: Instant,
        id: ServerConnId,
        replies: ServerReplies,
        out: &mut HostOutput,
    ) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        for (delay, action) in replies.actions {
            out.actions.push((now + delay, id, action));
        }
        if let Some(report) = hc.conn.take_metrics() {
            self.routes.update(now, hc.peer.ip(), report);
        }
        if hc.conn.is_closed() {
            settle(&mut self.cost, &mut hc.usage);
            if let Some(l) = self.listen.as_mut() {
                if hc.half_open {
                    l.forget_half_open();
                } else if hc.held.is_some() {
                    l.forget_waiting(id);
                }
            }
            let key = (hc.port, hc.peer);
            self.conns.remove(&id);
            self.by_tuple.remove(&key);
            return;
        }
        let next = hc.conn.poll_timeout();
        if next.is_some() && next != hc.timer {
            hc.timer = next;
            if let Some(t) = next {
                out.timers.push((id, t));
            }
        }
    }
}

/// A connection's end: counts it as wasted when it completed its handshake
/// and carried no request.
fn settle(cost: &mut ServerCost, usage: &mut Usage) {
    if *usage == Usage::Idle {
        cost.wasted_handshakes += 1;
    }
    *usage = Usage::Settled;
}
