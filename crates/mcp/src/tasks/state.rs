//! The tasks of one session as its log records them: `mcp/task` (a task opened),
//! `mcp/taskDelivered` (its completed result was written; see the inbox) and
//! `mcp/taskCancelled` (`tasks/cancel`), replayed on open.
//!
//! Task ids are UUIDs (version 4: 122 random bits from the operating system), reserved under
//! the lock of [`Tasks`] before the task's record is written, so two tasks opened at once, or
//! one opened after another whose record failed to save, never share an id. A task is
//! forgotten (pruned, with its hold) once its TTL has passed: `tasks/get`, `tasks/update`
//! and `tasks/cancel` then answer as for an id never issued.

use serde::{Deserialize, Serialize};
use turnkit_core::{SessionEvent, Subject, lock};

use std::sync::Mutex;

use crate::inbox::{Hold, InboxLogError, TASK_DELIVERED_EVENT, TaskDelivered, decode};

/// A task's completed result: the texts of its content blocks and whether it is a tool error
/// (`isError: true`; the task is `completed` all the same: `failed` is for protocol errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    pub(crate) content: Vec<String>,
    pub(crate) is_error: bool,
}

impl From<&TaskDelivered> for Completion {
    fn from(delivered: &TaskDelivered) -> Self {
        Self {
            content: delivered.content.clone(),
            is_error: delivered.is_error,
        }
    }
}

/// Event type of an opened task.
pub const TASK_EVENT: &str = "mcp/task";
/// Event type of a cancelled task.
pub const TASK_CANCELLED_EVENT: &str = "mcp/taskCancelled";

/// How long a job's task is kept unless the session's options say otherwise: a day.
pub const JOB_TASK_TTL: std::time::Duration = std::time::Duration::from_secs(86_400);

/// How long after the client last showed interest in a task (its creation, a `tasks/get`,
/// or the start of this server) the delivery it waits for is kept from tool results, at
/// least: three poll intervals, and never less than this.
const MIN_HOLD_MS: i64 = 10_000;

/// What a task waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A background job, by id: the task completes with its completion (or lost) notice.
    Job(String),
    /// A reminder, by schedule id, due at `due` (epoch ms): the task completes with the
    /// schedule's first reminder queued after the task opened.
    Reminder { schedule: String, due: i64 },
}

impl Target {
    /// The target waiting for `subject`: a job's, or a reminder's first due at its
    /// occurrence; `None` for a kind of subject tasks do not wait for.
    pub(crate) fn of(subject: &Subject) -> Option<Self> {
        match subject {
            Subject::Job { id } => Some(Target::Job(id.clone())),
            Subject::Reminder { id, occurrence } => Some(Target::Reminder {
                schedule: id.clone(),
                due: *occurrence,
            }),
            _ => None,
        }
    }

    /// The subject of the owed messages this target waits for: the job's, or the schedule's
    /// (any occurrence: the first one queued after the task opened completes it).
    pub(crate) fn subject(&self) -> Subject {
        match self {
            Target::Job(job) => Subject::job(job.as_str()),
            Target::Reminder { schedule, due } => Subject::reminder(schedule.as_str(), *due),
        }
    }
}

/// The payload of [`TASK_EVENT`]: exactly one of `job` and `schedule` (with `dueAt`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TaskData {
    task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    due_at: Option<String>,
    created_at: String,
    ttl_ms: u64,
    poll_interval_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CancelledData {
    task_id: String,
}

/// One task.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    /// The seq of its `mcp/task` event: only deliveries queued after it complete it.
    pub(crate) seq: u64,
    pub(crate) target: Target,
    /// RFC 3339, milliseconds, UTC.
    pub(crate) created_at: String,
    pub(crate) created_ms: i64,
    pub(crate) ttl_ms: u64,
    pub(crate) poll_ms: u64,
    /// Its completed result, once written.
    pub(crate) delivered: Option<Completion>,
    pub(crate) cancelled: bool,
    /// When the client last showed interest (epoch ms).
    pub(crate) seen_ms: i64,
    /// The completed result prepared for a response not written yet.
    pub(crate) prepared: Option<TaskDelivered>,
}

