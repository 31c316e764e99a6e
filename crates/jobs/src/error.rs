//! [`JobError`]: every failure of a [`crate::JobRegistry`] operation, with the spec's exact
//! messages (todo-jobs §4.3, §4.5).

use std::time::Duration;

use turnkit_core::{AgentError, AgentId};

use crate::{BoxError, JobId};

/// A registry operation failed. `Display` is the exact caller-facing message; a tool renders
/// it as `Error: <message>`. Producer errors (from `run`, `cancel`, `read_output`) propagate
/// unchanged as [`JobError::Producer`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// `start`: no attached controller serves the owner (a global controller serves
    /// everyone; unowned jobs need a global one). Step 1 of §4.3.
    #[error(
        "background jobs unavailable: no job controller serves this agent (load @deepseek-ai/dsh-tool-jobs in its composition)"
    )]
    NoController,
    /// `start`: the kind is empty (§4.3 step 2).
    #[error("invalid job kind: expected a non-empty string")]
    InvalidKind,
    /// `start`: the label is empty (§4.3 step 3).
    #[error("invalid job label: expected a non-empty string")]
    InvalidLabel,
    /// `start`: `output_limit_bytes` is 0 or above 2^53−1 (§4.3 step 4). Holds the value.
    #[error("invalid outputLimitBytes: expected a positive safe integer, got {0}")]
    InvalidOutputLimit(u64),
    /// `start`: an owned start without an agent registry (§4.3 step 5.1).
    #[error("background job ownership requires the agent registry (load @deepseek-ai/dsh-agent)")]
    NoAgentRegistry,
    /// `start`: the owner is not the instance registered under its id (§4.3 step 5.2).
    #[error(
        "agent {} is not the registered agent instance (background job owner must be live)",
        json_quote(.0.as_str())
    )]
    NotRegisteredInstance(AgentId),
    /// `start`: registering the owner's cleanup hook failed, e.g. the owner is disposing
    /// (§4.3 step 5.3).
    #[error(transparent)]
    Owner(#[from] AgentError),
    /// `start`: the owner's bucket already holds `limit` live jobs (§4.3 step 6).
    #[error(
        "background job limit reached for this owner (limit: {limit}); use job_kill to stop an unneeded job, wait for it to finish, then retry"
    )]
    LimitReached {
        /// The configured `maxConcurrentJobsPerOwner`.
        limit: u64,
    },
    /// `start`: the registry has been disposed, or cannot drive settlement (no async
    /// runtime). Checked before everything else. Holds the reason.
    #[error("background jobs unavailable: {0}")]
    Unavailable(String),
    /// `start` with the job journal on: job `id` was recorded, but its `job/start` could not
    /// be appended to its owner's session log (the host refused the append, or the payload
    /// could not be encoded). So that no work runs without a durable record of it, the
    /// registry stopped the job before `start` returned: it settles `killed`, sends no
    /// completion notice, and its settlement is not journaled either. Holds why.
    #[error("background job {id} was stopped: its start could not be saved: {reason}")]
    StartNotSaved {
        /// The job, recorded and stopped.
        id: JobId,
        /// Why the append failed.
        reason: String,
    },
    /// `start` with the job journal on: as [`JobError::StartNotSaved`], but the producer's
    /// cancel failed, so the job's work may still be running. The registry forced the record
    /// `failed` (detail `cancel threw after its start could not be saved; work may be
    /// orphaned: <error>`), so it holds no admission place and sends no notice. Holds why the
    /// append and the cancel failed.
    #[error(
        "background job {id} could not be stopped after its start could not be saved ({reason}); its work may still be running: {error}"
    )]
    StartNotSavedNotStopped {
        /// The job, recorded and forced `failed`.
        id: JobId,
        /// Why the append failed.
        reason: String,
        /// Why the cancel failed.
        error: String,
    },
    /// get/read/read_at/kill/wait: the id was never issued or its record was removed.
    #[error("unknown job {0}")]
    UnknownJob(JobId),
    /// get/read/read_at/kill/wait: the job is owned and the caller is absent or has another
    /// id. (Foreign callers are denied, not told "not found".)
    #[error("job {0} belongs to another session")]
    Foreign(JobId),
    /// `wait`: the timeout is zero, or (from [`JobError::wait_timeout`]) a number of
    /// milliseconds that is not finite and > 0. Holds the value as JSON (`0`, `-1`, `null`
    /// for NaN and ±∞).
    #[error("invalid wait timeout: expected a positive number of milliseconds, got {0}")]
    InvalidWaitTimeout(String),
    /// `wait`: the caller's cancellation token fired while the job was live.
    #[error("wait aborted")]
    WaitAborted,
    /// An error from the producer's `run`, `cancel` or `read_output`, unchanged.
    #[error(transparent)]
    Producer(BoxError),
}

