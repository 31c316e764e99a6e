//! [`LocalJobRegistry`]: the in-process [`JobRegistry`] (todo-jobs §4).
//!
//! One `std::sync::Mutex` guards the state. Producer hooks (`run`, `cancel`, `read_output`),
//! host calls (agent lookup, scope chains, dispose hooks) and listeners are never called while
//! it is held: snapshots are taken under the lock and delivered after releasing it, in the
//! order of §4.6 / §7.

use std::collections::hash_map::Entry;
use std::num::NonZeroU64;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::channel::oneshot;
use harness_core::{
    Agent, AgentError, AgentId, Clock, MAX_SAFE_INTEGER, Registration, RegistrationScope, ScopeKey,
    same_agent,
};
use harness_jobs::{
    BoxError, JobDoneListener, JobError, JobHooks, JobId, JobKind, JobLabel, JobOutcome, JobRead,
    JobReadAt, JobRegistry, JobSnapshot, JobStart, JobStatus, JobsChangedListener, KillOutcome,
};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::driver::{Hub, error_text};
use crate::history::History;
use crate::state::{
    Cancel, CancelFn, Layered, Layers, OwnerEntry, OwnerInfo, OwnerKey, Record, Records, State,
    Stream, Target, Waiter, for_each_route, owner_key, serves,
};
use crate::{AgentLookup, JobLimits};

/// The teardown reason used when an owner is disposed (§4.8).
pub const OWNER_DISPOSED_REASON: &str = "owner disposed";

/// The teardown reason used when the registry is disposed (§4.9).
pub const SERVICE_DISPOSED_REASON: &str = "jobs service disposed";

/// The longest wait timer, in milliseconds (2^31−1, upstream's timer maximum; todo-jobs
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
/// Beyond [`JobRegistry`] it offers [`LocalJobRegistry::dispose`] (service disposal, §4.9).
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
    me: Weak<Shared>,
}

