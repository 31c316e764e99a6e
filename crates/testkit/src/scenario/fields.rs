//! Reading step fields with scenario errors ("missing field", "wrong type").

use serde_json::{Map, Value};

pub(crate) type Step = Map<String, Value>;

pub(crate) fn string<'a>(step: &'a Step, key: &str) -> Result<&'a str, String> {
    match step.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("field {key:?} must be a string")),
        None => Err(format!("missing field {key:?}")),
    }
}

pub(crate) fn opt_string<'a>(step: &'a Step, key: &str) -> Result<Option<&'a str>, String> {
    match step.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("field {key:?} must be a string")),
    }
}

pub(crate) fn opt_bool(step: &Step, key: &str) -> Result<Option<bool>, String> {
    match step.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("field {key:?} must be a boolean")),
    }
}

pub(crate) fn opt_u64(step: &Step, key: &str) -> Result<Option<u64>, String> {
    match step.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("field {key:?} must be a non-negative integer")),
    }
}

pub(crate) fn u64_field(step: &Step, key: &str) -> Result<u64, String> {
    opt_u64(step, key)?.ok_or_else(|| format!("missing field {key:?}"))
}

pub(crate) fn object<'a>(step: &'a Step, key: &str) -> Result<Option<&'a Value>, String> {
    match step.get(key) {
        None => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(_) => Err(format!("field {key:?} must be an object")),
    }
}

/// Rejects keys a step does not know, so a typo is a scenario error, not a silent default.
pub(crate) fn only(step: &Step, allowed: &[&str]) -> Result<(), String> {
    for key in step.keys() {
        if key != "do" && !allowed.contains(&key.as_str()) {
            return Err(format!("unknown field {key:?}"));
        }
    }
    Ok(())
}
