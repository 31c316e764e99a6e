//! [`Follower`]: a session's new events as other hosts commit them, without its lease.
//!
//! Every flush transaction sends one `NOTIFY` on the schema's channel (payload
//! `<session id>:<last seq>`, delivered by the server at commit). A follower keeps a dedicated
//! connection that `LISTEN`s on it for latency, and re-reads the events after the last one it
//! delivered (`seq > delivered`) on connect, after every reconnect, on every notification for
//! its session and on a slow timer, for correctness: a notification lost with a dropped
//! connection costs latency, never an event.
//!
//! The connection's task keeps no queue: it drops the notifications of other sessions (and of
//! seqs already delivered) and folds the others into one pending "re-read" flag ([`Wake`]),
//! which the follower's loop takes once per re-read however many notifications arrived. A
//! consumer that stops reading therefore holds the follower's memory at its event buffer and
//! one page of read events, on any traffic of the schema.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::Stream;
use tokio::sync::{Notify, mpsc};
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;
use turnkit_core::{RawEvent, SessionId, StoreError};

use crate::db::{Db, backend, pool_error};
use crate::notify::channel;
use crate::store::PgStore;

/// Events read per query while catching up.
const PAGE: i64 = 500;

/// How a [`Follower`] keeps up.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// How often the follower re-reads without a notification (the correctness net for a
    /// notification that was never received); default 5 s.
    pub poll_interval: Duration,
    /// How long the follower waits before reconnecting its `LISTEN` connection after it
    /// failed or was closed; default 1 s.
    pub reconnect_delay: Duration,
    /// Events read but not yet taken by the consumer before the follower stops reading;
    /// default 256. The follower queues no notifications, so this and one page of 500 read
    /// events bound what a consumer that stops reading holds, whatever the schema's traffic.
    pub buffer: usize,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(5),
            reconnect_delay: Duration::from_secs(1),
            buffer: 256,
        }
    }
}

/// Whether a notification's payload asks the follower of `id` that delivered up to
/// `delivered` to re-read.
fn relevant(payload: &str, id: &str, delivered: u64) -> bool {
    if payload.is_empty() {
        return true;
    }
    match payload.rsplit_once(':') {
        Some((session, seq)) if session == id => {
            seq.parse::<u64>().map_or(true, |seq| seq > delivered)
        }
        Some(_) => false,
        None => true,
    }
}

/// What a `LISTEN` connection's task leaves for the follower's loop: at most one pending
/// re-read, however many notifications arrived, and whether the connection ended. Its size
/// does not depend on the traffic of the channel.
#[derive(Debug, Default)]
struct Wake {
    /// One stored permit at most: set by a relevant notification, taken by the loop.
    reread: Notify,
    /// Cancelled when the connection ended (failed, closed, or the follower stopped).
    ended: CancellationToken,
}

impl Wake {
    /// Takes a notification's payload for the follower of `id` that delivered up to
    /// `delivered`: a relevant one sets the pending re-read (already set: nothing changes),
    /// any other one is dropped.
    fn note(&self, payload: &str, id: &str, delivered: u64) {
        if relevant(payload, id, delivered) {
            self.reread.notify_one();
        }
    }
}

impl Db {
    /// Up to [`PAGE`] events of `id` with `seq > after`, in seq order.
    async fn page_after(&self, id: &str, after: u64) -> Result<Vec<RawEvent>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let statement = client
            .prepare_cached(&self.sql(
                "SELECT seq, type, time, data::text FROM {s}.events \
                 WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            ))
            .await
            .map_err(backend)?;
        let after_i64 = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = client
            .query(&statement, &[&id, &after_i64, &PAGE])
            .await
            .map_err(backend)?;
        let place = || format!("postgres {}.events session {id}", self.quoted);
        let mut events = Vec::with_capacity(rows.len());
        for (expected, row) in (after + 1..).zip(rows.iter()) {
            let seq: i64 = row.get(0);
            let line = usize::try_from(expected).unwrap_or(usize::MAX);
            if u64::try_from(seq).ok() != Some(expected) {
                return Err(StoreError::Malformed {
                    file: place(),
                    line,
                    message: format!("seq {seq} where {expected} was expected"),
                });
            }
            let time: DateTime<Utc> = row.get(2);
            let event = RawEvent::new(expected, row.get::<_, &str>(1), time, row.get::<_, &str>(3))
                .map_err(|e| StoreError::Malformed {
                    file: place(),
                    line,
                    message: e.to_string(),
                })?;
            events.push(event);
        }
        Ok(events)
    }

    /// Whether session `id` exists.
    async fn exists(&self, id: &str) -> Result<bool, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let row = client
            .query_opt(
                &self.sql("SELECT 1 FROM {s}.sessions WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(backend)?;
        Ok(row.is_some())
    }
}

/// A session's events with `seq` greater than the `after_seq` it was subscribed with, each
/// exactly once and in seq order, as they commit on any host (docs/event-log.md,
/// "Following a session").
///
/// Read it with [`Follower::next`] or as a [`Stream`]. Connection failures are retried
/// (logged, never yielded); the only error is [`StoreError::Malformed`] (the stored log has a
/// gap or an undecodable event), after which the follower ends. Dropping it stops its task
/// and closes its `LISTEN` connection.
#[derive(Debug)]
pub struct Follower {
    events: mpsc::Receiver<Result<RawEvent, StoreError>>,
    _stop: DropGuard,
}

impl Follower {
    /// The next event; `None` only after an error was yielded or the store's runtime ended.
    pub async fn next(&mut self) -> Option<Result<RawEvent, StoreError>> {
        self.events.recv().await
    }
}

impl Stream for Follower {
    type Item = Result<RawEvent, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx)
    }
}

