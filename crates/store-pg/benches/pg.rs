//! PostgreSQL store against JSONL in the same run, on the server of
//! `HARNESS_TEST_POSTGRES_URL` (skipped with a message when it is not set).
//!
//! - `flush_one_session/{jsonl,postgres}`: append 100 ~200-byte events, then one flush.
//! - `flush_100_sessions/{jsonl,postgres}`: 100 sessions each append 10 events, then all
//!   flush concurrently.
//! - `flush_100_sessions_batched/{jsonl,postgres}`: the same with 100 events per session.
//! - `replay_100k/{jsonl,postgres}`: open a 100,000-event session and replay its log.
//! - `scanner_pass/postgres`: one `ReminderScanner::scan_once` that finds a closed session
//!   with a due reminder, claims it, replays its log and hands it to `Resume` (the delivery
//!   latency from due time is this plus the wait for the next pass, at most
//!   `ScanOptions::interval`).
//!
//! Without the variable only the JSONL side runs. The schemas a run creates are dropped at
//! its end.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its figures and unwraps its fixtures"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use turnkit_core::{JsonlStore, Session, SessionHeader, SessionId, SessionStore, SystemClock};
use turnkit_store_pg::{PgOptions, PgSession, PgStore, ReminderScanner, Resume, ScanOptions};

fn payload(n: u64) -> Value {
    json!({"n": n, "text": "x".repeat(150)})
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A PostgreSQL store on a fresh schema, dropped when this is.
struct Pg {
    pg: PgStore,
    store: Arc<dyn SessionStore>,
    url: String,
    schema: String,
}

impl Pg {
    fn new(url: &str, tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let schema = format!("bench_{tag}_{nanos:x}");
        let store = PgStore::connect(
            url,
            Arc::new(SystemClock),
            PgOptions {
                schema: schema.clone(),
                pool_size: 32,
                index: Some(Arc::new(turnkit_schedule::ReminderIndex)),
                ..PgOptions::default()
            },
        )
        .unwrap();
        Self {
            pg: store.clone(),
            store: Arc::new(store),
            url: url.to_owned(),
            schema,
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA \"{}\" CASCADE", self.schema);
        let url = self.url.clone();
        runtime().block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client.batch_execute(&sql).await.unwrap();
        });
    }
}

/// The stores a group compares, by name.
type Compared = Vec<(&'static str, Arc<dyn SessionStore>)>;

/// The stores a group compares: JSONL always, PostgreSQL when there is a server.
fn stores(url: Option<&str>, tag: &str) -> (Compared, Option<Pg>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let jsonl: Arc<dyn SessionStore> =
        Arc::new(JsonlStore::new(dir.path(), Arc::new(SystemClock)).unwrap());
    let pg = url.map(|url| Pg::new(url, tag));
    let mut list = vec![("jsonl", jsonl)];
    if let Some(pg) = &pg {
        list.push(("postgres", pg.store.clone()));
    }
    (list, pg, dir)
}

fn flush_one_session(c: &mut Criterion, url: Option<&str>) {
    let rt = runtime();
    let (stores, _pg, _dir) = stores(url, "one");
    let mut group = c.benchmark_group("flush_one_session");
    group.throughput(Throughput::Elements(100));
    for (name, store) in &stores {
        let session = store.create(SessionHeader::new("one")).unwrap();
        let mut n = 0;
        group.bench_function(*name, |b| {
            b.iter(|| {
                for _ in 0..100 {
                    n += 1;
                    session.append("bench/event", payload(n)).unwrap();
                }
                rt.block_on(session.flush()).unwrap();
            });
        });
    }
    group.finish();
}

fn flush_100_sessions(c: &mut Criterion, url: Option<&str>, per_session: u64) {
    let rt = runtime();
    let (stores, _pg, _dir) = stores(url, "many");
    let name = if per_session == 10 {
        "flush_100_sessions".to_owned()
    } else {
        "flush_100_sessions_batched".to_owned()
    };
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(100 * per_session));
    for (name, store) in &stores {
        let sessions: Vec<Arc<dyn Session>> = (0..100)
            .map(|i| {
                store
                    .create(SessionHeader::new(format!("many-{i}")))
                    .unwrap()
            })
            .collect();
        let mut n = 0;
        group.bench_function(*name, |b| {
            b.iter(|| {
                for session in &sessions {
                    for _ in 0..per_session {
                        n += 1;
                        session.append("bench/event", payload(n)).unwrap();
                    }
                }
                rt.block_on(futures::future::join_all(
                    sessions.iter().map(|s| s.flush()),
                ))
                .into_iter()
                .for_each(|r| r.unwrap());
            });
        });
    }
    group.finish();
}

fn replay_100k(c: &mut Criterion, url: Option<&str>) {
    let rt = runtime();
    let (stores, _pg, _dir) = stores(url, "replay");
    let mut group = c.benchmark_group("replay_100k");
    group.throughput(Throughput::Elements(100_000));
    group.sample_size(10);
    for (name, store) in &stores {
        let session = store.create(SessionHeader::new("big")).unwrap();
        for chunk in 0..100 {
            for i in 0..1000 {
                session
                    .append("bench/event", payload(chunk * 1000 + i))
                    .unwrap();
            }
            rt.block_on(session.flush()).unwrap();
        }
        drop(session);
        let id = SessionId::from("big");
        group.bench_function(*name, |b| {
            b.iter(|| {
                let session = store.open(&id).unwrap();
                assert_eq!(session.len(), 100_000);
            });
        });
    }
    group.finish();
}

/// Keeps the session a pass resumed until the bench drops it.
#[derive(Default)]
struct Keep(std::sync::Mutex<Vec<Arc<PgSession>>>);

impl Resume for Keep {
    fn resume(&self, session: Arc<PgSession>) {
        self.0.lock().unwrap().push(session);
    }
}

fn scanner_pass(c: &mut Criterion, url: &str) {
    let rt = runtime();
    let pg = Pg::new(url, "scan");
    let session = rt
        .block_on(pg.pg.create_session(SessionHeader::new("due")))
        .unwrap();
    for n in 0..100 {
        session.append("bench/event", payload(n)).unwrap();
    }
    session.append("schedule/change", json!({"version":1,"operation":"create","schedule":{"id":"schedule-1","kind":"after","prompt":"check","afterSeconds":30,"scheduledAt":"2020-01-01T00:00:00.000Z"}})).unwrap();
    rt.block_on(session.flush()).unwrap();
    drop(session);
    let keep = Arc::new(Keep::default());
    let scanner = ReminderScanner::new(pg.pg.clone(), keep.clone(), ScanOptions::default());
    let mut group = c.benchmark_group("scanner_pass");
    group.bench_function("postgres", |b| {
        b.iter(|| {
            let claimed = rt.block_on(scanner.scan_once()).unwrap();
            assert_eq!(claimed, [SessionId::from("due")]);
            // The lease is released before the next pass.
            keep.0.lock().unwrap().clear();
        });
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let url = std::env::var("HARNESS_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    if url.is_none() {
        eprintln!(
            "SKIPPED: the PostgreSQL side (HARNESS_TEST_POSTGRES_URL is not set; start a server \
             with .ci/postgres); only JSONL runs"
        );
    }
    let url = url.as_deref();
    flush_one_session(c, url);
    flush_100_sessions(c, url, 10);
    flush_100_sessions(c, url, 100);
    replay_100k(c, url);
    if let Some(url) = url {
        scanner_pass(c, url);
    }
}

criterion_group! {
    name = pg_vs_jsonl;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(pg_vs_jsonl);