impl std::fmt::Debug for LocalJobRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
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
            me: me.clone(),
        });
        Self { shared }
    }

    /// The limits in force.
    pub fn limits(&self) -> JobLimits {
        self.shared.limits
    }

    /// Whether [`LocalJobRegistry::dispose`] has begun.
    pub fn is_disposed(&self) -> bool {
        self.shared.lock().disposed
    }

    /// The number of owners that currently have a cleanup hook attached (one per exact owner
    /// instance with at least one job since its last disposal; §4.8).
    pub fn owner_cleanups(&self) -> usize {
        self.shared.lock().owners.len()
    }

    /// The number of records held (all owners, terminal ones included).
    pub fn record_count(&self) -> usize {
        self.shared.lock().records.len()
    }

    /// Service disposal (§4.9): closes completion listeners for good, cancels every live job
    /// with `jobs service disposed` (setting `reported` first), awaits every settlement (a
    /// throwing cancel force-fails its job instead), empties the store, notifies change
    /// observers once per distinct owner that had records, then detaches (and runs) every
    /// owner-cleanup hook. Later starts fail with `background jobs unavailable: the job
    /// registry is disposed`. Idempotent.
    pub async fn dispose(&self) {
        let sh = &self.shared;
        let ids: Vec<JobId> = {
            let mut state = sh.lock();
            sh.listeners_closed.store(true, Ordering::SeqCst);
            state.disposed = true;
            state.records.ids()
        };
        sh.teardown_cancel(&ids, SERVICE_DISPOSED_REASON);
        loop {
            let all: Vec<JobId> = sh.lock().records.ids();
            sh.await_settled(&all).await;
            let grown = sh.lock().records.len() != all.len();
            if !grown {
                break;
            }
        }
        let (targets, entries, removed) = {
            let mut state = sh.lock();
            let records: Vec<&Record> = state.records.values();
            let mut targets: Vec<Target> = Vec::new();
            let mut seen: Vec<Option<OwnerKey>> = Vec::new();
            for record in records {
                let key = record.owner.as_ref().map(|o| o.key());
                if !seen.contains(&key) {
                    seen.push(key);
                    targets.push(record.route_target());
                }
            }
            // Dropped after the lock: records hold producer hooks and agents.
            let removed = state.records.take_all();
            state.unowned_live = 0;
            let entries: Vec<OwnerEntry> = state.owners.drain().map(|(_, e)| e).collect();
            (targets, entries, removed)
        };
        drop(removed);
        for target in &targets {
            sh.notify_changed(target);
        }
        for entry in entries {
            if let Some(hook) = entry.info.agent.remove_dispose_hook(entry.hook) {
                hook().await;
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn now_millis(&self) -> i64 {
        self.clock.now_millis()
    }

    /// A weak handle to this registry, for tasks and hooks that must not keep it alive.
    pub(crate) fn weak(&self) -> Weak<Shared> {
        self.me.clone()
    }

    /// The runtime to spawn on: the caller's, else the one the registry was made on.
    pub(crate) fn runtime(&self) -> Option<Handle> {
        Handle::try_current().ok().or_else(|| self.runtime.clone())
    }

    /// Registers the owner's cleanup hook unless it has one (§4.3 step 5.3).
    fn ensure_owner_hook(
        &self,
        owner: &Arc<dyn Agent>,
        key: OwnerKey,
        chain: Arc<[ScopeKey]>,
    ) -> Result<(), JobError> {
        if self.lock().owners.contains_key(&key) {
            return Ok(());
        }
        let weak = self.me.clone();
        let hook_id = owner.add_dispose_hook(Box::new(move || {
            Box::pin(async move {
                if let Some(shared) = weak.upgrade() {
                    shared.owner_disposed(key).await;
                }
            })
        }))?;
        let id = owner.id().clone();
        let lost_race = {
            let mut state = self.lock();
            match state.owners.entry(key) {
                Entry::Occupied(_) => true,
                Entry::Vacant(vacant) => {
                    let info = OwnerInfo::new(owner.clone(), id, chain);
                    vacant.insert(OwnerEntry {
                        info: Arc::new(info),
                        verified: None,
                        hook: hook_id,
                        live: 0,
                    });
                    false
                }
            }
        };
        if lost_race {
            // Another start registered the hook first; drop ours without running it.
            drop(owner.remove_dispose_hook(hook_id));
        }
        Ok(())
    }

    /// Steps 1–6 of §4.3, in order: controller fence, fields, owner, admission. On success
    /// one place in the owner's (or the unowned) bucket is reserved; the caller releases it if
    /// `run` fails. Returns the owner as recorded.
    ///
    /// An owner that already has an entry and was checked at the agent registry's current
    /// generation is admitted under one lock. Otherwise the agent lookup (a host call) runs
    /// without the lock, and its result is checked at step 5, after the earlier checks; an
    /// owner's first job also reads its scope chain and attaches its cleanup hook.
    fn admit(
        &self,
        owner: Option<Arc<dyn Agent>>,
        kind: &JobKind,
        label: &JobLabel,
        limit: Option<u64>,
    ) -> Result<Option<Arc<OwnerInfo>>, JobError> {
        let cap = self.limits.max_concurrent_jobs_per_owner;
        let Some(owner) = owner else {
            let mut state = self.lock();
            check_open(&state)?;
            self.preflight(serves(&state.controllers, None), kind, label, limit)?;
            reserve(&mut state.unowned_live, cap)?;
            return Ok(None);
        };
        let key = owner_key(&owner);
        // The owner's liveness (steps 5.1–5.2) needs a host lookup, made without the lock. An
        // owner verified at the agent registry's current generation skips it.
        let generation = self
            .agents
            .as_ref()
            .filter(|a| a.is_available())
            .and_then(|a| a.generation());
        if generation.is_some() {
            let mut state = self.lock();
            let state = &mut *state;
            check_open(state)?;
            if let Some(entry) = state.owners.get_mut(&key)
                && entry.verified == generation
            {
                let served = serves(&state.controllers, Some(&entry.info.chain));
                self.preflight(served, kind, label, limit)?;
                reserve(&mut entry.live, cap)?;
                return Ok(Some(entry.info.clone()));
            }
        }
        let live = self.check_live(&owner);
        {
            let mut state = self.lock();
            let state = &mut *state;
            check_open(state)?;
            if let Some(entry) = state.owners.get_mut(&key) {
                let served = serves(&state.controllers, Some(&entry.info.chain));
                self.preflight(served, kind, label, limit)?;
                live?;
                entry.verified = generation;
                reserve(&mut entry.live, cap)?;
                return Ok(Some(entry.info.clone()));
            }
        }
        // The first job of this owner instance.
        let chain: Arc<[ScopeKey]> = Arc::from(owner.scope_chain());
        let served = serves(&self.lock().controllers, Some(&chain));
        self.preflight(served, kind, label, limit)?;
        live?;
        let id = owner.id().clone();
        self.ensure_owner_hook(&owner, key, chain)?;
        let mut state = self.lock();
        let Some(entry) = state.owners.get_mut(&key) else {
            // The owner's cleanup ran since its hook was attached: it is disposing.
            return Err(JobError::Owner(AgentError::Disposed(id)));
        };
        entry.verified = generation;
        reserve(&mut entry.live, cap)?;
        Ok(Some(entry.info.clone()))
    }

    /// Steps 5.1–5.2 of §4.3: the agent registry exists and `owner` is the instance it holds.
    fn check_live(&self, owner: &Arc<dyn Agent>) -> Result<(), JobError> {
        let agents = self
            .agents
            .as_ref()
            .filter(|a| a.is_available())
            .ok_or(JobError::NoAgentRegistry)?;
        let live = agents.live_agent(owner.id());
        if live.is_some_and(|live| same_agent(&live, owner)) {
            Ok(())
        } else {
            Err(JobError::NotRegisteredInstance(owner.id().clone()))
        }
    }

    /// Steps 1–4 of §4.3, in order, given whether a controller serves the owner: the
    /// controller fence, a runtime to drive settlement, then kind, label and output limit.
    fn preflight(
        &self,
        served: bool,
        kind: &JobKind,
        label: &JobLabel,
        limit: Option<u64>,
    ) -> Result<(), JobError> {
        if !served {
            return Err(JobError::NoController);
        }
        self.check_runtime()?;
        check_fields(kind, label, limit)
    }

    /// Whether a runtime can drive settlement (`start` needs one): the one the registry was
    /// made on, or the caller's.
    fn check_runtime(&self) -> Result<(), JobError> {
        if self.runtime.is_some() || Handle::try_current().is_ok() {
            Ok(())
        } else {
            Err(JobError::Unavailable(
                "no tokio runtime is available to drive job settlement".to_owned(),
            ))
        }
    }

    /// Calls the change observers that serve `target` (§4.7), each contained.
    fn notify_changed(&self, target: &Target) {
        let observers = self.lock().observers.clone();
        if !observers.is_empty() {
            self.call_observers(&observers, target);
        }
    }

    /// Settles job `id` with `outcome` (§4.6). First wins: a terminal record is left alone
    /// and nobody is notified.
    pub(crate) fn settle(&self, id: &JobId, outcome: JobOutcome) {
        self.settle_where(outcome, |records| records.get_mut(id));
    }

    /// [`Shared::settle`] for the record in `slot` registered as `seq` (the driver knows
    /// both, so it skips the id lookup).
    pub(crate) fn settle_at(&self, slot: usize, seq: u64, outcome: JobOutcome) {
        self.settle_where(outcome, |records| records.at_mut(slot, seq));
    }

    fn settle_where(
        &self,
        outcome: JobOutcome,
        locate: impl FnOnce(&mut Records) -> Option<&mut Record>,
    ) {
        let now = self.now_millis();
        let released_hooks;
        let released_progress;
        let (snapshot, target, observers, listeners) = {
            let mut state = self.lock();
            let state = &mut *state;
            let Some(record) = locate(&mut state.records) else {
                return;
            };
            if record.status.is_terminal() {
                return;
            }
            record.status = outcome.status.into();
            record.detail = outcome.detail.map(Arc::from);
            record.output = match record.stream {
                Some(_) => None,
                None => outcome.output.map(String::into_boxed_str),
            };
            // A wall clock moved back never makes a record finish before it started.
            record.finished_at = now.max(record.started_at);
            // Released after the lock: dropping producer code never runs under it.
            released_hooks = record.cancel.take();
            released_progress = record.progress.take();
            let mut counted = false;
            let waiters = record.waiters.take().map_or_else(Vec::new, |w| *w);
            let mut released = Vec::new();
            for waiter in waiters {
                // An aborted wait does not count, even if its task has not run yet (§4.5).
                if waiter.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                    continue;
                }
                counted = true;
                released.push(waiter.resolve);
            }
            if counted {
                record.reported = true;
            }
            let snapshot = record.snapshot();
            for resolve in released {
                let _ = resolve.send(snapshot.clone());
            }
            let target = record.route_target();
            state.release(target.owner.as_ref().map(|o| o.key()));
            // Cloned only when there is somebody to call (an empty layer costs nothing).
            let observers = (!state.observers.is_empty()).then(|| state.observers.clone());
            let listeners =
                (!state.done_listeners.is_empty()).then(|| state.done_listeners.clone());
            (snapshot, target, observers, listeners)
        };
        drop(released_hooks);
        // The progress line stops notifying; its observer is dropped here, after the lock.
        if let Some(progress) = released_progress {
            drop(progress.replace_observer(None));
        }
        if self.draining.load(Ordering::SeqCst) > 0 {
            self.settled.notify_waiters();
        }
        if let Some(observers) = observers {
            self.call_observers(&observers, &target);
        }
        let Some(listeners) = listeners else { return };
        if self.listeners_closed.load(Ordering::SeqCst) {
            return;
        }
        for_each_route(&listeners, target.chain(), |listener| {
            // Disposal may begin on another thread meanwhile; no listener runs after it.
            if !self.listeners_closed.load(Ordering::SeqCst) {
                self.call_done_listener(listener, &snapshot, target.agent());
            }
        });
    }

    fn call_observers(&self, observers: &[Layered<JobsChangedListener>], target: &Target) {
        for_each_route(observers, target.chain(), |observer| {
            match catch_unwind(AssertUnwindSafe(|| observer(target.agent()))) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!("jobs: onJobsChanged listener threw: {}", error_text(&error));
                }
                Err(_) => tracing::warn!("jobs: onJobsChanged listener threw: Error: panicked"),
            }
        });
    }

    fn call_done_listener(
        &self,
        listener: &JobDoneListener,
        snapshot: &JobSnapshot,
        owner: Option<&Arc<dyn Agent>>,
    ) {
        let id = &snapshot.id;
        match catch_unwind(AssertUnwindSafe(|| listener(snapshot, owner))) {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(future))) => {
                let job = id.clone();
                let observed = async move {
                    let id = job;
                    let result = AssertUnwindSafe(future).catch_unwind().await;
                    match result {
                        Ok(Ok(())) => {}
                        Ok(Err(error)) => tracing::warn!(
                            "jobs: onJobDone listener rejected for {id}: {}",
                            error_text(&error)
                        ),
                        Err(_) => tracing::warn!(
                            "jobs: onJobDone listener rejected for {id}: Error: panicked"
                        ),
                    }
                };
                match self.runtime() {
                    Some(runtime) => drop(runtime.spawn(observed)),
                    None => tracing::warn!(
                        "jobs: onJobDone listener for {id} returned a future but no runtime can observe it"
                    ),
                }
            }
            Ok(Err(error)) => tracing::warn!(
                "jobs: onJobDone listener threw for {id}: {}",
                error_text(&error)
            ),
            Err(_) => tracing::warn!("jobs: onJobDone listener threw for {id}: Error: panicked"),
        }
    }

    /// Teardown cancellation (§4.8) of every live record in `ids` with `reason`.
    fn teardown_cancel(&self, ids: &[JobId], reason: &str) {
        for id in ids {
            let cancel = {
                let mut state = self.lock();
                let Some(record) = state.records.get_mut(id) else {
                    continue;
                };
                if record.status.is_terminal() {
                    continue;
                }
                record.reported = true;
                record.shared_cancel()
            };
            let Some(cancel) = cancel else { continue };
            match call_cancel(&cancel, Some(reason)) {
                Ok(()) => {
                    let target = {
                        let mut state = self.lock();
                        match state.records.get_mut(id) {
                            Some(record) if record.status.is_live() => {
                                record.status = JobStatus::Stopping;
                                Some(record.route_target())
                            }
                            _ => None,
                        }
                    };
                    if let Some(target) = target {
                        self.notify_changed(&target);
                    }
                }
                Err(error) => {
                    let error = error_text(&error);
                    tracing::warn!(
                        "jobs: cancel of {id} threw during teardown; job record forced failed and work may be orphaned: {error}"
                    );
                    self.settle(
                        id,
                        JobOutcome::failed().with_detail(format!(
                            "cancel threw during teardown; work may be orphaned: {error}"
                        )),
                    );
                }
            }
        }
    }

    /// Completes when every record in `ids` is terminal or gone.
    async fn await_settled(&self, ids: &[JobId]) {
        // Settlements wake `settled` only while somebody awaits it.
        self.draining.fetch_add(1, Ordering::SeqCst);
        let _draining = Draining(&self.draining);
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let done = {
                let state = self.lock();
                ids.iter()
                    .all(|id| state.records.get(id).is_none_or(|r| r.status.is_terminal()))
            };
            if done {
                return;
            }
            notified.await;
        }
    }

    /// The owner's cleanup (§4.8), run and awaited by the agent's disposal.
    async fn owner_disposed(&self, key: OwnerKey) {
        let (ids, entry) = {
            let mut state = self.lock();
            let Some(entry) = state.owners.remove(&key) else {
                return;
            };
            let ids: Vec<JobId> = state
                .records
                .owned_by(&entry.info.id)
                .filter(|r| r.owner.as_ref().is_some_and(|o| o.key() == key))
                .map(|r| r.id.clone())
                .collect();
            (ids, entry)
        };
        // The entry holds the agent: released after the lock.
        drop(entry);
        self.drain(&ids, OWNER_DISPOSED_REASON).await;
    }

    /// Teardown of `ids` (§4.8 steps 3–6): cancel, await settlement, remove, and notify the
    /// owner's observers if anything was removed.
    async fn drain(&self, ids: &[JobId], reason: &str) {
        self.teardown_cancel(ids, reason);
        self.await_settled(ids).await;
        if ids.is_empty() {
            return;
        }
        let removed = self.lock().records.remove_all(ids);
        let target = removed.last().map(Record::route_target).unwrap_or_default();
        drop(removed);
        self.notify_changed(&target);
    }

    /// The progress observer of job `id`: a change shows in `list`, so observers hear.
    fn progress_changed(&self, id: &JobId) {
        let target = {
            let state = self.lock();
            match state.records.get(id) {
                Some(record) if record.status.is_live() => record.route_target(),
                _ => return,
            }
        };
        self.notify_changed(&target);
    }
}

