//! Writes the index rows a batch implies (given by the store's [`turnkit_core::BatchIndex`]),
//! inside the flush transaction that commits the batch: one row per key of the session, due
//! at the instant the family named.

use turnkit_core::IndexChange;

use crate::db::Db;

/// Applies `changes` in order inside `tx`.
pub(super) async fn apply_index(
    db: &Db,
    tx: &deadpool_postgres::Transaction<'_>,
    session: &str,
    changes: &[IndexChange],
) -> Result<(), tokio_postgres::Error> {
    for change in changes {
        match change {
            IndexChange::Put { key, due } => {
                let put = tx
                    .prepare_cached(&db.sql(
                        "INSERT INTO {s}.reminders (session_id, schedule_id, due) \
                         VALUES ($1, $2, $3) ON CONFLICT (session_id, schedule_id) \
                         DO UPDATE SET due = excluded.due",
                    ))
                    .await?;
                tx.execute(&put, &[&session, key, due]).await?;
            }
            IndexChange::Remove { key } => {
                let remove = tx
                    .prepare_cached(&db.sql(
                        "DELETE FROM {s}.reminders WHERE session_id = $1 AND schedule_id = $2",
                    ))
                    .await?;
                tx.execute(&remove, &[&session, key]).await?;
            }
        }
    }
    Ok(())
}
