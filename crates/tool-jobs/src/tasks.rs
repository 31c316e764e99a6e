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

/// The pointer a delivered notice ends with when it sends the model to read the job.
const READ_POINTER: &str = ". Read its output with job_output.";
/// The collection instruction that ends a cut notice.
const CUT_POINTER: &str = "\nDone; job_output.";

/// Notice `text` about job `id` as a task's result carries it: that result holds the job's
/// final output too, so the pointer to `job_output` at the end of the job's own part is
/// dropped. A notice is one part per job, each beginning `background job <id>` on a line of
/// its own (a lost-jobs notice names every job stopped with the host); in job `id`'s part, a
/// closing `. Read its output with job_output.` becomes `.`, and a cut notice's closing line
/// `Done; job_output.` becomes `Done.`. The other jobs' parts keep theirs (the result does
/// not hold their output), and text with no part for job `id` is returned unchanged.
///
/// ```
/// use turnkit_jobs::JobId;
/// use turnkit_tool_jobs::task_notice;
/// let notice = "background job bash-1 (bash: make) finished [status: completed, exit code: 0]. Read its output with job_output.";
/// assert_eq!(
///     task_notice(&JobId::from("bash-1"), notice),
///     "background job bash-1 (bash: make) finished [status: completed, exit code: 0]."
/// );
/// assert_eq!(task_notice(&JobId::from("bash-10"), notice), notice);
/// ```
pub fn task_notice(id: &JobId, text: &str) -> String {
    const PART: &str = "background job ";
    let prefix = format!("{PART}{id}");
    let mut from = 0;
    let start = loop {
        let Some(at) = text[from..].find(prefix.as_str()).map(|at| at + from) else {
            return text.to_owned();
        };
        let line_start = at == 0 || text[..at].ends_with('\n');
        let rest = &text[at + prefix.len()..];
        if line_start && (rest.is_empty() || rest.starts_with([' ', '\n'])) {
            break at;
        }
        from = at + prefix.len();
    };
    let after = start + prefix.len();
    let end = text[after..]
        .find(&format!("\n{PART}"))
        .map_or(text.len(), |at| at + after);
    let part = &text[start..end];
    let kept = if let Some(kept) = part.strip_suffix(READ_POINTER) {
        format!("{kept}.")
    } else if let Some(kept) = part.strip_suffix(CUT_POINTER) {
        format!("{kept}\nDone.")
    } else {
        return text.to_owned();
    };
    format!("{}{kept}{}", &text[..start], &text[end..])
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

    use super::{started_job, task_notice, waited_job};

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

    #[test]
    fn a_task_notice_drops_only_its_own_jobs_pointer() {
        let bash1 = JobId::from("bash-1");
        let lost = "background job bash-1 (bash: sleep 9) was still running when its host shut down [status: killed, stopped by the host's shutdown]. Read its output with job_output.";
        assert_eq!(
            task_notice(&bash1, lost),
            "background job bash-1 (bash: sleep 9) was still running when its host shut down [status: killed, stopped by the host's shutdown]."
        );
        let cut = "background job bash-1 (bash\n[notice truncated]\nDone; job_output.";
        assert_eq!(
            task_notice(&bash1, cut),
            "background job bash-1 (bash\n[notice truncated]\nDone."
        );
        assert_eq!(
            task_notice(&bash1, "background job bash-1\nDone; job_output."),
            "background job bash-1\nDone."
        );
        let gone = "background job bash-1 (bash: x) was lost [status: lost]. Its output went with the stopped host.";
        assert_eq!(task_notice(&bash1, gone), gone);
        let other = "background job bash-2 (bash: x) finished [status: completed, exit code: 0]. Read its output with job_output.";
        assert_eq!(task_notice(&bash1, other), other);
        let both = format!("{lost}\n{other}");
        assert_eq!(
            task_notice(&JobId::from("bash-2"), &both),
            format!(
                "{lost}\nbackground job bash-2 (bash: x) finished [status: completed, exit code: 0]."
            )
        );
        assert_eq!(
            task_notice(&bash1, &both),
            format!("{}\n{other}", task_notice(&bash1, lost))
        );
        let said = "background job bash-1 (bash: x) says: Read its output with job_output.";
        assert_eq!(task_notice(&bash1, said), said);
    }
}
