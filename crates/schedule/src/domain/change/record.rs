//! A reminder record (schedule.md §3.1): [`ScheduleRecord`], its [`Rule`] and
//! [`RecordKind`], the view's [`ReminderState`] (§9.3), and the checks every constructor and
//! decoder applies to its fields.

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use turnkit_core::{MAX_SAFE_INTEGER, js_trim};

use crate::domain::error::ScheduleLogError;
use crate::domain::instant::Timestamp;

/// The session event type of every schedule change.
pub const SCHEDULE_CHANGE: &str = "schedule/change";

/// The only delivery mode (§1): `session-local`.
pub(crate) const DELIVERY_MODE: &str = "session-local";

/// The smallest `everySeconds` (§3.1, §8.3).
pub(crate) const MIN_EVERY_SECONDS: i64 = 300;

/// The kind of a record: `after`, `at` or `every` (§3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// One-shot, relative (`afterSeconds`).
    After,
    /// One-shot, absolute.
    At,
    /// Fixed-rate recurring (`everySeconds`).
    Every,
}

impl RecordKind {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordKind::After => "after",
            RecordKind::At => "at",
            RecordKind::Every => "every",
        }
    }

    /// `after` and `at` are one-shots.
    pub const fn is_one_shot(self) -> bool {
        !matches!(self, RecordKind::Every)
    }
}

/// The selector-specific part of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
}

impl Rule {
    /// The record kind of this rule.
    pub const fn kind(self) -> RecordKind {
        match self {
            Rule::After { .. } => RecordKind::After,
            Rule::At => RecordKind::At,
            Rule::Every { .. } => RecordKind::Every,
        }
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
/// dispatched. Serializes with the exact key order of §3.1
/// (`id`, `kind`, `prompt`, `afterSeconds`|`everySeconds`, `scheduledAt`).
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
        match rule {
            Rule::After { seconds } => check_after_seconds(seconds)?,
            Rule::At => {}
            Rule::Every { seconds } => check_every_seconds(seconds)?,
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
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The kind.
    pub fn kind(&self) -> RecordKind {
        self.rule.kind()
    }

    /// `everySeconds` for an `every` record.
    pub fn every_seconds(&self) -> Option<i64> {
        match self.rule {
            Rule::Every { seconds } => Some(seconds),
            Rule::After { .. } | Rule::At => None,
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
            rule: self.rule,
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

    /// The tool view (§9.3): record fields, then `state` at `now_ms`, then
    /// `deliveryMode: "session-local"`.
    pub fn view(&self, now_ms: i64) -> Value {
        let mut map = self.fields();
        map.insert("state".into(), Value::from(self.state_at(now_ms).as_str()));
        map.insert("deliveryMode".into(), Value::from(DELIVERY_MODE));
        Value::Object(map)
    }

    fn fields(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("id".into(), Value::from(&*self.id));
        map.insert("kind".into(), Value::from(self.kind().as_str()));
        map.insert("prompt".into(), Value::from(&*self.prompt));
        match self.rule {
            Rule::After { seconds } => {
                map.insert("afterSeconds".into(), Value::from(seconds));
            }
            Rule::At => {}
            Rule::Every { seconds } => {
                map.insert("everySeconds".into(), Value::from(seconds));
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
        let len = if matches!(self.rule, Rule::At) { 4 } else { 5 };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("id", &*self.id)?;
        map.serialize_entry("kind", self.kind().as_str())?;
        map.serialize_entry("prompt", &*self.prompt)?;
        match self.rule {
            Rule::After { seconds } => map.serialize_entry("afterSeconds", &seconds)?,
            Rule::At => {}
            Rule::Every { seconds } => map.serialize_entry("everySeconds", &seconds)?,
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
