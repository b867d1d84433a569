//! Server hosts: a TCP stack per IP address whose ports listen (handing
//! bytes to a pluggable [`ServerApp`]), refuse (RST) or black-hole SYNs.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::socket::SocketEvent;
use crate::tcp::{Flags, Segment, TcpConn, TcpStack};

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
    accepted: u64,
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
            accepted: 0,
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
        self.accepted
    }

    /// Connections currently open (any state).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    pub(crate) fn handle_segment(&mut self, now: Instant, seg: &Segment, out: &mut HostOutput) {
        let port = seg.dst.port();
        if let Some(&id) = self.by_tuple.get(&(port, seg.src)) {
            if let Some(hc) = self.conns.get_mut(&id) {
                hc.conn.handle_segment(now, seg);
            }
            self.drive(now, id, out);
            return;
        }
        match self.ports.get(&port) {
            Some(PortMode::BlackHole) => {}
            Some(PortMode::Listen(_)) if seg.is_syn_only() => {
                let id = ServerConnId(self.next_conn);
                self.next_conn += 1;
                let conn = TcpConn::accept(now, seg.dst, seg, self.stack.clone());
                self.conns.insert(
                    id,
                    HostConn {
                        port,
                        peer: seg.src,
                        conn,
                        timer: None,
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
            match ev {
                SocketEvent::Connected => {
                    self.accepted += 1;
                    if let Some(app) = app {
                        app.on_accept(now, id, hc.peer, &mut replies);
                    }
                }
                SocketEvent::Data(d) => {
                    if let Some(app) = app {
                        app.on_data(now, id, &d, &mut replies);
                    }
                }
                SocketEvent::Closed => {
                    if let Some(app) = app {
                        app.on_peer_closed(now, id, &mut replies);
                    }
                }
                // Server sockets are plain TCP (TLS runs in the app).
                SocketEvent::TcpConnected | SocketEvent::EarlyData { .. } => {}
                SocketEvent::Reset | SocketEvent::TimedOut | SocketEvent::ConnectFailed(_) => {
                    if let Some(app) = app {
                        app.on_reset(now, id);
                    }
                }
            }
        }
        for (delay, action) in replies.actions {
            out.actions.push((now + delay, id, action));
        }
        if hc.conn.is_closed() {
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
