//! A task body built for each attempt (Mars `Req2Buf`, which Mars calls
//! again before every attempt, so a retry after a re-login is signed under
//! the new session).

use core::fmt;
use std::sync::Arc;

use bytes::Bytes;

use super::{Channel, TaskId};

/// Which attempt a [`BodySource`] is asked to build the body for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BodyRequest {
    /// The task.
    pub task: TaskId,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The link the attempt goes on ([`Channel::Short`] or [`Channel::Long`]).
    pub channel: Channel,
}

/// Builds a task's body for each attempt ([`Task::body_source`](super::Task::body_source)).
/// The engine calls it once per attempt, just before the attempt's
/// anti-avalanche check and its first write; what it returns replaces
/// [`Task::body`](super::Task::body). It runs inside the engine, so it must
/// be quick and deterministic for the engine to stay so (the simulator's
/// rule); a source that panics takes the caller down (the stn-driver client
/// catches it and keeps the previous body).
///
/// ```
/// use stn_proto::{BodySource, Task};
///
/// let task = Task::new(8, "/cgi", "unused")
///     .body_source(BodySource::new(|req| format!("attempt {}", req.attempt).into()));
/// assert!(task.body_source.is_some());
/// ```
#[derive(Clone)]
pub struct BodySource(Arc<dyn Fn(&BodyRequest) -> Bytes + Send + Sync>);

impl BodySource {
    /// A source calling `build` for each attempt.
    pub fn new(build: impl Fn(&BodyRequest) -> Bytes + Send + Sync + 'static) -> Self {
        BodySource(Arc::new(build))
    }

    /// The body for `request`.
    pub fn body(&self, request: &BodyRequest) -> Bytes {
        (self.0)(request)
    }
}

impl fmt::Debug for BodySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BodySource(..)")
    }
}

/// The same source (one closure shared by clones).
impl PartialEq for BodySource {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(
            Arc::as_ptr(&self.0).cast::<()>(),
            Arc::as_ptr(&other.0).cast::<()>(),
        )
    }
}

impl Eq for BodySource {}
