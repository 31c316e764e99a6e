//! Creating records from model input (schedule.md §8, §9.5 step 2, §9.7 step 1).
//!
//! Every `now_ms` is one wall-clock sample in epoch milliseconds. The record constructors
//! check the prompt first, then their selector's rules, then the common future-instant
//! check of §8.1.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use turnkit_core::{MAX_SAFE_INTEGER, as_safe_integer, js_trim};

use super::at::{ZoneContext, resolve_at, resolve_time_zone};
use super::change::{CronSchedule, MIN_EVERY_SECONDS, Rule, ScheduleRecord, check_id};
use super::cron::CronRule;
use super::error::{InputError, RuleViolation};
use super::instant::Timestamp;

/// The selector of a create request, already shape-checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Selector {
    /// `after_seconds`: a safe integer > 0.
    After(i64),
    /// `every_seconds`: a safe integer ≥ 300.
    Every(i64),
    /// `at`: the raw value; parsed by [`CreateRequest::build`] (after the preflight).
    At(Value),
    /// `cron` with its `time_zone` (either may be absent or of the wrong type): both are
    /// checked by [`CreateRequest::build`] (after the preflight), like `at`.
    Cron {
        /// `cron` as sent.
        cron: Value,
        /// `time_zone` as sent, `None` when absent or `null`.
        time_zone: Option<Value>,
    },
}

/// Whether `schedule_create` takes the `cron` selector (the schedule configuration's
/// `cron` switch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Calendar {
    /// The default: `cron` and `time_zone` are unknown root keys (`invalid_selector`).
    #[default]
    Refused,
    /// `cron` with an explicit `time_zone` is a fourth selector.
    Accepted,
}

/// The arguments of `schedule_create` as the tool decodes them: each known root key as the
/// model sent it (`Some(null)` for an explicit `null`, `None` when absent), and every other
/// root key in `extra`. Decoding fails only for a root that is not an object; the rules of
/// §9.5 step 2 are [`CreateRequest::from_args`]'s.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub(crate) struct CreateArgs {
    /// `prompt`.
    #[serde(default, deserialize_with = "present")]
    pub prompt: Option<Value>,
    /// `after_seconds`.
    #[serde(default, deserialize_with = "present")]
    pub after_seconds: Option<Value>,
    /// `at`.
    #[serde(default, deserialize_with = "present")]
    pub at: Option<Value>,
    /// `every_seconds`.
    #[serde(default, deserialize_with = "present")]
    pub every_seconds: Option<Value>,
    /// `cron` (a root key like any other unless the calendar is accepted).
    #[serde(default, deserialize_with = "present")]
    pub cron: Option<Value>,
    /// `time_zone` (only with `cron`).
    #[serde(default, deserialize_with = "present")]
    pub time_zone: Option<Value>,
    /// Any other root key (each one makes the call `invalid_selector`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A present key, `null` included.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A `schedule_create` call that passed the pre-queue validation of §9.5 step 2.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CreateRequest {
    prompt: String,
    selector: Selector,
}

impl CreateRequest {
    /// Pre-queue validation (§9.5 step 2, no I/O) with the calendar refused, in order: any
    /// root key other than
    /// `prompt`/`after_seconds`/`at`/`every_seconds`, or not exactly one selector →
    /// `invalid_selector`; prompt empty after trim (or not a string) → `invalid_prompt`;
    /// `after_seconds` not a safe integer > 0 → `invalid_rule`; `every_seconds` not a safe
    /// integer → `invalid_rule`; `every_seconds` < 300 → `frequency_too_high`. The content of
    /// `at` is not checked here.
    ///
    /// # Errors
    /// The [`InputError`] of the first failing rule.
    #[cfg(test)]
    pub(crate) fn from_arguments(arguments: &Value) -> Result<CreateRequest, InputError> {
        let args = CreateArgs::deserialize(arguments).map_err(|_| InputError::InvalidSelector)?;
        Self::from_args(args, Calendar::Refused)
    }