impl JobError {
    /// The error for a wait timeout that is not a finite number > 0, rendering the value as
    /// JavaScript's `JSON.stringify` would (`0`, `-1`, `1.5`, `null` for NaN and ±∞).
    pub fn invalid_wait_timeout(timeout_ms: f64) -> Self {
        JobError::InvalidWaitTimeout(format_js_number(timeout_ms))
    }

    /// A wait timeout from a number of milliseconds (as a model or a config sends it).
    ///
    /// # Errors
    /// [`JobError::InvalidWaitTimeout`] unless `timeout_ms` is finite and > 0 (todo-jobs
    /// §4.5). A value too large for a [`Duration`] becomes [`Duration::MAX`]: a huge wait is
    /// clamped by the registry, not refused. A positive value below one nanosecond becomes
    /// one nanosecond (a wait that times out at once), never the zero the registry refuses.
    ///
    /// ```
    /// use std::time::Duration;
    /// use turnkit_jobs::JobError;
    /// assert_eq!(JobError::wait_timeout(1.5).unwrap(), Duration::from_micros(1500));
    /// assert_eq!(JobError::wait_timeout(1e300).unwrap(), Duration::MAX);
    /// assert_eq!(
    ///     JobError::wait_timeout(-1.0).unwrap_err().to_string(),
    ///     "invalid wait timeout: expected a positive number of milliseconds, got -1"
    /// );
    /// ```
    pub fn wait_timeout(timeout_ms: f64) -> Result<Duration, JobError> {
        if !timeout_ms.is_finite() || timeout_ms <= 0.0 {
            return Err(Self::invalid_wait_timeout(timeout_ms));
        }
        let timeout = Duration::try_from_secs_f64(timeout_ms / 1000.0).unwrap_or(Duration::MAX);
        Ok(timeout.max(Duration::from_nanos(1)))
    }
}

/// Formats a number as JavaScript's `JSON.stringify` does for the values that matter here:
/// integral values without a decimal point, NaN and ±∞ as `null`.
pub fn format_js_number(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_owned();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    if value.fract() == 0.0 && value.abs() < 1e21 {
        return format!("{value:.0}");
    }
    format!("{value}")
}

/// `value` as a JSON string literal.
fn json_quote(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn exact_messages() {
        assert_eq!(
            JobError::NotRegisteredInstance(AgentId::new("ghost")).to_string(),
            "agent \"ghost\" is not the registered agent instance (background job owner must be live)"
        );
        assert_eq!(
            JobError::LimitReached { limit: 10 }.to_string(),
            "background job limit reached for this owner (limit: 10); use job_kill to stop an unneeded job, wait for it to finish, then retry"
        );
        assert_eq!(
            JobError::InvalidOutputLimit(0).to_string(),
            "invalid outputLimitBytes: expected a positive safe integer, got 0"
        );
        assert_eq!(
            JobError::UnknownJob(JobId::new("bash-9")).to_string(),
            "unknown job bash-9"
        );
        assert_eq!(
            JobError::Foreign(JobId::new("bash-1")).to_string(),
            "job bash-1 belongs to another session"
        );
        assert_eq!(JobError::WaitAborted.to_string(), "wait aborted");
        assert_eq!(
            JobError::Producer("cancel boom".into()).to_string(),
            "cancel boom"
        );
    }

    /// A positive timeout below a nanosecond is still a wait (before, it rounded to the zero
    /// `wait` refuses, and `job_output` answered "got 0" for a positive `timeout_ms`).
    #[test]
    fn a_positive_timeout_below_a_nanosecond_waits_one_nanosecond() {
        for tiny in [1e-10, 4e-7, f64::MIN_POSITIVE, 5e-324] {
            assert_eq!(
                JobError::wait_timeout(tiny).unwrap(),
                Duration::from_nanos(1)
            );
        }
        assert_eq!(
            JobError::wait_timeout(1e-6).unwrap(),
            Duration::from_nanos(1)
        );
        assert_eq!(
            JobError::wait_timeout(0.5).unwrap(),
            Duration::from_micros(500)
        );
    }

    #[test]
    fn wait_timeout_values_render_like_json() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (-1.0, "-1"),
            (1.5, "1.5"),
            (30.0, "30"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (f64::NEG_INFINITY, "null"),
        ];
        for (value, text) in cases {
            assert_eq!(
                JobError::invalid_wait_timeout(value).to_string(),
                format!(
                    "invalid wait timeout: expected a positive number of milliseconds, got {text}"
                )
            );
        }
    }
}
