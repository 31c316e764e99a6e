//! Replay and the flush statement at their edges: ids that need quoting, payloads in other
//! JSON forms, a corrupt log (rows missing or beyond `last_seq`), a durable seq that moved, and
//! a fenced flush with reminder changes.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{PersistenceError, Session, SessionHeader, SessionId};

const TTL: Duration = Duration::from_secs(30);

fn raw(session: &dyn Session) -> Vec<(u64, String, String)> {
    session
        .raw_events_after(0)
        .iter()
        .map(|e| (e.seq(), e.r#type().to_owned(), e.payload().to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_with_quotes_and_backslashes_replays_its_own_log() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("quote");
    let a = super::store(&url, &schema, "host-a", TTL);
    let odd = r#"it's a \'quoted\' "id" \\"#;
    for (id, n) in [(odd, 1), ("it", 2), ("it's a ", 3)] {
        let session = a.create_session(SessionHeader::new(id)).await.unwrap();
        session.append("test/n", json!({ "n": n })).unwrap();
        session.flush().await.unwrap();
    }
    let b = super::store(&url, &schema, "host-b", TTL);
    let reopened = b.open_session(&SessionId::from(odd)).await.unwrap();
    assert_eq!(
        raw(&*reopened),
        [(1, "test/n".to_owned(), r#"{"n":1}"#.to_owned())]
    );
    assert_eq!(reopened.header().id.as_str(), odd);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_written_in_other_json_forms_replay_as_raw_event_new_reads_them() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("forms");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!({"n": 1})).unwrap();
    session.flush().await.unwrap();
    drop(session);
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "INSERT INTO \"{schema}\".events (session_id, seq, type, time, data) VALUES \
         ('s', 2, 'test/spaced', now(), ' {{ \"a\" : [1, 2] }} '), \
         ('s', 3, 'test/escaped', now(), '{{\"s\":\"\\u00e9\\n\"}}'); \
         UPDATE \"{schema}\".sessions SET last_seq = 3 WHERE id = 's';"
    ))
    .await
    .unwrap();
    let reopened = a.open_session(&SessionId::from("s")).await.unwrap();
    assert_eq!(
        raw(&*reopened),
        [
            (1, "test/n".to_owned(), r#"{"n":1}"#.to_owned()),
            (
                2,
                "test/spaced".to_owned(),
                r#"{ "a" : [1, 2] }"#.to_owned()
            ),
            (
                3,
                "test/escaped".to_owned(),
                r#"{"s":"\u00e9\n"}"#.to_owned()
            ),
        ]
    );
    assert_eq!(reopened.events()[2].data, json!({"s": "é\n"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_or_a_short_log_is_malformed_at_its_line() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("corrupt");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    for n in 1..=3 {
        session.append("test/n", json!({ "n": n })).unwrap();
    }
    session.flush().await.unwrap();
    drop(session);
    let sql = super::client(&url).await;
    let id = SessionId::from("s");
    let place = format!("postgres \"{schema}\".events session s");

    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET last_seq = 4 WHERE id = 's'"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(a.open_session(&id).await.unwrap_err()),
        (
            place.clone(),
            4,
            "3 events, but the session row says 4".to_owned()
        )
    );

    sql.batch_execute(&format!(
        "DELETE FROM \"{schema}\".events WHERE session_id = 's' AND seq = 2; \
         UPDATE \"{schema}\".sessions SET owner = NULL WHERE id = 's'"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(a.open_session(&id).await.unwrap_err()),
        (place, 2, "seq 3 where 2 was expected".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_rows_beyond_the_session_rows_last_seq_are_refused_at_open_by_their_seqs() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("beyond");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    for n in 1..=5 {
        session.append("test/n", json!({ "n": n })).unwrap();
    }
    session.flush().await.unwrap();
    drop(session);
    let sql = super::client(&url).await;
    // An operator's edit or a partial restore: the row says 3, the log holds 5.
    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET last_seq = 3 WHERE id = 's'"
    ))
    .await
    .unwrap();
    let id = SessionId::from("s");
    assert_eq!(
        super::malformed(a.open_session(&id).await.unwrap_err()),
        (
            format!("postgres \"{schema}\".events session s"),
            4,
            "event rows 4..=5 (2 of them) are beyond the session row's last seq 3".to_owned()
        )
    );
    // A log of one half or two (the split read) is checked alike.
    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET last_seq = 0, owner = NULL WHERE id = 's'"
    ))
    .await
    .unwrap();
    assert_eq!(
        super::malformed(a.open_session(&id).await.unwrap_err()).2,
        "event rows 1..=5 (5 of them) are beyond the session row's last seq 0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_whose_expected_last_seq_moved_writes_nothing_and_says_so() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("moved");
    let a = super::store(&url, &schema, "host-a", TTL);
    let session = a.create_session(SessionHeader::new("s")).await.unwrap();
    session.append("test/n", json!({"n": 1})).unwrap();
    session.append("test/n", json!({"n": 2})).unwrap();
    session.flush().await.unwrap();
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET last_seq = 7 WHERE id = 's'"
    ))
    .await
    .unwrap();
    session.append("test/n", json!({"n": 3})).unwrap();
    let error = session.flush().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "i/o error persisting session s: postgres: the session's last seq is 7, this handle \
         expected 2 (a commit whose answer was lost); reopen the session"
    );
    assert!(!session.lease().is_lost());
    assert_eq!(session.durable_len(), 2);
    let count = sql
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".events"), &[])
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(count, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_flush_with_reminder_changes_leaves_the_index_alone() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("fenceidx");
    let a = super::store(&url, &schema, "host-a", TTL);
    let b = super::store(&url, &schema, "host-b", TTL);
    let first = a.create_session(SessionHeader::new("s")).await.unwrap();
    first.append("test/n", json!({"n": 1})).unwrap();
    first.flush().await.unwrap();
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "UPDATE \"{schema}\".sessions SET lease_expires = now() - interval '1 second'"
    ))
    .await
    .unwrap();
    let second = b.open_session(&SessionId::from("s")).await.unwrap();
    assert_eq!(second.lease().epoch(), 2);
    first.append("schedule/change", json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"p","afterSeconds":30,"scheduledAt":"2026-08-05T12:00:30.000Z"}})).unwrap();
    assert_eq!(
        first.flush().await.unwrap_err(),
        PersistenceError::Fenced(SessionId::from("s"))
    );
    let counts = sql
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM \"{schema}\".reminders), \
                        (SELECT count(*) FROM \"{schema}\".events), \
                        (SELECT last_seq FROM \"{schema}\".sessions)"
            ),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            counts.get::<_, i64>(0),
            counts.get::<_, i64>(1),
            counts.get::<_, i64>(2)
        ),
        (0, 1, 1)
    );
}
