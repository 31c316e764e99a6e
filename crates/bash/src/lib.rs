//! harness-bash: background shell commands as jobs (todo-jobs §6, decisions 11 and 13).
//!
//! - [`BashProcess`] runs `bash -c COMMAND` in its own process group, reads stdout and
//!   stderr concurrently into bounded buffers with a consuming cursor, spills the full output
//!   to files, and cancels by signalling the whole group (SIGTERM, then SIGKILL after a grace
//!   period measured through the [`harness_core::Clock`] seam).
//! - [`bash_job_start`] / [`bash_hooks`] / [`bash_outcome`] make a process a job of kind
//!   `bash` for any [`harness_jobs::JobRegistry`].
//! - [`install`] registers the `bash` tool; [`BashJobs::start_background`] starts a
//!   background job directly (hosts, the scenario runner).
//!
//! ```no_run
//! use std::sync::Arc;
//! use harness_bash::{BashProcess, ProcessOptions};
//! use harness_core::SystemClock;
//!
//! # async fn demo() -> Result<(), harness_bash::BashError> {
//! let process = BashProcess::spawn(ProcessOptions::new("echo out; echo err >&2", Arc::new(SystemClock)))?;
//! let end = process.wait().await;
//! assert_eq!(process.read(), "out\n[stderr]\nerr\n");
//! assert_eq!(harness_bash::bash_outcome(&end).detail.as_deref(), Some("exit code: 0"));
//! # Ok(())
//! # }
//! ```

mod buffer;
mod config;
mod install;
mod job;
mod process;
mod render;
mod tool;

pub use config::{BashConfig, PLUGIN_NAME};
pub use install::{Installed, install};
pub use job::{bash_hooks, bash_job_start, bash_outcome};
pub use process::{
    BashError, BashProcess, DEFAULT_KILL_GRACE, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPILL_BYTES,
    EndStatus, ProcessEnd, ProcessOptions, SpillOptions, StreamStats,
};
pub use render::{append_notice, dropped_notice, render_delta, signal_name};
pub use tool::{BashJobs, BashTool, JOBS_UNAVAILABLE, StartError, TOOL_NAME};
