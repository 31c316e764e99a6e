//! [`WatchConfig`]: the watch family's configuration.

use serde::{Deserialize, Serialize};
use turnkit_core::{ConfigError, PluginConfig};

/// The plugin name, used as the prefix of configuration errors.
pub const PLUGIN_NAME: &str = "tool-watch";

/// Configuration of the watch family. Every key is optional; unknown keys are rejected.
///
/// JSON keys (camelCase): `defaultMaxEvents`, `maxEventsCap`, `defaultCoalesceMs`,
/// `maxExpiresMs`, `lineMaxChars`, `wakeMaxBytes`, `pollMs`, `maxWatchesPerOwner`, `maxFiles`,
/// `minCheckIntervalMs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct WatchConfig {
    /// How many events (matching lines) a watch sees before it ends, when the call gives no
    /// `max_events`. 1 ..= `maxEventsCap`; default 100.
    pub default_max_events: u64,
    /// The largest `max_events` a call may ask for. ≥ 1; default 10000.
    pub max_events_cap: u64,
    /// The coalescing window in milliseconds of the host clock when the call gives no
    /// `coalesce_ms`: events within it of the first unsent one become one wake. ≥ 0
    /// (0: every read of the watched output that matched is its own wake); default 500.
    pub default_coalesce_ms: u64,
    /// The longest `expires_in_ms` a call may ask for, and the expiry of a watch whose
    /// call gives none, in milliseconds of the host clock. ≥ 1; default 86400000 (a day).
    pub max_expires_ms: u64,
    /// Each line shown in a wake is cut to this many characters (`…` marks the cut).
    /// ≥ 16; default 400.
    pub line_max_chars: u64,
    /// The quoted lines of one wake stop at this many UTF-8 bytes; the lines left out are
    /// counted as `[N more events suppressed]`. ≥ 256; default 4096.
    pub wake_max_bytes: u64,
    /// How often an output watch reads the watched job's new output, in real
    /// milliseconds. 1 ..= 1000; default 10.
    pub poll_ms: u64,
    /// Watches one owner may have running at once. ≥ 1; default 64.
    pub max_watches_per_owner: u64,
    /// The most files one path watch records and watches (a folder's first ones in path
    /// order; the rest are not watched). ≥ 1; default 10000.
    pub max_files: u64,
    /// The shortest `interval_ms` of a check watch, in ms of the host clock. ≥ 1; default
    /// 1000.
    pub min_check_interval_ms: u64,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self {
            default_max_events: 100,
            max_events_cap: 10_000,
            default_coalesce_ms: 500,
            max_expires_ms: 86_400_000,
            line_max_chars: 400,
            wake_max_bytes: 4096,
            poll_ms: 10,
            max_watches_per_owner: 64,
            max_files: 10_000,
            min_check_interval_ms: 1000,
        }
    }
}

impl PluginConfig for WatchConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    fn validate(&self) -> Result<(), ConfigError> {
        let checks: [(bool, &str); 10] = [
            (
                self.max_events_cap >= 1,
                "$.maxEventsCap must be at least 1",
            ),
            (
                (1..=self.max_events_cap).contains(&self.default_max_events),
                "$.defaultMaxEvents must be between 1 and $.maxEventsCap",
            ),
            (
                self.max_expires_ms >= 1,
                "$.maxExpiresMs must be at least 1",
            ),
            (
                self.line_max_chars >= 16,
                "$.lineMaxChars must be at least 16",
            ),
            (
                self.wake_max_bytes >= 256,
                "$.wakeMaxBytes must be at least 256",
            ),
            (
                (1..=1000).contains(&self.poll_ms),
                "$.pollMs must be between 1 and 1000",
            ),
            (
                self.max_watches_per_owner >= 1,
                "$.maxWatchesPerOwner must be at least 1",
            ),
            (self.max_files >= 1, "$.maxFiles must be at least 1"),
            (
                self.min_check_interval_ms >= 1,
                "$.minCheckIntervalMs must be at least 1",
            ),
            (
                self.default_coalesce_ms <= self.max_expires_ms,
                "$.defaultCoalesceMs must not exceed $.maxExpiresMs",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, message)) => Err(Self::invalid(message)),
            None => Ok(()),
        }
    }
}

impl WatchConfig {
    /// Decodes and validates the family's JSON object.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] `tool-watch: <why>` (an unknown key, a wrong type, a value out
    /// of its range as listed on each field).
    pub fn from_json(
        value: impl std::borrow::Borrow<serde_json::Value>,
    ) -> Result<Self, ConfigError> {
        <Self as PluginConfig>::decode(value)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::WatchConfig;

    #[test]
    fn defaults_decode_and_out_of_range_values_are_refused() {
        assert_eq!(
            WatchConfig::from_json(json!({})).unwrap(),
            WatchConfig::default()
        );
        assert_eq!(
            WatchConfig::from_json(json!({"defaultMaxEvents": 0}))
                .unwrap_err()
                .to_string(),
            "tool-watch: $.defaultMaxEvents must be between 1 and $.maxEventsCap"
        );
        assert_eq!(
            WatchConfig::from_json(json!({"pollMs": 5000}))
                .unwrap_err()
                .to_string(),
            "tool-watch: $.pollMs must be between 1 and 1000"
        );
        assert!(
            WatchConfig::from_json(json!({"nope": 1}))
                .unwrap_err()
                .to_string()
                .starts_with("tool-watch: unknown field `nope`")
        );
    }
}
