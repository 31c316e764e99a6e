//! The pull inbox: notices and reminders queued for the next tool result, recorded in the
//! session log as `mcp/queued` and `mcp/claimed` events (see `docs/event-log.md`).
//!
//! A message a plugin hands to the agent (a followup or an injected message) is appended as
//! `mcp/queued` at once; its seq is its delivery id. A tool result that carries it is recorded
//! as `mcp/claimed` when the response is written. Replaying both types gives the messages
//! still owed to the model, in order: a clean restart delivers each once, and a crash after a
//! response was written but before its claim was durable delivers those messages again (at
//! least once, as `docs/event-log.md` says).
//!
//! Each `mcp/queued` records the message's subjects (what it is about: a job, a reminder
//! occurrence), which is all a task's hold and a task's completion look at; the text is never
//! searched. A record written before subjects were recorded has none: it is delivered with the
//! next tool result and never taken for a task's delivery.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use turnkit_core::{
    ContentBlock, MessageSource, Session, SessionEvent, Subject, UserMessage, lock,
};

/// Event type of a queued delivery.
pub const QUEUED_EVENT: &str = "mcp/queued";
/// Event type of a claim (deliveries that reached a tool result).
pub const CLAIMED_EVENT: &str = "mcp/claimed";
/// Event type of a supersession: owed messages a later message with the same coalescing
/// subject (a running job's notice under one key) replaced before any result carried them.
pub const SUPERSEDED_EVENT: &str = "mcp/superseded";
/// Event type of a task's delivery: its completed result reached the client through
/// `tasks/get`; the deliveries it names (possibly none) are claimed by it.
pub const TASK_DELIVERED_EVENT: &str = "mcp/taskDelivered";

/// Event type of a launch's claim: owed reminders taken by something outside the session's
/// clients (a launched agent) instead of a tool result or a task; see [`LaunchClaim`].
pub const LAUNCH_CLAIMED_EVENT: &str = "mcp/launchClaimed";

/// Which lane the plugin chose; both are delivered the same way, the lane is kept for
/// inspection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Lane {
    /// [`turnkit_core::Agent::followup`].
    Followup,
    /// [`turnkit_core::Agent::inject`].
    Inject,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueuedData {
    lane: Lane,
    source: MessageSource,
    text: String,
    /// What the message is about; absent when it is about nothing in particular, and in
    /// records written before subjects were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subjects: Vec<Subject>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimedData {
    seqs: Vec<u64>,
}

/// The payload of [`SUPERSEDED_EVENT`]: the owed seqs replaced, and the seq that replaced them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SupersededData {
    seqs: Vec<u64>,
    by: u64,
}

/// The payload of [`TASK_DELIVERED_EVENT`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct TaskDelivered {
    /// The task whose result was written.
    pub(crate) task_id: String,
    /// The `mcp/queued` seqs the result carried, in order.
    pub(crate) seqs: Vec<u64>,
    /// The texts of the result's content blocks, in order.
    pub(crate) content: Vec<String>,
    /// Whether the result is a tool error (`isError: true`); absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) is_error: bool,
}

/// A delivery kept from tool results while a task waits for it: every owed message queued
/// after seq `after` about the same thing as `subject` (see [`Subject::same_thing`]), until
/// `until` (epoch ms).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hold {
    pub(crate) task: String,
    pub(crate) subject: Subject,
    pub(crate) after: u64,
    pub(crate) until: i64,
}

impl Hold {
    fn keeps(&self, pending: &Pending, now: i64) -> bool {
        now < self.until && pending.seq > self.after && pending.message.is_about(&self.subject)
    }
}

/// Why [`Inbox::reserve_task`] refused a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskRefused {
    /// Another response not written yet carries the task or one of its messages.
    Carried,
    /// One of its messages is no longer owed.
    Stale,
}

/// What [`Inbox::commit`] recorded.
#[derive(Debug, Default)]
pub(crate) struct Committed {
    /// The messages claimed, in order.
    pub(crate) messages: Vec<UserMessage>,
    /// Their `mcp/queued` seqs, in the same order.
    pub(crate) seqs: Vec<u64>,
    /// The task delivery recorded, if the reservation was a task's.
    pub(crate) task: Option<TaskDelivered>,
}

/// A log that breaks the inbox rules; the session is not served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt inbox log at seq {seq}: {message}")]
pub struct InboxLogError {
    /// The offending event.
    pub seq: u64,
    /// What is wrong.
    pub message: String,
}