/// Step 0 of `start`: a disposed registry accepts nothing (§4.9).
fn check_open(state: &State) -> Result<(), JobError> {
    if state.disposed {
        Err(JobError::Unavailable(
            "the job registry is disposed".to_owned(),
        ))
    } else {
        Ok(())
    }
}

/// Steps 2–4 of §4.3: kind, label, output limit.
fn check_fields(kind: &JobKind, label: &JobLabel, limit: Option<u64>) -> Result<(), JobError> {
    if kind.as_str().is_empty() {
        return Err(JobError::InvalidKind);
    }
    if label.as_str().is_empty() {
        return Err(JobError::InvalidLabel);
    }
    if let Some(limit) = limit
        && (limit == 0 || limit > MAX_SAFE_INTEGER.unsigned_abs())
    {
        return Err(JobError::InvalidOutputLimit(limit));
    }
    Ok(())
}

/// Step 6 of §4.3: takes one place of a bucket holding `live` jobs, if under `cap`.
fn reserve(live: &mut u64, cap: u64) -> Result<(), JobError> {
    if *live >= cap {
        return Err(JobError::LimitReached { limit: cap });
    }
    *live += 1;
    Ok(())
}

fn call_cancel(cancel: &Arc<CancelFn>, reason: Option<&str>) -> Result<(), BoxError> {
    match catch_unwind(AssertUnwindSafe(|| cancel(reason))) {
        Ok(result) => result,
        Err(_) => Err("producer cancel panicked".into()),
    }
}

