//! The durable `schedule/change` v1 encoding (schedule.md §3) and its strict decoder (§4):
//! [`ScheduleRecord`], [`ScheduleChange`], [`decode_change`], plus the record view of §9.3.

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};
use turnkit_core::{MAX_SAFE_INTEGER, as_safe_integer, js_trim};

use super::error::ScheduleLogError;
use super::instant::Timestamp;

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

/// One `schedule/change` v1 payload (§3.2), fully validated.
///
/// Serializes (and [`ScheduleChange::to_value`] builds) the exact wire form, e.g.
/// `{"version":1,"operation":"dispatch","id":"schedule-3","acceptedAt":"2026-08-05T12:17:34.000Z"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleChange {
    /// `create`: add one record.
    Create(ScheduleRecord),
    /// `delete`: terminal; only valid for an active id.
    Delete {
        /// The record id.
        id: Arc<str>,
    },
    /// `dispatch` without `acceptedAt`: terminal for an active one-shot.
    Dispatch {
        /// The record id.
        id: Arc<str>,
    },
    /// `dispatch` with `acceptedAt`: advance an active `every` record (§6).
    DispatchEvery {
        /// The record id.
        id: Arc<str>,
        /// The wall-clock decision time.
        accepted_at: Timestamp,
    },
}

impl ScheduleChange {
    /// The id the change is about.
    pub fn id(&self) -> &str {
        match self {
            ScheduleChange::Create(record) => record.id(),
            ScheduleChange::Delete { id }
            | ScheduleChange::Dispatch { id }
            | ScheduleChange::DispatchEvery { id, .. } => id,
        }
    }

    /// The wire operation name (`create`, `delete`, `dispatch`).
    pub const fn operation(&self) -> &'static str {
        match self {
            ScheduleChange::Create(_) => "create",
            ScheduleChange::Delete { .. } => "delete",
            ScheduleChange::Dispatch { .. } | ScheduleChange::DispatchEvery { .. } => "dispatch",
        }
    }

    /// The event payload with the exact key order of §3.2.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("version".into(), Value::from(1));
        map.insert("operation".into(), Value::from(self.operation()));
        match self {
            ScheduleChange::Create(record) => {
                map.insert("schedule".into(), record.to_value());
            }
            ScheduleChange::Delete { id } | ScheduleChange::Dispatch { id } => {
                map.insert("id".into(), Value::from(&**id));
            }
            ScheduleChange::DispatchEvery { id, accepted_at } => {
                map.insert("id".into(), Value::from(&**id));
                map.insert("acceptedAt".into(), Value::from(accepted_at.to_string()));
            }
        }
        Value::Object(map)
    }
}

impl Serialize for ScheduleChange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = match self {
            ScheduleChange::DispatchEvery { .. } => 4,
            _ => 3,
        };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("version", &1)?;
        map.serialize_entry("operation", self.operation())?;
        match self {
            ScheduleChange::Create(record) => map.serialize_entry("schedule", record)?,
            ScheduleChange::Delete { id } | ScheduleChange::Dispatch { id } => {
                map.serialize_entry("id", &**id)?;
            }
            ScheduleChange::DispatchEvery { id, accepted_at } => {
                map.serialize_entry("id", &**id)?;
                map.serialize_entry("acceptedAt", accepted_at)?;
            }
        }
        map.end()
    }
}

/// Strictly decodes one `schedule/change` payload (§4).
///
/// Checks, in order: an object; `version` is the number 1 (`1.0` too, `"1"` not); the
/// operation with its exact key set; the record of a create (exact key set per kind,
/// trimmed non-empty id and prompt, §3.1 numbers, canonical `scheduledAt`); the id of a
/// delete/dispatch; the canonical `acceptedAt` of an every dispatch.
///
/// # Errors
/// [`ScheduleLogError`] (`corrupt_schedule_log`) for anything else. Never panics.
pub fn decode_change(data: &Value) -> Result<ScheduleChange, ScheduleLogError> {
    let Some(map) = data.as_object() else {
        return Err(ScheduleLogError::new("change must be an object"));
    };
    // One pass over the entries (no hashing); JSON object keys are unique.
    let (mut version, mut operation, mut schedule, mut id, mut accepted_at) =
        (None, None, None, None, None);
    let mut extra = false;
    for (key, value) in map {
        match key.as_str() {
            "version" => version = Some(value),
            "operation" => operation = Some(value),
            "schedule" => schedule = Some(value),
            "id" => id = Some(value),
            "acceptedAt" => accepted_at = Some(value),
            _ => extra = true,
        }
    }
    match version {
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => {}
        _ => return Err(ScheduleLogError::new("change version must be 1")),
    }
    let wrong_keys = |what: &str| ScheduleLogError::new(format!("{what} has the wrong key set"));
    match operation.and_then(Value::as_str) {
        Some("create") => match (schedule, id, accepted_at, extra) {
            (Some(schedule), None, None, false) => {
                decode_record(schedule).map(ScheduleChange::Create)
            }
            _ => Err(wrong_keys("create")),
        },
        Some("delete") => match (schedule, accepted_at, extra) {
            (None, None, false) => Ok(ScheduleChange::Delete { id: decode_id(id)? }),
            _ => Err(wrong_keys("delete")),
        },
        Some("dispatch") => match (schedule, accepted_at, extra) {
            (None, None, false) => Ok(ScheduleChange::Dispatch { id: decode_id(id)? }),
            (None, Some(accepted_at), false) => Ok(ScheduleChange::DispatchEvery {
                id: decode_id(id)?,
                accepted_at: decode_instant(Some(accepted_at), "acceptedAt")?,
            }),
            _ => Err(wrong_keys("dispatch")),
        },
        _ => Err(ScheduleLogError::new("unknown change operation")),
    }
}

