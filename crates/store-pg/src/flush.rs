//! The flush: one statement that checks the caller's ownership and last seq, inserts the
//! pending batch and notifies followers, with the due-reminder index changes in the same
//! transaction (docs/event-log.md, "The PostgreSQL store").
//!
//! Flushes of different sessions that wait at the same time share a transaction (group
//! commit): each session's check and notification are its own, decided row by row in one
//! `UPDATE`, then one `COPY` inserts the batches of the sessions whose check held, so one
//! transaction and one WAL flush carry them all.

use std::collections::{HashSet, VecDeque};

use bytes::{BufMut, Bytes, BytesMut};
use futures::SinkExt;
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;
use turnkit_core::{RawEvent, lock};

use crate::copy::{COPY_SIGNATURE, PG_EPOCH_MICROS};
use crate::db::{Db, columns, describe, seq_i64};
use crate::notify::{channel, payload};
use crate::reminders::IndexChanges;

/// What a flush transaction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlushOutcome {
    /// The batch is committed.
    Written,
    /// The session's owner or epoch is not the caller's.
    Fenced,
    /// The epoch is the caller's but the durable last seq is not the expected one.
    SeqMismatch { found: i64 },
}

/// A group takes its share of the waiting events (split over the writers), but at least
/// this many...
const GROUP_EVENTS_MIN: usize = 1_000;
/// ...and at most this many, or this many payload bytes, or this many sessions. A single
/// flush larger than these is written alone.
const GROUP_EVENTS_MAX: usize = 10_000;
const GROUP_BYTES: usize = 8 << 20;
const GROUP_SESSIONS: usize = 1_000;

/// Flushes waiting for a writer, and the writers running (at most `writers`).
pub(crate) struct Combiner {
    state: std::sync::Mutex<Waiting>,
    writers: usize,
}

#[derive(Default)]
struct Waiting {
    queue: VecDeque<Request>,
    running: usize,
    /// Events of the groups being written.
    writing: usize,
}

/// One session's flush, waiting to be written.
struct Request {
    id: String,
    host: String,
    epoch: i64,
    durable: u64,
    batch: Vec<RawEvent>,
    reply: oneshot::Sender<Result<FlushOutcome, String>>,
}

impl Combiner {
    /// A combiner running at most `writers` group transactions at once (at least one).
    pub(crate) fn new(writers: usize) -> Self {
        Self {
            state: std::sync::Mutex::new(Waiting::default()),
            writers: writers.max(1),
        }
    }

    /// Queues a flush; true when the caller is to start a writer (counted as running).
    fn enqueue(&self, request: Request) -> bool {
        let mut waiting = lock(&self.state);
        waiting.queue.push_back(request);
        let start = waiting.running < self.writers;
        if start {
            waiting.running += 1;
        }
        start
    }

    /// How many flushes are waiting for a writer.
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.state).queue.len()
    }
}

/// Takes the next group from the front of the queue: flushes of distinct sessions, a
/// writer's share of the events waiting or being written, within the group limits (the
/// first flush whatever its size). Counts its events as being written.
fn take_group(waiting: &mut Waiting, writers: usize) -> Vec<Request> {
    let queued: usize = waiting.queue.iter().map(|r| r.batch.len()).sum();
    let share = (queued + waiting.writing)
        .div_ceil(writers.max(1))
        .clamp(GROUP_EVENTS_MIN, GROUP_EVENTS_MAX);
    let queue = &mut waiting.queue;
    let mut group: Vec<Request> = Vec::new();
    let mut ids = HashSet::new();
    let (mut events, mut bytes) = (0, 0);
    let mut at = 0;
    while at < queue.len() && group.len() < GROUP_SESSIONS && events < share && bytes < GROUP_BYTES
    {
        if ids.contains(queue[at].id.as_str()) {
            // Two flushes of one session never share a group: the later one waits.
            at += 1;
            continue;
        }
        let Some(request) = queue.remove(at) else {
            break;
        };
        events += request.batch.len();
        bytes += request
            .batch
            .iter()
            .map(|e| e.payload().len())
            .sum::<usize>();
        ids.insert(request.id.clone());
        group.push(request);
    }
    waiting.writing += events;
    group
}

/// The `COPY` data of a group goes to the server in pieces of about this many bytes, so the
/// server inserts while the rest is encoded.
const COPY_CHUNK: usize = 64 * 1024;

/// Events encoded as PostgreSQL's binary `COPY` rows `(session_id text, seq bigint,
/// type text, time timestamptz, data json)`; `json`'s binary form is its text.
struct CopyRows {
    buffer: BytesMut,
}

impl CopyRows {
    fn new() -> Self {
        let mut buffer = BytesMut::with_capacity(COPY_CHUNK + 4096);
        buffer.put_slice(COPY_SIGNATURE);
        // No flags, no header extension.
        buffer.put_u32(0);
        buffer.put_u32(0);
        Self { buffer }
    }

