//! [`SubagentConfig`]: the caps of the `agent` tool.

use std::borrow::Borrow;

use serde::Deserialize;
use serde_json::Value;
use turnkit_core::{ConfigError, PluginConfig};

/// The plugin name, the prefix of its configuration errors.
pub const PLUGIN_NAME: &str = "subagent";

/// Default of [`SubagentConfig::max_concurrent_per_agent`].
pub const DEFAULT_MAX_CONCURRENT_PER_AGENT: u32 = 4;

/// Default of [`SubagentConfig::max_spawns_per_session`].
pub const DEFAULT_MAX_SPAWNS_PER_SESSION: u32 = 32;

/// Default of [`SubagentConfig::max_depth`].
pub const DEFAULT_MAX_DEPTH: u32 = 1;

/// The configuration of the subagent plugin (JSON keys in camelCase, unknown keys rejected).
///
/// ```
/// use turnkit_subagent::SubagentConfig;
/// let config = SubagentConfig::from_json(&serde_json::json!({"maxConcurrentPerAgent": 2}))?;
/// assert_eq!(config.max_concurrent_per_agent, 2);
/// assert_eq!(config.max_spawns_per_session, 32);
/// # Ok::<(), turnkit_core::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct SubagentConfig {
    /// `maxConcurrentPerAgent`: how many children one calling agent may have running at once
    /// (at least 1; default 4). A child counts from its start until its job has settled.
    pub max_concurrent_per_agent: u32,
    /// `maxSpawnsPerSession`: how many children one calling session may start in the life of
    /// this plugin (at least 1; default 32). Refused starts do not count; the count is
    /// process-local (a restart starts it again).
    pub max_spawns_per_session: u32,
    /// `maxDepth`: how deep children may nest (at least 1; default 1: a root's children
    /// cannot start children of their own, as the spec's `agent` tool has it).
    pub max_depth: u32,
}

impl Default for SubagentConfig {
    fn default() -> Self {
        Self {
            max_concurrent_per_agent: DEFAULT_MAX_CONCURRENT_PER_AGENT,
            max_spawns_per_session: DEFAULT_MAX_SPAWNS_PER_SESSION,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl SubagentConfig {
    /// With `maxConcurrentPerAgent` set.
    #[must_use]
    pub fn with_max_concurrent_per_agent(mut self, max: u32) -> Self {
        self.max_concurrent_per_agent = max;
        self
    }

    /// With `maxSpawnsPerSession` set.
    #[must_use]
    pub fn with_max_spawns_per_session(mut self, max: u32) -> Self {
        self.max_spawns_per_session = max;
        self
    }

    /// With `maxDepth` set.
    #[must_use]
    pub fn with_max_depth(mut self, max: u32) -> Self {
        self.max_depth = max;
        self
    }

    /// Decodes and validates the configuration from JSON.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] prefixed `subagent: ` for a decode failure (unknown key,
    /// wrong type) or a failed [`SubagentConfig::validate`].
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }
}

impl PluginConfig for SubagentConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    /// Checks that every cap is at least 1.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`]: `subagent: maxConcurrentPerAgent (0) must be at least 1`,
    /// `subagent: maxSpawnsPerSession (0) must be at least 1`,
    /// `subagent: maxDepth (0) must be at least 1`.
    fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("maxConcurrentPerAgent", self.max_concurrent_per_agent),
            ("maxSpawnsPerSession", self.max_spawns_per_session),
            ("maxDepth", self.max_depth),
        ] {
            if value == 0 {
                return Err(Self::invalid(format_args!(
                    "{key} ({value}) must be at least 1"
                )));
            }
        }
        Ok(())
    }
}
