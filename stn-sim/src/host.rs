//! Server hosts: a TCP stack per IP address whose ports listen (handing
//! bytes to a pluggable [`ServerApp`]), refuse (RST) or black-hole SYNs.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use stn_proto::{Duration, Instant};

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
}

/// What a host wants the network to do after an input.
#[derive(Debug, Default)]
pub(crate) struct HostOutput {
    pub(crate) segments: Vec<Segment>,
    pub(crate) timers: Vec<(ServerConnId, Instant)>,
    pub(crate) actions: Vec<(Instant, ServerConnId, ServerAction)>,
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
        let port = seg.dst.port();
        if let Some(&id) = self.by_tuple.get(&(port, seg.src)) {
            if seg.is_syn_only() {
                self.cost.syns += 1;
            }
            if let Some(hc) = self.conns.get_mut(&id) {
                hc.conn.handle_segment(now, seg);
            }
            self.drive(now, id, out);
            return;
        }
        match self.ports.get(&port) {
            Some(PortMode::BlackHole) => {}
            Some(PortMode::Listen(_)) if seg.is_syn_only() => {
                self.cost.syns += 1;
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

    /// Drains a connection's outputs into `out` and its events into the app.
    fn drive(&mut self, now: Instant, id: ServerConnId, out: &mut HostOutput) {
        let Some(hc) = self.conns.get_mut(&id) else {
            return;
        };
        while let Some(s) = hc.conn.poll_transmit() {
            out.segments.push(s);
        }
        let mut replies = ServerReplies::default();
        while let Some(ev) = hc.conn.poll_event() {
            let app = match self.ports.get_mut(&hc.port) {
                Some(PortMode::Listen(app)) => Some(app),
                _ => None,
            };
            let ended = match ev {
                SocketEvent::Connected => {
                    self.cost.tcp_handshakes += 1;
                    hc.usage = Usage::Idle;
                    if let Some(app) = app {
                        app.on_accept(now, id, hc.peer, &mut replies);
                    }
                    false
                }
                SocketEvent::Data(d) => {
                    if let Some(app) = app {
                        app.on_data(now, id, &d, &mut replies);
                    }
                    let marks = replies.take_marks();
                    self.cost.tls_handshakes += u64::from(marks.secured);
                    if !marks.handshake_bytes && hc.usage == Usage::Idle {
                        hc.usage = Usage::Settled;
                    }
                    false
                }
                SocketEvent::Closed => {
                    if let Some(app) = app {
                        app.on_peer_closed(now, id, &mut replies);
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
        for (delay, action) in replies.actions {
            out.actions.push((now + delay, id, action));
        }
        if let Some(report) = hc.conn.take_metrics() {
            self.routes.update(now, hc.peer.ip(), report);
        }
        if hc.conn.is_closed() {
            settle(&mut self.cost, &mut hc.usage);
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
