//! The invariant companion as pure functions (schedule.md §15): the fold of §5 applied as a
//! hard check on a whole log and on an append candidate.

use serde_json::Value;
use turnkit_core::SessionEvent;

use super::change::{SCHEDULE_CHANGE, decode_change};
use super::error::ScheduleLogError;
use super::fold::ScheduleFold;

/// Validates a whole session log (install time, session creation incl. seeded creation):
/// the fold of §5 with `seed_length` must succeed. Events before the seed boundary are
/// ignored, so a corrupt inherited prefix never blocks a fork.
///
/// # Errors
/// The fold's [`ScheduleLogError`].
pub fn check_schedule_log(
    events: &[SessionEvent],
    seed_length: Option<u64>,
) -> Result<(), ScheduleLogError> {
    ScheduleFold::open(events, seed_length).map(|_| ())
}

/// Validates an append candidate against `existing events + candidate` (§15): only
/// `schedule/change` candidates are checked; any other `event_type` passes.
///
/// For repeated checks keep a [`ScheduleFold`] of the log and use
/// [`ScheduleFold::check_change`] (O(1) per candidate instead of O(log)).
///
/// # Errors
/// [`ScheduleLogError`] if the existing log or the candidate does not fold.
pub fn check_schedule_append(
    events: &[SessionEvent],
    seed_length: Option<u64>,
    event_type: &str,
    data: &Value,
) -> Result<(), ScheduleLogError> {
    if event_type != SCHEDULE_CHANGE {
        return Ok(());
    }
    let fold = ScheduleFold::open(events, seed_length)?;
    fold.check_change(&decode_change(data)?)
}

#[cfg(test)]
#[path = "invariant_tests.rs"]
mod tests;
