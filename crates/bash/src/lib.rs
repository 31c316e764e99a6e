#![doc = include_str!("../README.md")]
// The process model (process groups, signals, /proc) is Unix only; elsewhere the crate is empty.
#![cfg(unix)]

mod buffer;
mod config;
mod contain;
mod install;
mod job;
mod keys;
mod net;
mod process;
mod render;
mod sandbox;
mod tasks;
mod tool;

pub use config::{BashConfig, PLUGIN_NAME};
pub use contain::{Containment, Group, JobTree, MARKER_VAR, Mechanism, TTY_GATE};
pub use install::{Installed, install};
pub use job::{bash_outcome, bash_outcome_with, with_refusals};
pub use keys::{DEFAULT_KILL_GRACE_MS, ProcessKeys, ProcessKeysMut};
pub use net::{HostPattern, Network, NetworkPolicy, Refusals, Verdict};
pub use process::{
    BashError, BashProcess, DEFAULT_KILL_GRACE, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPILL_BYTES,
    EndStatus, ProcessEnd, ProcessOptions, SpillOptions, SpillRetention, StreamStats,
};
pub use render::{append_notice, dropped_notice, render_delta, signal_name};
/// The signal type of [`JobTree::signal`] (from `rustix`).
pub use rustix::process::Signal;
pub use sandbox::{
    DEFAULT_PROTECTED, JobSandbox, LimitHits, Sandbox, SandboxError, default_signals_pty,
    probe as probe_sandbox,
};
pub use tasks::TaskSet;
pub use tool::{BashJobs, BashTool, JOBS_UNAVAILABLE, StartError, TOOL_NAME};
