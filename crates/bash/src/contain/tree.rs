//! [`Tree`], the processes of one job, and [`JobTree`], its public face for producers that
//! start their own process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rustix::process::{Pid, Signal};

use super::{Containment, Group, Mechanism, cgroup, proc_scan, random_hex};
use crate::TaskSet;

/// Rounds of "find members, signal the new ones" per signal: each round catches the
/// children forked while the previous one ran.
const ROUNDS: usize = 8;

/// The processes of one job.
#[derive(Debug)]
pub(crate) struct Tree {
    marker: String,
    pgid: Option<Pid>,
    cgroup: Option<PathBuf>,
    /// Where the removal of the cgroup waits for its members to exit.
    tasks: Option<TaskSet>,
}

impl Tree {
    /// A fresh marker and, under [`Containment::Auto`] where possible, an empty cgroup.
    pub(crate) fn prepare(mode: Containment) -> Self {
        let marker = random_hex();
        let cgroup = match mode {
            Containment::Auto => cgroup::create(&marker),
            Containment::ProcessTree => None,
        };
        Self {
            marker,
            pgid: None,
            cgroup,
            tasks: None,
        }
    }

    /// Makes `tasks` the set in which the removal of the cgroup, when this tree is dropped
    /// while members are still exiting, waits for them.
    pub(crate) fn track(&mut self, tasks: TaskSet) {
        self.tasks = Some(tasks);
    }

    /// The marker value (the variable is [`MARKER_VAR`](crate::MARKER_VAR)).
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// Whether a cgroup is prepared: the shell must then be started behind the gate
    /// ([`GATE`]) and released only after [`Tree::adopt`].
    pub(crate) fn gated(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Records the started shell (its pid is its group id) and moves it into the cgroup.
    /// The shell is still waiting at the gate, so it has forked nothing yet. If the move
    /// fails the cgroup is given up (the process tree still contains the job).
    pub(crate) fn adopt(&mut self, pid: Pid) {
        self.pgid = Some(pid);
        if let Some(dir) = &self.cgroup
            && let Err(error) = cgroup::enter(dir, pid)
        {
            tracing::warn!(
                "bash: cannot move process {pid:?} into {}: {error}; containing by process tree",
                dir.display()
            );
            cgroup::remove(dir, self.tasks.as_ref());
            cgroup::refuse();
            self.cgroup = None;
        }
    }

    /// The mechanism in force.
    pub(crate) fn mechanism(&self) -> Mechanism {
        if self.cgroup.is_some() {
            Mechanism::Cgroup
        } else if proc_scan::available() {
            Mechanism::ProcessTree
        } else {
            Mechanism::ProcessGroup
        }
    }

    /// Signals every process of the job (and the group, if `group` says so).
    pub(crate) fn signal(&self, signal: Signal, group: Group) {
        if group == Group::Include
            && let Some(pgid) = self.pgid
            // kill(-1) would signal every process we may signal: never.
            && pgid.as_raw_pid() > 1
            && let Err(error) = rustix::process::kill_process_group(pgid, signal)
            && error != rustix::io::Errno::SRCH
        {
            tracing::warn!("bash: signalling process group {pgid:?} failed: {error}");
        }
        if signal == Signal::KILL
            && let Some(dir) = &self.cgroup
        {
            cgroup::kill(dir);
        }
        let mut signalled = BTreeSet::new();
        for _ in 0..ROUNDS {
            let fresh: Vec<proc_scan::Member> = proc_scan::members(&self.marker, self.cgroup())
                .into_iter()
                .filter(|m| signalled.insert(m.pid.as_raw_pid()))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for member in fresh {
                member.signal(signal);
            }
        }
    }

    /// Whether any process of the job is still alive (zombies do not count). Always false
    /// without `/proc`.
    pub(crate) fn has_members(&self) -> bool {
        !proc_scan::members(&self.marker, self.cgroup()).is_empty()
    }

    /// The job's cgroup v2 folder, if it has one.
    pub(crate) fn cgroup_dir(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }

    fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }
}

/// The processes of one job, for producers that start their own process instead of a
/// [`crate::BashProcess`] (a terminal in a PTY, for example): the same containment rules
/// (decision 13, `docs/process-containment.md`), reused rather than copied.
///
/// Use: [`JobTree::prepare`] before the spawn; put [`MARKER_VAR`](crate::MARKER_VAR)`=`[`JobTree::marker`] in
/// the process's environment and make it the leader of its own process group (or session);
/// if [`JobTree::gated`], start it behind a gate ([`TTY_GATE`](crate::TTY_GATE) for a PTY) and close the gate
/// only after [`JobTree::adopt`]; then stop it with [`JobTree::signal`] (SIGTERM, SIGKILL
/// after a grace) and check [`JobTree::has_members`]. Dropping the value removes the job's
/// cgroup once its members have exited; it signals nothing.
#[derive(Debug)]
pub struct JobTree {
    tree: Tree,
}

impl JobTree {
    /// A fresh unpredictable marker and, under [`Containment::Auto`] where the host may
    /// create one (Linux, cgroup v2), an empty cgroup of its own.
    pub fn prepare(mode: Containment) -> Self {
        Self {
            tree: Tree::prepare(mode),
        }
    }

    /// The marker (32 hex digits) to put in the process's environment as [`MARKER_VAR`](crate::MARKER_VAR).
    pub fn marker(&self) -> &str {
        self.tree.marker()
    }

    /// Whether a cgroup is prepared: the process must then wait at a gate until
    /// [`JobTree::adopt`] has moved it into the cgroup.
    pub fn gated(&self) -> bool {
        self.tree.gated()
    }

    /// Records the started leader (`pid` is also its process group id) and moves it into
    /// the cgroup, if any. A failed move gives the cgroup up (logged); the marker and the
    /// process group still contain the job.
    pub fn adopt(&mut self, pid: u32) {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            self.tree.adopt(pid);
        }
    }

    /// The strongest mechanism in force.
    pub fn mechanism(&self) -> Mechanism {
        self.tree.mechanism()
    }

    /// Makes `tasks` the set in which the removal of the job's cgroup (when this value is
    /// dropped while members are still exiting) waits for them; without one that wait runs
    /// on a task of its own.
    pub fn track(&mut self, tasks: TaskSet) {
        self.tree.track(tasks);
    }

    /// The job's cgroup v2 folder, if it has one (limits of a [`crate::JobSandbox`] are
    /// written there).
    pub fn cgroup_dir(&self) -> Option<&Path> {
        self.tree.cgroup_dir()
    }

    /// Sends `signal` to every live process of the job, and to its process group if `group`
    /// is [`Group::Include`]. Never signals this process or PID 1; errors are logged.
    pub fn signal(&self, signal: Signal, group: Group) {
        self.tree.signal(signal, group);
    }

    /// Whether any process of the job is alive (zombies do not count). Always `false`
    /// without `/proc` (Unixes other than Linux).
    pub fn has_members(&self) -> bool {
        self.tree.has_members()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(dir) = self.cgroup.take() {
            cgroup::remove(&dir, self.tasks.as_ref());
        }
    }
}
