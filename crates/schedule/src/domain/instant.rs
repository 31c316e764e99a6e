//! The canonical instant (schedule.md §2): [`Timestamp`], epoch milliseconds inside years
//! 0001–9999, written as `YYYY-MM-DDTHH:mm:ss.sssZ`.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `0001-01-01T00:00:00.000Z` in epoch milliseconds.
pub const MIN_MILLIS: i64 = -62_135_596_800_000;
/// `9999-12-31T23:59:59.999Z` in epoch milliseconds.
pub const MAX_MILLIS: i64 = 253_402_300_799_999;

const MILLIS_PER_DAY: i64 = 86_400_000;

/// An instant in the representable range of §2, millisecond precision.
///
/// Ordering is chronological. [`fmt::Display`] and `Serialize` write the canonical form
/// (`2026-08-05T12:00:00.000Z`); [`Timestamp::parse`] and `Deserialize` accept only that form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// `0001-01-01T00:00:00.000Z`.
    pub const MIN: Timestamp = Timestamp(MIN_MILLIS);
    /// `9999-12-31T23:59:59.999Z`.
    pub const MAX: Timestamp = Timestamp(MAX_MILLIS);

    /// The instant `ms` epoch milliseconds, or `None` outside `MIN_MILLIS..=MAX_MILLIS`.
    pub const fn from_millis(ms: i64) -> Option<Timestamp> {
        if ms >= MIN_MILLIS && ms <= MAX_MILLIS {
            Some(Timestamp(ms))
        } else {
            None
        }
    }

    /// Epoch milliseconds.
    pub const fn millis(self) -> i64 {
        self.0
    }

    /// A chrono instant, or `None` outside the representable range (milliseconds are kept).
    pub fn from_datetime(at: DateTime<Utc>) -> Option<Timestamp> {
        Timestamp::from_millis(at.timestamp_millis())
    }

    /// The same instant as a chrono value.
    pub fn to_datetime(self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.0).unwrap_or_default()
    }

    /// Parses the canonical form exactly: 24 bytes, four-digit year ≥ 0001, real calendar
    /// date, hour ≤ 23, minute and second ≤ 59, exactly three fraction digits, uppercase `T`
    /// and `Z`. Anything else is `None`.
    pub fn parse(text: &str) -> Option<Timestamp> {
        turnkit_core::parse_canonical_millis(text).and_then(Timestamp::from_millis)
    }

    /// Civil UTC fields `(year, month, day, hour, minute, second, millisecond)`.
    pub fn fields(self) -> (i64, i64, i64, i64, i64, i64, i64) {
        let days = self.0.div_euclid(MILLIS_PER_DAY);
        let rem = self.0.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        let milli = rem % 1000;
        let secs = rem / 1000;
        (
            year,
            month,
            day,
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            milli,
        )
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day, hour, minute, second, milli) = self.fields();
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z"
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("not a canonical schedule instant"))
    }
}

/// ASCII decimal digits to a number; `None` if any byte is not `0`–`9`.
pub(crate) fn digits(bytes: &[u8]) -> Option<i64> {
    let mut value = 0i64;
    for &byte in bytes {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(byte - b'0');
    }
    Some(value)
}

/// Whether `year` is a Gregorian leap year.
pub(crate) const fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` (1–12) of `year`; 0 for an invalid month.
pub(crate) const fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub(crate) const fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
pub(crate) const fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// Epoch milliseconds of civil UTC fields (no validation; fields may overflow naturally).
pub(crate) const fn millis_from_fields(
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    milli: i64,
) -> i64 {
    days_from_civil(year, month, day) * MILLIS_PER_DAY
        + ((hour * 60 + minute) * 60 + second) * 1000
        + milli
}

#[cfg(test)]
#[path = "instant_tests.rs"]
mod tests;
