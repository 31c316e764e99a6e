//! [`TaskSet`]: the tasks of a family's processes, owned and joined.

use std::future::Future;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The tasks that serve a family's processes (a process's supervisor, the grace timer that
/// kills what a stopped process left, the removal of a job cgroup once its members exited),
/// and the signal that ends them early.
///
/// Cheap to clone (clones share the set). A family's launcher owns one and gives it to every
/// process it starts ([`ProcessOptions::tasks`](crate::ProcessOptions::tasks)); its
/// `Installed` joins it with [`TaskSet::shutdown`]. A process started with a set of its own
/// (the default) is served the same way, by a set nobody else joins.
#[derive(Clone, Debug, Default)]
pub struct TaskSet {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl TaskSet {
    /// An empty set, not stopped.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of the set's tasks still alive; 0 once [`TaskSet::shutdown`] returned.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    /// Whether none of the set's tasks is alive.
    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }

    /// Whether [`TaskSet::shutdown`] was called.
    pub fn is_stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Spawns `task` on `runtime` as a member of the set. A task spawned after
    /// [`TaskSet::shutdown`] still runs, and should end at once: it can check
    /// [`TaskSet::stopped`].
    pub fn spawn_on<F>(&self, task: F, runtime: &tokio::runtime::Handle)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.tracker.spawn_on(task, runtime));
    }

    /// Spawns a member that holds `guard` until `wait` completes or the set is shut down,
    /// then drops it: a grace period whose guard kills what is left when it is dropped ends
    /// at once on shutdown. On a runtime that is shutting down the task is dropped unrun, and
    /// `guard` with it.
    pub fn drop_after<G>(
        &self,
        wait: impl Future<Output = ()> + Send + 'static,
        guard: G,
        runtime: &tokio::runtime::Handle,
    ) where
        G: Send + 'static,
    {
        let stopped = self.stopped();
        self.spawn_on(
            async move {
                tokio::select! {
                    () = wait => {}
                    () = stopped => {}
                }
                drop(guard);
            },
            runtime,
        );
    }

    /// Completes once [`TaskSet::shutdown`] was called: a task that waits (for a grace
    /// period, for processes to exit) races its wait against this and finishes early.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        self.stop.clone().cancelled_owned()
    }

    /// Ends the set: every task is told to finish now (a supervisor kills its process
    /// tree with SIGKILL and stops reading its pipes, a grace timer kills at once instead
    /// of when the grace ends), then waits until none of the set's tasks is alive.
    /// Idempotent.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}
