//! The todo vocabulary: [`TodoStatus`], [`TodoItem`], [`TodoCounts`] and the canonical tool
//! value [`TodoWriteValue`] (todo-jobs §1.6, §2.2).
//!
//! Decoding is exactly as strict as the JSON Schema: serde's derived impls would also accept
//! a struct written as a JSON array (`["a","pending"]`) and a unit variant written as a map
//! (`{"pending":null}`), so the public types decode through [`only_map`] and a string-only
//! status visitor.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The status of one todo. Serialized as `pending`, `in_progress` or `completed`; the schema
/// lists them in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Finished.
    Completed,
}

impl TodoStatus {
    /// Every status, in schema order.
    pub const ALL: [TodoStatus; 3] = [
        TodoStatus::Pending,
        TodoStatus::InProgress,
        TodoStatus::Completed,
    ];

    /// The wire name: `pending`, `in_progress` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }

    /// The status named `name` (exact, case-sensitive), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl<'de> Deserialize<'de> for TodoStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StatusVisitor;
        impl Visitor<'_> for StatusVisitor {
            type Value = TodoStatus;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one of \"pending\", \"in_progress\", \"completed\"")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<TodoStatus, E> {
                TodoStatus::from_name(name).ok_or_else(|| {
                    E::unknown_variant(name, &["pending", "in_progress", "completed"])
                })
            }
        }
        deserializer.deserialize_str(StatusVisitor)
    }
}

/// Decodes `T` (a derived, field-by-name representation) only from a map, never from a
/// sequence.
pub(crate) fn only_map<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct MapOnly<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for MapOnly<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    deserializer.deserialize_map(MapOnly(PhantomData))
}

/// One entry of a todo list: `{content, status}`, a closed object.
///
/// As a tool argument `content` may carry surrounding whitespace; in a `todo/write` event, in
/// the canonical value and in the `todos` projection it is trimmed and non-empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TodoItem {
    /// What the task is — a short imperative line.
    pub content: String,
    /// Its status.
    pub status: TodoStatus,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoItemRepr {
    content: String,
    status: TodoStatus,
}

impl<'de> Deserialize<'de> for TodoItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let TodoItemRepr { content, status } = only_map(deserializer)?;
        Ok(Self { content, status })
    }
}

impl TodoItem {
    /// An item with this content and status.
    pub fn new(content: impl Into<String>, status: TodoStatus) -> Self {
        Self {
            content: content.into(),
            status,
        }
    }
}

/// How many items of a list have each status. Serialized as
/// `{"pending":n,"inProgress":n,"completed":n}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TodoCounts {
    /// Items with status `pending`.
    pub pending: u64,
    /// Items with status `in_progress`.
    pub in_progress: u64,
    /// Items with status `completed`.
    pub completed: u64,
}

impl TodoCounts {
    /// Counts the statuses of `items`.
    pub fn of(items: &[TodoItem]) -> Self {
        let mut counts = Self::default();
        for item in items {
            match item.status {
                TodoStatus::Pending => counts.pending += 1,
                TodoStatus::InProgress => counts.in_progress += 1,
                TodoStatus::Completed => counts.completed += 1,
            }
        }
        counts
    }

    /// The rendered tool text (exact, todo-jobs §2.2):
    /// `Updated todo list: <pending> pending, <inProgress> in progress, <completed> completed.`
    pub fn render(&self) -> String {
        format!(
            "Updated todo list: {} pending, {} in progress, {} completed.",
            self.pending, self.in_progress, self.completed
        )
    }
}

/// The canonical value of a successful `todo_write` (todo-jobs §2.2):
/// `{"todos":[{content,status}…],"counts":{pending,inProgress,completed}}`, with the trimmed
/// list and counts computed from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteValue {
    /// The trimmed list, as logged.
    pub todos: Vec<TodoItem>,
    /// Status counts of `todos`.
    pub counts: TodoCounts,
}

impl TodoWriteValue {
    /// The value for a validated, trimmed list.
    pub fn new(todos: Vec<TodoItem>) -> Self {
        let counts = TodoCounts::of(&todos);
        Self { todos, counts }
    }
}
