//! `terminal_start`.

use serde::Deserialize;
use serde_json::json;
use turnkit_core::{Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, async_trait};

use super::definitions::START_DEFINITION;
use super::table::Terminals;
use super::{decode, tool_error};

/// The arguments of `terminal_start`. The root object is open (todo-jobs §1.4).
#[derive(Debug, Deserialize)]
struct StartArgs {
    #[serde(default)]
    command: Option<String>,
}

/// `terminal_start`: opens a terminal owned by the caller. Result `started terminal
/// <id>`, value `{"terminalId":<id>}`. Errors (`Error: <message>`): the limit and start
/// failures of [`Terminals::start`].
pub struct StartTool {
    terminals: Terminals,
}

impl StartTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }
}

#[async_trait]
impl Tool for StartTool {
    fn definition(&self) -> &ToolDefinition {
        &START_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: StartArgs = decode(&call)?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let id = self
            .terminals
            .start(call.caller.clone(), args.command.as_deref())
            .map_err(tool_error)?;
        Ok(ToolOutput::success(
            json!({"terminalId": id.as_str()}),
            format!("started terminal {id}"),
        ))
    }
}
