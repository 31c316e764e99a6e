//! Time: the [`Clock`] seam, [`SystemClock`], and the canonical instant format.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use futures::future::BoxFuture;

/// The clock failed to produce a usable time (a test double can simulate this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("clock unavailable: {0}")]
pub struct ClockError(pub String);

/// Every read of wall time and every logical wait in library code goes through this seam, so
/// tests and scenarios run on a manual clock and never sleep.
///
/// Wall time ([`Clock::now`]) and sleeping ([`Clock::sleep`]) are separate on purpose: a sleep
/// is measured on monotonic time, so moving the wall clock (a rollback or a forward jump)
/// neither fires nor delays a pending sleep. Code that waits for a wall-clock target sleeps
/// for `target - now`, then re-reads `now` and decides again.
pub trait Clock: Send + Sync + 'static {
    /// The current wall time, truncated to milliseconds.
    fn now(&self) -> DateTime<Utc>;

    /// Like [`Clock::now`], but lets a clock report a failure (the testkit's `ManualClock`
    /// can be told to fail once). Library code that must turn a clock failure into an error
    /// value (schedule's `internal_error`) uses this.
    fn try_now(&self) -> Result<DateTime<Utc>, ClockError> {
        Ok(self.now())
    }

    /// [`Clock::now`] as milliseconds since the Unix epoch. A clock may answer without building
    /// a calendar date; hot paths that only stamp a number (the job registry's `startedAt` /
    /// `finishedAt`) use this.
    fn now_millis(&self) -> i64 {
        self.now().timestamp_millis()
    }

    /// A future that completes after `duration` of monotonic time. Dropping it cancels the
    /// sleep.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Wall time from the operating system and sleeps on tokio's timer. Requires a tokio runtime
/// with the time driver enabled when [`Clock::sleep`] is polled.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        truncate_to_millis(Utc::now())
    }

    fn now_millis(&self) -> i64 {
        Utc::now().timestamp_millis()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Drops sub-millisecond precision.
pub fn truncate_to_millis(at: DateTime<Utc>) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(at.timestamp_millis())
        .single()
        .unwrap_or(at)
}

/// Formats an instant as the canonical `YYYY-MM-DDTHH:MM:SS.mmmZ` (always three fraction
/// digits, `Z`), the format every time in a tool value or log uses (schedule §2).
pub fn format_instant(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses the canonical instant `YYYY-MM-DDTHH:MM:SS.mmmZ` exactly (24 bytes, four-digit
/// year 0001–9999, a real calendar date, hour ≤ 23, minute and second ≤ 59, three fraction
/// digits, uppercase `T` and `Z`) into epoch milliseconds, without allocating. Anything else
/// is `None`: callers that accept other RFC 3339 forms fall back to a general parser.
pub fn parse_canonical_millis(text: &str) -> Option<i64> {
    let b: &[u8; 24] = text.as_bytes().try_into().ok()?;
    if b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let digit = |i: usize| {
        let d = b[i].wrapping_sub(b'0');
        (d < 10).then_some(i64::from(d))
    };
    let two = |i: usize| Some(digit(i)? * 10 + digit(i + 1)?);
    let year = two(0)? * 100 + two(2)?;
    let (month, day) = (two(5)?, two(8)?);
    let (hour, minute, second) = (two(11)?, two(14)?, two(17)?);
    let milli = digit(20)? * 100 + two(21)?;
    if year == 0 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if month == 0 || month > 12 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(
        days_from_civil(year, month, day) * 86_400_000
            + ((hour * 60 + minute) * 60 + second) * 1000
            + milli,
    )
}

/// Days in `month` (1–12) of `year`; 0 for an invalid month.
const fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
const fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An RFC 3339 instant: the canonical form through [`parse_canonical_millis`], any other
/// form through chrono's general parser (whose error a caller reports).
pub(crate) fn parse_rfc3339(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    if let Some(at) = parse_canonical_millis(text).and_then(DateTime::from_timestamp_millis) {
        return Ok(at);
    }
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc))
}

/// Milliseconds since the Unix epoch.
pub fn epoch_millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

/// `serde` helpers writing a `DateTime<Utc>` in the canonical millisecond format.
pub(crate) mod millis_rfc3339 {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_instant(*at))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}
