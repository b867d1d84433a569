//! What the driver hands back: a task's end, a push, a debug snapshot.

use std::net::SocketAddr;

use bytes::Bytes;
use stn_proto::LinkStatus;
use stn_proto::Response;
use stn_proto::TaskId;

use crate::error::Error;

/// How a task ended, with what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The engine's id for the task (`None` if it was refused before getting one).
    pub id: Option<TaskId>,
    /// The response, or why there is none.
    pub outcome: Result<Response, Error>,
    /// Attempts the task made (0 if it never started one).
    pub attempts: u32,
}

/// A server push received on the long link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Bytes,
    /// The named long link it came on; `None` for the main link.
    pub link: Option<stn_proto::LinkName>,
}

/// What one endpoint looks like to the engine's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointState {
    /// The endpoint.
    pub addr: SocketAddr,
    /// Whether it is banned now.
    pub banned: bool,
}

/// A debug snapshot of the driver and its engine.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Tasks the engine holds (queued, running or parked).
    pub engine_tasks: usize,
    /// `send` calls waiting for their task to end.
    pub waiting: usize,
    /// Connections the engine considers open.
    pub engine_connections: usize,
    /// Connections the driver has a handle for.
    pub driver_connections: usize,
    /// Short-link attempts running.
    pub short_in_flight: usize,
    /// Tasks awaiting a response on the long link.
    pub long_in_flight: usize,
    /// The long link's last reported status.
    pub long_link: Option<LinkStatus>,
    /// Every endpoint the driver has connected to, with its ban state.
    pub endpoints: Vec<EndpointState>,
    /// Pushes dropped because a subscriber did not keep up (its stream was
    /// full in entries or bytes).
    pub pushes_dropped: u64,
    /// Received bytes the engine may still hold (partial responses and
    /// frames), as the driver's [read budget](crate::Builder::read_budget)
    /// counts them.
    pub held_bytes: usize,
    /// The most [`held_bytes`](Self::held_bytes) ever was.
    pub peak_held_bytes: usize,
    /// The read budget: `held_bytes` never exceeds it.
    pub read_budget: usize,
    /// Bytes queued for sockets and not yet written.
    pub unsent_bytes: usize,
    /// Bytes of push bodies waiting in [`Pushes`](crate::Pushes) streams.
    pub push_bytes: usize,
    /// TLS handshakes so far (all zero without [TLS](crate::Builder::tls)).
    pub tls: crate::tls::TlsStats,
}
