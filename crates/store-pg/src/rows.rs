//! What an outside reader (an inspector) reads of the `sessions` table: each session's last
//! seq and live owner, and a whole log, without a lease.

use chrono::{DateTime, Utc};
use turnkit_core::{RawEvent, SessionHeader, SessionId, StoreError};

use crate::db::{Db, backend, pool_error};
use crate::store::PgStore;

/// One row of the schema's `sessions` table, as read by [`PgStore::session_rows`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRow {
    /// The session's id.
    pub id: SessionId,
    /// The seq of its last committed event (0: none yet).
    pub last_seq: u64,
    /// The host holding the session's lease while that lease has not expired (by the
    /// server's clock); `None` when no host holds it or its lease has lapsed.
    pub owner: Option<String>,
    /// When that live lease expires unless renewed (UTC); `None` with `owner`.
    pub lease_expires: Option<DateTime<Utc>>,
}

impl Db {
    async fn rows(&self) -> Result<Vec<SessionRow>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let rows = client
            .query(
                &self.sql(
                    "SELECT id, last_seq, owner, lease_expires, \
                     coalesce(owner IS NOT NULL AND lease_expires > now(), false) \
                     FROM {s}.sessions ORDER BY id COLLATE \"C\"",
                ),
                &[],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|row| {
                let live: bool = row.get(4);
                SessionRow {
                    id: SessionId::from(row.get::<_, &str>(0)),
                    last_seq: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                    owner: row.get::<_, Option<String>>(2).filter(|_| live),
                    lease_expires: row.get::<_, Option<DateTime<Utc>>>(3).filter(|_| live),
                }
            })
            .collect())
    }
}

impl PgStore {
    /// Every session's row (id, last seq, live owner), sorted by id byte-wise. Takes no
    /// lease and writes nothing.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn session_rows(&self) -> Result<Vec<SessionRow>, StoreError> {
        let db = self.inner.db.clone();
        self.inner.bridge.run(async move { db.rows().await }).await
    }

    /// A session's header and whole log as committed, read in one snapshot without taking
    /// its lease (for followers and inspection).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Malformed`], [`StoreError::Backend`].
    pub async fn read_log(
        &self,
        id: &SessionId,
    ) -> Result<(SessionHeader, Vec<RawEvent>), StoreError> {
        let db = self.inner.db.clone();
        let key = id.clone();
        self.inner
            .bridge
            .run(async move { db.load(&key).await })
            .await
    }
}
