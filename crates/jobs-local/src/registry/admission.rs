//! Admission (todo-jobs §4.3): the preflight in the spec's order, the owner's liveness
//! check and cleanup hook, the per-owner admission bucket, and `start` itself.

use std::{
    collections::hash_map::Entry, num::NonZeroU64, panic::AssertUnwindSafe, panic::catch_unwind,
    sync::Arc, sync::Mutex,
};

use tokio::runtime::Handle;
use turnkit_core::{Agent, AgentError, MAX_SAFE_INTEGER, ScopeKey, lock, same_agent};
use turnkit_jobs::{JobError, JobHooks, JobId, JobKind, JobLabel, JobOutcome, JobStart, JobStatus};

use super::{Shared, UNSAVED_START_REASON};
use crate::journal;
use crate::{
    driver::Ticket, history::History, state::Cancel, state::OwnerEntry, state::OwnerInfo,
    state::OwnerKey, state::Record, state::State, state::Stream, state::Target, state::Teardown,
    state::owner_key, state::serves,
};

impl Shared {
    /// Registers the owner's cleanup hook unless it has one (§4.3 step 5.3).
    pub(super) fn ensure_owner_hook(
        &self,
        owner: &Arc<dyn Agent>,
        key: OwnerKey,
        chain: Arc<[ScopeKey]>,
    ) -> Result<(), JobError> {
        if lock(&self.state).owners.contains_key(&key) {
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
            let mut state = lock(&self.state);
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
            let mut state = lock(&self.state);
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
            let mut state = lock(&self.state);
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
            let mut state = lock(&self.state);
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
        let served = serves(&lock(&self.state).controllers, Some(&chain));
        self.preflight(served, kind, label, limit)?;
        live?;
        let id = owner.id().clone();
        if self.limits.journal {
            // The journal: no id this session's log has seen is issued again.
            let highest = journal::highest_ids(&*owner.session());
            let mut state = lock(&self.state);
            for (kind, n) in &highest {
                state.records.raise_counter(kind, *n);
            }
        }
        self.ensure_owner_hook(&owner, key, chain)?;
        let mut state = lock(&self.state);
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

    /// `start` (§4.3 steps 1–11).
    pub(super) fn start(self: &Arc<Self>, spec: JobStart) -> Result<JobId, JobError> {
        let sh = self;
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
                lock(&sh.state).release(key);
                return Err(JobError::Producer(error));
            }
            Err(_) => {
                lock(&sh.state).release(key);
                return Err(JobError::Producer("producer run panicked".into()));
            }
        };
        let JobHooks {
            cancel,
            done,
            read_output,
            progress,
            trace,
            voice,
        } = hooks;
        let progress_handle = progress.clone();
        let voice_handle = voice.clone();
        let started_at = sh.now_millis();
        let stream = read_output.map(|read| {
            Arc::new(Mutex::new(Stream {
                read,
                history: History::new(sh.limits.output_history_bytes),
            }))
        });
        // The kind for the job's span, kept only when a subscriber wants `harness.job` spans
        // (an interest check, cached per call site, when none does).
        let span_kind = tracing::span_enabled!(tracing::Level::INFO).then(|| kind.clone());
        // What the journal's `job/start` needs, kept only when the journal is on.
        let journal_owner = info.as_ref().filter(|_| sh.limits.journal).cloned();
        let (journal_kind, journal_label) = if journal_owner.is_some() {
            (kind.clone(), label.clone())
        } else {
            (JobKind::new(""), JobLabel::new(""))
        };
        // 8.–9. Id and record.
        let (id, slot, seq, disposed, orphaned, observers) = {
            let mut state = lock(&sh.state);
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
                voice,
                status: JobStatus::Running,
                detail: None,
                output: None,
                started_at,
                finished_at: 0,
                reported: false,
                waiters: None,
                span: None,
                teardown: None,
                earlier: false,
                unjournaled: false,
            });
            // The owner's cleanup may have run while `run` was executing (another thread
            // disposed it): then nothing else would ever tear this job down.
            let orphaned = key.is_some_and(|k| !state.owners.contains_key(&k));
            (id, slot, seq, state.disposed, orphaned, observers)
        };
        // A start the journal could not record is stopped below, before `start` returns.
        let unsaved = match &journal_owner {
            Some(owner) if sh.limits.journal => sh
                .journal_start(
                    owner,
                    &id,
                    &journal_kind,
                    &journal_label,
                    started_at,
                    trace.as_deref(),
                )
                .err(),
            _ => None,
        };
        if unsaved.is_some()
            && let Some(record) = lock(&sh.state).records.at_mut(slot, seq)
        {
            record.unjournaled = true;
        }
        if let Some(kind) = span_kind {
            sh.attach_span(&id, &kind, Ticket { slot, seq });
        }
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
        // The job's notices go to the notice listeners, from here on (earlier ones first).
        if let Some(voice) = voice_handle {
            let weak = sh.me.clone();
            let job = id.clone();
            voice.set_sink(Arc::new(move |notice| {
                if let Some(shared) = weak.upgrade() {
                    shared.job_noticed(&job, &notice);
                }
            }));
        }
        // Why a job whose start was not saved could not be stopped either.
        let mut not_stopped = None;
        if unsaved.is_some() {
            // No work may run without a durable record of it: the job is stopped at once,
            // before its `done` is handed to the driver (which may poll it on another worker
            // at once), and marked reported by the kill, so no notice follows.
            let owner = journal_owner.as_ref().map(|o| &o.id);
            if let Err(error) = sh.kill(&id, owner, Some(UNSAVED_START_REASON)) {
                let error = error.to_string();
                tracing::warn!(
                    "jobs: could not stop {id}, whose start was not saved; its work may be orphaned: {error}"
                );
                // As a teardown does with a throwing cancel: the record ends now (first
                // settlement wins over whatever `done` says later), reported, since the
                // refusal below tells the caller.
                if let Some(record) = lock(&sh.state).records.at_mut(slot, seq) {
                    record.reported = true;
                }
                sh.settle(
                    &id,
                    JobOutcome::failed().with_detail(format!(
                        "cancel threw after its start could not be saved; work may be orphaned: {error}"
                    )),
                );
                not_stopped = Some(error);
            }
        }
        // 10. Settlement continuation (always asynchronous).
        sh.hub.submit(&**sh, id.clone(), Ticket { slot, seq }, done);
        // 11. Observers.
        if let Some((observers, target)) = observers {
            sh.call_observers(&observers, &target);
        }
        if disposed {
            // Disposal began while `run` was executing: this job joins the teardown.
            sh.teardown_cancel(std::slice::from_ref(&id), Teardown::Service);
        } else if orphaned {
            let shared = sh.clone();
            let job = id.clone();
            let drain = async move {
                shared.drain(&[job], Teardown::Owner).await;
            };
            if let Some(runtime) = sh.runtime() {
                drop(sh.tasks.spawn_on(drain, &runtime));
            }
        }
        // A start the journal could not record was stopped above; it is refused only now, so
        // that a disposal or owner teardown that began during `run` still takes it in (an
        // orphaned record would otherwise never be removed).
        match (unsaved, not_stopped) {
            (Some(reason), None) => Err(JobError::StartNotSaved { id, reason }),
            (Some(reason), Some(error)) => {
                Err(JobError::StartNotSavedNotStopped { id, reason, error })
            }
            (None, _) => Ok(id),
        }
    }
}

