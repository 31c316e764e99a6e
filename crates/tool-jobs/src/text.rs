//! Model-facing text of tool-jobs, byte for byte (todo-jobs §5.3, §5.4, §5.6, §5.7).
//!
//! Provides the tool names and descriptions, the exact argument schemas, the prompt section,
//! the status line, the `job_output` / `job_list` / `job_kill` renderings, and the notice
//! summary. Everything here is pure.

use serde_json::{Value, json};
use turnkit_core::summarize_chars;

/// Name of the read tool.
pub const JOB_OUTPUT: &str = "job_output";
/// Name of the list tool.
pub const JOB_LIST: &str = "job_list";
/// Name of the kill tool.
pub const JOB_KILL: &str = "job_kill";

/// The plugin name used as the controller name and in notice sources.
pub const PLUGIN_NAME: &str = "tool-jobs";

/// `job_output` description (todo-jobs §5.4, exact).
pub const JOB_OUTPUT_DESCRIPTION: &str = "Read a background job. Stream jobs return only output since the previous read; final-output jobs return their result after settlement. Every response ends with `[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the configured cap.";

/// `job_list` description (todo-jobs §5.4, exact).
pub const JOB_LIST_DESCRIPTION: &str = "List your jobs (running and finished) with their ids, kinds, and statuses. A tool call run in the foreground is a job too: it is listed like one started in the background.";

/// `job_kill` description (todo-jobs §5.4, exact).
pub const JOB_KILL_DESCRIPTION: &str = "Request cancellation of a running background job by job id. Returns immediately; the job settles as killed once its work actually stops.";

/// Name of the prompt section (todo-jobs §5.6).
pub(crate) const PROMPT_SECTION_NAME: &str = "tool:jobs";
/// Order of the prompt section: after the bash guidance, before product sections.
pub(crate) const PROMPT_SECTION_ORDER: i32 = 106;
/// Text of the prompt section (todo-jobs §5.6, exact).
pub(crate) const PROMPT_SECTION_TEXT: &str = "Track every background job id you start. You are notified in-session when a job finishes — do not busy-poll or sleep on one; keep working on independent steps and do not duplicate a running job's work. Before giving a final answer, collect every still-relevant job with job_output (set wait: true only when you are genuinely blocked on it), and job_kill jobs that stopped mattering.";

/// Body shown by `job_output` when the read returned no text.
pub(crate) const NO_NEW_OUTPUT: &str = "(no new output)";
/// `job_list` rendering of an empty list.
pub(crate) const NO_JOBS: &str = "(no background jobs)";

/// Maximum length of a notice summary, in Unicode scalar values (todo-jobs §1.5).
pub(crate) const SUMMARY_MAX_CHARS: usize = 120;

const JOB_ID_DESCRIPTION: &str = "Job id returned by the tool that started the background work.";

/// The `job_output` argument schema (todo-jobs §5.4, exact; the root is open).
pub fn job_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "job_id": { "type": "string", "description": JOB_ID_DESCRIPTION },
            "wait": { "type": "boolean", "description": "Block until the job reaches a terminal status or the timeout expires. A timed-out wait returns [status: running] and leaves the job alive." },
            "timeout_ms": { "type": "number", "description": "Max wait in milliseconds (only meaningful with wait: true). Defaults to the configured wait timeout; capped by the configured maximum." }
        },
        "required": ["job_id"]
    })
}

/// The `job_list` argument schema (todo-jobs §5.4, exact).
pub fn job_list_schema() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The `job_kill` argument schema (todo-jobs §5.4, exact; the root is open).
pub fn job_kill_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "job_id": { "type": "string", "description": JOB_ID_DESCRIPTION },
            "reason": { "type": "string", "description": "Optional short reason, recorded in the log and forwarded to the job." }
        },
        "required": ["job_id"]
    })
}

/// The schema of a `PublicJob` value (todo-jobs §5.3): closed, `detail` and `finishedAt`
/// optional.
pub(crate) fn public_job_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "id": { "type": "string" },
            "kind": { "type": "string" },
            "label": { "type": "string" },
            "status": { "type": "string", "enum": ["running", "stopping", "completed", "killed", "failed"] },
            "detail": { "type": "string" },
            "startedAt": { "type": "integer" },
            "finishedAt": { "type": "integer" }
        },
        "required": ["id", "kind", "label", "status", "startedAt"]
    })
}

/// The schema of the `job_output` canonical value `{ text, job }`.
pub(crate) fn job_output_value_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": { "text": { "type": "string" }, "job": public_job_schema() },
        "required": ["text", "job"]
    })
}

/// The schema of the `job_list` canonical value: a list of `PublicJob`.
pub(crate) fn job_list_value_schema() -> Value {
    json!({ "type": "array", "items": public_job_schema() })
}

/// The schema of the `job_kill` canonical value `{ outcome, job }`.
pub(crate) fn job_kill_value_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "outcome": { "type": "string", "enum": ["cancellation-requested", "already-finished"] },
            "job": public_job_schema()
        },
        "required": ["outcome", "job"]
    })
}

/// The status line (todo-jobs §5.3, exact): `[status: <status>]`, or
/// `[status: <status>, <detail>]` when a detail is present.
///
/// ```
/// assert_eq!(turnkit_tool_jobs::status_line("running", None), "[status: running]");
/// assert_eq!(
///     turnkit_tool_jobs::status_line("completed", Some("exit code: 0")),
///     "[status: completed, exit code: 0]"
/// );
/// ```
pub fn status_line(status: &str, detail: Option<&str>) -> String {
    match detail {
        Some(detail) => format!("[status: {status}, {detail}]"),
        None => format!("[status: {status}]"),
    }
}