/// Parses one JSON payload text (bytes, UTF-8 checked) and decodes it strictly; a syntax
/// error is a log error like any other malformed payload.
///
/// # Errors
/// [`ScheduleLogError`] when the text is not JSON or not a valid change.
pub(crate) fn decode_change_json(text: &[u8]) -> Result<ScheduleChange, ScheduleLogError> {
    let value: Value = serde_json::from_slice(text)
        .map_err(|error| ScheduleLogError::new(format!("change is not JSON: {error}")))?;
    decode_change(&value)
}

/// Strictly decodes one `schedule/change` payload from its raw JSON text, as the replay path
/// reads it: exactly the result of [`decode_change_json`] (the same change, or the same
/// error), without building a `serde_json::Value`.
///
/// A payload is read straight into a borrowed typed form that admits only a valid v1 change;
/// anything that form does not take (an invalid change, escaped strings, duplicate keys) is
/// decided by [`decode_change_json`], so every error text is the `Value` path's.
///
/// # Errors
/// [`ScheduleLogError`] when the text is not JSON or not a valid change.
pub(crate) fn decode_change_text(text: &str) -> Result<ScheduleChange, ScheduleLogError> {
    if let Some(change) = canonical_change(text) {
        return Ok(change);
    }
    match serde_json::from_str::<WireChange<'_>>(text)
        .ok()
        .and_then(WireChange::into_change)
    {
        Some(change) => Ok(change),
        None => decode_change_json(text.as_bytes()),
    }
}

/// A change in exactly the form [`ScheduleChange`] serializes to (keys in §3.2 order, no
/// whitespace, strings without escapes, plain integers), read by position; `None` for any
/// other text or an invalid change. The text's strings and numbers are then their values, so
/// every rule of [`decode_change`] is checked on them as it is.
fn canonical_change(text: &str) -> Option<ScheduleChange> {
    let mut c = Cursor(text);
    c.tag("{\"version\":1,\"operation\":\"")?;
    let operation = c.string()?;
    if operation == "create" {
        c.tag(",\"schedule\":{\"id\":\"")?;
        let id = c.string()?;
        c.tag(",\"kind\":\"")?;
        let kind = c.string()?;
        c.tag(",\"prompt\":\"")?;
        let prompt = c.string()?;
        let rule = match kind {
            "after" => {
                c.tag(",\"afterSeconds\":")?;
                Rule::After {
                    seconds: c.integer()?,
                }
            }
            "every" => {
                c.tag(",\"everySeconds\":")?;
                Rule::Every {
                    seconds: c.integer()?,
                }
            }
            "at" => Rule::At,
            _ => return None,
        };
        c.tag(",\"scheduledAt\":\"")?;
        let scheduled_at = Timestamp::parse(c.string()?)?;
        c.tag("}}")?;
        return c
            .0
            .is_empty()
            .then_some(())
            .and_then(|()| ScheduleRecord::new(id, prompt, rule, scheduled_at).ok())
            .map(ScheduleChange::Create);
    }
    let transition = canonical_transition_rest(operation, c)?;
    let id = Arc::<str>::from(transition.id());
    Some(match transition {
        ChangeRef::Delete(_) => ScheduleChange::Delete { id },
        ChangeRef::Dispatch(_) => ScheduleChange::Dispatch { id },
        ChangeRef::DispatchEvery(_, accepted_at) => {
            ScheduleChange::DispatchEvery { id, accepted_at }
        }
    })
}

