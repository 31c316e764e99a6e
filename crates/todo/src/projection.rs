//! The `todos` session projection (todo-jobs §2.5): the standing plan of a session.

use std::sync::Arc;

use harness_core::{Projection, ProjectionState, RawEvent, SessionEvent};
use serde::Deserialize;
use serde_json::Value;

use crate::write::TodoWriteEvent;
use crate::write::{TODO_WRITE_EVENT, todos_json};
use crate::{TodoItem, TodoStatus};

/// The projection key (exact).
pub const TODOS_KEY: &str = "todos";

/// The state version upstream publishes for this unit (todo-jobs §2.5).
pub const TODOS_STATE_VERSION: u32 = 2;

/// The event type that clears the plan.
const TURN_START_EVENT: &str = "turn/start";

/// The folded state: `None` before any write and after `turn/start`, else the last written
/// list (an empty list is a real state, distinct from `None`). Stored inside the
/// type-erased [`ProjectionState`]; read it with [`TodosProjection::state`].
pub type TodosState = Option<Arc<[TodoItem]>>;

/// The `todos` projection unit:
///
/// | event | new state |
/// |---|---|
/// | `todo/write` | the event's whole list |
/// | `turn/start` | `null` |
/// | anything else (`turn/end` included) | unchanged: `apply` returns `None`, nothing is cloned |
///
/// The view is the state itself: `null` or `[{"content":…,"status":…}…]`.
///
/// A `todo/write` whose payload is not a valid list (only a hand-edited or foreign log can
/// hold one; [`crate::check_event`] flags it) leaves the state unchanged and logs a
/// `tracing::warn!`, so a bad log never panics a fold.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodosProjection;

impl TodosProjection {
    /// Reads the typed state out of a [`ProjectionState`] made by this projection. Any other
    /// state reads as `None`.
    pub fn state(state: &ProjectionState) -> TodosState {
        state.downcast_ref::<TodosState>().cloned().flatten()
    }

    /// The view of a typed state: `null` or the list as JSON.
    pub fn view_of(state: &TodosState) -> Value {
        match state {
            None => Value::Null,
            Some(todos) => todos_json(todos),
        }
    }

    /// The typed transition: `Some(new state)` when `event` changes the state, `None` when
    /// it leaves `current` as is (todo-jobs §2.5).
    pub fn transition(current: &TodosState, event: &SessionEvent) -> Option<TodosState> {
        match event.r#type.as_str() {
            TODO_WRITE_EVENT => match TodoWriteEvent::deserialize(&event.data) {
                Ok(payload) => Some(Some(payload.todos.into())),
                Err(error) => {
                    tracing::warn!(
                        seq = event.seq,
                        "todos projection: ignoring malformed todo/write event: {error}"
                    );
                    None
                }
            },
            TURN_START_EVENT if current.is_some() => Some(None),
            _ => None,
        }
    }
}

impl Projection for TodosProjection {
    fn key(&self) -> &str {
        TODOS_KEY
    }

    fn init(&self) -> ProjectionState {
        Arc::new(None::<Arc<[TodoItem]>>)
    }

    fn apply(&self, state: &ProjectionState, event: &SessionEvent) -> Option<ProjectionState> {
        // Decide on the event type first, so unrelated events cost one string compare.
        if event.r#type != TODO_WRITE_EVENT && event.r#type != TURN_START_EVENT {
            return None;
        }
        let current = Self::state(state);
        Self::transition(&current, event).map(|next| Arc::new(next) as ProjectionState)
    }

    /// The replay path: the same transition as [`Projection::apply`], with a `todo/write`
    /// payload decoded straight from its raw JSON into the typed list. A payload that does not
    /// decode that way takes the `Value` path of [`TodosProjection::transition`], which decides
    /// it exactly as `apply` does (its warning text included).
    fn apply_raw(&self, state: &ProjectionState, event: &RawEvent) -> Option<ProjectionState> {
        match event.r#type() {
            TODO_WRITE_EVENT => {
                match canonical_todos(event.payload())
                    .map_or_else(|| event.decode::<TodoWriteEvent>().map(|p| p.todos), Ok)
                {
                    Ok(todos) => Some(Arc::new(Some(Arc::<[TodoItem]>::from(todos)))),
                    Err(_) => self.apply(state, &event.to_event()),
                }
            }
            TURN_START_EVENT if Self::state(state).is_some() => {
                Some(Arc::new(None::<Arc<[TodoItem]>>))
            }
            _ => None,
        }
    }

    fn view(&self, state: &ProjectionState) -> Value {
        Self::view_of(&Self::state(state))
    }
}

/// A `todo/write` payload in exactly the form the tool writes, as the typed list
/// [`TodoWriteEvent`] decodes from it; `None` for any other text (see
/// [`canonical_entries`]), which the serde decoder then reads.
fn canonical_todos(text: &str) -> Option<Vec<TodoItem>> {
    canonical_entries(text)?
        .into_iter()
        .map(|(content, status)| Some(TodoItem::new(content, TodoStatus::from_name(status)?)))
        .collect()
}

/// The `(content, status)` strings of a `todo/write` payload in exactly the form the tool
/// writes (`{"todos":[{"content":…,"status":…}…]}`, no whitespace, strings without escapes),
/// read by position; `None` for any other text. The strings are then their values.
pub(crate) fn canonical_entries(text: &str) -> Option<Vec<(&str, &str)>> {
    let mut rest = text.strip_prefix("{\"todos\":[")?;
    let mut entries = Vec::new();
    if let Some(end) = rest.strip_prefix("]}") {
        return end.is_empty().then_some(entries);
    }
    loop {
        let (content, after) = string_body(rest.strip_prefix("{\"content\":\"")?)?;
        let (status, after) = string_body(after.strip_prefix(",\"status\":\"")?)?;
        entries.push((content, status));
        let after = after.strip_prefix('}')?;
        match after.strip_prefix(',') {
            Some(next) => rest = next,
            None => return (after == "]}").then_some(entries),
        }
    }
}

/// A string's body up to its closing quote, and the text after that quote; `None` if the body
/// holds an escape or a control character.
fn string_body(text: &str) -> Option<(&str, &str)> {
    let end = text
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
    (text.as_bytes()[end] == b'"').then(|| (&text[..end], &text[end + 1..]))
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "projection_text_tests.rs"]
mod text_tests;
