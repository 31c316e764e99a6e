//! The borrowed typed form of a valid v1 change (`WireChange`, `WireRecord`): the replay's
//! second path for texts not in the canonical form.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};
use turnkit_core::as_safe_integer;

use super::decode::cron_rule;
use super::operation::ScheduleChange;
use super::record::{Rule, ScheduleRecord, check_id};
use crate::domain::instant::Timestamp;

/// A valid v1 change's keys, borrowed from the payload text. Closed, every key at most once,
/// strings without escapes; a present key never reads as absent (`null` is not absent).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct WireChange<'a> {
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
pub(super) struct WireRecord<'a> {
    id: &'a str,
    kind: &'a str,
    prompt: &'a str,
    #[serde(default, deserialize_with = "present")]
    after_seconds: Option<Number>,
    #[serde(default, deserialize_with = "present")]
    every_seconds: Option<Number>,
    #[serde(default, deserialize_with = "present")]
    cron: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    time_zone: Option<&'a str>,
    scheduled_at: &'a str,
}

/// A present key's value, which must decode as `T` (unlike `Option<T>`, `null` is an error).
pub(super) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl WireChange<'_> {
    /// The change, if it is valid by every rule of [`decode_change`]; `None` otherwise.
    pub(super) fn into_change(self) -> Option<ScheduleChange> {
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
        let rule = match (
            self.kind,
            self.after_seconds,
            self.every_seconds,
            self.cron,
            self.time_zone,
        ) {
            ("after", Some(after), None, None, None) => Rule::After {
                seconds: seconds(after)?,
            },
            ("at", None, None, None, None) => Rule::At,
            ("every", None, Some(every), None, None) => Rule::Every {
                seconds: seconds(every)?,
            },
            ("cron", None, None, Some(cron), Some(zone)) => cron_rule(cron, zone)?,
            _ => return None,
        };
        let scheduled_at = Timestamp::parse(self.scheduled_at)?;
        ScheduleRecord::new(self.id, self.prompt, rule, scheduled_at).ok()
    }
}
