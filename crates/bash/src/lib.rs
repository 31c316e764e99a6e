#![doc = include_str!("../README.md")]
// The process model (process groups, signals, /proc) is Unix only; elsewhere the crate is empty.
#![cfg(unix)]

mod buffer;
mod config;
mod contain;
mod install;
mod job;
mod process;
mod render;
mod tool;

pub use config::{BashConfig, PLUGIN_NAME};
pub use contain::{Containment, Mechanism};
pub use install::{Installed, install};
pub use job::{bash_hooks, bash_job_start, bash_outcome};
pub use process::{
    BashError, BashProcess, DEFAULT_KILL_GRACE, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPILL_BYTES,
    EndStatus, ProcessEnd, ProcessOptions, SpillOptions, SpillRetention, StreamStats,
};
pub use render::{append_notice, dropped_notice, render_delta, signal_name};
pub use tool::{BashJobs, BashTool, JOBS_UNAVAILABLE, StartError, TOOL_NAME};
