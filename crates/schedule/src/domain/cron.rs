//! The calendar rule: a five-field cron expression read in an explicit IANA zone, and its
//! next occurrence (`docs/spec/schedule.md`, "Calendar recurrence").
//!
//! Grammar (whole string; fields separated by one or more ASCII spaces, none before the
//! first or after the last):
//!
//! ```text
//! cron    = field SP field SP field SP field SP field   ; minute hour day-of-month month day-of-week
//! field   = item *("," item)
//! item    = ("*" / number / number "-" number) ["/" number]
//! number  = 1*2DIGIT
//! ```
//!
//! Ranges: minute 0–59, hour 0–23, day of month 1–31, month 1–12, day of week 0–7 (0 and 7
//! are Sunday). `a-b` needs `a ≤ b`; a step `/n` needs `n ≥ 1` and takes every n-th value of
//! its range from the range's start (`*/15` = 0, 15, 30, 45; `5-20/5` = 5, 10, 15, 20; `7/10`
//! = 7, 17, 27, … to the field's end). A date matches when its month matches and, as in
//! Vixie cron, its day of month *or* its day of week does when both of those fields are
//! restricted (neither starts with `*`), otherwise the one that is restricted.
//!
//! Wall clock to instant (the zone's rules from chrono-tz): a matching local time that occurs
//! once is that instant; one that occurs twice (the hour repeated when clocks go back) is
//! the first of the two, and the second never fires; one that does not exist (the hour
//! skipped when clocks go forward) fires once, at the first minute that exists after it (the
//! transition instant), together with any matching time there.

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::error::{InputError, RuleViolation};
use super::instant::Timestamp;

/// `instant` as local time in `zone` with its offset, RFC 3339 to the second
/// (`2026-12-08T09:00:00+01:00`).
pub(crate) fn local_instant(zone: Tz, instant: Timestamp) -> String {
    instant
        .to_datetime()
        .with_timezone(&zone)
        .format("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

/// One field's allowed values as a bit set (bit `v` set: value `v` matches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Bits(u64);

impl Bits {
    fn has(self, value: u32) -> bool {
        value < 64 && self.0 & (1 << value) != 0
    }

    fn values(self) -> impl Iterator<Item = u32> {
        (0..64).filter(move |v| self.has(*v))
    }
}

/// A parsed five-field cron expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CronRule {
    minutes: Bits,
    hours: Bits,
    days: Bits,
    months: Bits,
    /// Days of week, 0 = Sunday … 6 = Saturday (a written 7 is stored as 0).
    weekdays: Bits,
    /// Whether the day-of-month field was restricted (did not start with `*`).
    days_restricted: bool,
    /// Whether the day-of-week field was restricted.
    weekdays_restricted: bool,
}

/// The field being parsed: its range and the violation a bad value reports.
struct Field {
    min: u32,
    max: u32,
    violation: RuleViolation,
}

const FIELDS: [Field; 5] = [
    Field {
        min: 0,
        max: 59,
        violation: RuleViolation::CronMinute,
    },
    Field {
        min: 0,
        max: 23,
        violation: RuleViolation::CronHour,
    },
    Field {
        min: 1,
        max: 31,
        violation: RuleViolation::CronDayOfMonth,
    },
    Field {
        min: 1,
        max: 12,
        violation: RuleViolation::CronMonth,
    },
    Field {
        min: 0,
        max: 7,
        violation: RuleViolation::CronDayOfWeek,
    },
];

/// The longest gap between two dates of a rule whose dates can occur at all (February 29
/// with a day of week restricted by day of month only: 8 years around a skipped leap year,
/// well inside this), in days.
const SEARCH_DAYS: i64 = 366 * 30;

impl CronRule {
    /// Parses `text` by the module's grammar.
    ///
    /// # Errors
    /// `invalid_rule`: [`RuleViolation::CronShape`] when it is not five fields; per field,
    /// in field order, [`RuleViolation::CronMinute`] … [`RuleViolation::CronDayOfWeek`] for
    /// a value that is not a number of its range or an item of the wrong shape,
    /// [`RuleViolation::CronRange`] for `a-b` with `a > b`, [`RuleViolation::CronStep`] for
    /// `/0`. Then `no_future_occurrence` ([`InputError::NoFutureOccurrence`]) when the
    /// day of month and month can never meet (`0 0 30 2 *`, `0 0 31 4,6,9,11 *`).
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let shape = InputError::InvalidRule(RuleViolation::CronShape);
        if text.starts_with(' ') || text.ends_with(' ') {
            return Err(shape);
        }
        let parts: Vec<&str> = text.split(' ').filter(|part| !part.is_empty()).collect();
        if parts.len() != 5 {
            return Err(shape);
        }
        let mut bits = [Bits(0); 5];
        for (i, (part, field)) in parts.iter().zip(FIELDS.iter()).enumerate() {
            bits[i] = parse_field(part, field).map_err(InputError::InvalidRule)?;
        }
        let mut weekdays = bits[4];
        if weekdays.has(7) {
            weekdays = Bits((weekdays.0 | 1) & !(1 << 7));
        }
        let rule = Self {
            minutes: bits[0],
            hours: bits[1],
            days: bits[2],
            months: bits[3],
            weekdays,
            days_restricted: !parts[2].starts_with('*'),
            weekdays_restricted: !parts[4].starts_with('*'),
        };
        if !rule.dates_can_meet() {
            return Err(InputError::NoFutureOccurrence);
        }
        Ok(rule)
    }

    /// Whether some date matches: always, unless only the day of month is restricted and
    /// none of its days exists in any of the months (February counted with 29 days).
    fn dates_can_meet(&self) -> bool {
        if !self.days_restricted || self.weekdays_restricted {
            return true;
        }
        let Some(first_day) = self.days.values().next() else {
            return false;
        };
        self.months.values().any(|month| {
            let longest = match month {
                2 => 29,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            first_day <= longest
        })
    }

    /// Whether the local date `date` matches (month, then day of month / day of week).
    fn date_matches(&self, date: NaiveDate) -> bool {
        if !self.months.has(date.month()) {
            return false;
        }
        let day = self.days.has(date.day());
        let weekday = self.weekdays.has(date.weekday().num_days_from_sunday());
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => day || weekday,
            (true, false) => day,
            (false, true) => weekday,
            (false, false) => true,
        }
    }

    /// The first occurrence strictly after `after`, read in `zone` (module documentation for
    /// the wall clock rules); `None` when there is none up to `9999-12-31T23:59:59.999Z`.
    #[must_use]
    pub fn next_after(&self, zone: Tz, after: Timestamp) -> Option<Timestamp> {
        let after_utc = DateTime::<Utc>::from_timestamp_millis(after.millis())?;
        let local = after_utc.with_timezone(&zone).naive_local();
        let mut date = local.date();
        // A time in the gap that began the day before can fire today: start a day early.
        date = date.pred_opt().unwrap_or(date);
        for _ in 0..SEARCH_DAYS {
            if self.date_matches(date)
                && let Some(found) = self.first_on(zone, date, after_utc)
            {
                return Timestamp::from_millis(found.timestamp_millis());
            }
            date = date.succ_opt()?;
            if date.year() > 9999 {
                return None;
            }
        }
        None
    }

    /// The latest occurrence at or before `at`, read in `zone` (the one a dispatch at `at`
    /// presents: catch-up is latest-only, as for `every`); `None` when there is none from
    /// `0001-01-01` on.
    #[must_use]
    pub fn latest_at_or_before(&self, zone: Tz, at: Timestamp) -> Option<Timestamp> {
        let at_utc = DateTime::<Utc>::from_timestamp_millis(at.millis())?;
        let local = at_utc.with_timezone(&zone).naive_local();
        // A time skipped late in the evening fires just after midnight: start a day late.
        let mut date = local.date().succ_opt().unwrap_or(local.date());
        for _ in 0..SEARCH_DAYS {
            if self.date_matches(date)
                && let Some(found) = self.last_on(zone, date, at_utc)
            {
                return Timestamp::from_millis(found.timestamp_millis());
            }
            date = date.pred_opt()?;
            if date.year() < 1 {
                return None;
            }
        }
        None
    }

    /// The latest instant at or before `at` that a matching time of `date` fires at.
    fn last_on(&self, zone: Tz, date: NaiveDate, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.instants_on(zone, date)
            .filter(|instant| *instant <= at)
            .max()
    }

    /// The instants the matching times of `date` fire at (unordered, possibly repeated).
    fn instants_on(&self, zone: Tz, date: NaiveDate) -> impl Iterator<Item = DateTime<Utc>> {
        self.hours.values().flat_map(move |hour| {
            self.minutes
                .values()
                .filter_map(move |minute| fire_instant(zone, date.and_hms_opt(hour, minute, 0)?))
        })
    }

    /// The earliest instant after `after` that a matching time of `date` fires at.
    fn first_on(&self, zone: Tz, date: NaiveDate, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.instants_on(zone, date)
            .filter(|instant| *instant > after)
            .min()
    }
}