/// The `job_output` body: the read text, or `(no new output)` when it is empty.
pub(crate) fn output_body(text: &str) -> &str {
    if text.is_empty() { NO_NEW_OUTPUT } else { text }
}

/// The `job_output` rendering (todo-jobs §5.4, exact): body, a `\n` only if the body does not
/// already end with one, then the status line.
pub fn render_output(text: &str, status_line: &str) -> String {
    let body = output_body(text);
    if body.ends_with('\n') {
        format!("{body}{status_line}")
    } else {
        format!("{body}\n{status_line}")
    }
}

/// One `job_list` line (todo-jobs §5.4, exact): `<id> [<kind>] <status> — <label>`.
pub(crate) fn list_line(id: &str, kind: &str, status: &str, label: &str) -> String {
    format!("{id} [{kind}] {status} — {label}")
}

/// `job_kill` rendering after a cancellation request (exact).
pub(crate) fn render_kill_requested(id: &str) -> String {
    format!("requested cancellation of job {id}")
}

/// `job_kill` rendering for a job that had already finished (exact).
pub(crate) fn render_kill_finished(id: &str, status_line: &str) -> String {
    format!("job {id} had already finished {status_line}")
}

/// The mark of a job of an earlier run, read back from the job journal (exact).
pub const EARLIER_RUN_MARK: &str = "(from before the restart)";

/// A `job_list` line of a job of an earlier run (exact):
/// `<id> [<kind>] <status> — <label> (from before the restart)`.
pub(crate) fn earlier_list_line(id: &str, kind: &str, status: &str, label: &str) -> String {
    format!("{} {EARLIER_RUN_MARK}", list_line(id, kind, status, label))
}

/// The `job_output` rendering of a job of an earlier run (exact): the mark on a line of its
/// own, then the usual rendering (body and status line).
pub(crate) fn render_earlier_output(text: &str, status_line: &str) -> String {
    format!(
        "{EARLIER_RUN_MARK}
{}",
        render_output(text, status_line)
    )
}

/// `job_kill` rendering for a job of an earlier run (exact).
pub(crate) fn render_kill_earlier(id: &str, status_line: &str) -> String {
    format!("job {id} is no longer running {EARLIER_RUN_MARK} {status_line}")
}

/// One line of the lost-jobs notice (exact), by the job's detail (todo-jobs §5.9):
/// - stopped by its host's clean shutdown ([`turnkit_jobs::SHUTDOWN_DETAIL`]):
///   `background job <id> (<kind>: <label>) was still running when its host shut down
///   <status line>. Read its output with job_output.`
/// - its processes outlived its dead host and were stopped at the reopening
///   ([`turnkit_jobs::LEFTOVERS_STOPPED_DETAIL`]): `background job <id> (<kind>: <label>) was
///   running when its host stopped; its processes were stopped <status line>. Its output went
///   with the stopped host.`
/// - otherwise (lost: nothing of it was left): `background job <id> (<kind>: <label>) was lost
///   <status line>. Its output went with the stopped host.`
pub(crate) fn lost_notice_line(
    id: &str,
    kind: &str,
    label: &str,
    detail: Option<&str>,
    status_line: &str,
) -> String {
    match detail {
        Some(turnkit_jobs::SHUTDOWN_DETAIL) => format!(
            "background job {id} ({kind}: {label}) was still running when its host shut down {status_line}. Read its output with job_output."
        ),
        Some(turnkit_jobs::LEFTOVERS_STOPPED_DETAIL) => format!(
            "background job {id} ({kind}: {label}) was running when its host stopped; its processes were stopped {status_line}. Its output went with the stopped host."
        ),
        _ => format!(
            "background job {id} ({kind}: {label}) was lost {status_line}. Its output went with the stopped host."
        ),
    }
}

/// The message of the empty-`job_id` failure (exact).
pub(crate) const EMPTY_JOB_ID: &str = "invalid job_id: expected a non-empty string, got \"\"";

/// The notice summary (todo-jobs §5.7 step 3): `<kind> <label> <status line>`, cut to 120
/// Unicode scalar values (119 and `…` when longer). Never byte-capped.
pub(crate) fn notice_summary(kind: &str, label: &str, status_line: &str) -> String {
    summarize_chars(&format!("{kind} {label} {status_line}"), SUMMARY_MAX_CHARS)
}

/// The UI card for a call (the spec's `presentCall`, todo-jobs §5.4), as a JSON object:
/// `{card:"generic", title, kind, rawInput?}`. Unknown tool names give `None`.
pub fn present_call(tool: &str, arguments: &Value) -> Option<Value> {
    let job_id = arguments.get("job_id").cloned().unwrap_or(Value::Null);
    let shown = job_id.as_str().unwrap_or_default().to_owned();
    match tool {
        JOB_OUTPUT => Some(json!({
            "card": "generic",
            "title": format!("Read output from background job {shown}"),
            "kind": "read",
            "rawInput": job_id,
        })),
        JOB_LIST => Some(json!({
            "card": "generic",
            "title": "List background jobs",
            "kind": "read",
        })),
        JOB_KILL => Some(json!({
            "card": "generic",
            "title": format!("Kill background job {shown}"),
            "kind": "execute",
            "rawInput": job_id,
        })),
        _ => None,
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
