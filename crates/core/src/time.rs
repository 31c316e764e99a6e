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
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}
