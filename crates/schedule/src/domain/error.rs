//! Error vocabulary of the schedule domain: the stable [`ErrorCode`]s and exact messages of
//! schedule.md §9.4, the model-input error [`InputError`] (§8, §9.5), the durable-log error
//! [`ScheduleLogError`] (§4, §5) and the fixed-rate arithmetic error [`ResolveError`] (§6).

use serde_json::{Value, json};

/// `invalid_selector` message (§9.4).
pub(crate) const ERR_SELECTOR: &str =
    "schedule_create accepts exactly one of after_seconds, at, or every_seconds.";
/// `invalid_selector` message when the `cron` selector is accepted.
pub(crate) const ERR_SELECTOR_CRON: &str = "schedule_create accepts exactly one of after_seconds, at, every_seconds, or cron (with time_zone).";
/// `invalid_time_zone` message for a `cron` without `time_zone`.
pub(crate) const ERR_CRON_ZONE: &str =
    "cron requires time_zone: UTC or a valid IANA Area/Location name.";
/// `invalid_prompt` message (§9.4).
pub(crate) const ERR_PROMPT: &str = "prompt must be non-empty after trimming.";
/// `invalid_rule` message for a bad `after_seconds` (§8.2).
pub(crate) const ERR_AFTER: &str = "after_seconds must be a positive safe integer.";
/// `invalid_rule` message for a non-integral `every_seconds` (§8.3).
pub(crate) const ERR_EVERY_INT: &str = "every_seconds must be a safe integer.";
/// `frequency_too_high` message (§8.3).
pub(crate) const ERR_EVERY_MIN: &str = "every_seconds must be at least 300.";
/// `invalid_rule` message for a bad `schedule_delete` id (§9.7).
pub(crate) const ERR_DELETE_ID: &str =
    "schedule_delete id must be non-empty without surrounding whitespace.";
/// `invalid_rule` message for an `at` string of the wrong shape (§8.4).
pub(crate) const ERR_AT_SHAPE: &str = "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset.";
/// `invalid_rule` message for an impossible calendar date or time (§8.4, §8.5).
pub(crate) const ERR_AT_REAL: &str = "The at value must be a real ISO calendar date and time.";
/// `invalid_rule` message for a bad numeric offset (§8.4).
pub(crate) const ERR_AT_OFFSET: &str = "The at numeric offset is invalid.";
/// `invalid_rule` message for a local `at` of the wrong shape (§8.5).
pub(crate) const ERR_LOCAL_SHAPE: &str = "Local at requires date YYYY-MM-DD and time HH:mm:ss with optional one-to-three digit milliseconds.";
/// `invalid_rule` message for out-of-range local fields (§8.5).
pub(crate) const ERR_LOCAL_REAL: &str =
    "The local at value must be a real ISO calendar date and time.";
/// `invalid_rule` message for a local time inside a DST gap (§8.5).
pub(crate) const ERR_GAP: &str = "The local at time does not exist in the selected time zone.";
/// `invalid_rule` message for a local `at` object with the wrong key set (§8.5).
pub(crate) const ERR_LOCAL_KEYS: &str = "Local at must contain exactly date, time, and time_zone.";
/// `invalid_rule` message for non-string local `date` / `time` (§8.5).
pub(crate) const ERR_LOCAL_STRINGS: &str = "Local at date and time must be strings.";
/// `invalid_rule` message for an `at` that is neither a string nor an object (§8.5).
pub(crate) const ERR_AT_TYPE: &str =
    "at must be an explicit-offset string or local calendar object.";
/// `invalid_time_zone` message for a bad zone name (§8.5).
pub(crate) const ERR_ZONE: &str = "time_zone must be UTC or a valid IANA Area/Location name.";
/// `invalid_time_zone` message for a non-string zone (§8.5).
pub(crate) const ERR_ZONE_STRING: &str = "time_zone must be a string.";
/// `invalid_rule` message for a `cron` that is not five fields (the calendar rule).
pub(crate) const ERR_CRON_SHAPE: &str =
    "cron must be five space-separated fields: minute hour day-of-month month day-of-week.";
