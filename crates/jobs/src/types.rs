//! Vocabulary types (todo-jobs §3.1): [`JobId`], [`JobKind`], [`JobStatus`],
//! [`TerminalStatus`], [`JobOutcome`] and [`KillOutcome`].

use std::fmt;

use serde::{Deserialize, Serialize};

turnkit_core::string_newtype!(
    /// An opaque job id (todo-jobs §3.1, §4.4). The local registry issues `<kind>-<N>` with a
    /// per-kind counter starting at 1 (`bash-1`, `subagent-1`, `pty-send-100`); lookups match
    /// the string exactly and never parse it. Ids are predictable: authorization, not secrecy,
    /// protects access.
    JobId
);

impl JobId {
    /// The id of the `n`-th job of `kind`: `<kind>-<n>` (todo-jobs §4.4), as the local
    /// registry issues it. Built in place, without a heap allocation when it fits inline
    /// (23 bytes: every ordinary kind).
    ///
    /// ```
    /// use turnkit_jobs::{JobId, JobKind};
    /// assert_eq!(JobId::issued(&JobKind::new("pty-send"), 100), "pty-send-100");
    /// assert_eq!(JobId::issued(&JobKind::bash(), 0), "bash-0");
    /// let long = JobKind::new("a-kind-name-longer-than-23-bytes");
    /// assert_eq!(
    ///     JobId::issued(&long, u64::MAX),
    ///     "a-kind-name-longer-than-23-bytes-18446744073709551615"
    /// );
    /// ```
    pub fn issued(kind: &JobKind, n: u64) -> Self {
        // The inline capacity of the string type.
        const INLINE: usize = 23;
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        let mut rest = n;
        loop {
            start -= 1;
            digits[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let (name, digits) = (kind.as_str().as_bytes(), &digits[start..]);
        let len = name.len() + 1 + digits.len();
        if len <= INLINE {
            let mut buffer = [0u8; INLINE];
            buffer[..name.len()].copy_from_slice(name);
            buffer[name.len()] = b'-';
            buffer[name.len() + 1..len].copy_from_slice(digits);
            // A kind is UTF-8 and the rest is ASCII: the check cannot fail.
            if let Ok(text) = std::str::from_utf8(&buffer[..len]) {
                return Self(smol_str::SmolStr::new_inline(text));
            }
        }
        Self::new(format!("{kind}-{n}"))
    }
}

turnkit_core::string_newtype!(
    /// A job kind: an open set of strings used as an id namespace (`bash`, `subagent`,
    /// `pty-send`, `workflow`). The registry rejects an empty kind at `start` with
    /// `invalid job kind: expected a non-empty string`.
    JobKind
);

turnkit_core::string_newtype!(
    /// A job's one-line, model-facing label (the command, the delegation description;
    /// todo-jobs §3.1). The registry rejects an empty label at `start` with
    /// `invalid job label: expected a non-empty string`; whitespace-only is accepted. Labels
    /// of up to 23 bytes are stored inline.
    JobLabel
);

impl JobKind {
    /// The kind of background shell commands (turnkit-bash).
    pub fn bash() -> Self {
        Self::new("bash")
    }

    /// The kind of delegated subagent work.
    pub fn subagent() -> Self {
        Self::new("subagent")
    }
}

/// The status of a job (todo-jobs §3.1, §4.11). Serialized lowercase (`"running"`, …).
///
/// Lifecycle: `running → (stopping →)? terminal`; exactly one terminal status is ever recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// The producer is working.
    Running,
    /// Cancellation was requested (by `kill` or teardown) and the producer has not settled yet.
    Stopping,
    /// Terminal: the work finished (a non-zero exit code is still `completed`).
    Completed,
    /// Terminal: the work was stopped.
    Killed,
    /// Terminal: the work failed (also a rejected `done`, or a teardown cancel that threw).
    Failed,
}

impl JobStatus {
    /// The model-facing spelling: `running`, `stopping`, `completed`, `killed`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Stopping => "stopping",
            JobStatus::Completed => "completed",
            JobStatus::Killed => "killed",
            JobStatus::Failed => "failed",
        }
    }

    /// Whether this is one of `completed`, `killed`, `failed`.
    pub fn is_terminal(self) -> bool {
        match self {
            JobStatus::Running | JobStatus::Stopping => false,
            JobStatus::Completed | JobStatus::Killed | JobStatus::Failed => true,
        }
    }

    /// Whether the job is `running` or `stopping` (it occupies an admission slot).
    pub fn is_live(self) -> bool {
        !self.is_terminal()
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The terminal statuses a producer may report in a [`JobOutcome`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TerminalStatus {
    /// See [`JobStatus::Completed`].
    Completed,
    /// See [`JobStatus::Killed`].
    Killed,
    /// See [`JobStatus::Failed`].
    Failed,
}

impl TerminalStatus {
    /// The model-facing spelling: `completed`, `killed`, `failed`.
    pub fn as_str(self) -> &'static str {
        JobStatus::from(self).as_str()
    }
}

impl From<TerminalStatus> for JobStatus {
    fn from(value: TerminalStatus) -> Self {
        match value {
            TerminalStatus::Completed => JobStatus::Completed,
            TerminalStatus::Killed => JobStatus::Killed,
            TerminalStatus::Failed => JobStatus::Failed,
        }
    }
}

/// How a job ended, as reported by its producer through [`crate::JobHooks::done`]
/// (todo-jobs §3.1).
///
/// ```
/// use turnkit_jobs::{JobOutcome, TerminalStatus};
/// let outcome = JobOutcome::completed().with_detail("exit code: 0");
/// assert_eq!(outcome.status, TerminalStatus::Completed);
/// assert_eq!(outcome.detail.as_deref(), Some("exit code: 0"));
/// assert_eq!(outcome.output, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// One of the three terminal statuses.
    pub status: TerminalStatus,
    /// Rendered into status lines (`exit code: 3`, `signal: SIGTERM`, `max-tokens`); taken
    /// as-is by the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The final text of a final-output-only job (one without `read_output`). Ignored for
    /// stream jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl JobOutcome {
    /// An outcome with `status` and no detail or output.
    pub fn new(status: TerminalStatus) -> Self {
        Self {
            status,
            detail: None,
            output: None,
        }
    }

    /// `{status: completed}`.
    pub fn completed() -> Self {
        Self::new(TerminalStatus::Completed)
    }

    /// `{status: killed}`.
    pub fn killed() -> Self {
        Self::new(TerminalStatus::Killed)
    }

    /// `{status: failed}`.
    pub fn failed() -> Self {
        Self::new(TerminalStatus::Failed)
    }

    /// Sets the detail.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets the final output.
    #[must_use]
    pub fn with_output(mut self, output: impl Into<String>) -> Self {
        self.output = Some(output.into());
        self
    }
}

/// What [`crate::JobRegistry::kill`] did (todo-jobs §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KillOutcome {
    /// The producer's cancel was called and returned normally; the job is now `stopping`
    /// and `reported` is set.
    Requested,
    /// The job was already terminal; cancel was not called; `reported` is now set.
    AlreadyFinished,
}

impl KillOutcome {
    /// The registry's spelling: `requested` or `already-finished`. (tool-jobs maps
    /// `Requested` to its own `cancellation-requested`.)
    pub fn as_str(self) -> &'static str {
        match self {
            KillOutcome::Requested => "requested",
            KillOutcome::AlreadyFinished => "already-finished",
        }
    }
}
