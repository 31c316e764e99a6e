//! The optional invariant companion (todo-jobs §3.3): debug tooling that checks every
//! snapshot it sees. Pure checks over the contract types; no registry behaviour.

use std::sync::Arc;

use turnkit_core::{AgentId, MAX_SAFE_INTEGER, Registration, RegistrationScope};

use crate::{JobDoneListener, JobRegistry, JobSnapshot};

/// A snapshot broke an invariant. `Display` is the spec's exact message (the id is
/// JSON-quoted), e.g. `job snapshot id "bash-0" must be "bash-" followed by a positive
/// ordinal`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvariantViolation(pub String);

/// Checks one snapshot (todo-jobs §3.3), in the spec's order:
/// 1. the kind is non-empty and the id is `<kind>-` followed by a positive safe integer
///    (ASCII digits; leading zeros are accepted, as the spec's numeric reading (`Number()`) does);
/// 2. the label is non-empty;
/// 3. `startedAt` is non-negative;
/// 4. `finishedAt` is present exactly for a terminal status;
/// 5. `finishedAt` is no earlier than `startedAt`;
/// 6. `ownerSession` equals `owner` (the id of the owner handed to the completion listener;
///    both absent also passes).
///
/// # Errors
/// The first [`InvariantViolation`].
pub fn check_snapshot(
    snapshot: &JobSnapshot,
    owner: Option<&AgentId>,
) -> Result<(), InvariantViolation> {
    let id = serde_json::Value::from(snapshot.id.as_str()).to_string();
    let kind = snapshot.kind.as_str();
    let ordinal_ok = !kind.is_empty()
        && snapshot
            .id
            .as_str()
            .strip_prefix(kind)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(is_positive_ordinal);
    if !ordinal_ok {
        return Err(InvariantViolation(format!(
            "job snapshot id {id} must be \"{kind}-\" followed by a positive ordinal"
        )));
    }
    if snapshot.label.as_str().is_empty() {
        return Err(InvariantViolation(format!(
            "job {id} label must be non-empty"
        )));
    }
    if snapshot.started_at < 0 {
        return Err(InvariantViolation(format!(
            "job {id} startedAt must be a non-negative epoch integer"
        )));
    }
    if snapshot.status.is_terminal() != snapshot.finished_at.is_some() {
        return Err(InvariantViolation(format!(
            "job {id} finishedAt must be present exactly for a terminal status"
        )));
    }
    if let Some(finished_at) = snapshot.finished_at
        && finished_at < snapshot.started_at
    {
        return Err(InvariantViolation(format!(
            "job {id} finishedAt must be an epoch integer no earlier than startedAt"
        )));
    }
    let recorded = snapshot.owner_session.as_ref().map(|s| s.as_str());
    if recorded != owner.map(AgentId::as_str) {
        return Err(InvariantViolation(format!(
            "job {id} ownerSession does not match its completion owner"
        )));
    }
    Ok(())
}

fn is_positive_ordinal(text: &str) -> bool {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    text.parse::<u64>()
        .is_ok_and(|n| n >= 1 && n <= MAX_SAFE_INTEGER.unsigned_abs())
}

/// Installs the invariant companion on `registry`: checks every unowned job now (`list` with
/// no caller), then every snapshot delivered to completion listeners. A later violation is
/// returned from the listener, so the registry logs it as
/// `jobs: onJobDone listener threw for <id>: <violation>`. Dropping the returned
/// [`Registration`] uninstalls it.
///
/// # Errors
/// The first violation among the current unowned jobs; nothing is installed then.
pub fn install_invariant(
    registry: &Arc<dyn JobRegistry>,
) -> Result<Registration, InvariantViolation> {
    for snapshot in registry.list(None) {
        check_snapshot(&snapshot, None)?;
    }
    let listener: JobDoneListener = Arc::new(|snapshot, owner| {
        check_snapshot(snapshot, owner.map(|o| o.id()))?;
        Ok(None)
    });
    Ok(registry.on_job_done(RegistrationScope::Global, listener))
}

#[cfg(test)]
#[path = "invariant_tests.rs"]
mod tests;
