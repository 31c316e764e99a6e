//! The object-safe [`JobRegistry`] trait (todo-jobs §3.2) and its listener types.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use turnkit_core::{Agent, AgentId, Registration, RegistrationScope};

use crate::{
    BoxError, JobError, JobId, JobKind, JobRead, JobReadAt, JobSnapshot, JobStart, KillOutcome,
};

/// A future a [`JobDoneListener`] may hand back: the registry spawns it, never awaits it, and
/// logs `jobs: onJobDone listener rejected for <id>: <err>` if it fails.
pub type ListenerFuture = BoxFuture<'static, Result<(), BoxError>>;

/// A completion listener (todo-jobs §3.1 `JobDoneListener`): called once per job, at
/// settlement, with the terminal snapshot and the exact owner instance recorded at start
/// (`None` for an unowned job).
///
/// `Err` is logged as `jobs: onJobDone listener threw for <id>: <err>`; a returned future is
/// observed but never awaited. Later listeners run either way. Listeners run without any
/// registry lock held and may call back into the registry.
pub type JobDoneListener = Arc<
    dyn Fn(&JobSnapshot, Option<&Arc<dyn Agent>>) -> Result<Option<ListenerFuture>, BoxError>
        + Send
        + Sync,
>;

/// A running-notice listener: called for every notice a running job raises through its
/// [`crate::JobVoice`], with the job's snapshot at that moment (`running` or `stopping`), the
/// exact owner instance recorded at start (`None` for an unowned job) and the notice. `Err`
/// is logged as `jobs: onJobNotice listener threw for <id>: <err>`. Listeners run without any
/// registry lock held, on the thread that raised the notice.
pub type JobNoticeListener = Arc<
    dyn Fn(&JobSnapshot, Option<&Arc<dyn Agent>>, &crate::JobNotice) -> Result<(), BoxError>
        + Send
        + Sync,
>;

/// A change observer (todo-jobs §3.1 `JobsChangedListener`, §4.7): called after every commit
/// that changes what `list` returns for an owner, with that exact owner instance, or `None`
/// when an unowned job changed (which affects every caller's visible set).
///
/// `Err` is logged as `jobs: onJobsChanged listener threw: <err>`; the commit stands.
/// Observers run without any registry lock held and may call `list` / `get`.
pub type JobsChangedListener =
    Arc<dyn Fn(Option<&Arc<dyn Agent>>) -> Result<(), BoxError> + Send + Sync>;

/// A lost-jobs listener (the job journal, `docs/event-log.md` "job/lost"): called once when a
/// journaled session is reopened and its log shows jobs that were still running when the
/// previous host stopped, with their snapshots (`failed`, detail
/// [`LOST_DETAIL`](crate::LOST_DETAIL)) in start order and the reopened owner.
///
/// `Ok(Some(message_id))` means the listener handed the owner a notice, the message with
/// that id; once a turn of the owner claims it (`AgentEvent::InboxClaimed`), the registry
/// records the delivery, so the jobs are not reported again. A notice the owner never claims
/// (the host stops first, or the agent is disposed) is not recorded, and the next reopening
/// reports the jobs again: at least once. `Ok(None)` (nothing delivered) and `Err` (logged as
/// `jobs: onJobsLost listener threw: <err>`) leave them unreported. Listeners run without any
/// registry lock held.
pub type JobsLostListener =
    Arc<dyn Fn(&[JobSnapshot], &Arc<dyn Agent>) -> Result<Option<String>, BoxError> + Send + Sync>;

