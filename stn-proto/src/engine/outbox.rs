//! What the engine says, in order, and the live connections that filter
//! it: nothing is ever said about a connection that is closed, and nothing
//! connects after shutdown.

use std::collections::VecDeque;

use crate::io::{ConnId, IoAction};

use super::conns::{ConnTable, Owner};
use super::types::{Event, LinkStatus, Output, Report};

/// The engine's outputs, waiting for [`Engine::poll_output`](super::Engine::poll_output),
/// and who owns each live connection.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    outputs: VecDeque<Output>,
    conns: ConnTable,
    /// Shutting down: no new connection.
    shut: bool,
}

impl Outbox {
    /// The next output.
    pub(super) fn pop(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    pub(super) fn event(&mut self, event: Event) {
        self.outputs.push_back(Output::Event(event));
    }

    pub(super) fn report(&mut self, report: Report) {
        self.event(Event::Report(Box::new(report)));
    }

    pub(super) fn link(&mut self, status: LinkStatus) {
        self.event(Event::LongLink(status));
    }

    /// Asks the app to resolve `host`.
    pub(super) fn resolve(&mut self, host: &str) {
        self.outputs.push_back(Output::Resolve {
            host: host.to_owned(),
        });
    }

    /// Forwards a part's socket operation, keeping the table of live
    /// connections: a connect records `owner`; a send or close passes only
    /// for a connection `owner` still owns.
    pub(super) fn io(&mut self, owner: Owner, io: IoAction) {
        match io {
            IoAction::Connect { conn, addr } => {
                if self.shut {
                    return;
                }
                self.conns.insert(conn, owner);
                self.outputs
                    .push_back(Output::Io(IoAction::Connect { conn, addr }));
            }
            IoAction::Send { conn, data } => {
                if self.conns.owner(conn) == Some(owner) {
                    self.outputs
                        .push_back(Output::Io(IoAction::Send { conn, data }));
                }
            }
            IoAction::Close { conn } => {
                if self.conns.owner(conn) == Some(owner) {
                    self.conns.remove(conn);
                    self.outputs.push_back(Output::Io(IoAction::Close { conn }));
                }
            }
        }
    }

    /// Closes `conn` if `owner` owns it.
    pub(super) fn close(&mut self, owner: Owner, conn: ConnId) {
        self.io(owner, IoAction::Close { conn });
    }

    /// Who owns `conn`, if it is live.
    pub(super) fn owner(&self, conn: ConnId) -> Option<Owner> {
        self.conns.owner(conn)
    }

    /// Whether `conn` is live.
    #[cfg(test)]
    pub(super) fn owns(&self, conn: ConnId) -> bool {
        self.conns.owner(conn).is_some()
    }

    /// Hands a live `conn` over to `owner` (or records it).
    pub(super) fn hand_over(&mut self, conn: ConnId, owner: Owner) {
        self.conns.insert(conn, owner);
    }

    /// `conn` ended by its own event (failed connect, close): no close is
    /// owed for it.
    pub(super) fn ended(&mut self, conn: ConnId) {
        self.conns.remove(conn);
    }

    /// Connections open (asked for, not yet closed).
    pub(super) fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Nothing connects from here on (shutdown).
    pub(super) fn refuse_connects(&mut self) {
        self.shut = true;
    }

    /// Closes every live connection (shutdown).
    pub(super) fn close_all(&mut self) {
        for conn in self.conns.drain() {
            self.outputs.push_back(Output::Io(IoAction::Close { conn }));
        }
    }
}