fn call_read(stream: &Mutex<Stream>) -> Result<String, JobError> {
    let mut stream = stream.lock().unwrap_or_else(|poison| poison.into_inner());
    let pulled = match catch_unwind(AssertUnwindSafe(|| (stream.read)())) {
        Ok(result) => result.map_err(JobError::Producer)?,
        Err(_) => return Err(JobError::Producer("producer read_output panicked".into())),
    };
    Ok(stream.history.consume(pulled))
}

fn call_read_at(stream: &Mutex<Stream>, cursor: u64) -> Result<(String, bool, u64), JobError> {
    let mut stream = stream.lock().unwrap_or_else(|poison| poison.into_inner());
    let pulled = match catch_unwind(AssertUnwindSafe(|| (stream.read)())) {
        Ok(result) => result.map_err(JobError::Producer)?,
        Err(_) => return Err(JobError::Producer("producer read_output panicked".into())),
    };
    stream.history.append(&pulled);
    Ok(stream.history.text_from(cursor))
}

fn register<T>(
    shared: &Arc<Shared>,
    scope: RegistrationScope,
    item: T,
    pick: fn(&mut State) -> &mut Layers<T>,
) -> Registration
where
    T: Clone + Send + Sync + 'static,
{
    let id = {
        let mut state = shared.lock();
        let id = state.next_id();
        Arc::make_mut(pick(&mut state)).push(Layered { id, scope, item });
        id
    };
    let weak = Arc::downgrade(shared);
    Registration::new(move || {
        if let Some(shared) = weak.upgrade() {
            let mut state = shared.lock();
            let layers = pick(&mut state);
            if layers.iter().any(|l| l.id == id) {
                Arc::make_mut(layers).retain(|l| l.id != id);
            }
        }
    })
}

