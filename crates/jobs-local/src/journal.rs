//! The job journal (opt-in, `journal: true`): the `job/start` and `job/settle` events an
//! owned job leaves in its owner's session log (format in `docs/event-log.md`), their strict
//! decoding, and the highest id per kind a log has seen, so ids continue after a restart.

use std::collections::HashMap;

use harness_core::{JsonText, RawEvent, Session};
use harness_jobs::{JobId, JobKind, JobLabel, JobSnapshot};
use serde::{Deserialize, Serialize};

use crate::state::split_id;

/// The event type of a journaled start.
pub const JOB_START_EVENT: &str = "job/start";

/// The event type of a journaled settlement.
pub const JOB_SETTLE_EVENT: &str = "job/settle";

/// The journal's format version (the `version` key of both events).
pub const JOURNAL_VERSION: u64 = 1;

/// The longest final output a `job/settle` keeps, in bytes (cut at a character boundary).
pub const JOURNAL_OUTPUT_BYTES: usize = 4096;

/// A decoded `job/start` payload (strict: exact keys, version 1).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StartEvent {
    version: u64,
    pub(crate) id: JobId,
    pub(crate) kind: JobKind,
    pub(crate) label: JobLabel,
    pub(crate) started_at: i64,
}

/// A decoded `job/settle` payload (strict: exact keys, version 1).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SettleEvent {
    version: u64,
    pub(crate) id: JobId,
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) detail: Option<String>,
    pub(crate) finished_at: i64,
    #[serde(default)]
    pub(crate) output: Option<String>,
    #[serde(default)]
    pub(crate) output_truncated: bool,
}

/// The `job/start` payload, borrowed from the job (serialized in the documented key order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartPayload<'a> {
    version: u64,
    id: &'a JobId,
    kind: &'a JobKind,
    label: &'a JobLabel,
    started_at: i64,
}

/// The `job/settle` payload, borrowed from the settled job (serialized in the documented key
/// order; `detail`, `output` and `outputTruncated` only when present).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SettlePayload<'a> {
    version: u64,
    id: &'a JobId,
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    finished_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    output_truncated: bool,
}

/// The `job/start` payload of a just-started job, as the compact JSON text
/// [`Session::append_raw`] takes (the text `serde_json` writes for it as a `Value`).
pub(crate) fn start_payload(
    id: &JobId,
    kind: &JobKind,
    label: &JobLabel,
    started_at: i64,
) -> Result<JsonText, serde_json::Error> {
    JsonText::serialize(&StartPayload {
        version: JOURNAL_VERSION,
        id,
        kind,
        label,
        started_at,
    })
}

/// The `job/settle` payload of a just-settled job, as compact JSON text (see
/// [`start_payload`]): its terminal status, detail, finish time and final output
/// (final-output jobs only), cut to [`JOURNAL_OUTPUT_BYTES`].
pub(crate) fn settle_payload(
    snapshot: &JobSnapshot,
    output: Option<&str>,
) -> Result<JsonText, serde_json::Error> {
    let output = output.map(|output| {
        let cut = output.floor_char_boundary(JOURNAL_OUTPUT_BYTES);
        (&output[..cut], cut < output.len())
    });
    JsonText::serialize(&SettlePayload {
        version: JOURNAL_VERSION,
        id: &snapshot.id,
        status: snapshot.status.as_str(),
        detail: snapshot.detail.as_deref(),
        finished_at: snapshot.finished_at.unwrap_or(snapshot.started_at),
        output: output.map(|(text, _)| text),
        output_truncated: output.is_some_and(|(_, cut)| cut),
    })
}

/// Why a journal event was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalError {
    /// The payload is not a version-1 event of its type with exactly the documented keys.
    #[error("corrupt job journal at seq {seq}: {message}")]
    Corrupt {
        /// The refused event's `seq`.
        seq: u64,
        /// What was wrong, as `serde_json` or the version check reports it.
        message: String,
    },
}

fn decode<'a, T: Deserialize<'a>>(event: &'a RawEvent) -> Result<T, JournalError> {
    event.decode().map_err(|error| JournalError::Corrupt {
        seq: event.seq(),
        message: error.to_string(),
    })
}

fn check_version(seq: u64, version: u64) -> Result<(), JournalError> {
    if version == JOURNAL_VERSION {
        Ok(())
    } else {
        Err(JournalError::Corrupt {
            seq,
            message: format!("unsupported version {version}"),
        })
    }
}

/// Decodes a `job/start` event strictly.
pub(crate) fn decode_start(event: &RawEvent) -> Result<StartEvent, JournalError> {
    let start: StartEvent = decode(event)?;
    check_version(event.seq(), start.version)?;
    Ok(start)
}

/// Decodes a `job/settle` event strictly.
pub(crate) fn decode_settle(event: &RawEvent) -> Result<SettleEvent, JournalError> {
    let settle: SettleEvent = decode(event)?;
    check_version(event.seq(), settle.version)?;
    if !matches!(settle.status.as_str(), "completed" | "killed" | "failed") {
        return Err(JournalError::Corrupt {
            seq: event.seq(),
            message: format!("unknown terminal status {:?}", settle.status),
        });
    }
    Ok(settle)
}

/// The highest job number per kind among the `job/start` events of `session`, in first-seen
/// order of kinds. A refused event is skipped with a warning (it names no id to keep).
pub(crate) fn highest_ids(session: &dyn Session) -> Vec<(JobKind, u64)> {
    let mut highest: Vec<(JobKind, u64)> = Vec::new();
    let mut index: HashMap<JobKind, usize> = HashMap::new();
    for event in session.raw_events_after(0) {
        let result = match event.r#type() {
            JOB_START_EVENT => decode_start(&event).map(Some),
            JOB_SETTLE_EVENT => decode_settle(&event).map(|_| None),
            _ => continue,
        };
        let start = match result {
            Ok(Some(start)) => start,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!("jobs: {error}; the event is ignored");
                continue;
            }
        };
        let Some((kind, n)) = split_id(start.id.as_str()) else {
            continue;
        };
        if kind != start.kind.as_str() {
            continue;
        }
        match index.get(&start.kind) {
            Some(&i) => highest[i].1 = highest[i].1.max(n),
            None => {
                index.insert(start.kind.clone(), highest.len());
                highest.push((start.kind, n));
            }
        }
    }
    highest
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
