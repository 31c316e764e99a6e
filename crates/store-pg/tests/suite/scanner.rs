//! The reminder scanner in one process: what a pass claims, what it leaves to a live owner,
//! two scanners claiming together, the resumed-session cap and an unreadable log.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{PersistenceError, Session, SessionHeader, SessionId};
use turnkit_store_pg::{PgSession, PgStore, ReminderScanner, Resume, ScanOptions, ScanStats};

const TTL: Duration = Duration::from_secs(30);

/// A host that keeps every session handed to it (so its lease stays live).
#[derive(Default)]
struct Keep {
    sessions: Mutex<Vec<Arc<PgSession>>>,
}

impl Resume for Keep {
    fn resume(&self, session: Arc<PgSession>) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| panic!("{e}"))
            .push(session);
    }
}

impl Keep {
    fn ids(&self) -> Vec<String> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .map(|s| s.id().as_str().to_owned())
            .collect()
    }

    fn take(&self, id: &str) -> Arc<PgSession> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| panic!("{e}"));
        let at = sessions
            .iter()
            .position(|s| s.id().as_str() == id)
            .unwrap_or_else(|| panic!("{id} was not resumed"));
        sessions.remove(at)
    }
}

/// The `schedule/change` a `schedule_create` with `after_seconds` appends.
fn create_after(id: &str, scheduled_at: &str) -> serde_json::Value {
    json!({"version":1,"operation":"create","schedule":{"id":id,"kind":"after","prompt":"check the deploy","afterSeconds":60,"scheduledAt":scheduled_at}})
}

