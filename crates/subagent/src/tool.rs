//! The `agent` tool: starts a child, in the foreground (waits for its answer) or in the
//! background (returns its job id; the caller is notified when it settles).

use std::sync::LazyLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnkit_core::{Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, async_trait};
use turnkit_jobs::{JobSnapshot, OnTimeout, wait_foreground};

use crate::Subagents;

/// The tool name.
pub const TOOL_NAME: &str = "agent";

const DESCRIPTION: &str = "Start a subagent: a child agent with its own session and todo list that works on `prompt` on its own and answers with a final report. It can call the same tools as you except scheduling. By default the call waits for the subagent to finish and returns its final answer followed by `[status: ...]`. With `run_in_background: true` it returns `started background job <id>` at once; you are notified when the subagent finishes, and you read its answer with job_output or stop it with job_kill. Give the subagent everything it needs in `prompt`: it does not see your conversation.";

/// How long one foreground wait lasts before it is renewed (the wait has no overall limit).
const FOREGROUND_WAIT: Duration = Duration::from_secs(3600);

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The complete task for the subagent, with all the context it needs."
            },
            "description": {
                "type": "string",
                "description": "A short (3-5 word) label for the task, shown in job lists and notices."
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Start the subagent as a background job and return its job id at once instead of waiting for its answer."
            }
        },
        "required": ["prompt"]
    })
}

fn output_schema() -> Value {
    json!({
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "background"},
                    "jobId": {"type": "string"},
                    "sessionId": {"type": "string"}
                },
                "required": ["kind", "jobId", "sessionId"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "foreground"},
                    "jobId": {"type": "string"},
                    "sessionId": {"type": "string"},
                    "output": {"type": "string"},
                    "status": {"enum": ["completed", "killed", "failed"]},
                    "detail": {"type": "string"}
                },
                "required": ["kind", "jobId", "sessionId", "output", "status"],
                "additionalProperties": false
            }
        ]
    })
}

static DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: TOOL_NAME.to_owned(),
    description: DESCRIPTION.to_owned(),
    input_schema: input_schema(),
    output_schema: Some(output_schema()),
    // The child may call every tool its parent can (bash included).
    annotations: Some(turnkit_core::ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

/// The arguments of `agent`. The root object is open (todo-jobs §1.4): other keys are
/// ignored. Decoded the way turnkit-bash decodes its arguments.
#[derive(Debug, Deserialize)]
struct AgentArgs {
    prompt: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

/// The `agent` tool: `prompt` (required), `description` (the job label), `run_in_background`.
///
/// - Background: returns `started background job <id>` with value
///   `{"kind":"background","jobId":<id>,"sessionId":<child session>}`. The caller owns the
///   job; tool-jobs notifies it when the job settles, and `job_output` returns the answer
///   (idempotent after settlement, decision 9). Aborting the call afterwards does not affect
///   the child.
/// - Foreground: starts the same job, waits for it through the registry (so no notice is
///   sent), reads it, and returns the answer (or `(no output)`), a newline, then the status
///   line (`[status: completed]`, `[status: failed, max-tokens]`); the value is
///   `{"kind":"foreground","jobId","sessionId","output","status","detail"?}`. Aborting the
///   call kills the child and yields the aborted result.
/// - Errors (`Error: <message>`): the [`crate::SpawnError`] messages (no calling agent,
///   empty prompt, the two caps) and the registry's refusals.
pub struct AgentTool {
    subagents: Subagents,
}

impl AgentTool {
    /// The tool over a launcher.
    pub fn new(subagents: Subagents) -> Self {
        Self { subagents }
    }
}

fn render_foreground(output: &str, snapshot: &JobSnapshot, session: &str) -> ToolOutput {
    let mut text = if output.is_empty() {
        "(no output)".to_owned()
    } else {
        output.to_owned()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&snapshot.status_line());
    let mut value = json!({
        "kind": "foreground",
        "jobId": snapshot.id.as_str(),
        "sessionId": session,
        "output": output,
        "status": snapshot.status.as_str(),
    });
    if let (Some(detail), Some(object)) = (&snapshot.detail, value.as_object_mut()) {
        object.insert("detail".to_owned(), Value::from(&**detail));
    }
    ToolOutput::success(value, text)
}

#[async_trait]
impl Tool for AgentTool {
    fn definition(&self) -> &ToolDefinition {
        &DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: AgentArgs = serde_json::from_value(call.arguments.clone())
            .map_err(|e| ToolError::msg(format!("invalid arguments: {e}")))?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let spawned = self
            .subagents
            .spawn(
                call.caller.clone(),
                &args.prompt,
                args.description.as_deref(),
            )
            .await
            .map_err(|e| ToolError::msg(e.to_string()))?;
        if args.run_in_background == Some(true) {
            return Ok(ToolOutput::success(
                json!({
                    "kind": "background",
                    "jobId": spawned.job.as_str(),
                    "sessionId": spawned.session.as_str(),
                }),
                format!("started background job {}", spawned.job),
            ));
        }
        let jobs = self.subagents.registry();
        let read = wait_foreground(
            &**jobs,
            &spawned.job,
            &call,
            FOREGROUND_WAIT,
            OnTimeout::WaitAgain,
        )
        .await?
        .read;
        Ok(render_foreground(
            &read.text,
            &read.snapshot,
            spawned.session.as_str(),
        ))
    }
}
