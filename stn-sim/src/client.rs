//! The client seam: how a client model (stn-proto's engine through an
//! adapter, a peer model, a test script) lives in the simulation.
//!
//! A client is called back at virtual times — once at start, on every socket
//! event, and when its wake-up time comes — and acts through a
//! [`ClientCx`]: open, write, close sockets, set its next wake-up, draw
//! randomness from its own seeded stream, and write notes into the trace.
//! Socket operations never call back synchronously: everything a client
//! causes reaches it later through the event queue.
//!
//! A sans-IO machine maps onto this directly: on every callback, feed the
//! input (`handle_input` / `handle_timeout`), drain `poll_output` into
//! socket operations, then `cx.set_wakeup(poll_timeout())`.

use std::net::SocketAddr;

use stn_proto::Instant;
use stn_proto::Rng;

use crate::network::{NetEvent, Network};
use crate::socket::{SocketError, SocketEvent, SocketId};
use crate::tcp::TcpStack;

pub use crate::ids::ClientId;

/// A client model.
pub trait SimClient {
    /// Called once, at the time the client was added.
    fn start(&mut self, cx: &mut ClientCx<'_>);

    /// Something happened on one of this client's sockets.
    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent);

    /// The wake-up time set with [`ClientCx::set_wakeup`] has come.
    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>);

    /// `true` when the client has nothing more to do;
    /// [`crate::Simulation::run_until_finished`] stops when all are.
    fn is_finished(&self) -> bool;
}

impl<T: SimClient + ?Sized> SimClient for Box<T> {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        (**self).start(cx);
    }
    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        (**self).on_socket_event(cx, socket, event);
    }
    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        (**self).on_wakeup(cx);
    }
    fn is_finished(&self) -> bool {
        (**self).is_finished()
    }
}

/// Per-client simulator state (everything but the model itself).
#[derive(Debug)]
pub(crate) struct ClientState {
    pub(crate) rng: Rng,
    pub(crate) stack: TcpStack,
    pub(crate) wake_at: Option<Instant>,
    pub(crate) wake_generation: u64,
}

/// What a client can do during a callback.
#[derive(Debug)]
pub struct ClientCx<'a> {
    pub(crate) id: ClientId,
    pub(crate) net: &'a mut Network,
    pub(crate) state: &'a mut ClientState,
}

impl ClientCx<'_> {
    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.net.now
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// Starts a TCP connection to `remote` with this client's stack; the
    /// first SYN leaves now. Answered later by `Connected` or `ConnectFailed`.
    pub fn connect(&mut self, remote: SocketAddr) -> SocketId {
        let stack = self.state.stack.clone();
        self.net.connect(self.id, remote, &stack)
    }

    /// Queues bytes for sending (allowed while still connecting).
    pub fn send(&mut self, socket: SocketId, data: &[u8]) -> Result<(), SocketError> {
        self.net.send(self.id, socket, data)
    }

    /// Closes the socket gracefully (FIN after queued bytes; a connection
    /// still in its handshake is abandoned). The client receives no further
    /// events for it.
    pub fn close(&mut self, socket: SocketId) -> Result<(), SocketError> {
        self.net.close(self.id, socket)
    }

    /// Resets the connection (RST). No further events for it.
    pub fn abort(&mut self, socket: SocketId) -> Result<(), SocketError> {
        self.net.abort(self.id, socket)
    }

    /// Sets (replacing any earlier one) or clears the time of the next
    /// [`SimClient::on_wakeup`]. A time in the past means "now".
    pub fn set_wakeup(&mut self, at: Option<Instant>) {
        let at = at.map(|t| t.max(self.net.now));
        if at == self.state.wake_at {
            return;
        }
        self.state.wake_at = at;
        self.state.wake_generation += 1;
        if let Some(t) = at {
            if t != Instant::MAX {
                let generation = self.state.wake_generation;
                self.net.queue.push(
                    t,
                    NetEvent::ClientWake {
                        client: self.id,
                        generation,
                    },
                );
            }
        }
    }

    /// Whether the middlebox ([`crate::middlebox`]) would pass a packet of
    /// `socket`'s flow now: `Some(false)` once it has forgotten the flow
    /// (`None`: no middlebox, or not this client's socket).
    pub fn binding_alive(&self, socket: SocketId) -> Option<bool> {
        self.net.binding_alive(self.id, socket)
    }

    /// The pending wake-up time.
    pub fn wakeup(&self) -> Option<Instant> {
        self.state.wake_at
    }

    /// This client's random stream (derived from the root seed and its id).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.state.rng
    }

    /// Writes a note into the trace (hashed like every other event).
    pub fn note(&mut self, label: &'static str, value: u64) {
        let now = self.net.now;
        self.net.trace.note(now, self.id, label, value);
    }
}