impl PgStore {
    /// Follows `session` from `after_seq` with [`FollowOptions::default`]: see
    /// [`PgStore::subscribe_with`].
    ///
    /// # Errors
    /// As [`PgStore::subscribe_with`].
    pub async fn subscribe(
        &self,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<Follower, StoreError> {
        self.subscribe_with(session, after_seq, FollowOptions::default())
            .await
    }

    /// Follows `session`: the returned [`Follower`] yields every event with
    /// `seq > after_seq`, first those already committed, then each new one as its flush
    /// commits, on this host or another. Takes no lease.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the session does not exist; [`StoreError::Backend`] when
    /// the database cannot be reached to check it.
    pub async fn subscribe_with(
        &self,
        session: &SessionId,
        after_seq: u64,
        options: FollowOptions,
    ) -> Result<Follower, StoreError> {
        let inner = &self.inner;
        let db = inner.db.clone();
        let key = session.as_str().to_owned();
        let found = inner
            .bridge
            .run(async move { db.exists(&key).await })
            .await?;
        if !found {
            return Err(StoreError::NotFound(session.clone()));
        }
        let (tx, events) = mpsc::channel(options.buffer.max(1));
        let stop = CancellationToken::new();
        let follow = Follow {
            db: inner.db.clone(),
            config: inner.config.clone(),
            channel: channel(&inner.db.quoted),
            id: session.as_str().to_owned(),
            delivered: Arc::new(AtomicU64::new(after_seq)),
            options,
            tx,
            stop: stop.clone(),
            tasks: inner.bridge.tasks.clone(),
        };
        inner.bridge.spawn(follow.run());
        Ok(Follower {
            events,
            _stop: stop.drop_guard(),
        })
    }
}

/// Why a follower's loop ends.
enum End {
    /// The follower was dropped (or stopped): nothing more to do.
    Stopped,
    /// A malformed log was reported.
    Failed,
}

/// The follower's task on the store's runtime.
struct Follow {
    db: Db,
    config: tokio_postgres::Config,
    channel: String,
    id: String,
    /// The seq of the last event sent to the consumer; written only by the loop, read by the
    /// `LISTEN` task to drop notifications of seqs already delivered (a stale value only
    /// costs a re-read that finds nothing).
    delivered: Arc<AtomicU64>,
    options: FollowOptions,
    tx: mpsc::Sender<Result<RawEvent, StoreError>>,
    stop: CancellationToken,
    /// The store's tracker, for the `LISTEN` connections' tasks.
    tasks: TaskTracker,
}

impl Follow {
    async fn run(self) {
        loop {
            // LISTEN before reading, so nothing committed after the read goes unnoticed.
            let listening = match self.listen().await {
                Ok(listening) => Some(listening),
                Err(error) => {
                    tracing::warn!(session = %self.id, %error, "follower: could not listen; re-reading on the timer");
                    None
                }
            };
            if self.catch_up().await.is_err() {
                return;
            }
            let Some((_client, wake)) = listening else {
                if self.pause(self.options.reconnect_delay).await.is_err() {
                    return;
                }
                continue;
            };
            // The slow timer runs from the last re-read: notifications of other sessions of
            // the schema (one channel) are dropped by the LISTEN task and never reach it.
            loop {
                let next_poll = tokio::time::Instant::now() + self.options.poll_interval;
                tokio::select! {
                    () = self.stop.cancelled() => return,
                    () = self.tx.closed() => return,
                    () = wake.ended.cancelled() => break,
                    // A relevant notification since the last wake-up (any number of them).
                    () = wake.reread.notified() => {}
                    () = tokio::time::sleep_until(next_poll) => {}
                }
                if self.catch_up().await.is_err() {
                    return;
                }
            }
            tracing::warn!(session = %self.id, "follower: the LISTEN connection closed; reconnecting");
            if self.pause(self.options.reconnect_delay).await.is_err() {
                return;
            }
        }
    }

