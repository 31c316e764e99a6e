//! [`ReminderScanner`]: any host claims sessions whose reminders are due and that no live host
//! owns, takes their leases and hands them to the host to resume (docs/event-log.md, "The
//! PostgreSQL store", "Reminders across hosts").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use turnkit_core::{SessionId, StoreError, lock};

use crate::db::{backend, pool_error};
use crate::session::PgSession;
use crate::store::PgStore;

/// What a host does with a session the [`ReminderScanner`] claimed for it.
///
/// The scanner delivers nothing itself: it only takes the lease and opens the session. The
/// host makes it live the ordinary way (a root agent over `session`, published where the
/// schedule plugin adopts it); the delivery runtime's first pass finds the due reminders and
/// delivers them through the normal path (maintenance claim, follow-up, dispatch, barrier),
/// so the at-least-once window of schedule.md §12.5 is unchanged.
pub trait Resume: Send + Sync {
    /// `session` is open on this host: its lease is this host's (renewed in the background)
    /// and its log is replayed. The host now owns the handle; dropping every clone of it
    /// releases the lease (dispose the agent first, which flushes). Called on the runtime
    /// that runs [`ReminderScanner::scan_once`], with no lock of the scanner held.
    fn resume(&self, session: Arc<PgSession>);
}

/// How often and how much a [`ReminderScanner`] claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOptions {
    /// The pause between passes (tokio time of the runtime running [`ReminderScanner::run`]);
    /// a pass that claimed a whole batch is followed by the next one at once. Default 1 s.
    pub interval: Duration,
    /// The most sessions one pass claims (the statement's `LIMIT`); default 16.
    pub batch: usize,
    /// The most sessions this scanner has handed to [`Resume`] that may still be open (held
    /// by the host); a pass claims no more than the difference. Default 64.
    pub max_resumed: usize,
    /// How long this scanner leaves alone a session whose log it claimed but could not read
    /// (a corrupt log is not claimed again on every pass); default 60 s.
    pub retry_unreadable: Duration,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            batch: 16,
            max_resumed: 64,
            retry_unreadable: Duration::from_secs(60),
        }
    }
}

/// What a [`ReminderScanner`] has done so far, each count already true when published.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Passes completed (a failed pass included).
    pub passes: u64,
    /// Sessions claimed and handed to [`Resume::resume`].
    pub resumed: u64,
    /// Passes whose claim statement failed (the database could not be reached or refused it).
    pub failed: u64,
    /// Sessions claimed whose log could not be read (their lease was released at once).
    pub unreadable: u64,
}

/// Finds the sessions whose reminders are due while no host has them open, and has a host
/// open them so that their schedule runtime delivers: a task every host may run.
///
/// A pass, in one statement on the store's connection pool:
///
/// 1. selects the sessions with a row in the reminder index due at the host clock's `now`
///    (`due <= now`, earliest due first) whose lease is free or expired on the server's
///    clock, `LIMIT batch`, locking their session rows `FOR UPDATE SKIP LOCKED`: a row another
///    scanner or a flush holds is skipped, never waited for, so hosts scanning together claim
///    disjoint sessions;
/// 2. takes the lease of each for this host (owner, `epoch + 1`, `lease_expires`) exactly as
///    `open` does, in the same statement, and commits.
///
/// Then, for each claimed session, it starts the lease's renewal, replays the log and calls
/// [`Resume::resume`]. A session leased to a live owner is never claimed: its own schedule
/// runtime delivers. Nothing is delivered by the scanner: delivery is the schedule runtime's,
/// at least once. A host that dies (or is paused past its lease) after a reminder's
/// follow-up but before its dispatch commits leaves the index row due, so another host
/// delivers it again once the lease expires; once the dispatch committed, the row is gone
/// in the same transaction and nobody delivers it again (docs/event-log.md, "Reminders
/// across hosts").
pub struct ReminderScanner {
    store: PgStore,
    resume: Arc<dyn Resume>,
    options: ScanOptions,
    resumed: Mutex<Vec<Weak<PgSession>>>,
    unreadable: Mutex<HashMap<String, Instant>>,
    stats: watch::Sender<ScanStats>,
}

impl std::fmt::Debug for ReminderScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReminderScanner")
            .field("host", &self.store.host())
            .field("options", &self.options)
            .field("stats", &*self.stats.borrow())
            .finish_non_exhaustive()
    }
}

impl ReminderScanner {
    /// A scanner claiming for `store`'s host (leases of [`crate::PgOptions::lease_ttl`]),
    /// handing sessions to `resume`. Nothing runs until [`ReminderScanner::run`] or
    /// [`ReminderScanner::scan_once`].
    pub fn new(store: PgStore, resume: Arc<dyn Resume>, options: ScanOptions) -> Self {
        Self {
            store,
            resume,
            options,
            resumed: Mutex::new(Vec::new()),
            unreadable: Mutex::new(HashMap::new()),
            stats: watch::Sender::new(ScanStats::default()),
        }
    }

    /// The options.
    pub fn options(&self) -> &ScanOptions {
        &self.options
    }

    /// A receiver of the counts, updated after every pass.
    pub fn stats(&self) -> watch::Receiver<ScanStats> {
        self.stats.subscribe()
    }