impl Shared {
    /// Appends job `id`'s `job/start` to its owner's session log (the journal).
    ///
    /// # Errors
    /// Why the payload could not be encoded or the session refused the append; the caller
    /// stops the job and refuses the start.
    fn journal_start(
        &self,
        owner: &OwnerInfo,
        id: &JobId,
        kind: &JobKind,
        label: &JobLabel,
        started_at: i64,
        trace: Option<&str>,
    ) -> Result<(), String> {
        journal::start_payload(id, kind, label, started_at, trace)
            .map_err(|error| error.to_string())
            .and_then(|payload| {
                owner
                    .agent
                    .session()
                    .append_raw(journal::JOB_START_EVENT, payload)
                    .map(drop)
                    .map_err(|error| error.to_string())
            })
    }

    /// Opens job `id`'s `harness.job` span (fields `job.id`, `job.kind`, `job.owner` — the
    /// owner's session id, absent for an unowned job — and `job.status`, recorded at
    /// settlement; `gen_ai.tool.call.id`, the id of the tool call that started it, and
    /// `gen_ai.conversation.id`, the owner's session id; see `docs/observability.md`) and keeps it in the record until settlement.
    /// Made outside the lock: a subscriber's code never runs under it.
    fn attach_span(&self, id: &JobId, kind: &JobKind, ticket: Ticket) {
        let span = tracing::info_span!(
            "harness.job",
            job.id = %id,
            job.kind = %kind,
            job.owner = tracing::field::Empty,
            job.status = tracing::field::Empty,
            "gen_ai.tool.call.id" = tracing::field::Empty,
            "gen_ai.conversation.id" = tracing::field::Empty,
        );
        if span.is_disabled() {
            return;
        }
        let mut state = lock(&self.state);
        let Some(record) = state.records.at_mut(ticket.slot, ticket.seq) else {
            return;
        };
        if let Some(owner) = &record.owner {
            span.record("job.owner", tracing::field::display(&owner.id));
            span.record("gen_ai.conversation.id", tracing::field::display(&owner.id));
        }
        if let Some(call) = turnkit_core::current_tool_call_id() {
            span.record("gen_ai.tool.call.id", &*call);
        }
        if record.status.is_terminal() {
            // Settled on another thread meanwhile: the span closes with its status.
            span.record("job.status", tracing::field::display(record.status));
            drop(state);
            drop(span);
            return;
        }
        record.span = Some(Box::new(span));
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
