//! [`BashProcess`]: one `bash -c COMMAND` in its own process group, with concurrent
//! stdout/stderr readers into bounded buffers, private spill files, a kill of the whole
//! process tree with a grace period, and reaping (todo-jobs §6, decisions 11, 13 and 17).
//!
//! Three tokio tasks serve one process: a reader per pipe (pipe → spill file → bounded
//! buffer) and a supervisor that reaps the shell, escalates a cancel from SIGTERM to SIGKILL
//! after the grace period (measured through the [`Clock`](turnkit_core::Clock) seam), and publishes the
//! [`ProcessEnd`] only once the shell is reaped **and** both pipes are closed. The readers
//! belong to the supervisor (it joins them, and aborts them if it is dropped); the
//! supervisor, the grace timer that stops what a finished command left running and a
//! cgroup removal waiting for members run in the process's [`TaskSet`](crate::TaskSet),
//! which its family joins. Which
//! processes a signal reaches is decided in the `contain` module: every process the
//! command started, whatever session or process group it moved to.
//!
//! One topic per file: `options` (how to run), `end` (what is reported), `spawn`
//! ([`BashProcess`]), `shared` (state the tasks and handles share), `streams` (the pipe
//! readers), `spill` (spill files) and `supervise` (reaping and the cancel escalation).

mod end;
mod options;
mod shared;
mod spawn;
mod spill;
mod streams;
mod supervise;

pub use end::{BashError, EndStatus, ProcessEnd, StreamStats};
pub use options::{
    DEFAULT_KILL_GRACE, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_SPILL_BYTES, ProcessOptions,
    SpillOptions, SpillRetention,
};
pub use spawn::BashProcess;
pub(crate) use spill::private_folder;
