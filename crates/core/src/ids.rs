//! Identifier newtypes: [`SessionId`], [`AgentId`] and [`ScopeKey`].

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string as this identifier. Any string is accepted; stores that use the
            /// id as a file name validate it themselves.
            pub fn new(value: impl Into<Arc<str>>) -> Self {
                Self(value.into())
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }
    };
}

id_type!(
    /// The identity of one session (one event log).
    SessionId
);
id_type!(
    /// The identity of a live agent. As upstream does, an agent's id equals its session's id
    /// (todo-jobs §1.1); job access is authorized by comparing these ids.
    AgentId
);
id_type!(
    /// A routing scope (todo-jobs §1.3, decision 1). An agent reports a chain of scope keys:
    /// its own key first, then its ancestors (for example a preset's key).
    ScopeKey
);

impl From<&SessionId> for AgentId {
    fn from(value: &SessionId) -> Self {
        AgentId(value.0.clone())
    }
}

impl From<&AgentId> for SessionId {
    fn from(value: &AgentId) -> Self {
        SessionId(value.0.clone())
    }
}

impl From<&AgentId> for ScopeKey {
    fn from(value: &AgentId) -> Self {
        ScopeKey(value.0.clone())
    }
}
