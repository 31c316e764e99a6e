//! The due-reminder index: one row per live schedule record of a session, kept in the flush
//! transaction that commits its `schedule/change` events (docs/event-log.md, "The PostgreSQL
//! store").

use chrono::{DateTime, Utc};
use serde::Deserialize;
use turnkit_core::RawEvent;

use crate::db::Db;

/// One change to a session's index rows, in log order.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    /// A record was created: due at its first occurrence; `every` for fixed-rate records.
    Upsert {
        id: String,
        due: DateTime<Utc>,
        every: Option<i64>,
    },
    /// A one-shot was dispatched or a record deleted.
    Remove { id: String },
    /// A fixed-rate record was dispatched: it moves to its first occurrence after `accepted`.
    Advance { id: String, accepted: DateTime<Utc> },
}

/// The index changes carried by one flushed batch.
#[derive(Debug, Default)]
pub(crate) struct IndexChanges {
    changes: Vec<Change>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangeEvent {
    operation: String,
    id: Option<String>,
    schedule: Option<Record>,
    accepted_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    id: String,
    scheduled_at: DateTime<Utc>,
    every_seconds: Option<i64>,
}

impl IndexChanges {
    /// Reads the `schedule/change` events of `batch`. Events that do not decode are left to
    /// the schedule fold, which reports the log as corrupt on replay.
    pub(crate) fn from_batch(batch: &[RawEvent]) -> Self {
        let mut changes = Vec::new();
        for event in batch.iter().filter(|e| e.r#type() == "schedule/change") {
            let Ok(change) = event.decode::<ChangeEvent>() else {
                tracing::warn!(
                    seq = event.seq(),
                    "undecodable schedule/change left out of the reminder index"
                );
                continue;
            };
            match (change.operation.as_str(), change.schedule, change.id) {
                ("create", Some(record), _) => changes.push(Change::Upsert {
                    id: record.id,
                    due: record.scheduled_at,
                    every: record.every_seconds,
                }),
                ("delete", _, Some(id)) => changes.push(Change::Remove { id }),
                ("dispatch", _, Some(id)) => match change.accepted_at {
                    Some(accepted) => changes.push(Change::Advance { id, accepted }),
                    None => changes.push(Change::Remove { id }),
                },
                _ => tracing::warn!(
                    seq = event.seq(),
                    "schedule/change of an unknown form left out of the reminder index"
                ),
            }
        }
        Self { changes }
    }

    /// Applies the changes inside the flush transaction.
    pub(crate) async fn apply(
        &self,
        db: &Db,
        tx: &deadpool_postgres::Transaction<'_>,
        session: &str,
    ) -> Result<(), tokio_postgres::Error> {
        for change in &self.changes {
            match change {
                Change::Upsert { id, due, every } => {
                    tx.execute(
                        &db.sql(
                            "INSERT INTO {s}.reminders (session_id, schedule_id, due, every_seconds) \
                             VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, schedule_id) \
                             DO UPDATE SET due = excluded.due, every_seconds = excluded.every_seconds",
                        ),
                        &[&session, id, due, every],
                    )
                    .await?;
                }
                Change::Remove { id } => {
                    tx.execute(
                        &db.sql(
                            "DELETE FROM {s}.reminders WHERE session_id = $1 AND schedule_id = $2",
                        ),
                        &[&session, id],
                    )
                    .await?;
                }
                Change::Advance { id, accepted } => {
                    tx.execute(
                        &db.sql(
                            "UPDATE {s}.reminders SET due = due + make_interval(secs => every_seconds * \
                             greatest(0, floor(extract(epoch FROM ($3::timestamptz - due)) / every_seconds) + 1)) \
                             WHERE session_id = $1 AND schedule_id = $2 AND every_seconds > 0",
                        ),
                        &[&session, id, accepted],
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }
}