impl Entry {
    /// Whether the task outlived its TTL at `now`.
    pub(crate) fn expired(&self, now: i64) -> bool {
        now >= self.created_ms.saturating_add(ms(self.ttl_ms))
    }

    /// The hold that keeps its delivery from tool results, while it waits for one.
    pub(crate) fn hold(&self) -> Option<Hold> {
        if self.delivered.is_some() || self.cancelled {
            return None;
        }
        let window = ms(self.poll_ms).saturating_mul(3).max(MIN_HOLD_MS);
        let until = self
            .seen_ms
            .saturating_add(window)
            .min(self.created_ms.saturating_add(ms(self.ttl_ms)));
        Some(Hold {
            task: self.id.clone(),
            subject: self.target.subject(),
            after: self.seq,
            until,
        })
    }
}

fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The tasks of a session, in creation order, and the ids reserved for tasks whose record is
/// being saved.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    reserved: Vec<String>,
}

/// A fresh task id: a version 4 UUID in its hyphenated lowercase form
/// (`0b6f3c1e-8a4d-4f8e-9c2a-5d7e1f3a9b40`); `None` when the operating system gives no random
/// bytes (an id must not be guessable, so no task is opened then).
fn random_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    if let Err(error) = getrandom::fill(&mut bytes) {
        tracing::warn!("mcp: no random bytes for a task id: {error}");
        return None;
    }
    Some(
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string(),
    )
}

