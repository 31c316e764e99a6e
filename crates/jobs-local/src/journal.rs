//! The job journal (opt-in, `journal: true`): the `job/start` and `job/settle` events an
//! owned job leaves in its owner's session log (format in `docs/event-log.md`), their strict
//! decoding, the highest id per kind a log has seen, so ids continue after a restart, and
//! the fold of a reopened session's journal: its earlier jobs and the ones it lost.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use turnkit_core::{JsonText, RawEvent, Session, SessionId};
use turnkit_jobs::{
    JobId, JobKind, JobLabel, JobSnapshot, JobStatus, LOST_DETAIL, OUTPUT_TRUNCATED_MARKER,
    SHUTDOWN_DETAIL,
};

use crate::state::split_id;

/// The event type of a journaled start.
pub const JOB_START_EVENT: &str = "job/start";

/// The event type of a journaled settlement.
pub const JOB_SETTLE_EVENT: &str = "job/settle";

/// The event type that records the delivery of a lost-jobs notice.
pub const JOB_LOST_EVENT: &str = "job/lost";

/// The journal's format version (the `version` key of both events).
pub const JOURNAL_VERSION: u64 = 1;

/// The longest final output a `job/settle` keeps, in bytes, when the job's
/// `outputLimitBytes` is not smaller: a longer output keeps its tail and ends with
/// `\n[output truncated]` (cut at a character boundary).
pub const JOURNAL_OUTPUT_BYTES: usize = 65_536;

/// A decoded `job/start` payload (strict: exact keys, version 1).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StartEvent {
    version: u64,
    pub(crate) id: JobId,
    pub(crate) kind: JobKind,
    pub(crate) label: JobLabel,
    pub(crate) started_at: i64,
    /// What the job leaves on the machine, as its producer names it (bash: its marker).
    #[serde(default)]
    pub(crate) trace: Option<String>,
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
    /// The teardown reason (`owner disposed`, `jobs service disposed`) when the registry's
    /// teardown cancelled the job: it was still running when its host shut down.
    #[serde(default)]
    pub(crate) teardown: Option<String>,
}

/// A decoded `job/lost` payload (strict: exact keys, version 1, at least one id).
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LostEvent {
    version: u64,
    pub(crate) ids: Vec<JobId>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<&'a str>,
}

/// The `job/settle` payload, borrowed from the settled job (serialized in the documented key
/// order; `detail`, `output`, `outputTruncated` and `teardown` only when present).
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
    #[serde(skip_serializing_if = "Option::is_none")]
    teardown: Option<&'a str>,
}

/// The `job/start` payload of a just-started job, as the compact JSON text
/// [`Session::append_raw`] takes (the text `serde_json` writes for it as a `Value`).
pub(crate) fn start_payload(
    id: &JobId,
    kind: &JobKind,
    label: &JobLabel,
    started_at: i64,
    trace: Option<&str>,
) -> Result<JsonText, serde_json::Error> {
    JsonText::serialize(&StartPayload {
        version: JOURNAL_VERSION,
        id,
        kind,
        label,
        started_at,
        trace,
    })
}

/// The `job/settle` payload of a just-settled job, as compact JSON text (see
/// [`start_payload`]): its terminal status, detail, finish time and final output (a
/// final-output job's result, or what a stream job's reader had not read yet), fitted by
/// [`fit_output`], and the teardown reason when the registry's teardown cancelled it.
pub(crate) fn settle_payload(
    snapshot: &JobSnapshot,
    output: Option<&str>,
    teardown: Option<&str>,
) -> Result<JsonText, serde_json::Error> {
    let output = output.map(|output| fit_output(output, snapshot.output_limit_bytes));
    JsonText::serialize(&SettlePayload {
        version: JOURNAL_VERSION,
        id: &snapshot.id,
        status: snapshot.status.as_str(),
        detail: snapshot.detail.as_deref(),
        finished_at: snapshot.finished_at.unwrap_or(snapshot.started_at),
        output: output.as_ref().map(|(text, _)| text.as_str()),
        output_truncated: output.as_ref().is_some_and(|(_, cut)| *cut),
        teardown,
    })
}

