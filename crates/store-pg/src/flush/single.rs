//! The flush of one session: one statement checks owner, epoch and last seq, inserts the
//! batch and notifies followers; with index changes, they are written in the same
//! transaction. When the check does not hold, the row says why ([`Db::refused`]).

use tokio_postgres::types::ToSql;
use turnkit_core::{IndexChange, RawEvent};

use super::index::apply_index;
use super::queue::FlushOutcome;
use crate::db::{Db, columns, seq_i64};
use crate::notify::{channel, payload};

impl Db {
    /// The check, the insert and the move of `last_seq` are one statement: the `UPDATE`
    /// locks the session row only when owner, epoch and last seq are the caller's, and the
    /// batch is inserted, and followers notified, only for the row it returns. A batch without
    /// index changes is that statement alone, its own transaction (one round trip); otherwise
    /// the statement and the index changes share a transaction.
    #[allow(clippy::too_many_arguments, reason = "the flush transaction's inputs")]
    pub(super) async fn flush_on(
        &self,
        client: &mut deadpool_postgres::Client,
        id: &str,
        host: &str,
        epoch: i64,
        durable: u64,
        batch: &[RawEvent],
        index: &[IndexChange],
    ) -> Result<FlushOutcome, tokio_postgres::Error> {
        let write = client
            .prepare_cached(&self.sql(
                "WITH checked AS ( \
                     UPDATE {s}.sessions SET last_seq = $5 \
                     WHERE id = $1 AND owner = $2 AND epoch = $3 AND last_seq = $4 \
                     RETURNING id), \
                 inserted AS ( \
                     INSERT INTO {s}.events (session_id, seq, type, time, data) \
                     SELECT checked.id, u.seq, u.type, u.time, u.data::json \
                     FROM checked, \
                          unnest($6::bigint[], $7::text[], $8::timestamptz[], $9::text[]) \
                          AS u(seq, type, time, data) \
                     RETURNING 1) \
                 SELECT (SELECT count(*) FROM inserted), pg_notify($10, $11) FROM checked",
            ))
            .await?;
        let c = columns(batch);
        let expected = seq_i64(durable);
        let end = seq_i64(durable + batch.len() as u64);
        // Followers hear of the batch when it commits (see `follow`); the notification is
        // sent only when the check held (one row from `checked`).
        let (channel, payload) = (channel(&self.quoted), payload(id, end));
        let params: [&(dyn ToSql + Sync); 11] = [
            &id, &host, &epoch, &expected, &end, &c.seqs, &c.types, &c.times, &c.data, &channel,
            &payload,
        ];
        let count = |row: Option<tokio_postgres::Row>| -> Result<u64, tokio_postgres::Error> {
            match row {
                Some(row) => Ok(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0)),
                None => Ok(0),
            }
        };
        let written = if !index.is_empty() {
            let tx = client.transaction().await?;
            let written = count(tx.query_opt(&write, &params).await?)?;
            if written == batch.len() as u64 {
                apply_index(self, &tx, id, index).await?;
                tx.commit().await?;
            }
            written
        } else {
            count(client.query_opt(&write, &params).await?)?
        };
        if written == batch.len() as u64 {
            return Ok(FlushOutcome::Written);
        }
        self.refused(client, id, host, epoch).await
    }

    /// Why a flush's check did not hold: another owner or epoch, or another last seq.
    pub(super) async fn refused(
        &self,
        client: &deadpool_postgres::Client,
        id: &str,
        host: &str,
        epoch: i64,
    ) -> Result<FlushOutcome, tokio_postgres::Error> {
        let state = client
            .prepare_cached(
                &self.sql("SELECT owner, epoch, last_seq FROM {s}.sessions WHERE id = $1"),
            )
            .await?;
        let Some(row) = client.query_opt(&state, &[&id]).await? else {
            return Ok(FlushOutcome::Fenced);
        };
        let owner: Option<&str> = row.try_get(0)?;
        let current: i64 = row.try_get(1)?;
        let last: i64 = row.try_get(2)?;
        if owner != Some(host) || current != epoch {
            return Ok(FlushOutcome::Fenced);
        }
        Ok(FlushOutcome::SeqMismatch { found: last })
    }
}
