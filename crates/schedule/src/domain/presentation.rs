//! The reminder presentation helper (decision 7; schedule.md Appendix A): label a
//! delivered reminder turn in a host UI from the log alone.

use std::sync::Arc;

use serde::Serialize;
use turnkit_core::SessionEvent;

use super::change::{SCHEDULE_CHANGE, ScheduleChange, decode_change};
use super::instant::Timestamp;

/// What a UI shows for one delivered reminder. Serializes as
/// `{"scheduleId","prompt","occurrenceAt"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReminderPresentation {
    /// The record id.
    pub schedule_id: String,
    /// The record prompt.
    pub prompt: String,
    /// For a one-shot its `scheduledAt`; for an `every` dispatch the latest creation-aligned
    /// occurrence at the dispatch's `acceptedAt` (the `occurrence_at` the framing showed).
    pub occurrence_at: Timestamp,
}

/// Finds the dispatch event with `seq == dispatch_seq` and scans backwards to the create of
/// the same id — within the fork-owned segment (`seq > seed_length`) for an owned dispatch, or
/// within the inherited prefix for an inherited one — and returns its presentation.
///
/// Returns `None` when the seq is not a decodable `schedule/change` dispatch, no matching
/// create precedes it in the same segment, or the kinds disagree. Never panics; other
/// malformed events are skipped.
pub fn schedule_reminder_presentation(
    events: &[SessionEvent],
    dispatch_seq: u64,
    seed_length: Option<u64>,
) -> Option<ReminderPresentation> {
    let seed = seed_length.unwrap_or(0);
    let position = events.iter().position(|event| event.seq == dispatch_seq)?;
    let dispatch = &events[position];
    if dispatch.r#type != SCHEDULE_CHANGE {
        return None;
    }
    let (id, accepted_at): (Arc<str>, Option<Timestamp>) = match decode_change(&dispatch.data) {
        Ok(ScheduleChange::Dispatch { id }) => (id, None),
        Ok(ScheduleChange::DispatchEvery { id, accepted_at }) => (id, Some(accepted_at)),
        _ => return None,
    };
    let inherited = dispatch.seq <= seed;
    let record = events[..position]
        .iter()
        .rev()
        .take_while(|event| inherited || event.seq > seed)
        .filter(|event| event.r#type == SCHEDULE_CHANGE)
        .find_map(|event| match decode_change(&event.data) {
            Ok(ScheduleChange::Create(record)) if record.id() == &*id => Some(record),
            _ => None,
        })?;
    let occurrence_at = match (accepted_at, record.kind().is_one_shot()) {
        (None, true) => record.scheduled_at(),
        (Some(accepted_at), false) => record.resolve(accepted_at.millis()).ok()?.occurrence_at,
        _ => return None,
    };
    Some(ReminderPresentation {
        schedule_id: record.id().to_owned(),
        prompt: record.prompt().to_owned(),
        occurrence_at,
    })
}

#[cfg(test)]
#[path = "presentation_tests.rs"]
mod tests;
