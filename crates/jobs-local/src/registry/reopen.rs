//! The job journal at a session's reopening: the finished and lost jobs of earlier runs come
//! back as terminal records, and the jobs lost since are reported once, through the
//! lost-jobs listeners, with the delivery recorded as `job/lost` (`docs/event-log.md`).

use std::{
    panic::AssertUnwindSafe, panic::catch_unwind, sync::Arc, sync::atomic::AtomicU64,
    sync::atomic::Ordering,
};

use turnkit_core::{Agent, AgentEvent, AgentId, Registration, SessionId, lock};
use turnkit_jobs::{
    JobId, JobKind, JobSnapshot, JobStatus, LEFTOVERS_STOPPED_DETAIL, LeftoverStopper,
};

use super::Shared;
use crate::journal::{self, JOB_LOST_EVENT};
use crate::{
    driver::error_text, state::OwnerInfo, state::Record, state::Target, state::for_each_route,
    state::owner_key,
};

impl Shared {
    /// A journaled session was (re)opened as `owner`: its earlier jobs become terminal
    /// records of this registry and its lost jobs are reported (on the runtime, after this
    /// returns). A job whose id this registry holds (a live owner instance's, or another
    /// session's) is neither. Nothing happens with the journal off, after disposal, or for
    /// an empty journal.
    pub(super) fn reopened(&self, owner: &Arc<dyn Agent>) {
        if !self.limits.journal || lock(&self.state).disposed {
            return;
        }
        let session = owner.session();
        let mut view = journal::read_journal(&*session, self.now_millis());
        self.stop_leftovers(&mut view);
        if view.history.is_empty() && view.highest.is_empty() {
            return;
        }
        let key = owner_key(owner);
        let chain = Arc::from(owner.scope_chain());
        if self.ensure_owner_hook(owner, key, chain).is_err() {
            return;
        }
        let session_id = SessionId::from(owner.id());
        let (info, inserted) = {
            let mut state = lock(&self.state);
            let state = &mut *state;
            let Some(info) = state.owners.get(&key).map(|e| e.info.clone()) else {
                return;
            };
            // Per history entry: whether it was stored (not held by this registry already,
            // as the job of a live owner instance or another session).
            let mut inserted = Vec::with_capacity(view.history.len());
            for earlier in &view.history {
                state.next_seq += 1;
                let seq = state.next_seq;
                let owner = Some(info.clone());
                let stored =
                    state
                        .records
                        .issue_at(earlier.kind.clone(), earlier.number, |id, kind| Record {
                            seq,
                            id,
                            kind,
                            label: earlier.label.clone(),
                            limit: None,
                            owner,
                            cancel: None,
                            stream: None,
                            progress: None,
                            voice: None,
                            status: earlier.status,
                            detail: earlier.detail.as_deref().map(Arc::from),
                            output: earlier.output.as_deref().map(Box::from),
                            started_at: earlier.started_at,
                            finished_at: earlier.finished_at,
                            reported: true,
                            waiters: None,
                            span: None,
                            teardown: None,
                            earlier: true,
                            unjournaled: false,
                        });
                inserted.push(stored.is_some());
            }
            for (kind, n) in &view.highest {
                state.records.raise_counter(kind, *n);
            }
            (info, inserted)
        };
        if inserted.contains(&true) {
            self.notify_changed(&Target {
                owner: Some(info.clone()),
            });
        }
        let lost: Vec<JobSnapshot> = view
            .lost
            .iter()
            .filter(|&&i| inserted[i])
            .map(|&i| view.history[i].snapshot(&session_id))
            .collect();
        if lost.is_empty() {
            return;
        }
        let Some(runtime) = self.runtime() else {
            tracing::warn!(
                "jobs: no runtime can report the lost jobs of {}",
                owner.id()
            );
            return;
        };
        let Some(shared) = self.me.upgrade() else {
            return;
        };
        let tasks = shared.tasks.clone();
        drop(tasks.spawn_on(
            async move { shared.report_lost(&info, &lost).await },
            &runtime,
        ));
    }

