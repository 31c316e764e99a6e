//! A reminder record (schedule.md §3.1): [`ScheduleRecord`], its [`Rule`] and
//! [`RecordKind`], the view's [`ReminderState`] (§9.3), and the checks every constructor and
//! decoder applies to its fields.

use std::sync::Arc;

use chrono_tz::Tz;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use turnkit_core::{MAX_SAFE_INTEGER, js_trim};

use crate::domain::cron::{CronRule, local_instant};
use crate::domain::error::{ResolveError, ScheduleLogError};
use crate::domain::every::{Occurrence, resolve_every};
use crate::domain::instant::{MAX_MILLIS, MIN_MILLIS, Timestamp};

/// The session event type of every schedule change.
pub const SCHEDULE_CHANGE: &str = "schedule/change";

/// The only delivery mode (§1): `session-local`.
pub(crate) const DELIVERY_MODE: &str = "session-local";

/// The smallest `everySeconds` (§3.1, §8.3).
pub(crate) const MIN_EVERY_SECONDS: i64 = 300;

/// The kind of a record: `after`, `at`, `every` (§3.1) or `cron` (Appendix B).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// One-shot, relative (`afterSeconds`).
    After,
    /// One-shot, absolute.
    At,
    /// Fixed-rate recurring (`everySeconds`).
    Every,
    /// Calendar recurring (`cron` read in `timeZone`).
    Cron,
}

impl RecordKind {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordKind::After => "after",
            RecordKind::At => "at",
            RecordKind::Every => "every",
            RecordKind::Cron => "cron",
        }
    }

    /// `after` and `at` are one-shots; `every` and `cron` recur.
    pub const fn is_one_shot(self) -> bool {
        !matches!(self, RecordKind::Every | RecordKind::Cron)
    }
}

/// The selector-specific part of a record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `after`: `afterSeconds`, a safe integer > 0.
    After {
        /// The delay in seconds.
        seconds: i64,
    },
    /// `at`: nothing but the target is stored (§8.6).
    At,
    /// `every`: `everySeconds`, a safe integer ≥ 300 whose ×1000 is also safe.
    Every {
        /// The interval in seconds.
        seconds: i64,
    },
    /// `cron`: a calendar rule read in an IANA zone (Appendix B).
    Cron(CronSchedule),
}

impl Rule {
    /// The record kind of this rule.
    pub const fn kind(&self) -> RecordKind {
        match self {
            Rule::After { .. } => RecordKind::After,
            Rule::At => RecordKind::At,
            Rule::Every { .. } => RecordKind::Every,
            Rule::Cron(_) => RecordKind::Cron,
        }
    }
}

/// The rule of a `cron` record: the expression as written (stored and shown as is), its
/// parsed form, and the zone it is read in. Cheap to clone (the text is shared).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CronSchedule {
    text: Arc<str>,
    rule: CronRule,
    zone: Tz,
}

impl CronSchedule {
    /// Parses `text` (Appendix B.1) for the zone `zone`.
    ///
    /// # Errors
    /// The `invalid_rule` / `no_future_occurrence` errors of [`CronRule::parse`].
    pub fn new(text: &str, zone: Tz) -> Result<Self, crate::domain::InputError> {
        let rule = CronRule::parse(text)?;
        Ok(Self {
            text: Arc::from(text),
            rule,
            zone,
        })
    }

    /// The expression as written (`0 9 * * 1-5`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed rule.
    pub fn rule(&self) -> &CronRule {
        &self.rule
    }

    /// The zone the rule is read in.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The zone's name as stored (`Europe/Paris`, `UTC`).
    pub fn zone_name(&self) -> &'static str {
        self.zone.name()
    }

    /// `instant` as the zone's local time with its offset, RFC 3339 to the second
    /// (`2026-12-08T09:00:00+01:00`).
    pub fn local_text(&self, instant: Timestamp) -> String {
        local_instant(self.zone, instant)
    }
}

/// Whether a view's target has passed (§9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReminderState {
    /// `now < scheduledAt`.
    Scheduled,
    /// `now ≥ scheduledAt`.
    Overdue,
}

impl ReminderState {
    /// The wire name (`scheduled` / `overdue`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ReminderState::Scheduled => "scheduled",
            ReminderState::Overdue => "overdue",
        }
    }
}

