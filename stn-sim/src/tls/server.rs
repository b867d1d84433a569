//! The server's side: [`TlsServer`] runs the handshake on every
//! connection and hands the application bytes to the wrapped app.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use stn_proto::{Duration, Instant};

use crate::host::{ServerAction, ServerApp, ServerConnId, ServerReplies};
use crate::tls::client::{HelloFields, Ticket};
use crate::tls::record::{self, Flight, Message, RecordReader};
use crate::tls::{
    MAX_EARLY_DATA, SERVER_FLIGHT_EARLY_EXTRA, SERVER_FLIGHT_FULL_LEN, SERVER_FLIGHT_RESUMED_LEN,
    SERVER_SESSION_CACHE, TICKETS_PER_HANDSHAKE, TICKET_LEN,
};

/// What a connection in its handshake does with early-data records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EarlyRead {
    /// Accepted: they go to the app, which already has the connection.
    Accepted,
    /// None offered, or rejected: skipped (RFC 8446 §4.2.10).
    Skip,
}

#[derive(Debug)]
enum Phase {
    /// Waiting for the ClientHello.
    Hello,
    /// The flight is out; waiting for the client's Finished. `name`: the
    /// ClientHello's server name, kept with the tickets this connection
    /// gets.
    Flight { early: EarlyRead, name: String },
    /// The handshake is done.
    Established,
}

impl Phase {
    /// Whether the wrapped app has the connection.
    fn app_has_it(&self) -> bool {
        matches!(
            self,
            Phase::Established
                | Phase::Flight {
                    early: EarlyRead::Accepted,
                    ..
                }
        )
    }
}

#[derive(Debug)]
struct Conn {
    peer: SocketAddr,
    reader: RecordReader,
    phase: Phase,
}

/// A server's sessions when it enables early data. Early data needs
/// stateful resumption (rustls accepts it only without a ticketer, from its
/// `session_storage`, whose `take` makes each ticket single-use; RFC 8446
/// §8.1), so such a server resumes only a session it issued and still
/// holds, once, for the same server name (RFC 6066, as rustls'
/// `can_resume`); any other ticket gets a full handshake.
#[derive(Debug)]
struct Sessions {
    /// Keeps this server's ticket ids apart from other servers'.
    server_id: u32,
    next: u32,
    /// Ticket id → the server name of the connection that got it; ids
    /// grow, so the first is the oldest (forgotten first when full).
    held: BTreeMap<u64, String>,
    accepted: u64,
    rejected: u64,
}

impl Sessions {
    fn issue(&mut self, name: &str) -> Ticket {
        self.next = self.next.wrapping_add(1);
        let id = (u64::from(self.server_id) << 32) | u64::from(self.next);
        if self.held.len() >= SERVER_SESSION_CACHE {
            self.held.pop_first();
        }
        self.held.insert(id, name.to_owned());
        Ticket {
            id,
            max_early: MAX_EARLY_DATA,
        }
    }

    /// Takes the session of `hello`'s ticket: whether it resumes.
    fn take(&mut self, hello: &HelloFields) -> bool {
        self.held
            .remove(&hello.ticket)
            .is_some_and(|name| name == hello.server_name)
    }
}

/// A TLS 1.3 server in front of `inner`: answers each ClientHello with the
/// full or the resumed flight, sends [`TICKETS_PER_HANDSHAKE`] tickets
/// after the client's Finished, and only then accepts the connection into
/// `inner`. Without early data (the default) every ticket of the service
/// resumes (its servers share their ticket keys). With early data
/// ([`TlsServer::with_early_data`]) sessions are the server's own and
/// single-use; a resumption that offers early data is accepted at once:
/// tickets go right after the flight (half-RTT, as BoringSSL does when it
/// accepts 0-RTT; RFC 8446 §4.6.1 allows it) and `inner` gets the
/// connection and the early request then, so its answer follows the flight
/// (half-RTT data, rustls' `send_half_rtt_data`). The handshake costs the
/// server no processing time.
pub struct TlsServer {
    inner: Box<dyn ServerApp>,
    conns: BTreeMap<ServerConnId, Conn>,
    full_handshakes: u64,
    resumed_handshakes: u64,
    sessions: Option<Sessions>,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("conns", &self.conns.len())
            .field("full_handshakes", &self.full_handshakes)
            .field("resumed_handshakes", &self.resumed_handshakes)
            .field("early_data", &self.early_data())
            .finish()
    }
}

