//! The durable `schedule/change` v1 encoding (schedule.md §3) and its strict decoder (§4):
//! [`ScheduleRecord`], [`ScheduleChange`], [`decode_change`], plus the record view of §9.3.
//!
//! - `record`: [`ScheduleRecord`], [`Rule`] ([`CronSchedule`]), [`RecordKind`],
//!   [`ReminderState`] and the field checks.
//! - `operation`: [`ScheduleChange`] and its wire form.
//! - `decode`: [`decode_change`] and the replay's text decoders.
//! - `canonical`: the canonical form read by position (the replay's fast path).
//! - `wire`: the borrowed typed form (the replay's second path).

mod canonical;
mod decode;
mod operation;
mod record;
mod wire;

pub(crate) use canonical::{ChangeRef, canonical_transition};
pub use decode::decode_change;
#[cfg(test)]
pub(crate) use decode::decode_change_json;
pub(crate) use decode::decode_change_text;
pub use operation::ScheduleChange;
pub use record::{CronSchedule, RecordKind, ReminderState, Rule, SCHEDULE_CHANGE, ScheduleRecord};
pub(crate) use record::{MIN_EVERY_SECONDS, check_id};

#[cfg(test)]
use crate::domain::instant::Timestamp;
#[cfg(test)]
use canonical::*;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod text_tests;