/// One validated reminder record (§3.1). Immutable; cheap to clone (shared strings).
///
/// Invariants (checked by every constructor): `id` and `prompt` are non-empty and equal to
/// their JavaScript trim; the rule's numbers obey §3.1; `scheduled_at` is representable.
/// For `every`, `scheduled_at` is the earliest creation-aligned occurrence not yet
/// dispatched; for `cron`, the next occurrence not yet dispatched. Serializes with the exact
/// key order of §3.1 (`id`, `kind`, `prompt`, `afterSeconds`|`everySeconds`|`cron`,
/// `timeZone`, `scheduledAt`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScheduleRecord {
    id: Arc<str>,
    prompt: Arc<str>,
    rule: Rule,
    scheduled_at: Timestamp,
}

impl ScheduleRecord {
    /// A record after checking the invariants above.
    ///
    /// # Errors
    /// [`ScheduleLogError`] naming the first broken rule.
    pub fn new(
        id: impl Into<Arc<str>>,
        prompt: impl Into<Arc<str>>,
        rule: Rule,
        scheduled_at: Timestamp,
    ) -> Result<ScheduleRecord, ScheduleLogError> {
        let id = id.into();
        let prompt = prompt.into();
        check_id(&id)?;
        check_prompt(&prompt)?;
        match &rule {
            Rule::After { seconds } => check_after_seconds(*seconds)?,
            Rule::At | Rule::Cron(_) => {}
            Rule::Every { seconds } => check_every_seconds(*seconds)?,
        }
        Ok(ScheduleRecord {
            id,
            prompt,
            rule,
            scheduled_at,
        })
    }

    /// The id (`schedule-N` or any custom non-empty trimmed string).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The shared id.
    pub fn id_arc(&self) -> &Arc<str> {
        &self.id
    }

    /// The trimmed prompt.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The rule.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The kind.
    pub fn kind(&self) -> RecordKind {
        self.rule.kind()
    }

    /// `everySeconds` for an `every` record.
    pub fn every_seconds(&self) -> Option<i64> {
        match self.rule {
            Rule::Every { seconds } => Some(seconds),
            Rule::After { .. } | Rule::At | Rule::Cron(_) => None,
        }
    }

    /// The calendar rule of a `cron` record.
    pub fn cron(&self) -> Option<&CronSchedule> {
        match &self.rule {
            Rule::Cron(cron) => Some(cron),
            Rule::After { .. } | Rule::At | Rule::Every { .. } => None,
        }
    }

    /// Resolves a recurring record at the decision time `accepted_at_ms` (latest-only
    /// catch-up): the occurrence presented and where the record moves. `every` follows §6;
    /// `cron` presents its latest occurrence at or before the decision time and moves to the
    /// first one strictly after it (Appendix B.4).
    ///
    /// # Errors
    /// [`ResolveError::AcceptedAtOutOfRange`] for a decision time outside the representable
    /// range, [`ResolveError::IntervalNotSafe`] for a bad interval,
    /// [`ResolveError::Precedes`] when it is before the target, and
    /// [`ResolveError::OneShot`] for an `after` or `at` record.
    pub(crate) fn resolve(&self, accepted_at_ms: i64) -> Result<Occurrence, ResolveError> {
        match &self.rule {
            Rule::Every { seconds } => resolve_every(self.scheduled_at, *seconds, accepted_at_ms),
            Rule::Cron(cron) => resolve_cron(cron, self.scheduled_at, accepted_at_ms),
            Rule::After { .. } | Rule::At => Err(ResolveError::OneShot),
        }
    }

    /// The target instant (`scheduledAt`).
    pub fn scheduled_at(&self) -> Timestamp {
        self.scheduled_at
    }

    /// Moves the target in place (an `every` record advancing inside the fold, §5).
    pub(crate) fn set_scheduled_at(&mut self, scheduled_at: Timestamp) {
        self.scheduled_at = scheduled_at;
    }

    /// The same record with another target (an `every` record advancing, §5).
    pub fn with_scheduled_at(&self, scheduled_at: Timestamp) -> ScheduleRecord {
        ScheduleRecord {
            id: Arc::clone(&self.id),
            prompt: Arc::clone(&self.prompt),
            rule: self.rule.clone(),
            scheduled_at,
        }
    }

    /// `overdue` iff `now_ms ≥ scheduledAt` (equality is overdue), else `scheduled` (§9.3).
    pub fn state_at(&self, now_ms: i64) -> ReminderState {
        if now_ms >= self.scheduled_at.millis() {
            ReminderState::Overdue
        } else {
            ReminderState::Scheduled
        }
    }

