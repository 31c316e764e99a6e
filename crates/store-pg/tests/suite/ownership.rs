//! Leases and fencing: a stale owner cannot write, ownership passes on release or expiry, and
//! the schema is migrated once.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{PersistenceError, Session, SessionHeader, SessionId, SessionStore, StoreError};

const TTL: Duration = Duration::from_secs(30);

fn payloads(session: &dyn Session) -> Vec<(u64, String)> {
    session
        .events()
        .iter()
        .map(|e| (e.seq, e.data.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_owner_is_fenced_and_writes_nothing() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("fence");
    let a = super::store(&url, &schema, "host-a", TTL);
    let b = super::store(&url, &schema, "host-b", TTL);
    let id = SessionId::from("s");
    let first = a.create_session(SessionHeader::new("s")).await.unwrap();
    first.append("test/n", json!({"n": 1})).unwrap();
    first.append("test/n", json!({"n": 2})).unwrap();
    first.flush().await.unwrap();
    assert_eq!(first.lease().epoch(), 1);

    // While A's lease lives, B is refused.
    let refused = b.open_session(&id).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "session s is owned by host host-a; retry after its lease expires"
    );

    // A is paused past its lease: the lease expires and B takes the session.
    let sql = super::client(&url).await;
    sql.execute(
        &format!("UPDATE \"{schema}\".sessions SET lease_expires = now() - interval '1 second'"),
        &[],
    )
    .await
    .unwrap();
    let second = b.open_session(&id).await.unwrap();
    assert_eq!(second.lease().epoch(), 2);

    // A wakes up and writes: fenced, nothing written.
    first.append("test/n", json!({"n": 99})).unwrap();
    let fenced = first.flush().await.unwrap_err();
    assert_eq!(fenced, PersistenceError::Fenced(id.clone()));
    assert_eq!(
        fenced.to_string(),
        "session s: this host no longer owns the session; stop its agents and jobs"
    );
    assert!(first.lease().is_lost());
    first.lease().lost().await;

    second.append("test/n", json!({"n": 3})).unwrap();
    second.flush().await.unwrap();
    drop(first);
    drop(second);
    let c = super::store(&url, &schema, "host-c", TTL);
    let reopened = c.open_session(&id).await.unwrap();
    assert_eq!(
        payloads(&*reopened),
        [
            (1, r#"{"n":1}"#.to_owned()),
            (2, r#"{"n":2}"#.to_owned()),
            (3, r#"{"n":3}"#.to_owned())
        ]
    );
    assert_eq!(reopened.lease().epoch(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_lease_is_signalled_as_lost_by_the_renewal() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("lost");
    // Renewal every 100 ms.
    let a = super::store(&url, &schema, "host-a", Duration::from_millis(300));
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    let sql = super::client(&url).await;
    sql.execute(
        &format!("UPDATE \"{schema}\".sessions SET owner = 'intruder', epoch = epoch + 1"),
        &[],
    )
    .await
    .unwrap();
    // A guard against a hang, not a synchronisation: the signal comes on the next renewal.
    tokio::time::timeout(Duration::from_secs(20), session.lease().lost())
        .await
        .unwrap();
    session.append("test/n", json!({"n": 1})).unwrap();
    assert_eq!(
        session.flush().await.unwrap_err(),
        PersistenceError::Fenced(SessionId::from("s"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_ownership_passes_at_once_and_a_live_lease_is_renewed() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("release");
    let a = super::store(&url, &schema, "host-a", Duration::from_millis(600));
    let b = super::store(&url, &schema, "host-b", TTL);
    let session = a.create(SessionHeader::new("s")).unwrap();
    // Renewals keep the lease well past its TTL (observed on the real clock the lease uses).
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(matches!(
            b.open(&SessionId::from("s")),
            Err(StoreError::Owned { .. })
        ));
    }
    session.flush().await.unwrap();
    drop(session);
    let taken = b.open(&SessionId::from("s")).unwrap();
    assert_eq!(taken.len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_recorded_and_applied_once() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("migrate");
    let a = super::store(&url, &schema, "host-a", TTL);
    let b = super::store(&url, &schema, "host-b", TTL);
    let want = vec![
        (1, "sessions and events".to_owned()),
        (2, "due reminders".to_owned()),
        (3, "events without foreign key".to_owned()),
    ];
    assert_eq!(a.applied_migrations().await.unwrap(), want);
    assert_eq!(b.applied_migrations().await.unwrap(), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_have_only_their_primary_key() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("constraints");
    let a = super::store(&url, &schema, "host-a", TTL);
    a.create_session(SessionHeader::new("s")).await.unwrap();
    let sql = super::client(&url).await;
    let table = format!("\"{schema}\".events");
    let constraints: Vec<(String, String)> = sql
        .query(
            "SELECT conname::text, contype::text FROM pg_constraint \
             WHERE conrelid = $1::text::regclass ORDER BY conname",
            &[&table],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(constraints, [("events_pkey".to_owned(), "p".to_owned())]);
    let indexes: Vec<String> = sql
        .query(
            "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = $1::text::regclass",
            &[&table],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(indexes, ["events_pkey".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_changes_keep_the_due_reminder_index_in_the_flush() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("index");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    let sql = super::client(&url).await;
    session.append("schedule/change", json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"check logs","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z"}})).unwrap();
    session.append("schedule/change", json!({"version":1,"operation":"create","schedule":{"id":"schedule-2","kind":"every","prompt":"check metrics","everySeconds":300,"scheduledAt":"2026-08-05T12:05:00.000Z"}})).unwrap();
    // Not flushed: not in the index.
    assert_eq!(rows(&sql, &schema).await, []);
    session.flush().await.unwrap();
    assert_eq!(
        rows(&sql, &schema).await,
        [
            ("schedule-1".to_owned(), "2026-08-05T12:00:30".to_owned()),
            ("schedule-2".to_owned(), "2026-08-05T12:05:00".to_owned())
        ]
    );
    session
        .append(
            "schedule/change",
            json!({"version":1,"operation":"dispatch","id":"schedule-1"}),
        )
        .unwrap();
    session.append("schedule/change", json!({"version":1,"operation":"dispatch","id":"schedule-2","acceptedAt":"2026-08-05T12:16:00.000Z"})).unwrap();
    session.flush().await.unwrap();
    assert_eq!(
        rows(&sql, &schema).await,
        [("schedule-2".to_owned(), "2026-08-05T12:20:00".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_reminder_is_indexed_at_its_next_occurrence_and_moved_by_its_dispatch() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("cron");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    let sql = super::client(&url).await;
    // Weekdays at 09:00 in Paris (07:00Z in summer), due Thursday 2026-08-06.
    session.append("schedule/change", json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"cron","prompt":"standup","cron":"0 9 * * 1-5","timeZone":"Europe/Paris","scheduledAt":"2026-08-06T07:00:00.000Z"}})).unwrap();
    session.flush().await.unwrap();
    assert_eq!(
        rows(&sql, &schema).await,
        [("schedule-1".to_owned(), "2026-08-06T07:00:00".to_owned())]
    );
    // Decided late on Friday (after downtime): latest-only, the row moves to Monday.
    session.append("schedule/change", json!({"version":1,"operation":"dispatch","id":"schedule-1","acceptedAt":"2026-08-07T18:00:00.000Z"})).unwrap();
    session.flush().await.unwrap();
    assert_eq!(
        rows(&sql, &schema).await,
        [("schedule-1".to_owned(), "2026-08-10T07:00:00".to_owned())]
    );
    session
        .append(
            "schedule/change",
            json!({"version":1,"operation":"delete","id":"schedule-1"}),
        )
        .unwrap();
    session.flush().await.unwrap();
    assert_eq!(rows(&sql, &schema).await, []);
}

async fn rows(sql: &tokio_postgres::Client, schema: &str) -> Vec<(String, String)> {
    let q = format!(
        "SELECT schedule_id, to_char(due AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') \
         FROM \"{schema}\".reminders ORDER BY schedule_id"
    );
    sql.query(&q, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect()
}
