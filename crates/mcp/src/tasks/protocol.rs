//! The protocol values of tasks (SEP-2663 shapes through rmcp's `model::task`), shared by
//! every transport.

use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, MetaObject, Task, TaskPayload,
    TaskStatus,
};
use serde_json::{Value, json};

use super::{Entry, TaskState, TaskView};

/// The `_meta` key under which Claude Code reads the text it shows the model at once.
pub(crate) const AGENT_TASK_META: &str = "com.anthropic/agent-task";

fn task(entry: &Entry, status: TaskStatus, updated_at: &str, poll_ms: u64) -> Task {
    Task::new(
        entry.id.clone(),
        status,
        entry.created_at.clone(),
        updated_at,
    )
    .with_ttl_ms(entry.ttl_ms)
    .with_poll_interval_ms(poll_ms)
}

/// The answer to the `tools/call` that opened `entry`: the task, working, with `immediate`
/// (the tool's own result text) as `_meta["com.anthropic/agent-task"].modelImmediateResponse`.
pub(crate) fn created(entry: &Entry, immediate: &str) -> CreateTaskResult {
    let mut meta = MetaObject::new();
    meta.insert(
        AGENT_TASK_META.to_owned(),
        json!({"modelImmediateResponse": immediate}),
    );
    CreateTaskResult::new(task(
        entry,
        TaskStatus::Working,
        &entry.created_at,
        entry.poll_ms,
    ))
    .with_meta(meta)
}

/// The `tasks/get` answer of `view` at `now` (RFC 3339): a completed task's result is a tool
/// result with one text block per text, `isError` as the result was (a tool error is a
/// completed task, never a failed one).
pub(crate) fn get_result(view: &TaskView, now: &str) -> GetTaskResult {
    let entry = &view.entry;
    let (payload, updated_at) = match &view.state {
        TaskState::Working => (TaskPayload::Working, entry.created_at.as_str()),
        TaskState::Cancelled => (TaskPayload::Cancelled, now),
        TaskState::Completed(completion) => {
            let content: Vec<Value> = completion
                .content
                .iter()
                .map(|text| json!({"type": "text", "text": text}))
                .collect();
            let mut result = JsonObject::new();
            result.insert("content".to_owned(), Value::Array(content));
            result.insert("isError".to_owned(), Value::Bool(completion.is_error));
            result.insert("resultType".to_owned(), json!("complete"));
            (TaskPayload::Completed { result }, now)
        }
    };
    let task = task(entry, TaskStatus::Working, updated_at, view.poll_ms);
    GetTaskResult::new(DetailedTask::new(task, payload))
}