    /// [`CreateRequest::from_arguments`] on arguments the tool already decoded. With
    /// [`Calendar::Accepted`], `cron` is a fourth selector and `time_zone` is allowed beside
    /// it (and only there); a selector error then reports the four-selector message.
    ///
    /// # Errors
    /// The [`InputError`] of the first failing rule.
    pub(crate) fn from_args(
        args: CreateArgs,
        calendar: Calendar,
    ) -> Result<CreateRequest, InputError> {
        let (selector_error, cron) = match calendar {
            Calendar::Refused => {
                if args.cron.is_some() || args.time_zone.is_some() {
                    return Err(InputError::InvalidSelector);
                }
                (InputError::InvalidSelector, None)
            }
            Calendar::Accepted => {
                if args.time_zone.is_some() && args.cron.is_none() {
                    return Err(InputError::InvalidCalendarSelector);
                }
                (InputError::InvalidCalendarSelector, args.cron.as_ref())
            }
        };
        if !args.extra.is_empty() {
            return Err(selector_error);
        }
        let selectors = [&args.after_seconds, &args.at, &args.every_seconds]
            .iter()
            .filter(|selector| selector.is_some())
            .count()
            + usize::from(cron.is_some());
        if selectors != 1 {
            return Err(selector_error);
        }
        let prompt = trimmed_prompt(args.prompt.as_ref().and_then(Value::as_str).unwrap_or(""))?;
        let selector = if let Some(after) = &args.after_seconds {
            Selector::After(after_seconds(after)?)
        } else if let Some(every) = &args.every_seconds {
            Selector::Every(every_seconds(every)?)
        } else if let Some(cron) = args.cron {
            Selector::Cron {
                cron,
                time_zone: args.time_zone.filter(|zone| !zone.is_null()),
            }
        } else {
            Selector::At(args.at.unwrap_or(Value::Null))
        };
        Ok(CreateRequest {
            prompt: prompt.to_owned(),
            selector,
        })
    }

    /// The trimmed prompt.
    #[cfg(test)]
    pub(crate) fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The selector.
    #[cfg(test)]
    pub(crate) fn selector(&self) -> &Selector {
        &self.selector
    }

    /// Builds the record with the allocated `id` at `now_ms` (§9.5 step 8): `at` is parsed
    /// here (`zones` enables the decision-6 fallback), then §8.1.
    ///
    /// # Errors
    /// `invalid_rule`, `invalid_time_zone`, `not_future`, `time_out_of_range`,
    /// `timezone_confirmation_required`; `internal_error` if `id` is not a valid record id.
    pub(crate) fn build(
        &self,
        id: &str,
        now_ms: i64,
        zones: Option<&ZoneContext>,
    ) -> Result<ScheduleRecord, InputError> {
        match &self.selector {
            Selector::After(seconds) => {
                create_after(id, &self.prompt, &Value::from(*seconds), now_ms)
            }
            Selector::Every(seconds) => {
                create_every(id, &self.prompt, &Value::from(*seconds), now_ms)
            }
            Selector::At(at) => create_at(id, &self.prompt, at, now_ms, zones),
            Selector::Cron { cron, time_zone } => {
                create_cron(id, &self.prompt, cron, time_zone.as_ref(), now_ms)
            }
        }
    }
}

/// An `after` record (§8.2): prompt, then `after_seconds` a safe integer > 0, then
/// `now + after_seconds·1000` through §8.1.
///
/// # Errors
/// `invalid_prompt`, `invalid_rule` ([`RuleViolation::AfterSeconds`]), `time_out_of_range`,
/// `not_future`, or `internal_error` for a bad `id`.
pub fn create_after(
    id: &str,
    prompt: &str,
    after_seconds_value: &Value,
    now_ms: i64,
) -> Result<ScheduleRecord, InputError> {
    let prompt = trimmed_prompt(prompt)?;
    let seconds = after_seconds(after_seconds_value)?;
    let target = future_target(offset_target(now_ms, seconds), now_ms)?;
    record(id, prompt, Rule::After { seconds }, target)
}

/// An `every` record (§8.3): prompt, then `every_seconds` a safe integer (`invalid_rule`)
/// and ≥ 300 (`frequency_too_high`), then the first anchored target
/// `now + every_seconds·1000` through §8.1.
///
/// # Errors
/// `invalid_prompt`, `invalid_rule` ([`RuleViolation::EverySeconds`]), `frequency_too_high`,
/// `time_out_of_range`, `not_future`, or `internal_error` for a bad `id`.
pub fn create_every(
    id: &str,
    prompt: &str,
    every_seconds_value: &Value,
    now_ms: i64,
) -> Result<ScheduleRecord, InputError> {
    let prompt = trimmed_prompt(prompt)?;
    let seconds = every_seconds(every_seconds_value)?;
    let target = future_target(offset_target(now_ms, seconds), now_ms)?;
    record(id, prompt, Rule::Every { seconds }, target)
}

/// An `at` record (§8.4, §8.5): prompt, then the `at` value (offset string or local
/// object; `zones` = `Some` enables the decision-6 fallback for an object without
/// `time_zone`), then §8.1. Only the canonical UTC target is stored (§8.6).
///
/// # Errors
/// `invalid_prompt`, `invalid_rule`, `invalid_time_zone`, `time_out_of_range`,
/// `not_future`, `timezone_confirmation_required`, or `internal_error` for a bad `id`.
pub fn create_at(
    id: &str,
    prompt: &str,
    at: &Value,
    now_ms: i64,
    zones: Option<&ZoneContext>,
) -> Result<ScheduleRecord, InputError> {
    let prompt = trimmed_prompt(prompt)?;
    let target = resolve_at(at, zones)?;
    let target = future_target(Some(target), now_ms)?;
    record(id, prompt, Rule::At, target)
}

