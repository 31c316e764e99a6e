//! What a client's task for a background job needs of these tools, as functions: the job a
//! tool result started, the job a `job_output` wait waits on, the job's final output and its
//! cancellation. A server that turns background work into tasks (the MCP server) calls these,
//! never a tool by name, so it knows no job tool.

use serde_json::Value;
use turnkit_core::{AgentId, ToolOutput};
use turnkit_jobs::{JobId, JobRegistry};

use crate::cap::{cap_result, limit_of};
use crate::text::{JOB_KILL, JOB_OUTPUT};
use crate::tools::{kill, read_output};

/// The job a successful tool result started in the background: its value is
/// `{"kind":"background","jobId":<id>, …}` (what every background-capable tool answers);
/// `None` for an error result or any other value.
pub fn started_job(output: &ToolOutput) -> Option<JobId> {
    if output.is_error {
        return None;
    }
    let value = &output.value;
    if value.get("kind").and_then(Value::as_str) != Some("background") {
        return None;
    }
    value.get("jobId").and_then(Value::as_str).map(JobId::from)
}

/// The job a call of tool `tool` with `arguments` waits on: `Some` for `job_output` with
/// `wait: true` and a `job_id` string, `None` for anything else.
pub fn waited_job(tool: &str, arguments: &Value) -> Option<JobId> {
    if tool != JOB_OUTPUT || arguments.get("wait").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    arguments
        .get("job_id")
        .and_then(Value::as_str)
        .map(JobId::from)
}

/// The text the model is shown at once when a wait on job `id` was moved to a task: the job
/// still runs and its final output comes later.
pub fn wait_moved(id: &JobId) -> String {
    format!(
        "job {id} is still running; its final output will be delivered to you when it finishes \
         (or read it with job_output)"
    )
}

/// Job `id`'s final output for `caller`, exactly as a `job_output` call without `wait` gives
/// it (a consuming read, capped to the job's `outputLimitBytes`); an unknown or foreign job is
/// an `Error: …` tool error.
pub fn final_output(
    registry: &dyn JobRegistry,
    id: &JobId,
    caller: Option<&AgentId>,
) -> ToolOutput {
    let limit = limit_of(registry, id, caller);
    cap_result(JOB_OUTPUT, read_output(registry, id, caller), limit)
}

/// Cancels job `id` for `caller` as a `job_kill` call without a reason does, and returns that
/// call's result (`cancellation-requested` or `already-finished`, or an `Error: …` tool
/// error).
pub fn kill_job(registry: &dyn JobRegistry, id: &JobId, caller: Option<&AgentId>) -> ToolOutput {
    let limit = limit_of(registry, id, caller);
    cap_result(JOB_KILL, kill(registry, id, None, caller), limit)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use turnkit_core::ToolOutput;
    use turnkit_jobs::JobId;

    use super::{started_job, waited_job};

    #[test]
    fn a_background_start_names_its_job_and_a_wait_names_the_job_it_waits_on() {
        let started = ToolOutput::success(json!({"kind": "background", "jobId": "x-3"}), "ok");
        assert_eq!(started_job(&started), Some(JobId::from("x-3")));
        let foreground = ToolOutput::success(json!({"kind": "foreground", "jobId": "x-3"}), "ok");
        assert_eq!(started_job(&foreground), None);
        let mut failed = started;
        failed.is_error = true;
        assert_eq!(started_job(&failed), None);
        let wait = json!({"job_id": "bash-2", "wait": true});
        assert_eq!(waited_job("job_output", &wait), Some(JobId::from("bash-2")));
        assert_eq!(waited_job("job_output", &json!({"job_id": "bash-2"})), None);
        assert_eq!(waited_job("job_kill", &wait), None);
    }
}
