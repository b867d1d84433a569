//! The client's side of a TLS socket: the handshake's phases, the kept
//! tickets, and the record layer on the way in and out.

use std::collections::BTreeMap;

use bytes::Bytes;
use stn_proto::ConnectError;
use stn_proto::Instant;
use stn_proto::TlsFailure;

use crate::socket::SocketEvent;
use crate::tls::record::{self, Message, RecordReader};
use crate::tls::{
    TlsClientConfig, CLIENT_FINISHED_LEN, CLIENT_HELLO_LEN, CLIENT_HELLO_PSK_EXTRA,
    MAX_TICKETS_PER_SERVER,
};

/// Tickets a client keeps, per server name.
#[derive(Clone, Debug, Default)]
pub(crate) struct TicketStore {
    by_name: BTreeMap<String, u32>,
}

impl TicketStore {
    fn take(&mut self, name: &str) -> bool {
        match self.by_name.get_mut(name) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    fn add(&mut self, name: &str) {
        let n = self.by_name.entry(name.to_owned()).or_default();
        *n = (*n + 1).min(MAX_TICKETS_PER_SERVER);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The TCP handshake is running.
    Tcp,
    /// The ClientHello is out; waiting for the server's flight.
    Handshake { deadline: Option<Instant> },
    /// Application data flows.
    Established,
    /// The handshake failed; the network closes the socket.
    Failed,
}

/// What the network must do after [`TlsSession::on_event`].
#[derive(Debug, Default)]
pub(crate) struct SessionOutput {
    /// Events for the client, in order.
    pub(crate) events: Vec<SocketEvent>,
    /// Bytes to write on the TCP connection.
    pub(crate) send: Vec<u8>,
    /// A handshake deadline to arm.
    pub(crate) deadline: Option<Instant>,
    /// Close the connection and tell the client nothing more.
    pub(crate) close: bool,
}

/// One TLS client connection.
#[derive(Debug)]
pub(crate) struct TlsSession {
    cfg: TlsClientConfig,
    phase: Phase,
    reader: RecordReader,
    /// Application bytes written before the handshake completed.
    early: Vec<u8>,
    /// Whether this connection's handshake was a resumption.
    resumed: bool,
}

impl TlsSession {
    pub(crate) fn new(cfg: &TlsClientConfig) -> Self {
        TlsSession {
            cfg: cfg.clone(),
            phase: Phase::Tcp,
            reader: RecordReader::default(),
            early: Vec::new(),
            resumed: false,
        }
    }

    /// Application bytes from the client: records once the handshake is
    /// done, held until then.
    pub(crate) fn write(&mut self, data: &[u8], send: &mut Vec<u8>) {
        if self.phase == Phase::Established {
            record::app_data(send, data);
        } else {
            self.early.extend_from_slice(data);
        }
    }

    /// A TCP event of this socket, turned into what the client sees.
    pub(crate) fn on_event(
        &mut self,
        now: Instant,
        ev: SocketEvent,
        tickets: &mut TicketStore,
        out: &mut SessionOutput,
    ) {
        match (self.phase, ev) {
            (Phase::Failed, _) => {}
            (Phase::Tcp, SocketEvent::Connected) => {
                self.resumed = self.cfg.resumption && tickets.take(&self.cfg.server_name);
                let len = if self.resumed {
                    CLIENT_HELLO_LEN + CLIENT_HELLO_PSK_EXTRA
                } else {
                    CLIENT_HELLO_LEN
                };
                record::handshake(
                    &mut out.send,
                    Message::ClientHello { psk: self.resumed },
                    len,
                );
                let deadline = self.cfg.handshake_timeout.map(|t| now + t);
                self.phase = Phase::Handshake { deadline };
                out.deadline = deadline;
                out.events.push(SocketEvent::TcpConnected);
            }
            (Phase::Handshake { .. } | Phase::Established, SocketEvent::Data(d)) => {
                self.on_data(&d, tickets, out);
            }
            (Phase::Handshake { .. }, SocketEvent::Closed) => {
                self.fail(out, ConnectError::tls(TlsFailure::ClosedInHandshake));
            }
            (Phase::Handshake { .. }, SocketEvent::Reset) => {
                self.phase = Phase::Failed;
                out.events
                    .push(SocketEvent::ConnectFailed(ConnectError::Reset));
            }
            (Phase::Handshake { .. }, SocketEvent::TimedOut) => {
                self.phase = Phase::Failed;
                out.events
                    .push(SocketEvent::ConnectFailed(ConnectError::TimedOut));
            }
            (_, ev) => out.events.push(ev),
        }
    }

    /// The handshake deadline came: fails the connect if it is still due.
    pub(crate) fn on_deadline(&mut self, now: Instant, out: &mut SessionOutput) {
        if let Phase::Handshake {
            deadline: Some(d), ..
        } = self.phase
        {
            if now >= d {
                self.fail(out, ConnectError::tls(TlsFailure::HandshakeTimeout));
            }
        }
    }

    fn fail(&mut self, out: &mut SessionOutput, err: ConnectError) {
        self.phase = Phase::Failed;
        out.close = true;
        out.events.push(SocketEvent::ConnectFailed(err));
    }

    fn on_data(&mut self, data: &[u8], tickets: &mut TicketStore, out: &mut SessionOutput) {
        let records = match self.reader.push(data) {
            Ok(r) => r,
            Err(_) => {
                if self.phase == Phase::Established {
                    self.phase = Phase::Failed;
                    out.close = true;
                    out.events.push(SocketEvent::Reset);
                } else {
                    self.fail(out, ConnectError::tls(TlsFailure::NotTls));
                }
                return;
            }
        };
        let mut app: Vec<u8> = Vec::new();
        for (msg, payload) in records {
            match (self.phase, msg) {
                (Phase::Handshake { .. }, Message::ServerFlight { .. }) => {
                    record::handshake(&mut out.send, Message::ClientFinished, CLIENT_FINISHED_LEN);
                    self.phase = Phase::Established;
                    let early = std::mem::take(&mut self.early);
                    if !early.is_empty() {
                        record::app_data(&mut out.send, &early);
                    }
                    out.events.push(SocketEvent::Connected);
                }
                (Phase::Established, Message::Ticket) => tickets.add(&self.cfg.server_name),
                (Phase::Established, Message::AppData) => app.extend_from_slice(&payload),
                // Nothing else is sent to a client; ignore it.
                _ => {}
            }
        }
        if !app.is_empty() {
            out.events.push(SocketEvent::Data(Bytes::from(app)));
        }
    }
}
