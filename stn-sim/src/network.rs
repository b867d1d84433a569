//! The wire between the client host and the server hosts: paths, client
//! sockets, and the dispatch of every non-client event.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

use stn_proto::Instant;
use stn_proto::Rng;

use crate::event::EventQueue;
use crate::host::{HostOutput, ServerAction, ServerConnId, ServerHost};
use crate::ids::ClientId;
use crate::link::{Link, LinkStats, LinkVerdict};
use crate::middlebox::{Nat, Verdict};
use crate::path::{Direction, PathSchedule};
use crate::socket::{SocketError, SocketEvent, SocketId};
use crate::tcp::{Flags, RouteCache, Segment, TcpConn, TcpStack};
use crate::tls::{TicketStore, TlsClientConfig, TlsSession};
use crate::trace::{DropReason, Trace};

/// Stream ids for [`Rng::derive`]: one family per kind of component.
pub(crate) const STREAM_LINK: u64 = 0x4C49_4E4B_0000_0000;
pub(crate) const STREAM_CLIENT: u64 = 0x434C_4E54_0000_0000;
pub(crate) const STREAM_ACCESS: u64 = 0x4143_4353_0000_0000;

/// Ephemeral ports (Linux `ip_local_port_range`).
const PORT_FIRST: u16 = 32768;
const PORT_LAST: u16 = 60999;

#[derive(Debug)]
pub(crate) enum NetEvent {
    Arrive {
        path: IpAddr,
        dir: Direction,
        seg: Segment,
    },
    ClientTimer {
        socket: SocketId,
    },
    /// A TLS socket's handshake deadline.
    HandshakeTimer {
        socket: SocketId,
    },
    ServerTimer {
        host: IpAddr,
        conn: ServerConnId,
    },
    /// A host's listen queue takes its next connection.
    HostAccept {
        host: IpAddr,
    },
    ServerAction {
        host: IpAddr,
        conn: ServerConnId,
        action: ServerAction,
    },
    ClientStart {
        client: ClientId,
    },
    ClientWake {
        client: ClientId,
        generation: u64,
    },
    /// The middlebox's RST reaches the client.
    MiddleboxReset {
        seg: Segment,
    },
}

#[derive(Debug)]
struct Path {
    up: Link,
    down: Link,
}

#[derive(Debug)]
struct ClientSock {
    owner: ClientId,
    conn: TcpConn,
    key: SockKey,
    /// The client called close/abort: the kernel finishes the connection but
    /// the client hears nothing more.
    released: bool,
    timer: Option<Instant>,
    /// The TLS layer, on sockets of clients that do TLS.
    tls: Option<TlsSession>,
}

/// A client socket's (local address, local port, remote address).
type SockKey = (IpAddr, u16, SocketAddr);

/// A client host of its own: its source address (shared by the clients
/// behind one carrier-grade NAT), its access link to every server, and its
/// TCP metrics.
#[derive(Debug)]
struct Access {
    ip: IpAddr,
    path: Path,
    routes: RouteCache,
}

/// A client's TLS configuration and the tickets it kept.
#[derive(Debug)]
struct TlsClient {
    cfg: TlsClientConfig,
    tickets: TicketStore,
}