    fn push(&mut self, session: &str, event: &RawEvent) {
        let time = event.time();
        let mut micros = time.timestamp_micros() - PG_EPOCH_MICROS;
        // Rounded toward 2000-01-01 as the single flush's encoding (chrono's) rounds, not
        // down: a time has one stored value whichever way it was flushed.
        if micros < 0 && !time.timestamp_subsec_nanos().is_multiple_of(1_000) {
            micros += 1;
        }
        self.buffer.put_i16(5);
        self.text(session);
        self.buffer.put_i32(8);
        self.buffer.put_i64(seq_i64(event.seq()));
        self.text(event.r#type());
        self.buffer.put_i32(8);
        self.buffer.put_i64(micros);
        self.text(event.payload());
    }

    fn text(&mut self, text: &str) {
        // A field past i32::MAX bytes gets a wrong length, so the server refuses the data (it
        // refuses any field over 1 GB anyway) and the group falls back to single flushes.
        self.buffer
            .put_i32(i32::try_from(text.len()).unwrap_or(i32::MAX));
        self.buffer.put_slice(text.as_bytes());
    }

    /// The rest of the data with the trailer.
    fn finish(mut self) -> Bytes {
        self.buffer.put_i16(-1);
        self.buffer.freeze()
    }
}

/// A writer, counted in `running` until it stops; a writer that panicked takes the waiting
/// flushes with it (their callers get an error instead of waiting for ever).
struct Running<'a> {
    combiner: &'a Combiner,
    /// Counted out already (it found no flush waiting).
    stopped: bool,
}

impl<'a> Running<'a> {
    fn new(combiner: &'a Combiner) -> Self {
        Self {
            combiner,
            stopped: false,
        }
    }

    /// The next group to write, or `None` when no flush waits: then the writer is counted
    /// out under the same lock, so a flush queued after it finds a writer to start.
    fn next_group(&mut self) -> Option<Vec<Request>> {
        let mut waiting = lock(&self.combiner.state);
        let group = take_group(&mut waiting, self.combiner.writers);
        if group.is_empty() && !self.stopped {
            self.stopped = true;
            waiting.running -= 1;
            if waiting.running == 0 {
                waiting.writing = 0;
            }
        }
        (!group.is_empty()).then_some(group)
    }

    /// Counts a group's events out of those being written.
    fn written(&mut self, events: usize) {
        lock(&self.combiner.state).writing -= events;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        let mut waiting = lock(&self.combiner.state);
        waiting.running -= 1;
        if waiting.running == 0 {
            // No group is being written (a panicking writer left its count behind).
            waiting.writing = 0;
            if std::thread::panicking() {
                waiting.queue.clear();
            }
        }
    }
}

/// Whether the server refused a statement (an `ERROR`) and the connection lives on.
fn refused_statement(error: &tokio_postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|db| db.parsed_severity() == Some(tokio_postgres::error::Severity::Error))
}

impl Db {
    /// Writes a session's pending batch: checks owner, epoch and the durable last seq under
    /// the session row's lock, inserts the batch, moves `last_seq`, and updates the
    /// due-reminder index from the batch's `schedule/change` events.
    ///
    /// A batch without `schedule/change` events joins the flushes of other sessions waiting
    /// at the same time in one transaction; one with them is its own transaction, outside
    /// the writers' limit.
    pub(crate) async fn flush(
        &self,
        id: &str,
        host: &str,
        epoch: i64,
        durable: u64,
        batch: Vec<RawEvent>,
    ) -> Result<FlushOutcome, String> {
        if batch.iter().any(|e| e.r#type() == "schedule/change") {
            let reminders = IndexChanges::from_batch(&batch);
            let mut client = self.client().await?;
            return self
                .flush_on(&mut client, id, host, epoch, durable, &batch, &reminders)
                .await
                .map_err(|e| describe(&e));
        }
        let (reply, answer) = oneshot::channel();
        let start_writer = self.combiner.enqueue(Request {
            id: id.to_owned(),
            host: host.to_owned(),
            epoch,
            durable,
            batch,
            reply,
        });
        if start_writer {
            let db = self.clone();
            tokio::spawn(async move { db.write_waiting().await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err("the flush writer stopped before it answered".to_owned()))
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, String> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => describe(&e),
            other => other.to_string(),
        })
    }

    /// A writer: writes groups of waiting flushes until none is left.
    async fn write_waiting(self) {
        let mut running = Running::new(&self.combiner);
        while let Some(group) = running.next_group() {
            let events = group.iter().map(|r| r.batch.len()).sum::<usize>();
            self.write_group(group).await;
            running.written(events);
        }
    }