    /// Waits `delay` unless the follower is stopped first.
    async fn pause(&self, delay: Duration) -> Result<(), End> {
        tokio::select! {
            () = self.stop.cancelled() => Err(End::Stopped),
            () = self.tx.closed() => Err(End::Stopped),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }

    /// A new connection listening on the channel, and the [`Wake`] its task sets on each
    /// relevant notification and when the connection ends. The client must be kept for the
    /// connection to live.
    async fn listen(&self) -> Result<(tokio_postgres::Client, Arc<Wake>), tokio_postgres::Error> {
        let (client, mut connection) = self.config.connect(NoTls).await?;
        let wake = Arc::new(Wake::default());
        let stop = self.stop.clone();
        let id = self.id.clone();
        let delivered = Arc::clone(&self.delivered);
        let task_wake = Arc::clone(&wake);
        self.tasks.spawn(async move {
            let wake = task_wake;
            // Whichever way the task ends, the loop reconnects (or has stopped already).
            let _ended = wake.ended.clone().drop_guard();
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            loop {
                let message = tokio::select! {
                    () = stop.cancelled() => return,
                    message = futures::StreamExt::next(&mut messages) => message,
                };
                match message {
                    Some(Ok(AsyncMessage::Notification(note))) => {
                        wake.note(note.payload(), &id, delivered.load(Ordering::Relaxed));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        tracing::warn!(session = %id, error = %crate::db::describe(&error), "follower: LISTEN connection failed");
                        return;
                    }
                    None => return,
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN \"{}\"", self.channel))
            .await?;
        Ok((client, wake))
    }

    /// Reads and sends every event after the last delivered one. A database error is logged
    /// and left to the next attempt; a malformed log is sent and ends the follower.
    async fn catch_up(&self) -> Result<(), End> {
        loop {
            let page = tokio::select! {
                () = self.stop.cancelled() => return Err(End::Stopped),
                page = self.db.page_after(&self.id, self.delivered.load(Ordering::Relaxed)) => page,
            };
            let events = match page {
                Ok(events) => events,
                Err(error @ StoreError::Malformed { .. }) => {
                    let _ = self.tx.send(Err(error)).await;
                    return Err(End::Failed);
                }
                Err(error) => {
                    tracing::warn!(session = %self.id, %error, "follower: could not read new events; retrying");
                    return Ok(());
                }
            };
            let full = events.len() as i64 >= PAGE;
            for event in events {
                let seq = event.seq();
                if self.tx.send(Ok(event)).await.is_err() {
                    return Err(End::Stopped);
                }
                self.delivered.store(seq, Ordering::Relaxed);
            }
            if !full {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::{Wake, relevant};

    /// Whether a re-read is pending, taking it if so.
    fn take_pending(wake: &Wake) -> bool {
        wake.reread.notified().now_or_never().is_some()
    }

    #[test]
    fn a_flood_of_notifications_leaves_at_most_one_pending_re_read() {
        let wake = Wake::default();
        assert!(!take_pending(&wake));
        // Other sessions' news and seqs already delivered are dropped, not held.
        for n in 0..50_000 {
            wake.note(&format!("s2:{n}"), "s1", 7);
        }
        wake.note("s1:7", "s1", 7);
        assert!(!take_pending(&wake));
        // Any number of relevant notifications fold into one re-read.
        for n in 8..50_008 {
            wake.note(&format!("s1:{n}"), "s1", 7);
        }
        wake.note("", "s1", 7);
        assert!(take_pending(&wake));
        assert!(!take_pending(&wake));
        // A notification after the re-read was taken asks for the next one.
        wake.note("s1:8", "s1", 7);
        assert!(take_pending(&wake));
        assert!(!take_pending(&wake));
        assert!(!wake.ended.is_cancelled());
    }

    #[test]
    fn only_news_of_the_followed_session_past_the_delivered_seq_is_relevant() {
        assert!(relevant("s1:7", "s1", 6));
        assert!(!relevant("s1:7", "s1", 7));
        assert!(!relevant("s2:9", "s1", 0));
        // An id with a colon: the seq is after the last one.
        assert!(relevant("a:b:3", "a:b", 2));
        assert!(!relevant("a:b:3", "a", 2));
        // An empty or unreadable payload: re-read to be safe.
        assert!(relevant("", "s1", 100));
        assert!(relevant("s1:x", "s1", 100));
        assert!(relevant("garbage", "s1", 100));
    }
}
