#![doc = include_str!("../README.md")]

/// Background shell commands as jobs (Unix only).
#[cfg(unix)]
pub use harness_bash as bash;
pub use harness_core as core;
pub use harness_host as host;
pub use harness_jobs as jobs;
pub use harness_jobs_local as jobs_local;
pub use harness_schedule as schedule;
pub use harness_subagent as subagent;
/// Interactive terminals (PTYs) whose sends are jobs of kind `pty-send` (Unix only).
#[cfg(unix)]
pub use harness_terminal as terminal;
pub use harness_todo as todo;
pub use harness_tool_jobs as tool_jobs;
