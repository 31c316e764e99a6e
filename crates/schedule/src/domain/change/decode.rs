//! The strict decoder (§4): [`decode_change`] from a JSON value, and the text paths the
//! replay reads with (the canonical form first, then a borrowed typed form, then the value).

use std::sync::Arc;

use serde_json::Value;
use turnkit_core::as_safe_integer;

use super::canonical::canonical_change;
use super::operation::ScheduleChange;
use super::record::{CronSchedule, Rule, ScheduleRecord, check_id};
use super::wire::WireChange;
use crate::domain::at::resolve_time_zone;
use crate::domain::error::ScheduleLogError;
use crate::domain::instant::Timestamp;

/// Strictly decodes one `schedule/change` payload (§4).
///
/// Checks, in order: an object; `version` is the number 1 (`1.0` too, `"1"` not); the
/// operation with its exact key set; the record of a create (exact key set per kind,
/// trimmed non-empty id and prompt, §3.1 numbers, canonical `scheduledAt`); the id of a
/// delete/dispatch; the canonical `acceptedAt` of an every dispatch.
///
/// # Errors
/// [`ScheduleLogError`] (`corrupt_schedule_log`) for anything else. Never panics.
pub fn decode_change(data: &Value) -> Result<ScheduleChange, ScheduleLogError> {
    let Some(map) = data.as_object() else {
        return Err(ScheduleLogError::new("change must be an object"));
    };
    // One pass over the entries (no hashing); JSON object keys are unique.
    let (mut version, mut operation, mut schedule, mut id, mut accepted_at) =
        (None, None, None, None, None);
    let mut extra = false;
    for (key, value) in map {
        match key.as_str() {
            "version" => version = Some(value),
            "operation" => operation = Some(value),
            "schedule" => schedule = Some(value),
            "id" => id = Some(value),
            "acceptedAt" => accepted_at = Some(value),
            _ => extra = true,
        }
    }
    match version {
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => {}
        _ => return Err(ScheduleLogError::new("change version must be 1")),
    }
    let wrong_keys = |what: &str| ScheduleLogError::new(format!("{what} has the wrong key set"));
    match operation.and_then(Value::as_str) {
        Some("create") => match (schedule, id, accepted_at, extra) {
            (Some(schedule), None, None, false) => {
                decode_record(schedule).map(ScheduleChange::Create)
            }
            _ => Err(wrong_keys("create")),
        },
        Some("delete") => match (schedule, accepted_at, extra) {
            (None, None, false) => Ok(ScheduleChange::Delete { id: decode_id(id)? }),
            _ => Err(wrong_keys("delete")),
        },
        Some("dispatch") => match (schedule, accepted_at, extra) {
            (None, None, false) => Ok(ScheduleChange::Dispatch { id: decode_id(id)? }),
            (None, Some(accepted_at), false) => Ok(ScheduleChange::DispatchEvery {
                id: decode_id(id)?,
                accepted_at: decode_instant(Some(accepted_at), "acceptedAt")?,
            }),
            _ => Err(wrong_keys("dispatch")),
        },
        _ => Err(ScheduleLogError::new("unknown change operation")),
    }
}

/// Parses one JSON payload text (bytes, UTF-8 checked) and decodes it strictly; a syntax
/// error is a log error like any other malformed payload.
///
/// # Errors
/// [`ScheduleLogError`] when the text is not JSON or not a valid change.
pub(crate) fn decode_change_json(text: &[u8]) -> Result<ScheduleChange, ScheduleLogError> {
    let value: Value = serde_json::from_slice(text)
        .map_err(|error| ScheduleLogError::new(format!("change is not JSON: {error}")))?;
    decode_change(&value)
}

/// Strictly decodes one `schedule/change` payload from its raw JSON text, as the replay path
/// reads it: exactly the result of [`decode_change_json`] (the same change, or the same
/// error), without building a `serde_json::Value`.
///
/// A payload is read straight into a borrowed typed form that admits only a valid v1 change;
/// anything that form does not take (an invalid change, escaped strings, duplicate keys) is
/// decided by [`decode_change_json`], so every error text is the `Value` path's.
///
/// # Errors
/// [`ScheduleLogError`] when the text is not JSON or not a valid change.
pub(crate) fn decode_change_text(text: &str) -> Result<ScheduleChange, ScheduleLogError> {
    if let Some(change) = canonical_change(text) {
        return Ok(change);
    }
    match serde_json::from_str::<WireChange<'_>>(text)
        .ok()
        .and_then(WireChange::into_change)
    {
        Some(change) => Ok(change),
        None => decode_change_json(text.as_bytes()),
    }
}