    /// Hands `lost` to the lost-jobs listeners serving the owner; once a turn of the owner
    /// claimed a notice one of them delivered, appends (and flushes) the `job/lost` that keeps
    /// the jobs from being reported again. A notice never claimed records nothing; the
    /// registry's disposal ends the wait for the claim.
    async fn report_lost(&self, info: &OwnerInfo, lost: &[JobSnapshot]) {
        if self.listeners_closed.load(Ordering::SeqCst) || info.agent.is_disposed() {
            return;
        }
        // Listen before the notice is handed over: a turn may claim it at once. `None` is the
        // agent's disposal (no claim will come).
        let (claims_tx, mut claims) = tokio::sync::mpsc::unbounded_channel::<Option<String>>();
        let _claims = info
            .agent
            .subscribe(Arc::new(move |event: &AgentEvent| match event {
                AgentEvent::InboxClaimed { message, .. } => {
                    let _ = claims_tx.send(Some(message.id.clone()));
                }
                AgentEvent::Disposed => {
                    let _ = claims_tx.send(None);
                }
                _ => {}
            }));
        if info.agent.is_disposed() {
            return;
        }
        let listeners = lock(&self.state).lost_listeners.clone();
        let mut delivered: Vec<String> = Vec::new();
        for_each_route(
            &listeners,
            Some(&info.chain),
            |listener| match catch_unwind(AssertUnwindSafe(|| listener(lost, &info.agent))) {
                Ok(Ok(Some(message))) => delivered.push(message),
                Ok(Ok(None)) => {}
                Ok(Err(error)) => {
                    tracing::warn!("jobs: onJobsLost listener threw: {}", error_text(&error));
                }
                Err(_) => tracing::warn!("jobs: onJobsLost listener threw: Error: panicked"),
            },
        );
        if delivered.is_empty() {
            return;
        }
        loop {
            let claim = tokio::select! {
                claim = claims.recv() => claim,
                () = self.shutdown.cancelled() => return,
            };
            match claim {
                Some(Some(claimed)) if delivered.contains(&claimed) => break,
                Some(Some(_)) => {}
                Some(None) | None => return,
            }
        }
        let ids: Vec<JobId> = lost.iter().map(|s| s.id.clone()).collect();
        let session = info.agent.session();
        if let Err(error) = session.append(JOB_LOST_EVENT, journal::lost_payload(&ids)) {
            tracing::warn!(
                "jobs: could not journal the lost-jobs notice of {}: {error}",
                info.id
            );
            return;
        }
        if let Err(error) = session.flush().await {
            tracing::warn!(
                "jobs: could not flush the lost-jobs notice of {}: {error}",
                info.id
            );
        }
    }

    /// Registers `stopper` for `kind` (`JobRegistry::on_leftovers`); undone, it is removed.
    pub(super) fn add_stopper(&self, kind: &JobKind, stopper: LeftoverStopper) -> Registration {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        lock(&self.stoppers).push((number, kind.clone(), stopper));
        Registration::from_weak(self.me.clone(), move |shared: &Shared| {
            lock(&shared.stoppers).retain(|(n, _, _)| *n != number);
        })
    }

    /// Before the reopened journal's jobs are loaded: each owed job that never settled (its
    /// host died), recorded a trace and is not a job this registry holds is handed to its
    /// kind's stopper; one whose processes were still running, and are now stopped, becomes
    /// `killed` with [`LEFTOVERS_STOPPED_DETAIL`] instead of lost (todo-jobs §5.9).
    fn stop_leftovers(&self, view: &mut journal::JournalView) {
        let stoppers = lock(&self.stoppers).clone();
        if stoppers.is_empty() {
            return;
        }
        for &i in &view.lost {
            let earlier = &mut view.history[i];
            let Some(trace) = earlier.trace.clone() else {
                continue;
            };
            let Some((_, _, stopper)) = stoppers.iter().rev().find(|(_, k, _)| *k == earlier.kind)
            else {
                continue;
            };
            if lock(&self.state).records.get(&earlier.id).is_some() {
                continue;
            }
            let stopper = stopper.clone();
            let stopped = catch_unwind(AssertUnwindSafe(|| stopper(&trace))).unwrap_or_else(|_| {
                tracing::warn!("jobs: the leftover stopper of {} panicked", earlier.id);
                false
            });
            if stopped {
                earlier.status = JobStatus::Killed;
                earlier.detail = Some(LEFTOVERS_STOPPED_DETAIL.to_owned());
            }
        }
    }

    /// Whether `id`, as `caller` sees it, is a record of an earlier run.
    pub(super) fn is_from_earlier_run(&self, id: &JobId, caller: Option<&AgentId>) -> bool {
        self.limits.journal
            && lock(&self.state)
                .find(id, caller)
                .is_ok_and(|record| record.earlier)
    }
}