/// Stops what a job of an earlier run left running, given the trace its start recorded
/// ([`crate::JobHooks::trace`]): blocking and bounded (the host that ran it is gone, so
/// nothing else will), and `true` when it found something running and stopped it, `false`
/// when nothing of the job was left. See [`JobRegistry::on_leftovers`].
pub type LeftoverStopper = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The background-job registry seam (todo-jobs §3, decision 8), shared as
/// `Arc<dyn JobRegistry>`. turnkit-jobs-local provides the implementation.
///
/// **Callers.** Operations take the calling agent's id (`None` for a call without an agent).
/// An owned job is accessible only to a caller with the owner's id; unowned jobs are open to
/// everyone. The fence shared by get / read / read_at / kill / wait gives
/// [`JobError::UnknownJob`] (`unknown job <id>`) or [`JobError::Foreign`]
/// (`job <id> belongs to another session`).
///
/// **Scopes.** Controllers, completion listeners and change observers are owner-relative
/// (todo-jobs §1.3): a [`RegistrationScope::Global`] registration serves every owner and
/// unowned jobs; a [`RegistrationScope::Scoped`] one serves the owners whose scope chain
/// contains its key. Listeners for an owner run global first, then from the farthest ancestor
/// scope to the nearest, each in registration order. Dropping (or unregistering) the returned
/// [`Registration`] removes the registration; unregistering is idempotent.
#[async_trait]
pub trait JobRegistry: Send + Sync {
    /// Starts a job (todo-jobs §4.3): runs every preflight check (controller, kind, label,
    /// output limit, owner, admission) before calling `spec.run`, then allocates
    /// `<kind>-<N>`, records the job as `running` and notifies change observers.
    /// Settlement always happens later, never inside `start`.
    ///
    /// # Errors
    /// In check order: [`JobError::Unavailable`], [`JobError::NoController`],
    /// [`JobError::InvalidKind`], [`JobError::InvalidLabel`],
    /// [`JobError::InvalidOutputLimit`], [`JobError::NoAgentRegistry`],
    /// [`JobError::NotRegisteredInstance`], [`JobError::Owner`], [`JobError::LimitReached`],
    /// then [`JobError::Producer`] from `run`. On any of these no id is consumed and nothing
    /// is recorded. Last, with a job journal, [`JobError::StartNotSaved`]: the job was
    /// recorded (its id is consumed) but its start could not be journaled, so it was stopped
    /// before `start` returned.
    fn start(&self, spec: JobStart) -> Result<JobId, JobError>;

    /// The jobs owned by `caller`'s id plus all unowned jobs, in registration order, as fresh
    /// snapshots. `None` sees unowned jobs only. Never fails, never shows foreign jobs.
    fn list(&self, caller: Option<&AgentId>) -> Vec<JobSnapshot>;

