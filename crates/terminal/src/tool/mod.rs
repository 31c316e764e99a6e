//! The three tools (`terminal_start`, `terminal_send`, `terminal_kill`) and [`Terminals`],
//! the table of open terminals they share with hosts and the scenario runner.
//!
//! One topic per file: the model-facing definitions, the table, and one file per tool.

mod definitions;
mod kill;
mod send;
mod start;
mod table;

use std::time::Duration;

use turnkit_core::{ToolCall, ToolError};

pub use kill::KillTool;
pub use send::SendTool;
pub use start::StartTool;
pub use table::{Killed, Terminals, TerminalsError};

/// The name of the tool that opens a terminal.
pub const START_TOOL: &str = "terminal_start";
/// The name of the tool that types into a terminal.
pub const SEND_TOOL: &str = "terminal_send";
/// The name of the tool that stops a terminal.
pub const KILL_TOOL: &str = "terminal_kill";

/// The error of a send without a job registry (exact; the same text as the bash tool's).
pub const JOBS_UNAVAILABLE: &str = turnkit_bash::JOBS_UNAVAILABLE;

/// Slack added to a send's timeout (or to twice the kill grace) when waiting for it to
/// settle.
const SETTLE_SLACK: Duration = Duration::from_secs(10);

pub(super) fn decode<T: serde::de::DeserializeOwned>(call: &ToolCall) -> Result<T, ToolError> {
    Ok(call.arguments_as::<T>()?)
}

pub(super) fn tool_error(error: impl std::fmt::Display) -> ToolError {
    ToolError::msg(error.to_string())
}
