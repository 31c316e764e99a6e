//! Flushes of many sessions that wait together are written together: one transaction for
//! the group, each session's ownership check its own, and a batch the server refuses failing
//! alone. A long log is read in two halves at once and checked as one.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of the tests below, where a failure is a test failure"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_postgres::AsyncMessage;
use turnkit_core::{
    AppendError, Clock, PersistenceError, Session, SessionHeader, SessionId, SystemClock,
};
use turnkit_store_pg::{PgOptions, PgSession, PgStore};
use turnkit_testkit::ManualClock;

const TTL: Duration = Duration::from_secs(30);

/// A store whose flushes go through one writer, so flushes queue behind a blocked one.
fn one_writer(url: &str, schema: &str, host: &str) -> PgStore {
    one_writer_on(url, schema, host, Arc::new(SystemClock))
}

fn one_writer_on(url: &str, schema: &str, host: &str, clock: Arc<dyn Clock>) -> PgStore {
    PgStore::connect(
        url,
        clock,
        PgOptions {
            schema: schema.to_owned(),
            host: host.to_owned(),
            lease_ttl: TTL,
            pool_size: 4,
            flush_writers: 1,
            index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
            ..PgOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("connect to the test server: {e}"))
}

/// Polls the server (what `pg_stat_activity` shows has no notification) until `ready`, for
/// at most 20 s.
async fn until(what: &str, mut ready: impl AsyncFnMut() -> bool) {
    for _ in 0..2_000 {
        if ready().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Holds the row of session `blocker` locked from another connection, starts its flush (the
/// store's only writer then waits for the lock inside its statement), and answers the
/// connection holding the lock and the blocked flush.
async fn block_the_writer(
    url: &str,
    schema: &str,
    store: &PgStore,
    blocker: Arc<PgSession>,
) -> (
    tokio_postgres::Client,
    tokio::task::JoinHandle<Result<(), PersistenceError>>,
) {
    let lock = super::client(url).await;
    lock.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM \"{schema}\".sessions WHERE id = 'blocker' FOR UPDATE"
    ))
    .await
    .unwrap();
    blocker.append("test/n", json!({"n": 0})).unwrap();
    let flush = tokio::spawn(async move { blocker.flush().await });
    let watch = super::client(url).await;
    let waiting = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE '%\"{schema}\".sessions%'"
    );
    until("the writer waits for the locked row", async || {
        let row = watch.query_one(&waiting, &[]).await.unwrap();
        row.get::<_, i64>(0) == 1
    })
    .await;
    assert_eq!(store.waiting_flushes(), 0);
    (lock, flush)
}

/// The session whose flush blocks the store's writer (see [`block_the_writer`]).
async fn blocker(store: &PgStore) -> Arc<PgSession> {
    store
        .create_session(SessionHeader::new("blocker"))
        .await
        .unwrap()
}

/// Sessions `s0`, `s1`, … of `store`, each with `events` events `{"s": i, "n": k}` pending.
async fn pending_sessions(store: &PgStore, count: usize, events: usize) -> Vec<Arc<PgSession>> {
    let mut sessions = Vec::new();
    for i in 0..count {
        let session = store
            .create_session(SessionHeader::new(format!("s{i}")))
            .await
            .unwrap();
        for n in 0..events {
            session.append("test/n", json!({"s": i, "n": n})).unwrap();
        }
        sessions.push(session);
    }
    sessions
}

/// Starts the flushes of `sessions` and waits until `expected()` flushes wait for the
/// store's writer; answers their tasks.
async fn queue_flushes(
    store: &PgStore,
    sessions: impl IntoIterator<Item = Arc<PgSession>>,
    expected: impl Fn() -> usize,
) -> Vec<tokio::task::JoinHandle<Result<(), PersistenceError>>> {
    let flushes: Vec<_> = sessions
        .into_iter()
        .map(|session| tokio::spawn(async move { session.flush().await }))
        .collect();
    waiting(store, expected()).await;
    flushes
}

/// Waits (at most 20 s) until `n` flushes wait for the store's writer, on the queue's
/// change notifications.
async fn waiting(store: &PgStore, n: usize) {
    let mut depth = store.waiting_flushes_changes();
    tokio::time::timeout(Duration::from_secs(20), depth.wait_for(|d| *d == n))
        .await
        .unwrap_or_else(|_| panic!("{} flushes wait, not {n}", store.waiting_flushes()))
        .unwrap();
}

/// What each flush answered, errors as their text.
async fn outcomes(
    flushes: Vec<tokio::task::JoinHandle<Result<(), PersistenceError>>>,
) -> Vec<Result<(), String>> {
    let mut outcomes = Vec::new();
    for flush in flushes {
        outcomes.push(flush.await.unwrap().map_err(|e| e.to_string()));
    }
    outcomes
}

/// The notifications of the schema's channel, as they arrive.
async fn listen(
    url: &str,
    schema: &str,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(note) = message {
                let _ = tx.send(note.payload().to_owned());
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN \"harness_{schema}\""))
        .await
        .unwrap();
    (client, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushes_waiting_together_commit_in_one_transaction_each_checked_alone() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("group");
    let a = one_writer(&url, &schema, "host-a");
    let blocker = blocker(&a).await;
    let mut sessions = Vec::new();
    for i in 0..20 {
        let session = a
            .create_session(SessionHeader::new(format!("s{i:02}")))
            .await
            .unwrap();
        // Batches of 1, 2 and 3 events.
        for n in 0..=(i % 3) {
            session.append("test/n", json!([i, n])).unwrap();
        }
        sessions.push(session);
    }
    // A session another host took: its flush in the group is fenced.
    let stale = a.create_session(SessionHeader::new("stale")).await.unwrap();
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET lease_expires = now() - interval '1 second' \
         WHERE id = 'stale'"
    ))
    .await
    .unwrap();
    let b = super::store(&url, &schema, "host-b", TTL);
    let taken = b.open_session(&SessionId::from("stale")).await.unwrap();
    stale.append("test/n", json!({"stale": true})).unwrap();

    let (_listener, mut notes) = listen(&url, &schema).await;
    let (lock, blocked) = block_the_writer(&url, &schema, &a, blocker).await;
    // (The stale session's lease renewal may find the new owner first: then its flush is
    // fenced before it waits.)
    let flushes = queue_flushes(&a, sessions.iter().cloned().chain([stale.clone()]), || {
        if stale.lease().is_lost() { 20 } else { 21 }
    })
    .await;
    lock.batch_execute("ROLLBACK").await.unwrap();

    blocked.await.unwrap().unwrap();
    let mut expected = vec![Ok(()); 20];
    expected.push(Err(
        PersistenceError::Fenced(SessionId::from("stale")).to_string()
    ));
    assert_eq!(outcomes(flushes).await, expected);
    assert!(stale.lease().is_lost());
    assert_eq!(a.waiting_flushes(), 0);

    // The 20 batches share one transaction; the blocker's is another.
    let xacts = sql
        .query_one(
            &format!(
                "SELECT count(DISTINCT xmin::text) FILTER (WHERE session_id <> 'blocker'), \
                        count(DISTINCT xmin::text), count(*) \
                 FROM \"{schema}\".events"
            ),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            xacts.get::<_, i64>(0),
            xacts.get::<_, i64>(1),
            xacts.get::<_, i64>(2)
        ),
        // The blocker, 7 batches of 1, 7 of 2 and 6 of 3.
        (1, 2, 1 + 7 + 7 * 2 + 6 * 3)
    );
    let rows = sql
        .query(
            &format!("SELECT id, last_seq FROM \"{schema}\".sessions ORDER BY id COLLATE \"C\""),
            &[],
        )
        .await
        .unwrap();
    let last: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mut want = vec![("blocker".to_owned(), 1)];
    want.extend((0..20).map(|i| (format!("s{i:02}"), i64::from(i % 3) + 1)));
    want.push(("stale".to_owned(), 0));
    assert_eq!(last, want);
    for (i, session) in sessions.iter().enumerate() {
        assert_eq!(session.durable_len(), i as u64 % 3 + 1);
    }

    // Each written session notified its followers once, with its own last seq; the fenced one
    // did not.
    let mut heard = BTreeSet::new();
    while heard.len() < 21 {
        let note = tokio::time::timeout(Duration::from_secs(20), notes.recv())
            .await
            .expect("a notification within 20 s")
            .unwrap();
        assert!(heard.insert(note.clone()), "{note} heard twice");
    }
    let mut want: BTreeSet<String> = (0..20).map(|i| format!("s{i:02}:{}", i % 3 + 1)).collect();
    want.insert("blocker:1".to_owned());
    assert_eq!(heard, want);

    // Reopened elsewhere, a session reads exactly its own batch.
    drop(sessions);
    let c = super::store(&url, &schema, "host-c", TTL);
    let s05 = c.open_session(&SessionId::from("s05")).await.unwrap();
    let read: Vec<String> = s05
        .raw_events_after(0)
        .iter()
        .map(|e| e.payload().to_owned())
        .collect();
    assert_eq!(read, ["[5,0]", "[5,1]", "[5,2]"]);
    drop(taken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_the_server_refuses_fails_alone_and_its_group_is_written() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("refuse");
    let a = one_writer(&url, &schema, "host-a");
    let blocker = blocker(&a).await;
    let sessions = pending_sessions(&a, 4, 1).await;
    // An operator's rule the server holds this session's batch to: it refuses the batch.
    let bad = a.create_session(SessionHeader::new("bad")).await.unwrap();
    bad.append("test/n", json!({"fine": 1})).unwrap();
    bad.append("test/n", json!({"also": 2})).unwrap();
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "ALTER TABLE \"{schema}\".events ADD CONSTRAINT operator_rule CHECK (session_id <> 'bad')"
    ))
    .await
    .unwrap();

    let (lock, blocked) = block_the_writer(&url, &schema, &a, blocker).await;
    let flushes = queue_flushes(&a, sessions.iter().cloned().chain([bad.clone()]), || 5).await;
    lock.batch_execute("ROLLBACK").await.unwrap();
    blocked.await.unwrap().unwrap();
    let outcomes = outcomes(flushes).await;
    let refused = "i/o error persisting session bad: postgres: ERROR: new row for relation \
                   \"events\" violates check constraint \"operator_rule\"";
    assert_eq!(
        outcomes,
        [Ok(()), Ok(()), Ok(()), Ok(()), Err(refused.to_owned())]
    );
    // The refused batch is still pending, all of it, and refused again; nothing of it is in
    // the database.
    assert_eq!((bad.durable_len(), bad.len()), (0, 2));
    assert_eq!(bad.flush().await.unwrap_err().to_string(), refused);
    let rows = sql
        .query(
            &format!(
                "SELECT session_id, seq FROM \"{schema}\".events \
                 ORDER BY session_id COLLATE \"C\", seq"
            ),
            &[],
        )
        .await
        .unwrap();
    let written: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        written,
        [
            ("blocker".to_owned(), 1),
            ("s0".to_owned(), 1),
            ("s1".to_owned(), 1),
            ("s2".to_owned(), 1),
            ("s3".to_owned(), 1),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_log_read_in_two_halves_is_one_log_and_a_gap_in_either_is_found() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("halves");
    let a = super::store(&url, &schema, "host-a", TTL);
    let id = SessionId::from("long");
    let session = a.create_session(SessionHeader::new("long")).await.unwrap();
    for n in 1..=20_001_u64 {
        let r#type = if n % 2 == 0 { "test/even" } else { "test/odd" };
        session.append(r#type, json!({ "n": n })).unwrap();
    }
    session.flush().await.unwrap();
    drop(session);

    let b = super::store(&url, &schema, "host-b", TTL);
    let reopened = b.open_session(&id).await.unwrap();
    let events = reopened.raw_events_after(0);
    assert_eq!(events.len(), 20_001);
    for (event, n) in events.iter().zip(1_u64..) {
        let r#type = if n % 2 == 0 { "test/even" } else { "test/odd" };
        assert_eq!(
            (event.seq(), event.r#type(), event.payload()),
            (n, r#type, format!(r#"{{"n":{n}}}"#).as_str())
        );
    }
    drop(reopened);

    // The halves are seqs 1..=10000 and 10001..=20001.
    let sql = super::client(&url).await;
    let reset = format!("UPDATE \"{schema}\".sessions SET owner = NULL WHERE id = 'long'");
    let place = format!("postgres \"{schema}\".events session long");
    sql.batch_execute(&format!(
        "DELETE FROM \"{schema}\".events WHERE session_id = 'long' AND seq = 15000; {reset}"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(b.open_session(&id).await.unwrap_err()),
        (
            place.clone(),
            15_000,
            "seq 15001 where 15000 was expected".to_owned()
        )
    );
    sql.batch_execute(&format!(
        "DELETE FROM \"{schema}\".events WHERE session_id = 'long' AND seq = 7; {reset}"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(b.open_session(&id).await.unwrap_err()),
        (place.clone(), 7, "seq 8 where 7 was expected".to_owned())
    );
    // The last event missing: the second half is one short.
    sql.batch_execute(&format!(
        "INSERT INTO \"{schema}\".events SELECT session_id, s.seq, type, time, data \
         FROM \"{schema}\".events, (VALUES (7), (15000)) AS s(seq) \
         WHERE session_id = 'long' AND events.seq = 1; \
         DELETE FROM \"{schema}\".events WHERE session_id = 'long' AND seq = 20001; {reset}"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(b.open_session(&id).await.unwrap_err()),
        (
            place,
            20_001,
            "20000 events, but the session row says 20001".to_owned()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_log_opens_on_a_store_of_one_pooled_connection() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("onepool");
    // Exactly the length from which a log is read in two halves, under an id the `COPY`
    // literal has to escape.
    let key = r"it's a \long\ 'one'";
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new(key)).await.unwrap();
    for n in 1..=20_000_u64 {
        session.append("test/n", json!(n)).unwrap();
    }
    session.flush().await.unwrap();
    drop(session);

    let b = PgStore::connect(
        &url,
        Arc::new(SystemClock),
        PgOptions {
            schema: schema.clone(),
            host: "host-b".to_owned(),
            lease_ttl: TTL,
            pool_size: 1,
            flush_writers: 1,
            index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
            ..PgOptions::default()
        },
    )
    .unwrap();
    // The first half's snapshot holds the only connection: the second half must not wait
    // for another.
    let opened = tokio::time::timeout(
        Duration::from_secs(60),
        b.open_session(&SessionId::from(key)),
    )
    .await
    .expect("the open finishes within 60 s")
    .unwrap();
    let events = opened.raw_events_after(0);
    let read: Vec<(u64, String)> = events
        .iter()
        .map(|e| (e.seq(), e.payload().to_owned()))
        .collect();
    let want: Vec<(u64, String)> = (1..=20_000_u64).map(|n| (n, n.to_string())).collect();
    assert_eq!(read, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_connection_is_killed_mid_copy_writes_nothing_and_is_flushed_again() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("killcopy");
    let a = one_writer(&url, &schema, "host-a");
    let blocker = blocker(&a).await;
    let sessions = pending_sessions(&a, 3, 2).await;
    // An uncommitted row with the key of s0's first event: the group's COPY waits for it.
    let holder = super::client(&url).await;
    holder
        .batch_execute(&format!(
            "BEGIN; INSERT INTO \"{schema}\".events (session_id, seq, type, time, data) \
             VALUES ('s0', 1, 'test/held', now(), '{{}}')"
        ))
        .await
        .unwrap();
    let (lock, blocked) = block_the_writer(&url, &schema, &a, blocker).await;
    let flushes = queue_flushes(&a, sessions.clone(), || 3).await;
    lock.batch_execute("ROLLBACK").await.unwrap();
    blocked.await.unwrap().unwrap();
    let watch = super::client(&url).await;
    let copying = format!(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE 'COPY \"{schema}\".events%'"
    );
    let mut pid = None;
    until("the group's COPY waits for the held key", async || {
        pid = watch
            .query_opt(&copying, &[])
            .await
            .unwrap()
            .map(|r| r.get::<_, i32>(0));
        pid.is_some()
    })
    .await;
    watch
        .execute("SELECT pg_terminate_backend($1)", &[&pid.unwrap()])
        .await
        .unwrap();
    let outcomes = outcomes(flushes).await;
    holder.batch_execute("ROLLBACK").await.unwrap();
    // Each says why: the server's word, not what a retry on the dead connection met.
    let killed = (0..3)
        .map(|i| {
            Err(format!(
                "i/o error persisting session s{i}: postgres: FATAL: terminating connection due \
                 to administrator command"
            ))
        })
        .collect::<Vec<_>>();
    assert_eq!(outcomes, killed);
    // Nothing of the group is in the database; every batch is still pending.
    let sql = super::client(&url).await;
    let query = format!(
        "SELECT (SELECT count(*) FROM \"{schema}\".events WHERE session_id <> 'blocker'), \
                (SELECT sum(last_seq) FROM \"{schema}\".sessions WHERE id <> 'blocker')::bigint"
    );
    let count = async || {
        let row = sql.query_one(&query, &[]).await.unwrap();
        (row.get::<_, i64>(0), row.get::<_, i64>(1))
    };
    assert_eq!(count().await, (0, 0));
    for session in &sessions {
        assert_eq!((session.durable_len(), session.len()), (0, 2));
    }
    // The next flushes write them.
    for session in &sessions {
        session.flush().await.unwrap();
        assert_eq!(session.durable_len(), 2);
    }
    assert_eq!(count().await, (6, 6));
}

/// The payloads of a session's log, as a handle holds them.
fn payloads(session: &PgSession) -> Vec<String> {
    session
        .raw_events_after(0)
        .iter()
        .map(|e| e.payload().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_of_two_hosts_while_leases_move_lose_nothing_and_answer_truly() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("contend");
    let hosts = [
        super::store(&url, &schema, "host-a", TTL),
        super::store(&url, &schema, "host-b", TTL),
    ];
    let sql = Arc::new(super::client(&url).await);
    const SESSIONS: usize = 24;
    let mut current = Vec::new();
    let mut on = [0_usize; SESSIONS];
    for i in 0..SESSIONS {
        current.push(
            hosts[i % 2]
                .create_session(SessionHeader::new(format!("s{i:02}")))
                .await
                .unwrap(),
        );
        on[i] = i % 2;
    }
    // What each session's log holds: every batch answered `Ok`, nothing else.
    let mut acked: Vec<Vec<String>> = vec![Vec::new(); SESSIONS];
    for round in 0..12_usize {
        let mut flushes = Vec::new();
        let mut moves = Vec::new();
        for (i, session) in current.iter().enumerate() {
            let batch: Vec<String> = (0..=(i + round) % 4)
                .map(|k| json!({"s": i, "r": round, "k": k}).to_string())
                .collect();
            for payload in &batch {
                let value: serde_json::Value = serde_json::from_str(payload).unwrap();
                session.append("test/n", value).unwrap();
            }
            let handle = Arc::clone(session);
            flushes.push((batch, tokio::spawn(async move { handle.flush().await })));
            // A third of the sessions move to the other host while their flush runs.
            if (i + round) % 3 == 0 {
                let sql = Arc::clone(&sql);
                let other = hosts[1 - on[i]].clone();
                let table = format!("\"{schema}\".sessions");
                moves.push((
                    i,
                    tokio::spawn(async move {
                        let id = format!("s{i:02}");
                        sql.execute(
                            &format!(
                                "UPDATE {table} SET lease_expires = now() - interval '1 second' \
                                 WHERE id = $1"
                            ),
                            &[&id],
                        )
                        .await
                        .unwrap();
                        other.open_session(&SessionId::from(id)).await.unwrap()
                    }),
                ));
            }
        }
        let mut outcomes = Vec::new();
        for (i, (batch, flush)) in flushes.into_iter().enumerate() {
            let outcome = flush.await.unwrap();
            match &outcome {
                Ok(()) => acked[i].extend(batch),
                Err(PersistenceError::Fenced(id)) => {
                    assert_eq!(id.as_str(), format!("s{i:02}"));
                }
                Err(other) => panic!("round {round}, s{i:02}: {other}"),
            }
            outcomes.push(outcome.is_ok());
        }
        for (i, opened) in moves {
            let opened = opened.await.unwrap();
            // The new owner reads exactly the batches answered `Ok`.
            assert_eq!(payloads(&opened), acked[i], "round {round}, s{i:02}");
            assert_eq!(opened.durable_len(), acked[i].len() as u64);
            current[i] = opened;
            on[i] = 1 - on[i];
        }
        // A session that did not move was never fenced.
        for (i, ok) in outcomes.iter().enumerate() {
            assert!(*ok || (i + round) % 3 == 0, "round {round}, s{i:02} fenced");
        }
    }
    // The database holds exactly the batches answered `Ok`, in order, once each.
    for (i, want) in acked.iter().enumerate() {
        let rows = sql
            .query(
                &format!(
                    "SELECT seq, data::text FROM \"{schema}\".events WHERE session_id = $1 \
                     ORDER BY seq"
                ),
                &[&format!("s{i:02}")],
            )
            .await
            .unwrap();
        let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let want: Vec<(i64, String)> = (1_i64..).zip(want.iter().cloned()).collect();
        assert_eq!(got, want, "s{i:02}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_log_read_while_its_owner_flushes_is_a_whole_prefix() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("readwrite");
    let a = super::store(&url, &schema, "host-a", TTL);
    let id = SessionId::from("busy");
    let session = a.create_session(SessionHeader::new("busy")).await.unwrap();
    for n in 1..=19_999_u64 {
        session.append("test/n", json!(n)).unwrap();
    }
    session.flush().await.unwrap();
    // From 19,999 (one read) over 20,000 (the first split) on: batches of 7 while another
    // host reads without a lease. Each flush waits for one more read to end, so the next
    // read runs while it commits, however loaded the machine.
    let reads = Arc::new(tokio::sync::Semaphore::new(0));
    let writer = tokio::spawn({
        let session = Arc::clone(&session);
        let reads = Arc::clone(&reads);
        async move {
            let mut flushed = vec![19_999];
            for n in 20_000..20_000 + 7 * 60_u64 {
                session.append("test/n", json!(n)).unwrap();
                if n == 20_000 || n % 7 == 0 {
                    reads.acquire().await.unwrap().forget();
                    session.flush().await.unwrap();
                    flushed.push(session.durable_len() as usize);
                }
            }
            session.flush().await.unwrap();
            flushed.push(session.durable_len() as usize);
            flushed
        }
    });
    let b = super::store(&url, &schema, "host-b", TTL);
    let mut lengths = BTreeSet::new();
    while !writer.is_finished() {
        let events = b.read_after(&id, 0).await.unwrap();
        for (event, n) in events.iter().zip(1_u64..) {
            assert_eq!((event.seq(), event.payload()), (n, n.to_string().as_str()));
        }
        lengths.insert(events.len());
        reads.add_permits(1);
    }
    let flushed: BTreeSet<usize> = writer.await.unwrap().into_iter().collect();
    let events = b.read_after(&id, 0).await.unwrap();
    assert_eq!(events.len(), 19_999 + 7 * 60);
    // Every read ended where a flush of the owner did.
    assert!(
        lengths.is_subset(&flushed),
        "{lengths:?} not in {flushed:?}"
    );
    assert!(lengths.len() > 1, "{lengths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_past_the_statement_timeout_is_written_flush_by_flush() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("timeout");
    // The server cancels any statement of the store's connections after 2 s.
    let sep = if url.contains('?') { '&' } else { '?' };
    let timed = format!("{url}{sep}options=-c%20statement_timeout%3D2000");
    let a = one_writer(&timed, &schema, "host-a");
    let blocker = blocker(&a).await;
    let sessions = pending_sessions(&a, 3, 1).await;
    let held = super::client(&url).await;
    held.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM \"{schema}\".sessions WHERE id = 's0' FOR UPDATE"
    ))
    .await
    .unwrap();
    let (lock, blocked) = block_the_writer(&url, &schema, &a, blocker).await;
    let flushes = queue_flushes(&a, sessions.clone(), || 3).await;
    let cancelled = |id: &str| {
        format!(
            "i/o error persisting session {id}: postgres: ERROR: canceling statement due to \
             statement timeout"
        )
    };
    // The blocker's flush times out; the group of the three waits for s0's row, times out
    // too, and each flush is then written alone: s0's times out again.
    assert_eq!(
        blocked.await.unwrap().map_err(|e| e.to_string()),
        Err(cancelled("blocker"))
    );
    assert_eq!(
        outcomes(flushes).await,
        [Err(cancelled("s0")), Ok(()), Ok(())]
    );
    let durable: Vec<u64> = sessions.iter().map(|s| s.durable_len()).collect();
    assert_eq!(durable, [0, 1, 1]);
    // Once the row is free, the pending batches are written.
    held.batch_execute("ROLLBACK").await.unwrap();
    lock.batch_execute("ROLLBACK").await.unwrap();
    sessions[0].flush().await.unwrap();
    assert_eq!(sessions[0].durable_len(), 1);
    let sql = super::client(&url).await;
    let row = sql
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".events WHERE session_id LIKE 's_'"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_flush_whose_caller_stops_waiting_still_counts() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("gaveup");
    let a = one_writer(&url, &schema, "host-a");
    let blocker = blocker(&a).await;
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!(1)).unwrap();
    let (lock, blocked) = block_the_writer(&url, &schema, &a, blocker).await;
    let flush = tokio::spawn({
        let session = Arc::clone(&session);
        async move { session.flush().await }
    });
    waiting(&a, 1).await;
    flush.abort();
    assert!(flush.await.unwrap_err().is_cancelled());
    lock.batch_execute("ROLLBACK").await.unwrap();
    blocked.await.unwrap().unwrap();
    // The flush was written all the same, and the handle knows it: the next batch follows.
    tokio::time::timeout(Duration::from_secs(20), session.durable_reaches(1))
        .await
        .expect("the abandoned flush is durable");
    session.append("test/n", json!(2)).unwrap();
    session.flush().await.unwrap();
    assert_eq!(session.durable_len(), 2);
    drop(session);
    let b = super::store(&url, &schema, "host-b", TTL);
    let reopened = b.open_session(&SessionId::from("s")).await.unwrap();
    assert_eq!(payloads(&reopened), ["1", "2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_type_with_a_nul_character_is_refused_at_append_and_the_log_goes_on() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("nul");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!(1)).unwrap();
    assert_eq!(
        session.append("test/\0nul", json!(2)).unwrap_err(),
        AppendError::Rejected(
            "event type \"test/\\0nul\" holds a NUL character, which PostgreSQL text cannot \
             store"
                .to_owned()
        )
    );
    session.append("test/n", json!(3)).unwrap();
    session.flush().await.unwrap();
    drop(session);
    let b = super::store(&url, &schema, "host-b", TTL);
    let reopened = b.open_session(&SessionId::from("s")).await.unwrap();
    let read: Vec<(u64, String, String)> = reopened
        .raw_events_after(0)
        .iter()
        .map(|e| (e.seq(), e.r#type().to_owned(), e.payload().to_owned()))
        .collect();
    assert_eq!(
        read,
        [
            (1, "test/n".to_owned(), "1".to_owned()),
            (2, "test/n".to_owned(), "3".to_owned())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_postgresql_cannot_store_is_refused_at_append_and_its_earliest_is_stored() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("ancient");
    let clock = ManualClock::at_default();
    let a = one_writer_on(&url, &schema, "host-a", Arc::new(clock.clone()));
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    // `SELECT extract(epoch FROM '4714-11-24 00:00:00+00 BC'::timestamptz)`.
    let earliest = chrono::DateTime::from_timestamp(-210_866_803_200, 0).unwrap();
    clock.set(earliest - chrono::Duration::milliseconds(1));
    assert_eq!(
        session.append("test/n", json!(1)).unwrap_err(),
        AppendError::Rejected(
            "event time -4713-11-23T23:59:59.999+00:00 is before 4713 BC, the earliest \
             PostgreSQL stores"
                .to_owned()
        )
    );
    clock.set(earliest);
    session.append("test/n", json!(2)).unwrap();
    session.flush().await.unwrap();
    drop(session);
    let b = super::store(&url, &schema, "host-b", TTL);
    let reopened = b.open_session(&SessionId::from("s")).await.unwrap();
    let read: Vec<(u64, chrono::DateTime<chrono::Utc>, String)> = reopened
        .raw_events_after(0)
        .iter()
        .map(|e| (e.seq(), e.time(), e.payload().to_owned()))
        .collect();
    assert_eq!(read, [(1, earliest, "2".to_owned())]);
}