/// `invalid_rule` message for a bad `cron` minute field.
pub(crate) const ERR_CRON_MINUTE: &str = "The cron minute field must be *, a number 0-59, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
/// `invalid_rule` message for a bad `cron` hour field.
pub(crate) const ERR_CRON_HOUR: &str = "The cron hour field must be *, a number 0-23, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
/// `invalid_rule` message for a bad `cron` day-of-month field.
pub(crate) const ERR_CRON_DAY: &str = "The cron day-of-month field must be *, a number 1-31, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
/// `invalid_rule` message for a bad `cron` month field.
pub(crate) const ERR_CRON_MONTH: &str = "The cron month field must be *, a number 1-12, a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
/// `invalid_rule` message for a bad `cron` day-of-week field.
pub(crate) const ERR_CRON_WEEKDAY: &str = "The cron day-of-week field must be *, a number 0-7 (0 and 7 are Sunday), a range a-b, a step */n or a-b/n, or a comma-separated list of them.";
/// `invalid_rule` message for a `cron` range whose start is after its end.
pub(crate) const ERR_CRON_RANGE: &str = "A cron range a-b must have a no greater than b.";
/// `invalid_rule` message for a `cron` step of 0.
pub(crate) const ERR_CRON_STEP: &str = "A cron step /n must be at least 1.";
/// `no_future_occurrence` message (the calendar rule).
pub(crate) const ERR_NO_OCCURRENCE: &str =
    "The cron expression matches no date before 9999-12-31 (such as February 30).";
/// `not_future` message (§8.1).
pub(crate) const ERR_NOT_FUTURE: &str = "The scheduled time must be strictly in the future.";
/// `time_out_of_range` message (§8.1).
pub(crate) const ERR_RANGE: &str =
    "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.";
/// `corrupt_schedule_log` message (§9.4).
pub(crate) const ERR_CORRUPT: &str = "The session schedule log is corrupt.";
/// `persistence_uncertain` message (§9.4, §10).
pub(crate) const ERR_UNCERTAIN: &str =
    "Schedule persistence is uncertain; retry with schedule_list before relying on this result.";
/// `internal_error` message (§9.4).
pub(crate) const ERR_INTERNAL: &str = "The schedule operation failed.";
/// `timezone_confirmation_required` message (decision 6).
pub(crate) const ERR_CONFIRM_ZONE: &str = "Confirm the time zone: pass time_zone explicitly.";

/// The stable, model-facing error codes of the schedule tools (§9.3, §9.4, decision 6).
///
/// [`ErrorCode::as_str`] is the exact wire code. Schema order of the basic codes is the
/// declaration order of the first nine variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `invalid_prompt`
    InvalidPrompt,
    /// `invalid_selector`
    InvalidSelector,
    /// `invalid_rule`
    InvalidRule,
    /// `invalid_time_zone`
    InvalidTimeZone,
    /// `not_future`
    NotFuture,
    /// `time_out_of_range`
    TimeOutOfRange,
    /// `frequency_too_high`
    FrequencyTooHigh,
    /// `corrupt_schedule_log`
    CorruptScheduleLog,
    /// `internal_error`
    InternalError,
    /// `persistence_uncertain`
    PersistenceUncertain,
    /// `timezone_confirmation_required` (decision 6)
    TimezoneConfirmationRequired,
    /// `no_future_occurrence` (the calendar rule: a `cron` that never matches)
    NoFutureOccurrence,
}

impl ErrorCode {
    /// The basic error codes in output-schema order (§9.3).
    pub const BASIC: [ErrorCode; 9] = [
        ErrorCode::InvalidPrompt,
        ErrorCode::InvalidSelector,
        ErrorCode::InvalidRule,
        ErrorCode::InvalidTimeZone,
        ErrorCode::NotFuture,
        ErrorCode::TimeOutOfRange,
        ErrorCode::FrequencyTooHigh,
        ErrorCode::CorruptScheduleLog,
        ErrorCode::InternalError,
    ];