    /// A snapshot without side effects (neither the read cursor nor `reported` changes).
    ///
    /// # Errors
    /// [`JobError::UnknownJob`], [`JobError::Foreign`].
    fn get(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobSnapshot, JobError>;

    /// A consuming read (todo-jobs §4.5): the stream delta since the previous read (also after
    /// settlement, `""` once drained), or for a final-output-only job `""` while live and the
    /// outcome's output (idempotently) once terminal. A read of a terminal job sets
    /// `reported`; the snapshot is taken after that.
    ///
    /// # Errors
    /// [`JobError::UnknownJob`], [`JobError::Foreign`], [`JobError::Producer`] from
    /// `read_output`.
    fn read(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobRead, JobError>;

    /// A non-consuming read for observers (decision 8): the text after byte offset `cursor`
    /// of everything the job has produced, from a bounded per-job history. Does not change
    /// what [`JobRegistry::read`] returns next (beyond the bounded-history limit) and never
    /// sets `reported`.
    ///
    /// # Errors
    /// [`JobError::UnknownJob`], [`JobError::Foreign`], [`JobError::Producer`] from
    /// `read_output`.
    fn read_at(
        &self,
        id: &JobId,
        cursor: u64,
        caller: Option<&AgentId>,
    ) -> Result<JobReadAt, JobError>;

    /// Requests cancellation (todo-jobs §4.5): on a terminal job sets `reported` and returns
    /// [`KillOutcome::AlreadyFinished`] without calling cancel; otherwise calls the producer's
    /// cancel with `reason` first and, only if it succeeds, marks the job `stopping` and
    /// `reported` and notifies change observers. A second kill of a `stopping` job cancels
    /// and notifies again.
    ///
    /// # Errors
    /// [`JobError::UnknownJob`], [`JobError::Foreign`], or [`JobError::Producer`] from a
    /// throwing cancel, in which case nothing changed.
    fn kill(
        &self,
        id: &JobId,
        caller: Option<&AgentId>,
        reason: Option<&str>,
    ) -> Result<KillOutcome, JobError>;

    /// Waits up to `timeout` (monotonic, through the registry's clock) for the job to settle
    /// (todo-jobs §4.5). A caller holding a model's number of milliseconds converts it with
    /// [`JobError::wait_timeout`], which refuses what is not a finite number > 0. Resolves with the terminal snapshot (and sets
    /// `reported`), or on timeout with the live snapshot. Never cancels the job. A live waiter
    /// at the moment of settlement makes the settlement `reported` before listeners run.
    ///
    /// `cancel` aborts only the wait, and only while the job is live: an abort is honoured at
    /// once (a settlement after it does not count this waiter), while an abort after the
    /// settlement released the wait is harmless.
    ///
    /// # Errors
    /// [`JobError::UnknownJob`], [`JobError::Foreign`] (both checked before the timeout),
    /// [`JobError::InvalidWaitTimeout`] for a zero timeout (even for a terminal job),
    /// [`JobError::WaitAborted`].
    async fn wait(
        &self,
        id: &JobId,
        timeout: Duration,
        caller: Option<&AgentId>,
        cancel: Option<CancellationToken>,
    ) -> Result<JobSnapshot, JobError>;

    /// Registers a completion listener for the owners `scope` serves (todo-jobs §4.6 step 9).
    /// No listener runs after the registry is disposed.
    fn on_job_done(&self, scope: RegistrationScope, listener: JobDoneListener) -> Registration;

    /// Registers a change observer for the owners `scope` serves (todo-jobs §4.7). Observers
    /// also receive the notifications of service disposal.
    fn on_jobs_changed(
        &self,
        scope: RegistrationScope,
        listener: JobsChangedListener,
    ) -> Registration;

    /// Declares that a controller named `name` serves the owners of `scope`; `start` refuses
    /// an owner no attached controller serves. Duplicate names are independent registrations.
    fn attach_controller(&self, scope: RegistrationScope, name: &str) -> Registration;

    /// Registers a running-notice listener for the owners `scope` serves (see
    /// [`JobNoticeListener`]). A registry that runs no job with a voice never calls it: the
    /// default registers nothing.
    fn on_job_notice(&self, scope: RegistrationScope, listener: JobNoticeListener) -> Registration {
        let _ = (scope, listener);
        Registration::noop()
    }

    /// Registers a lost-jobs listener for the owners `scope` serves (the job journal; see
    /// [`JobsLostListener`]). A registry without a journal never calls it: the default
    /// registers nothing.
    fn on_jobs_lost(&self, scope: RegistrationScope, listener: JobsLostListener) -> Registration {
        let _ = (scope, listener);
        Registration::noop()
    }

    /// Registers `stopper` for the jobs of `kind` (the job journal, todo-jobs §5.9): when a
    /// reopened session's journal has a job of that kind that never settled (its host died)
    /// and whose start recorded a trace ([`crate::JobHooks::trace`]), the registry calls
    /// `stopper(trace)` before it reports the job; `true` (something was still running and
    /// has been stopped) makes the job `killed` with
    /// [`LEFTOVERS_STOPPED_DETAIL`](crate::LEFTOVERS_STOPPED_DETAIL) instead of lost. A
    /// registry without a journal never calls it: the default registers nothing. A later
    /// registration for the same kind replaces an earlier one until it is undone.
    fn on_leftovers(&self, kind: &JobKind, stopper: LeftoverStopper) -> Registration {
        let _ = (kind, stopper);
        Registration::noop()
    }

    /// Whether job `id`, as `caller` sees it, is a record of an earlier run of its session,
    /// read back from the job journal (finished or lost before the host restarted) rather
    /// than a job this registry ran. Unknown and foreign ids are `false`, as is every id of
    /// a registry without a journal (the default).
    fn is_from_earlier_run(&self, id: &JobId, caller: Option<&AgentId>) -> bool {
        let _ = (id, caller);
        false
    }
}
