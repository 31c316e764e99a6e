//! [`TodoConfig`]: the plugin configuration (todo-jobs §2.1).

use harness_core::ConfigError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::InProgressPolicy;

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

    /// Decodes the configuration from JSON with the upstream messages (todo-jobs §2.1),
    /// prefixed with the plugin name:
    ///
    /// - not an object → `tool-todo: $ expected object`
    /// - key missing → `tool-todo: $.allowParallelInProgress missing required value`
    /// - not a boolean → `tool-todo: $.allowParallelInProgress expected boolean`
    /// - any other key → `tool-todo: unknown field `…`, expected `allowParallelInProgress``
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with one of those messages.
    pub fn from_json(value: &Value) -> Result<Self, ConfigError> {
        let invalid = |message: &str| ConfigError::Invalid(format!("{PLUGIN_NAME}: {message}"));
        let Some(object) = value.as_object() else {
            return Err(invalid("$ expected object"));
        };
        match object.get(KEY) {
            None => return Err(invalid("$.allowParallelInProgress missing required value")),
            Some(Value::Bool(_)) => {}
            Some(_) => return Err(invalid("$.allowParallelInProgress expected boolean")),
        }
        harness_core::decode_config(PLUGIN_NAME, value.clone())
    }

    /// The policy this configuration selects.
    pub fn policy(&self) -> InProgressPolicy {
        InProgressPolicy::from_allow_parallel(self.allow_parallel_in_progress)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