/// A delete or dispatch, its id borrowed from the payload text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeRef<'a> {
    /// [`ScheduleChange::Delete`].
    Delete(&'a str),
    /// [`ScheduleChange::Dispatch`].
    Dispatch(&'a str),
    /// [`ScheduleChange::DispatchEvery`].
    DispatchEvery(&'a str, Timestamp),
}

impl<'a> ChangeRef<'a> {
    /// The id the change is about.
    pub(crate) fn id(self) -> &'a str {
        match self {
            ChangeRef::Delete(id) | ChangeRef::Dispatch(id) | ChangeRef::DispatchEvery(id, _) => id,
        }
    }
}

/// A delete or dispatch in exactly the form [`canonical_change`] reads, with its id borrowed
/// from `text` (what [`decode_change_text`] decodes it to, without allocating); `None` for
/// any other text, a create included.
pub(crate) fn canonical_transition(text: &str) -> Option<ChangeRef<'_>> {
    let mut c = Cursor(text);
    c.tag("{\"version\":1,\"operation\":\"")?;
    let operation = c.string()?;
    if operation == "create" {
        return None;
    }
    canonical_transition_rest(operation, c)
}

/// The rest of a canonical delete or dispatch after its operation.
fn canonical_transition_rest<'a>(operation: &str, mut c: Cursor<'a>) -> Option<ChangeRef<'a>> {
    c.tag(",\"id\":\"")?;
    let id = c.string()?;
    check_id(id).ok()?;
    match (operation, c.0) {
        ("delete", "}") => Some(ChangeRef::Delete(id)),
        ("dispatch", "}") => Some(ChangeRef::Dispatch(id)),
        ("dispatch", _) => {
            c.tag(",\"acceptedAt\":\"")?;
            let accepted_at = Timestamp::parse(c.string()?)?;
            (c.0 == "}").then_some(ChangeRef::DispatchEvery(id, accepted_at))
        }
        _ => None,
    }
}

/// The unread rest of a payload text, for [`canonical_change`].
struct Cursor<'a>(&'a str);

impl<'a> Cursor<'a> {
    /// Consumes `tag` exactly.
    fn tag(&mut self, tag: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(tag)?;
        Some(())
    }

    /// Consumes a string's body and closing quote (the opening quote is part of the tag
    /// before it); `None` if it holds an escape or a control character.
    fn string(&mut self) -> Option<&'a str> {
        let end = self
            .0
            .bytes()
            .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
        if self.0.as_bytes()[end] != b'"' {
            return None;
        }
        let (body, rest) = self.0.split_at(end);
        self.0 = &rest[1..];
        Some(body)
    }

    /// Consumes a plain non-negative integer (no sign, fraction, exponent or leading zero)
    /// that is a safe integer.
    fn integer(&mut self) -> Option<i64> {
        let digits = self.0.bytes().position(|b| !b.is_ascii_digit())?;
        let (number, rest) = self.0.split_at(digits);
        if digits == 0 || digits > 16 || (digits > 1 && number.starts_with('0')) {
            return None;
        }
        if !matches!(rest.as_bytes().first(), Some(b',' | b'}')) {
            return None;
        }
        let value: i64 = number.parse().ok()?;
        self.0 = rest;
        (value <= MAX_SAFE_INTEGER).then_some(value)
    }
}

/// A valid v1 change's keys, borrowed from the payload text. Closed, every key at most once,
/// strings without escapes; a present key never reads as absent (`null` is not absent).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WireChange<'a> {
    version: Number,
    operation: &'a str,
    #[serde(default, deserialize_with = "present")]
    schedule: Option<WireRecord<'a>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    accepted_at: Option<&'a str>,
}

/// A valid record's keys (see [`WireChange`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WireRecord<'a> {
    id: &'a str,
    kind: &'a str,
    prompt: &'a str,
    #[serde(default, deserialize_with = "present")]
    after_seconds: Option<Number>,
    #[serde(default, deserialize_with = "present")]
    every_seconds: Option<Number>,
    scheduled_at: &'a str,
}

/// A present key's value, which must decode as `T` (unlike `Option<T>`, `null` is an error).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl WireChange<'_> {
    /// The change, if it is valid by every rule of [`decode_change`]; `None` otherwise.
    fn into_change(self) -> Option<ScheduleChange> {
        if self.version.as_f64() != Some(1.0) {
            return None;
        }
        let id = |id: &str| check_id(id).ok().map(|()| Arc::<str>::from(id));
        match (self.operation, self.schedule, self.id, self.accepted_at) {
            ("create", Some(record), None, None) => {
                record.into_record().map(ScheduleChange::Create)
            }
            ("delete", None, Some(i), None) => Some(ScheduleChange::Delete { id: id(i)? }),
            ("dispatch", None, Some(i), None) => Some(ScheduleChange::Dispatch { id: id(i)? }),
            ("dispatch", None, Some(i), Some(at)) => Some(ScheduleChange::DispatchEvery {
                id: id(i)?,
                accepted_at: Timestamp::parse(at)?,
            }),
            _ => None,
        }
    }
}