    /// The exact wire code, e.g. `"invalid_rule"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidPrompt => "invalid_prompt",
            ErrorCode::InvalidSelector => "invalid_selector",
            ErrorCode::InvalidRule => "invalid_rule",
            ErrorCode::InvalidTimeZone => "invalid_time_zone",
            ErrorCode::NotFuture => "not_future",
            ErrorCode::TimeOutOfRange => "time_out_of_range",
            ErrorCode::FrequencyTooHigh => "frequency_too_high",
            ErrorCode::CorruptScheduleLog => "corrupt_schedule_log",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::PersistenceUncertain => "persistence_uncertain",
            ErrorCode::TimezoneConfirmationRequired => "timezone_confirmation_required",
            ErrorCode::NoFutureOccurrence => "no_future_occurrence",
        }
    }

    /// The message for codes that have exactly one (`None` for `invalid_rule` and
    /// `invalid_time_zone`, whose message depends on the violation).
    pub const fn fixed_message(self) -> Option<&'static str> {
        match self {
            ErrorCode::InvalidPrompt => Some(ERR_PROMPT),
            ErrorCode::InvalidSelector => Some(ERR_SELECTOR),
            ErrorCode::InvalidRule | ErrorCode::InvalidTimeZone => None,
            ErrorCode::NotFuture => Some(ERR_NOT_FUTURE),
            ErrorCode::TimeOutOfRange => Some(ERR_RANGE),
            ErrorCode::FrequencyTooHigh => Some(ERR_EVERY_MIN),
            ErrorCode::CorruptScheduleLog => Some(ERR_CORRUPT),
            ErrorCode::InternalError => Some(ERR_INTERNAL),
            ErrorCode::PersistenceUncertain => Some(ERR_UNCERTAIN),
            ErrorCode::TimezoneConfirmationRequired => Some(ERR_CONFIRM_ZONE),
            ErrorCode::NoFutureOccurrence => Some(ERR_NO_OCCURRENCE),
        }
    }

    /// The basic error value `{"code":…,"message":…}` for codes with a fixed message; for
    /// `invalid_rule` / `invalid_time_zone` use [`InputError::to_value`].
    pub fn value(self) -> Value {
        json!({"code": self.as_str(), "message": self.fixed_message().unwrap_or_default()})
    }
}

/// Which `invalid_rule` message applies (§8.2–§8.5, §9.7). [`RuleViolation::message`] is the
/// exact text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RuleViolation {
    /// "after_seconds must be a positive safe integer."
    AfterSeconds,
    /// "every_seconds must be a safe integer."
    EverySeconds,
    /// "schedule_delete id must be non-empty without surrounding whitespace."
    DeleteId,
    /// "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds and an explicit Z or numeric offset."
    AtShape,
    /// "The at value must be a real ISO calendar date and time." (offset strings, and local dates that do not exist)
    AtNotReal,
    /// "The at numeric offset is invalid."
    AtOffset,
    /// "at must be an explicit-offset string or local calendar object."
    AtType,
    /// "Local at must contain exactly date, time, and time_zone."
    LocalKeys,
    /// "Local at date and time must be strings."
    LocalStrings,
    /// "Local at requires date YYYY-MM-DD and time HH:mm:ss with optional one-to-three digit milliseconds."
    LocalShape,
    /// "The local at value must be a real ISO calendar date and time."
    LocalNotReal,
    /// "The local at time does not exist in the selected time zone."
    DstGap,
    /// A `cron` that is not five space-separated fields.
    CronShape,
    /// A bad `cron` minute field.
    CronMinute,
    /// A bad `cron` hour field.
    CronHour,
    /// A bad `cron` day-of-month field.
    CronDayOfMonth,
    /// A bad `cron` month field.
    CronMonth,
    /// A bad `cron` day-of-week field.
    CronDayOfWeek,
    /// A `cron` range `a-b` with `a > b`.
    CronRange,
    /// A `cron` step `/0`.
    CronStep,
}

