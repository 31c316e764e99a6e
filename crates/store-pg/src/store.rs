//! [`PgStore`]: sessions in PostgreSQL, written by one leased host at a time.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    BackendError, BackendKind, Clock, RawEvent, Session, SessionHeader, SessionId, SessionStore,
    StoreError,
};

use crate::db::{Db, describe};
use crate::flush::Writer;
use crate::lease::Lease;
use crate::options::PgOptions;
use crate::session::PgSession;
use crate::shared::{Bridge, Inner, ON_STORE_RUNTIME};

/// Sessions in a PostgreSQL database (docs/event-log.md, "The PostgreSQL store").
///
/// * **Tables** in [`PgOptions::schema`]: `sessions` (header, `last_seq`, owner, epoch, lease
///   expiry), `events` keyed by `(session_id, seq)` with `type`, `time` and the payload as
///   `json` (the text as appended, key order kept), `reminders` (the due-reminder index), and
///   `harness_migrations` recording the applied migrations. [`PgStore::connect`] applies the
///   missing ones in order, under an advisory lock.
/// * **One writer per session.** `create` and `open` take the session's [`Lease`] for this
///   host; while another host holds a live lease, `open` fails with [`StoreError::Owned`].
///   Every flush is one transaction that locks the session row, checks the lease epoch and the
///   expected last seq, inserts the batch in one statement and commits; a handle whose lease
///   was taken gets `PersistenceError::Fenced` and writes nothing. Flushes of different
///   sessions that wait at the same time share one transaction, each checked on its own
///   (see [`PgOptions::flush_writers`]).
/// * **Flush is the barrier; a failed flush changes nothing.** The transaction commits all of
///   the batch or none of it; unflushed events stay in the handle for the next flush.
/// * **Blocking.** The seam's `create`/`open`/`list` are synchronous: they block the calling
///   thread for the round trips (as a file store blocks on the disk). Async hosts use
///   [`PgStore::open_session`] and friends. The store runs its connections on its own small
///   runtime, so it works under any caller's runtime (a paused test clock included).
#[derive(Clone)]
pub struct PgStore {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.inner.options.schema)
            .field("host", &self.inner.options.host)
            .finish()
    }
}

impl PgStore {
    /// Connects to `url` (a libpq connection string or `postgresql://` URL; a Unix socket
    /// folder as `host=/path` or a `%2F`-encoded host) and applies missing migrations. A URL
    /// without a password authenticates with [`PgOptions::password`], if any.
    ///
    /// # Errors
    /// [`StoreError::Backend`] for a bad URL or schema name, a refused connection, or a
    /// failed migration.
    pub fn connect(
        url: &str,
        clock: Arc<dyn Clock>,
        options: PgOptions,
    ) -> Result<Self, StoreError> {
        let valid_schema = !options.schema.is_empty()
            && options
                .schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_schema {
            return Err(StoreError::Backend(BackendError::new(
                BackendKind::Store,
                format!("invalid schema name {:?}", options.schema),
            )));
        }
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| {
                let message = format!("invalid connection string: {}", describe(&e));
                StoreError::Backend(BackendError::new(BackendKind::Store, message).with_cause(e))
            })?;
        if config.get_password().is_none()
            && let Some(password) = &options.password
        {
            config.password(password.expose());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("turnkit-store-pg")
            .on_thread_start(|| ON_STORE_RUNTIME.with(|on| on.set(true)))
            .enable_all()
            .build()
            .map_err(|e| {
                let message = format!("could not start the store's runtime: {e}");
                StoreError::Backend(BackendError::new(BackendKind::Store, message).with_cause(e))
            })?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .build()
            .map_err(|e| {
                let message = format!("could not build the connection pool: {e}");
                StoreError::Backend(BackendError::new(BackendKind::Store, message).with_cause(e))
            })?;
        let db = Db {
            pool,
            quoted: format!("\"{}\"", options.schema),
        };
        let tasks = TaskTracker::new();
        let writer = Writer::new(db.clone(), options.flush_writers, tasks.clone());
        let bridge = Bridge {
            handle: runtime.handle().clone(),
            tasks,
        };
        let store = Self {
            inner: Arc::new(Inner {
                db,
                writer,
                config,
                bridge,
                clock,
                options,
                runtime: Some(runtime),
            }),
        };
        let db = store.inner.db.clone();
        let schema = store.inner.options.schema.clone();
        store.inner.bridge.block(async move {
            let mut client = db.pool.get().await.map_err(crate::db::pool_error)?;
            crate::migrate::migrate(&mut client, &schema)
                .await
                .map_err(|e| {
                    let message = format!("migration failed: {}", describe(&e));
                    StoreError::Backend(crate::db::backend_error(message, e))
                })?;
            Ok(())
        })?;
        Ok(store)
    }

