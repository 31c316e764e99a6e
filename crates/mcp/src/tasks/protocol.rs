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

/// The `clientInfo.name` of Claude Code, the one client known to read
/// [`AGENT_TASK_META`].
pub(crate) const AGENT_TASK_CLIENT: &str = "claude-code";

/// Whether the client `info` (the request's `clientInfo`, or the handshake's) reads
/// [`AGENT_TASK_META`] and shows it to the model: Claude Code only. Messages owed to the
/// model ride a `CreateTaskResult` only for such a client; for any other they stay owed to
/// the next tool result or poll, since nothing in the extension tells a client to show a
/// task's `_meta` to anyone.
pub(crate) fn reads_agent_task_meta(info: Option<&rmcp::model::Implementation>) -> bool {
    info.is_some_and(|info| info.name == AGENT_TASK_CLIENT)
}

/// The text a `CreateTaskResult` shows the model at once: the blocks of `output` joined by
/// blank lines, without its last `owed` blocks (owed messages it does not carry).
pub(crate) fn immediate(output: &turnkit_core::ToolOutput, owed: usize) -> String {
    let shown = output.content.len().saturating_sub(owed);
    let texts: Vec<&str> = output.content[..shown]
        .iter()
        .map(|block| block.as_text())
        .collect();
    texts.join("\n\n")
}

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
