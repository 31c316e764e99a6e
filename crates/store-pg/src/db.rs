//! The SQL every store operation runs, on a pooled connection of the store's runtime.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use futures::TryStreamExt;
use tokio_postgres::types::ToSql;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{BackendError, BackendKind, RawEvent, SessionHeader, SessionId, StoreError};

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

/// A client error as a [`BackendError`] with [`describe`]'s text: the server's refusal with
/// its SQLSTATE, a lost or refused connection, or data the client could not read; the error
/// itself is the cause.
pub(crate) fn backend_error(message: String, error: tokio_postgres::Error) -> BackendError {
    let kind = if error.as_db_error().is_some() {
        BackendKind::Refused
    } else if error.is_closed()
        || std::error::Error::source(&error).is_some_and(|s| s.is::<std::io::Error>())
    {
        BackendKind::Connection
    } else {
        BackendKind::Data
    };
    let code = error.code().map(|code| code.code().to_owned());
    let failure = BackendError::new(kind, message);
    let failure = match code {
        Some(code) => failure.with_code(code),
        None => failure,
    };
    failure.with_cause(error)
}

/// A client error as [`StoreError::Backend`] (see [`backend_error`]).
pub(crate) fn backend(error: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(backend_error(describe(&error), error))
}

/// A pool checkout's error: the client's (see [`backend`]), or no connection to be had.
pub(crate) fn pool_error(error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(e) => backend(e),
        other => StoreError::Backend(
            BackendError::new(BackendKind::Connection, other.to_string()).with_cause(other),
        ),
    }
}

/// A log of this many events or more is read in two halves at once (see `Db::load`).
pub(crate) const SPLIT_AT: i64 = 20_000;

/// A pool checkout that fails at once when no connection is free.
const NO_WAIT: deadpool_postgres::Timeouts = deadpool_postgres::Timeouts {
    wait: Some(Duration::ZERO),
    create: None,
    recycle: None,
};

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
    c.extend(events);
    c
}

impl<'a> Columns<'a> {
    /// Appends the columns of `events`.
    pub(crate) fn extend(&mut self, events: &'a [RawEvent]) {
        for event in events {
            self.seqs.push(seq_i64(event.seq()));
            self.types.push(event.r#type());
            self.times.push(event.time());
            self.data.push(event.payload());
        }
    }
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
        let mut client = self.pool.get().await.map_err(pool_error)?;
        let tx = client.transaction().await.map_err(backend)?;
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
            .map_err(backend)?;
        if rows == 0 {
            return Ok(None);
        }
        self.insert_events(&tx, header.id.as_str(), events)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(Some(1))
    }

