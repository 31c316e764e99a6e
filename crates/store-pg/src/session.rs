//! [`PgSession`]: one leased session's live log and its flush transaction.

use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use serde_json::Value;
use turnkit_core::{
    AppendError, PersistenceError, RawEvent, Session, SessionEvent, SessionHeader, SessionId,
    SessionIndex, lock, read_lock, write_lock,
};

use crate::flush::FlushOutcome;
use crate::lease::Lease;
use crate::shared::Inner;

/// `timestamptz`'s earliest value, 4714-11-24 00:00 UTC in the proleptic Gregorian calendar
/// (4713 BC in the Julian one).
fn earliest_storable() -> chrono::DateTime<chrono::Utc> {
    chrono::NaiveDate::from_ymd_opt(-4713, 11, 24)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .map_or(chrono::DateTime::<chrono::Utc>::MIN_UTC, |t| t.and_utc())
}

/// A session of a [`crate::PgStore`], written under its [`Lease`].
///
/// `append` commits to the live log only; `flush` sends every event not yet durable in one
/// transaction (see [`crate::PgStore`]). Flushes of one handle run one at a time; a flush
/// whose caller stops waiting still completes, and its outcome counts. Dropping the handle
/// releases the lease and discards unflushed events.
pub struct PgSession {
    // Dropped first: the release runs on the runtime that `inner` may be the last owner of.
    lease: Lease,
    header: SessionHeader,
    inner: Arc<Inner>,
    log: RwLock<Vec<RawEvent>>,
    durable: Arc<tokio::sync::watch::Sender<u64>>,
    /// The store's index of this session as of the durable events (`None`: no index kept).
    index: Arc<Mutex<Option<Box<dyn SessionIndex>>>>,
    flushing: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for PgSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSession")
            .field("id", &self.header.id)
            .field("len", &self.len())
            .field("lease", &self.lease)
            .finish()
    }
}

impl PgSession {
    pub(crate) fn new(
        inner: Arc<Inner>,
        header: SessionHeader,
        events: Vec<RawEvent>,
        lease: Lease,
    ) -> Arc<Self> {
        let durable = events.len() as u64;
        let index = inner
            .options
            .index
            .as_ref()
            .map(|rules| rules.start(&events));
        Arc::new(Self {
            header,
            inner,
            log: RwLock::new(events),
            durable: Arc::new(tokio::sync::watch::channel(durable).0),
            index: Arc::new(Mutex::new(index)),
            flushing: Arc::new(tokio::sync::Mutex::new(())),
            lease,
        })
    }

    /// The lease this handle writes under: watch [`Lease::lost`] to know when to dispose the
    /// session's agent.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The seq of the last event known durable.
    pub fn durable_len(&self) -> u64 {
        *self.durable.borrow()
    }

    /// Completes once at least `len` events are known durable ([`PgSession::durable_len`];
    /// at once if they are), e.g. after a flush whose caller stopped waiting was written.
    pub async fn durable_reaches(&self, len: u64) {
        let mut durable = self.durable.subscribe();
        // Err only when the sender is gone, which the session itself keeps alive.
        let _ = durable.wait_for(|d| *d >= len).await;
    }
}

