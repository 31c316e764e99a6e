//! The launch's steps on an open [`SessionHost`] (through turnkit-mcp's seam): claim the owed reminders (durably, before
//! anything starts), record a launch's end, and report claims whose outcome is unknown.

use turnkit_core::{Session, SessionStore};

use super::record::{
    LAUNCH_ENDED_EVENT, LAUNCH_UNKNOWN_EVENT, LaunchEnded, LaunchUnknown, open_claims,
    unknown_notice,
};
use turnkit_mcp::SessionHost;

use super::run::LaunchOutcome;

/// A fresh launch id: `launch-` and 32 hex digits from the operating system's random source.
///
/// # Errors
/// The random source's error text.
pub(crate) fn fresh_launch_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| error.to_string())?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("launch-{hex}"))
}

/// Records every claim of `host`'s log that has no end, whose launch `running` does not say
/// is still running, as `mcp/launchUnknown`, and queues its notice for the model; then
/// flushes. Returns how many were reported.
///
/// # Errors
/// The log's error text when a launch event does not decode or the flush fails.
pub(crate) async fn report_unknown_launches(
    host: &SessionHost,
    running: &(dyn Fn(&str) -> bool + Sync),
) -> Result<usize, String> {
    let log = host.session_log();
    let claims = open_claims(&log.events()).map_err(|e| e.to_string())?;
    let mut reported = 0;
    for claim in claims.iter().filter(|c| !running(&c.launch)) {
        let data = LaunchUnknown {
            launch: claim.launch.clone(),
        };
        let value = serde_json::to_value(&data).map_err(|e| e.to_string())?;
        log.append(LAUNCH_UNKNOWN_EVENT, value)
            .map_err(|e| e.to_string())?;
        host.queue_notice(unknown_notice(claim))?;
        reported += 1;
    }
    if reported > 0 {
        log.flush().await.map_err(|e| e.to_string())?;
    }
    Ok(reported)
}

/// Appends `mcp/launchEnded` for `launch` to session `id` of `store` and flushes.
///
/// # Errors
/// The store's error text (the session is held by another writer, say).
pub(crate) async fn record_end(
    store: &dyn SessionStore,
    id: &str,
    launch: &str,
    outcome: LaunchOutcome,
) -> Result<(), String> {
    let session = store
        .open(&turnkit_core::SessionId::from(id))
        .map_err(|e| e.to_string())?;
    record_end_in(session.as_ref(), launch, outcome).await
}

/// Appends `mcp/launchEnded` to an open session and flushes.
///
/// # Errors
/// The session's error text.
pub(crate) async fn record_end_in(
    session: &dyn Session,
    launch: &str,
    outcome: LaunchOutcome,
) -> Result<(), String> {
    let data = LaunchEnded {
        launch: launch.to_owned(),
        outcome,
    };
    let value = serde_json::to_value(&data).map_err(|e| e.to_string())?;
    session
        .append(LAUNCH_ENDED_EVENT, value)
        .map_err(|e| e.to_string())?;
    session.flush().await.map_err(|e| e.to_string())
}
