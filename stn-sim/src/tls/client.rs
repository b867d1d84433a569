//! The client's side of a TLS socket: the handshake's phases, the kept
//! tickets, early data, and the record layer on the way in and out.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use stn_proto::ConnectError;
use stn_proto::Instant;
use stn_proto::TlsFailure;

use crate::socket::SocketEvent;
use crate::tls::record::{self, Flight, Message, RecordReader};
use crate::tls::{
    TlsClientConfig, CLIENT_FINISHED_LEN, CLIENT_HELLO_EARLY_EXTRA, CLIENT_HELLO_LEN,
    CLIENT_HELLO_PSK_EXTRA, END_OF_EARLY_DATA_LEN, MAX_TICKETS_PER_SERVER,
};

/// One NewSessionTicket as the client keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// The server's name for the session (0: a stateless ticket, which any
    /// server of the service resumes).
    pub(crate) id: u64,
    /// `max_early_data_size` (0: no early data with this ticket).
    pub(crate) max_early: u32,
}

impl Ticket {
    /// The ticket's fields as the server writes them into its record.
    pub(crate) fn to_fields(self) -> [u8; 12] {
        let mut f = [0u8; 12];
        f[..8].copy_from_slice(&self.id.to_be_bytes());
        f[8..].copy_from_slice(&self.max_early.to_be_bytes());
        f
    }

    /// Reads what [`Ticket::to_fields`] wrote (zeros where bytes are short).
    pub(crate) fn from_fields(f: &[u8]) -> Ticket {
        let mut b = [0u8; 12];
        let n = f.len().min(12);
        b[..n].copy_from_slice(&f[..n]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[..8]);
        let mut max = [0u8; 4];
        max.copy_from_slice(&b[8..]);
        Ticket {
            id: u64::from_be_bytes(id),
            max_early: u32::from_be_bytes(max),
        }
    }
}

/// What a ClientHello tells the server: the ticket it offers (id 0 for
/// none or a stateless one), whether early data follows, the server name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HelloFields {
    pub(crate) ticket: u64,
    pub(crate) early: bool,
    pub(crate) server_name: String,
}

/// Server-name bytes a ClientHello's fields carry at most.
const MAX_NAME: usize = record::MAX_FIELDS - 10;

impl HelloFields {
    pub(crate) fn to_fields(&self) -> Vec<u8> {
        let name = self.server_name.as_bytes();
        let name = &name[..name.len().min(MAX_NAME)];
        let mut f = Vec::with_capacity(10 + name.len());
        f.extend_from_slice(&self.ticket.to_be_bytes());
        f.push(u8::from(self.early));
        f.push(u8::try_from(name.len()).unwrap_or(0));
        f.extend_from_slice(name);
        f
    }

    pub(crate) fn from_fields(f: &[u8]) -> HelloFields {
        let mut id = [0u8; 8];
        let n = f.len().min(8);
        id[..n].copy_from_slice(&f[..n]);
        let len = usize::from(f.get(9).copied().unwrap_or(0));
        let name = f.get(10..10 + len).unwrap_or_default();
        HelloFields {
            ticket: u64::from_be_bytes(id),
            early: f.get(8).is_some_and(|b| *b == 1),
            server_name: String::from_utf8_lossy(name).into_owned(),
        }
    }
}

/// Tickets a client keeps, per server name: at most
/// [`MAX_TICKETS_PER_SERVER`], the oldest dropped first, the newest spent
/// first (rustls' `ClientSessionMemoryCache`: `push_back`, `pop_front` when
/// full, `pop_back` to resume).
#[derive(Clone, Debug, Default)]
pub(crate) struct TicketStore {
    by_name: BTreeMap<String, VecDeque<Ticket>>,
}

impl TicketStore {
    pub(crate) fn take(&mut self, name: &str) -> Option<Ticket> {
        self.by_name.get_mut(name).and_then(VecDeque::pop_back)
    }

    pub(crate) fn add(&mut self, name: &str, t: Ticket) {
        let kept = self.by_name.entry(name.to_owned()).or_default();
        if kept.len() >= MAX_TICKETS_PER_SERVER as usize {
            kept.pop_front();
        }
        kept.push_back(t);
    }

    /// Tickets kept for `name`.
    #[cfg(test)]
    pub(crate) fn count(&self, name: &str) -> usize {
        self.by_name.get(name).map_or(0, VecDeque::len)
    }
}

/// Early data on a connection in its handshake.
#[derive(Debug)]
enum Early {
    /// Not offered: no ticket that allows it, or the client does not
    /// enable it.
    Off,
    /// Offered: `left` more bytes may go early; `sent` is every byte sent
    /// early, kept to send again should the server reject them.
    Offered { left: u32, sent: Vec<u8> },
}

