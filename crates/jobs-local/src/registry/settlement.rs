//! Settlement (todo-jobs §4.6): first-wins settlement of a record, then waiters, change
//! observers (§4.7) and completion listeners, each contained; and progress changes.

use std::{
    panic::AssertUnwindSafe, panic::catch_unwind, sync::Arc, sync::Mutex, sync::Weak,
    sync::atomic::Ordering,
};

use futures::FutureExt;
use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;
use turnkit_core::{Agent, Registered, lock};
use turnkit_jobs::{JobDoneListener, JobId, JobOutcome, JobSnapshot, JobsChangedListener};

use super::Shared;
use crate::journal;
use crate::{
    driver::Settle, driver::Ticket, driver::error_text, state::Layered, state::Record,
    state::Records, state::Stream, state::Target, state::Teardown, state::for_each_route,
};

impl Shared {
    /// Calls the change observers that serve `target` (§4.7), each contained.
    pub(super) fn notify_changed(&self, target: &Target) {
        let observers = lock(&self.state).observers.clone();
        if !observers.is_empty() {
            self.call_observers(&observers, target);
        }
    }

    /// Settles job `id` with `outcome` (§4.6). First wins: a terminal record is left alone
    /// and nobody is notified.
    pub(super) fn settle(&self, id: &JobId, outcome: JobOutcome) {
        self.settle_where(outcome, |records| records.get_mut(id));
    }

    pub(super) fn settle_where(
        &self,
        outcome: JobOutcome,
        locate: impl FnOnce(&mut Records) -> Option<&mut Record>,
    ) {
        let now = self.now_millis();
        let released_hooks;
        let released_progress;
        let released_voice;
        let span;
        let (snapshot, target, observers, listeners, journaled) = {
            let mut state = lock(&self.state);
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
            released_voice = record.voice.take();
            span = record.span.take();
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
            // The journal's `job/settle`: its final output is a final-output job's result,
            // or what a stream job's reader has not read yet (pulled after the lock).
            let journaled = (self.limits.journal && target.owner.is_some() && !record.unjournaled)
                .then(|| Journaled {
                    stream: record.stream.clone(),
                    output: record.output.as_deref().map(str::to_owned),
                    teardown: record.teardown.map(Teardown::reason),
                });
            state.release(target.owner.as_ref().map(|o| o.key()));
            // Cloned only when there is somebody to call (an empty layer costs nothing).
            let observers = (!state.observers.is_empty()).then(|| state.observers.clone());
            let listeners =
                (!state.done_listeners.is_empty()).then(|| state.done_listeners.clone());
            (snapshot, target, observers, listeners, journaled)
        };
        drop(released_hooks);
        // The job's span, if any, takes its status, and the observers and listeners below
        // run inside it; it closes when this settlement returns.
        if let Some(span) = &span {
            span.record("job.status", tracing::field::display(snapshot.status));
        }
        let _entered = span.as_deref().map(tracing::Span::enter);
        // The progress line stops notifying; its observer is dropped here, after the lock.
        if let Some(progress) = released_progress {
            drop(progress.replace_observer(None));
        }
        // The settlement notice is the job's last word: its voice says nothing more.
        if let Some(voice) = released_voice {
            voice.close();
        }
        let payload = journaled.map(|journaled| {
            let output = match &journaled.stream {
                Some(stream) => unread_output(stream),
                None => journaled.output,
            };
            journal::settle_payload(&snapshot, output.as_deref(), journaled.teardown)
        });
        if let (Some(payload), Some(owner)) = (payload, &target.owner)
            && let Err(error) = payload
                .map_err(|error| error.to_string())
                .and_then(|payload| {
                    owner
                        .agent
                        .session()
                        .append_raw(journal::JOB_SETTLE_EVENT, payload)
                        .map_err(|error| error.to_string())
                })
        {
            tracing::warn!(
                "jobs: could not journal the settlement of {}: {error}",
                snapshot.id
            );
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

    pub(super) fn call_observers(
        &self,
        observers: &Registered<Layered<JobsChangedListener>>,
        target: &Target,
    ) {
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
                    Some(runtime) => drop(self.tasks.spawn_on(observed, &runtime)),
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

    /// The progress observer of job `id`: a change shows in `list`, so observers hear.
    pub(super) fn progress_changed(&self, id: &JobId) {
        let target = {
            let state = lock(&self.state);
            match state.records.get(id) {
                Some(record) if record.status.is_live() => record.route_target(),
                _ => return,
            }
        };
        self.notify_changed(&target);
    }
}

/// What the journal's `job/settle` of a settled record is made of, taken under the lock.
struct Journaled {
    stream: Option<Arc<Mutex<Stream>>>,
    output: Option<String>,
    teardown: Option<&'static str>,
}

/// A settled stream job's unread output: the producer's last delta is pulled into the
/// history (its pipes are closed, so nothing follows) without moving the model's cursor.
/// `None` when there is none, or the producer's read fails (logged).
fn unread_output(stream: &Mutex<Stream>) -> Option<String> {
    let mut stream = lock(stream);
    match catch_unwind(AssertUnwindSafe(|| (stream.read)())) {
        Ok(Ok(pulled)) => stream.history.append(&pulled),
        Ok(Err(error)) => {
            tracing::warn!("jobs: the final output of a settled job could not be read: {error}");
        }
        Err(_) => {
            tracing::warn!("jobs: the final output of a settled job could not be read: panicked")
        }
    }
    let unread = stream.history.unread();
    (!unread.is_empty()).then_some(unread)
}

/// The driver's seam: it knows each job's slot and registration number, so it skips the id
/// lookup.
impl Settle for Shared {
    fn settle_ticket(&self, ticket: Ticket, outcome: JobOutcome) {
        self.settle_where(outcome, |records| records.at_mut(ticket.slot, ticket.seq));
    }

    fn runtime(&self) -> Option<Handle> {
        Shared::runtime(self)
    }

    fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }

    fn weak(&self) -> Weak<Self> {
        self.me.clone()
    }
}
