//! The saved start: no work of an owned job runs before its start is durable in its owner's
//! session log. A producer builds its [`JobStart`] around a [`StartGate`] and starts it with
//! [`start_saved`]; its work waits at [`StartGate::opened`] until the start was recorded
//! (with the job journal on, its `job/start`) and the owner's session was flushed.

use std::sync::Arc;

use futures::channel::oneshot;
use turnkit_core::Agent;

use crate::{JobError, JobId, JobRegistry, JobStart};

/// The reason a job whose start could not be made durable is killed with.
pub const UNSAVED_REASON: &str = "its start could not be saved";

/// Where a job's work waits until its start is saved (see [`start_saved`]). Held by the
/// producer's work; it never blocks a thread.
#[derive(Debug)]
pub struct StartGate {
    open: oneshot::Receiver<()>,
}

impl StartGate {
    /// Resolves `true` once the job's start is durable (the work may run), `false` when it
    /// never will be: the start was refused, or could not be saved and the job is being
    /// stopped (the work must not run; the job's cancel hook has been or will be called).
    pub async fn opened(self) -> bool {
        self.open.await.is_ok()
    }
}

/// Starts the job `make` builds around its [`StartGate`] in `registry`, and opens the gate
/// only once the start is durable: the registry recorded the job (with the job journal on,
/// appended its `job/start`), then the owner's session was flushed. A job without an owner
/// has no session to save to: its gate opens as soon as the registry recorded it.
///
/// So no work of an owned job runs without a durable record of it: a host killed before the
/// flush leaves work that never started.
///
/// # Errors
/// Every [`JobRegistry::start`] refusal, unchanged (the gate is dropped closed, so work the
/// producer's `run` prepared does not run). When the flush fails, the job is killed for its
/// owner with the reason [`UNSAVED_REASON`] (which marks it reported: no completion notice)
/// and the start fails with [`JobError::StartNotSaved`] (`background job <id> was stopped:
/// its start could not be saved: <flush error>`), or [`JobError::StartNotSavedNotStopped`]
/// when that kill was refused.
pub async fn start_saved(
    registry: &dyn JobRegistry,
    owner: Option<Arc<dyn Agent>>,
    make: impl FnOnce(StartGate) -> JobStart,
) -> Result<JobId, JobError> {
    let (key, open) = oneshot::channel();
    let start = make(StartGate { open }).with_owner_opt(owner.clone());
    let id = registry.start(start)?;
    let Some(owner) = owner else {
        let _ = key.send(());
        return Ok(id);
    };
    match owner.session().flush().await {
        Ok(()) => {
            // The work may have ended already (a kill during the flush): nothing waits then.
            let _ = key.send(());
            Ok(id)
        }
        Err(error) => {
            drop(key);
            let reason = error.to_string();
            match registry.kill(&id, Some(owner.id()), Some(UNSAVED_REASON)) {
                Ok(_) => Err(JobError::StartNotSaved { id, reason }),
                Err(killed) => Err(JobError::StartNotSavedNotStopped {
                    id,
                    reason,
                    error: killed.to_string(),
                }),
            }
        }
    }
}