/// `output` bounded by the job's `limit` and [`JOURNAL_OUTPUT_BYTES`], whichever is smaller:
/// unchanged when it fits, otherwise its tail followed by `\n[output truncated]`
/// ([`OUTPUT_TRUNCATED_MARKER`], todo-jobs §5.5 rule A), at most the bound in bytes. Also
/// whether it was cut.
pub(crate) fn fit_output(output: &str, limit: Option<u64>) -> (String, bool) {
    let bound = limit
        .and_then(|limit| usize::try_from(limit).ok())
        .map_or(JOURNAL_OUTPUT_BYTES, |limit| {
            limit.min(JOURNAL_OUTPUT_BYTES)
        });
    if output.len() <= bound {
        return (output.to_owned(), false);
    }
    if OUTPUT_TRUNCATED_MARKER.len() >= bound {
        return (
            turnkit_core::tail_utf8(OUTPUT_TRUNCATED_MARKER, bound).to_owned(),
            true,
        );
    }
    let kept = turnkit_core::tail_utf8(output, bound - OUTPUT_TRUNCATED_MARKER.len());
    (format!("{kept}{OUTPUT_TRUNCATED_MARKER}"), true)
}

/// The `job/lost` payload recording that the lost-jobs notice for `ids` was delivered.
pub(crate) fn lost_payload(ids: &[JobId]) -> Value {
    json!({ "version": JOURNAL_VERSION, "ids": ids })
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

/// Decodes a `job/lost` event strictly.
pub(crate) fn decode_lost(event: &RawEvent) -> Result<LostEvent, JournalError> {
    let lost: LostEvent = decode(event)?;
    check_version(event.seq(), lost.version)?;
    if lost.ids.is_empty() {
        return Err(JournalError::Corrupt {
            seq: event.seq(),
            message: "a job/lost event names no job".to_owned(),
        });
    }
    Ok(lost)
}

/// A job of an earlier run, as the journal of a reopened session records it.
#[derive(Debug, PartialEq)]
pub(crate) struct Earlier {
    pub(crate) id: JobId,
    pub(crate) number: u64,
    pub(crate) kind: JobKind,
    pub(crate) label: JobLabel,
    pub(crate) started_at: i64,
    /// `completed`, `killed` or `failed`; a lost job is `failed` with [`LOST_DETAIL`], one
    /// its host's shutdown stopped `killed` with [`SHUTDOWN_DETAIL`].
    pub(crate) status: JobStatus,
    pub(crate) detail: Option<String>,
    pub(crate) finished_at: i64,
    pub(crate) output: Option<String>,
    /// The trace its start recorded, kept for a job that never settled (its host died):
    /// what the reopening checks for leftovers.
    pub(crate) trace: Option<String>,
}

impl Earlier {
    /// The job's snapshot as its owner `session` sees it (reported: no completion notice).
    pub(crate) fn snapshot(&self, session: &SessionId) -> JobSnapshot {
        JobSnapshot {
            id: self.id.clone(),
            kind: self.kind.clone(),
            label: self.label.clone(),
            output_limit_bytes: None,
            owner_session: Some(session.clone()),
            status: self.status,
            detail: self.detail.as_deref().map(std::sync::Arc::from),
            started_at: self.started_at,
            finished_at: Some(self.finished_at),
            reported: true,
        }
    }
}

/// What a reopened session's journal holds.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct JournalView {
    /// Every finished or lost job of earlier runs started in this session, in start order
    /// (a fork's inherited jobs are its parent's: not here).
    pub(crate) history: Vec<Earlier>,
    /// The indexes into `history` of the jobs whose end is owed to the model: never settled
    /// (lost) or settled by a teardown (stopped by the host's shutdown), and named by no
    /// `job/lost`.
    pub(crate) lost: Vec<usize>,
    /// The highest job number per kind among every `job/start`, inherited ones included.
    pub(crate) highest: Vec<(JobKind, u64)>,
}

