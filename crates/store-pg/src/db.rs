//! The SQL every store operation runs, on a pooled connection of the store's runtime.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use futures::TryStreamExt;
use harness_core::{RawEvent, SessionHeader, SessionId, StoreError};
use tokio_postgres::types::ToSql;

use crate::copy::LogReader;

/// The pool and the quoted schema name; cheap to clone into a task.
#[derive(Clone)]
pub(crate) struct Db {
    pub(crate) pool: Pool,
    pub(crate) quoted: String,
}

/// A readable message for a client error, with the server's message when there is one.
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    }
}

pub(crate) fn backend(error: &tokio_postgres::Error) -> StoreError {
    StoreError::Backend {
        message: describe(error),
    }
}

pub(crate) fn pool_error(error: &deadpool_postgres::PoolError) -> StoreError {
    StoreError::Backend {
        message: match error {
            deadpool_postgres::PoolError::Backend(e) => describe(e),
            other => other.to_string(),
        },
    }
}

/// `text` as an SQL string literal, whatever the server's `standard_conforming_strings`.
fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

pub(crate) fn seq_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The columns of a batch, as the arrays of the one-statement insert.
pub(crate) struct Columns<'a> {
    pub(crate) seqs: Vec<i64>,
    pub(crate) types: Vec<&'a str>,
    pub(crate) times: Vec<DateTime<Utc>>,
    pub(crate) data: Vec<&'a str>,
}

pub(crate) fn columns(events: &[RawEvent]) -> Columns<'_> {
    let mut c = Columns {
        seqs: Vec::with_capacity(events.len()),
        types: Vec::with_capacity(events.len()),
        times: Vec::with_capacity(events.len()),
        data: Vec::with_capacity(events.len()),
    };
    for event in events {
        c.seqs.push(seq_i64(event.seq()));
        c.types.push(event.r#type());
        c.times.push(event.time());
        c.data.push(event.payload());
    }
    c
}

impl Db {
    pub(crate) fn sql(&self, text: &str) -> String {
        text.replace("{s}", &self.quoted)
    }

    async fn insert_events(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        id: &str,
        events: &[RawEvent],
    ) -> Result<(), tokio_postgres::Error> {
        if events.is_empty() {
            return Ok(());
        }
        let c = columns(events);
        let statement = tx
            .prepare_cached(&self.sql(
                "INSERT INTO {s}.events (session_id, seq, type, time, data) \
                 SELECT $1, u.seq, u.type, u.time, u.data::json \
                 FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::text[]) \
                 AS u(seq, type, time, data)",
            ))
            .await?;
        tx.execute(&statement, &[&id, &c.seqs, &c.types, &c.times, &c.data])
            .await?;
        Ok(())
    }

    /// Creates the session row (owned by `host` at epoch 1) and its first events in one
    /// transaction. `Ok(None)` when the id exists.
    pub(crate) async fn create(
        &self,
        header: &SessionHeader,
        events: &[RawEvent],
        host: &str,
        ttl: Duration,
    ) -> Result<Option<i64>, StoreError> {
        let mut client = self.pool.get().await.map_err(|e| pool_error(&e))?;
        let tx = client.transaction().await.map_err(|e| backend(&e))?;
        let seed = header.seed_length.map(seq_i64);
        let last = seq_i64(events.len() as u64);
        let rows = tx
            .execute(
                &self.sql(
                    "INSERT INTO {s}.sessions (id, seed_length, time_zone, last_seq, owner, epoch, lease_expires) \
                     VALUES ($1, $2, $3, $4, $5, 1, now() + make_interval(secs => $6)) \
                     ON CONFLICT (id) DO NOTHING",
                ),
                &[
                    &header.id.as_str(),
                    &seed,
                    &header.time_zone,
                    &last,
                    &host,
                    &ttl.as_secs_f64(),
                ],
            )
            .await
            .map_err(|e| backend(&e))?;
        if rows == 0 {
            return Ok(None);
        }
        self.insert_events(&tx, header.id.as_str(), events)
            .await
            .map_err(|e| backend(&e))?;
        tx.commit().await.map_err(|e| backend(&e))?;
        Ok(Some(1))
    }

