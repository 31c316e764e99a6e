//! `at` parsing (schedule.md §8.4, §8.5, decisions 5 and 6): the strict offset string, the
//! local `{date, time, time_zone}` object, zone validation with chrono-tz, and local → UTC
//! resolution (DST gap → `invalid_rule`, overlap → earliest instant).

use std::str::FromStr;

use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;
use serde_json::Value;
use turnkit_core::js_trim;

use super::error::{InputError, RuleViolation};
use super::instant::{MAX_MILLIS, MIN_MILLIS, days_in_month, digits, millis_from_fields};

const MILLIS_PER_DAY: i64 = 86_400_000;

/// The zones a local `at` without `time_zone` may fall back to (decision 6).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneContext {
    /// The session header's `time_zone`.
    pub session_time_zone: Option<String>,
    /// The client zone the host reports for the current turn, if any.
    pub client_time_zone: Option<String>,
}

impl ZoneContext {
    /// The fallback zone: the session zone when the client zone is absent or equal to it.
    ///
    /// # Errors
    /// [`InputError::TimezoneConfirmationRequired`] otherwise.
    pub fn fallback_zone(&self) -> Result<&str, InputError> {
        match (&self.session_time_zone, &self.client_time_zone) {
            (Some(session), None) => Ok(session),
            (Some(session), Some(client)) if session == client => Ok(session),
            _ => Err(InputError::TimezoneConfirmationRequired {
                session_time_zone: self.session_time_zone.clone(),
                client_time_zones: self.client_time_zone.iter().cloned().collect(),
            }),
        }
    }
}

/// Local calendar fields (validated ranges, not yet a real date).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    milli: i64,
}

impl Fields {
    fn millis_as_utc(self) -> i64 {
        millis_from_fields(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.milli,
        )
    }

