//! [`ToolJobsConfig`]: the plugin configuration and its load-time checks (todo-jobs §5.1).

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_core::{ConfigError, MAX_SAFE_INTEGER, PluginConfig};

use crate::text::PLUGIN_NAME;

/// How completion notices reach an owner (todo-jobs §5.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompletionDelivery {
    /// An idle owner with wake budget left is woken with a followup turn; otherwise the
    /// notice is injected.
    #[default]
    Wakeup,
    /// Notices are always injected and never wake an owner.
    Quiet,
}

/// Configuration of tool-jobs, with the spec's key names (todo-jobs §5.1). Every key is
/// optional; absent keys take the defaults, so `{}` is a valid configuration.
///
/// | key | default | check |
/// |---|---|---|
/// | `waitTimeoutMs` | `30000` | a finite number ≥ 1 (fractions allowed) |
/// | `maxWaitTimeoutMs` | `600000` | a finite number ≥ 1, and ≥ `waitTimeoutMs` |
/// | `completionDelivery` | `"wakeup"` | `"wakeup"` or `"quiet"` |
/// | `maxConsecutiveWakes` | `3` | ≥ 1 and a safe integer |
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ToolJobsConfig {
    /// Wait used when `wait: true` is sent without `timeout_ms`, in milliseconds.
    pub wait_timeout_ms: f64,
    /// The cap on any wait, in milliseconds.
    pub max_wait_timeout_ms: f64,
    /// Wake idle owners (`wakeup`) or never (`quiet`).
    pub completion_delivery: CompletionDelivery,
    /// How many followup turns notices may open for one owner before a user message.
    pub max_consecutive_wakes: f64,
}

impl ToolJobsConfig {
    /// With `waitTimeoutMs` set (milliseconds).
    #[must_use]
    pub fn with_wait_timeout_ms(mut self, wait_timeout_ms: f64) -> Self {
        self.wait_timeout_ms = wait_timeout_ms;
        self
    }

    /// With `maxWaitTimeoutMs` set (milliseconds).
    #[must_use]
    pub fn with_max_wait_timeout_ms(mut self, max_wait_timeout_ms: f64) -> Self {
        self.max_wait_timeout_ms = max_wait_timeout_ms;
        self
    }

    /// With `completionDelivery` set.
    #[must_use]
    pub fn with_completion_delivery(mut self, completion_delivery: CompletionDelivery) -> Self {
        self.completion_delivery = completion_delivery;
        self
    }

    /// With `maxConsecutiveWakes` set.
    #[must_use]
    pub fn with_max_consecutive_wakes(mut self, max_consecutive_wakes: f64) -> Self {
        self.max_consecutive_wakes = max_consecutive_wakes;
        self
    }
}

impl Default for ToolJobsConfig {
    fn default() -> Self {
        Self {
            wait_timeout_ms: 30_000.0,
            max_wait_timeout_ms: 600_000.0,
            completion_delivery: CompletionDelivery::Wakeup,
            max_consecutive_wakes: 3.0,
        }
    }
}

/// Formats a number the way JavaScript prints it in the spec's messages: integers without
/// a decimal point, `Infinity`, `NaN`.
pub(crate) fn js_number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        format!("{value}")
    }
}

fn at_least_one(key: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value >= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "{PLUGIN_NAME}: {key} must be a finite number of at least 1, got {}",
            js_number(value)
        )))
    }
}

impl ToolJobsConfig {
    /// Decodes a configuration object (unknown keys are rejected) and validates it.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with `tool-jobs: <serde message>` or a message of
    /// [`ToolJobsConfig::validate`].
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }
}

impl PluginConfig for ToolJobsConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    /// The load-time checks of todo-jobs §5.1, in this order:
    /// 1. each of `waitTimeoutMs`, `maxWaitTimeoutMs`, `maxConsecutiveWakes` is a finite
    ///    number ≥ 1 (`tool-jobs: <key> must be a finite number of at least 1, got <n>`);
    /// 2. `tool-jobs: waitTimeoutMs (<default>) exceeds maxWaitTimeoutMs (<cap>)` (exact);
    /// 3. `tool-jobs: maxConsecutiveWakes (<value>) must be a whole number of turns` (exact)
    ///    unless it is a safe integer.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with the message of the first failed check.
    fn validate(&self) -> Result<(), ConfigError> {
        at_least_one("waitTimeoutMs", self.wait_timeout_ms)?;
        at_least_one("maxWaitTimeoutMs", self.max_wait_timeout_ms)?;
        if self.max_consecutive_wakes.is_nan() || self.max_consecutive_wakes < 1.0 {
            return Err(ConfigError::Invalid(format!(
                "{PLUGIN_NAME}: maxConsecutiveWakes must be a number of at least 1, got {}",
                js_number(self.max_consecutive_wakes)
            )));
        }
        if self.wait_timeout_ms > self.max_wait_timeout_ms {
            return Err(ConfigError::Invalid(format!(
                "{PLUGIN_NAME}: waitTimeoutMs ({}) exceeds maxWaitTimeoutMs ({})",
                js_number(self.wait_timeout_ms),
                js_number(self.max_wait_timeout_ms)
            )));
        }
        if self.wakes_budget().is_none() {
            return Err(ConfigError::Invalid(format!(
                "{PLUGIN_NAME}: maxConsecutiveWakes ({}) must be a whole number of turns",
                js_number(self.max_consecutive_wakes)
            )));
        }
        Ok(())
    }
}

impl ToolJobsConfig {
    /// `maxConsecutiveWakes` as a count, when it is a safe integer ≥ 1.
    pub(crate) fn wakes_budget(&self) -> Option<u64> {
        let value = self.max_consecutive_wakes;
        if value.fract() != 0.0 || !(1.0..=MAX_SAFE_INTEGER as f64).contains(&value) {
            return None;
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "value is integral and within 1..=2^53-1, so the cast is exact"
        )]
        Some(value as u64)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