    /// Takes the session's lease for `host` when it is free or expired, raising the epoch.
    pub(crate) async fn acquire(
        &self,
        id: &SessionId,
        host: &str,
        ttl: Duration,
    ) -> Result<i64, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
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
            .map_err(backend)?;
        if let Some(row) = row {
            return Ok(row.get(0));
        }
        let owner = client
            .query_opt(
                &self.sql("SELECT owner FROM {s}.sessions WHERE id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(backend)?;
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
        let client = self.pool.get().await.map_err(pool_error)?;
        let rows = client
            .execute(
                &self.sql(
                    "UPDATE {s}.sessions SET lease_expires = now() + make_interval(secs => $4) \
                     WHERE id = $1 AND owner = $2 AND epoch = $3",
                ),
                &[&id, &host, &epoch, &ttl.as_secs_f64()],
            )
            .await
            .map_err(backend)?;
        Ok(rows == 1)
    }

    /// The session's owner and epoch now (`None`: no such session; an owner of `None`: no
    /// holder).
    pub(crate) async fn owner(
        &self,
        id: &str,
    ) -> Result<Option<(Option<String>, i64)>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &self.sql("SELECT owner, epoch FROM {s}.sessions WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(backend)?;
        Ok(row.map(|row| (row.get(0), row.get(1))))
    }

    /// Gives a lease up (if it is still this holder's).
    pub(crate) async fn release(&self, id: &str, host: &str, epoch: i64) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute(
                &self.sql(
                    "UPDATE {s}.sessions SET owner = NULL, lease_expires = NULL \
                     WHERE id = $1 AND owner = $2 AND epoch = $3",
                ),
                &[&id, &host, &epoch],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    /// Reads a session's header and whole log, checking that seqs run 1..=last_seq and that no
    /// event row lies beyond `last_seq`.
    ///
    /// The header query and the `COPY` of the log (or of its first half, for a log of
    /// [`SPLIT_AT`] events or more) go out in one round trip, in one snapshot; the second
    /// half is read at the same time on another connection when one is free at once (else
    /// after the first, in the same snapshot). Events up to the `last_seq` that
    /// snapshot read never change (a flush only adds events past it, and nothing deletes
    /// them), so the halves are one log whatever commits meanwhile. The events stream in as
    /// binary `COPY` data and their payloads are copied into one text per half that every
    /// event of it shares (no allocation per event).
    pub(crate) async fn load(
        &self,
        id: &SessionId,
    ) -> Result<(SessionHeader, Vec<RawEvent>), StoreError> {
        let mut pooled = self.pool.get().await.map_err(pool_error)?;
        // One snapshot for the header and the log: a flush another host commits between the
        // two reads must not show up in one and not the other.
        let client = pooled
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(backend)?;
        let head = client
            .prepare_cached(
                &self
                    .sql("SELECT seed_length, time_zone, last_seq FROM {s}.sessions WHERE id = $1"),
            )
            .await
            .map_err(backend)?;
        let key = id.as_str();
        let params: [&(dyn ToSql + Sync); 1] = [&key];
        if key.contains('\0') {
            // No such session can exist; the server says why the id is refused.
            client.query_opt(&head, &params).await.map_err(backend)?;
            return Err(StoreError::NotFound(id.clone()));
        }
        // COPY takes no parameters: the id goes in as a literal. The rows are put in seq order
        // here, so the server streams them in whatever order its plan reads them (a sort
        // there would hold back the first row until the last was read).
        let copy = format!(
            "COPY (SELECT seq, type, time, data FROM {q}.events WHERE session_id = {id} \
             AND seq <= (SELECT CASE WHEN last_seq < {SPLIT_AT} THEN last_seq ELSE last_seq / 2 END \
                         FROM {q}.sessions WHERE id = {id})) \
             TO STDOUT (FORMAT binary)",
            q = self.quoted,
            id = literal(key)
        );
        // Rows past `last_seq` (an operator's edit, a partial restore) would make every later
        // flush fail on the primary key: they are counted in the same round trip.
        let beyond = client
            .prepare_cached(&self.sql(
                "SELECT min(seq), max(seq), count(*) FROM {s}.events WHERE session_id = $1 \
                 AND seq > (SELECT last_seq FROM {s}.sessions WHERE id = $1)",
            ))
            .await
            .map_err(backend)?;
        let (row, extra, data) = futures::try_join!(
            client.query_opt(&head, &params),
            client.query_one(&beyond, &params),
            client.copy_out(copy.as_str()),
        )
        .map_err(backend)?;
        let row = row.ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let header = SessionHeader {
            id: id.clone(),
            seed_length: row
                .try_get::<_, Option<i64>>(0)
                .map_err(backend)?
                .map(|n| u64::try_from(n).unwrap_or(0)),
            time_zone: row.try_get(1).map_err(backend)?,
        };
        let last: i64 = row.try_get(2).map_err(backend)?;
        let extra_count: i64 = extra.try_get(2).map_err(backend)?;
        if extra_count > 0 {
            let first: Option<i64> = extra.try_get(0).map_err(backend)?;
            let end: Option<i64> = extra.try_get(1).map_err(backend)?;
            return Err(StoreError::Malformed {
                file: self.place(id),
                line: usize::try_from(last.saturating_add(1)).unwrap_or(usize::MAX),
                message: format!(
                    "event rows {}..={} ({extra_count} of them) are beyond the session row's last seq {last}",
                    first.unwrap_or_default(),
                    end.unwrap_or_default()
                ),
            });
        }
        let split = if last < SPLIT_AT { last } else { last / 2 };
        // The second half takes another connection only when one is free at once: waiting
        // for one while holding this one could wait for ever (a pool of one, or every
        // connection held by a read waiting for its second).
        let other = if split < last {
            self.pool.timeout_get(&NO_WAIT).await.ok()
        } else {
            None
        };
        let second = other.map(|other| {
            let db = self.clone();
            let id = id.clone();
            // Aborted when the read waiting for it gives up.
            AbortOnDropHandle::new(tokio::spawn(async move {
                let data = other
                    .copy_out(db.range_copy(&id, split, last).as_str())
                    .await
                    .map_err(backend)?;
                db.decode_log(&id, data, split, last).await
            }))
        });
        let mut events = self.decode_log(id, data, 0, split).await?;
        if let Some(mut second) = second {
            let rest = (&mut second).await.map_err(|e| {
                StoreError::Backend(
                    BackendError::new(
                        BackendKind::Store,
                        format!("the read of the log's second half failed: {e}"),
                    )
                    .with_cause(e),
                )
            })??;
            events.extend(rest);
        } else if split < last {
            // No connection was free: the second half is read here, in the same snapshot.
            let data = client
                .copy_out(self.range_copy(id, split, last).as_str())
                .await
                .map_err(backend)?;
            events.extend(self.decode_log(id, data, split, last).await?);
        }
        if events.len() as i64 != last {
            return Err(StoreError::Malformed {
                file: self.place(id),
                line: events.len() + 1,
                message: format!("{} events, but the session row says {last}", events.len()),
            });
        }
        Ok((header, events))
    }

    /// The `COPY` of the events `after < seq <= upto` of a log.
    fn range_copy(&self, id: &SessionId, after: i64, upto: i64) -> String {
        format!(
            "COPY (SELECT seq, type, time, data FROM {}.events WHERE session_id = {} \
             AND seq > {after} AND seq <= {upto}) TO STDOUT (FORMAT binary)",
            self.quoted,
            literal(id.as_str())
        )
    }

    /// Decodes the `COPY` output of the events `after < seq <= upto` of a log, checking that
    /// each of those seqs is there once.
    async fn decode_log(
        &self,
        id: &SessionId,
        data: tokio_postgres::CopyOutStream,
        after: i64,
        upto: i64,
    ) -> Result<Vec<RawEvent>, StoreError> {
        let expected = usize::try_from(upto - after).unwrap_or(0);
        let mut reader = LogReader::new(expected);
        let mut data = std::pin::pin!(data);
        while let Some(chunk) = data.try_next().await.map_err(backend)? {
            reader.feed(&chunk).map_err(|message| {
                StoreError::Backend(BackendError::new(BackendKind::Data, message))
            })?;
        }
        let (text, mut parts) = reader.finish().map_err(|message| {
            StoreError::Backend(BackendError::new(BackendKind::Data, message))
        })?;
        if !parts.is_sorted_by_key(|part| part.seq) {
            parts.sort_unstable_by_key(|part| part.seq);
        }
        let text = Arc::new(text);
        let mut events = Vec::with_capacity(parts.len());
        for (seq, part) in (after + 1..).zip(parts) {
            let line = usize::try_from(seq).unwrap_or(usize::MAX);
            if part.seq != seq {
                return Err(StoreError::Malformed {
                    file: self.place(id),
                    line,
                    message: format!("seq {} where {line} was expected", part.seq),
                });
            }
            let r#type = text.get(part.r#type).unwrap_or_default();
            let event = RawEvent::new_shared(line as u64, r#type, part.time, &text, part.data)
                .map_err(|e| StoreError::Malformed {
                    file: self.place(id),
                    line,
                    message: e.to_string(),
                })?;
            events.push(event);
        }
        Ok(events)
    }

    /// Where a log's events are, for errors.
    fn place(&self, id: &SessionId) -> String {
        format!("postgres {}.events session {id}", self.quoted)
    }

    /// The ids of every session, in byte order.
    pub(crate) async fn list(&self) -> Result<Vec<SessionId>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let rows = client
            .query(
                &self.sql("SELECT id FROM {s}.sessions ORDER BY id COLLATE \"C\""),
                &[],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|row| SessionId::from(row.get::<_, &str>(0)))
            .collect())
    }
}