    /// Writes one group and answers each of its flushes.
    async fn write_group(&self, group: Vec<Request>) {
        let mut client = match self.client().await {
            Ok(client) => client,
            Err(message) => {
                for request in group {
                    let _ = request.reply.send(Err(message.clone()));
                }
                return;
            }
        };
        if group.len() > 1 {
            match self.flush_group(&mut client, &group).await {
                Ok(written) => {
                    for request in group {
                        let outcome = if written.contains(request.id.as_str()) {
                            Ok(FlushOutcome::Written)
                        } else {
                            self.refused(&client, &request.id, &request.host, request.epoch)
                                .await
                                .map_err(|e| describe(&e))
                        };
                        let _ = request.reply.send(outcome);
                    }
                    return;
                }
                // The server refused the statement, which wrote nothing: each flush is
                // written alone, so one session's refusal is not another's. (An error that
                // ends the connection, FATAL or PANIC, is every flush's answer: a retry there
                // would only meet the connection closed.)
                Err(error) if refused_statement(&error) => {}
                Err(error) => {
                    let message = describe(&error);
                    for request in group {
                        let _ = request.reply.send(Err(message.clone()));
                    }
                    return;
                }
            }
        }
        for request in group {
            let outcome = self
                .flush_on(
                    &mut client,
                    &request.id,
                    &request.host,
                    request.epoch,
                    request.durable,
                    &request.batch,
                    &IndexChanges::default(),
                )
                .await
                .map_err(|e| describe(&e));
            let _ = request.reply.send(outcome);
        }
    }

    /// The transaction of a group: one statement checks every session and moves the
    /// `last_seq` of those whose check held (notifying their followers at commit), then one
    /// binary `COPY` inserts their batches. Answers the sessions it wrote.
    async fn flush_group(
        &self,
        client: &mut deadpool_postgres::Client,
        group: &[Request],
    ) -> Result<HashSet<String>, tokio_postgres::Error> {
        let check = client
            .prepare_cached(&self.sql(
                "WITH req AS ( \
                     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], \
                                          $5::bigint[], $6::text[]) \
                     AS r(id, owner, epoch, expected, last, note)), \
                 checked AS ( \
                     UPDATE {s}.sessions AS t SET last_seq = req.last FROM req \
                     WHERE t.id = req.id AND t.owner = req.owner AND t.epoch = req.epoch \
                       AND t.last_seq = req.expected \
                     RETURNING t.id, req.note) \
                 SELECT id, pg_notify($7, note) FROM checked",
            ))
            .await?;
        let mut ids = Vec::with_capacity(group.len());
        let mut owners = Vec::with_capacity(group.len());
        let mut epochs = Vec::with_capacity(group.len());
        let mut expected = Vec::with_capacity(group.len());
        let mut ends = Vec::with_capacity(group.len());
        let mut notes = Vec::with_capacity(group.len());
        for request in group {
            let end = seq_i64(request.durable + request.batch.len() as u64);
            ids.push(request.id.as_str());
            owners.push(request.host.as_str());
            epochs.push(request.epoch);
            expected.push(seq_i64(request.durable));
            ends.push(end);
            notes.push(payload(&request.id, end));
        }
        let channel = channel(&self.quoted);
        let params: [&(dyn ToSql + Sync); 7] =
            [&ids, &owners, &epochs, &expected, &ends, &notes, &channel];
        let tx = client.transaction().await?;
        let rows = tx.query(&check, &params).await?;
        let mut written = HashSet::with_capacity(rows.len());
        for row in rows {
            written.insert(row.try_get::<_, String>(0)?);
        }
        if written.is_empty() {
            return Ok(written);
        }
        let sink = tx
            .copy_in(&self.sql(
                "COPY {s}.events (session_id, seq, type, time, data) FROM STDIN (FORMAT binary)",
            ))
            .await?;
        let mut sink = std::pin::pin!(sink);
        let mut rows = CopyRows::new();
        for request in group.iter().filter(|r| written.contains(&r.id)) {
            for event in &request.batch {
                rows.push(&request.id, event);
                if rows.buffer.len() >= COPY_CHUNK {
                    sink.send(rows.buffer.split().freeze()).await?;
                }
            }
        }
        sink.send(rows.finish()).await?;
        sink.as_mut().finish().await?;
        tx.commit().await?;
        Ok(written)
    }

