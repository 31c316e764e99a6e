//! How one command is run: [`ProcessOptions`], its spill files ([`SpillOptions`],
//! [`SpillRetention`]) and the defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use turnkit_core::Clock;

use crate::contain::Containment;
use crate::{Sandbox, TaskSet};

/// Default cap of unread bytes kept in memory per stream: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// Default cap of bytes written to each spill file: 64 MiB.
pub const DEFAULT_MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;
/// Default grace between SIGTERM and SIGKILL on cancel: 2 s.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Where and how much of the full output to spill to files (decisions 11 and 17).
///
/// The folder is created on first use with mode 0700 (missing parents with the default
/// mode). A folder that is not a directory, is owned by another user, or is group or world
/// writable is refused: nothing is spilled, a warning is logged, and the dropped-output
/// notice says `(unavailable)`. Files are created new (never opened through a link) with
/// mode 0600 and the unpredictable names `bash-<32 hex digits>.stdout` / `.stderr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillOptions {
    /// The folder.
    pub dir: PathBuf,
    /// Bytes written to each file at most; later output is not spilled.
    pub max_bytes: u64,
    /// What happens to the files when the last handle of the process is dropped (the job
    /// record is removed, or the registry disposed).
    pub retention: SpillRetention,
}

impl SpillOptions {
    /// Spill files in `dir`, at most `max_bytes` each, removed with the process handle.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self {
            dir: dir.into(),
            max_bytes,
            retention: SpillRetention::Remove,
        }
    }
}

/// Whether spill files outlive their process handle (decision 17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpillRetention {
    /// Removed when the last handle is dropped (the default).
    #[default]
    Remove,
    /// Left in place for the host (only offered for a folder the host configured).
    Keep,
}

/// How to run one command.
#[derive(Clone)]
pub struct ProcessOptions {
    /// The command, run as `bash -c COMMAND`.
    pub command: String,
    /// Working directory; `None` inherits the host's.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Unread bytes kept in memory per stream (default [`DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output_bytes: usize,
    /// Spill files for the full output; `None` spills nothing (the dropped-output notice
    /// then says `(unavailable)`).
    pub spill: Option<SpillOptions>,
    /// Time between SIGTERM and SIGKILL on cancel (default [`DEFAULT_KILL_GRACE`]).
    pub kill_grace: Duration,
    /// How the process tree is contained (default [`Containment::Auto`]).
    pub containment: Containment,
    /// The confinement of every process of the job (default `None`: none; see
    /// [`Sandbox`]).
    pub sandbox: Option<Arc<Sandbox>>,
    /// Measures the grace period.
    pub clock: Arc<dyn Clock>,
    /// Whether the shell waits at its start gate until [`BashProcess::release`] (default
    /// `false`: it runs at once). Until then nothing of the command runs; if the host dies
    /// first, the gate reads the end of its input and the shell exits without running it.
    /// The job journal uses it so a job's command runs only once its `job/start` is
    /// durable.
    ///
    /// [`BashProcess::release`]: crate::BashProcess::release
    pub hold_start: bool,
    /// The set the process's tasks run in (its supervisor, the grace timer that stops what
    /// it left running, the removal of its cgroup). Default: a set of its own; a family
    /// gives every process it starts its own set, which it joins at disposal
    /// ([`TaskSet::shutdown`]).
    pub tasks: TaskSet,
}

impl ProcessOptions {
    /// Options with the defaults: inherited directory and environment, 1 MiB per stream, no
    /// spill files, 2 s grace.
    pub fn new(command: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            command: command.into(),
            cwd: None,
            env: BTreeMap::new(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            spill: None,
            kill_grace: DEFAULT_KILL_GRACE,
            containment: Containment::Auto,
            sandbox: None,
            clock,
            hold_start: false,
            tasks: TaskSet::new(),
        }
    }
}

impl std::fmt::Debug for ProcessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessOptions")
            .field("command", &self.command)
            .field("cwd", &self.cwd)
            .field("env", &self.env)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("spill", &self.spill)
            .field("kill_grace", &self.kill_grace)
            .field("containment", &self.containment)
            .field("sandbox", &self.sandbox)
            .field("hold_start", &self.hold_start)
            .finish_non_exhaustive()
    }
}
