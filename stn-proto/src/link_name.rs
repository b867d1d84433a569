//! The name of a long link besides the main one: what a [`Task`](crate::Task)
//! names to run there (Mars's `channel_id`, as a checked name instead of a
//! bare string).

use std::fmt;
use std::sync::Arc;

/// Longest link name accepted, in bytes.
pub const MAX_LINK_NAME_LEN: usize = 64;

/// The name of a named long link ([`Engine::add_link`](crate::Engine::add_link)).
/// Cheap to clone. A task without one runs on the main long link (or the
/// short link).
///
/// ```
/// use stn_proto::LinkName;
/// let push = LinkName::new("push").unwrap();
/// assert_eq!(push.as_str(), "push");
/// assert!(LinkName::new("").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkName(Arc<str>);

/// Why a string is not a [`LinkName`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkNameError {
    /// The name is empty.
    #[error("a link name cannot be empty")]
    Empty,
    /// The name is longer than [`MAX_LINK_NAME_LEN`] bytes.
    #[error("a link name of {0} bytes, longer than {MAX_LINK_NAME_LEN}")]
    TooLong(usize),
    /// The name holds a control character (it is printed in errors and logs).
    #[error("a link name cannot hold control characters")]
    Control,
}

impl LinkName {
    /// A checked name: 1 to [`MAX_LINK_NAME_LEN`] bytes, no control characters.
    ///
    /// # Errors
    ///
    /// [`LinkNameError`] when the name breaks one of those rules.
    pub fn new(name: impl AsRef<str>) -> Result<Self, LinkNameError> {
        let name = name.as_ref();
        if name.is_empty() {
            return Err(LinkNameError::Empty);
        }
        if name.len() > MAX_LINK_NAME_LEN {
            return Err(LinkNameError::TooLong(name.len()));
        }
        if name.chars().any(char::is_control) {
            return Err(LinkNameError::Control);
        }
        Ok(LinkName(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LinkName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LinkName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl TryFrom<&str> for LinkName {
    type Error = LinkNameError;

    fn try_from(name: &str) -> Result<Self, Self::Error> {
        LinkName::new(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(LinkName::new("a").unwrap().to_string(), "a");
        assert_eq!(LinkName::new(""), Err(LinkNameError::Empty));
        let long = "x".repeat(MAX_LINK_NAME_LEN + 1);
        assert_eq!(
            LinkName::new(&long),
            Err(LinkNameError::TooLong(MAX_LINK_NAME_LEN + 1))
        );
        assert!(LinkName::new("x".repeat(MAX_LINK_NAME_LEN)).is_ok());
        assert_eq!(LinkName::new("a\nb"), Err(LinkNameError::Control));
    }
}