#[async_trait]
impl Session for PgSession {
    fn id(&self) -> &SessionId {
        &self.header.id
    }

    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn len(&self) -> u64 {
        read_lock(&self.log).len() as u64
    }

    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        let events = read_lock(&self.log);
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(events.len());
        events[start..].to_vec()
    }

    /// # Errors
    /// [`AppendError::Rejected`] for what PostgreSQL cannot store, which every later flush
    /// would be refused on (and every event after it with it): an event type holding a NUL
    /// character, or a clock reading before 4713 BC, `timestamptz`'s earliest.
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        if r#type.contains('\0') {
            let kind = r#type;
            return Err(AppendError::Rejected(format!(
                "event type {kind:?} holds a NUL character, which PostgreSQL text cannot store"
            )));
        }
        let time = self.inner.clock.now();
        if time < earliest_storable() {
            return Err(AppendError::Rejected(format!(
                "event time {} is before 4713 BC, the earliest PostgreSQL stores",
                time.to_rfc3339()
            )));
        }
        let mut events = write_lock(&self.log);
        let event = SessionEvent {
            seq: events.len() as u64 + 1,
            r#type: r#type.to_owned(),
            time,
            data,
        };
        events.push(RawEvent::from_event(&event));
        Ok(event)
    }

    /// [`Lease::release`]: the lease is given up without blocking the caller's thread.
    async fn release(&self) {
        self.lease.release().await;
    }

    /// Runs the flush transaction on the store's runtime; the future only waits.
    ///
    /// # Errors
    /// [`PersistenceError::Fenced`] when another host took the session (the lease is marked
    /// lost); [`PersistenceError::Io`] when the transaction did not commit (nothing of the
    /// batch is in the database; a later flush sends it again).
    async fn flush(&self) -> Result<(), PersistenceError> {
        let guard = self.flushing.clone().lock_owned().await;
        let durable = *self.durable.borrow();
        let batch: Vec<RawEvent> = self.raw_events_after(durable);
        if batch.is_empty() {
            return Ok(());
        }
        if self.lease.is_lost() {
            return Err(PersistenceError::Fenced(self.header.id.clone()));
        }
        if self.lease.is_released() {
            return Err(PersistenceError::Detached(self.header.id.clone()));
        }
        // The index rows the batch implies, and the index once it is durable (flushes of one
        // handle run one at a time, so the index is the durable events').
        let update = lock(&self.index).as_ref().and_then(|i| i.after(&batch));
        let (rows, next) = match update {
            Some(update) => (update.changes, Some(update.next)),
            None => (Vec::new(), None),
        };
        let index_cell = self.index.clone();
        let writer = self.inner.writer.clone();
        let id = self.header.id.as_str().to_owned();
        let host = self.lease.host().to_owned();
        let epoch = self.lease.epoch();
        let durable_cell = self.durable.clone();
        // Seen as it is now: only a lease that must stop while this flush waits ends the wait.
        let mut must_stop = self.lease.stop_signal();
        must_stop.borrow_and_update();
        let stopped = async move {
            loop {
                if must_stop.changed().await.is_err() {
                    // The renewal ended (the lease was lost or released): no stop to come.
                    std::future::pending::<()>().await;
                }
                if *must_stop.borrow() {
                    return;
                }
            }
        };
        let run = self.inner.bridge.run(async move {
            let _guard = guard;
            let count = batch.len() as u64;
            let outcome = writer.flush(&id, &host, epoch, durable, batch, rows).await;
            if let Ok(FlushOutcome::Written) = outcome {
                if let Some(next) = next {
                    *lock(&index_cell) = Some(next);
                }
                durable_cell.send_replace(durable + count);
            }
            Ok(outcome)
        });
        // A store that stopped answering (a partition) must not hold the caller past the
        // point where the session's work has to stop: the flush goes on in the background (its
        // outcome counts), the caller hears that durability is not confirmed.
        let outcome = tokio::select! {
            outcome = run => outcome,
            () = stopped => {
                return Err(PersistenceError::Io {
                    session: self.header.id.clone(),
                    message: format!(
                        "postgres: no answer before the lease had to stop the session's work \
                         ({:?} without a confirmed renewal)",
                        self.lease.stop_after()
                    ),
                });
            }
        };
        match outcome {
            Ok(Ok(FlushOutcome::Written)) => Ok(()),
            Ok(Ok(FlushOutcome::Fenced)) => {
                self.lease.mark_lost();
                Err(PersistenceError::Fenced(self.header.id.clone()))
            }
            Ok(Ok(FlushOutcome::SeqMismatch { found })) => Err(PersistenceError::Io {
                session: self.header.id.clone(),
                message: format!(
                    "postgres: the session's last seq is {found}, this handle expected {durable} \
                     (a commit whose answer was lost); reopen the session"
                ),
            }),
            Ok(Err(message)) => Err(PersistenceError::Io {
                session: self.header.id.clone(),
                message: format!("postgres: {message}"),
            }),
            Err(error) => Err(PersistenceError::Io {
                session: self.header.id.clone(),
                message: format!("postgres: {error}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_earliest_storable_time_is_timestamptz_s_low_value() {
        // `SELECT extract(epoch FROM '4714-11-24 00:00:00+00 BC'::timestamptz)`.
        assert_eq!(super::earliest_storable().timestamp(), -210_866_803_200);
    }
}
