//! The watch family's events in its owner's session log: `watch/path` (a path watch's
//! definition and what it recorded of its files when armed), `watch/seen` (what changed with
//! each delivered wake), and the fold of a reopened session's log into the watches that were
//! still armed when the host stopped.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_core::{Agent, JsonText, Session};
use turnkit_jobs::JobId;

use crate::snapshot::{ChangeKind, Entry, Snapshot};

/// The event type of a path watch's definition.
pub(crate) const PATH_EVENT: &str = "watch/path";

/// The event type of an output watch's definition.
pub(crate) const OUTPUT_EVENT: &str = "watch/output";

/// The event type of what a delivered wake of a path watch changed in its record.
pub(crate) const SEEN_EVENT: &str = "watch/seen";

/// The format version of both events.
const VERSION: u64 = 1;

/// A `watch/path` payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PathDef {
    pub(crate) version: u64,
    /// The watch's job id.
    pub(crate) id: JobId,
    /// The watched path, absolute.
    pub(crate) path: String,
    /// Whether the path is a folder.
    pub(crate) folder: bool,
    /// For a folder: files at any depth count.
    pub(crate) recursive: bool,
    /// The kinds of change that are events.
    pub(crate) changes: Vec<ChangeKind>,
    /// The label shown with its events and in `job_list`.
    pub(crate) label: String,
    /// Events before the watch ends, counting those already seen.
    pub(crate) max_events: u64,
    /// When the watch ends on its own, in ms since the epoch (host clock).
    pub(crate) expires_at: i64,
    /// The coalescing window in ms.
    pub(crate) coalesce_ms: u64,
    /// Events seen before this definition (a re-armed watch's predecessor's).
    pub(crate) seen: u64,
    /// The files as the watch found them when armed, by key.
    pub(crate) files: Snapshot,
    /// The watch this one continues after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rearms: Option<JobId>,
}

impl PathDef {
    /// A definition of the current format.
    #[expect(
        clippy::too_many_arguments,
        reason = "one field each, named at the call"
    )]
    pub(crate) fn new(
        id: JobId,
        path: String,
        folder: bool,
        recursive: bool,
        changes: Vec<ChangeKind>,
        label: String,
        max_events: u64,
        expires_at: i64,
        coalesce_ms: u64,
    ) -> Self {
        Self {
            version: VERSION,
            id,
            path,
            folder,
            recursive,
            changes,
            label,
            max_events,
            expires_at,
            coalesce_ms,
            seen: 0,
            files: Snapshot::new(),
            rearms: None,
        }
    }
}

/// A `watch/output` payload: an output watch's job id, the job it watches and its label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OutputDef {
    pub(crate) version: u64,
    /// The watch's job id.
    pub(crate) id: JobId,
    /// The watched job.
    pub(crate) job: JobId,
    /// The label shown with its events and in `job_list`.
    pub(crate) label: String,
    /// The watch this one continues after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rearms: Option<JobId>,
}

impl OutputDef {
    pub(crate) fn new(id: JobId, job: JobId, label: String, rearms: Option<JobId>) -> Self {
        Self {
            version: VERSION,
            id,
            job,
            label,
            rearms,
        }
    }
}

/// A watch still armed when its host stopped.
#[derive(Debug)]
pub(crate) enum Armed {
    Path(PathDef),
    Output(OutputDef),
    Check(CheckDef),
}

impl Armed {
    pub(crate) fn id(&self) -> &JobId {
        match self {
            Self::Path(def) => &def.id,
            Self::Output(def) => &def.id,
            Self::Check(def) => &def.id,
        }
    }
}

/// A `watch/seen` payload: the events seen so far and the files that changed (`null`: gone).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SeenEvent {
    version: u64,
    id: JobId,
    seen: u64,
    files: BTreeMap<String, Option<Entry>>,
}

/// The event type of a check watch's definition.
pub(crate) const CHECK_EVENT: &str = "watch/check";

/// The event type of a check watch's last result, recorded before each wake.
pub(crate) const CHECKED_EVENT: &str = "watch/checked";

/// When a check's run is an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum On {
    /// The result turned to success (exit code 0) from anything else (or the first run
    /// succeeded).
    Success,
    /// The result (exit status and output) differs from the previous run's.
    Change,
}