impl TlsServer {
    /// `inner` behind TLS, early data off.
    pub fn new(inner: Box<dyn ServerApp>) -> Self {
        TlsServer {
            inner,
            conns: BTreeMap::new(),
            full_handshakes: 0,
            resumed_handshakes: 0,
            sessions: None,
        }
    }

    /// Enables early data: tickets allow [`MAX_EARLY_DATA`] bytes and the
    /// server keeps its sessions ([`crate::tls::SERVER_SESSION_CACHE`] at
    /// most). `server_id` names this server in its ticket ids, so that
    /// servers of one run never take each other's tickets for their own.
    pub fn with_early_data(mut self, server_id: u32) -> Self {
        self.sessions = Some(Sessions {
            server_id,
            next: 0,
            held: BTreeMap::new(),
            accepted: 0,
            rejected: 0,
        });
        self
    }

    /// Handshakes answered so far: (full, resumed).
    pub fn handshakes(&self) -> (u64, u64) {
        (self.full_handshakes, self.resumed_handshakes)
    }

    /// Early-data offers so far: (accepted, rejected).
    pub fn early_data(&self) -> (u64, u64) {
        self.sessions
            .as_ref()
            .map_or((0, 0), |s| (s.accepted, s.rejected))
    }

    /// The tickets after a handshake, for a connection to `name`.
    fn tickets(&mut self, name: &str) -> Vec<u8> {
        let mut wire = Vec::with_capacity(TICKET_LEN * TICKETS_PER_HANDSHAKE);
        for _ in 0..TICKETS_PER_HANDSHAKE {
            // A stateless ticket is all zeros (id 0, no early data).
            let t = self.sessions.as_mut().map_or(
                Ticket {
                    id: 0,
                    max_early: 0,
                },
                |s| s.issue(name),
            );
            record::handshake_with(&mut wire, Message::Ticket, TICKET_LEN, &t.to_fields());
        }
        wire
    }

    /// Answers a ClientHello: the flight, and with early data accepted the
    /// tickets at once. Returns what the connection does with early data.
    fn on_hello(
        &mut self,
        psk: bool,
        hello: &HelloFields,
        replies: &mut ServerReplies,
    ) -> EarlyRead {
        let resumed = match self.sessions.as_mut() {
            None => psk,
            Some(s) => psk && s.take(hello),
        };
        let early = if resumed && hello.early && self.sessions.is_some() {
            EarlyRead::Accepted
        } else {
            EarlyRead::Skip
        };
        if let Some(s) = self.sessions.as_mut() {
            match (hello.early, early) {
                (true, EarlyRead::Accepted) => s.accepted += 1,
                (true, EarlyRead::Skip) => s.rejected += 1,
                (false, _) => {}
            }
        }
        let (flight, len) = match (resumed, early) {
            (false, _) => (Flight::Full, SERVER_FLIGHT_FULL_LEN),
            (true, EarlyRead::Skip) => (Flight::Resumed, SERVER_FLIGHT_RESUMED_LEN),
            (true, EarlyRead::Accepted) => (
                Flight::ResumedEarly,
                SERVER_FLIGHT_RESUMED_LEN + SERVER_FLIGHT_EARLY_EXTRA,
            ),
        };
        if resumed {
            self.resumed_handshakes += 1;
        } else {
            self.full_handshakes += 1;
        }
        let mut wire = Vec::with_capacity(len);
        record::handshake(&mut wire, Message::ServerFlight(flight), len);
        replies.send(Duration::ZERO, wire);
        if early == EarlyRead::Accepted {
            let t = self.tickets(&hello.server_name);
            replies.send(Duration::ZERO, t);
        }
        early
    }
}

