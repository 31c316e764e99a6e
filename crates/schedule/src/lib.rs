//! harness-schedule: durable reminders (schedule.md).
//!
//! - [`domain`]: pure event encoding, strict decoding, fold, ids, time arithmetic and parsing.
//! - [`tools`]: `schedule_create`, `schedule_list`, `schedule_delete`.
//! - [`runtime`]: one delivery task per live root agent.

pub mod domain;
pub mod runtime;
pub mod tools;
