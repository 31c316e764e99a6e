//! Tools: [`ToolDefinition`], the [`Tool`] trait, calls and outputs.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{Agent, ContentBlock, InvalidArguments, Progress, join_text};

/// What the model sees of a tool: name, description, and JSON Schemas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The tool name, e.g. `todo_write`.
    pub name: String,
    /// The model-facing description (exact per spec).
    pub description: String,
    /// JSON Schema of the arguments; validated by the [`crate::ToolRegistry`] before the body
    /// runs (decision 2).
    pub input_schema: Value,
    /// JSON Schema of the canonical value, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What calling the tool does to the world, for clients that decide on approval from it
    /// (MCP's tool annotations). `None`: not declared, and a client assumes the worst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// Behaviour hints of a tool, in the terms of MCP's tool annotations (`readOnlyHint`,
/// `destructiveHint`, `idempotentHint`, `openWorldHint`). They describe the tool to a client;
/// nothing in this workspace enforces them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool changes nothing: calling it only reads.
    #[serde(rename = "readOnlyHint")]
    pub read_only: bool,
    /// The tool may destroy or stop something (a process, a reminder, data). Meaningful only
    /// when `read_only` is false.
    #[serde(rename = "destructiveHint")]
    pub destructive: bool,
    /// Calling it again with the same arguments has no further effect.
    #[serde(rename = "idempotentHint")]
    pub idempotent: bool,
    /// The tool reaches beyond the session's own state (runs programs, touches files or the
    /// network).
    #[serde(rename = "openWorldHint")]
    pub open_world: bool,
}

impl ToolAnnotations {
    /// A tool that only reads the session's own state (`job_list`, `schedule_list`).
    pub const READ_ONLY: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// One execution of a tool: who calls, with what, and what travels with the call (in the
/// shape of an MCP server's per-call context): its cancellation and where its progress
/// goes. A body that waits reports through [`ToolCall::progress`] and stops waiting when
/// [`ToolCall::cancel`] fires, so no transport special-cases a tool.
#[derive(Clone)]
pub struct ToolCall {
    /// The calling agent, or `None` for a call made outside any agent.
    pub caller: Option<Arc<dyn Agent>>,
    /// The arguments, already validated against the tool's input schema.
    pub arguments: Value,
    /// Cancelled when the caller aborts the call (an MCP `notifications/cancelled` for its
    /// request, a cancelled turn).
    pub cancel: CancellationToken,
    /// Where the call's progress reports go; reports nowhere unless the caller asked for
    /// them (an MCP request with a progress token).
    pub progress: Progress,
}

impl ToolCall {
    /// The arguments decoded into the tool's typed form `T` ([`crate::decode_arguments`]).
    /// A body returns the error with `?`: it becomes the result `Error: invalid arguments:
    /// <serde message>`.
    ///
    /// # Errors
    /// [`crate::InvalidArguments`] when the arguments do not decode as `T`.
    pub fn arguments_as<'de, T: Deserialize<'de>>(&'de self) -> Result<T, InvalidArguments> {
        crate::decode_arguments(&self.arguments)
    }
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("caller", &self.caller.as_ref().map(|a| a.id().clone()))
            .field("arguments", &self.arguments)
            .field("progress", &self.progress)
            .finish()
    }
}

