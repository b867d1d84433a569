//! The server's side: [`TlsServer`] runs the handshake on every
//! connection and hands the application bytes to the wrapped app.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use stn_proto::{Duration, Instant};

use crate::host::{ServerAction, ServerApp, ServerConnId, ServerReplies};
use crate::tls::record::{self, Message, RecordReader};
use crate::tls::{
    SERVER_FLIGHT_FULL_LEN, SERVER_FLIGHT_RESUMED_LEN, TICKETS_PER_HANDSHAKE, TICKET_LEN,
};

#[derive(Debug)]
struct Conn {
    peer: SocketAddr,
    reader: RecordReader,
    established: bool,
}

/// A TLS 1.3 server in front of `inner`: answers each ClientHello with the
/// full or the resumed flight (every ticket it issued is accepted: the
/// servers of one service share their ticket keys), sends
/// [`TICKETS_PER_HANDSHAKE`] tickets after the client's Finished, and only
/// then accepts the connection into `inner`. The handshake costs the
/// server no processing time.
pub struct TlsServer {
    inner: Box<dyn ServerApp>,
    conns: BTreeMap<ServerConnId, Conn>,
    full_handshakes: u64,
    resumed_handshakes: u64,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("conns", &self.conns.len())
            .field("full_handshakes", &self.full_handshakes)
            .field("resumed_handshakes", &self.resumed_handshakes)
            .finish()
    }
}

impl TlsServer {
    /// `inner` behind TLS.
    pub fn new(inner: Box<dyn ServerApp>) -> Self {
        TlsServer {
            inner,
            conns: BTreeMap::new(),
            full_handshakes: 0,
            resumed_handshakes: 0,
        }
    }

    /// Handshakes answered so far: (full, resumed).
    pub fn handshakes(&self) -> (u64, u64) {
        (self.full_handshakes, self.resumed_handshakes)
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
                established: false,
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
            replies.close(Duration::ZERO);
            return;
        };
        let mut app: Vec<u8> = Vec::new();
        let mut accepted = None;
        for (msg, payload) in records {
            match (c.established, msg) {
                (false, Message::ClientHello { psk }) => {
                    let (resumed, len) = if psk {
                        self.resumed_handshakes += 1;
                        (true, SERVER_FLIGHT_RESUMED_LEN)
                    } else {
                        self.full_handshakes += 1;
                        (false, SERVER_FLIGHT_FULL_LEN)
                    };
                    let mut wire = Vec::with_capacity(len);
                    record::handshake(&mut wire, Message::ServerFlight { resumed }, len);
                    replies.send(Duration::ZERO, wire);
                }
                (false, Message::ClientFinished) => {
                    c.established = true;
                    let mut wire = Vec::with_capacity(TICKET_LEN * TICKETS_PER_HANDSHAKE);
                    for _ in 0..TICKETS_PER_HANDSHAKE {
                        record::handshake(&mut wire, Message::Ticket, TICKET_LEN);
                    }
                    replies.send(Duration::ZERO, wire);
                    accepted = Some(c.peer);
                }
                (true, Message::AppData) => app.extend_from_slice(&payload),
                _ => {}
            }
        }
        let mut inner = ServerReplies::default();
        if let Some(peer) = accepted {
            self.inner.on_accept(now, conn, peer, &mut inner);
        }
        if !app.is_empty() {
            self.inner.on_data(now, conn, &app, &mut inner);
        }
        wrap(&inner, replies);
    }

    fn on_peer_closed(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        match self.conns.remove(&conn) {
            Some(c) if c.established => {
                let mut inner = ServerReplies::default();
                self.inner.on_peer_closed(now, conn, &mut inner);
                wrap(&inner, replies);
            }
            _ => replies.close(Duration::ZERO),
        }
    }

    fn on_reset(&mut self, now: Instant, conn: ServerConnId) {
        if self.conns.remove(&conn).is_some_and(|c| c.established) {
            self.inner.on_reset(now, conn);
        }
    }

    fn on_wakeup(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        let mut inner = ServerReplies::default();
        self.inner.on_wakeup(now, conn, &mut inner);
        wrap(&inner, replies);
    }
}
