//! Configuration (todo-jobs §4.1, decision 8): [`JobsConfig`] as written by users and the
//! validated [`JobLimits`].

use std::borrow::Borrow;

use serde::Deserialize;
use serde_json::Value;
use turnkit_core::{ConfigError, MAX_SAFE_INTEGER, PluginConfig};

/// The default `maxConcurrentJobsPerOwner`.
pub const DEFAULT_MAX_CONCURRENT_JOBS_PER_OWNER: u64 = 10;

/// The default `outputHistoryBytes`: 1 MiB per job (decision 8).
pub const DEFAULT_OUTPUT_HISTORY_BYTES: u64 = 1024 * 1024;

/// The registry's configuration with the spec's key names. Unknown keys are rejected.
///
/// ```
/// use turnkit_jobs_local::JobsConfig;
/// let config = JobsConfig::from_json(serde_json::json!({"maxConcurrentJobsPerOwner": 2})).unwrap();
/// let limits = config.limits().unwrap();
/// assert_eq!(limits.max_concurrent_jobs_per_owner, 2);
/// assert_eq!(limits.output_history_bytes, 1024 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct JobsConfig {
    /// The admission cap per exact owner instance (unowned jobs share one bucket): an integer
    /// from 1 to 2^53−1, default 10. A JSON number; kept as `f64` so that every out-of-range
    /// value (0, -1, 1.5, 2^53, and NaN or ±∞ given from Rust) is reported rather than
    /// silently converted.
    #[serde(default = "default_max")]
    pub max_concurrent_jobs_per_owner: f64,
    /// The byte budget of each job's `read_at` history (decision 8): an integer from 0 to
    /// 2^53−1, default 1 MiB. `0` keeps no history.
    #[serde(default = "default_history")]
    pub output_history_bytes: f64,
    /// The job journal (default `false`): when on, every owned job's start and settlement
    /// are events in its owner's session log (`job/start`, `job/settle`, see
    /// `docs/event-log.md`), and ids issued after a restart continue after the highest one the
    /// log has seen. Off, jobs are forgotten by a restart, as todo-jobs §4 describes.
    #[serde(default)]
    pub journal: bool,
}

fn default_max() -> f64 {
    DEFAULT_MAX_CONCURRENT_JOBS_PER_OWNER as f64
}

fn default_history() -> f64 {
    DEFAULT_OUTPUT_HISTORY_BYTES as f64
}

impl JobsConfig {
    /// With `maxConcurrentJobsPerOwner` set (checked by [`JobsConfig::validate`]).
    #[must_use]
    pub fn with_max_concurrent_jobs_per_owner(mut self, max: f64) -> Self {
        self.max_concurrent_jobs_per_owner = max;
        self
    }

    /// With `outputHistoryBytes` set (checked by [`JobsConfig::validate`]).
    #[must_use]
    pub fn with_output_history_bytes(mut self, bytes: f64) -> Self {
        self.output_history_bytes = bytes;
        self
    }

    /// With `journal` set.
    #[must_use]
    pub fn with_journal(mut self, journal: bool) -> Self {
        self.journal = journal;
        self
    }
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            max_concurrent_jobs_per_owner: default_max(),
            output_history_bytes: default_history(),
            journal: false,
        }
    }
}

/// A validated [`JobsConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobLimits {
    /// The admission cap per owner bucket (≥ 1).
    pub max_concurrent_jobs_per_owner: u64,
    /// The per-job history budget in bytes.
    pub output_history_bytes: usize,
    /// Whether owned jobs are journaled in their owner's session log (see
    /// [`JobsConfig::journal`]).
    pub journal: bool,
}

impl JobLimits {
    /// With the admission cap per owner bucket set (≥ 1, as the field says).
    #[must_use]
    pub fn with_max_concurrent_jobs_per_owner(mut self, max: u64) -> Self {
        self.max_concurrent_jobs_per_owner = max;
        self
    }

    /// With the per-job history budget set, in bytes.
    #[must_use]
    pub fn with_output_history_bytes(mut self, bytes: usize) -> Self {
        self.output_history_bytes = bytes;
        self
    }

    /// With the job journal on or off.
    #[must_use]
    pub fn with_journal(mut self, journal: bool) -> Self {
        self.journal = journal;
        self
    }
}

impl Default for JobLimits {
    fn default() -> Self {
        Self {
            max_concurrent_jobs_per_owner: DEFAULT_MAX_CONCURRENT_JOBS_PER_OWNER,
            output_history_bytes: 1024 * 1024,
            journal: false,
        }
    }
}

impl JobsConfig {
    /// Decodes and validates the configuration from JSON ([`PluginConfig::decode`]).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] `jobs-local: <serde message>` for a decode failure (unknown
    /// key, wrong type), or a refusal of [`JobsConfig::limits`].
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }

    /// Validates the configuration (todo-jobs §4.1) into the limits it sets.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with
    /// `jobs-local: maxConcurrentJobsPerOwner must be an integer from 1 to 9007199254740991, got <value>`
    /// (values as JSON; NaN and ±∞ as `null`), or the same shape for `outputHistoryBytes`
    /// (from 0).
    pub fn limits(&self) -> Result<JobLimits, ConfigError> {
        let max = whole(self.max_concurrent_jobs_per_owner, 1).ok_or_else(|| {
            invalid(
                "maxConcurrentJobsPerOwner",
                1,
                self.max_concurrent_jobs_per_owner,
            )
        })?;
        let history = whole(self.output_history_bytes, 0)
            .ok_or_else(|| invalid("outputHistoryBytes", 0, self.output_history_bytes))?;
        Ok(JobLimits {
            max_concurrent_jobs_per_owner: max,
            output_history_bytes: usize::try_from(history).unwrap_or(usize::MAX),
            journal: self.journal,
        })
    }
}

/// The plugin name `jobs-local`; the checks are those of [`JobsConfig::limits`].
impl PluginConfig for JobsConfig {
    const PLUGIN: &'static str = "jobs-local";

    fn validate(&self) -> Result<(), ConfigError> {
        self.limits().map(drop)
    }
}

fn whole(value: f64, min: u64) -> Option<u64> {
    if !value.is_finite() || value.fract() != 0.0 || value < min as f64 {
        return None;
    }
    if value > MAX_SAFE_INTEGER as f64 {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "value is integral and within 0 ..= 2^53−1, so the cast is exact"
    )]
    Some(value as u64)
}

fn invalid(key: &str, min: u64, value: f64) -> ConfigError {
    JobsConfig::invalid(format_args!(
        "{key} must be an integer from {min} to {MAX_SAFE_INTEGER}, got {}",
        turnkit_jobs::format_js_number(value)
    ))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
