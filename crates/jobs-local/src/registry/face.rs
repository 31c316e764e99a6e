//! The [`JobRegistry`] face of [`LocalJobRegistry`]: each method delegates to its topic's
//! room; registrations go into copy-on-write layers (§1.3).

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use turnkit_core::{AgentId, Registration, RegistrationScope, lock};
use turnkit_jobs::{
    JobDoneListener, JobError, JobId, JobKind, JobNoticeListener, JobRead, JobReadAt, JobRegistry,
    JobSnapshot, JobStart, JobsChangedListener, JobsLostListener, KillOutcome, LeftoverStopper,
};

use super::{LocalJobRegistry, Shared};
use crate::{state::Layered, state::Layers, state::State};

#[async_trait]
impl JobRegistry for LocalJobRegistry {
    fn start(&self, spec: JobStart) -> Result<JobId, JobError> {
        self.shared.start(spec)
    }

    fn list(&self, caller: Option<&AgentId>) -> Vec<JobSnapshot> {
        self.shared.list(caller)
    }

    fn get(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobSnapshot, JobError> {
        self.shared.get(id, caller)
    }

    fn read(&self, id: &JobId, caller: Option<&AgentId>) -> Result<JobRead, JobError> {
        self.shared.read(id, caller)
    }

    fn read_at(
        &self,
        id: &JobId,
        cursor: u64,
        caller: Option<&AgentId>,
    ) -> Result<JobReadAt, JobError> {
        self.shared.read_at(id, cursor, caller)
    }

    fn kill(
        &self,
        id: &JobId,
        caller: Option<&AgentId>,
        reason: Option<&str>,
    ) -> Result<KillOutcome, JobError> {
        self.shared.kill(id, caller, reason)
    }

    async fn wait(
        &self,
        id: &JobId,
        timeout: Duration,
        caller: Option<&AgentId>,
        cancel: Option<CancellationToken>,
    ) -> Result<JobSnapshot, JobError> {
        self.shared.wait(id, timeout, caller, cancel).await
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

    fn on_job_notice(&self, scope: RegistrationScope, listener: JobNoticeListener) -> Registration {
        register(&self.shared, scope, listener, |s| &mut s.notice_listeners)
    }

    fn on_jobs_lost(&self, scope: RegistrationScope, listener: JobsLostListener) -> Registration {
        register(&self.shared, scope, listener, |s| &mut s.lost_listeners)
    }

    fn is_from_earlier_run(&self, id: &JobId, caller: Option<&AgentId>) -> bool {
        self.shared.is_from_earlier_run(id, caller)
    }

    fn on_leftovers(&self, kind: &JobKind, stopper: LeftoverStopper) -> Registration {
        self.shared.add_stopper(kind, stopper)
    }
}

/// Adds `item` to the layer `pick` selects; the registration removes it again.
fn register<T>(
    shared: &Arc<Shared>,
    scope: RegistrationScope,
    item: T,
    pick: fn(&mut State) -> &mut Layers<T>,
) -> Registration
where
    T: Clone + Send + Sync + 'static,
{
    let id = Arc::make_mut(pick(&mut lock(&shared.state))).insert(Layered { scope, item });
    Registration::weak(shared, move |shared| {
        let mut state = lock(&shared.state);
        let layers = pick(&mut state);
        if layers.entries().any(|(entry, _)| entry == id) {
            Arc::make_mut(layers).remove(id);
        }
    })
}