    /// The durable JSON object, keys in §3.1 order.
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields())
    }

    /// The tool view (§9.3): record fields, then (for `cron`) `scheduledAtLocal`, the target
    /// in the rule's zone, then `state` at `now_ms`, then `deliveryMode: "session-local"`.
    pub fn view(&self, now_ms: i64) -> Value {
        let mut map = self.fields();
        if let Rule::Cron(cron) = &self.rule {
            map.insert(
                "scheduledAtLocal".into(),
                Value::from(cron.local_text(self.scheduled_at)),
            );
        }
        map.insert("state".into(), Value::from(self.state_at(now_ms).as_str()));
        map.insert("deliveryMode".into(), Value::from(DELIVERY_MODE));
        Value::Object(map)
    }

    fn fields(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("id".into(), Value::from(&*self.id));
        map.insert("kind".into(), Value::from(self.kind().as_str()));
        map.insert("prompt".into(), Value::from(&*self.prompt));
        match &self.rule {
            Rule::After { seconds } => {
                map.insert("afterSeconds".into(), Value::from(*seconds));
            }
            Rule::At => {}
            Rule::Every { seconds } => {
                map.insert("everySeconds".into(), Value::from(*seconds));
            }
            Rule::Cron(cron) => {
                map.insert("cron".into(), Value::from(cron.text()));
                map.insert("timeZone".into(), Value::from(cron.zone_name()));
            }
        }
        map.insert(
            "scheduledAt".into(),
            Value::from(self.scheduled_at.to_string()),
        );
        map
    }
}

impl Serialize for ScheduleRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = match self.rule {
            Rule::At => 4,
            Rule::After { .. } | Rule::Every { .. } => 5,
            Rule::Cron(_) => 6,
        };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("id", &*self.id)?;
        map.serialize_entry("kind", self.kind().as_str())?;
        map.serialize_entry("prompt", &*self.prompt)?;
        match &self.rule {
            Rule::After { seconds } => map.serialize_entry("afterSeconds", seconds)?,
            Rule::At => {}
            Rule::Every { seconds } => map.serialize_entry("everySeconds", seconds)?,
            Rule::Cron(cron) => {
                map.serialize_entry("cron", cron.text())?;
                map.serialize_entry("timeZone", cron.zone_name())?;
            }
        }
        map.serialize_entry("scheduledAt", &self.scheduled_at)?;
        map.end()
    }
}

/// A durable id: non-empty and equal to its JavaScript trim.
pub(crate) fn check_id(id: &str) -> Result<(), ScheduleLogError> {
    if id.is_empty() || js_trim(id).len() != id.len() {
        Err(ScheduleLogError::new(
            "id must be non-empty without surrounding whitespace",
        ))
    } else {
        Ok(())
    }
}

pub(super) fn check_prompt(prompt: &str) -> Result<(), ScheduleLogError> {
    if prompt.is_empty() || js_trim(prompt).len() != prompt.len() {
        Err(ScheduleLogError::new(
            "prompt must be non-empty without surrounding whitespace",
        ))
    } else {
        Ok(())
    }
}

pub(super) fn check_after_seconds(seconds: i64) -> Result<(), ScheduleLogError> {
    if seconds > 0 && seconds <= MAX_SAFE_INTEGER {
        Ok(())
    } else {
        Err(ScheduleLogError::new(
            "afterSeconds must be a positive safe integer",
        ))
    }
}

pub(super) fn check_every_seconds(seconds: i64) -> Result<(), ScheduleLogError> {
    if seconds < MIN_EVERY_SECONDS {
        return Err(ScheduleLogError::new("everySeconds must be at least 300"));
    }
    match seconds.checked_mul(1000) {
        Some(ms) if ms <= MAX_SAFE_INTEGER => Ok(()),
        _ => Err(ScheduleLogError::new(
            "everySeconds interval milliseconds must be a safe integer",
        )),
    }
}

/// A `cron` record at the decision time `accepted_at_ms` (Appendix B.4): in this order, the
/// decision time must be representable and not before the target; the occurrence is the
/// latest one at or before it (never before the target), the next the first one after it.
fn resolve_cron(
    cron: &CronSchedule,
    scheduled_at: Timestamp,
    accepted_at_ms: i64,
) -> Result<Occurrence, ResolveError> {
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&accepted_at_ms) {
        return Err(ResolveError::AcceptedAtOutOfRange);
    }
    let accepted_at =
        Timestamp::from_millis(accepted_at_ms).ok_or(ResolveError::AcceptedAtOutOfRange)?;
    if accepted_at_ms < scheduled_at.millis() {
        return Err(ResolveError::Precedes);
    }
    let occurrence_at = cron
        .rule
        .latest_at_or_before(cron.zone, accepted_at)
        .filter(|latest| *latest >= scheduled_at)
        .unwrap_or(scheduled_at);
    Ok(Occurrence {
        occurrence_at,
        next_scheduled_at: cron.rule.next_after(cron.zone, accepted_at),
    })
}
