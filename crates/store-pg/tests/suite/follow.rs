//! Followers: a session's new events, seen from another host as they commit, in order and
//! exactly once, through a dropped `LISTEN` connection.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of the tests below, where a failure is a test failure"
)]

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{RawEvent, Session, SessionHeader, SessionId, StoreError};
use turnkit_store_pg::{FollowOptions, Follower, PgSession, PgStore};

const TTL: Duration = Duration::from_secs(30);

/// No re-reading on the timer during a test: only notifications and reconnects deliver.
fn no_timer() -> FollowOptions {
    FollowOptions {
        poll_interval: Duration::from_secs(3600),
        reconnect_delay: Duration::from_millis(300),
        buffer: 4,
    }
}

/// A fresh schema, a writing host (`host-a`) with session `s` open, and a reading host
/// (`host-b`).
async fn two_hosts(url: &str, tag: &str) -> (String, PgStore, PgStore, Arc<PgSession>) {
    let schema = super::fresh_schema(tag);
    let writer = super::store(url, &schema, "host-a", TTL);
    let reader = super::store(url, &schema, "host-b", TTL);
    let session = writer
        .create_session(SessionHeader::new("s"))
        .await
        .unwrap();
    (schema, writer, reader, session)
}

async fn write(session: &PgSession, from: u64, to: u64) {
    for n in from..=to {
        session.append("test/n", json!({ "n": n })).unwrap();
    }
    session.flush().await.unwrap();
}

/// The next `count` events as `(seq, payload)`; a guard against a hang, not a
/// synchronisation.
async fn take(follower: &mut Follower, count: usize) -> Vec<(u64, String)> {
    let mut got = Vec::new();
    while got.len() < count {
        let event: RawEvent = tokio::time::timeout(Duration::from_secs(20), follower.next())
            .await
            .unwrap_or_else(|_| panic!("no event within 20 s after {got:?}"))
            .unwrap_or_else(|| panic!("the follower ended after {got:?}"))
            .unwrap();
        got.push((event.seq(), event.payload().to_owned()));
    }
    got
}

/// The pids of the backends whose last statement was `listen`.
async fn listeners(sql: &tokio_postgres::Client, listen: &str) -> Vec<i32> {
    sql.query(
        "SELECT pid FROM pg_stat_activity WHERE query = $1",
        &[&listen],
    )
    .await
    .unwrap()
    .iter()
    .map(|row| row.get::<_, i32>(0))
    .collect()
}

/// Commits event 2 of session `s` by hand, as a writer that does not notify would.
async fn commit_without_notification(url: &str, schema: &str) {
    let sql = super::client(url).await;
    sql.batch_execute(&format!(
        "BEGIN; \
         INSERT INTO \"{schema}\".events (session_id, seq, type, time, data) \
         VALUES ('s', 2, 'test/n', now(), '{{\"n\":2}}'); \
         UPDATE \"{schema}\".sessions SET last_seq = 2 WHERE id = 's'; \
         COMMIT;"
    ))
    .await
    .unwrap();
}