#[derive(Debug)]
enum Phase {
    /// The TCP handshake is running.
    Tcp,
    /// The ClientHello is out; waiting for the server's flight.
    Handshake {
        deadline: Option<Instant>,
        early: Early,
    },
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
    /// Application bytes written before the handshake completed and not
    /// sent early: they go once it completes.
    held: Vec<u8>,
    /// Whether this connection's handshake was a resumption.
    resumed: bool,
}

impl TlsSession {
    pub(crate) fn new(cfg: &TlsClientConfig) -> Self {
        TlsSession {
            cfg: cfg.clone(),
            phase: Phase::Tcp,
            reader: RecordReader::default(),
            held: Vec::new(),
            resumed: false,
        }
    }

    /// Application bytes from the client: records once the handshake is
    /// done; early-data records while an offer has room for all of them
    /// (and nothing is held before them); held until the handshake is done
    /// otherwise.
    pub(crate) fn write(&mut self, data: &[u8], send: &mut Vec<u8>) {
        match &mut self.phase {
            Phase::Established => record::app_data(send, data),
            Phase::Handshake {
                early: Early::Offered { left, sent },
                ..
            } if self.held.is_empty() && u32::try_from(data.len()).is_ok_and(|n| n <= *left) => {
                record::early_data(send, data);
                *left -= u32::try_from(data.len()).unwrap_or(*left);
                sent.extend_from_slice(data);
            }
            _ => self.held.extend_from_slice(data),
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
        match (&self.phase, ev) {
            (Phase::Failed, _) => {}
            (Phase::Tcp, SocketEvent::Connected) => self.hello(now, tickets, out),
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

    /// TCP is up: the ClientHello, resuming with the newest kept ticket and
    /// offering early data when the ticket and the configuration allow it.
    fn hello(&mut self, now: Instant, tickets: &mut TicketStore, out: &mut SessionOutput) {
        let ticket = if self.cfg.resumption {
            tickets.take(&self.cfg.server_name)
        } else {
            None
        };
        self.resumed = ticket.is_some();
        let early_max = ticket
            .filter(|_| self.cfg.early_data)
            .map_or(0, |t| t.max_early);
        let mut len = CLIENT_HELLO_LEN;
        if self.resumed {
            len += CLIENT_HELLO_PSK_EXTRA;
        }
        if early_max > 0 {
            len += CLIENT_HELLO_EARLY_EXTRA;
        }
        let fields = HelloFields {
            ticket: ticket.map_or(0, |t| t.id),
            early: early_max > 0,
            server_name: self.cfg.server_name.clone(),
        };
        record::handshake_with(
            &mut out.send,
            Message::ClientHello { psk: self.resumed },
            len,
            &fields.to_fields(),
        );
        let deadline = self.cfg.handshake_timeout.map(|t| now + t);
        let early = if early_max > 0 {
            Early::Offered {
                left: early_max,
                sent: Vec::new(),
            }
        } else {
            Early::Off
        };
        self.phase = Phase::Handshake { deadline, early };
        out.deadline = deadline;
        out.events.push(SocketEvent::TcpConnected);
        if early_max > 0 {
            out.events.push(SocketEvent::EarlyData { max: early_max });
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

    /// The server's flight: EndOfEarlyData if it accepted early data (RFC
    /// 8446 §4.5), the Finished, then what waits: the early bytes again if
    /// they were rejected (tokio-rustls resends them after the handshake),
    /// then the held ones.
    fn on_flight(&mut self, flight: Flight, out: &mut SessionOutput) {
        let early = match std::mem::replace(&mut self.phase, Phase::Established) {
            Phase::Handshake { early, .. } => early,
            _ => Early::Off,
        };
        let resend = match early {
            Early::Offered { .. } if flight == Flight::ResumedEarly => {
                record::handshake(
                    &mut out.send,
                    Message::EndOfEarlyData,
                    END_OF_EARLY_DATA_LEN,
                );
                Vec::new()
            }
            Early::Offered { sent, .. } => sent,
            Early::Off => Vec::new(),
        };
        record::handshake(&mut out.send, Message::ClientFinished, CLIENT_FINISHED_LEN);
        if !resend.is_empty() {
            record::app_data(&mut out.send, &resend);
        }
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            record::app_data(&mut out.send, &held);
        }
        out.events.push(SocketEvent::Connected);
    }

    fn on_data(&mut self, data: &[u8], tickets: &mut TicketStore, out: &mut SessionOutput) {
        let records = match self.reader.push(data) {
            Ok(r) => r,
            Err(_) => {
                if matches!(self.phase, Phase::Established) {
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
            match (&self.phase, msg) {
                (Phase::Handshake { .. }, Message::ServerFlight(flight)) => {
                    self.on_flight(flight, out);
                }
                (Phase::Established, Message::Ticket) => {
                    tickets.add(&self.cfg.server_name, Ticket::from_fields(&payload));
                }
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
