//! Pure schedule domain (schedule.md §2–§8, §12.3, §13, §15; decisions 6 and 7).
//!
//! No I/O, no clock: every function takes its inputs (events, JSON values, `now_ms` epoch
//! milliseconds) and returns values or typed errors. Nothing here panics on log or model
//! input.
//!
//! - [`Timestamp`]: the canonical instant (§2).
//! - [`ScheduleRecord`], [`ScheduleChange`], [`decode_change`]: the `schedule/change` v1
//!   encoding with exact key order and its strict decoder (§3, §4).
//! - [`ScheduleFold`]: the fold (§5, §5.1), maintained incrementally with
//!   [`ScheduleFold::apply`]; id allocation (§7) and the due decision (§12.3).
//! - [`resolve_every`]: fixed-rate arithmetic (§6).
//! - [`CreateRequest`], [`create_after`], [`create_every`], [`create_at`]: records from model
//!   input with the spec's error codes and messages ([`InputError`]) (§8, §9.5).
//! - [`one_shot_framing`], [`batch_framing`]: the framing texts (§13).
//! - [`schedule_reminder_presentation`]: the UI helper (decision 7).
//! - [`check_schedule_log`], [`check_schedule_append`]: the invariant (§15).
//!
//! ```
//! use harness_schedule::domain::{CreateRequest, ScheduleChange, ScheduleFold};
//! use serde_json::json;
//!
//! let now_ms = 1_785_931_200_000; // 2026-08-05T12:00:00.000Z
//! let mut fold = ScheduleFold::with_seed(0);
//! let request =
//!     CreateRequest::from_arguments(&json!({"prompt": " check logs ", "after_seconds": 30}))
//!         .unwrap();
//! let record = request.build(&fold.allocate_id(), now_ms, None).unwrap();
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
mod error;
mod every;
mod fold;
mod framing;
mod instant;
mod invariant;
mod presentation;
#[cfg(test)]
mod test_support;

pub use at::{ZoneContext, parse_offset_at, resolve_at, resolve_local_at, resolve_time_zone};
pub use change::{
    DELIVERY_MODE, MIN_EVERY_SECONDS, RecordKind, ReminderState, Rule, SCHEDULE_CHANGE,
    ScheduleChange, ScheduleRecord, decode_change, decode_change_json, decode_change_text,
    decode_record,
};
pub use create::{
    CREATE_KEYS, CreateArgs, CreateRequest, Selector, create_after, create_at, create_every,
    future_target, validate_delete_id,
};
pub use error::{
    ERR_AFTER, ERR_AT_OFFSET, ERR_AT_REAL, ERR_AT_SHAPE, ERR_AT_TYPE, ERR_CONFIRM_ZONE,
    ERR_CORRUPT, ERR_DELETE_ID, ERR_EVERY_INT, ERR_EVERY_MIN, ERR_GAP, ERR_INTERNAL,
    ERR_LOCAL_KEYS, ERR_LOCAL_REAL, ERR_LOCAL_SHAPE, ERR_LOCAL_STRINGS, ERR_NOT_FUTURE, ERR_PROMPT,
    ERR_RANGE, ERR_SELECTOR, ERR_UNCERTAIN, ERR_ZONE, ERR_ZONE_STRING, ErrorCode, InputError,
    ResolveError, RuleViolation, ScheduleLogError,
};
pub use every::{Occurrence, resolve_every};
pub use fold::{
    Decision, EveryBatch, FoldSnapshot, ScheduleFold, SeenIds, allocate_id, allocate_id_in,
    check_seed_length,
};
pub use framing::{
    BATCH_HEADER, BATCH_INSTRUCTION, BatchItem, ONE_SHOT_HEADER, ONE_SHOT_INSTRUCTION,
    batch_framing, one_shot_framing,
};
pub use instant::{MAX_MILLIS, MIN_MILLIS, Timestamp};
pub use invariant::{check_schedule_append, check_schedule_log};
pub use presentation::{ReminderPresentation, schedule_reminder_presentation};