    /// The shared state, for the crate's other modules (the reminder scanner).
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// This host's id.
    pub fn host(&self) -> &str {
        &self.inner.options.host
    }

    /// The options the store was connected with.
    pub fn options(&self) -> &PgOptions {
        &self.inner.options
    }

    /// How many session flushes are waiting for a flush writer (see
    /// [`PgOptions::flush_writers`]): a queue depth to watch. Flushes that wait together
    /// are written together.
    pub fn waiting_flushes(&self) -> usize {
        self.inner.writer.waiting()
    }

    /// A receiver of [`PgStore::waiting_flushes`], updated on every change of the queue
    /// (to wait for a depth without polling).
    pub fn waiting_flushes_changes(&self) -> tokio::sync::watch::Receiver<usize> {
        self.inner.writer.waiting_changes()
    }

    /// How many tasks the store is running on its runtime: a renewal per live [`Lease`], a
    /// loop and a `LISTEN` task per [`crate::Follower`], flush writers with flushes waiting,
    /// lease releases and calls under way.
    pub fn running_tasks(&self) -> usize {
        self.inner.bridge.tasks.len()
    }

    /// Waits until every task of the store has ended ([`PgStore::running_tasks`] is then 0):
    /// the releases of dropped leases, flushes and calls still under way. Call it on shutdown,
    /// once the store's sessions, leases and followers are dropped; while one lives, its task
    /// runs on and this waits for it. The store keeps working afterwards (a later call waits
    /// for the tasks started since).
    pub async fn close(&self) {
        let tasks = &self.inner.bridge.tasks;
        tasks.close();
        tasks.wait().await;
    }

