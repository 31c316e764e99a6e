//! `terminal_kill`.

use serde::Deserialize;
use serde_json::json;
use turnkit_core::{AgentId, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, async_trait};

use super::definitions::KILL_DEFINITION;
use super::table::{Killed, Terminals};
use super::{decode, tool_error};

/// The arguments of `terminal_kill`.
#[derive(Debug, Deserialize)]
struct KillArgs {
    terminal_id: String,
}

/// `terminal_kill`: stops a terminal (see [`Terminals::kill`]). Results (exact):
/// `stopped terminal <id> (<how>)`, `terminal <id> had already exited (<how>)`, or
/// `requested stop of terminal <id>`; value `{"terminalId","stopped","exit"?}`. Errors:
/// `unknown terminal <id>`, `terminal <id> belongs to another session`.
pub struct KillTool {
    terminals: Terminals,
}

impl KillTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }
}

#[async_trait]
impl Tool for KillTool {
    fn definition(&self) -> &ToolDefinition {
        &KILL_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: KillArgs = decode(&call)?;
        let caller: Option<AgentId> = call.caller.as_ref().map(|a| a.id().clone());
        let id = args.terminal_id;
        let killed = self
            .terminals
            .kill(caller.as_ref(), &id)
            .await
            .map_err(tool_error)?;
        Ok(match killed {
            Killed::Stopped(how) => ToolOutput::success(
                json!({"terminalId": id, "stopped": true, "exit": how}),
                format!("stopped terminal {id} ({how})"),
            ),
            Killed::AlreadyExited(how) => ToolOutput::success(
                json!({"terminalId": id, "stopped": false, "exit": how}),
                format!("terminal {id} had already exited ({how})"),
            ),
            Killed::Requested => ToolOutput::success(
                json!({"terminalId": id, "stopped": false}),
                format!("requested stop of terminal {id}"),
            ),
        })
    }
}
