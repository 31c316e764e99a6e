//! Load over HTTP: many sessions, one client each, against two `harness mcp --http` instances
//! on one PostgreSQL store; one instance is killed with SIGKILL halfway. Every call answered
//! success must be in the database, no job id may repeat in a session, and no reminder may
//! fire twice (each created reminder fires exactly once).
//!
//! The server (and any client) is a real child process on the wall clock, so a wait here
//! polls what it writes (its answers, its session log or the database) with a short pause,
//! bounded by a deadline; no pause stands in for an in-process event.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http_support::{Connection, HttpServer, client, start_instance, texts};
use super::postgres::{client as pg_client, fresh_database, server_url};

/// How long the whole run may take before the test fails.
const RUN_BOUND: Duration = Duration::from_secs(600);

/// What one client saw answered success.
#[derive(Default)]
struct Answered {
    todos: Vec<String>,
    jobs: Vec<String>,
    reminders: Vec<String>,
    latencies: Vec<Duration>,
    failed_attempts: usize,
}

/// The call number `n` of session `i`: a background job every tenth call, a reminder due in
/// a second every twenty-fifth (from the eighth), a todo list write otherwise.
fn operation(i: usize, n: usize) -> (&'static str, Value) {
    if n.is_multiple_of(10) {
        (
            "bash",
            json!({"command": "true", "run_in_background": true}),
        )
    } else if n % 25 == 7 {
        (
            "schedule_create",
            json!({"prompt": format!("r-{i}-{n}"), "after_seconds": 1}),
        )
    } else {
        (
            "todo_write",
            json!({"todos": [{"content": format!("c-{i}-{n}"), "status": "in_progress"}]}),
        )
    }
}