    /// The migrations recorded as applied, `(version, name)` in order.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn applied_migrations(&self) -> Result<Vec<(i32, String)>, StoreError> {
        let db = self.inner.db.clone();
        self.inner
            .bridge
            .run(async move {
                let client = db.pool.get().await.map_err(crate::db::pool_error)?;
                let rows = client
                    .query(
                        &db.sql(
                            "SELECT version, name FROM {s}.harness_migrations ORDER BY version",
                        ),
                        &[],
                    )
                    .await
                    .map_err(crate::db::backend)?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            })
            .await
    }

    /// Takes the lease of `session` for `host` for `ttl` (see [`Lease`]); renewal starts at
    /// once.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; [`StoreError::Owned`] while another live lease exists (this
    /// host's own included: one writing handle per session); [`StoreError::Backend`], also
    /// when the store gives no answer within `ttl` (`the store did not answer within the
    /// lease's TTL (30s)`).
    pub async fn acquire(
        &self,
        session: &SessionId,
        host: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        let db = self.inner.db.clone();
        let id = session.clone();
        let holder = host.to_owned();
        let taking = self
            .inner
            .bridge
            .run(async move { db.acquire(&id, &holder, ttl).await });
        // A store that does not answer (a partition: no error, no reply) is given the lease's
        // own TTL, not forever.
        let epoch = tokio::time::timeout(ttl, taking).await.map_err(|_| {
            StoreError::Backend(BackendError::new(
                BackendKind::Store,
                format!("the store did not answer within the lease's TTL ({ttl:?})"),
            ))
        })??;
        Ok(self.lease(session.clone(), host.to_owned(), epoch, ttl))
    }

    /// Starts the lease `epoch` of `session` that a statement of this crate just took.
    pub(crate) fn lease(
        &self,
        session: SessionId,
        host: String,
        epoch: i64,
        ttl: Duration,
    ) -> Lease {
        Lease::start(
            session,
            host,
            epoch,
            ttl,
            self.inner.db.clone(),
            self.inner.bridge.clone(),
        )
    }

    fn check_id(id: &SessionId) -> Result<(), StoreError> {
        if id.as_str().is_empty() || id.as_str().contains('\0') {
            return Err(StoreError::InvalidId(id.as_str().to_owned()));
        }
        Ok(())
    }

    async fn create_inner(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<PgSession>, StoreError> {
        Self::check_id(&header.id)?;
        let db = self.inner.db.clone();
        let host = self.inner.options.host.clone();
        let ttl = self.inner.options.lease_ttl;
        let (h, e) = (header.clone(), events.clone());
        let epoch = self
            .inner
            .bridge
            .run(async move { db.create(&h, &e, &host, ttl).await })
            .await?
            .ok_or_else(|| StoreError::AlreadyExists(header.id.clone()))?;
        let lease = self.lease(
            header.id.clone(),
            self.inner.options.host.clone(),
            epoch,
            ttl,
        );
        Ok(PgSession::new(self.inner.clone(), header, events, lease))
    }

    /// Creates an empty session owned by this host (async form of [`SessionStore::create`]).
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`], [`StoreError::InvalidId`] (empty, or a NUL byte),
    /// [`StoreError::Backend`].
    pub async fn create_session(
        &self,
        header: SessionHeader,
    ) -> Result<Arc<PgSession>, StoreError> {
        self.create_inner(header, Vec::new()).await
    }

    /// Takes the session's lease for this host and replays its log (async form of
    /// [`SessionStore::open`]).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Owned`], [`StoreError::Malformed`] (seqs not
    /// `1..=last_seq`, a payload that is not JSON), [`StoreError::Backend`].
    pub async fn open_session(&self, id: &SessionId) -> Result<Arc<PgSession>, StoreError> {
        Self::check_id(id)?;
        let lease = self
            .acquire(id, &self.inner.options.host, self.inner.options.lease_ttl)
            .await?;
        let db = self.inner.db.clone();
        let key = id.clone();
        let (header, events) = self
            .inner
            .bridge
            .run(async move { db.load(&key).await })
            .await?;
        Ok(PgSession::new(self.inner.clone(), header, events, lease))
    }

    /// Every session id, sorted byte-wise.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn list_sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let db = self.inner.db.clone();
        self.inner.bridge.run(async move { db.list().await }).await
    }

    /// Reads a session's events with `seq > after` without taking its lease (for followers
    /// and inspection).
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Malformed`], [`StoreError::Backend`].
    pub async fn read_after(
        &self,
        id: &SessionId,
        after: u64,
    ) -> Result<Vec<RawEvent>, StoreError> {
        let db = self.inner.db.clone();
        let key = id.clone();
        let (_, events) = self
            .inner
            .bridge
            .run(async move { db.load(&key).await })
            .await?;
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(events.len());
        Ok(events[start..].to_vec())
    }
}

impl SessionStore for PgStore {
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError> {
        self.create_with_events(header, Vec::new())
    }

    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError> {
        let store = self.clone();
        let id = id.clone();
        let session = self
            .inner
            .bridge
            .block(async move { store.open_session(&id).await })?;
        Ok(session)
    }

    /// Empty when the database cannot be reached (the error is logged).
    fn list(&self) -> Vec<SessionId> {
        let store = self.clone();
        match self
            .inner
            .bridge
            .block(async move { store.list_sessions().await })
        {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, "could not list sessions");
                Vec::new()
            }
        }
    }

    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError> {
        let store = self.clone();
        let session = self
            .inner
            .bridge
            .block(async move { store.create_inner(header, events).await })?;
        Ok(session)
    }
}
