//! Capping of `job_output` and `job_kill` results to a job's `outputLimitBytes`
//! (todo-jobs §5.5): the limit lookup and the finalize step (rules A, B and C).
//!
//! The tools apply both themselves. They are public so that a host with its own policy
//! layers (pre-execute denials, around-wrappers, post-execute replacements) can apply the same
//! finalize step to whatever outcome those layers produce.

use serde_json::Value;
use turnkit_core::{AgentId, ContentBlock, ToolOutput};
use turnkit_jobs::{JobId, JobRegistry};

use crate::fit::{OUTPUT_MARKER, RESULT_MARKER, fit_with_suffix};
use crate::text::{JOB_KILL, JOB_OUTPUT, output_body, render_output, status_line};

/// The output limit that applies to a call of `tool` with `arguments` by `caller`
/// (todo-jobs §5.5): only for `job_output` and `job_kill`, only when `job_id` is a non-empty
/// string naming a job in `list(caller)` that has an `outputLimitBytes`. Unknown jobs, foreign
/// jobs and jobs without a limit give `None` (the result stays uncapped).
pub fn output_limit(
    registry: &dyn JobRegistry,
    tool: &str,
    arguments: &Value,
    caller: Option<&AgentId>,
) -> Option<u64> {
    if tool != JOB_OUTPUT && tool != JOB_KILL {
        return None;
    }
    let job_id = arguments.get("job_id")?.as_str()?;
    if job_id.is_empty() {
        return None;
    }
    limit_of(registry, &JobId::new(job_id), caller)
}

pub(crate) fn limit_of(
    registry: &dyn JobRegistry,
    id: &JobId,
    caller: Option<&AgentId>,
) -> Option<u64> {
    registry
        .list(caller)
        .into_iter()
        .find(|job| &job.id == id)
        .and_then(|job| job.output_limit_bytes)
}

/// `(text, default rendering, status line)` of a `job_output` value
/// `{ text, job: { status, detail? } }`, or `None` when `value` does not have that shape.
fn default_output_rendering(value: &Value) -> Option<(String, String, String)> {
    let text = value.get("text")?.as_str()?;
    let job = value.get("job")?;
    let status = job.get("status")?.as_str()?;
    let detail = match job.get("detail") {
        None => None,
        Some(detail) => Some(detail.as_str()?),
    };
    let line = status_line(status, detail);
    Some((text.to_owned(), render_output(text, &line), line))
}

/// The finalize step of todo-jobs §5.5 for a result of `tool` under limit `limit` (bytes).
/// `None`, or a tool other than `job_output` / `job_kill`, leaves the output unchanged.
///
/// - **A.** A successful `job_output` whose content is exactly one text block equal to the
///   default rendering of its value: fit-with-suffix with content = the body minus one
///   trailing `\n`, suffix = `\n` + status line, marker `\n[output truncated]` (keeps the
///   status line and the tail of the output).
/// - **B.** Any other single text block (errors, denials, replacements, custom renderings):
///   fit-with-suffix with an empty suffix and marker `\n[result truncated]` (keeps the tail,
///   so an `Error: ` prefix may be cut).
/// - **C.** Anything else (several blocks, or none) is left unchanged.
///
/// Every text this returns is at most `limit` bytes and valid UTF-8.
pub fn cap_result(tool: &str, output: ToolOutput, limit: Option<u64>) -> ToolOutput {
    let Some(limit) = limit else {
        return output;
    };
    if tool != JOB_OUTPUT && tool != JOB_KILL {
        return output;
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let [ContentBlock::Text { text }] = output.content.as_slice() else {
        return output;
    };
    let rule_a = if tool == JOB_OUTPUT && !output.is_error {
        default_output_rendering(&output.value).filter(|(_, rendered, _)| rendered == text)
    } else {
        None
    };
    let capped = match rule_a {
        Some((body_text, _, line)) => {
            let body = output_body(&body_text);
            let content = body.strip_suffix('\n').unwrap_or(body);
            fit_with_suffix(content, &format!("\n{line}"), limit, OUTPUT_MARKER)
        }
        None => fit_with_suffix(text, "", limit, RESULT_MARKER),
    };
    ToolOutput {
        content: vec![ContentBlock::text(capped)],
        ..output
    }
}

#[cfg(test)]
#[path = "cap_tests.rs"]
mod tests;
