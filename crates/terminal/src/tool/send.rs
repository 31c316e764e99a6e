//! `terminal_send`: typing into a terminal, in the foreground or as a background job.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnkit_core::{Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, async_trait};
use turnkit_jobs::{JobId, JobSnapshot, OnTimeout, wait_foreground};

use super::definitions::SEND_DEFINITION;
use super::table::Terminals;
use super::{JOBS_UNAVAILABLE, SETTLE_SLACK, decode, tool_error};
use crate::send::{Send, SendEnd};
use crate::{key_bytes, unknown_key};

/// The arguments of `terminal_send`.
#[derive(Debug, Deserialize)]
struct SendArgs {
    terminal_id: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    keys: Option<Vec<String>>,
    #[serde(default)]
    wait_for: Option<String>,
    #[serde(default)]
    settle_ms: Option<f64>,
    #[serde(default)]
    timeout_ms: Option<f64>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

/// A positive number of milliseconds, or the exact error
/// `invalid <name>: expected a positive number of milliseconds, got <n>`.
fn positive_ms(name: &str, value: Option<f64>, default: u64, max: u64) -> Result<u64, ToolError> {
    match value {
        None => Ok(default.min(max)),
        Some(ms) if ms.is_finite() && ms > 0.0 => Ok((ms.ceil() as u64).clamp(1, max)),
        Some(ms) => Err(ToolError::msg(format!(
            "invalid {name}: expected a positive number of milliseconds, got {}",
            turnkit_jobs::format_js_number(ms)
        ))),
    }
}

/// `terminal_send`: types `text`, then `keys`, and registers the send as a `pty-send` job
/// owned by the caller (label `<terminal id>: <text or (input)>`, `outputLimitBytes` =
/// `maxResultBytes`; see [`crate::SendEnd`] for when the response ends).
///
/// - Background: `started background job <id>`, value
///   `{"kind":"background","jobId","terminalId"}`; the response is read with job_output,
///   and a completion notice is sent when it ends.
/// - Foreground: waits through the registry (no notice), reads the response and renders it
///   as job_output does — the output (or `(no output)`), a newline if needed, the status
///   line, e.g. `Name? Alice\nhello Alice\n[status: completed, wait_for matched]` — capped
///   at `maxResultBytes` with the tail kept and `\n[output truncated]` before the status
///   line (todo-jobs §5.5). Value `{"kind":"foreground","jobId","terminalId","output",
///   "status","detail"?}` with the capped output. Aborting the call kills the send.
/// - Errors (`Error: <message>`): [`JOBS_UNAVAILABLE`]; `unknown terminal <id>`;
///   `terminal <id> belongs to another session`; `terminal <id> has exited (…)`; the busy
///   refusal; the unknown-key message of [`crate::unknown_key`];
///   `invalid settle_ms: …` / `invalid timeout_ms: …`; the registry's refusals.
pub struct SendTool {
    terminals: Terminals,
}

impl SendTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }

    async fn foreground(
        &self,
        call: &ToolCall,
        terminal: &str,
        id: JobId,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let jobs = self
            .terminals
            .registry()
            .ok_or_else(|| ToolError::msg(JOBS_UNAVAILABLE))?;
        let settle = OnTimeout::Kill {
            settle: SETTLE_SLACK,
        };
        let read = wait_foreground(&**jobs, &id, call, timeout + SETTLE_SLACK, settle)
            .await?
            .read;
        let limit = usize::try_from(self.terminals.config().max_result_bytes).unwrap_or(usize::MAX);
        Ok(render_foreground(
            &read.text,
            &read.snapshot,
            terminal,
            limit,
        ))
    }
}

/// The foreground result (see [`SendTool`]).
fn render_foreground(
    output: &str,
    snapshot: &JobSnapshot,
    terminal: &str,
    limit: usize,
) -> ToolOutput {
    let body = if output.is_empty() {
        "(no output)"
    } else {
        output
    };
    let content = body.strip_suffix('\n').unwrap_or(body);
    let suffix = format!("\n{}", snapshot.status_line());
    let text = turnkit_tool_jobs::fit_with_suffix(
        content,
        &suffix,
        limit,
        turnkit_tool_jobs::OUTPUT_MARKER,
    );
    let shown = if output.is_empty() {
        String::new()
    } else if text.len() == content.len() + suffix.len() {
        output.to_owned()
    } else {
        text.strip_suffix(suffix.as_str())
            .unwrap_or(&text)
            .to_owned()
    };
    let mut value = json!({
        "kind": "foreground",
        "jobId": snapshot.id.as_str(),
        "terminalId": terminal,
        "output": shown,
        "status": snapshot.status.as_str(),
    });
    if let (Some(detail), Some(object)) = (&snapshot.detail, value.as_object_mut()) {
        object.insert("detail".to_owned(), Value::from(&**detail));
    }
    ToolOutput::success(value, text)
}

#[async_trait]
impl Tool for SendTool {
    fn definition(&self) -> &ToolDefinition {
        &SEND_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: SendArgs = decode(&call)?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let config = self.terminals.config();
        let settle = positive_ms(
            "settle_ms",
            args.settle_ms,
            config.settle_ms,
            config.max_timeout_ms,
        )?;
        let timeout = positive_ms(
            "timeout_ms",
            args.timeout_ms,
            config.default_timeout_ms,
            config.max_timeout_ms,
        )?;
        let text = args.text.unwrap_or_default();
        let mut input = text.clone().into_bytes();
        for key in args.keys.unwrap_or_default() {
            let bytes = key_bytes(&key).ok_or_else(|| ToolError::msg(unknown_key(&key)))?;
            input.extend_from_slice(bytes);
        }
        let label_text = if text.is_empty() {
            "(input)".to_owned()
        } else {
            text
        };
        let timeout = Duration::from_millis(timeout);
        let send = Send {
            input,
            label_text,
            end: SendEnd {
                wait_for: args.wait_for.filter(|w| !w.is_empty()),
                settle: Duration::from_millis(settle),
                timeout,
            },
        };
        let id = self
            .terminals
            .send(call.caller.clone(), &args.terminal_id, send)
            .await
            .map_err(tool_error)?;
        if args.run_in_background == Some(true) {
            return Ok(ToolOutput::success(
                json!({"kind": "background", "jobId": id.as_str(), "terminalId": args.terminal_id}),
                format!("started background job {id}"),
            ));
        }
        self.foreground(&call, &args.terminal_id, id, timeout).await
    }
}
