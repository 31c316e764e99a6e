//! Cancellation and teardown: `kill` (todo-jobs §4.5), owner teardown (§4.8) and service
//! disposal (§4.9).

use std::{
    panic::AssertUnwindSafe, panic::catch_unwind, sync::Arc, sync::atomic::AtomicUsize,
    sync::atomic::Ordering,
};

use turnkit_core::{AgentId, lock};
use turnkit_jobs::{BoxError, JobError, JobId, JobOutcome, JobStatus, KillOutcome};

use super::Shared;
use crate::{
    driver::error_text, state::CancelFn, state::OwnerEntry, state::OwnerKey, state::Record,
    state::Target, state::Teardown,
};

impl Shared {
    pub(super) async fn dispose(&self) {
        let sh = self;
        let ids: Vec<JobId> = {
            let mut state = lock(&sh.state);
            sh.listeners_closed.store(true, Ordering::SeqCst);
            state.disposed = true;
            state.records.ids()
        };
        sh.teardown_cancel(&ids, Teardown::Service);
        loop {
            let all: Vec<JobId> = lock(&sh.state).records.ids();
            sh.await_settled(&all).await;
            let grown = lock(&sh.state).records.len() != all.len();
            if !grown {
                break;
            }
        }
        let (targets, entries, removed) = {
            let mut state = lock(&sh.state);
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
        // Every settlement was awaited: stop the registry's tasks and join them.
        sh.shutdown.cancel();
        sh.hub.stop();
        sh.tasks.close();
        sh.tasks.wait().await;
    }

    /// `kill` (§4.5): cancel first; a throwing cancel changes nothing.
    pub(super) fn kill(
        &self,
        id: &JobId,
        caller: Option<&AgentId>,
        reason: Option<&str>,
    ) -> Result<KillOutcome, JobError> {
        let sh = self;
        let (cancel, was_reported) = {
            let mut state = lock(&sh.state);
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
            let mut state = lock(&sh.state);
            if let Some(record) = state.records.get_mut(id) {
                record.reported = was_reported;
            }
            return Err(JobError::Producer(error));
        }
        let target = {
            let mut state = lock(&sh.state);
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

    /// Teardown cancellation (§4.8) of every live record in `ids` with `reason`.
    pub(super) fn teardown_cancel(&self, ids: &[JobId], teardown: Teardown) {
        let reason = teardown.reason();
        for id in ids {
            let cancel = {
                let mut state = lock(&self.state);
                let Some(record) = state.records.get_mut(id) else {
                    continue;
                };
                if record.status.is_terminal() {
                    continue;
                }
                record.reported = true;
                record.teardown = Some(teardown);
                record.shared_cancel()
            };
            let Some(cancel) = cancel else { continue };
            match call_cancel(&cancel, Some(reason)) {
                Ok(()) => {
                    let target = {
                        let mut state = lock(&self.state);
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
    pub(super) async fn await_settled(&self, ids: &[JobId]) {
        // Settlements wake `settled` only while somebody awaits it.
        self.draining.fetch_add(1, Ordering::SeqCst);
        let _draining = Draining(&self.draining);
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let done = {
                let state = lock(&self.state);
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
    pub(super) async fn owner_disposed(&self, key: OwnerKey) {
        let (ids, entry) = {
            let mut state = lock(&self.state);
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
        self.drain(&ids, Teardown::Owner).await;
    }

    /// Teardown of `ids` (§4.8 steps 3–6): cancel, await settlement, remove, and notify the
    /// owner's observers if anything was removed.
    pub(super) async fn drain(&self, ids: &[JobId], teardown: Teardown) {
        self.teardown_cancel(ids, teardown);
        self.await_settled(ids).await;
        if ids.is_empty() {
            return;
        }
        let removed = lock(&self.state).records.remove_all(ids);
        let target = removed.last().map(Record::route_target).unwrap_or_default();
        drop(removed);
        self.notify_changed(&target);
    }
}

fn call_cancel(cancel: &Arc<CancelFn>, reason: Option<&str>) -> Result<(), BoxError> {
    match catch_unwind(AssertUnwindSafe(|| cancel(reason))) {
        Ok(result) => result,
        Err(_) => Err("producer cancel panicked".into()),
    }
}
/// Counts one teardown awaiting settlements while alive.
struct Draining<'a>(&'a AtomicUsize);

impl Drop for Draining<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