    /// Sessions handed to [`Resume`] that the host still holds.
    pub fn open_resumed(&self) -> usize {
        let mut resumed = lock(&self.resumed);
        resumed.retain(|weak| weak.strong_count() > 0);
        resumed.len()
    }

    /// Runs passes until `stop` is cancelled: one at once, then one every
    /// [`ScanOptions::interval`] (at once after a pass that claimed a whole batch). A failed
    /// pass is logged and retried on the next tick.
    pub async fn run(&self, stop: CancellationToken) {
        loop {
            if stop.is_cancelled() {
                return;
            }
            let full = match self.scan_once().await {
                Ok(claimed) => claimed.len() >= self.options.batch.max(1),
                Err(error) => {
                    tracing::warn!(host = %self.store.host(), %error, "reminder scan failed");
                    false
                }
            };
            if full {
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.options.interval) => {}
            }
        }
    }

    /// One pass: claims up to [`ScanOptions::batch`] sessions (fewer when
    /// [`ScanOptions::max_resumed`] is nearly reached) and resumes each. Returns the ids
    /// handed to [`Resume::resume`], earliest due first.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the claim statement failed (nothing was claimed).
    pub async fn scan_once(&self) -> Result<Vec<SessionId>, StoreError> {
        let room = self
            .options
            .max_resumed
            .saturating_sub(self.open_resumed())
            .min(self.options.batch);
        let outcome = if room == 0 {
            Ok(Vec::new())
        } else {
            self.claim_and_resume(room).await
        };
        self.stats.send_modify(|stats| {
            stats.passes += 1;
            match &outcome {
                Ok(ids) => stats.resumed += ids.len() as u64,
                Err(_) => stats.failed += 1,
            }
        });
        outcome
    }

    async fn claim_and_resume(&self, room: usize) -> Result<Vec<SessionId>, StoreError> {
        let inner = self.store.inner();
        let now = inner.clock.now();
        let skipped: Vec<String> = {
            let mut unreadable = lock(&self.unreadable);
            unreadable.retain(|_, until| Instant::now() < *until);
            unreadable.keys().cloned().collect()
        };
        let db = inner.db.clone();
        let host = inner.options.host.clone();
        let ttl = inner.options.lease_ttl;
        let limit = i64::try_from(room).unwrap_or(i64::MAX);
        let claimed: Vec<(String, i64)> = inner
            .bridge
            .run(async move {
                let client = db.pool.get().await.map_err(pool_error)?;
                let rows = client
                    .query(
                        &db.sql(
                            "WITH due AS ( \
                                 SELECT s.id, (SELECT min(r.due) FROM {s}.reminders r WHERE r.session_id = s.id) AS first \
                                 FROM {s}.sessions s \
                                 WHERE (s.owner IS NULL OR s.lease_expires < now()) \
                                   AND s.id IN (SELECT r.session_id FROM {s}.reminders r WHERE r.due <= $1) \
                                   AND NOT (s.id = ANY($5)) \
                                 ORDER BY first, s.id \
                                 LIMIT $2 \
                                 FOR UPDATE OF s SKIP LOCKED \
                             ) \
                             UPDATE {s}.sessions s SET owner = $3, epoch = s.epoch + 1, \
                                 lease_expires = now() + make_interval(secs => $4) \
                             FROM due WHERE s.id = due.id \
                             RETURNING s.id, s.epoch, due.first",
                        ),
                        &[&now, &limit, &host, &ttl.as_secs_f64(), &skipped],
                    )
                    .await
                    .map_err(backend)?;
                let mut claimed: Vec<(String, i64, chrono::DateTime<chrono::Utc>)> = rows
                    .iter()
                    .map(|row| (row.get(0), row.get(1), row.get(2)))
                    .collect();
                claimed.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
                Ok(claimed.into_iter().map(|(id, epoch, _)| (id, epoch)).collect())
            })
            .await?;
        let mut resumed = Vec::with_capacity(claimed.len());
        for (id, epoch) in claimed {
            let id = SessionId::from(id.as_str());
            match self.open_claimed(&id, epoch).await {
                Ok(session) => {
                    lock(&self.resumed).push(Arc::downgrade(&session));
                    tracing::debug!(session = %id, epoch, "claimed a session with a due reminder");
                    self.resume.resume(session);
                    resumed.push(id);
                }
                Err(error) => {
                    tracing::warn!(session = %id, %error, "claimed a session with a due reminder but could not read it; lease released");
                    lock(&self.unreadable).insert(
                        id.as_str().to_owned(),
                        Instant::now() + self.options.retry_unreadable,
                    );
                    self.stats.send_modify(|stats| stats.unreadable += 1);
                }
            }
        }
        Ok(resumed)
    }

    /// Starts the lease the claim took and replays the log; on an error the lease is
    /// dropped, which releases it.
    async fn open_claimed(&self, id: &SessionId, epoch: i64) -> Result<Arc<PgSession>, StoreError> {
        let inner = self.store.inner();
        let lease = self.store.lease(
            id.clone(),
            inner.options.host.clone(),
            epoch,
            inner.options.lease_ttl,
        );
        let db = inner.db.clone();
        let key = id.clone();
        let (header, events) = inner.bridge.run(async move { db.load(&key).await }).await?;
        Ok(PgSession::new(inner.clone(), header, events, lease))
    }
}