    /// The check, the insert and the move of `last_seq` are one statement: the `UPDATE`
    /// locks the session row only when owner, epoch and last seq are the caller's, and the
    /// batch is inserted, and followers notified, only for the row it returns. A batch without
    /// reminder changes is that statement alone, its own transaction (one round trip);
    /// otherwise the statement and the index changes share a transaction.
    #[allow(clippy::too_many_arguments, reason = "the flush transaction's inputs")]
    async fn flush_on(
        &self,
        client: &mut deadpool_postgres::Client,
        id: &str,
        host: &str,
        epoch: i64,
        durable: u64,
        batch: &[RawEvent],
        reminders: &IndexChanges,
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
        let has_reminders = batch.iter().any(|e| e.r#type() == "schedule/change");
        let written = if has_reminders {
            let tx = client.transaction().await?;
            let written = count(tx.query_opt(&write, &params).await?)?;
            if written == batch.len() as u64 {
                reminders.apply(self, &tx, id).await?;
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
    async fn refused(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, events: usize) -> Request {
        let batch = (1..=events as u64)
            .map(|seq| RawEvent::new(seq, "test/n", chrono::DateTime::UNIX_EPOCH, "{}").unwrap())
            .collect();
        Request {
            id: id.to_owned(),
            host: "h".to_owned(),
            epoch: 1,
            durable: 0,
            batch,
            reply: oneshot::channel().0,
        }
    }

    fn waiting(requests: impl IntoIterator<Item = Request>, writing: usize) -> Waiting {
        Waiting {
            queue: requests.into_iter().collect(),
            running: 1,
            writing,
        }
    }

    fn ids(group: &[Request]) -> Vec<&str> {
        group.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn two_writers_take_equal_shares_of_what_waits_and_is_being_written() {
        let mut w = waiting((0..98).map(|i| request(&format!("s{i}"), 100)), 100);
        let first = take_group(&mut w, 2);
        assert_eq!((first.len(), w.writing), (50, 5_100));
        let second = take_group(&mut w, 2);
        assert_eq!((second.len(), w.writing, w.queue.len()), (48, 9_900, 0));
        assert!(take_group(&mut w, 2).is_empty());
    }

    #[test]
    fn a_group_holds_at_least_a_thousand_events_and_at_most_ten_thousand() {
        let mut small = waiting((0..10).map(|i| request(&format!("s{i}"), 10)), 0);
        assert_eq!(take_group(&mut small, 2).len(), 10);
        let mut large = waiting((0..200).map(|i| request(&format!("s{i}"), 100)), 0);
        assert_eq!(take_group(&mut large, 1).len(), 100);
        // A thousand sessions at most, whatever their size.
        let mut many = waiting((0..1_500).map(|i| request(&format!("s{i}"), 1)), 0);
        assert_eq!(take_group(&mut many, 1).len(), 1_000);
        // A flush larger than a group is written alone.
        let mut huge = waiting([request("big", 20_000), request("next", 1)], 0);
        assert_eq!(ids(&take_group(&mut huge, 1)), ["big"]);
        assert_eq!(ids(&take_group(&mut huge, 1)), ["next"]);
    }

    #[test]
    fn a_grouped_event_time_is_the_one_a_single_flush_stores() {
        use chrono::{DateTime, Utc};
        use tokio_postgres::types::{ToSql, Type};
        for text in [
            "1999-12-31T23:59:59.999999500Z",
            "1969-07-20T20:17:40.000000999Z",
            "2026-12-02T14:00:00.123456789Z",
        ] {
            let time: DateTime<Utc> = text.parse().unwrap();
            let mut single = BytesMut::new();
            time.to_sql(&Type::TIMESTAMPTZ, &mut single).unwrap();
            let mut rows = CopyRows::new();
            let start = rows.buffer.len();
            rows.push("s", &RawEvent::new(1, "t", time, "{}").unwrap());
            // Field count, session (4 + 1), seq (4 + 8), type (4 + 1), then the time.
            let at = start + 2 + 5 + 12 + 5;
            assert_eq!(
                &rows.buffer[at..at + 12],
                [&8_i32.to_be_bytes()[..], &single].concat(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_flush_queued_as_the_last_writer_stops_gets_a_writer() {
        let combiner = Combiner::new(1);
        assert!(combiner.enqueue(request("a", 1)));
        let mut writer = Running::new(&combiner);
        let group = writer.next_group().map(|g| ids(&g).join(","));
        assert_eq!(group.as_deref(), Some("a"));
        writer.written(1);
        assert!(writer.next_group().is_none());
        // Another thread queues a flush before the writer is counted out.
        let started = combiner.enqueue(request("b", 1));
        drop(writer);
        let state = lock(&combiner.state);
        assert_eq!((state.queue.len(), started || state.running > 0), (1, true));
    }

    #[test]
    fn two_flushes_of_one_session_never_share_a_group() {
        let mut w = waiting([request("a", 1), request("a", 2), request("b", 1)], 0);
        assert_eq!(ids(&take_group(&mut w, 1)), ["a", "b"]);
        assert_eq!(w.queue.len(), 1);
        assert_eq!(w.queue[0].batch.len(), 2);
    }
}