/// What one run gave: whether it succeeded, and a digest of its status and output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Result_ {
    pub(crate) ok: bool,
    pub(crate) digest: String,
}

/// A `watch/check` payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CheckDef {
    pub(crate) version: u64,
    pub(crate) id: JobId,
    pub(crate) command: String,
    pub(crate) interval_ms: u64,
    pub(crate) on: On,
    pub(crate) label: String,
    pub(crate) max_events: u64,
    pub(crate) expires_at: i64,
    pub(crate) seen: u64,
    #[serde(default)]
    pub(crate) last: Option<Result_>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rearms: Option<JobId>,
}

/// A `watch/checked` payload.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Checked {
    pub(crate) version: u64,
    pub(crate) id: JobId,
    pub(crate) seen: u64,
    pub(crate) last: Result_,
}

/// Appends `payload` as `r#type` to `owner`'s session and flushes it.
pub(crate) async fn record(
    owner: &Arc<dyn Agent>,
    r#type: &str,
    payload: &impl Serialize,
) -> Result<(), String> {
    let text = JsonText::serialize(payload).map_err(|e| e.to_string())?;
    let session = owner.session();
    session
        .append_raw(r#type, text)
        .map_err(|e| e.to_string())?;
    session.flush().await.map_err(|e| e.to_string())
}

/// Records a delivered wake of watch `id`: `seen` events so far, and each changed file's
/// entry now (`None`: gone).
pub(crate) async fn record_seen(
    owner: &Arc<dyn Agent>,
    id: &JobId,
    seen: u64,
    files: BTreeMap<String, Option<Entry>>,
) -> Result<(), String> {
    let event = SeenEvent {
        version: VERSION,
        id: id.clone(),
        seen,
        files,
    };
    record(owner, SEEN_EVENT, &event).await
}

/// The watches of `session`'s log that were still armed when its host stopped, in the
/// order they were defined, each with its files and events as last recorded: defined by
/// this session (not inherited by a fork), not settled except by a host's teardown, and not
/// continued by a later watch. An event that does not decode is skipped with a warning.
pub(crate) fn armed(session: &dyn Session) -> Vec<Armed> {
    let seed = session.header().seed_length.unwrap_or(0);
    let mut defs: Vec<Armed> = Vec::new();
    let mut ended: HashSet<JobId> = HashSet::new();
    for event in session.raw_events_after(seed) {
        match event.r#type() {
            PATH_EVENT => match event.decode::<PathDef>() {
                Ok(def) if def.version == VERSION => {
                    if let Some(old) = &def.rearms {
                        ended.insert(old.clone());
                    }
                    defs.push(Armed::Path(def));
                }
                Ok(_) => tracing::warn!("watch: a watch/path of another version is ignored"),
                Err(error) => tracing::warn!("watch: a watch/path is ignored: {error}"),
            },
            CHECK_EVENT => match event.decode::<CheckDef>() {
                Ok(def) if def.version == VERSION => {
                    if let Some(old) = &def.rearms {
                        ended.insert(old.clone());
                    }
                    defs.push(Armed::Check(def));
                }
                Ok(_) => tracing::warn!("watch: a watch/check of another version is ignored"),
                Err(error) => tracing::warn!("watch: a watch/check is ignored: {error}"),
            },
            CHECKED_EVENT => match event.decode::<Checked>() {
                Ok(checked) => {
                    let def = defs.iter_mut().rev().find_map(|d| match d {
                        Armed::Check(def) if def.id == checked.id => Some(def),
                        _ => None,
                    });
                    if let Some(def) = def {
                        def.seen = def.seen.max(checked.seen);
                        def.last = Some(checked.last);
                    }
                }
                Err(error) => tracing::warn!("watch: a watch/checked is ignored: {error}"),
            },
            OUTPUT_EVENT => match event.decode::<OutputDef>() {
                Ok(def) if def.version == VERSION => {
                    if let Some(old) = &def.rearms {
                        ended.insert(old.clone());
                    }
                    defs.push(Armed::Output(def));
                }
                Ok(_) => tracing::warn!("watch: a watch/output of another version is ignored"),
                Err(error) => tracing::warn!("watch: a watch/output is ignored: {error}"),
            },
            SEEN_EVENT => match event.decode::<SeenEvent>() {
                Ok(seen) => {
                    let def = defs.iter_mut().rev().find_map(|d| match d {
                        Armed::Path(def) if def.id == seen.id => Some(def),
                        _ => None,
                    });
                    if let Some(def) = def {
                        def.seen = def.seen.max(seen.seen);
                        for (key, entry) in seen.files {
                            match entry {
                                Some(entry) => def.files.insert(key, entry),
                                None => def.files.remove(&key),
                            };
                        }
                    }
                }
                Err(error) => tracing::warn!("watch: a watch/seen is ignored: {error}"),
            },
            "job/settle" => {
                let data: Value = event.data();
                let teardown = data.get("teardown").is_some_and(|t| !t.is_null());
                if let (Some(id), false) = (data.get("id").and_then(Value::as_str), teardown) {
                    ended.insert(JobId::from(id));
                }
            }
            _ => {}
        }
    }
    defs.retain(|def| !ended.contains(def.id()));
    defs
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use serde_json::json;
    use turnkit_core::{MemoryStore, SessionHeader, SessionStore, SystemClock};

    use super::{Armed, OUTPUT_EVENT, PATH_EVENT, SEEN_EVENT, armed};

    fn path_def(id: &str, rearms: Option<&str>) -> serde_json::Value {
        let mut def = json!({
            "version": 1, "id": id, "path": "/w", "folder": true, "recursive": false,
            "changes": ["created"], "label": "l", "maxEvents": 5, "expiresAt": 9,
            "coalesceMs": 0, "seen": 0, "files": {"a": [1, 2, "h"]}
        });
        if let Some(old) = rearms {
            def["rearms"] = json!(old);
        }
        def
    }

    #[test]
    fn the_fold_keeps_watches_neither_settled_nor_continued_with_their_last_recorded_files() {
        let store = MemoryStore::new(Arc::new(SystemClock));
        let session = store.create(SessionHeader::new("s1")).unwrap();
        let append = |t: &str, v: serde_json::Value| {
            session.append(t, v).unwrap();
        };
        append(PATH_EVENT, path_def("watch-1", None));
        append(
            SEEN_EVENT,
            json!({"version": 1, "id": "watch-1", "seen": 2, "files": {"a": null, "b": [3, 4, "k"]}}),
        );
        append(PATH_EVENT, path_def("watch-2", None));
        append(
            "job/settle",
            json!({"version": 1, "id": "watch-2", "status": "killed", "finishedAt": 1}),
        );
        append(PATH_EVENT, path_def("watch-3", None));
        append(PATH_EVENT, path_def("watch-4", Some("watch-3")));
        append(
            "job/settle",
            json!({"version": 1, "id": "watch-4", "status": "killed", "finishedAt": 1, "teardown": "owner disposed"}),
        );
        append(
            OUTPUT_EVENT,
            json!({"version": 1, "id": "watch-5", "job": "bash-1", "label": "l"}),
        );
        append(
            OUTPUT_EVENT,
            json!({"version": 1, "id": "watch-6", "job": "bash-2", "label": "l"}),
        );
        append(
            OUTPUT_EVENT,
            json!({"version": 1, "id": "watch-7", "job": "bash-2", "label": "l", "rearms": "watch-6"}),
        );
        append(
            "job/settle",
            json!({"version": 1, "id": "watch-7", "status": "completed", "finishedAt": 1}),
        );
        let kept: Vec<(String, String)> = armed(&*session)
            .iter()
            .map(|a| match a {
                Armed::Path(def) => (
                    def.id.to_string(),
                    format!("seen {} files {:?}", def.seen, def.files),
                ),
                Armed::Output(def) => (def.id.to_string(), format!("output of {}", def.job)),
                Armed::Check(def) => (def.id.to_string(), format!("check {}", def.command)),
            })
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "watch-1".to_owned(),
                    "seen 2 files {\"b\": Entry(3, 4, Some(\"k\"))}".to_owned()
                ),
                (
                    "watch-4".to_owned(),
                    "seen 0 files {\"a\": Entry(1, 2, Some(\"h\"))}".to_owned()
                ),
                ("watch-5".to_owned(), "output of bash-1".to_owned()),
            ]
        );
    }
}
