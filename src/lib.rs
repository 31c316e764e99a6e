#![doc = include_str!("../README.md")]

/// Background shell commands as jobs (Unix only).
#[cfg(unix)]
pub use turnkit_bash as bash;
pub use turnkit_core as core;
/// Every family configured, installed and catalogued in one place (Unix only: it installs
/// bash and the terminal).
#[cfg(unix)]
pub use turnkit_families as families;
pub use turnkit_host as host;
pub use turnkit_jobs as jobs;
pub use turnkit_jobs_local as jobs_local;
pub use turnkit_schedule as schedule;
pub use turnkit_subagent as subagent;
/// Interactive terminals (PTYs) whose sends are jobs of kind `pty-send` (Unix only).
#[cfg(unix)]
pub use turnkit_terminal as terminal;
pub use turnkit_todo as todo;
pub use turnkit_tool_jobs as tool_jobs;