/// A `cron` record (Appendix B): prompt; then `cron` (a string, else
/// [`RuleViolation::CronShape`]) by the grammar of B.1 with the errors of B.2; then
/// `time_zone`: absent → [`InputError::MissingCronTimeZone`], not a string or not a zone →
/// `invalid_time_zone`; then the first occurrence after `now_ms` (none →
/// `no_future_occurrence`) through §8.1. Stored: `cron` as written, the zone's name and the
/// first occurrence as `scheduledAt`.
///
/// # Errors
/// `invalid_prompt`, `invalid_rule`, `no_future_occurrence`, `invalid_time_zone`,
/// `time_out_of_range`, or `internal_error` for a bad `id`.
pub fn create_cron(
    id: &str,
    prompt: &str,
    cron: &Value,
    time_zone: Option<&Value>,
    now_ms: i64,
) -> Result<ScheduleRecord, InputError> {
    let prompt = trimmed_prompt(prompt)?;
    let text = cron
        .as_str()
        .ok_or(InputError::InvalidRule(RuleViolation::CronShape))?;
    let rule = CronRule::parse(text)?;
    let zone = match time_zone {
        None => return Err(InputError::MissingCronTimeZone),
        Some(Value::String(zone)) => resolve_time_zone(zone)?,
        Some(_) => return Err(InputError::InvalidTimeZone { not_string: true }),
    };
    let now = Timestamp::from_millis(now_ms).ok_or(InputError::TimeOutOfRange)?;
    let first = rule
        .next_after(zone, now)
        .ok_or(InputError::NoFutureOccurrence)?;
    let target = future_target(Some(first.millis()), now_ms)?;
    let schedule = CronSchedule::new(text, zone)?;
    record(id, prompt, Rule::Cron(schedule), target)
}

/// The common future-instant check (§8.1), in order: `now_ms` or the target not a safe
/// integer (`None` = the arithmetic overflowed), or the target outside years 0001–9999 →
/// `time_out_of_range`; target ≤ now → `not_future`.
///
/// # Errors
/// As above.
pub(crate) fn future_target(target_ms: Option<i64>, now_ms: i64) -> Result<Timestamp, InputError> {
    if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&now_ms) {
        return Err(InputError::TimeOutOfRange);
    }
    let target = target_ms
        .and_then(Timestamp::from_millis)
        .ok_or(InputError::TimeOutOfRange)?;
    if target.millis() <= now_ms {
        return Err(InputError::NotFuture);
    }
    Ok(target)
}

/// Checks a `schedule_delete` id (§9.7 step 1): non-empty and equal to its trim.
///
/// # Errors
/// `invalid_rule` ([`RuleViolation::DeleteId`]).
pub(crate) fn validate_delete_id(id: &str) -> Result<(), InputError> {
    if id.is_empty() || js_trim(id).len() != id.len() {
        Err(InputError::InvalidRule(RuleViolation::DeleteId))
    } else {
        Ok(())
    }
}

fn trimmed_prompt(prompt: &str) -> Result<&str, InputError> {
    let trimmed = js_trim(prompt);
    if trimmed.is_empty() {
        Err(InputError::InvalidPrompt)
    } else {
        Ok(trimmed)
    }
}

fn after_seconds(value: &Value) -> Result<i64, InputError> {
    as_safe_integer(value)
        .filter(|seconds| *seconds > 0)
        .ok_or(InputError::InvalidRule(RuleViolation::AfterSeconds))
}

fn every_seconds(value: &Value) -> Result<i64, InputError> {
    let seconds =
        as_safe_integer(value).ok_or(InputError::InvalidRule(RuleViolation::EverySeconds))?;
    if seconds < MIN_EVERY_SECONDS {
        Err(InputError::FrequencyTooHigh)
    } else {
        Ok(seconds)
    }
}

/// `now + seconds·1000`, `None` if not a safe integer.
fn offset_target(now_ms: i64, seconds: i64) -> Option<i64> {
    seconds
        .checked_mul(1000)
        .and_then(|delta| now_ms.checked_add(delta))
        .filter(|target| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(target))
}

fn record(
    id: &str,
    prompt: &str,
    rule: Rule,
    target: Timestamp,
) -> Result<ScheduleRecord, InputError> {
    check_id(id).map_err(|_| InputError::Internal)?;
    ScheduleRecord::new(Arc::<str>::from(id), Arc::<str>::from(prompt), rule, target)
        .map_err(|_| InputError::Internal)
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;