/// Everything but the clients.
#[derive(Debug)]
pub(crate) struct Network {
    pub(crate) now: Instant,
    seed: u64,
    pub(crate) queue: EventQueue<NetEvent>,
    pub(crate) trace: Trace,
    client_ip: IpAddr,
    paths: BTreeMap<IpAddr, Path>,
    hosts: BTreeMap<IpAddr, ServerHost>,
    sockets: BTreeMap<SocketId, ClientSock>,
    by_tuple: BTreeMap<SockKey, SocketId>,
    next_socket: u64,
    /// The next ephemeral port to try, per local address.
    next_port: BTreeMap<IpAddr, u16>,
    /// Clients on hosts of their own, by client id (empty: every client
    /// shares the one client host and its paths).
    access: Vec<Option<Access>>,
    /// The first client at each source address of [`Network::access`]
    /// (segments to a socket that is gone travel on its link).
    ip_owner: BTreeMap<IpAddr, ClientId>,
    /// Socket events waiting to be handed to their client.
    pub(crate) pending: VecDeque<(ClientId, SocketId, SocketEvent)>,
    /// Clients whose sockets run TLS.
    tls_clients: BTreeMap<ClientId, TlsClient>,
    /// The middlebox at the client's edge, if any.
    middlebox: Option<Nat>,
    /// The phone's per-destination TCP metrics (`tcp::RouteCache`).
    routes: RouteCache,
}

impl Network {
    pub(crate) fn new(seed: u64, client_ip: IpAddr) -> Self {
        Network {
            now: Instant::ZERO,
            seed,
            queue: EventQueue::new(),
            trace: Trace::default(),
            client_ip,
            paths: BTreeMap::new(),
            hosts: BTreeMap::new(),
            sockets: BTreeMap::new(),
            by_tuple: BTreeMap::new(),
            next_socket: 0,
            next_port: BTreeMap::new(),
            access: Vec::new(),
            ip_owner: BTreeMap::new(),
            pending: VecDeque::new(),
            tls_clients: BTreeMap::new(),
            middlebox: None,
            routes: RouteCache::default(),
        }
    }

    /// Puts `nat` at the client's edge of every path (`None`: none).
    pub(crate) fn set_middlebox(&mut self, nat: Option<Nat>) {
        self.middlebox = nat;
    }

    pub(crate) fn middlebox(&self) -> Option<&Nat> {
        self.middlebox.as_ref()
    }

    /// Whether the middlebox would pass a packet of `socket`'s flow now
    /// (`None`: no middlebox, or no such socket).
    pub(crate) fn binding_alive(&self, owner: ClientId, id: SocketId) -> Option<bool> {
        let s = self.sockets.get(&id).filter(|s| s.owner == owner)?;
        let (_, port, remote) = s.key;
        self.middlebox.as_ref()?.is_bound(self.now, port, remote)
    }

