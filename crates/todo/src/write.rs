//! The `todo_write` algorithm (todo-jobs §2.3): trim, validate in the spec's order, append
//! `todo/write`, build the canonical value; and the [`TodoWriteTool`] that runs it for a host.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_core::{
    Session, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, decode_arguments, js_trim,
};

use crate::item::only_map;
use crate::{InProgressPolicy, TodoError, TodoItem, TodoStatus, TodoWriteValue};

/// The event type every successful call appends (todo-jobs §1.6).
pub const TODO_WRITE_EVENT: &str = "todo/write";

/// The arguments of `todo_write`. The root is open (unknown top-level keys are ignored), the
/// items are closed: the same acceptance as [`crate::input_schema`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct TodoWriteArgs {
    /// The complete list, untrimmed as the model sent it.
    pub(crate) todos: Vec<TodoItem>,
}

/// The field-by-name shape shared by [`TodoWriteArgs`] and [`TodoWriteEvent`]; open.
#[derive(Deserialize)]
struct TodosRepr {
    todos: Vec<TodoItem>,
}

impl<'de> Deserialize<'de> for TodoWriteArgs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let TodosRepr { todos } = only_map(deserializer)?;
        Ok(Self { todos })
    }
}

impl<'de> Deserialize<'de> for TodoWriteEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let TodosRepr { todos } = only_map(deserializer)?;
        Ok(Self { todos })
    }
}

/// The payload of a `todo/write` event: `{"todos":[{content,status}…]}`, the whole trimmed
/// list (todo-jobs §1.6). Decoding it is strict: closed items, known statuses (other
/// top-level keys are ignored).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct TodoWriteEvent {
    /// The whole list.
    pub(crate) todos: Vec<TodoItem>,
}

/// Steps 1 and 2 of todo-jobs §2.3: trims every item's content (JavaScript `trim`,
/// decision 3), then checks, item by item, non-empty content and no duplicate of an earlier
/// item (exact, case-sensitive, after trimming), and finally, under
/// [`InProgressPolicy::Single`], at most one `in_progress` item. Returns the trimmed list.
///
/// # Errors
/// The first failure, in that order: [`TodoError::EmptyContent`],
/// [`TodoError::DuplicateContent`], [`TodoError::TooManyInProgress`].
pub(crate) fn validate_todos(
    mut todos: Vec<TodoItem>,
    policy: InProgressPolicy,
) -> Result<Vec<TodoItem>, TodoError> {
    for item in &mut todos {
        let trimmed = js_trim(&item.content);
        if trimmed.len() != item.content.len() {
            item.content = trimmed.to_owned();
        }
    }
    let mut seen: HashSet<&str> = HashSet::with_capacity(todos.len());
    let mut in_progress = 0usize;
    for item in &todos {
        if item.content.is_empty() {
            return Err(TodoError::EmptyContent);
        }
        if !seen.insert(item.content.as_str()) {
            return Err(TodoError::DuplicateContent(item.content.clone()));
        }
        if item.status == TodoStatus::InProgress {
            in_progress += 1;
        }
    }
    if policy == InProgressPolicy::Single && in_progress > 1 {
        return Err(TodoError::TooManyInProgress(in_progress));
    }
    Ok(todos)
}

/// The `todo_write` tool (todo-jobs §2.2–§2.4). Register it with
/// [`turnkit_core::Harness::register_tool`] (or let [`crate::install`] do it).
#[derive(Clone, Debug)]
pub struct TodoWriteTool {
    policy: InProgressPolicy,
    definition: ToolDefinition,
}

impl TodoWriteTool {
    /// The tool for a policy, with its exact description and schema.
    pub fn new(policy: InProgressPolicy) -> Self {
        Self {
            policy,
            definition: crate::definition(policy),
        }
    }

