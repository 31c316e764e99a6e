//! The launch's events in the session log (`docs/event-log.md`): `mcp/launchClaimed` (the
//! claim, durable before anything starts; see [`turnkit_mcp::LAUNCH_CLAIMED_EVENT`]),
//! `mcp/launchEnded` (how it ended) and `mcp/launchUnknown` (a claim whose process stopped
//! before recording an end: launched, outcome unknown, never started again).

use serde::{Deserialize, Serialize};
use turnkit_core::{MessageSource, SessionEvent, UserMessage};

use super::run::LaunchOutcome;
use turnkit_mcp::{InboxLogError, LAUNCH_CLAIMED_EVENT, LaunchClaim};

/// Event type of a launch's end.
pub const LAUNCH_ENDED_EVENT: &str = "mcp/launchEnded";
/// Event type of a launch whose outcome is unknown.
pub const LAUNCH_UNKNOWN_EVENT: &str = "mcp/launchUnknown";

/// The payload of [`LAUNCH_ENDED_EVENT`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LaunchEnded {
    pub(crate) launch: String,
    pub(crate) outcome: LaunchOutcome,
}

/// The payload of [`LAUNCH_UNKNOWN_EVENT`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LaunchUnknown {
    pub(crate) launch: String,
}

/// The claims of `events` with neither an end nor an unknown outcome recorded, in order.
///
/// # Errors
/// [`InboxLogError`] for a launch event that does not decode strictly.
pub(crate) fn open_claims(events: &[SessionEvent]) -> Result<Vec<LaunchClaim>, InboxLogError> {
    let mut open: Vec<LaunchClaim> = Vec::new();
    for event in events {
        match event.r#type.as_str() {
            LAUNCH_CLAIMED_EVENT => open.push(decode(event)?),
            LAUNCH_ENDED_EVENT => {
                let ended: LaunchEnded = decode(event)?;
                open.retain(|c| c.launch != ended.launch);
            }
            LAUNCH_UNKNOWN_EVENT => {
                let unknown: LaunchUnknown = decode(event)?;
                open.retain(|c| c.launch != unknown.launch);
            }
            _ => {}
        }
    }
    Ok(open)
}

/// The plugin name of the launch's own notices.
pub(crate) const LAUNCH_PLUGIN: &str = "launch";

/// The notice that a claimed launch's outcome is unknown: delivered once, like any notice.
pub(crate) fn unknown_notice(claim: &LaunchClaim) -> UserMessage {
    let prompt = serde_json::to_string(&claim.prompt).unwrap_or_default();
    UserMessage::text(
        format!(
            "[LAUNCH OUTCOME UNKNOWN]\nAn agent was launched for these reminders, but the \
             process that ran it stopped before recording how it ended. It was not launched \
             again; check whether its work was done.\nlaunch_id: {}\nreminders_json: {prompt}",
            claim.launch
        ),
        MessageSource::Plugin {
            plugin: LAUNCH_PLUGIN.to_owned(),
            form: Some("notice".to_owned()),
            summary: Some("launch outcome unknown".to_owned()),
        },
    )
}

/// The payload of `event`, decoded strictly.
fn decode<T: serde::de::DeserializeOwned>(event: &SessionEvent) -> Result<T, InboxLogError> {
    serde_json::from_value(event.data.clone()).map_err(|e| InboxLogError {
        seq: event.seq,
        message: e.to_string(),
    })
}