    /// Takes the session's lease for `host` when it is free or expired, raising the epoch.
    pub(crate) async fn acquire(
        &self,
        id: &SessionId,
        host: &str,
        ttl: Duration,
    ) -> Result<i64, StoreError> {
        let client = self.pool.get().await.map_err(|e| pool_error(&e))?;
        let row = client
            .query_opt(
                &self.sql(
                    "UPDATE {s}.sessions SET owner = $2, epoch = epoch + 1, \
                     lease_expires = now() + make_interval(secs => $3) \
                     WHERE id = $1 AND (owner IS NULL OR lease_expires < now()) RETURNING epoch",
                ),
                &[&id.as_str(), &host, &ttl.as_secs_f64()],
            )
            .await
            .map_err(|e| backend(&e))?;
        if let Some(row) = row {
            return Ok(row.get(0));
        }
        let owner = client
            .query_opt(
                &self.sql("SELECT owner FROM {s}.sessions WHERE id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(|e| backend(&e))?;
        match owner {
            None => Err(StoreError::NotFound(id.clone())),
            Some(row) => Err(StoreError::Owned {
                session: id.clone(),
                owner: row.get::<_, Option<String>>(0).unwrap_or_default(),
            }),
        }
    }

    /// Extends a live lease; `Ok(false)` when the lease is no longer this holder's.
    pub(crate) async fn renew(
        &self,
        id: &str,
        host: &str,
        epoch: i64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let client = self.pool.get().await.map_err(|e| pool_error(&e))?;
        let rows = client
            .execute(
                &self.sql(
                    "UPDATE {s}.sessions SET lease_expires = now() + make_interval(secs => $4) \
                     WHERE id = $1 AND owner = $2 AND epoch = $3",
                ),
                &[&id, &host, &epoch, &ttl.as_secs_f64()],
            )
            .await
            .map_err(|e| backend(&e))?;
        Ok(rows == 1)
    }

    /// Gives a lease up (if it is still this holder's).
    pub(crate) async fn release(&self, id: &str, host: &str, epoch: i64) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(|e| pool_error(&e))?;
        client
            .execute(
                &self.sql(
                    "UPDATE {s}.sessions SET owner = NULL, lease_expires = NULL \
                     WHERE id = $1 AND owner = $2 AND epoch = $3",
                ),
                &[&id, &host, &epoch],
            )
            .await
            .map_err(|e| backend(&e))?;
        Ok(())
    }

    /// Reads a session's header and whole log, checking that seqs run 1..=last_seq.
    ///
    /// Both queries go out in one round trip; the events stream in as binary `COPY` data and
    /// their payloads are copied into one text that every event of the log shares (no
    /// allocation per event).
    pub(crate) async fn load(
        &self,
        id: &SessionId,
    ) -> Result<(SessionHeader, Vec<RawEvent>), StoreError> {
        let mut pooled = self.pool.get().await.map_err(|e| pool_error(&e))?;
        // One snapshot for the header and the log: a flush another host commits between the
        // two reads must not show up in one and not the other.
        let client = pooled
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(|e| backend(&e))?;
        let head = client
            .prepare_cached(
                &self
                    .sql("SELECT seed_length, time_zone, last_seq FROM {s}.sessions WHERE id = $1"),
            )
            .await
            .map_err(|e| backend(&e))?;
        let key = id.as_str();
        let params: [&(dyn ToSql + Sync); 1] = [&key];
        if key.contains('\0') {
            // No such session can exist; the server says why the id is refused.
            client
                .query_opt(&head, &params)
                .await
                .map_err(|e| backend(&e))?;
            return Err(StoreError::NotFound(id.clone()));
        }
        // COPY takes no parameters: the id goes in as a literal. The rows are put in seq order
        // here, so the server streams them in whatever order its plan reads them (a sort
        // there would hold back the first row until the last was read).
        let copy = format!(
            "COPY (SELECT seq, type, time, data FROM {}.events WHERE session_id = {}) \
             TO STDOUT (FORMAT binary)",
            self.quoted,
            literal(key)
        );
        let (row, data) = futures::try_join!(
            client.query_opt(&head, &params),
            client.copy_out(copy.as_str()),
        )
        .map_err(|e| backend(&e))?;
        let row = row.ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let header = SessionHeader {
            id: id.clone(),
            seed_length: row
                .try_get::<_, Option<i64>>(0)
                .map_err(|e| backend(&e))?
                .map(|n| u64::try_from(n).unwrap_or(0)),
            time_zone: row.try_get(1).map_err(|e| backend(&e))?,
        };
        let last: i64 = row.try_get(2).map_err(|e| backend(&e))?;
        let mut reader = LogReader::new(usize::try_from(last).unwrap_or(0));
        let mut data = std::pin::pin!(data);
        while let Some(chunk) = data.try_next().await.map_err(|e| backend(&e))? {
            reader
                .feed(&chunk)
                .map_err(|message| StoreError::Backend { message })?;
        }
        let (text, mut parts) = reader
            .finish()
            .map_err(|message| StoreError::Backend { message })?;
        parts.sort_unstable_by_key(|part| part.seq);
        let text = Arc::new(text);
        let place = format!("postgres {}.events session {id}", self.quoted);
        let mut events = Vec::with_capacity(parts.len());
        for (index, part) in parts.into_iter().enumerate() {
            let line = index + 1;
            if part.seq != line as i64 {
                return Err(StoreError::Malformed {
                    file: place,
                    line,
                    message: format!("seq {} where {line} was expected", part.seq),
                });
            }
            let r#type = text.get(part.r#type).unwrap_or_default();
            let event = RawEvent::new_shared(line as u64, r#type, part.time, &text, part.data)
                .map_err(|e| StoreError::Malformed {
                    file: place.clone(),
                    line,
                    message: e.to_string(),
                })?;
            events.push(event);
        }
        if events.len() as i64 != last {
            return Err(StoreError::Malformed {
                file: place,
                line: events.len() + 1,
                message: format!("{} events, but the session row says {last}", events.len()),
            });
        }
        Ok((header, events))
    }

    /// The ids of every session, in byte order.
    pub(crate) async fn list(&self) -> Result<Vec<SessionId>, StoreError> {
        let client = self.pool.get().await.map_err(|e| pool_error(&e))?;
        let rows = client
            .query(
                &self.sql("SELECT id FROM {s}.sessions ORDER BY id COLLATE \"C\""),
                &[],
            )
            .await
            .map_err(|e| backend(&e))?;
        Ok(rows
            .iter()
            .map(|row| SessionId::from(row.get::<_, &str>(0)))
            .collect())
    }
}