/// `inner`'s replies with every write turned into records.
fn wrap(inner: &ServerReplies, out: &mut ServerReplies) {
    for (delay, action) in inner.actions() {
        match action {
            ServerAction::Send(b) => {
                let mut wire = Vec::with_capacity(b.len() + 64);
                record::app_data(&mut wire, b);
                out.send(*delay, wire);
            }
            ServerAction::Close => out.close(*delay),
            ServerAction::Abort => out.abort(*delay),
            ServerAction::Wake => out.wake(*delay),
        }
    }
}

impl ServerApp for TlsServer {
    fn on_accept(
        &mut self,
        _now: Instant,
        conn: ServerConnId,
        peer: SocketAddr,
        _replies: &mut ServerReplies,
    ) {
        self.conns.insert(
            conn,
            Conn {
                peer,
                reader: RecordReader::default(),
                phase: Phase::Hello,
            },
        );
    }

    fn on_data(
        &mut self,
        now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Ok(records) = c.reader.push(data) else {
            // Not TLS: a real server sends an alert and closes.
            self.conns.remove(&conn);
            replies.mark_handshake_bytes();
            replies.close(Duration::ZERO);
            return;
        };
        let mut app: Vec<u8> = Vec::new();
        let mut accepted = None;
        for (msg, payload) in records {
            let Some(c) = self.conns.get_mut(&conn) else {
                return;
            };
            match (&c.phase, msg) {
                (Phase::Hello, Message::ClientHello { psk }) => {
                    replies.mark_hello();
                    let peer = c.peer;
                    let hello = HelloFields::from_fields(&payload);
                    let early = self.on_hello(psk, &hello, replies);
                    if early == EarlyRead::Accepted {
                        accepted = Some(peer);
                    }
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.phase = Phase::Flight {
                            early,
                            name: hello.server_name,
                        };
                    }
                }
                (
                    Phase::Flight {
                        early: EarlyRead::Accepted,
                        ..
                    },
                    Message::EarlyData,
                )
                | (Phase::Established, Message::AppData) => app.extend_from_slice(&payload),
                (Phase::Flight { early, name }, Message::ClientFinished) => {
                    let (early, name, peer) = (*early, name.clone(), c.peer);
                    c.phase = Phase::Established;
                    replies.mark_secured();
                    if early == EarlyRead::Skip {
                        let t = self.tickets(&name);
                        replies.send(Duration::ZERO, t);
                        accepted = Some(peer);
                    }
                }
                // Rejected early data is skipped (RFC 8446 §4.2.10);
                // EndOfEarlyData needs no answer; nothing else is expected.
                _ => {}
            }
        }
        let mut inner = ServerReplies::default();
        if let Some(peer) = accepted {
            self.inner.on_accept(now, conn, peer, &mut inner);
        }
        if app.is_empty() {
            replies.mark_handshake_bytes();
        } else {
            self.inner.on_data(now, conn, &app, &mut inner);
        }
        wrap(&inner, replies);
    }

    fn on_peer_closed(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        match self.conns.remove(&conn) {
            Some(c) if c.phase.app_has_it() => {
                let mut inner = ServerReplies::default();
                self.inner.on_peer_closed(now, conn, &mut inner);
                wrap(&inner, replies);
            }
            _ => replies.close(Duration::ZERO),
        }
    }

    fn on_reset(&mut self, now: Instant, conn: ServerConnId) {
        if self
            .conns
            .remove(&conn)
            .is_some_and(|c| c.phase.app_has_it())
        {
            self.inner.on_reset(now, conn);
        }
    }

    fn on_wakeup(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        let mut inner = ServerReplies::default();
        self.inner.on_wakeup(now, conn, &mut inner);
        wrap(&inner, replies);
    }
}
