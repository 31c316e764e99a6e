//! The `todos` session projection (todo-jobs §2.5): the standing plan of a session.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use turnkit_core::{Projection, ProjectionState, RawEvent, SessionEvent};

use crate::write::TodoWriteEvent;
use crate::write::{TODO_WRITE_EVENT, todos_json};
use crate::{TodoItem, TodoStatus};

/// The projection key (exact).
pub const TODOS_KEY: &str = "todos";

/// The state version the spec publishes for this unit (todo-jobs §2.5).
pub const TODOS_STATE_VERSION: u32 = 2;

/// The event type that clears the plan.
const TURN_START_EVENT: &str = "turn/start";

/// The folded state: `None` before any write and after `turn/start`, else the last written
/// list (an empty list is a real state, distinct from `None`). Read it out of the type-erased
/// [`ProjectionState`] with [`TodosProjection::state`].
pub type TodosState = Option<Arc<[TodoItem]>>;

/// What this projection keeps inside its [`ProjectionState`]: `None`, or the current list.
type Stored = Option<TodoList>;

/// The current list. On the replay path a `todo/write` in the tool's own form is checked where
/// it lies and kept as its event (a shared range of the log's text, no copy); its items are
/// decoded the first time someone reads them, once. So a replay that passes over many writes
/// builds the items of the last one only.
struct TodoList {
    /// The `todo/write` event the list was checked in, when it was kept undecoded.
    raw: Option<RawEvent>,
    items: OnceLock<Arc<[TodoItem]>>,
}

impl TodoList {
    fn decoded(items: Arc<[TodoItem]>) -> Self {
        Self {
            raw: None,
            items: OnceLock::from(items),
        }
    }

    /// A list kept as `event`, whose payload [`canonical_entries`] accepted and whose every
    /// status is a status name.
    fn checked(event: &RawEvent) -> Self {
        Self {
            raw: Some(event.clone()),
            items: OnceLock::new(),
        }
    }

    fn items(&self) -> Arc<[TodoItem]> {
        Arc::clone(self.items.get_or_init(|| {
            let payload = self.raw.as_ref().map_or("", RawEvent::payload);
            // `checked` saw every entry parse and every status name: nothing is dropped here.
            canonical_entries(payload)
                .filter_map(|entry| {
                    let (content, status) = entry.ok()?;
                    Some(TodoItem::new(content, TodoStatus::from_name(status)?))
                })
                .collect()
        }))
    }
}

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
        stored(state).map(TodoList::items)
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
        Arc::new(None::<TodoList>)
    }

    fn apply(&self, state: &ProjectionState, event: &SessionEvent) -> Option<ProjectionState> {
        // Decide on the event type first, so unrelated events cost one string compare.
        match event.r#type.as_str() {
            TODO_WRITE_EVENT => {
                // The transition of a write does not depend on the current list.
                let next = Self::transition(&None, event)?;
                Some(Arc::new(next.map(TodoList::decoded)))
            }
            TURN_START_EVENT if stored(state).is_some() => Some(Arc::new(None::<TodoList>)),
            _ => None,
        }
    }

    /// The replay path: the same transition as [`Projection::apply`], with a `todo/write`
    /// payload decoded straight from its raw JSON into the typed list. A payload that does not
    /// decode that way takes the `Value` path of [`TodosProjection::transition`], which decides
    /// it exactly as `apply` does (its warning text included).
    fn apply_raw(&self, state: &ProjectionState, event: &RawEvent) -> Option<ProjectionState> {
        match event.r#type() {
            TODO_WRITE_EVENT if is_canonical(event.payload()) => {
                Some(Arc::new(Some(TodoList::checked(event))))
            }
            TODO_WRITE_EVENT => match event.decode::<TodoWriteEvent>() {
                Ok(payload) => Some(Arc::new(Some(TodoList::decoded(payload.todos.into())))),
                Err(_) => self.apply(state, &event.to_event()),
            },
            TURN_START_EVENT if stored(state).is_some() => Some(Arc::new(None::<TodoList>)),
            _ => None,
        }
    }

    fn view(&self, state: &ProjectionState) -> Value {
        Self::view_of(&Self::state(state))
    }
}

/// The list kept in `state`, if this projection made it and it holds one.
fn stored(state: &ProjectionState) -> Option<&TodoList> {
    state.downcast_ref::<Stored>()?.as_ref()
}

/// Whether a `todo/write` payload is in exactly the form the tool writes and decodes as
/// [`TodoWriteEvent`] does: every entry reads by position ([`canonical_entries`]) and every
/// status is a status name. Allocates nothing.
fn is_canonical(text: &str) -> bool {
    canonical_entries(text)
        .all(|entry| entry.is_ok_and(|(_, status)| TodoStatus::from_name(status).is_some()))
}

/// The `(content, status)` strings of a `todo/write` payload in exactly the form the tool
/// writes (`{"todos":[{"content":…,"status":…}…]}`, no whitespace, strings without escapes),
/// read by position; the strings are then their values. The iterator yields `Err(())` once and
/// stops at the first byte that is not in that form, so a payload is in the form exactly when
/// no item is an error.
pub(crate) fn canonical_entries(text: &str) -> CanonicalEntries<'_> {
    CanonicalEntries(match text.strip_prefix("{\"todos\":[") {
        Some(rest) => Place::First(rest),
        None => Place::NotInForm,
    })
}

/// The iterator of [`canonical_entries`].
pub(crate) struct CanonicalEntries<'a>(Place<'a>);

/// Where a [`CanonicalEntries`] stands.
enum Place<'a> {
    /// Before the first entry, with the text after `{"todos":[`.
    First(&'a str),
    /// After an entry, with the text after its `}`.
    After(&'a str),
    /// The text lacks the `{"todos":[` prefix; the error is yet to be yielded.
    NotInForm,
    /// Finished, or the error was yielded.
    Done,
}

impl<'a> Iterator for CanonicalEntries<'a> {
    type Item = Result<(&'a str, &'a str), ()>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = match std::mem::replace(&mut self.0, Place::Done) {
            Place::Done => return None,
            Place::NotInForm => return Some(Err(())),
            Place::First("]}") | Place::After("]}") => return None,
            Place::First(rest) => Some(rest),
            Place::After(rest) => rest.strip_prefix(','),
        };
        let entry = rest.and_then(|rest| {
            let (content, after) = string_body(rest.strip_prefix("{\"content\":\"")?)?;
            let (status, after) = string_body(after.strip_prefix(",\"status\":\"")?)?;
            Some((content, status, after.strip_prefix('}')?))
        });
        Some(match entry {
            Some((content, status, after)) => {
                self.0 = Place::After(after);
                Ok((content, status))
            }
            None => Err(()),
        })
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