    fn is_real_date(self) -> bool {
        (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
    }
}

/// Resolves an `at` value to a target in epoch milliseconds (before the §8.1 futurity and
/// range check, which [`super::create::future_target`] does).
///
/// A string is parsed by [`parse_offset_at`]; an object by [`resolve_local_at`]; anything
/// else is `invalid_rule` ([`RuleViolation::AtType`]).
///
/// # Errors
/// The [`InputError`] of the first failing rule.
pub(crate) fn resolve_at(at: &Value, zones: Option<&ZoneContext>) -> Result<i64, InputError> {
    match at {
        Value::String(text) => parse_offset_at(text),
        Value::Object(_) => resolve_local_at(at, zones),
        _ => Err(InputError::InvalidRule(RuleViolation::AtType)),
    }
}

/// Parses the strict offset form `YYYY-MM-DDTHH:MM:SS[.f{1,3}](Z|+HH:MM|-HH:MM)` (§8.4) to
/// epoch milliseconds (fields read as UTC, minus the offset; not range-checked).
///
/// # Errors
/// `invalid_rule` with [`RuleViolation::AtShape`] (grammar), then
/// [`RuleViolation::AtNotReal`] (year 0000, hour > 23, minute/second > 59, impossible date),
/// then [`RuleViolation::AtOffset`] (offset hour > 23, minute > 59, or `-00:00`).
pub(crate) fn parse_offset_at(text: &str) -> Result<i64, InputError> {
    let shape = InputError::InvalidRule(RuleViolation::AtShape);
    let b = text.as_bytes();
    if b.len() < 20 {
        return Err(shape);
    }
    let (fields, rest) = parse_date_time(b).ok_or_else(|| shape.clone())?;
    let offset_minutes = match rest {
        [b'Z'] => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = digits(&[*h1, *h2]).ok_or_else(|| shape.clone())?;
            let minutes = digits(&[*m1, *m2]).ok_or_else(|| shape.clone())?;
            if hours > 23 || minutes > 59 || (*sign == b'-' && hours == 0 && minutes == 0) {
                None
            } else if *sign == b'-' {
                Some(-(hours * 60 + minutes))
            } else {
                Some(hours * 60 + minutes)
            }
        }
        _ => return Err(shape),
    };
    if fields.year == 0
        || fields.hour > 23
        || fields.minute > 59
        || fields.second > 59
        || !fields.is_real_date()
    {
        return Err(InputError::InvalidRule(RuleViolation::AtNotReal));
    }
    let offset_minutes = offset_minutes.ok_or(InputError::InvalidRule(RuleViolation::AtOffset))?;
    Ok(fields.millis_as_utc() - offset_minutes * 60_000)
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,3}]` at the start of `b`; returns the fields and the rest.
fn parse_date_time(b: &[u8]) -> Option<(Fields, &[u8])> {
    if b.len() < 19 || b[10] != b'T' {
        return None;
    }
    let (year, month, day) = parse_date(&b[..10])?;
    let (hour, minute, second, milli, rest) = parse_time_prefix(&b[11..])?;
    Some((
        Fields {
            year,
            month,
            day,
            hour,
            minute,
            second,
            milli,
        },
        rest,
    ))
}

/// Exactly `YYYY-MM-DD` (ASCII digits).
fn parse_date(b: &[u8]) -> Option<(i64, i64, i64)> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    Some((digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?))
}

/// `HH:MM:SS[.f{1,3}]` at the start of `b`; the fraction is right-padded to milliseconds.
fn parse_time_prefix(b: &[u8]) -> Option<(i64, i64, i64, i64, &[u8])> {
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let hour = digits(&b[0..2])?;
    let minute = digits(&b[3..5])?;
    let second = digits(&b[6..8])?;
    let mut rest = &b[8..];
    let mut milli = 0;
    if let [b'.', tail @ ..] = rest {
        let count = tail.iter().take_while(|byte| byte.is_ascii_digit()).count();
        if count == 0 || count > 3 {
            return None;
        }
        let value = digits(&tail[..count])?;
        milli = value * [100, 10, 1][count - 1];
        rest = &tail[count..];
    }
    Some((hour, minute, second, milli, rest))
}

/// Resolves the local object form `{date, time, time_zone}` (§8.5) to epoch milliseconds.
///
/// Order: key set (exactly `date`, `time`, `time_zone`; with `zones` given, exactly `date`
/// and `time` selects the decision-6 fallback) → string types → `date`/`time` shape →
/// field ranges → real calendar date → zone → local resolution.
///
/// # Errors
/// `invalid_rule` ([`RuleViolation::LocalKeys`], `LocalStrings`, `LocalShape`,
/// `LocalNotReal`, `AtNotReal`, `DstGap`, `AtType` for a non-object), `invalid_time_zone`,
/// `time_out_of_range` (every candidate instant outside years 0001–9999), or
/// `timezone_confirmation_required` (fallback refused).
pub fn resolve_local_at(at: &Value, zones: Option<&ZoneContext>) -> Result<i64, InputError> {
    let Some(map) = at.as_object() else {
        return Err(InputError::InvalidRule(RuleViolation::AtType));
    };
    let has_zone = map.contains_key("time_zone");
    let keys_ok = map.contains_key("date")
        && map.contains_key("time")
        && ((has_zone && map.len() == 3) || (!has_zone && map.len() == 2 && zones.is_some()));
    if !keys_ok {
        return Err(InputError::InvalidRule(RuleViolation::LocalKeys));
    }
    let (Some(Value::String(date)), Some(Value::String(time))) = (map.get("date"), map.get("time"))
    else {
        return Err(InputError::InvalidRule(RuleViolation::LocalStrings));
    };
    let zone_value = map.get("time_zone");
    if let Some(value) = zone_value
        && !value.is_string()
    {
        return Err(InputError::InvalidTimeZone { not_string: true });
    }
    let fields = parse_local_fields(date, time)?;
    let zone_name = match (zone_value.and_then(Value::as_str), zones) {
        (Some(name), _) => name,
        (None, Some(zones)) => zones.fallback_zone()?,
        (None, None) => return Err(InputError::InvalidRule(RuleViolation::LocalKeys)),
    };
    let zone = resolve_time_zone(zone_name)?;
    resolve_local_fields(fields, zone)
}

fn parse_local_fields(date: &str, time: &str) -> Result<Fields, InputError> {
    let shape = InputError::InvalidRule(RuleViolation::LocalShape);
    let (year, month, day) = parse_date(date.as_bytes()).ok_or_else(|| shape.clone())?;
    let (hour, minute, second, milli, rest) =
        parse_time_prefix(time.as_bytes()).ok_or_else(|| shape.clone())?;
    if !rest.is_empty() {
        return Err(shape);
    }
    let fields = Fields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        milli,
    };
    if year == 0 || hour > 23 || minute > 59 || second > 59 {
        return Err(InputError::InvalidRule(RuleViolation::LocalNotReal));
    }
    if !fields.is_real_date() {
        return Err(InputError::InvalidRule(RuleViolation::AtNotReal));
    }
    Ok(fields)
}

/// Validates a zone name (§8.5, decision 5) and returns chrono-tz's zone.
///
/// Rejected: empty or not equal to its JavaScript trim; not exactly `UTC` and not of the
/// Area/Location shape (ASCII letter, then `[A-Za-z0-9_+.-]*`, then one or more
/// `/[A-Za-z0-9_+.-]+`); unknown to chrono-tz (exact, case-sensitive match; links such as
/// `US/Eastern` are accepted).
///
/// # Errors
/// `invalid_time_zone` ([`InputError::InvalidTimeZone`]).
pub fn resolve_time_zone(name: &str) -> Result<Tz, InputError> {
    let invalid = InputError::InvalidTimeZone { not_string: false };
    if name.is_empty() || js_trim(name).len() != name.len() {
        return Err(invalid);
    }
    if name != "UTC" && !is_area_location(name) {
        return Err(invalid);
    }
    Tz::from_str(name).map_err(|_| invalid)
}

fn is_area_location(name: &str) -> bool {
    let allowed = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'.' | b'-');
    let mut segments = name.as_bytes().split(|byte| *byte == b'/');
    let Some(area) = segments.next() else {
        return false;
    };
    let area_ok =
        area.first().is_some_and(u8::is_ascii_alphabetic) && area.iter().copied().all(allowed);
    let mut locations = 0;
    for segment in segments {
        if segment.is_empty() || !segment.iter().copied().all(allowed) {
            return false;
        }
        locations += 1;
    }
    area_ok && locations > 0
}

/// The zone's UTC offset in seconds at the instant `ms`.
fn offset_seconds(zone: Tz, ms: i64) -> i64 {
    let at = DateTime::from_timestamp_millis(ms).unwrap_or_default();
    i64::from(
        zone.offset_from_utc_datetime(&at.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

/// Local → instant (§8.5): offsets observed at the naive instant and ±1, ±2 days (clamped to
/// the representable range); each distinct offset gives a candidate that must project back to
/// the same local fields; the earliest surviving candidate wins (DST overlap → first
/// occurrence).
fn resolve_local_fields(fields: Fields, zone: Tz) -> Result<i64, InputError> {
    let naive = fields.millis_as_utc();
    let mut offsets: Vec<i64> = Vec::with_capacity(5);
    for day in [0, -1, 1, -2, 2] {
        let sample = (naive + day * MILLIS_PER_DAY).clamp(MIN_MILLIS, MAX_MILLIS);
        let offset = offset_seconds(zone, sample);
        if !offsets.contains(&offset) {
            offsets.push(offset);
        }
    }
    let mut out_of_range = false;
    let mut best: Option<i64> = None;
    for offset in offsets {
        let candidate = naive - offset * 1000;
        if !(MIN_MILLIS..=MAX_MILLIS).contains(&candidate) {
            out_of_range = true;
            continue;
        }
        if candidate + offset_seconds(zone, candidate) * 1000 == naive {
            best = Some(best.map_or(candidate, |best| best.min(candidate)));
        }
    }
    match best {
        Some(candidate) => Ok(candidate),
        None if out_of_range => Err(InputError::TimeOutOfRange),
        None => Err(InputError::InvalidRule(RuleViolation::DstGap)),
    }
}

#[cfg(test)]
#[path = "at_tests.rs"]
mod tests;