#[async_trait]
impl JobRegistry for LocalJobRegistry {
    fn start(&self, spec: JobStart) -> Result<JobId, JobError> {
        let sh = &self.shared;
        let JobStart {
            kind,
            label,
            output_limit_bytes,
            owner,
            run,
        } = spec;
        // 1.–6. Preflight; on success one place in the owner's bucket is reserved.
        let info = sh.admit(owner, &kind, &label, output_limit_bytes)?;
        let key = info.as_ref().map(|i| i.key());
        // 7. Run.
        let hooks = match catch_unwind(AssertUnwindSafe(run)) {
            Ok(Ok(hooks)) => hooks,
            Ok(Err(error)) => {
                sh.lock().release(key);
                return Err(JobError::Producer(error));
            }
            Err(_) => {
                sh.lock().release(key);
                return Err(JobError::Producer("producer run panicked".into()));
            }
        };
        let JobHooks {
            cancel,
            done,
            read_output,
            progress,
        } = hooks;
        let progress_handle = progress.clone();
        let started_at = sh.now_millis();
        let stream = read_output.map(|read| {
            Arc::new(Mutex::new(Stream {
                read,
                history: History::new(sh.limits.output_history_bytes),
            }))
        });
        // 8.–9. Id and record.
        let (id, slot, seq, disposed, orphaned, observers) = {
            let mut state = sh.lock();
            let state = &mut *state;
            state.next_seq += 1;
            let seq = state.next_seq;
            // The change observers to call, with the owner they are about (§4.7).
            let observers = (!state.observers.is_empty()).then(|| {
                let target = Target {
                    owner: info.clone(),
                };
                (state.observers.clone(), target)
            });
            let owner = info;
            let (id, slot) = state.records.issue(kind, |id, kind| Record {
                seq,
                id,
                kind,
                label,
                limit: output_limit_bytes.and_then(NonZeroU64::new),
                owner,
                cancel: Some(Cancel::Owned(cancel)),
                stream,
                progress,
                status: JobStatus::Running,
                detail: None,
                output: None,
                started_at,
                finished_at: 0,
                reported: false,
                waiters: None,
            });
            // The owner's cleanup may have run while `run` was executing (another thread
            // disposed it): then nothing else would ever tear this job down.
            let orphaned = key.is_some_and(|k| !state.owners.contains_key(&k));
            (id, slot, seq, state.disposed, orphaned, observers)
        };
        // A progress change shows in `list`, so observers hear of it. Installed after the
        // lock (the producer's own observer, if any, is dropped here) and before step 11's
        // notification, which covers any change made before.
        if let Some(progress) = progress_handle {
            let weak = sh.me.clone();
            let job = id.clone();
            drop(progress.replace_observer(Some(Arc::new(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.progress_changed(&job);
                }
            }))));
        }
        // 10. Settlement continuation (always asynchronous).
        sh.hub.submit(sh, id.clone(), slot, seq, done);
        // 11. Observers.
        if let Some((observers, target)) = observers {
            sh.call_observers(&observers, &target);
        }
        if disposed {
            // Disposal began while `run` was executing: this job joins the teardown.
            sh.teardown_cancel(std::slice::from_ref(&id), SERVICE_DISPOSED_REASON);
        } else if orphaned {
            let shared = sh.clone();
            let job = id.clone();
            let drain = async move {
                shared.drain(&[job], OWNER_DISPOSED_REASON).await;
            };
            if let Some(runtime) = sh.runtime() {
                drop(runtime.spawn(drain));
            }
        }
        Ok(id)
    }

    fn list(&self, caller: Option<&AgentId>) -> Vec<JobSnapshot> {
        let state = self.shared.lock();
        state
            .records
            .visible(caller)
            .into_iter()
            .map(Record::snapshot)
            .collect()
    }

    fn get(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobSnapshot, JobError> {
        let mut state = self.shared.lock();
        Ok(state.find(id, caller)?.snapshot())
    }

    fn read(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobRead, JobError> {
        let stream = {
            let mut state = self.shared.lock();
            let record = state.find(id, caller)?;
            match &record.stream {
                Some(stream) => stream.clone(),
                None => {
                    let terminal = record.status.is_terminal();
                    let text = match (&record.output, terminal) {
                        (Some(output), true) => String::from(&**output),
                        _ => String::new(),
                    };
                    if terminal {
                        record.reported = true;
                    }
                    return Ok(JobRead {
                        text,
                        snapshot: record.snapshot(),
                    });
                }
            }
        };
        let text = call_read(&stream)?;
        let mut state = self.shared.lock();
        let record = state
            .records
            .get_mut(id)
            .ok_or_else(|| JobError::UnknownJob(id.clone()))?;
        if record.status.is_terminal() {
            record.reported = true;
        }
        Ok(JobRead {
            text,
            snapshot: record.snapshot(),
        })
    }

    fn read_at(
        &self,
        id: &JobId,
        cursor: u64,
        caller: Option<&AgentId>,
    ) -> Result<JobReadAt, JobError> {
        let stream = {
            let mut state = self.shared.lock();
            let record = state.find(id, caller)?;
            match &record.stream {
                Some(stream) => stream.clone(),
                None => {
                    let output = match (&record.output, record.status.is_terminal()) {
                        (Some(output), true) => &**output,
                        _ => "",
                    };
                    let start = usize::try_from(cursor)
                        .unwrap_or(usize::MAX)
                        .min(output.len());
                    let start = output.ceil_char_boundary(start);
                    return Ok(JobReadAt {
                        text: output[start..].to_owned(),
                        next_cursor: output.len() as u64,
                        dropped: false,
                        snapshot: record.snapshot(),
                    });
                }
            }
        };
        let (text, dropped, end) = call_read_at(&stream, cursor)?;
        let state = self.shared.lock();
        let record = state
            .records
            .get(id)
            .ok_or_else(|| JobError::UnknownJob(id.clone()))?;
        Ok(JobReadAt {
            text,
            next_cursor: end,
            dropped,
            snapshot: record.snapshot(),
        })
    }

    fn kill(
        &self,
        id: &JobId,
        caller: Option<&AgentId>,
        reason: Option<&str>,
    ) -> Result<KillOutcome, JobError> {
        let sh = &self.shared;
        let (cancel, was_reported) = {
            let mut state = sh.lock();
            let record = state.find(id, caller)?;
            if record.status.is_terminal() {
                record.reported = true;
                return Ok(KillOutcome::AlreadyFinished);
            }
            // Mark it reported before the producer hears of the kill: a producer that settles
            // as soon as it is cancelled (on another thread) must not send a completion
            // notice for a job the caller killed (C-131).
            let was_reported = record.reported;
            record.reported = true;
            (record.shared_cancel(), was_reported)
        };
        if let Some(cancel) = cancel
            && let Err(error) = call_cancel(&cancel, reason)
        {
            // A throwing cancel changes nothing (§4.5): restore the bit.
            let mut state = sh.lock();
            if let Some(record) = state.records.get_mut(id) {
                record.reported = was_reported;
            }
            return Err(JobError::Producer(error));
        }
        let target = {
            let mut state = sh.lock();
            match state.records.get_mut(id) {
                Some(record) => {
                    record.reported = true;
                    if record.status.is_live() {
                        record.status = JobStatus::Stopping;
                        Some(record.route_target())
                    } else {
                        None
                    }
                }
                None => None,
            }
        };
        if let Some(target) = target {
            sh.notify_changed(&target);
        }
        Ok(KillOutcome::Requested)
    }

    async fn wait(
        &self,
        id: &JobId,
        timeout: Duration,
        caller: Option<&AgentId>,
        cancel: Option<CancellationToken>,
    ) -> Result<JobSnapshot, JobError> {
        let sh = &self.shared;
        let (waiter_id, resolved) = {
            let mut state = sh.lock();
            let state = &mut *state;
            state.next_id += 1;
            let waiter_id = state.next_id;
            let record = state.find(id, caller)?;
            if timeout.is_zero() {
                return Err(JobError::invalid_wait_timeout(0.0));
            }
            if record.status.is_terminal() {
                record.reported = true;
                return Ok(record.snapshot());
            }
            if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return Err(JobError::WaitAborted);
            }
            let (resolve, resolved) = oneshot::channel();
            record.waiters.get_or_insert_default().push(Waiter {
                id: waiter_id,
                cancel: cancel.clone(),
                resolve,
            });
            (waiter_id, resolved)
        };
        let sleep = sh.clock.sleep(timeout.min(MAX_WAIT));
        let aborted = async {
            match &cancel {
                Some(cancel) => cancel.cancelled().await,
                None => futures::future::pending().await,
            }
        };
        tokio::pin!(resolved, sleep, aborted);
        let woke = tokio::select! {
            biased;
            result = &mut resolved => Woke::Settled(result),
            () = &mut aborted => Woke::Aborted,
            () = &mut sleep => Woke::TimedOut,
        };
        let settled = match woke {
            Woke::Settled(Ok(snapshot)) => Some(snapshot),
            // Dropped unsent: the settlement saw this wait already aborted.
            Woke::Settled(Err(_)) => return Err(JobError::WaitAborted),
            Woke::Aborted | Woke::TimedOut => {
                let still_waiting = {
                    let mut state = sh.lock();
                    match state.records.get_mut(id) {
                        Some(record) => match &mut record.waiters {
                            Some(waiters) => {
                                let before = waiters.len();
                                waiters.retain(|w| w.id != waiter_id);
                                waiters.len() != before
                            }
                            None => false,
                        },
                        None => false,
                    }
                };
                // A settlement may have released this wait in the meantime; it wins.
                let released = if still_waiting {
                    None
                } else {
                    resolved.as_mut().now_or_never().and_then(Result::ok)
                };
                match (woke, released) {
                    (_, Some(snapshot)) => Some(snapshot),
                    (Woke::Aborted, None) => return Err(JobError::WaitAborted),
                    _ => None,
                }
            }
        };
        let mut state = sh.lock();
        match state.records.get_mut(id) {
            Some(record) => {
                if record.status.is_terminal() {
                    record.reported = true;
                }
                Ok(record.snapshot())
            }
            None => settled.ok_or_else(|| JobError::UnknownJob(id.clone())),
        }
    }

    fn on_job_done(&self, scope: RegistrationScope, listener: JobDoneListener) -> Registration {
        register(&self.shared, scope, listener, |s| &mut s.done_listeners)
    }

    fn on_jobs_changed(
        &self,
        scope: RegistrationScope,
        listener: JobsChangedListener,
    ) -> Registration {
        register(&self.shared, scope, listener, |s| &mut s.observers)
    }

    fn attach_controller(&self, scope: RegistrationScope, name: &str) -> Registration {
        register(&self.shared, scope, Arc::from(name), |s| &mut s.controllers)
    }
}

/// Counts one teardown awaiting settlements while alive.
struct Draining<'a>(&'a AtomicUsize);

impl Drop for Draining<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What ended a wait.
enum Woke {
    Settled(Result<JobSnapshot, oneshot::Canceled>),
    Aborted,
    TimedOut,
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
