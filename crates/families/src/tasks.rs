//! The task targets the families declare, next to their resources: which tool result opens a
//! client's task and what the task waits for (a [`Subject`]), which call's wait may move to a
//! task, a job's final output and how a job's task is cancelled. A server that offers tasks
//! (the MCP server) asks these and names no tool: the job tools answer for every job kind
//! (`turnkit-tool-jobs`), the schedule family for reminders.

use serde_json::Value;
use turnkit_core::{AgentId, Subject, ToolOutput};
use turnkit_jobs::{JobId, JobRegistry};

/// What the result of a tool call asks a task to wait for: the subject of the message that
/// completes it (a reminder's occurrence is its first due instant).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskTarget {
    /// A job's ([`Subject::Job`]) or a reminder occurrence's ([`Subject::Reminder`]).
    pub subject: Subject,
}

/// The task a successful result `output` of tool `tool` opens, if any: the job it started in
/// the background (any job kind: `{"kind":"background","jobId":…}`), or the reminder it
/// created (the schedule family's create tool: its id and first due instant). `None` for an
/// error result and every other tool.
pub fn task_target(tool: &str, output: &ToolOutput) -> Option<TaskTarget> {
    if let Some(job) = turnkit_tool_jobs::started_job(output) {
        return Some(TaskTarget {
            subject: Subject::job(job.as_str()),
        });
    }
    if output.is_error
        || tool != turnkit_schedule::tools::CREATE_NAME
        || output.value.get("code").is_some()
    {
        return None;
    }
    let id = output.value.get("id").and_then(Value::as_str)?;
    let due = output.value.get("scheduledAt").and_then(Value::as_str)?;
    Some(TaskTarget {
        subject: Subject::reminder(id, turnkit_core::parse_canonical_millis(due)?),
    })
}

/// The job a call of tool `tool` with `arguments` waits on, when that wait may be moved to a
/// task (a `job_output` wait), with the text the model is shown at once when it is.
pub fn waited_target(tool: &str, arguments: &Value) -> Option<(TaskTarget, String)> {
    let job = turnkit_tool_jobs::waited_job(tool, arguments)?;
    let moved = turnkit_tool_jobs::wait_moved(&job);
    Some((
        TaskTarget {
            subject: Subject::job(job.as_str()),
        },
        moved,
    ))
}

/// The final output that ends a task about `subject` for `caller`: for a job, what a
/// non-waiting `job_output` gives (a consuming read; a job the registry does not know is an
/// `Error: …` tool error); `None` for subjects that have none (a reminder's message is the
/// whole result).
pub fn final_output(
    registry: &dyn JobRegistry,
    subject: &Subject,
    caller: Option<&AgentId>,
) -> Option<ToolOutput> {
    match subject {
        Subject::Job { id } => Some(turnkit_tool_jobs::final_output(
            registry,
            &JobId::from(id.as_str()),
            caller,
        )),
        _ => None,
    }
}

/// Message `text` about `subject` as the result of a task about it carries it: a job's notice
/// loses its pointer to `job_output`, the result holding the final output already
/// ([`turnkit_tool_jobs::task_notice`]); any other subject's text is unchanged.
pub fn task_notice(subject: &Subject, text: &str) -> String {
    match subject {
        Subject::Job { id } => turnkit_tool_jobs::task_notice(&JobId::from(id.as_str()), text),
        _ => text.to_owned(),
    }
}

/// Cancels what a task about `subject` started, for `caller`: a job is killed (as `job_kill`
/// without a reason) and that result returned; `None` when cancelling the task stops nothing
/// (a reminder stays scheduled).
pub fn cancel_target(
    registry: &dyn JobRegistry,
    subject: &Subject,
    caller: Option<&AgentId>,
) -> Option<ToolOutput> {
    match subject {
        Subject::Job { id } => Some(turnkit_tool_jobs::kill_job(
            registry,
            &JobId::from(id.as_str()),
            caller,
        )),
        _ => None,
    }
}
