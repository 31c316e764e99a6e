//! Identifier newtypes: [`SessionId`], [`AgentId`] and [`ScopeKey`].

/// Defines a cheap-to-clone string newtype: `new`, `as_str`, `Display`,
/// `Debug` (`Name("value")`), `From` of `&str`, `String`, `&String`, `Box<str>`, `Arc<str>`
/// and `Cow<str>`, `AsRef<str>`, `Borrow<str>`,
/// comparisons with `str`, and serde as a plain JSON string. Used for the ids of every crate
/// (`SessionId` here, `JobId` in turnkit-jobs) so they behave alike.
///
/// The value is a small-string-optimised `SmolStr`: up to 23 UTF-8 bytes are stored inline
/// (no allocation, no pointer to chase — every generated job id like `bash-12` fits), longer
/// values share one `Arc<str>`. Cloning is O(1) either way; the inline form keeps starting
/// a job free of id allocations.
///
/// ```
/// turnkit_core::string_newtype!(
///     /// A widget name.
///     WidgetName
/// );
/// let name = WidgetName::from("w-1");
/// assert_eq!(name, "w-1");
/// assert_eq!(serde_json::to_string(&name).unwrap(), "\"w-1\"");
/// let text = String::from("a widget name longer than twenty-three bytes");
/// assert_eq!(WidgetName::from(&text), WidgetName::from(std::sync::Arc::<str>::from(&*text)));
/// assert_eq!(WidgetName::new(&text).as_str(), text);
/// ```
#[macro_export]
macro_rules! string_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name($crate::__private::SmolStr);

        impl $name {
            /// Wraps a string. Any string is accepted; whoever uses the value as a file name
            /// or key validates it where the spec says so.
            pub fn new(value: impl ::std::convert::AsRef<str>) -> Self {
                Self($crate::__private::SmolStr::new(value))
            }

            /// The value as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0.as_str())
            }
        }

        impl ::std::convert::From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::From<&String> for $name {
            fn from(value: &String) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::From<::std::boxed::Box<str>> for $name {
            fn from(value: ::std::boxed::Box<str>) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::From<::std::sync::Arc<str>> for $name {
            fn from(value: ::std::sync::Arc<str>) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::From<::std::borrow::Cow<'_, str>> for $name {
            fn from(value: ::std::borrow::Cow<'_, str>) -> Self {
                Self::new(value)
            }
        }

        impl ::std::convert::AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl ::std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl ::std::cmp::PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0.as_str() == other
            }
        }

        impl ::std::cmp::PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0.as_str() == *other
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error>
            where
                S: $crate::__private::serde::Serializer,
            {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D>(deserializer: D) -> ::std::result::Result<Self, D::Error>
            where
                D: $crate::__private::serde::Deserializer<'de>,
            {
                let value =
                    <String as $crate::__private::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::new(value))
            }
        }
    };
}

string_newtype!(
    /// The identity of one session (one event log).
    SessionId
);
string_newtype!(
    /// The identity of a live agent. As the spec's host contract has it, an agent's id equals its session's id
    /// (todo-jobs §1.1); job access is authorized by comparing these ids.
    AgentId
);
string_newtype!(
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