/// The payload of [`LAUNCH_CLAIMED_EVENT`] (JSON `{"launch", "seqs", "prompt"}`, unknown
/// keys refused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchClaim {
    /// The launch's id, chosen by the claimer (unique to the claim).
    pub launch: String,
    /// The `mcp/queued` seqs it took, ascending.
    pub seqs: Vec<u64>,
    /// The taken messages' texts joined by a blank line: what the launched agent is told.
    pub prompt: String,
}

/// One message owed to the model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pending {
    /// The seq of its `mcp/queued` event.
    pub(crate) seq: u64,
    pub(crate) message: UserMessage,
}

#[derive(Default)]
struct State {
    /// Owed messages, in queue order.
    pending: Vec<Pending>,
    /// Seqs attached to a response not written yet, by response key, with the task
    /// delivery the response is (none for a tool result).
    reserved: Vec<(u64, Vec<u64>, Option<TaskDelivered>)>,
    /// Deliveries waited for by tasks, kept from tool results.
    holds: Vec<Hold>,
    next_key: u64,
}

/// The queue of one session.
#[derive(Clone)]
pub(crate) struct Inbox {
    session: Arc<dyn Session>,
    state: Arc<Mutex<State>>,
}

impl Inbox {
    /// Replays the session's `mcp/*` events.
    pub(crate) fn open(session: Arc<dyn Session>) -> Result<Self, InboxLogError> {
        let pending = replay(&session.events())?;
        Ok(Self {
            session,
            state: Arc::new(Mutex::new(State {
                pending,
                ..State::default()
            })),
        })
    }

    /// Records `message` as owed and returns its seq. A message about a running job's notice
    /// ([`Subject::JobNotice`]) replaces the owed messages with the same such subject that no
    /// response carries yet: they are recorded as `mcp/superseded` (by the new seq) and
    /// forgotten, so only the latest word under one key reaches the model.
    pub(crate) fn queue(&self, lane: Lane, message: UserMessage) -> Result<u64, String> {
        let data = QueuedData {
            lane,
            source: message.source.clone(),
            text: message.joined_text(),
            subjects: message.subjects.clone(),
        };
        let value = serde_json::to_value(&data).map_err(|e| e.to_string())?;
        // The lock is held across the append so that queue order is seq order.
        let mut state = lock(&self.state);
        let event = self
            .session
            .append(QUEUED_EVENT, value)
            .map_err(|e| e.to_string())?;
        let coalescing: Vec<&Subject> = message
            .subjects
            .iter()
            .filter(|s| matches!(s, Subject::JobNotice { .. }))
            .collect();
        let replaced: Vec<u64> = if coalescing.is_empty() {
            Vec::new()
        } else {
            state
                .pending
                .iter()
                .filter(|p| !state.reserved.iter().any(|(_, s, _)| s.contains(&p.seq)))
                .filter(|p| coalescing.iter().any(|s| p.message.is_about(s)))
                .map(|p| p.seq)
                .collect()
        };
        if !replaced.is_empty() {
            let data = SupersededData {
                seqs: replaced.clone(),
                by: event.seq,
            };
            match serde_json::to_value(&data)
                .map_err(|e| e.to_string())
                .and_then(|value| {
                    self.session
                        .append(SUPERSEDED_EVENT, value)
                        .map_err(|e| e.to_string())
                }) {
                Ok(_) => state.pending.retain(|p| !replaced.contains(&p.seq)),
                // Both stay owed: the model reads the older word too.
                Err(error) => tracing::warn!("mcp: could not record a supersession: {error}"),
            }
        }
        state.pending.push(Pending {
            seq: event.seq,
            message,
        });
        Ok(event.seq)
    }

    /// Takes every owed message not attached to another response yet and not kept for a
    /// task at `now` (epoch ms), and reserves it under a fresh key until [`Inbox::commit`]
    /// or [`Inbox::release`]. Holds that lapsed by `now` are dropped (a poll of their task
    /// sets its hold again).
    pub(crate) fn reserve(&self, now: i64) -> Option<(u64, Vec<Pending>)> {
        let mut state = lock(&self.state);
        state.holds.retain(|h| now < h.until);
        let taken: Vec<Pending> = state
            .pending
            .iter()
            .filter(|p| !state.reserved.iter().any(|(_, s, _)| s.contains(&p.seq)))
            .filter(|p| !state.holds.iter().any(|h| h.keeps(p, now)))
            .cloned()
            .collect();
        if taken.is_empty() {
            return None;
        }
        state.next_key += 1;
        let key = state.next_key;
        state
            .reserved
            .push((key, taken.iter().map(|p| p.seq).collect(), None));
        Some((key, taken))
    }

