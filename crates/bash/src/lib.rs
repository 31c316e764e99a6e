//! harness-bash: background shell commands as jobs (todo-jobs §6, decisions 11 and 13).
//!
//! [`BashProcess`] runs `bash -c COMMAND` in its own process group, reads stdout and stderr
//! concurrently into bounded buffers with a consuming cursor, spills the full output to files,
//! and cancels by signalling the whole group (SIGTERM, then SIGKILL after a grace period
//! measured through the [`harness_core::Clock`] seam).

mod buffer;
mod process;
mod render;

pub use process::{
    BashError, BashProcess, DEFAULT_KILL_GRACE, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPILL_BYTES,
    EndStatus, ProcessEnd, ProcessOptions, SpillOptions, StreamStats,
};
pub use render::{append_notice, dropped_notice, render_delta, signal_name};