impl Tasks {
    /// Replays the log's task events; every open task counts as seen at `now`. Tasks whose
    /// TTL has passed at `now` are read (their later records must still name a task) and then
    /// left out, as a running server prunes them.
    ///
    /// An id opened twice (logs written before ids were random held `task-<n>` ids, which two
    /// tasks opened at once could share) keeps its first record: the later `mcp/task` records of
    /// that id are ignored, the deliveries and cancellations naming it apply to the first, and
    /// one warning names every such id.
    ///
    /// # Errors
    /// [`InboxLogError`] for a payload that does not decode strictly, or a delivery or
    /// cancellation of a task never opened.
    pub(crate) fn replay(events: &[SessionEvent], now: i64) -> Result<Self, InboxLogError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut twice: Vec<String> = Vec::new();
        for event in events {
            let error = |message: String| InboxLogError {
                seq: event.seq,
                message,
            };
            match event.r#type.as_str() {
                TASK_EVENT => {
                    let data: TaskData = decode(event)?;
                    let target = match (data.job, data.schedule, data.due_at) {
                        (Some(job), None, None) => Target::Job(job),
                        (None, Some(schedule), Some(due)) => Target::Reminder {
                            schedule,
                            due: turnkit_core::parse_canonical_millis(&due)
                                .ok_or_else(|| error(format!("dueAt {due} is not a time")))?,
                        },
                        _ => {
                            return Err(error(
                                "a task names one job, or one schedule with its dueAt".to_owned(),
                            ));
                        }
                    };
                    let created_ms = turnkit_core::parse_canonical_millis(&data.created_at)
                        .ok_or_else(|| {
                            error(format!("createdAt {} is not a time", data.created_at))
                        })?;
                    if entries.iter().any(|e| e.id == data.task_id) {
                        twice.push(format!("{} (again at seq {})", data.task_id, event.seq));
                        continue;
                    }
                    entries.push(Entry {
                        id: data.task_id,
                        seq: event.seq,
                        target,
                        created_at: data.created_at,
                        created_ms,
                        ttl_ms: data.ttl_ms,
                        poll_ms: data.poll_interval_ms,
                        delivered: None,
                        cancelled: false,
                        seen_ms: now,
                        prepared: None,
                    });
                }
                TASK_DELIVERED_EVENT => {
                    let data: TaskDelivered = decode(event)?;
                    let entry = entries
                        .iter_mut()
                        .find(|e| e.id == data.task_id)
                        .ok_or_else(|| error(format!("no task {}", data.task_id)))?;
                    entry.delivered = Some(Completion::from(&data));
                }
                TASK_CANCELLED_EVENT => {
                    let data: CancelledData = decode(event)?;
                    let entry = entries
                        .iter_mut()
                        .find(|e| e.id == data.task_id)
                        .ok_or_else(|| error(format!("no task {}", data.task_id)))?;
                    entry.cancelled = true;
                }
                _ => {}
            }
        }
        if !twice.is_empty() {
            tracing::warn!(
                "mcp: the session log opens a task id more than once; the first record of each \
                 is kept: {}",
                twice.join(", ")
            );
        }
        entries.retain(|entry| !entry.expired(now));
        Ok(Self {
            inner: Mutex::new(Inner {
                entries,
                reserved: Vec::new(),
            }),
        })
    }

    /// Reserves a fresh task id (see [`random_id`]), distinct from every task kept and every
    /// id reserved, until [`Tasks::push`] or [`Tasks::unreserve`]. Taken under the lock, before
    /// any await of the caller.
    pub(crate) fn reserve_id(&self) -> Option<String> {
        let mut inner = lock(&self.inner);
        loop {
            let id = random_id()?;
            let taken = inner.entries.iter().any(|e| e.id == id) || inner.reserved.contains(&id);
            if !taken {
                inner.reserved.push(id.clone());
                return Some(id);
            }
        }
    }

    /// Gives up reserved id `id` (its task was not opened).
    pub(crate) fn unreserve(&self, id: &str) {
        lock(&self.inner).reserved.retain(|r| r != id);
    }

    /// Forgets the tasks whose TTL has passed at `now` and returns their ids.
    pub(crate) fn prune(&self, now: i64) -> Vec<String> {
        let mut inner = lock(&self.inner);
        let mut gone = Vec::new();
        inner.entries.retain(|entry| {
            let keep = !entry.expired(now);
            if !keep {
                gone.push(entry.id.clone());
            }
            keep
        });
        gone
    }

    /// How many tasks are kept.
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).entries.len()
    }

    /// The payload of the `mcp/task` event that opens `entry`.
    pub(crate) fn event_data(entry: &Entry) -> serde_json::Value {
        let (job, schedule, due_at) = match &entry.target {
            Target::Job(job) => (Some(job.clone()), None, None),
            Target::Reminder { schedule, due } => (
                None,
                Some(schedule.clone()),
                chrono::DateTime::from_timestamp_millis(*due).map(turnkit_core::format_instant),
            ),
        };
        serde_json::to_value(TaskData {
            task_id: entry.id.clone(),
            job,
            schedule,
            due_at,
            created_at: entry.created_at.clone(),
            ttl_ms: entry.ttl_ms,
            poll_interval_ms: entry.poll_ms,
        })
        .unwrap_or_default()
    }

    /// The payload of the `mcp/taskCancelled` event of `task`.
    pub(crate) fn cancelled_data(task: &str) -> serde_json::Value {
        serde_json::json!({"taskId": task})
    }

    /// Adds an opened task (its id reserved by [`Tasks::reserve_id`]).
    pub(crate) fn push(&self, entry: Entry) {
        let mut inner = lock(&self.inner);
        inner.reserved.retain(|r| *r != entry.id);
        inner.entries.push(entry);
    }

    /// The reminders' tasks still waiting: neither completed nor cancelled.
    pub(crate) fn open_reminders(&self) -> Vec<Entry> {
        lock(&self.inner)
            .entries
            .iter()
            .filter(|e| matches!(e.target, Target::Reminder { .. }))
            .filter(|e| e.delivered.is_none() && !e.cancelled)
            .cloned()
            .collect()
    }

    /// The open tasks' holds.
    pub(crate) fn holds(&self) -> Vec<Hold> {
        lock(&self.inner)
            .entries
            .iter()
            .filter_map(Entry::hold)
            .collect()
    }

    /// Runs `change` on task `id` and returns the task after it; `None` for an unknown id.
    pub(crate) fn update(&self, id: &str, change: impl FnOnce(&mut Entry)) -> Option<Entry> {
        let mut inner = lock(&self.inner);
        let entry = inner.entries.iter_mut().find(|e| e.id == id)?;
        change(entry);
        Some(entry.clone())
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