    /// The first owed message queued after seq `after` about the same thing as `subject`, and
    /// whether a response not written yet carries it.
    pub(crate) fn find(&self, subject: &Subject, after: u64) -> Option<(Pending, bool)> {
        let state = lock(&self.state);
        let found = state
            .pending
            .iter()
            .find(|p| p.seq > after && p.message.is_about(subject))?;
        let reserved = state
            .reserved
            .iter()
            .any(|(_, s, _)| s.contains(&found.seq));
        Some((found.clone(), reserved))
    }

    /// Reserves `delivery` (its seqs: owed messages no other response carries) under a
    /// fresh key for the `tasks/get` response that completes its task.
    ///
    /// # Errors
    /// [`TaskRefused::Carried`] when another response carries the task or one of the seqs;
    /// [`TaskRefused::Stale`] when one of the seqs is no longer owed (another result took
    /// it): the delivery must be prepared again.
    pub(crate) fn reserve_task(&self, delivery: TaskDelivered) -> Result<u64, TaskRefused> {
        let mut state = lock(&self.state);
        let owed = delivery
            .seqs
            .iter()
            .all(|seq| state.pending.iter().any(|p| p.seq == *seq));
        if !owed {
            return Err(TaskRefused::Stale);
        }
        let carried = delivery
            .seqs
            .iter()
            .any(|seq| state.reserved.iter().any(|(_, s, _)| s.contains(seq)));
        let twice = state
            .reserved
            .iter()
            .any(|(_, _, t)| t.as_ref().is_some_and(|t| t.task_id == delivery.task_id));
        if carried || twice {
            return Err(TaskRefused::Carried);
        }
        state.next_key += 1;
        let key = state.next_key;
        state
            .reserved
            .push((key, delivery.seqs.clone(), Some(delivery)));
        Ok(key)
    }

    /// Keeps the deliveries `hold` names from tool results (replacing an earlier hold of the
    /// same task).
    pub(crate) fn hold(&self, hold: Hold) {
        let mut state = lock(&self.state);
        state.holds.retain(|h| h.task != hold.task);
        state.holds.push(hold);
    }

    /// How many holds are kept.
    pub(crate) fn holds(&self) -> usize {
        lock(&self.state).holds.len()
    }

    /// Ends the hold of `task`, if any.
    pub(crate) fn unhold(&self, task: &str) {
        lock(&self.state).holds.retain(|h| h.task != task);
    }

