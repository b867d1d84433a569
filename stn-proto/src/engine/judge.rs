//! Which running tasks a batch verdict ([`Verdict::SessionTimeout`],
//! [`Verdict::RetryAll`]) redoes.
//!
//! [`Verdict::SessionTimeout`]: super::Verdict::SessionTimeout
//! [`Verdict::RetryAll`]: super::Verdict::RetryAll

use crate::task::{Channel, Task};

/// Which running tasks a batch verdict redoes.
pub(super) enum Scope {
    /// Every one (Mars `kTaskFailHandleRetryAllTasks`).
    All,
    /// A session timeout (Mars `kTaskFailHandleSessionTimeout`): the
    /// need-auth tasks; on the long link only those of the same user
    /// (Mars's `LongLinkTaskManager::RetryTasks` takes the user id; its
    /// short-link manager ignores it).
    NeedAuth { user: Option<String> },
}

impl Scope {
    pub(super) fn covers(&self, task: &Task, channel: Channel) -> bool {
        match self {
            Scope::All => true,
            Scope::NeedAuth { user } => {
                task.need_authed && (channel != Channel::Long || task.user_id == *user)
            }
        }
    }
}