/// The result of a tool call: the canonical JSON value, the rendered content, and whether it
/// is an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// The canonical value (`null` for failures).
    pub value: Value,
    /// Rendered content blocks.
    pub content: Vec<ContentBlock>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result with one text block.
    pub fn success(value: Value, text: impl Into<String>) -> Self {
        Self {
            value,
            content: vec![ContentBlock::text(text)],
            is_error: false,
        }
    }

    /// A successful result whose text is the compact JSON of `value` (schedule §9.3).
    pub fn json(value: Value) -> Self {
        let text = value.to_string();
        Self::success(value, text)
    }

    /// The error envelope (todo-jobs §1.4): one text block `Error: <message>`,
    /// `is_error: true`, value `null`.
    pub fn error(message: impl std::fmt::Display) -> Self {
        Self {
            value: Value::Null,
            content: vec![ContentBlock::text(format!("Error: {message}"))],
            is_error: true,
        }
    }

    /// The answer to a call whose events could not be made durable (spec decision 21, "A
    /// reply is an acknowledgement"): an error whose first block is `Error: ` and
    /// [`unsaved_message`] of `why`, followed by the tool's own content blocks (so the model
    /// still learns what was done, a started job's id say). `is_error: true`, value `null`.
    /// The words are the same on every store; only `why` (the store's error) differs.
    #[must_use]
    pub fn unsaved(self, why: &crate::PersistenceError) -> Self {
        let mut content = vec![ContentBlock::text(format!(
            "Error: {}",
            unsaved_message(why)
        ))];
        content.extend(self.content);
        Self {
            value: Value::Null,
            content,
            is_error: true,
        }
    }

    /// The content joined with `\n`.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }
}

/// A failure thrown by a tool body; rendered as `Error: <message>` with `is_error: true`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A model-facing failure with the spec's exact message.
    #[error("{0}")]
    Message(String),
    /// The call was cancelled before it committed anything (schedule §11: `ABORTED`).
    #[error("aborted")]
    Aborted,
}

impl ToolError {
    /// A failure with this exact message.
    pub fn msg(message: impl Into<String>) -> Self {
        ToolError::Message(message.into())
    }
}

/// A model-callable tool. Implementations are shared as `Arc<dyn Tool>`.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's definition. Must not change while registered.
    fn definition(&self) -> &ToolDefinition;

    /// Runs the tool body on validated arguments.
    ///
    /// # Errors
    /// A [`ToolError`] becomes the `Error: <message>` envelope.
    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError>;

    /// The UI's card for a call with these arguments (the spec's `presentCall`), as JSON
    /// `{"card":"generic","title",…,"kind",…,"rawInput"?}`; pure and never failing, it
    /// validates nothing. `None` (the default): the tool defines no card. Each family's card
    /// is its spec's (todo-jobs §2.2 and §5.4, schedule §9.8).
    fn present_call(&self, arguments: &Value) -> Option<Value> {
        let _ = arguments;
        None
    }
}

impl From<InvalidArguments> for ToolError {
    fn from(error: InvalidArguments) -> Self {
        ToolError::Message(error.0)
    }
}

/// The stable text of an answer whose change may not be saved (spec decision 21):
/// `the change may not be saved: <why>; it stays pending and is written by the next save
/// that succeeds`.
pub fn unsaved_message(why: &crate::PersistenceError) -> String {
    format!(
        "the change may not be saved: {why}; it stays pending and is written by the next save \
         that succeeds"
    )
}

/// The durability barrier of one answered tool call (spec decision 21): flushes `session`
/// when the call appended (its length grew past `len_before`, the length read before the
/// call ran) and turns a successful `output` into [`ToolOutput::unsaved`] when that flush
/// fails. An error output stays as it is (its tool already said what it knows, e.g.
/// schedule's `persistence_uncertain`); a call that appended nothing is not flushed.
///
/// # Errors
/// [`crate::PersistenceError::Fenced`] is returned as is, for the host to stop the
/// session (docs/event-log.md, "Write ownership").
pub async fn acknowledge(
    session: &dyn crate::Session,
    len_before: u64,
    output: ToolOutput,
) -> Result<ToolOutput, crate::PersistenceError> {
    if session.len() <= len_before {
        return Ok(output);
    }
    match session.flush().await {
        Ok(()) => Ok(output),
        Err(error @ crate::PersistenceError::Fenced(_)) => Err(error),
        Err(_) if output.is_error => Ok(output),
        Err(error) => Ok(output.unsaved(&error)),
    }
}
