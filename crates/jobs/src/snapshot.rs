//! What callers receive (todo-jobs §3.1, decision 8): [`JobSnapshot`], [`JobRead`] and
//! [`JobReadAt`].

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use turnkit_core::SessionId;

use crate::{JobId, JobKind, JobLabel, JobStatus};

/// A fresh, read-only copy of a job record (todo-jobs §3.1 `JobSnapshot`).
///
/// Serialized with the spec's camelCase keys; absent optional fields are omitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSnapshot {
    /// The job id (`<kind>-<N>`).
    pub id: JobId,
    /// The job kind.
    pub kind: JobKind,
    /// The producer's one-line label.
    pub label: JobLabel,
    /// The producer's output limit in bytes, only if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit_bytes: Option<u64>,
    /// The owner's session id, only if the job is owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_session: Option<SessionId>,
    /// The current status.
    pub status: JobStatus,
    /// While live: the producer's progress line, if any (decision 8). Once terminal: the
    /// outcome's detail, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Arc<str>>,
    /// Epoch milliseconds at registration.
    pub started_at: i64,
    /// Epoch milliseconds at settlement; present exactly when the status is terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// Whether the terminal state was (or will be) delivered by a path other than a
    /// completion notice (todo-jobs §4.10). Never cleared once set.
    pub reported: bool,
}

impl JobSnapshot {
    /// The exact status line of tool-jobs (todo-jobs §5.3): `[status: <status>]`, or
    /// `[status: <status>, <detail>]` when a detail is present.
    ///
    /// ```
    /// use turnkit_jobs::{JobSnapshot, JobStatus};
    /// let mut snapshot = JobSnapshot {
    ///     id: "bash-1".into(),
    ///     kind: "bash".into(),
    ///     label: "pnpm test".into(),
    ///     output_limit_bytes: None,
    ///     owner_session: None,
    ///     status: JobStatus::Running,
    ///     detail: None,
    ///     started_at: 0,
    ///     finished_at: None,
    ///     reported: false,
    /// };
    /// assert_eq!(snapshot.status_line(), "[status: running]");
    /// snapshot.status = JobStatus::Completed;
    /// snapshot.detail = Some("exit code: 0".into());
    /// assert_eq!(snapshot.status_line(), "[status: completed, exit code: 0]");
    /// ```
    pub fn status_line(&self) -> String {
        let mut line = String::with_capacity(24);
        line.push_str("[status: ");
        line.push_str(self.status.as_str());
        if let Some(detail) = &self.detail {
            let _ = write!(line, ", {detail}");
        }
        line.push(']');
        line
    }
}

/// The result of a consuming [`crate::JobRegistry::read`]: `{ text, snapshot }`, the snapshot
/// taken after the read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRead {
    /// The stream delta since the previous read, or the final output of a settled
    /// final-output-only job (`""` while it runs or when it had none).
    pub text: String,
    /// The snapshot after the read (a read of a terminal job sets `reported`).
    pub snapshot: JobSnapshot,
}

/// The result of a non-consuming [`crate::JobRegistry::read_at`] (decision 8), for observers
/// such as UIs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobReadAt {
    /// The text after the requested cursor that is still held (starting at a character
    /// boundary).
    pub text: String,
    /// The cursor to pass next time: the byte offset of the end of the job's text so far.
    pub next_cursor: u64,
    /// Whether text between the requested cursor and the start of `text` was dropped from the
    /// bounded history.
    pub dropped: bool,
    /// The job's snapshot (unchanged by this call: `reported` is never set by `read_at`).
    pub snapshot: JobSnapshot,
}
