//! Two `harness mcp --http` instances on one PostgreSQL store: a session another live
//! instance serves is refused naming its owner; an idle session's lease is released so the
//! other instance takes it; a killed instance's sessions move once its leases end.
//!
//! The server (and any client) is a real child process on the wall clock, so a wait here
//! polls what it writes (its answers, its session log or the database) with a short pause,
//! bounded by a deadline; no pause stands in for an in-process event.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http_support::{Connection, INITIALIZE, client, send, start_instance, stateless, texts};
use super::postgres::{client as pg_client, fresh_database, server_url};
use super::support::BOUND;

fn todos(content: &str) -> Value {
    json!({"todos": [{"content": content, "status": "in_progress"}]})
}

fn owned_by(owner: &str) -> Value {
    json!({
        "error": "session_owned",
        "message": format!("session shared is served by host {owner}; retry after its lease expires"),
        "owner": owner,
    })
}

#[tokio::test]
async fn instances_share_sessions_through_leases() {
    let Some(url) = server_url() else { return };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let a = start_instance(dir.path(), &store, "inst-a", "1").await;
    let mut b = start_instance(dir.path(), &store, "inst-b", "600").await;
    let http = client();
    let mut on_a = Connection::open(&http, &a.url("shared"), None)
        .await
        .unwrap();
    let written = on_a.call(&http, "todo_write", todos("first, on a")).await;
    assert_eq!(
        texts(&written.unwrap()),
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );

    // B refuses while A holds the session, naming A; once A released it (idle for a
    // second), B takes it.
    let reply = send(&http, "POST", &b.url("shared"), &[], INITIALIZE)
        .await
        .unwrap();
    assert_eq!((reply.status, reply.json()), (409, owned_by("inst-a")));
    let deadline = tokio::time::Instant::now() + BOUND;
    let mut on_b = loop {
        match Connection::open(&http, &b.url("shared"), None).await {
            Ok(connection) => break connection,
            Err(reply) => {
                assert_eq!((reply.status, reply.json()), (409, owned_by("inst-a")));
                assert!(tokio::time::Instant::now() < deadline, "a never released");
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let written = on_b.call(&http, "todo_write", todos("second, on b")).await;
    assert_eq!(
        texts(&written.unwrap()),
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );
    // A's old connection is now refused with B's name.
    let refused = on_a.call(&http, "job_list", json!({})).await.unwrap_err();
    assert_eq!((refused.status, refused.json()), (409, owned_by("inst-b")));

    // B dies without releasing anything; A takes the session once B's lease ends.
    b.child.start_kill().unwrap();
    b.child.wait().await.unwrap();
    let deadline = tokio::time::Instant::now() + BOUND;
    let mut again = loop {
        match Connection::open(&http, &a.url("shared"), None).await {
            Ok(connection) => break connection,
            Err(reply) => {
                assert_eq!((reply.status, reply.json()), (409, owned_by("inst-b")));
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "b's lease never ended"
                );
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let written = again.call(&http, "todo_write", todos("third, on a")).await;
    assert_eq!(
        texts(&written.unwrap()),
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );
    let db = pg_client(&store).await;
    let rows = db
        .query(
            "SELECT data::text FROM harness.events WHERE session_id = 'shared' \
             AND type = 'todo/write' ORDER BY seq",
            &[],
        )
        .await
        .unwrap();
    let contents: Vec<String> = rows
        .iter()
        .map(|row| {
            let data: Value = serde_json::from_str(&row.get::<_, String>(0)).unwrap();
            data["todos"][0]["content"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(contents, ["first, on a", "second, on b", "third, on a"]);
    let owner: String = db
        .query_one(
            "SELECT owner FROM harness.sessions WHERE id = 'shared'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owner, "inst-a");
    drop(a);
}

/// A task lives in the session's log, so whichever instance holds the session answers for
/// it: a reminder's task opened on A is read and cancelled on B once A released the session,
/// and a job's task opened on B is read on A after B was killed (its job's true end: stopped
/// with its host). While another instance holds the session, a task request is refused like
/// any other, naming the owner (a load balancer routes by path to it).
#[tokio::test]
async fn a_task_is_read_and_cancelled_on_another_instance() {
    let Some(url) = server_url() else { return };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let a = start_instance(dir.path(), &store, "inst-a", "1").await;
    let mut b = start_instance(dir.path(), &store, "inst-b", "1").await;
    let http = client();
    let created = stateless(
        &http,
        &a.url("shared"),
        None,
        "tools/call",
        Some("schedule_create"),
        json!({"name": "schedule_create", "arguments": {"prompt": "stretch", "after_seconds": 3600}}),
        true,
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.messages()[0]["result"]["taskId"], "task-1");

    // Refused naming A while A holds the session; answered by B once A let it go.
    let get = |url: String, task: &'static str| {
        let http = http.clone();
        async move {
            stateless(
                &http,
                &url,
                None,
                "tasks/get",
                Some(task),
                json!({"taskId": task}),
                true,
            )
            .await
        }
    };
    let deadline = tokio::time::Instant::now() + BOUND;
    let got = loop {
        let reply = get(b.url("shared"), "task-1").await;
        if reply.status == 200 {
            break reply.messages().remove(0);
        }
        assert_eq!((reply.status, reply.json()), (409, owned_by("inst-a")));
        assert!(tokio::time::Instant::now() < deadline, "a never released");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(got["result"]["status"], "working", "{got}");
    let cancelled = stateless(
        &http,
        &b.url("shared"),
        None,
        "tasks/cancel",
        Some("task-1"),
        json!({"taskId": "task-1"}),
        true,
    )
    .await;
    assert_eq!(
        cancelled.messages()[0]["result"],
        json!({"resultType": "complete"})
    );
    let got = get(b.url("shared"), "task-1").await.messages().remove(0);
    assert_eq!(got["result"]["status"], "cancelled", "{got}");

    // A job's task opened on B; B dies with the job running; A answers for the task once
    // B's lease ended.
    let started = stateless(
        &http,
        &b.url("shared"),
        None,
        "tools/call",
        Some("bash"),
        json!({"name": "bash", "arguments": {"command": "sleep 1000", "run_in_background": true}}),
        true,
    )
    .await;
    assert_eq!(
        started.messages()[0]["result"]["taskId"],
        "task-2",
        "{}",
        started.body
    );
    b.child.start_kill().unwrap();
    b.child.wait().await.unwrap();
    let deadline = tokio::time::Instant::now() + BOUND;
    let done = loop {
        let reply = get(a.url("shared"), "task-2").await;
        if reply.status == 200 {
            let got = reply.messages().remove(0);
            if got["result"]["status"] != "working" {
                break got["result"].clone();
            }
        } else {
            assert_eq!((reply.status, reply.json()), (409, owned_by("inst-b")));
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "b's lease never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        texts(&done["result"]),
        [
            "background job bash-1 (bash: sleep 1000) was running when its host stopped; its processes were stopped [status: killed, stopped at the restart]. Its output went with the stopped host.",
            "(from before the restart)\n(no new output)\n[status: killed, stopped at the restart]",
        ]
    );
    // The cancelled reminder task stays cancelled on A; the reminder itself stays scheduled.
    let got = get(a.url("shared"), "task-1").await.messages().remove(0);
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    // The delivery is claimed once its answer was written, and flushed by a task of the
    // session after that: polled, bounded.
    let db = pg_client(&store).await;
    let deadline = tokio::time::Instant::now() + BOUND;
    let types = loop {
        let rows = db
            .query(
                "SELECT type FROM harness.events WHERE session_id = 'shared' \
                 AND type LIKE 'mcp/task%' ORDER BY seq",
                &[],
            )
            .await
            .unwrap();
        let types: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        if types.len() >= 4 || tokio::time::Instant::now() >= deadline {
            break types;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        types,
        [
            "mcp/task",
            "mcp/taskCancelled",
            "mcp/task",
            "mcp/taskDelivered"
        ]
    );
    drop(a);
}

/// `harness mcp --http` on PostgreSQL joins its own tasks (the scanner, the lease watchers, the
/// signal task) when it stops: a SIGTERM ends it with status 0 in time, every lease released.
#[tokio::test]
async fn sigterm_ends_an_instance_and_its_tasks_with_every_lease_released() {
    let Some(url) = server_url() else { return };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a = start_instance(dir.path(), &store, "inst-a", "600").await;
    let http = client();
    for session in ["one", "two"] {
        let mut connection = Connection::open(&http, &a.url(session), None)
            .await
            .unwrap();
        let written = connection.call(&http, "todo_write", todos(session)).await;
        assert_eq!(
            texts(&written.unwrap()),
            ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
        );
    }
    super::support::kill("TERM", a.child.id().unwrap());
    let status = tokio::time::timeout(BOUND, a.child.wait())
        .await
        .expect("the instance exits on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let rows: Vec<(String, Option<String>, i64)> = pg_client(&store)
        .await
        .query(
            "SELECT id, owner, last_seq FROM harness.sessions ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    assert_eq!(
        rows,
        [("one".to_owned(), None, 1), ("two".to_owned(), None, 1)]
    );
}