    /// Runs TLS on every later socket of `client` (`None`: plain TCP).
    pub(crate) fn set_client_tls(&mut self, client: ClientId, cfg: Option<TlsClientConfig>) {
        match cfg {
            Some(cfg) => {
                self.tls_clients.insert(
                    client,
                    TlsClient {
                        cfg,
                        tickets: TicketStore::default(),
                    },
                );
            }
            None => {
                self.tls_clients.remove(&client);
            }
        }
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// Puts `client` on a host of its own at `ip` behind `path`; its link's
    /// random streams depend on the root seed and the client id only.
    pub(crate) fn set_client_host(&mut self, client: ClientId, ip: IpAddr, path: &PathSchedule) {
        let base = STREAM_ACCESS | (u64::from(client.0) << 2);
        let link = |sched: &crate::link::LinkSchedule, k: u64| {
            Link::new(
                sched.clone(),
                Rng::derive(self.seed, base | k),
                Rng::derive(self.seed, (base | k) ^ (1 << 47)),
            )
        };
        let up = link(&path.up, 0);
        let down = link(&path.down, 1);
        let i = client.0 as usize;
        if self.access.len() <= i {
            self.access.resize_with(i + 1, || None);
        }
        self.access[i] = Some(Access {
            ip,
            path: Path { up, down },
            routes: RouteCache::default(),
        });
        self.ip_owner.entry(ip).or_insert(client);
    }

    /// The source address of `owner`'s sockets.
    fn local_ip(&self, owner: ClientId) -> IpAddr {
        match self.access.get(owner.0 as usize) {
            Some(Some(a)) => a.ip,
            _ => self.client_ip,
        }
    }

    /// The TCP metrics `owner`'s host keeps.
    fn routes_of(&mut self, owner: ClientId) -> &mut RouteCache {
        match self.access.get_mut(owner.0 as usize) {
            Some(Some(a)) => &mut a.routes,
            _ => &mut self.routes,
        }
    }

    /// The client whose access link carries `seg` (`None`: the shared
    /// client host's path to the server).
    fn access_owner(&self, dir: Direction, seg: &Segment) -> Option<usize> {
        if self.access.is_empty() {
            return None;
        }
        let (local, remote) = match dir {
            Direction::Up => (seg.src, seg.dst),
            Direction::Down => (seg.dst, seg.src),
        };
        let owner = self
            .by_tuple
            .get(&(local.ip(), local.port(), remote))
            .and_then(|id| self.sockets.get(id))
            .map(|s| s.owner)
            .or_else(|| self.ip_owner.get(&local.ip()).copied())?;
        let i = owner.0 as usize;
        matches!(self.access.get(i), Some(Some(_))).then_some(i)
    }

    /// Whether `ip` is a client host's address.
    fn is_client_ip(&self, ip: IpAddr) -> bool {
        ip == self.client_ip || self.ip_owner.contains_key(&ip)
    }

    /// Adds (or replaces) the host at `ip` and the path to it. Each path's
    /// random streams depend only on the root seed and the host address, so
    /// adding another host does not change this one's loss pattern.
    pub(crate) fn add_host(
        &mut self,
        ip: IpAddr,
        path: PathSchedule,
        stack: TcpStack,
    ) -> &mut ServerHost {
        let (up, down) = path_links(self.seed, ip, &path);
        self.paths.insert(ip, Path { up, down });
        let host = ServerHost::new(ip, stack);
        match self.hosts.entry(ip) {
            Entry::Occupied(mut o) => {
                o.insert(host);
                o.into_mut()
            }
            Entry::Vacant(v) => v.insert(host),
        }
    }

    pub(crate) fn host(&self, ip: IpAddr) -> Option<&ServerHost> {
        self.hosts.get(&ip)
    }

    pub(crate) fn hosts(&self) -> impl Iterator<Item = &ServerHost> {
        self.hosts.values()
    }

    pub(crate) fn host_mut(&mut self, ip: IpAddr) -> Option<&mut ServerHost> {
        self.hosts.get_mut(&ip)
    }

    pub(crate) fn link_stats(&self, ip: IpAddr) -> Option<(LinkStats, LinkStats)> {
        self.paths.get(&ip).map(|p| (p.up.stats(), p.down.stats()))
    }

    // ---- client socket operations -------------------------------------

    pub(crate) fn connect(
        &mut self,
        owner: ClientId,
        remote: SocketAddr,
        stack: &TcpStack,
    ) -> SocketId {
        let ip = self.local_ip(owner);
        let port = self.allocate_port(ip, remote);
        let id = SocketId(self.next_socket);
        self.next_socket += 1;
        let local = SocketAddr::new(ip, port);
        let now = self.now;
        let cached = self.routes_of(owner).lookup(now, remote.ip());
        let conn = TcpConn::connect(self.now, local, remote, stack.clone(), cached);
        self.by_tuple.insert((ip, port, remote), id);
        self.sockets.insert(
            id,
            ClientSock {
                owner,
                conn,
                key: (ip, port, remote),
                released: false,
                timer: None,
                tls: self
                    .tls_clients
                    .get(&owner)
                    .map(|t| TlsSession::new(&t.cfg)),
            },
        );
        self.drive_socket(id);
        id
    }

    fn allocate_port(&mut self, ip: IpAddr, remote: SocketAddr) -> u16 {
        let span = u32::from(PORT_LAST - PORT_FIRST) + 1;
        let next = self.next_port.entry(ip).or_insert(PORT_FIRST);
        for _ in 0..span {
            let p = *next;
            *next = if p >= PORT_LAST { PORT_FIRST } else { p + 1 };
            if !self.by_tuple.contains_key(&(ip, p, remote)) {
                return p;
            }
        }
        // Every port to this server is busy: reuse one (a single client
        // never gets there; thousands behind one address could, as behind
        // a real NAT; the old connection keeps receiving its own segments).
        *next
    }

    fn owned(&mut self, owner: ClientId, id: SocketId) -> Result<&mut ClientSock, SocketError> {
        match self.sockets.get_mut(&id) {
            Some(s) if s.owner == owner && !s.released => Ok(s),
            _ => Err(SocketError::UnknownSocket),
        }
    }

    pub(crate) fn send(
        &mut self,
        owner: ClientId,
        id: SocketId,
        data: &[u8],
    ) -> Result<(), SocketError> {
        let now = self.now;
        let s = self.owned(owner, id)?;
        match s.tls.as_mut() {
            Some(tls) => {
                // Refused exactly when a plain socket would refuse it.
                s.conn.send(now, &[])?;
                let mut wire = Vec::new();
                tls.write(data, &mut wire);
                if !wire.is_empty() {
                    s.conn.send(now, &wire)?;
                }
            }
            None => s.conn.send(now, data)?,
        }
        self.drive_socket(id);
        Ok(())
    }

    pub(crate) fn close(&mut self, owner: ClientId, id: SocketId) -> Result<(), SocketError> {
        let now = self.now;
        let s = self.owned(owner, id)?;
        s.released = true;
        s.conn.close(now);
        self.drive_socket(id);
        Ok(())
    }

    pub(crate) fn abort(&mut self, owner: ClientId, id: SocketId) -> Result<(), SocketError> {
        let now = self.now;
        let s = self.owned(owner, id)?;
        s.released = true;
        s.conn.abort(now);
        self.drive_socket(id);
        Ok(())
    }

    /// Drains a client connection: segments to the wire, events to the
    /// pending queue, timer to the event queue; forgets it once closed.
    fn drive_socket(&mut self, id: SocketId) {
        let now = self.now;
        let Some(s) = self.sockets.get_mut(&id) else {
            return;
        };
        // The TLS layer first: what it writes joins this drain's segments.
        if let Some(tls) = s.tls.as_mut() {
            let mut out = crate::tls::SessionOutput::default();
            while let Some(ev) = s.conn.poll_event() {
                if let Some(t) = self.tls_clients.get_mut(&s.owner) {
                    tls.on_event(now, ev, &mut t.tickets, &mut out);
                }
            }
            self.apply_tls(id, out);
        }
        let Some(s) = self.sockets.get_mut(&id) else {
            return;
        };
        let mut out = Vec::new();
        while let Some(seg) = s.conn.poll_transmit() {
            out.push(seg);
        }
        while let Some(ev) = s.conn.poll_event() {
            if !s.released {
                self.pending.push_back((s.owner, id, ev));
            }
        }
        if let Some(report) = s.conn.take_metrics() {
            let (owner, remote) = (s.owner, s.key.2.ip());
            self.routes_of(owner).update(now, remote, report);
        }
        let Some(s) = self.sockets.get_mut(&id) else {
            return;
        };
        if s.conn.is_closed() {
            let key = s.key;
            self.sockets.remove(&id);
            if self.by_tuple.get(&key) == Some(&id) {
                self.by_tuple.remove(&key);
            }
        } else {
            let next = s.conn.poll_timeout();
            if next.is_some() && next != s.timer {
                s.timer = next;
                if let Some(t) = next {
                    self.queue.push(t, NetEvent::ClientTimer { socket: id });
                }
            }
        }
        for seg in out {
            self.transmit(Direction::Up, seg);
        }
    }

    /// Carries out what a socket's TLS layer asked for: its bytes to the
    /// connection, its events to the client, its deadline to the queue.
    fn apply_tls(&mut self, id: SocketId, out: crate::tls::SessionOutput) {
        let now = self.now;
        let Some(s) = self.sockets.get_mut(&id) else {
            return;
        };
        if !out.send.is_empty() {
            // A connection that can no longer send is failing; its own
            // events tell the client.
            let _ = s.conn.send(now, &out.send);
        }
        for ev in out.events {
            if !s.released {
                self.pending.push_back((s.owner, id, ev));
            }
        }
        if out.close {
            s.released = true;
            s.conn.close(now);
        }
        if let Some(t) = out.deadline {
            self.queue.push(t, NetEvent::HandshakeTimer { socket: id });
        }
    }

    // ---- the wire -------------------------------------------------------

    /// Sends `seg` from its host: through the middlebox (at the client's
    /// edge), then onto its path's link.
    fn transmit(&mut self, dir: Direction, seg: Segment) {
        if dir == Direction::Up {
            if let Some(nat) = self.middlebox.as_mut() {
                match nat.outbound(self.now, &seg) {
                    Verdict::Pass => {}
                    Verdict::Drop => {
                        self.trace
                            .dropped(self.now, dir, DropReason::Middlebox, &seg);
                        return;
                    }
                    Verdict::DropAndReset => {
                        self.trace
                            .dropped(self.now, dir, DropReason::Middlebox, &seg);
                        let rst = Segment::reset_for(self.now, &seg);
                        self.queue
                            .push(self.now, NetEvent::MiddleboxReset { seg: rst });
                        return;
                    }
                }
            }
        }
        self.offer(dir, seg);
    }

    /// Puts `seg` on its path's link in direction `dir`.
    fn offer(&mut self, dir: Direction, seg: Segment) {
        let path_ip = match dir {
            Direction::Up => seg.dst.ip(),
            Direction::Down => seg.src.ip(),
        };
        let path = match self.access_owner(dir, &seg) {
            Some(i) => self.access[i].as_mut().map(|a| &mut a.path),
            None => self.paths.get_mut(&path_ip),
        };
        let Some(path) = path else {
            self.trace.dropped(self.now, dir, DropReason::NoRoute, &seg);
            return;
        };
        let link = match dir {
            Direction::Up => &mut path.up,
            Direction::Down => &mut path.down,
        };
        match link.offer(self.now, seg.wire_len()) {
            LinkVerdict::Deliver(at) => self.queue.push(
                at,
                NetEvent::Arrive {
                    path: path_ip,
                    dir,
                    seg,
                },
            ),
            LinkVerdict::Lost => self.trace.dropped(self.now, dir, DropReason::Loss, &seg),
            LinkVerdict::QueueFull => {
                self.trace
                    .dropped(self.now, dir, DropReason::QueueFull, &seg)
            }
        }
    }

    fn apply_host_output(&mut self, host: IpAddr, out: HostOutput) {
        for (conn, t) in out.timers {
            self.queue.push(t, NetEvent::ServerTimer { host, conn });
        }
        for (t, conn, action) in out.actions {
            self.queue
                .push(t, NetEvent::ServerAction { host, conn, action });
        }
        if let Some(t) = out.accept_at {
            self.queue.push(t, NetEvent::HostAccept { host });
        }
        for seg in out.segments {
            self.transmit(Direction::Down, seg);
        }
    }

    /// A segment reaches the client host: its socket, or the kernel's RST.
    fn deliver_to_client(&mut self, seg: Segment) {
        let now = self.now;
        let Some(&id) = self.by_tuple.get(&(seg.dst.ip(), seg.dst.port(), seg.src)) else {
            // No socket (closed, or abandoned while connecting):
            // the kernel answers with RST, e.g. to a late SYN-ACK.
            if !seg.flags.contains(Flags::RST) {
                self.transmit(Direction::Up, Segment::reset_for(now, &seg));
            }
            return;
        };
        if let Some(s) = self.sockets.get_mut(&id) {
            s.conn.handle_segment(now, &seg);
        }
        self.drive_socket(id);
    }

    /// Handles every event that does not involve calling a client.
    pub(crate) fn handle(&mut self, ev: NetEvent) {
        let now = self.now;
        match ev {
            NetEvent::Arrive { path, dir, seg } => {
                self.trace.delivered(now, dir, &seg);
                match dir {
                    Direction::Up => {
                        let mut out = HostOutput::default();
                        if let Some(h) = self.hosts.get_mut(&path) {
                            h.handle_segment(now, &seg, &mut out);
                        }
                        self.apply_host_output(path, out);
                    }
                    Direction::Down => {
                        if !self.is_client_ip(seg.dst.ip()) {
                            return;
                        }
                        if let Some(nat) = self.middlebox.as_mut() {
                            match nat.inbound(now, &seg) {
                                Verdict::Pass => {}
                                Verdict::Drop => {
                                    self.trace.dropped(now, dir, DropReason::Middlebox, &seg);
                                    return;
                                }
                                Verdict::DropAndReset => {
                                    self.trace.dropped(now, dir, DropReason::Middlebox, &seg);
                                    // Back to the server, from the edge.
                                    self.offer(Direction::Up, Segment::reset_for(now, &seg));
                                    return;
                                }
                            }
                        }
                        self.deliver_to_client(seg);
                    }
                }
            }
            NetEvent::MiddleboxReset { seg } => self.deliver_to_client(seg),
            NetEvent::ClientTimer { socket } => {
                let Some(s) = self.sockets.get_mut(&socket) else {
                    return;
                };
                if s.timer != Some(now) {
                    return; // superseded
                }
                s.timer = None;
                s.conn.handle_timeout(now);
                self.drive_socket(socket);
            }
            NetEvent::HandshakeTimer { socket } => {
                let Some(tls) = self.sockets.get_mut(&socket).and_then(|s| s.tls.as_mut()) else {
                    return;
                };
                let mut out = crate::tls::SessionOutput::default();
                tls.on_deadline(now, &mut out);
                self.apply_tls(socket, out);
                self.drive_socket(socket);
            }
            NetEvent::ServerTimer { host, conn } => {
                let mut out = HostOutput::default();
                if let Some(h) = self.hosts.get_mut(&host) {
                    h.handle_timer(now, conn, &mut out);
                }
                self.apply_host_output(host, out);
            }
            NetEvent::HostAccept { host } => {
                let mut out = HostOutput::default();
                if let Some(h) = self.hosts.get_mut(&host) {
                    h.handle_accept(now, &mut out);
                }
                self.apply_host_output(host, out);
            }
            NetEvent::ServerAction { host, conn, action } => {
                let mut out = HostOutput::default();
                if let Some(h) = self.hosts.get_mut(&host) {
                    h.handle_action(now, conn, action, &mut out);
                }
                self.apply_host_output(host, out);
            }
            // Client events are dispatched by the simulation.
            NetEvent::ClientStart { .. } | NetEvent::ClientWake { .. } => {}
        }
    }
}

/// The two links (up, down) of the path to `ip` in a simulation with root
/// `seed`: the simulator's own and the oracle's, so both meet the same
/// burst timeline and outages.
pub(crate) fn path_links(seed: u64, ip: IpAddr, path: &PathSchedule) -> (Link, Link) {
    let base = STREAM_LINK ^ (ip_key(ip) << 2);
    (
        Link::new(
            path.up.clone(),
            Rng::derive(seed, base),
            Rng::derive(seed, base | 1),
        ),
        Link::new(
            path.down.clone(),
            Rng::derive(seed, base | 2),
            Rng::derive(seed, base | 3),
        ),
    )
}

fn ip_key(ip: IpAddr) -> u64 {
    match ip {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        IpAddr::V6(v6) => {
            let b = u128::from(v6);
            (b as u64) ^ ((b >> 64) as u64) ^ (1 << 61)
        }
    }
}
