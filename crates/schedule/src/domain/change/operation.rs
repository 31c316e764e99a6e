//! [`ScheduleChange`]: one `schedule/change` v1 payload (§3.2) and its exact wire form.

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::record::ScheduleRecord;
use crate::domain::instant::Timestamp;

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