    /// The body of the tool on raw arguments: decode, validate (§2.3 steps 1–2), require a
    /// session (step 3), append `todo/write` with the trimmed list (step 4), and return the
    /// canonical value (step 5). `session` is the calling agent's session, `None` for a call
    /// without an agent. Never panics on any `arguments`; on error nothing is appended.
    ///
    /// # Errors
    /// [`TodoError`], whose `Display` is the spec's exact message.
    pub fn execute(
        &self,
        arguments: &Value,
        session: Option<&dyn Session>,
    ) -> Result<TodoWriteValue, TodoError> {
        let args: TodoWriteArgs = decode_arguments(arguments)?;
        let todos = validate_todos(args.todos, self.policy)?;
        let session = session.ok_or(TodoError::NoAgent)?;
        let value = TodoWriteValue::new(todos);
        let payload = serde_json::json!({ "todos": todos_json(&value.todos) });
        session.append(TODO_WRITE_EVENT, payload)?;
        Ok(value)
    }

    /// [`TodoWriteTool::execute`] rendered as a tool result: the canonical value and the text
    /// `Updated todo list: …`, or the `Error: <message>` envelope.
    pub fn run(&self, arguments: &Value, session: Option<&dyn Session>) -> ToolOutput {
        match self.execute(arguments, session) {
            Ok(value) => success_output(&value),
            Err(error) => ToolOutput::error(error),
        }
    }
}

/// The JSON of a list, built directly (infallible, unlike `serde_json::to_value`).
pub(crate) fn todos_json(todos: &[TodoItem]) -> Value {
    Value::Array(
        todos
            .iter()
            .map(|item| {
                serde_json::json!({ "content": item.content, "status": item.status.as_str() })
            })
            .collect(),
    )
}

fn success_output(value: &TodoWriteValue) -> ToolOutput {
    let counts = value.counts;
    let json = serde_json::json!({
        "todos": todos_json(&value.todos),
        "counts": {
            "pending": counts.pending,
            "inProgress": counts.in_progress,
            "completed": counts.completed,
        },
    });
    ToolOutput::success(json, counts.render())
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Runs [`TodoWriteTool::execute`] inside a `plan` span (OpenTelemetry GenAI conventions,
    /// exported as `plan {gen_ai.agent.name}`, or `plan` for a call without an agent):
    /// `gen_ai.operation.name` (`plan`), `gen_ai.agent.name` (the calling agent's id, absent
    /// without one) and, when the write is refused, `error.type` (`tool_error`). It nests
    /// under the call's `execute_tool` span (docs/observability.md).
    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let agent = call.caller.as_ref().map(|agent| agent.id().as_str());
        let span = tracing::info_span!(
            "plan",
            "otel.name" = %agent.map_or_else(|| "plan".to_owned(), |id| format!("plan {id}")),
            "gen_ai.operation.name" = "plan",
            "gen_ai.agent.name" = agent,
            "error.type" = tracing::field::Empty,
        );
        let session: Option<Arc<dyn Session>> = call.caller.as_ref().map(|agent| agent.session());
        span.in_scope(|| self.execute(&call.arguments, session.as_deref()))
            .map(|value| success_output(&value))
            .map_err(|error| {
                span.record("error.type", "tool_error");
                ToolError::msg(error.to_string())
            })
    }

    fn present_call(&self, arguments: &Value) -> Option<Value> {
        serde_json::to_value(present_call(arguments)).ok()
    }
}

/// What a UI shows for a `todo_write` call (todo-jobs §2.2 `presentCall`):
/// `{"card":"generic","title":"Update todo list","kind":"other","rawInput":<todos as given>}`.
/// `rawInput` is the `todos` argument unvalidated (`null` when absent); never fails.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallCard {
    /// Always `generic`.
    pub card: &'static str,
    /// Always `Update todo list`.
    pub title: &'static str,
    /// Always `other`.
    pub kind: &'static str,
    /// The `todos` argument exactly as given.
    pub raw_input: Value,
}

/// The UI card for a `todo_write` call's arguments (C-019). Validates nothing.
pub fn present_call(arguments: &Value) -> CallCard {
    CallCard {
        card: "generic",
        title: "Update todo list",
        kind: "other",
        raw_input: arguments.get("todos").cloned().unwrap_or(Value::Null),
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