/// Runs session `i`'s calls, moving to the other instance whenever one fails (refused,
/// owned elsewhere, its connection gone).
async fn drive(
    i: usize,
    calls: usize,
    urls: [String; 2],
    done: Arc<AtomicUsize>,
    half: Arc<tokio::sync::Notify>,
    total: usize,
) -> Answered {
    let http = client();
    let mut answered = Answered::default();
    let mut instance = i % 2;
    let mut connection: Option<Connection> = None;
    let deadline = Instant::now() + RUN_BOUND;
    for n in 0..calls {
        let (tool, arguments) = operation(i, n);
        loop {
            assert!(
                Instant::now() < deadline,
                "session {i} call {n} never answered"
            );
            let Some(open) = connection.as_mut() else {
                match Connection::open(&http, &urls[instance], None).await {
                    Ok(opened) => connection = Some(opened),
                    Err(_) => {
                        answered.failed_attempts += 1;
                        instance = 1 - instance;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                continue;
            };
            let started = Instant::now();
            let result = open.call(&http, tool, arguments.clone()).await;
            match result {
                Ok(result) if result["isError"] == json!(false) => {
                    answered.latencies.push(started.elapsed());
                    let first = texts(&result).into_iter().next().unwrap_or_default();
                    match tool {
                        "bash" => answered.jobs.push(
                            first
                                .strip_prefix("started background job ")
                                .unwrap_or_else(|| panic!("{first}"))
                                .to_owned(),
                        ),
                        "schedule_create" => answered
                            .reminders
                            .push(arguments["prompt"].as_str().unwrap().to_owned()),
                        _ => answered.todos.push(
                            arguments["todos"][0]["content"]
                                .as_str()
                                .unwrap()
                                .to_owned(),
                        ),
                    }
                    if done.fetch_add(1, Ordering::SeqCst) + 1 == total / 2 {
                        half.notify_one();
                    }
                    break;
                }
                _ => {
                    answered.failed_attempts += 1;
                    connection = None;
                    instance = 1 - instance;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    answered
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[index]
}

/// The figures of a run.
pub(crate) struct Figures {
    pub calls: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub failed_attempts: usize,
    pub wall: Duration,
}

/// Runs `sessions` × `calls` against two instances, kills the first halfway, and checks the
/// database.
async fn run(sessions: usize, calls: usize) -> Option<Figures> {
    let url = server_url()?;
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a: HttpServer = start_instance(dir.path(), &store, "inst-a", "600").await;
    let b: HttpServer = start_instance(dir.path(), &store, "inst-b", "600").await;
    let total = sessions * calls;
    let done = Arc::new(AtomicUsize::new(0));
    let half = Arc::new(tokio::sync::Notify::new());
    let started = Instant::now();
    let clients: Vec<_> = (0..sessions)
        .map(|i| {
            let id = format!("load-{i}");
            let urls = [a.url(&id), b.url(&id)];
            tokio::spawn(drive(i, calls, urls, done.clone(), half.clone(), total))
        })
        .collect();
    half.notified().await;
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let mut answered = BTreeMap::new();
    for (i, handle) in clients.into_iter().enumerate() {
        answered.insert(format!("load-{i}"), handle.await.unwrap());
    }
    let wall = started.elapsed();

    let db = pg_client(&store).await;
    // Each created reminder fires exactly once (the run leaves them a bounded time to).
    let expected_reminders: usize = answered.values().map(|a| a.reminders.len()).sum();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let fired: i64 = db
            .query_one(
                "SELECT count(*) FROM harness.events WHERE type = 'schedule/change' \
                 AND data->>'operation' = 'dispatch'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if fired as usize >= expected_reminders {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{fired} of {expected_reminders} reminders fired"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let twice = db
        .query(
            "SELECT session_id, data->>'id', count(*) FROM harness.events \
             WHERE type = 'schedule/change' AND data->>'operation' = 'dispatch' \
             GROUP BY 1, 2 HAVING count(*) > 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(twice.len(), 0, "reminders fired twice");
    let repeated = db
        .query(
            "SELECT session_id, data->>'id', count(*) FROM harness.events \
             WHERE type = 'job/start' GROUP BY 1, 2 HAVING count(*) > 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(repeated.len(), 0, "job ids repeated");

    for (session, seen) in &answered {
        let rows = db
            .query(
                "SELECT type, data::text FROM harness.events WHERE session_id = $1",
                &[session],
            )
            .await
            .unwrap();
        let mut todos = BTreeSet::new();
        let mut jobs = BTreeSet::new();
        let mut prompts = BTreeSet::new();
        for row in rows {
            let kind: String = row.get(0);
            let data: Value = serde_json::from_str(&row.get::<_, String>(1)).unwrap();
            match kind.as_str() {
                "todo/write" => {
                    todos.insert(data["todos"][0]["content"].as_str().unwrap().to_owned());
                }
                "job/start" => {
                    jobs.insert(data["id"].as_str().unwrap().to_owned());
                }
                "schedule/change" if data["operation"] == "create" => {
                    prompts.insert(data["schedule"]["prompt"].as_str().unwrap().to_owned());
                }
                _ => {}
            }
        }
        for todo in &seen.todos {
            assert!(
                todos.contains(todo),
                "{session}: answered {todo} is not saved"
            );
        }
        for job in &seen.jobs {
            assert!(
                jobs.contains(job),
                "{session}: answered job {job} is not saved"
            );
        }
        for prompt in &seen.reminders {
            assert!(
                prompts.contains(prompt),
                "{session}: reminder {prompt} not saved"
            );
        }
        let unique: BTreeSet<&String> = seen.jobs.iter().collect();
        assert_eq!(
            unique.len(),
            seen.jobs.len(),
            "{session}: a job id answered twice"
        );
    }
    // The killed instance's sessions moved: none is still leased to it.
    let stale: i64 = db
        .query_one(
            "SELECT count(*) FROM harness.sessions WHERE owner = 'inst-a' \
             AND lease_expires > now()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stale, 0);
    drop(b);

    let mut latencies: Vec<Duration> = answered
        .values()
        .flat_map(|a| a.latencies.iter().copied())
        .collect();
    assert_eq!(latencies.len(), total);
    latencies.sort();
    Some(Figures {
        calls: total,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        failed_attempts: answered.values().map(|a| a.failed_attempts).sum(),
        wall,
    })
}

/// The reduced run `cargo test` (and so CI) makes: 20 sessions × 10 calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_survive_a_kill_under_load() {
    let Some(figures) = run(20, 10).await else {
        return;
    };
    assert_eq!(figures.calls, 200);
}

/// The full run: 100 sessions × 50 calls from 100 concurrent clients. Prints its figures:
/// `cargo test -p turnkit-mcp --test all --release -- --ignored --nocapture http_load`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full-size load run takes minutes"]
#[expect(clippy::print_stderr, reason = "the full run reports its figures")]
async fn full_load_100_sessions_by_50_calls() {
    let Some(figures) = run(100, 50).await else {
        return;
    };
    eprintln!(
        "http load: {} calls answered in {:.1} s; per call p50 {:.2} ms, p99 {:.2} ms; \
         {} failed attempts retried (the kill)",
        figures.calls,
        figures.wall.as_secs_f64(),
        figures.p50.as_secs_f64() * 1e3,
        figures.p99.as_secs_f64() * 1e3,
        figures.failed_attempts,
    );
    assert_eq!(figures.calls, 5000);
}
