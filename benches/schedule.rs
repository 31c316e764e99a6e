//! Benchmarks for the schedule family.
//!
//! Domain (`support/schedule_domain.rs`): decode + fold of a 1,000,000-event JSONL log vs
//! plain `serde_json::Value` parsing of the same lines, with a same-run ratio.
//!
//! Tool path (`support/schedule_tools.rs`): `schedule_create` at log length 1,000 vs 100,000
//! with a same-run ratio, and the memory of 100,000 active reminders in one session.

#[path = "support/schedule_domain.rs"]
mod schedule_domain;
#[path = "support/schedule_log.rs"]
mod schedule_log;
#[path = "support/schedule_tools.rs"]
mod schedule_tools;

use criterion::{criterion_group, criterion_main};

criterion_group!(domain, schedule_domain::bench_decode_fold);
criterion_group!(
    tools,
    schedule_tools::bench_create_by_log_length,
    schedule_tools::report_create_ratio,
    schedule_tools::report_active_reminder_memory
);
criterion_main!(domain, tools);