/// Creates session `id` on `store` with one reminder due at `due` (none when `None`),
/// flushed; the handle is returned (drop it to release the lease).
async fn session_with_reminder(store: &PgStore, id: &str, due: Option<&str>) -> Arc<PgSession> {
    let session = store
        .create_session(SessionHeader::new(id))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(due) = due {
        session
            .append("schedule/change", create_after("schedule-1", due))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    session.flush().await.unwrap_or_else(|e| panic!("{e}"));
    session
}

fn scanner(store: &PgStore, keep: &Arc<Keep>, options: ScanOptions) -> ReminderScanner {
    ReminderScanner::new(store.clone(), keep.clone(), options)
}

fn ids(claimed: &[SessionId]) -> Vec<&str> {
    claimed.iter().map(SessionId::as_str).collect()
}

const PAST: &str = "2026-01-01T00:00:00.000Z";
const FUTURE: &str = "2099-01-01T00:00:00.000Z";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_claims_due_sessions_no_live_host_owns_and_leaves_the_rest() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scan");
    let a = super::store(&url, &schema, "host-a", TTL);
    let b = super::store(&url, &schema, "host-b", TTL);
    drop(session_with_reminder(&a, "due-free", Some(PAST)).await);
    let owned = session_with_reminder(&a, "due-owned", Some(PAST)).await;
    let expired = session_with_reminder(&a, "due-expired", Some(PAST)).await;
    drop(session_with_reminder(&a, "later", Some(FUTURE)).await);
    drop(session_with_reminder(&a, "none", None).await);
    let sql = super::client(&url).await;
    // Host A stopped renewing the lease of `due-expired` (a pause past its TTL).
    sql.execute(
        &format!(
            "UPDATE \"{schema}\".sessions SET lease_expires = now() - interval '1 second' \
             WHERE id = 'due-expired'"
        ),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let keep = Arc::new(Keep::default());
    let scan = scanner(&b, &keep, ScanOptions::default());
    let claimed = scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids(&claimed), ["due-expired", "due-free"]);
    assert_eq!(keep.ids(), ["due-expired", "due-free"]);
    let free = keep.take("due-free");
    assert_eq!(free.lease().host(), "host-b");
    assert_eq!(free.lease().epoch(), 2);
    assert_eq!(free.len(), 1);
    assert_eq!(free.events()[0].data["schedule"]["scheduledAt"], PAST);

    // A, paused past its lease, wakes up: fenced, it writes nothing.
    expired
        .append("test/n", json!({"n": 1}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        expired.flush().await.unwrap_err(),
        PersistenceError::Fenced(SessionId::from("due-expired"))
    );

    // Sessions B now holds are live: not claimed again, and neither is A's.
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        [] as [&str; 0]
    );
    // A closes `due-owned`: the next pass takes it.
    drop(owned);
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        ["due-owned"]
    );
    // B closes `due-free` without delivering: its reminder is still due, it is claimed again.
    drop(free);
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        ["due-free"]
    );
    assert_eq!(
        *scan.stats().borrow(),
        ScanStats {
            passes: 4,
            resumed: 4,
            failed: 0,
            unreadable: 0
        }
    );
    let owners: Vec<(String, Option<String>, i64)> = sql
        .query(
            &format!("SELECT id, owner, epoch FROM \"{schema}\".sessions ORDER BY id"),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let row =
        |id: &str, owner: Option<&str>, epoch| (id.to_owned(), owner.map(str::to_owned), epoch);
    assert_eq!(
        owners,
        [
            row("due-expired", Some("host-b"), 2),
            row("due-free", Some("host-b"), 3),
            row("due-owned", Some("host-b"), 2),
            row("later", None, 1),
            row("none", None, 1),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scanners_of_two_hosts_claim_disjoint_sessions() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scan2");
    let a = super::store(&url, &schema, "host-a", TTL);
    let all: BTreeSet<String> = (0..40).map(|n| format!("s{n:02}")).collect();
    for id in &all {
        drop(session_with_reminder(&a, id, Some(PAST)).await);
    }
    let options = ScanOptions {
        batch: 3,
        ..ScanOptions::default()
    };
    let (kb, kc) = (Arc::new(Keep::default()), Arc::new(Keep::default()));
    let b = scanner(
        &super::store(&url, &schema, "host-b", TTL),
        &kb,
        options.clone(),
    );
    let c = scanner(&super::store(&url, &schema, "host-c", TTL), &kc, options);
    loop {
        let (from_b, from_c) = tokio::join!(b.scan_once(), c.scan_once());
        let (from_b, from_c) = (
            from_b.unwrap_or_else(|e| panic!("{e}")),
            from_c.unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(from_b.len() <= 3 && from_c.len() <= 3);
        if from_b.is_empty() && from_c.is_empty() {
            break;
        }
    }
    let (by_b, by_c): (BTreeSet<String>, BTreeSet<String>) = (
        kb.ids().into_iter().collect(),
        kc.ids().into_iter().collect(),
    );
    assert_eq!(kb.ids().len() + kc.ids().len(), 40);
    assert_eq!(by_b.intersection(&by_c).count(), 0);
    assert_eq!(by_b.union(&by_c).cloned().collect::<BTreeSet<_>>(), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_claims_no_more_than_the_resumed_sessions_cap_allows() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scancap");
    let a = super::store(&url, &schema, "host-a", TTL);
    for (id, due) in [
        ("s1", "2026-01-01T00:00:01.000Z"),
        ("s2", "2026-01-01T00:00:02.000Z"),
        ("s3", "2026-01-01T00:00:03.000Z"),
    ] {
        drop(session_with_reminder(&a, id, Some(due)).await);
    }
    let keep = Arc::new(Keep::default());
    let scan = scanner(
        &super::store(&url, &schema, "host-b", TTL),
        &keep,
        ScanOptions {
            max_resumed: 2,
            ..ScanOptions::default()
        },
    );
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        ["s1", "s2"]
    );
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        [] as [&str; 0]
    );
    assert_eq!(scan.open_resumed(), 2);
    // The host delivers s1's reminder (the dispatch leaves the index) and closes it.
    let s1 = keep.take("s1");
    s1.append(
        "schedule/change",
        json!({"version":1,"operation":"dispatch","id":"schedule-1"}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s1.flush().await.unwrap_or_else(|e| panic!("{e}"));
    drop(s1);
    assert_eq!(scan.open_resumed(), 1);
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        ["s3"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_session_whose_log_cannot_be_read_is_released_and_left_alone() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scanbad");
    let a = super::store(&url, &schema, "host-a", TTL);
    let broken = session_with_reminder(&a, "broken", Some(PAST)).await;
    broken
        .append("test/n", json!({"n": 1}))
        .unwrap_or_else(|e| panic!("{e}"));
    broken.flush().await.unwrap_or_else(|e| panic!("{e}"));
    drop(broken);
    let sql = super::client(&url).await;
    sql.execute(
        &format!("DELETE FROM \"{schema}\".events WHERE session_id = 'broken' AND seq = 1"),
        &[],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let keep = Arc::new(Keep::default());
    let scan = scanner(
        &super::store(&url, &schema, "host-b", TTL),
        &keep,
        ScanOptions::default(),
    );
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        [] as [&str; 0]
    );
    assert_eq!(keep.ids(), [] as [&str; 0]);
    assert_eq!(scan.stats().borrow().unreadable, 1);
    // Released at once (not held for the TTL), and not claimed again by this scanner.
    let row = sql
        .query_one(
            &format!("SELECT owner, epoch FROM \"{schema}\".sessions WHERE id = 'broken'"),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (row.get::<_, Option<String>>(0), row.get::<_, i64>(1)),
        (None, 2)
    );
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        [] as [&str; 0]
    );
    assert_eq!(
        *scan.stats().borrow(),
        ScanStats {
            passes: 2,
            resumed: 0,
            failed: 0,
            unreadable: 1
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_row_locked_by_a_flush_is_skipped_not_waited_for() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scanlock");
    let a = super::store(&url, &schema, "host-a", TTL);
    drop(session_with_reminder(&a, "s", Some(PAST)).await);
    // Another transaction holds the session row, as a flush in progress does.
    let sql = super::client(&url).await;
    sql.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM \"{schema}\".sessions WHERE id = 's' FOR UPDATE"
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let keep = Arc::new(Keep::default());
    let scan = scanner(
        &super::store(&url, &schema, "host-b", TTL),
        &keep,
        ScanOptions::default(),
    );
    // A guard against a hang, not a synchronisation: a skipped row answers at once.
    let pass = tokio::time::timeout(Duration::from_secs(20), scan.scan_once())
        .await
        .unwrap_or_else(|_| panic!("the pass waited for the locked row"));
    assert_eq!(
        ids(&pass.unwrap_or_else(|e| panic!("{e}"))),
        [] as [&str; 0]
    );
    sql.batch_execute("COMMIT")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ids(&scan.scan_once().await.unwrap_or_else(|e| panic!("{e}"))),
        ["s"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_claim_statement_is_an_error_and_counted() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scanfail");
    let b = super::store(&url, &schema, "host-b", TTL);
    let sql = super::client(&url).await;
    sql.batch_execute(&format!("DROP TABLE \"{schema}\".reminders"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let keep = Arc::new(Keep::default());
    let scan = scanner(&b, &keep, ScanOptions::default());
    match scan.scan_once().await {
        Err(error @ turnkit_core::StoreError::Backend(_)) => {
            let backend = error.as_backend().unwrap();
            assert_eq!(
                (backend.message(), backend.kind(), backend.code()),
                (
                    format!("ERROR: relation \"{schema}.reminders\" does not exist").as_str(),
                    turnkit_core::BackendKind::Refused,
                    Some("42P01")
                )
            );
            // The client's error is the cause, its SQLSTATE and server message intact.
            let cause = std::error::Error::source(backend)
                .and_then(|cause| cause.downcast_ref::<tokio_postgres::Error>())
                .unwrap();
            assert_eq!(
                cause.code(),
                Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE)
            );
            assert!(std::error::Error::source(&error).is_some());
            // The text is the one the store always gave.
            assert_eq!(
                error.to_string(),
                format!(
                    "store backend error: ERROR: relation \"{schema}.reminders\" does not exist"
                )
            );
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert_eq!(
        *scan.stats().borrow(),
        ScanStats {
            passes: 1,
            resumed: 0,
            failed: 1,
            unreadable: 0
        }
    );
}

/// On tokio's paused clock, which jumps only to the next timer while the test runtime
/// waits: a pass that claimed a whole batch is followed at once, any other one by the
/// interval, and `run` returns once stopped.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn run_follows_a_full_batch_at_once_and_otherwise_waits_the_interval() {
    let Some(url) = super::server_url() else {
        return;
    };
    let schema = super::fresh_schema("scanrun");
    let a = super::store(&url, &schema, "host-a", TTL);
    for id in ["s1", "s2", "s3", "s4", "s5"] {
        drop(session_with_reminder(&a, id, Some(PAST)).await);
    }
    let keep = Arc::new(Keep::default());
    let scan = Arc::new(scanner(
        &super::store(&url, &schema, "host-b", TTL),
        &keep,
        ScanOptions {
            batch: 2,
            interval: Duration::from_secs(3600),
            ..ScanOptions::default()
        },
    ));
    let stop = tokio_util::sync::CancellationToken::new();
    let start = tokio::time::Instant::now();
    let running = tokio::spawn({
        let (scan, stop) = (scan.clone(), stop.clone());
        async move { scan.run(stop).await }
    });
    let mut stats = scan.stats();
    // Two full passes (2 + 2), then one of 1: no pause between them.
    let third = *stats
        .wait_for(|s| s.passes == 3)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((third.resumed, start.elapsed()), (5, Duration::ZERO));
    assert_eq!(keep.ids(), ["s1", "s2", "s3", "s4", "s5"]);
    // The third was not full: the fourth comes an interval later and finds nothing.
    let fourth = *stats
        .wait_for(|s| s.passes == 4)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (fourth.resumed, start.elapsed()),
        (5, Duration::from_secs(3600))
    );
    stop.cancel();
    running.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scan.stats().borrow().passes, 4);
}
