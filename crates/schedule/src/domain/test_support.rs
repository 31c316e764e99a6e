//! Helpers shared by the domain unit tests.

use chrono::DateTime;
use serde_json::{Value, json};
use turnkit_core::SessionEvent;

use super::SCHEDULE_CHANGE;

/// `2026-08-05T12:00:00.000Z`, the cases' T0.
pub(crate) const T0: i64 = 1_785_931_200_000;

/// Epoch ms of a canonical or RFC 3339 instant.
pub(crate) fn ms(text: &str) -> i64 {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_millis()
}

/// Session events numbered 1.. from `(type, data)` pairs.
pub(crate) fn events(items: &[(&str, Value)]) -> Vec<SessionEvent> {
    items
        .iter()
        .enumerate()
        .map(|(i, (r#type, data))| SessionEvent {
            seq: i as u64 + 1,
            r#type: (*r#type).to_owned(),
            time: DateTime::from_timestamp_millis(T0).unwrap(),
            data: data.clone(),
        })
        .collect()
}

/// Session events numbered 1.. that are all `schedule/change`.
pub(crate) fn changes(items: &[Value]) -> Vec<SessionEvent> {
    let pairs: Vec<(&str, Value)> = items.iter().map(|v| (SCHEDULE_CHANGE, v.clone())).collect();
    events(&pairs)
}

pub(crate) fn create_after(id: &str, prompt: &str, seconds: i64, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"after","prompt":prompt,"afterSeconds":seconds,"scheduledAt":scheduled_at}})
}

pub(crate) fn create_at(id: &str, prompt: &str, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"at","prompt":prompt,"scheduledAt":scheduled_at}})
}

pub(crate) fn create_every(id: &str, prompt: &str, seconds: i64, scheduled_at: &str) -> Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"every","prompt":prompt,"everySeconds":seconds,"scheduledAt":scheduled_at}})
}

pub(crate) fn delete(id: &str) -> Value {
    json!({"version":1,"operation":"delete","id":id})
}

pub(crate) fn dispatch(id: &str) -> Value {
    json!({"version":1,"operation":"dispatch","id":id})
}

pub(crate) fn dispatch_every(id: &str, accepted_at: &str) -> Value {
    json!({"version":1,"operation":"dispatch","id":id,"acceptedAt":accepted_at})
}