    /// The response carrying reservation `key` was written: appends `mcp/claimed` (or, for a
    /// task's, `mcp/taskDelivered`) and forgets the messages. The caller flushes.
    pub(crate) fn commit(&self, key: u64) -> Committed {
        let mut state = lock(&self.state);
        let Some(index) = state.reserved.iter().position(|(k, _, _)| *k == key) else {
            return Committed::default();
        };
        let (_, seqs, task) = state.reserved.remove(index);
        let (r#type, value) = match &task {
            Some(task) => (TASK_DELIVERED_EVENT, serde_json::to_value(task)),
            None => (
                CLAIMED_EVENT,
                serde_json::to_value(ClaimedData { seqs: seqs.clone() }),
            ),
        };
        let value = match value {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!("mcp: could not encode a claim: {error}");
                return Committed::default();
            }
        };
        if let Err(error) = self.session.append(r#type, value) {
            // The messages stay owed and go out again with the next result.
            tracing::warn!("mcp: could not record a claim: {error}");
            return Committed::default();
        }
        if let Some(task) = &task {
            state.holds.retain(|h| h.task != task.task_id);
        }
        let mut messages = Vec::new();
        let mut claimed = Vec::new();
        state.pending.retain(|p| {
            if seqs.contains(&p.seq) {
                messages.push(p.message.clone());
                claimed.push(p.seq);
                false
            } else {
                true
            }
        });
        Committed {
            messages,
            seqs: claimed,
            task,
        }
    }

    /// The response carrying reservation `key` was not written (the request was cancelled,
    /// or its response dropped): its messages are owed again.
    pub(crate) fn release(&self, key: u64) {
        lock(&self.state).reserved.retain(|(k, _, _)| *k != key);
    }

    /// Takes every owed reminder (a message about a [`Subject::Reminder`]) that no response
    /// carries and no task holds at `now`, for the launch `launch`: appends
    /// [`LAUNCH_CLAIMED_EVENT`] and forgets them, so no tool result or task delivers them. The
    /// caller flushes before it starts anything. `None` when there is none (or the append
    /// failed: they stay owed).
    pub(crate) fn claim_for_launch(&self, launch: &str, now: i64) -> Option<LaunchClaim> {
        let mut state = lock(&self.state);
        state.holds.retain(|h| now < h.until);
        let taken: Vec<Pending> = state
            .pending
            .iter()
            .filter(|p| {
                p.message
                    .subjects
                    .iter()
                    .any(|s| matches!(s, Subject::Reminder { .. }))
            })
            .filter(|p| !state.reserved.iter().any(|(_, s, _)| s.contains(&p.seq)))
            .filter(|p| !state.holds.iter().any(|h| h.keeps(p, now)))
            .cloned()
            .collect();
        if taken.is_empty() {
            return None;
        }
        let claim = LaunchClaim {
            launch: launch.to_owned(),
            seqs: taken.iter().map(|p| p.seq).collect(),
            prompt: taken
                .iter()
                .map(|p| p.message.joined_text())
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        let appended = serde_json::to_value(&claim)
            .map_err(|e| e.to_string())
            .and_then(|value| {
                self.session
                    .append(LAUNCH_CLAIMED_EVENT, value)
                    .map_err(|e| e.to_string())
            });
        if let Err(error) = appended {
            tracing::warn!("mcp: could not record a launch claim: {error}");
            return None;
        }
        state.pending.retain(|p| !claim.seqs.contains(&p.seq));
        Some(claim)
    }

    /// The messages owed right now (reserved ones included), in order.
    pub(crate) fn pending(&self) -> Vec<Pending> {
        lock(&self.state).pending.clone()
    }
}

/// The owed messages of a log: every `mcp/queued` not named by an `mcp/claimed`, an
/// `mcp/taskDelivered`, an `mcp/superseded` or an `mcp/launchClaimed`.
///
/// # Errors
/// [`InboxLogError`] for a payload that does not decode strictly, or a claim of a seq that
/// is not an owed `mcp/queued` event.
pub(crate) fn replay(events: &[SessionEvent]) -> Result<Vec<Pending>, InboxLogError> {
    let mut pending: Vec<Pending> = Vec::new();
    for event in events {
        match event.r#type.as_str() {
            QUEUED_EVENT => {
                let data: QueuedData =
                    serde_json::from_value(event.data.clone()).map_err(|e| InboxLogError {
                        seq: event.seq,
                        message: e.to_string(),
                    })?;
                let message = UserMessage {
                    id: format!("mcp-{}", event.seq),
                    content: vec![ContentBlock::text(data.text)],
                    source: data.source,
                    subjects: data.subjects,
                };
                pending.push(Pending {
                    seq: event.seq,
                    message,
                });
            }
            CLAIMED_EVENT | TASK_DELIVERED_EVENT | SUPERSEDED_EVENT | LAUNCH_CLAIMED_EVENT => {
                let seqs = if event.r#type == SUPERSEDED_EVENT {
                    decode::<SupersededData>(event)?.seqs
                } else if event.r#type == LAUNCH_CLAIMED_EVENT {
                    decode::<LaunchClaim>(event)?.seqs
                } else if event.r#type == CLAIMED_EVENT {
                    let data: ClaimedData = decode(event)?;
                    if data.seqs.is_empty() {
                        return Err(InboxLogError {
                            seq: event.seq,
                            message: "a claim names no delivery".to_owned(),
                        });
                    }
                    data.seqs
                } else {
                    decode::<TaskDelivered>(event)?.seqs
                };
                for seq in seqs {
                    let Some(index) = pending.iter().position(|p| p.seq == seq) else {
                        return Err(InboxLogError {
                            seq: event.seq,
                            message: format!("seq {seq} is not an unclaimed {QUEUED_EVENT}"),
                        });
                    };
                    pending.remove(index);
                }
            }
            _ => {}
        }
    }
    Ok(pending)
}

/// The payload of `event`, decoded strictly.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    event: &SessionEvent,
) -> Result<T, InboxLogError> {
    serde_json::from_value(event.data.clone()).map_err(|e| InboxLogError {
        seq: event.seq,
        message: e.to_string(),
    })
}

#[cfg(test)]
#[path = "inbox_tests.rs"]
mod tests;
