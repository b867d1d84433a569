//! The error a [`Client::send`](crate::Client::send) ends with.

use stn_proto::SubmitError;

/// Why a task did not get a response.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The task ran and failed: the engine's typed error (Mars error
    /// families: local, dial, socket, timeout, HTTP status, protocol, decode,
    /// rejected by a limit, cancelled).
    #[error(transparent)]
    Task(stn_proto::Error),
    /// The engine refused the task before it got an id (invalid task, no
    /// long link configured, queue full).
    #[error("task refused: {0}")]
    Refused(SubmitError),
    /// The client was shut down (or its driver is gone) before the task ended.
    #[error("the client is shut down")]
    Shutdown,
}

impl Error {
    /// The engine's error, if the task ran and failed.
    pub fn task_error(&self) -> Option<&stn_proto::Error> {
        match self {
            Error::Task(e) => Some(e),
            _ => None,
        }
    }
}

impl From<stn_proto::Error> for Error {
    fn from(e: stn_proto::Error) -> Self {
        match e {
            stn_proto::Error::Shutdown => Error::Shutdown,
            other => Error::Task(other),
        }
    }
}

impl From<SubmitError> for Error {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::ShutDown => Error::Shutdown,
            other => Error::Refused(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::{Error as ProtoError, TimeoutKind};

    #[test]
    fn shutdowns_fold_into_one_variant() {
        assert_eq!(Error::from(ProtoError::Shutdown), Error::Shutdown);
        assert_eq!(Error::from(SubmitError::ShutDown), Error::Shutdown);
        assert_eq!(
            Error::from(SubmitError::QueueFull),
            Error::Refused(SubmitError::QueueFull)
        );
        let t = Error::from(ProtoError::Timeout(TimeoutKind::FirstPacket));
        assert_eq!(
            t.task_error(),
            Some(&ProtoError::Timeout(TimeoutKind::FirstPacket))
        );
    }
}
