//! Pure schedule domain (schedule.md §2–§8, §12.3, §13, §15; decisions 6 and 7): the part a
//! host, a store or a log reader calls. Everything the tools and the runtime use only (the
//! argument decoding of `schedule_create`, the framing texts, the error-code constants, the
//! `every` arithmetic) stays inside the crate.
//!
//! No I/O, no clock: every function takes its inputs (events, JSON values, `now_ms` epoch
//! milliseconds) and returns values or typed errors. Nothing here panics on log or model
//! input.
//!
//! - [`Timestamp`], [`MIN_MILLIS`], [`MAX_MILLIS`]: the canonical instant and its range (§2).
//! - [`ScheduleRecord`] ([`Rule`], [`RecordKind`], [`ReminderState`]), [`ScheduleChange`],
//!   [`SCHEDULE_CHANGE`], [`decode_change`]: the `schedule/change` v1 encoding with exact key
//!   order and its strict decoder (§3, §4).
//! - [`ScheduleFold`]: the fold (§5, §5.1), maintained incrementally; id allocation (§7), the
//!   due decision (§12.3, [`Decision`], [`EveryBatch`]) and [`ScheduleFold::check_change`].
//! - [`create_after`], [`create_every`], [`create_at`], [`create_cron`]: records from model input with the
//!   spec's error codes and messages ([`InputError`], [`ErrorCode`]) (§8).
//! - [`CronRule`]: the calendar rule (a five-field cron expression) and its next occurrence
//!   in an IANA zone, with its DST rules.
//! - [`resolve_local_at`], [`resolve_time_zone`], [`ZoneContext`]: local wall-clock times and
//!   the zone fallback of decision 6 (§9.2).
//! - [`schedule_reminder_presentation`]: the UI helper (decision 7).
//! - [`check_schedule_log`], [`check_schedule_append`]: the invariant (§15).
//!
//! ```
//! use turnkit_schedule::domain::{ScheduleChange, ScheduleFold, create_after};
//! use serde_json::json;
//!
//! let now_ms = 1_785_931_200_000; // 2026-08-05T12:00:00.000Z
//! let mut fold = ScheduleFold::with_seed(0);
//! let record = create_after(&fold.allocate_id(), " check logs ", &json!(30), now_ms).unwrap();
//! let change = ScheduleChange::Create(record);
//! assert_eq!(
//!     serde_json::to_string(&change).unwrap(),
//!     r#"{"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z"}}"#,
//! );
//! fold.apply_change(change).unwrap();
//! assert_eq!(fold.allocate_id(), "schedule-2");
//! ```

mod at;
mod change;
mod create;
mod cron;
mod error;
mod every;
mod fold;
mod framing;
mod instant;
mod invariant;
mod presentation;
#[cfg(test)]
mod test_support;

pub use at::{ZoneContext, resolve_local_at, resolve_time_zone};
pub(crate) use change::decode_change_text;
pub use change::{
    CronSchedule, RecordKind, ReminderState, Rule, SCHEDULE_CHANGE, ScheduleChange, ScheduleRecord,
    decode_change,
};
pub use create::{create_after, create_at, create_cron, create_every};
pub use cron::CronRule;
pub use error::{ErrorCode, InputError, ResolveError, RuleViolation, ScheduleLogError};
pub use fold::{Decision, EveryBatch, FoldSnapshot, ScheduleFold, SeenIds};
pub use instant::{MAX_MILLIS, MIN_MILLIS, Timestamp};
pub use invariant::{check_schedule_append, check_schedule_log};
pub use presentation::{ReminderPresentation, schedule_reminder_presentation};

pub(crate) use create::{Calendar, CreateRequest, validate_delete_id};
pub(crate) use error::ERR_UNCERTAIN;