impl RuleViolation {
    /// The exact model-facing message.
    pub const fn message(self) -> &'static str {
        match self {
            RuleViolation::AfterSeconds => ERR_AFTER,
            RuleViolation::EverySeconds => ERR_EVERY_INT,
            RuleViolation::DeleteId => ERR_DELETE_ID,
            RuleViolation::AtShape => ERR_AT_SHAPE,
            RuleViolation::AtNotReal => ERR_AT_REAL,
            RuleViolation::AtOffset => ERR_AT_OFFSET,
            RuleViolation::AtType => ERR_AT_TYPE,
            RuleViolation::LocalKeys => ERR_LOCAL_KEYS,
            RuleViolation::LocalStrings => ERR_LOCAL_STRINGS,
            RuleViolation::LocalShape => ERR_LOCAL_SHAPE,
            RuleViolation::LocalNotReal => ERR_LOCAL_REAL,
            RuleViolation::DstGap => ERR_GAP,
            RuleViolation::CronShape => ERR_CRON_SHAPE,
            RuleViolation::CronMinute => ERR_CRON_MINUTE,
            RuleViolation::CronHour => ERR_CRON_HOUR,
            RuleViolation::CronDayOfMonth => ERR_CRON_DAY,
            RuleViolation::CronMonth => ERR_CRON_MONTH,
            RuleViolation::CronDayOfWeek => ERR_CRON_WEEKDAY,
            RuleViolation::CronRange => ERR_CRON_RANGE,
            RuleViolation::CronStep => ERR_CRON_STEP,
        }
    }
}

/// A rejected model input (schedule.md §8, §9.4, §9.5, §9.7, decision 6).
///
/// Returned to the model as a *successful* tool value ([`InputError::to_value`]); nothing is
/// appended to the log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// `invalid_selector`: not exactly one of `after_seconds`, `at`, `every_seconds`, or an
    /// unknown root key.
    #[error("{ERR_SELECTOR}")]
    InvalidSelector,
    /// `invalid_prompt`: the prompt is empty after JavaScript trimming.
    #[error("{ERR_PROMPT}")]
    InvalidPrompt,
    /// `invalid_rule` with the message of the violation.
    #[error("{}", .0.message())]
    InvalidRule(RuleViolation),
    /// `invalid_time_zone`: "time_zone must be UTC or a valid IANA Area/Location name.", or "time_zone must be a string." when `not_string`.
    #[error("{}", if *.not_string { ERR_ZONE_STRING } else { ERR_ZONE })]
    InvalidTimeZone {
        /// The zone value was not a string (domain-only path).
        not_string: bool,
    },
    /// `not_future`: the target is not strictly after `now`.
    #[error("{ERR_NOT_FUTURE}")]
    NotFuture,
    /// `time_out_of_range`: the target (or `now`) is outside years 0001–9999 or not safe.
    #[error("{ERR_RANGE}")]
    TimeOutOfRange,
    /// `frequency_too_high`: `every_seconds` < 300.
    #[error("{ERR_EVERY_MIN}")]
    FrequencyTooHigh,
    /// `timezone_confirmation_required` (decision 6): a local `at` without `time_zone` and
    /// no agreeing session zone.
    #[error("{ERR_CONFIRM_ZONE}")]
    TimezoneConfirmationRequired {
        /// The session header's zone, if any (`"unavailable"` on the wire when `None`).
        session_time_zone: Option<String>,
        /// The client zones reported for the current turn (zero or one).
        client_time_zones: Vec<String>,
    },
    /// `internal_error`: the caller passed something the domain cannot store (an id that
    /// breaks the record rules). Never caused by model input.
    #[error("{ERR_INTERNAL}")]
    Internal,
    /// `no_future_occurrence`: a `cron` that matches no date up to 9999-12-31.
    #[error("{ERR_NO_OCCURRENCE}")]
    NoFutureOccurrence,
    /// `invalid_selector` with the `cron` selector accepted: not exactly one of
    /// `after_seconds`, `at`, `every_seconds`, `cron`; `time_zone` without `cron`; or an
    /// unknown root key.
    #[error("{ERR_SELECTOR_CRON}")]
    InvalidCalendarSelector,
    /// `invalid_time_zone`: a `cron` without `time_zone` (a calendar rule is never read in
    /// an implied zone).
    #[error("{ERR_CRON_ZONE}")]
    MissingCronTimeZone,
}