/// Folds the journal of `session` (events after its fork seed are its own). `now` is the
/// finish time given to a job that never settled. A refused event is skipped with a warning.
pub(crate) fn read_journal(session: &dyn Session, now: i64) -> JournalView {
    struct Entry {
        start: StartEvent,
        number: u64,
        inherited: bool,
        settle: Option<SettleEvent>,
    }
    let seed = session.header().seed_length.unwrap_or(0);
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_id: HashMap<JobId, usize> = HashMap::new();
    let mut reported: HashSet<JobId> = HashSet::new();
    for event in session.raw_events_after(0) {
        let inherited = event.seq() <= seed;
        let result = match event.r#type() {
            JOB_START_EVENT => decode_start(&event).map(|start| {
                let Some((kind, number)) = split_id(start.id.as_str()) else {
                    return;
                };
                if kind != start.kind.as_str() || by_id.contains_key(&start.id) {
                    return;
                }
                by_id.insert(start.id.clone(), entries.len());
                entries.push(Entry {
                    start,
                    number,
                    inherited,
                    settle: None,
                });
            }),
            JOB_SETTLE_EVENT => decode_settle(&event).map(|settle| {
                if let Some(&i) = by_id.get(&settle.id)
                    && entries[i].settle.is_none()
                {
                    entries[i].settle = Some(settle);
                }
            }),
            JOB_LOST_EVENT => decode_lost(&event).map(|lost| reported.extend(lost.ids)),
            _ => continue,
        };
        if let Err(error) = result {
            tracing::warn!("jobs: {error}; the event is ignored");
        }
    }
    let mut view = JournalView::default();
    let mut index: HashMap<JobKind, usize> = HashMap::new();
    for entry in entries {
        match index.get(&entry.start.kind) {
            Some(&i) => view.highest[i].1 = view.highest[i].1.max(entry.number),
            None => {
                index.insert(entry.start.kind.clone(), view.highest.len());
                view.highest.push((entry.start.kind.clone(), entry.number));
            }
        }
        if entry.inherited {
            // A fork's parent's job: the fork inherits its events (and its ids are never
            // issued again) but neither the job nor a report of it.
            continue;
        }
        // Owed: the model was never told how it ended (no settlement, or a teardown's).
        let owed = entry
            .settle
            .as_ref()
            .is_none_or(|settle| settle.teardown.is_some());
        let finished_at = entry
            .settle
            .as_ref()
            .map_or(now.max(entry.start.started_at), |s| s.finished_at);
        let trace = match entry.settle {
            None => entry.start.trace,
            Some(_) => None,
        };
        let (status, detail, output) = match entry.settle {
            Some(settle) if settle.teardown.is_some() => (
                JobStatus::Killed,
                Some(SHUTDOWN_DETAIL.to_owned()),
                settle.output,
            ),
            Some(settle) => {
                let status = match settle.status.as_str() {
                    "completed" => JobStatus::Completed,
                    "killed" => JobStatus::Killed,
                    _ => JobStatus::Failed,
                };
                (status, settle.detail, settle.output)
            }
            None => (JobStatus::Failed, Some(LOST_DETAIL.to_owned()), None),
        };
        if owed && !reported.contains(&entry.start.id) {
            view.lost.push(view.history.len());
        }
        view.history.push(Earlier {
            id: entry.start.id,
            number: entry.number,
            kind: entry.start.kind,
            label: entry.start.label,
            started_at: entry.start.started_at,
            status,
            detail,
            finished_at,
            output,
            trace,
        });
    }
    view
}

/// The highest job number per kind among the `job/start` events of `session` (inherited ones
/// included), in first-seen order of kinds: [`read_journal`]'s fold, for a registry whose
/// owner starts a job before (or without) a reopening.
pub(crate) fn highest_ids(session: &dyn Session) -> Vec<(JobKind, u64)> {
    read_journal(session, 0).highest
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
