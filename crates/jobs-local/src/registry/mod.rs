//! [`LocalJobRegistry`]: the in-process [`JobRegistry`](turnkit_jobs::JobRegistry) (todo-jobs §4).
//!
//! This file holds the registry's handle and shared core; each topic has its own room:
//! `admission` (§4.3: preflight, owner checks, `start`), `settlement` (§4.6, the change
//! observers of §4.7 and the completion listeners), `reads` (`list`, `get`, `read`,
//! `read_at`, `wait`; §4.4–§4.5), `teardown` (`kill`, owner teardown §4.8, service disposal
//! §4.9) and `face` (the `JobRegistry` impl, which only delegates, and the registration
//! layers). The settlement driver (`driver.rs`) reaches the registry only through its
//! [`crate::driver::Settle`] seam.
//!
//! One `std::sync::Mutex` guards the state. Producer hooks (`run`, `cancel`, `read_output`),
//! host calls (agent lookup, scope chains, dispose hooks) and listeners are never called while
//! it is held: snapshots are taken under the lock and delivered after releasing it, in the
//! order of §4.6 / §7.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{Clock, lock};
use turnkit_jobs::{JobKind, LeftoverStopper};

use crate::driver::Hub;
use crate::state::State;
use crate::{AgentLookup, JobLimits};

/// The teardown reason used when an owner is disposed (§4.8).
pub const OWNER_DISPOSED_REASON: &str = "owner disposed";

/// The teardown reason used when the registry is disposed (§4.9).
pub const SERVICE_DISPOSED_REASON: &str = "jobs service disposed";

/// The kill reason given to a job whose `job/start` the journal could not append: the job is
/// stopped before `start` returns [`JobError::StartNotSaved`](turnkit_jobs::JobError::StartNotSaved).
pub const UNSAVED_START_REASON: &str = turnkit_jobs::UNSAVED_REASON;

/// The longest wait timer, in milliseconds (2^31−1, the spec's timer maximum; todo-jobs
/// §4.5, marked ambiguous there). Longer waits are clamped to it: they return the live snapshot then.
pub const MAX_WAIT_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// [`MAX_WAIT_TIMEOUT_MS`] as a [`Duration`].
const MAX_WAIT: Duration = Duration::from_millis(2_147_483_647);

/// The in-process background-job registry (todo-jobs §4, decision 8).
///
/// Cheap to clone (a handle). Construct it directly with [`LocalJobRegistry::new`] or through
/// [`crate::install`]. Settlement runs on a driver task spawned on the tokio runtime current
/// at `start` (or at construction), so `start` must be called with a runtime available; jobs
/// started while a driver is running join it (one task drives them all, see `driver.rs`).
///
/// Every task the registry spawns (the settlement driver, the report of a reopened session's
/// lost jobs, the observation of a future returned by a completion listener, the drain of a
/// job whose owner was disposed while it started) is tracked: [`LocalJobRegistry::dispose`]
/// waits until none is alive ([`LocalJobRegistry::running_tasks`]).
///
/// Beyond [`JobRegistry`](turnkit_jobs::JobRegistry) it offers [`LocalJobRegistry::dispose`] (service disposal, §4.9).
#[derive(Clone)]
pub struct LocalJobRegistry {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// `listenersClosed` (§4.2): set once, at service disposal.
    listeners_closed: AtomicBool,
    /// Woken after every settlement while `draining` is non-zero; teardown re-checks its
    /// records.
    settled: Notify,
    /// How many teardowns are awaiting settlements.
    draining: AtomicUsize,
    clock: Arc<dyn Clock>,
    agents: Option<Arc<dyn AgentLookup>>,
    limits: JobLimits,
    runtime: Option<Handle>,
    /// Drives every job's `done` (§4.6).
    hub: Arc<Hub>,
    /// Every task the registry spawns (the settlement driver, lost-jobs reports, observers
    /// of listener futures, orphaned-job drains); disposal closes it and waits.
    tasks: TaskTracker,
    /// Cancelled at the end of disposal: a lost-jobs report still waiting for its claim
    /// stops waiting.
    shutdown: CancellationToken,
    /// The leftover stoppers by kind (`on_leftovers`), newest last, with their
    /// registration numbers.
    stoppers: Mutex<Vec<(u64, JobKind, LeftoverStopper)>>,
    me: Weak<Shared>,
}