/// Strictly decodes a record object (§3.1, §4 step 3).
///
/// # Errors
/// [`ScheduleLogError`] when the value is not a valid record.
pub(crate) fn decode_record(value: &Value) -> Result<ScheduleRecord, ScheduleLogError> {
    let Some(map) = value.as_object() else {
        return Err(ScheduleLogError::new("schedule record must be an object"));
    };
    let (mut id, mut kind, mut prompt, mut after, mut every, mut scheduled_at) =
        (None, None, None, None, None, None);
    let (mut cron, mut zone) = (None, None);
    let mut extra = false;
    for (key, value) in map {
        match key.as_str() {
            "id" => id = Some(value),
            "kind" => kind = Some(value),
            "prompt" => prompt = Some(value),
            "afterSeconds" => after = Some(value),
            "everySeconds" => every = Some(value),
            "cron" => cron = Some(value),
            "timeZone" => zone = Some(value),
            "scheduledAt" => scheduled_at = Some(value),
            _ => extra = true,
        }
    }
    let wrong_keys =
        |what: &str| ScheduleLogError::new(format!("{what} record has the wrong key set"));
    if extra || id.is_none() || prompt.is_none() || scheduled_at.is_none() {
        return Err(wrong_keys("schedule"));
    }
    let rule = match kind.and_then(Value::as_str) {
        Some("cron") => match (after, every, cron, zone) {
            (None, None, Some(cron), Some(zone)) => decode_cron(cron, zone)?,
            _ => return Err(wrong_keys("cron")),
        },
        _ if cron.is_some() || zone.is_some() => return Err(wrong_keys("schedule")),
        Some("after") => match (after, every) {
            (Some(after), None) => Rule::After {
                seconds: decode_integer(Some(after), "afterSeconds")?,
            },
            _ => return Err(wrong_keys("after")),
        },
        Some("at") => match (after, every) {
            (None, None) => Rule::At,
            _ => return Err(wrong_keys("at")),
        },
        Some("every") => match (after, every) {
            (None, Some(every)) => Rule::Every {
                seconds: decode_integer(Some(every), "everySeconds")?,
            },
            _ => return Err(wrong_keys("every")),
        },
        _ => return Err(ScheduleLogError::new("unknown schedule record kind")),
    };
    let id = decode_id(id)?;
    let prompt = match prompt {
        Some(Value::String(prompt)) => Arc::<str>::from(prompt.as_str()),
        _ => return Err(ScheduleLogError::new("prompt must be a string")),
    };
    let scheduled_at = decode_instant(scheduled_at, "scheduledAt")?;
    ScheduleRecord::new(id, prompt, rule, scheduled_at)
}

/// A `cron` record's rule: a valid expression (Appendix B.1) and a zone name the tools
/// accept.
pub(super) fn decode_cron(cron: &Value, zone: &Value) -> Result<Rule, ScheduleLogError> {
    let (Some(cron), Some(zone)) = (cron.as_str(), zone.as_str()) else {
        return Err(ScheduleLogError::new("cron and timeZone must be strings"));
    };
    cron_rule(cron, zone).ok_or_else(|| ScheduleLogError::new("cron record has a bad rule"))
}

/// The rule of a stored `cron` + `timeZone` pair, `None` when either is not valid.
pub(super) fn cron_rule(cron: &str, zone: &str) -> Option<Rule> {
    let zone = resolve_time_zone(zone).ok()?;
    CronSchedule::new(cron, zone).ok().map(Rule::Cron)
}

pub(super) fn decode_id(value: Option<&Value>) -> Result<Arc<str>, ScheduleLogError> {
    match value {
        Some(Value::String(id)) => {
            check_id(id)?;
            Ok(Arc::from(id.as_str()))
        }
        _ => Err(ScheduleLogError::new("id must be a string")),
    }
}

pub(super) fn decode_integer(value: Option<&Value>, field: &str) -> Result<i64, ScheduleLogError> {
    value
        .filter(|value| value.is_number())
        .and_then(as_safe_integer)
        .ok_or_else(|| ScheduleLogError::new(format!("{field} must be a safe integer")))
}

pub(super) fn decode_instant(
    value: Option<&Value>,
    field: &str,
) -> Result<Timestamp, ScheduleLogError> {
    value
        .and_then(Value::as_str)
        .and_then(Timestamp::parse)
        .ok_or_else(|| ScheduleLogError::new(format!("{field} must be a canonical instant")))
}