impl WireRecord<'_> {
    fn into_record(self) -> Option<ScheduleRecord> {
        let seconds = |n: Number| as_safe_integer(&Value::Number(n));
        let rule = match (self.kind, self.after_seconds, self.every_seconds) {
            ("after", Some(after), None) => Rule::After {
                seconds: seconds(after)?,
            },
            ("at", None, None) => Rule::At,
            ("every", None, Some(every)) => Rule::Every {
                seconds: seconds(every)?,
            },
            _ => return None,
        };
        let scheduled_at = Timestamp::parse(self.scheduled_at)?;
        ScheduleRecord::new(self.id, self.prompt, rule, scheduled_at).ok()
    }
}

/// Strictly decodes a record object (§3.1, §4 step 3).
///
/// # Errors
/// [`ScheduleLogError`] when the value is not a valid record.
pub(crate) fn decode_record(value: &Value) -> Result<ScheduleRecord, ScheduleLogError> {
    let Some(map) = value.as_object() else {
        return Err(ScheduleLogError::new("schedule record must be an object"));
    };
    let (mut id, mut kind, mut prompt, mut after, mut every, mut scheduled_at) =
        (None, None, None, None, None, None);
    let mut extra = false;
    for (key, value) in map {
        match key.as_str() {
            "id" => id = Some(value),
            "kind" => kind = Some(value),
            "prompt" => prompt = Some(value),
            "afterSeconds" => after = Some(value),
            "everySeconds" => every = Some(value),
            "scheduledAt" => scheduled_at = Some(value),
            _ => extra = true,
        }
    }
    let wrong_keys =
        |what: &str| ScheduleLogError::new(format!("{what} record has the wrong key set"));
    if extra || id.is_none() || prompt.is_none() || scheduled_at.is_none() {
        return Err(wrong_keys("schedule"));
    }
    let rule = match kind.and_then(Value::as_str) {
        Some("after") => match (after, every) {
            (Some(after), None) => Rule::After {
                seconds: decode_integer(Some(after), "afterSeconds")?,
            },
            _ => return Err(wrong_keys("after")),
        },
        Some("at") => match (after, every) {
            (None, None) => Rule::At,
            _ => return Err(wrong_keys("at")),
        },
        Some("every") => match (after, every) {
            (None, Some(every)) => Rule::Every {
                seconds: decode_integer(Some(every), "everySeconds")?,
            },
            _ => return Err(wrong_keys("every")),
        },
        _ => return Err(ScheduleLogError::new("unknown schedule record kind")),
    };
    let id = decode_id(id)?;
    let prompt = match prompt {
        Some(Value::String(prompt)) => Arc::<str>::from(prompt.as_str()),
        _ => return Err(ScheduleLogError::new("prompt must be a string")),
    };
    let scheduled_at = decode_instant(scheduled_at, "scheduledAt")?;
    ScheduleRecord::new(id, prompt, rule, scheduled_at)
}

fn decode_id(value: Option<&Value>) -> Result<Arc<str>, ScheduleLogError> {
    match value {
        Some(Value::String(id)) => {
            check_id(id)?;
            Ok(Arc::from(id.as_str()))
        }
        _ => Err(ScheduleLogError::new("id must be a string")),
    }
}

fn decode_integer(value: Option<&Value>, field: &str) -> Result<i64, ScheduleLogError> {
    value
        .filter(|value| value.is_number())
        .and_then(as_safe_integer)
        .ok_or_else(|| ScheduleLogError::new(format!("{field} must be a safe integer")))
}

fn decode_instant(value: Option<&Value>, field: &str) -> Result<Timestamp, ScheduleLogError> {
    value
        .and_then(Value::as_str)
        .and_then(Timestamp::parse)
        .ok_or_else(|| ScheduleLogError::new(format!("{field} must be a canonical instant")))
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

fn check_prompt(prompt: &str) -> Result<(), ScheduleLogError> {
    if prompt.is_empty() || js_trim(prompt).len() != prompt.len() {
        Err(ScheduleLogError::new(
            "prompt must be non-empty without surrounding whitespace",
        ))
    } else {
        Ok(())
    }
}

fn check_after_seconds(seconds: i64) -> Result<(), ScheduleLogError> {
    if seconds > 0 && seconds <= MAX_SAFE_INTEGER {
        Ok(())
    } else {
        Err(ScheduleLogError::new(
            "afterSeconds must be a positive safe integer",
        ))
    }
}

fn check_every_seconds(seconds: i64) -> Result<(), ScheduleLogError> {
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

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "change_text_tests.rs"]
mod text_tests;
