//! Ban history through the client: export it for storage and import it at
//! the next start (the engine's persist format,
//! [`EndpointHistory::export`](stn_proto::EndpointHistory::export)).

use std::time::{SystemTime, UNIX_EPOCH};

use stn_proto::ImportError;

/// Why [`Client::import_ban_history`](crate::Client::import_ban_history) failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The bytes are not a history the engine wrote (nothing was imported).
    #[error("ban history not imported: {0}")]
    Import(#[source] ImportError),
    /// The client is shut down.
    #[error("ban history not imported: the client is shut down")]
    Shutdown,
}

/// Seconds since the Unix epoch: the wall clock the saved entries' ages are
/// stored against. A clock before 1970 reads as 0 (entries then look fresh
/// or are skipped as stamped in the future, never mis-parsed).
pub(crate) fn wall_clock_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
