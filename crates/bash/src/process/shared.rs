//! The state one process's tasks and handles share, and the stops that happen when the
//! last handle goes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::Signal;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use turnkit_core::Clock;

use super::end::ProcessEnd;
use super::streams::Streams;
use crate::contain::{Group, Tree};
use crate::{JobSandbox, TaskSet};

pub(super) struct Shared {
    pub(super) streams: Mutex<Streams>,
    /// Signalled after every change of the streams (one permit is stored).
    pub(super) output_ready: Notify,
    pub(super) cancel: CancellationToken,
    /// Set once the process is reaped and its pipes are closed: no more group signals.
    pub(super) finished: AtomicBool,
    /// Set once a read after the end carried the line of the proxy's refusals.
    pub(super) refusals_told: AtomicBool,
    pub(super) tree: Arc<Tree>,
    /// The job's confinement (its temporary folder and limit cgroups live as long as this).
    pub(super) sandbox: Option<JobSandbox>,
    /// For the stop of processes left behind by a finished command.
    pub(super) grace: Duration,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) runtime: tokio::runtime::Handle,
    /// The set the process's tasks run in.
    pub(super) tasks: TaskSet,
    pub(super) end: watch::Sender<Option<ProcessEnd>>,
    /// The write end of the start gate while the shell is held at it
    /// ([`ProcessOptions::hold_start`](super::ProcessOptions::hold_start)).
    pub(super) gate: Mutex<Option<std::os::fd::OwnedFd>>,
}

impl Shared {
    /// Signals every process of the job and its process group, unless the process has
    /// finished.
    pub(super) fn signal_group(&self, signal: Signal) {
        if self.finished.load(Ordering::SeqCst) {
            return;
        }
        self.tree.signal(signal, Group::Include);
    }

    /// Stops what a finished command left running (background processes that closed or
    /// never held the pipes): SIGTERM now, SIGKILL after the grace. The group id is not
    /// used, since the shell is reaped; the marker and the cgroup still name the job's
    /// processes exactly.
    pub(super) fn stop_leftovers(&self) {
        if !self.tree.has_members() {
            return;
        }
        self.tree.signal(Signal::TERM, Group::Skip);
        // The guard kills when the grace ends, or at once when the task set shuts down (or
        // the runtime drops the task unrun).
        let last_resort = KillOnDrop(self.tree.clone());
        self.tasks
            .drop_after(self.clock.sleep(self.grace), last_resort, &self.runtime);
    }

    pub(super) fn request_cancel(&self) {
        if self.cancel.is_cancelled() {
            return;
        }
        // Signal at once, so a busy runtime does not delay the stop; the supervisor arms the
        // grace timer when it sees the token.
        self.signal_group(Signal::TERM);
        self.cancel.cancel();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The supervisor is gone without finishing (its runtime shut down): kill the tree
        // as a last resort (the shell itself also gets `kill_on_drop`).
        if !self.finished.load(Ordering::SeqCst) {
            self.signal_group(Signal::KILL);
        }
        // Spill files live as long as the process handle: the job record owns them (each
        // `SpillFile` removes its file when dropped with the streams).
    }
}

/// Sends SIGKILL to what is left of a job's tree when dropped.
pub(super) struct KillOnDrop(pub(super) Arc<Tree>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(Signal::KILL, Group::Skip);
    }
}

pub(super) struct Handle {
    pub(super) shared: Arc<Shared>,
    pub(super) pid: u32,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Nobody can observe or stop the process any more: stop it (the supervisor still
        // escalates to SIGKILL and reaps), or what it left running.
        if self.shared.finished.load(Ordering::SeqCst) {
            self.shared.stop_leftovers();
        } else {
            self.shared.request_cancel();
        }
    }
}
