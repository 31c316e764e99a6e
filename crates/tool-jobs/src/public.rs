//! [`PublicJob`]: the job snapshot the model sees (todo-jobs §5.3).

use serde::{Deserialize, Serialize};
use turnkit_jobs::{JobSnapshot, JobStatus};

use crate::text::status_line;

/// The canonical job value of the tools: `{ id, kind, label, status, detail?, startedAt,
/// finishedAt? }`. It deliberately omits `ownerSession`, `reported` and `outputLimitBytes`
/// (todo-jobs §5.3).
///
/// `detail` is the producer's outcome detail and appears only once the job is terminal: a
/// live progress line (decision 8) is for observers and never reaches the model, so running
/// and stopping jobs show no detail here or in their status line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublicJob {
    /// The job id.
    pub id: String,
    /// The job kind.
    pub kind: String,
    /// The producer's label.
    pub label: String,
    /// `running`, `stopping`, `completed`, `killed` or `failed`.
    pub status: JobStatus,
    /// The outcome detail of a terminal job, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Epoch milliseconds at registration.
    pub started_at: i64,
    /// Epoch milliseconds at settlement (terminal jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
}

impl PublicJob {
    /// The public view of `snapshot`.
    pub fn from_snapshot(snapshot: &JobSnapshot) -> Self {
        let detail = if snapshot.status.is_terminal() {
            snapshot.detail.as_deref().map(str::to_owned)
        } else {
            None
        };
        Self {
            id: snapshot.id.to_string(),
            kind: snapshot.kind.to_string(),
            label: snapshot.label.to_string(),
            status: snapshot.status,
            detail,
            started_at: snapshot.started_at,
            finished_at: snapshot.finished_at,
        }
    }

    /// The status line: `[status: <status>]` or `[status: <status>, <detail>]`.
    pub fn status_line(&self) -> String {
        status_line(self.status.as_str(), self.detail.as_deref())
    }

    /// The value as JSON.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
