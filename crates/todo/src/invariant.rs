//! The invariant check of todo-jobs §2.6: every `todo/write` event in a log must hold a
//! coherent list. Used by `harness log` to flag a bad log and by hosts that veto appends.
//!
//! Deliberately silent about how many items are `in_progress`, so a log written under
//! `allowParallelInProgress: true` still passes under `false`. Extra keys in an entry are not
//! checked either (the spec lists no such failure).

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;
use turnkit_core::{RawEvent, SessionEvent, js_trim};

use crate::TodoStatus;
use crate::error::json_quote;
use crate::item::only_map;
use crate::write::TODO_WRITE_EVENT;

/// A `todo/write` event that breaks the invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("event {seq}: {message}")]
pub struct InvariantViolation {
    /// The seq of the offending event.
    pub seq: u64,
    /// The spec's message, e.g. `todo/write repeats content "same"`.
    pub message: String,
}

/// Checks one `todo/write` payload (`data`, the whole event payload `{"todos":[…]}`).
/// Failures, in evaluation order (todo-jobs §2.6), entries checked one after another:
///
/// - `data.todos` is not an array → `todo/write todos must be an array`
/// - an entry is not an object → `todo/write entries must be objects`
/// - its `content` is not a string, is empty, or is not already trimmed →
///   `todo/write content must be non-empty and already trimmed`
/// - its `content` repeats an earlier entry's → `todo/write repeats content "<content>"`
///   (JSON-quoted)
/// - its `status` is not one of the three → `todo/write carries unknown status <JSON>`, e.g.
///   `42` or `"paused"`; a missing status prints `undefined`, as the spec's `JSON.stringify`
///   does.
///
/// # Errors
/// [`IncoherentWrite`] with the first failure's exact message.
pub(crate) fn check_todo_write(data: &Value) -> Result<(), IncoherentWrite> {
    check_entries(data).map_err(IncoherentWrite)
}

/// A `todo/write` payload that breaks the invariant; the text is the spec's message (todo-jobs
/// §2.6), e.g. `todo/write repeats content "same"`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IncoherentWrite(pub String);

fn check_entries(data: &Value) -> Result<(), String> {
    let Some(entries) = data.get("todos").and_then(Value::as_array) else {
        return Err("todo/write todos must be an array".to_owned());
    };
    let mut seen: HashSet<&str> = HashSet::with_capacity(entries.len());
    for entry in entries {
        let Some(entry) = entry.as_object() else {
            return Err("todo/write entries must be objects".to_owned());
        };
        let content = match entry.get("content") {
            Some(Value::String(content)) if !content.is_empty() && js_trim(content) == content => {
                content.as_str()
            }
            _ => return Err("todo/write content must be non-empty and already trimmed".to_owned()),
        };
        if !seen.insert(content) {
            return Err(format!(
                "todo/write repeats content {}",
                json_quote(content)
            ));
        }
        let status = entry.get("status");
        let known = status
            .and_then(Value::as_str)
            .is_some_and(|name| TodoStatus::from_name(name).is_some());
        if !known {
            let shown = status.map_or_else(|| "undefined".to_owned(), Value::to_string);
            return Err(format!("todo/write carries unknown status {shown}"));
        }
    }
    Ok(())
}

/// Checks one event. Events of any other type pass.
///
/// # Errors
/// [`InvariantViolation`] for an incoherent `todo/write` payload.
pub fn check_event(event: &SessionEvent) -> Result<(), InvariantViolation> {
    if event.r#type != TODO_WRITE_EVENT {
        return Ok(());
    }
    check_todo_write(&event.data).map_err(|IncoherentWrite(message)| InvariantViolation {
        seq: event.seq,
        message,
    })
}

/// [`check_event`] for an event in the log's own form: a coherent payload is checked straight
/// from its raw JSON; anything else is decided by [`check_event`] on the decoded event, so
/// every message is the same.
///
/// # Errors
/// As [`check_event`].
pub fn check_raw_event(event: &RawEvent) -> Result<(), InvariantViolation> {
    if event.r#type() != TODO_WRITE_EVENT {
        return Ok(());
    }
    let entries =
        crate::projection::canonical_entries(event.payload()).collect::<Result<Vec<_>, ()>>();
    let coherent = match entries.ok() {
        Some(entries) => coherent(entries.iter().copied()),
        None => event
            .decode::<RawTodos<'_>>()
            .is_ok_and(|payload| coherent(payload.todos.iter().map(|e| (e.content, e.status)))),
    };
    if coherent {
        Ok(())
    } else {
        check_event(&event.to_event())
    }
}

/// A `todo/write` payload's list, borrowed (an object; strings without escapes; each key
/// once).
struct RawTodos<'a> {
    todos: Vec<RawEntry<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RawTodos<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields<'a> {
            #[serde(borrow)]
            todos: Vec<RawEntry<'a>>,
        }
        let Fields { todos } = only_map(deserializer)?;
        Ok(RawTodos { todos })
    }
}

/// One entry, which must be an object (see [`only_map`]); other keys are ignored.
struct RawEntry<'a> {
    content: &'a str,
    status: &'a str,
}

impl<'de: 'a, 'a> Deserialize<'de> for RawEntry<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields<'a> {
            content: &'a str,
            status: &'a str,
        }
        let Fields { content, status } = only_map(deserializer)?;
        Ok(RawEntry { content, status })
    }
}

/// What [`check_todo_write`] accepts, for an already-decoded list of `(content, status)`.
fn coherent<'a>(entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>) -> bool {
    let mut seen: HashSet<&str> = HashSet::with_capacity(entries.len());
    let mut entries = entries;
    entries.all(|(content, status)| {
        !content.is_empty()
            && js_trim(content) == content
            && seen.insert(content)
            && TodoStatus::from_name(status).is_some()
    })
}

/// Checks a session's whole history, stopping at the first violation (what installing the
/// spec's invariant companion does: a bad existing snapshot fails the install).
///
/// # Errors
/// The first [`InvariantViolation`] in log order.
pub fn check_history<'a>(
    events: impl IntoIterator<Item = &'a SessionEvent>,
) -> Result<(), InvariantViolation> {
    events.into_iter().try_for_each(check_event)
}

/// Every violation in a session's history, in log order (for `harness log`, which flags all
/// bad events rather than the first).
pub fn find_violations<'a>(
    events: impl IntoIterator<Item = &'a SessionEvent>,
) -> Vec<InvariantViolation> {
    events
        .into_iter()
        .filter_map(|event| check_event(event).err())
        .collect()
}

#[cfg(test)]
#[path = "invariant_tests.rs"]
mod tests;