impl InputError {
    /// The stable code.
    pub const fn code(&self) -> ErrorCode {
        match self {
            InputError::InvalidSelector => ErrorCode::InvalidSelector,
            InputError::InvalidPrompt => ErrorCode::InvalidPrompt,
            InputError::InvalidRule(_) => ErrorCode::InvalidRule,
            InputError::InvalidTimeZone { .. } => ErrorCode::InvalidTimeZone,
            InputError::NotFuture => ErrorCode::NotFuture,
            InputError::TimeOutOfRange => ErrorCode::TimeOutOfRange,
            InputError::FrequencyTooHigh => ErrorCode::FrequencyTooHigh,
            InputError::TimezoneConfirmationRequired { .. } => {
                ErrorCode::TimezoneConfirmationRequired
            }
            InputError::Internal => ErrorCode::InternalError,
            InputError::NoFutureOccurrence => ErrorCode::NoFutureOccurrence,
            InputError::InvalidCalendarSelector => ErrorCode::InvalidSelector,
            InputError::MissingCronTimeZone => ErrorCode::InvalidTimeZone,
        }
    }

    /// The exact model-facing message.
    pub const fn message(&self) -> &'static str {
        match self {
            InputError::InvalidRule(violation) => violation.message(),
            InputError::InvalidTimeZone { not_string: true } => ERR_ZONE_STRING,
            InputError::InvalidTimeZone { not_string: false } => ERR_ZONE,
            InputError::InvalidSelector => ERR_SELECTOR,
            InputError::InvalidPrompt => ERR_PROMPT,
            InputError::NotFuture => ERR_NOT_FUTURE,
            InputError::TimeOutOfRange => ERR_RANGE,
            InputError::FrequencyTooHigh => ERR_EVERY_MIN,
            InputError::TimezoneConfirmationRequired { .. } => ERR_CONFIRM_ZONE,
            InputError::Internal => ERR_INTERNAL,
            InputError::NoFutureOccurrence => ERR_NO_OCCURRENCE,
            InputError::InvalidCalendarSelector => ERR_SELECTOR_CRON,
            InputError::MissingCronTimeZone => ERR_CRON_ZONE,
        }
    }

    /// The tool value: `{"code","message"}`, or for `timezone_confirmation_required`
    /// `{"code","message","sessionTimeZone":<zone or "unavailable">,"clientTimeZones":[…]}`.
    pub fn to_value(&self) -> Value {
        match self {
            InputError::TimezoneConfirmationRequired {
                session_time_zone,
                client_time_zones,
            } => json!({
                "code": self.code().as_str(),
                "message": self.message(),
                "sessionTimeZone": session_time_zone.as_deref().unwrap_or("unavailable"),
                "clientTimeZones": client_time_zones,
            }),
            _ => json!({"code": self.code().as_str(), "message": self.message()}),
        }
    }
}

/// The durable schedule log is malformed (schedule.md §4, §5): public code
/// `corrupt_schedule_log`, message "The session schedule log is corrupt.".
///
/// `detail` is a diagnostic (never shown to the model); it contains the spec's test
/// fragments (`was reused`, `inactive id`, `seedLength`, `must contain acceptedAt`,
/// `must not contain acceptedAt`, `cannot precede`, …).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt schedule log: {detail}")]
pub struct ScheduleLogError {
    /// What was wrong (diagnostic text).
    pub detail: String,
}

impl ScheduleLogError {
    /// A log error with a diagnostic detail.
    pub fn new(detail: impl Into<String>) -> Self {
        Self {
            detail: detail.into(),
        }
    }

    /// Always [`ErrorCode::CorruptScheduleLog`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::CorruptScheduleLog
    }

    /// Always "The session schedule log is corrupt.".
    pub const fn message(&self) -> &'static str {
        ERR_CORRUPT
    }

    /// `{"code":"corrupt_schedule_log","message":…}`.
    pub fn to_value(&self) -> Value {
        ErrorCode::CorruptScheduleLog.value()
    }
}

/// The fixed-rate arithmetic (§6) could not resolve an occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The decision time is not a safe integer inside the representable range.
    #[error("acceptedAt must be a representable instant")]
    AcceptedAtOutOfRange,
    /// `everySeconds × 1000` is not a positive safe integer.
    #[error("interval milliseconds must be a positive safe integer")]
    IntervalNotSafe,
    /// The decision time is before the record's target.
    #[error("acceptedAt cannot precede scheduledAt")]
    Precedes,
    /// A one-shot record has no occurrences to resolve.
    #[error("a one-shot record does not recur")]
    OneShot,
}
