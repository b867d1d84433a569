//! Per-attempt bodies (Mars `Req2Buf`): a task with a
//! [`BodySource`](crate::task::BodySource) gets its body built once for
//! each attempt, before the attempt's limit check and first write.

use crate::task::{BodyRequest, Channel, TaskId};

use super::Engine;

impl Engine {
    /// Builds the body of the next attempt of `id` on `channel`, if its task
    /// has a source and the body was not built for that attempt yet (an
    /// attempt that had to wait, e.g. for the long link's room, is not
    /// asked twice).
    pub(super) fn build_attempt_body(&mut self, id: TaskId, channel: Channel) {
        let Some(e) = self.tasks.get_mut(&id) else {
            return;
        };
        let attempt = e.attempts + 1;
        if e.body_attempt == attempt {
            return;
        }
        let Some(source) = e.task.body_source.clone() else {
            return;
        };
        e.task.body = source.body(&BodyRequest {
            task: id,
            attempt,
            channel,
        });
        e.body_attempt = attempt;
    }
}