fn expected(from: u64, to: u64) -> Vec<(u64, String)> {
    (from..=to).map(|n| (n, format!("{{\"n\":{n}}}"))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_another_hosts_commits_in_order_exactly_once() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (_schema, writer, reader, session) = two_hosts(&url, "follow").await;
    // Another session of the schema: its commits are not the follower's.
    let other = writer
        .create_session(SessionHeader::new("other"))
        .await
        .unwrap();
    let mut follower = reader
        .subscribe_with(&SessionId::from("s"), 0, no_timer())
        .await
        .unwrap();
    write(&session, 1, 3).await;
    assert_eq!(take(&mut follower, 3).await, expected(1, 3));
    write(&other, 1, 2).await;
    // A batch larger than the follower's buffer and than one notification's worth.
    write(&session, 4, 20).await;
    write(&session, 21, 21).await;
    // Each event once: after 21 comes 22, not a repeat.
    assert_eq!(take(&mut follower, 18).await, expected(4, 21));
    write(&session, 22, 22).await;
    assert_eq!(take(&mut follower, 1).await, expected(22, 22));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_committed_before_subscribe_come_first() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (_schema, _writer, reader, session) = two_hosts(&url, "backlog").await;
    write(&session, 1, 5).await;
    let mut follower = reader
        .subscribe_with(&SessionId::from("s"), 2, no_timer())
        .await
        .unwrap();
    assert_eq!(take(&mut follower, 3).await, expected(3, 5));
    write(&session, 6, 7).await;
    assert_eq!(take(&mut follower, 2).await, expected(6, 7));

    match reader.subscribe(&SessionId::from("nope"), 0).await {
        Err(StoreError::NotFound(id)) => assert_eq!(id, SessionId::from("nope")),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_catches_up_after_its_listen_connection_is_killed() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (schema, _writer, reader, session) = two_hosts(&url, "relisten").await;
    let mut follower = reader
        .subscribe_with(&SessionId::from("s"), 0, no_timer())
        .await
        .unwrap();
    write(&session, 1, 2).await;
    assert_eq!(take(&mut follower, 2).await, expected(1, 2));

    // The follower's LISTEN backend, found by its last statement.
    let sql = super::client(&url).await;
    let listen = format!("LISTEN \"harness_{schema}\"");
    let old = listeners(&sql, &listen).await;
    assert_eq!(old.len(), 1, "one listening backend: {old:?}");
    let killed: bool = sql
        .query_one("SELECT pg_terminate_backend($1)", &[&old[0]])
        .await
        .unwrap()
        .get(0);
    assert!(killed);
    // Committed while the follower has no LISTEN connection (it waits 300 ms to reconnect):
    // no notification reaches it; the re-read after the reconnect delivers them.
    write(&session, 3, 5).await;
    write(&session, 6, 6).await;
    assert_eq!(take(&mut follower, 4).await, expected(3, 6));
    let new = listeners(&sql, &listen).await;
    assert_eq!(new.len(), 1, "listening again: {new:?}");
    assert!(new != old, "a new backend listens");
    // Notifications work on the new connection.
    write(&session, 7, 7).await;
    assert_eq!(take(&mut follower, 1).await, expected(7, 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slow_timer_delivers_a_commit_that_sent_no_notification() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (schema, _writer, reader, session) = two_hosts(&url, "timer").await;
    let mut follower = reader
        .subscribe_with(
            &SessionId::from("s"),
            0,
            FollowOptions {
                poll_interval: Duration::from_millis(200),
                ..no_timer()
            },
        )
        .await
        .unwrap();
    // Once this arrives the follower has caught up and listens.
    write(&session, 1, 1).await;
    assert_eq!(take(&mut follower, 1).await, expected(1, 1));
    commit_without_notification(&url, &schema).await;
    assert_eq!(take(&mut follower, 1).await, expected(2, 2));
}

/// Every session of a schema notifies the same channel: a steady stream of other sessions'
/// notifications must not keep putting the slow timer off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sessions_notifications_do_not_hold_back_the_slow_timer() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (schema, writer, reader, session) = two_hosts(&url, "timer_busy").await;
    let other = writer
        .create_session(SessionHeader::new("t"))
        .await
        .unwrap();
    let mut follower = reader
        .subscribe_with(
            &SessionId::from("s"),
            0,
            FollowOptions {
                poll_interval: Duration::from_millis(300),
                ..no_timer()
            },
        )
        .await
        .unwrap();
    write(&session, 1, 1).await;
    assert_eq!(take(&mut follower, 1).await, expected(1, 1));
    // Session t flushes (and notifies) every 50 ms, far more often than the timer's period.
    let stop = tokio_util::sync::CancellationToken::new();
    let noise = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                n += 1;
                write(&other, n, n).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    commit_without_notification(&url, &schema).await;
    let got = take(&mut follower, 1).await;
    stop.cancel();
    noise.await.unwrap();
    assert_eq!(got, expected(2, 2));
}

/// A consumer that stops reading while the schema's channel carries tens of thousands of
/// notifications (other sessions' flushes and plain `pg_notify`s, repeated, stale and empty
/// ones naming its own session) gets, once it reads again, exactly its session's events, in
/// order, once. (That the follower holds one pending re-read, not the notifications, is the
/// unit test of `Wake` in the crate.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_consumer_through_a_flood_of_notifications_gets_each_event_once() {
    let Some(url) = super::server_url() else {
        return;
    };
    let (schema, writer, reader, session) = two_hosts(&url, "flood").await;
    let other = writer
        .create_session(SessionHeader::new("t"))
        .await
        .unwrap();
    let mut follower = reader
        .subscribe_with(&SessionId::from("s"), 0, no_timer())
        .await
        .unwrap();
    // More events than the follower's buffer (4): its re-read waits for the consumer.
    write(&session, 1, 10).await;
    let sql = super::client(&url).await;
    let channel = format!("harness_{schema}");
    for round in 0..5_u64 {
        let from = i32::try_from(round * 4_000 + 1).unwrap();
        let to = from + 3_999;
        // One transaction of 4,000 distinct payloads: the server delivers each of them.
        sql.execute(
            "SELECT pg_notify($1, 't:' || g) FROM generate_series($2::int, $3::int) AS g",
            &[&channel, &from, &to],
        )
        .await
        .unwrap();
        // The followed session's id with seqs already delivered and far ahead, and empty.
        sql.execute(
            "SELECT pg_notify($1, 's:' || g) FROM generate_series(1, 1000) AS g",
            &[&channel],
        )
        .await
        .unwrap();
        sql.execute("SELECT pg_notify($1, '')", &[&channel])
            .await
            .unwrap();
        write(&other, round * 2 + 1, round * 2 + 2).await;
        write(&session, 11 + round, 11 + round).await;
    }
    assert_eq!(take(&mut follower, 15).await, expected(1, 15));
    // Nothing repeated: after 15 comes 16.
    write(&session, 16, 16).await;
    assert_eq!(take(&mut follower, 1).await, expected(16, 16));
}
