//! Containment of a job's process tree (decision 13): which processes belong to a job, and
//! how they are all signalled, whatever session or process group they moved to.
//!
//! Three layers, strongest first:
//!
//! 1. **A cgroup v2 per job** (Linux, where the host may create one under its own cgroup):
//!    the shell waits at a start gate ([`GATE`]) until it has been moved into the cgroup,
//!    so every descendant is born in it, and `cgroup.kill` stops all members at once. The
//!    members are the cgroup's processes (no scan of the process table). Leaving it takes a
//!    write to another cgroup's `cgroup.procs`, which session and group changes never do.
//!    The folder is removed once its last member has exited.
//! 2. **An unpredictable marker in the environment** (`HARNESS_BASH_JOB=<32 hex digits>`),
//!    inherited by every descendant that does not clear its environment, found by scanning
//!    `/proc/<pid>/environ`; plus the descendants of every member found through the parent
//!    links in `/proc/<pid>/stat`. Used when there is no cgroup. A process that clears its
//!    environment and leaves its parent before the stop is not found.
//! 3. **The process group** (every Unix): the shell leads its own group, signalled as a whole
//!    while the shell has not been reaped.
//!
//! Signals to single processes go through a pidfd opened before the membership is checked
//! again, so a recycled pid is never signalled by mistake.
//!
//! Not used: `PR_SET_CHILD_SUBREAPER`. It is an attribute of the whole host process: every
//! orphan of every child the host starts (not only our jobs) would be re-parented to the host
//! and stay a zombie unless the host reaps with `waitpid(-1)`, which would in turn steal the
//! exit statuses of child handles the host or its other libraries own.
//!
//! One topic per file: `tree` (a job's processes, [`JobTree`]), `cgroup` (layer 1),
//! `proc_scan` (layer 2), `random` (the marker), `leftovers` (a dead host's job, stopped at
//! its journal's reopening).

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(not(target_os = "linux"))]
#[path = "cgroup_unsupported.rs"]
mod cgroup;
mod leftovers;
mod proc_scan;
mod random;
mod tree;

pub(crate) use leftovers::stop_job_leftovers;
pub(crate) use random::random_hex;
pub use tree::JobTree;
pub(crate) use tree::Tree;

/// The host's own cgroup v2 folder, under which job cgroups are made (`None` without a
/// cgroup2 mount).
pub(crate) fn job_cgroup_parent() -> Option<std::path::PathBuf> {
    cgroup::parent().map(std::path::Path::to_path_buf)
}

/// The variable that carries a job's marker to every process it starts (its value is
/// [`JobTree::marker`]).
pub const MARKER_VAR: &str = "HARNESS_BASH_JOB";

/// The gate a shell waits at until it is inside its cgroup, run as
/// `bash --posix -c GATE bash -c COMMAND` with stdin a pipe from the host: it waits for
/// the line the host writes to open it, then replaces itself (same pid, group and
/// environment) with `bash -c COMMAND` reading `/dev/null`, so nothing the command runs ever
/// starts outside the cgroup. If the pipe closes with no line (the host died first), the
/// shell exits without running the command. The same gate holds a job whose start must be
/// saved before it runs ([`crate::ProcessOptions::hold_start`]). POSIX mode reads no startup file (`BASH_ENV` runs once, in the real shell),
/// and `exec` hands on the shell level unchanged (bash lowers `SHLVL` before it replaces
/// itself), so the command sees what it would without the gate.
pub(crate) const GATE: &str = "read -r _ && exec bash \"$@\" </dev/null";

/// The start gate for a process whose terminal is its controlling terminal (a PTY), run as
/// `bash --posix -c TTY_GATE bash PROGRAM ARGS…` with stdin a pipe from the host and stdout
/// and stderr the terminal: it waits for the pipe to close (the host closes it after
/// [`JobTree::adopt`]), then replaces itself (same pid, session, group and environment)
/// with `PROGRAM ARGS…` reading the controlling terminal (`/dev/tty`). Use it exactly when
/// [`JobTree::gated`] says so; see `docs/process-containment.md`.
pub const TTY_GATE: &str = "read -r _ || :; exec \"$@\" </dev/tty";

/// How a job's processes are contained (configuration key `containment`: `"auto"` or
/// `"processTree"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Containment {
    /// A cgroup v2 per job where one can be created (Linux), otherwise [`ProcessTree`]
    /// (the default).
    ///
    /// [`ProcessTree`]: Containment::ProcessTree
    #[default]
    Auto,
    /// No cgroup: the environment marker and the parent links in `/proc` (Linux), plus the
    /// process group.
    ProcessTree,
}

/// The mechanism in force for one process (see [`crate::BashProcess::mechanism`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mechanism {
    /// A cgroup v2 of its own (its members are the job), plus the process group.
    Cgroup,
    /// The environment marker and parent links in `/proc`, plus the process group.
    ProcessTree,
    /// The process group only (no `/proc`: Unixes other than Linux).
    ProcessGroup,
}

/// Whether a signal also goes to the job's process group ([`JobTree::signal`]). Only while
/// the leader is not reaped: afterwards the group id may name somebody else's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Also signal the process group (the leader has not been reaped).
    Include,
    /// Only the members found by the cgroup or the marker (the leader has been reaped).
    Skip,
}

#[cfg(test)]
#[path = "../contain_tests.rs"]
mod tests;
