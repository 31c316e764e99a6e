//! The seam for whatever takes a session's owed reminders when no client holds the session
//! (a launched agent): the server knows nothing of what is started, only that owed reminders
//! were claimed, durably, before it starts.
//!
//! - [`SessionHost::claim_owed_reminders`]: takes the owed reminders and flushes the claim
//!   ([`crate::LAUNCH_CLAIMED_EVENT`]); a claimed reminder is never delivered to a tool result
//!   or a task.
//! - [`SessionHost::queue_notice`]: queues a message for the model (delivered once, like any
//!   notice).
//! - [`SessionHost::session_log`]: the session's log, for the claimer's own events.
//! - [`SessionHost::owes_reminder`]: whether a reminder is owed right now.
//! - [`owes_reminder`]: whether a log has a reminder owed to the model, without opening a host.

use turnkit_core::{Session, SessionEvent, Subject, UserMessage};

use crate::SessionHost;
use crate::inbox::{InboxLogError, Lane, LaunchClaim, replay};

impl SessionHost {
    /// Takes every reminder owed to the model that no tool result carries and no task holds,
    /// for the launch `launch` (an id the caller chose, unique to the claim), and makes the
    /// claim durable: the returned claim may be acted on. `None` when nothing is owed, or when
    /// the claim could not be recorded or flushed (then nothing may be started: a claim that
    /// reaches the log later names a launch that never ran).
    pub async fn claim_owed_reminders(&self, launch: &str) -> Option<LaunchClaim> {
        let now = self.clock().now_millis();
        let claim = self.owed().claim_for_launch(launch, now)?;
        match self.log().flush().await {
            Ok(()) => Some(claim),
            Err(error) => {
                tracing::warn!(launch = %claim.launch, "mcp: a launch claim is not durable: {error}");
                None
            }
        }
    }

    /// Queues `message` for the model, delivered once with the next tool result (or task),
    /// like a notice. Returns its `mcp/queued` seq.
    ///
    /// # Errors
    /// The log's error text when the message cannot be recorded.
    pub fn queue_notice(&self, message: UserMessage) -> Result<u64, String> {
        self.owed().queue(Lane::Inject, message)
    }

    /// Whether any reminder is owed to the model right now (queued, not yet delivered or
    /// claimed).
    pub fn owes_reminder(&self) -> bool {
        self.owed()
            .pending()
            .iter()
            .any(|p| is_reminder(&p.message))
    }

    /// The served session's log.
    pub fn session_log(&self) -> &dyn Session {
        self.log()
    }
}

fn is_reminder(message: &UserMessage) -> bool {
    message
        .subjects
        .iter()
        .any(|s| matches!(s, Subject::Reminder { .. }))
}

/// Whether the log `events` owes the model a reminder: an `mcp/queued` about a reminder that
/// no delivery, task or launch claim has taken.
///
/// # Errors
/// [`InboxLogError`] for a delivery event that does not decode strictly.
pub fn owes_reminder(events: &[SessionEvent]) -> Result<bool, InboxLogError> {
    Ok(replay(events)?.iter().any(|p| is_reminder(&p.message)))
}
