//! [`TodoConfig`]: the plugin configuration (todo-jobs §2.1).

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_core::{ConfigError, PluginConfig};

/// The plugin name, used as the prefix of configuration errors.
pub const PLUGIN_NAME: &str = "tool-todo";

const KEY: &str = "allowParallelInProgress";

/// Configuration of tool-todo. JSON: `{"allowParallelInProgress": <boolean>}`; the key is
/// required and has no default, and no other key is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct TodoConfig {
    /// Whether several items may be `in_progress` at once. Selects the tool description and
    /// the at-most-one check (todo-jobs §2.2, §2.3 step 2).
    pub allow_parallel_in_progress: bool,
}

impl TodoConfig {
    /// A configuration with the one choice the spec leaves to the host made explicitly
    /// (there is no default, todo-jobs §2.1).
    pub fn new(allow_parallel_in_progress: bool) -> Self {
        Self {
            allow_parallel_in_progress,
        }
    }

    /// Decodes the configuration from JSON with the spec's messages (todo-jobs §2.1),
    /// prefixed with the plugin name:
    ///
    /// - not an object → `tool-todo: $ expected object`
    /// - key missing → `tool-todo: $.allowParallelInProgress missing required value`
    /// - not a boolean → `tool-todo: $.allowParallelInProgress expected boolean`
    /// - any other key → `tool-todo: unknown field `…`, expected `allowParallelInProgress``
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with one of those messages.
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }

    /// The policy this configuration selects.
    pub fn policy(&self) -> InProgressPolicy {
        InProgressPolicy::from_allow_parallel(self.allow_parallel_in_progress)
    }
}

impl PluginConfig for TodoConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    /// The three refusals of [`TodoConfig::from_json`] whose text the spec fixes (todo-jobs
    /// §2.1); an unknown key is left to serde.
    fn precheck(value: &Value) -> Result<(), ConfigError> {
        let Some(object) = value.as_object() else {
            return Err(Self::invalid("$ expected object"));
        };
        match object.get(KEY) {
            None => Err(Self::invalid(
                "$.allowParallelInProgress missing required value",
            )),
            Some(Value::Bool(_)) => Ok(()),
            Some(_) => Err(Self::invalid("$.allowParallelInProgress expected boolean")),
        }
    }
}

/// How many items may be `in_progress` at once; from the config key
/// `allowParallelInProgress` (todo-jobs §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InProgressPolicy {
    /// `allowParallelInProgress: false`: at most one item may be `in_progress`.
    Single,
    /// `allowParallelInProgress: true`: any number may be.
    Parallel,
}

impl InProgressPolicy {
    /// The policy for a value of `allowParallelInProgress`.
    pub fn from_allow_parallel(allow_parallel_in_progress: bool) -> Self {
        if allow_parallel_in_progress {
            InProgressPolicy::Parallel
        } else {
            InProgressPolicy::Single
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
