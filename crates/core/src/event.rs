//! The session event log's records: [`SessionEvent`] and [`SessionHeader`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SessionId;

/// One committed event of a session log.
///
/// `seq` starts at 1 in every session and grows by one per event; a fork keeps its parent's
/// sequence numbers for the copied prefix and continues after them. `time` is the host clock's
/// wall time at append, millisecond precision. `data` is the event payload whose shape belongs
/// to the event `type` (for example `todo/write`, `schedule/change`, `turn/start`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// Sequence number, 1-based per session.
    pub seq: u64,
    /// Event type, e.g. `todo/write`.
    #[serde(rename = "type")]
    pub r#type: String,
    /// Wall time of the append (UTC, milliseconds).
    #[serde(with = "crate::time::millis_rfc3339")]
    pub time: DateTime<Utc>,
    /// Payload.
    pub data: Value,
}

/// The header of a session log: its id and the facts fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionHeader {
    /// The session id.
    pub id: SessionId,
    /// For a fork: the number of events copied from the parent. Folds that own only their
    /// suffix (schedule §5.1) start after this many events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_length: Option<u64>,
    /// The IANA zone the session was created in, if the host knows it (decision 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

impl SessionHeader {
    /// A header with only an id.
    pub fn new(id: impl Into<SessionId>) -> Self {
        Self {
            id: id.into(),
            seed_length: None,
            time_zone: None,
        }
    }

    /// Sets the session time zone.
    pub fn with_time_zone(mut self, zone: impl Into<String>) -> Self {
        self.time_zone = Some(zone.into());
        self
    }
}