impl std::fmt::Debug for LocalJobRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("LocalJobRegistry")
            .field("limits", &self.shared.limits)
            .field("records", &state.records.len())
            .field("disposed", &state.disposed)
            .finish()
    }
}

impl LocalJobRegistry {
    /// A registry with `limits`, stamping times with `clock` (also used for wait timeouts)
    /// and checking owners against `agents` (`None`: owned starts are refused, §4.3 5.1).
    pub fn new(
        limits: JobLimits,
        clock: Arc<dyn Clock>,
        agents: Option<Arc<dyn AgentLookup>>,
    ) -> Self {
        let shared = Arc::new_cyclic(|me| Shared {
            state: Mutex::new(State::default()),
            listeners_closed: AtomicBool::new(false),
            settled: Notify::new(),
            draining: AtomicUsize::new(0),
            clock,
            agents,
            limits,
            runtime: Handle::try_current().ok(),
            hub: Arc::new(Hub::default()),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            stoppers: Mutex::new(Vec::new()),
            me: me.clone(),
        });
        Self { shared }
    }

    /// A handle that does not keep the registry alive.
    pub(crate) fn downgrade(&self) -> Weak<Shared> {
        Arc::downgrade(&self.shared)
    }

    /// The registry behind `weak`, if it is still alive.
    pub(crate) fn upgrade(weak: &Weak<Shared>) -> Option<Self> {
        weak.upgrade().map(|shared| Self { shared })
    }

    /// The limits in force.
    pub fn limits(&self) -> JobLimits {
        self.shared.limits
    }

    /// Whether [`LocalJobRegistry::dispose`] has begun.
    pub fn is_disposed(&self) -> bool {
        lock(&self.shared.state).disposed
    }

    /// The number of owners that currently have a cleanup hook attached (one per exact owner
    /// instance with at least one job since its last disposal; §4.8).
    pub fn owner_cleanups(&self) -> usize {
        lock(&self.shared.state).owners.len()
    }

    /// The number of the registry's tasks still alive: the settlement driver while a job's
    /// `done` is pending, plus any lost-jobs report, listener-future observation or orphaned-job
    /// drain in flight; 0 once [`LocalJobRegistry::dispose`] returned.
    pub fn running_tasks(&self) -> usize {
        self.shared.tasks.len()
    }

    /// The number of records held (all owners, terminal ones included).
    pub fn record_count(&self) -> usize {
        lock(&self.shared.state).records.len()
    }

    /// The job journal (`journal: true`) at the (re)opening of `owner`'s session: the
    /// finished and lost jobs its log records become terminal records of this registry (read
    /// by `list`, `get`, `read`; [`JobRegistry::is_from_earlier_run`](turnkit_jobs::JobRegistry::is_from_earlier_run)
    /// says which), and jobs still running when the previous host stopped — a `job/start`
    /// without `job/settle`, or settled by a teardown — are handed once to the lost-jobs
    /// listeners on the runtime, the delivery recorded as `job/lost`. A fork reports none of
    /// its parent's jobs. [`crate::install`] calls this for every agent the host publishes;
    /// with the journal off it does nothing.
    pub fn session_opened(&self, owner: &Arc<dyn turnkit_core::Agent>) {
        self.shared.reopened(owner);
    }

    /// Service disposal (§4.9): closes completion listeners for good, cancels every live job
    /// with `jobs service disposed` (setting `reported` first), awaits every settlement (a
    /// throwing cancel force-fails its job instead), empties the store, notifies change
    /// observers once per distinct owner that had records, then detaches (and runs) every
    /// owner-cleanup hook. Last it stops the registry's tasks and waits until none is alive:
    /// the settlement driver exits, dropping any `done` still pending (a force-failed job's),
    /// a lost-jobs report stops waiting for its claim, and a future returned by a completion
    /// listener is awaited to its end. Later starts fail with `background jobs unavailable:
    /// the job registry is disposed`. Idempotent.
    pub async fn dispose(&self) {
        self.shared.dispose().await;
    }
}

impl Shared {
    pub(super) fn now_millis(&self) -> i64 {
        self.clock.now_millis()
    }

    /// The runtime to spawn on: the caller's, else the one the registry was made on.
    pub(super) fn runtime(&self) -> Option<Handle> {
        Handle::try_current().ok().or_else(|| self.runtime.clone())
    }
}

mod admission;
mod face;
mod notices;
mod reads;
mod reopen;
mod settlement;
mod teardown;
