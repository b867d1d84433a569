//! Who is authenticated (Mars `MakesureAuthed(host, user_id)`): the app's
//! answer for each (host, user id) a need-auth task goes to.
//!
//! Mars asks the app before every need-auth attempt; stn keeps the app's
//! answers instead, so a waiting task costs nothing until they change. The
//! state is one default for every host and user ([`Engine::set_authed`],
//! the simple form) plus exceptions per (host, user id)
//! ([`Engine::set_host_authed`], and a session timeout, which revokes the
//! key of the task that reported it).
//!
//! [`Engine::set_authed`]: super::Engine::set_authed
//! [`Engine::set_host_authed`]: super::Engine::set_host_authed

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::task::Task;

use super::config::Config;

/// Most (host, user id) exceptions kept. The app names them, so this only
/// guards against a runaway caller: past it a new exception is refused and a
/// session timeout falls back to de-authenticating everything (the safe
/// side: tasks wait for the app).
pub(super) const MAX_AUTH_EXCEPTIONS: usize = 1024;

/// What a need-auth task waits for: its host and its user id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct AuthKey {
    /// The host name of the link the task goes to ("" with fixed IPs only).
    pub(super) host: String,
    /// The task's [`Task::user_id`](crate::task::Task::user_id).
    pub(super) user: Option<String>,
}

impl AuthKey {
    /// What a need-auth `task` waits for under `config`, if it can only
    /// use the long link (`long_only`) or not (see
    /// [`Engine::set_host_authed`](super::Engine::set_host_authed)).
    pub(super) fn of(task: &Task, long_only: bool, config: &Config) -> AuthKey {
        let host = match (long_only, &task.host) {
            (true, _) => config
                .long_link
                .as_ref()
                .and_then(|l| l.hosts.first().cloned()),
            (_, Some(h)) => Some(h.clone()),
            _ => {
                let ep = &config.short_link;
                ep.hosts
                    .first()
                    .or(ep.host_ports.first().map(|(h, _)| h))
                    .cloned()
            }
        };
        AuthKey {
            host: host.unwrap_or_default(),
            user: task.user_id.clone(),
        }
    }
}

/// The app's auth answers.
#[derive(Clone, Debug, Default)]
pub(super) struct Auth {
    /// The answer for every key without an exception.
    all: bool,
    /// Keys whose answer differs from `all`.
    exceptions: BTreeMap<Arc<AuthKey>, bool>,
}

impl Auth {
    /// Every host and user authed or not; forgets the exceptions.
    pub(super) fn set_all(&mut self, authed: bool) {
        self.all = authed;
        self.exceptions.clear();
    }

    /// One key's answer. Returns `false` (and changes nothing) if the
    /// exception table is full.
    pub(super) fn set(&mut self, key: AuthKey, authed: bool) -> bool {
        if authed == self.all {
            self.exceptions.remove(&key);
            return true;
        }
        if self.exceptions.len() >= MAX_AUTH_EXCEPTIONS && !self.exceptions.contains_key(&key) {
            return false;
        }
        self.exceptions.insert(Arc::new(key), authed);
        true
    }

    /// A session timeout on `key`: that key waits for the app again.
    pub(super) fn revoke(&mut self, key: AuthKey) {
        if !self.set(key, false) {
            self.set_all(false);
        }
    }

    /// Whether tasks waiting for `key` may go.
    pub(super) fn is_authed(&self, key: &AuthKey) -> bool {
        self.exceptions.get(key).copied().unwrap_or(self.all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(host: &str, user: Option<&str>) -> AuthKey {
        AuthKey {
            host: host.into(),
            user: user.map(Into::into),
        }
    }

    #[test]
    fn exceptions_override_the_default_and_set_all_forgets_them() {
        let mut a = Auth::default();
        assert!(!a.is_authed(&key("a", None)));
        assert!(a.set(key("a", Some("u1")), true));
        assert!(a.is_authed(&key("a", Some("u1"))));
        assert!(!a.is_authed(&key("a", Some("u2"))));
        assert!(!a.is_authed(&key("a", None)));
        a.set_all(true);
        assert!(a.is_authed(&key("b", Some("u2"))));
        a.revoke(key("b", Some("u2")));
        assert!(!a.is_authed(&key("b", Some("u2"))));
        assert!(a.is_authed(&key("b", None)));
        assert!(a.is_authed(&key("a", Some("u2"))));
        // An answer equal to the default is not an exception.
        assert!(a.set(key("b", Some("u2")), true));
        assert!(a.exceptions.is_empty());
    }

    #[test]
    fn a_full_table_refuses_new_keys_and_a_revoke_then_deauths_all() {
        let mut a = Auth::default();
        for i in 0..MAX_AUTH_EXCEPTIONS {
            assert!(a.set(key(&format!("h{i}"), None), true));
        }
        assert!(!a.set(key("new", None), true));
        assert!(!a.is_authed(&key("new", None)));
        // An existing key may still change.
        assert!(a.set(key("h0", None), false));
        a.set_all(true);
        for i in 0..MAX_AUTH_EXCEPTIONS {
            a.revoke(key(&format!("h{i}"), None));
        }
        assert!(a.is_authed(&key("other", None)));
        a.revoke(key("one more", None));
        assert!(!a.is_authed(&key("other", None)));
    }
}