/// The instant the wall-clock time `naive` fires at in `zone`: itself when it occurs once,
/// the first of two, or the first minute that exists after it when it does not exist.
fn fire_instant(zone: Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(at) => Some(at.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        LocalResult::None => {
            // Skipped hours are at most a day long (Pacific/Apia, 2011-12-30).
            let mut later = naive;
            for _ in 0..(2 * 24 * 60) {
                later = later.checked_add_signed(Duration::minutes(1))?;
                if let Some(at) = zone.from_local_datetime(&later).earliest() {
                    return Some(at.with_timezone(&Utc));
                }
            }
            None
        }
    }
}

/// One field: comma-separated items, each `*`, `n` or `a-b`, with an optional `/step`.
fn parse_field(text: &str, field: &Field) -> Result<Bits, RuleViolation> {
    let bad = field.violation;
    let mut bits = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(number(step).ok_or(bad)?)),
            None => (item, None),
        };
        let (start, end) = if range == "*" {
            (field.min, field.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (number(a).ok_or(bad)?, number(b).ok_or(bad)?)
        } else {
            let single = number(range).ok_or(bad)?;
            // `n/step` runs from n to the field's end.
            (single, if step.is_some() { field.max } else { single })
        };
        if start < field.min || end > field.max || start > field.max {
            return Err(bad);
        }
        if start > end {
            return Err(RuleViolation::CronRange);
        }
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(RuleViolation::CronStep);
        }
        let mut value = start;
        while value <= end {
            bits |= 1 << value;
            value += step;
        }
    }
    Ok(Bits(bits))
}

/// One or two ASCII digits.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 2 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
#[path = "cron_tests.rs"]
mod tests;
