//! PostgreSQL store against JSONL in the same run, on the server of
//! `HARNESS_TEST_POSTGRES_URL` (skipped with a message when it is not set).
//!
//! - `flush_one_session/{jsonl,postgres}`: append 100 ~200-byte events, then one flush.
//! - `flush_100_sessions/{jsonl,postgres}`: 100 sessions each append 10 events, then all
//!   flush concurrently.
//! - `replay_100k/{jsonl,postgres}`: open a 100,000-event session and replay its log.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a benchmark reports its figures and unwraps its fixtures"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harness_core::{JsonlStore, Session, SessionHeader, SessionId, SessionStore, SystemClock};
use harness_store_pg::{PgOptions, PgStore};
use serde_json::{Value, json};

fn payload(n: u64) -> Value {
    json!({"n": n, "text": "x".repeat(150)})
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn pg(url: &str, tag: &str) -> PgStore {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    PgStore::connect(
        url,
        Arc::new(SystemClock),
        PgOptions {
            schema: format!("bench_{tag}_{nanos:x}"),
            pool_size: 32,
            ..PgOptions::default()
        },
    )
    .unwrap()
}

fn stores(
    url: &str,
    tag: &str,
) -> (
    Arc<dyn SessionStore>,
    Arc<dyn SessionStore>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let jsonl: Arc<dyn SessionStore> =
        Arc::new(JsonlStore::new(dir.path(), Arc::new(SystemClock)).unwrap());
    let pg: Arc<dyn SessionStore> = Arc::new(pg(url, tag));
    (jsonl, pg, dir)
}

fn flush_one_session(c: &mut Criterion, url: &str) {
    let rt = runtime();
    let (jsonl, pg, _dir) = stores(url, "one");
    let mut group = c.benchmark_group("flush_one_session");
    group.throughput(Throughput::Elements(100));
    for (name, store) in [("jsonl", &jsonl), ("postgres", &pg)] {
        let session = store.create(SessionHeader::new("one")).unwrap();
        let mut n = 0;
        group.bench_function(name, |b| {
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

fn flush_100_sessions(c: &mut Criterion, url: &str) {
    let rt = runtime();
    let (jsonl, pg, _dir) = stores(url, "many");
    let mut group = c.benchmark_group("flush_100_sessions");
    group.throughput(Throughput::Elements(1000));
    for (name, store) in [("jsonl", &jsonl), ("postgres", &pg)] {
        let sessions: Vec<Arc<dyn Session>> = (0..100)
            .map(|i| {
                store
                    .create(SessionHeader::new(format!("many-{i}")))
                    .unwrap()
            })
            .collect();
        let mut n = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                for session in &sessions {
                    for _ in 0..10 {
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

fn replay_100k(c: &mut Criterion, url: &str) {
    let rt = runtime();
    let (jsonl, pg, _dir) = stores(url, "replay");
    let mut group = c.benchmark_group("replay_100k");
    group.throughput(Throughput::Elements(100_000));
    group.sample_size(10);
    for (name, store) in [("jsonl", &jsonl), ("postgres", &pg)] {
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
        group.bench_function(name, |b| {
            b.iter(|| {
                let session = store.open(&id).unwrap();
                assert_eq!(session.len(), 100_000);
            });
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    let Ok(url) = std::env::var("HARNESS_TEST_POSTGRES_URL") else {
        eprintln!(
            "SKIPPED: HARNESS_TEST_POSTGRES_URL is not set (start a server with .ci/postgres)"
        );
        return;
    };
    flush_one_session(c, &url);
    flush_100_sessions(c, &url);
    replay_100k(c, &url);
}

criterion_group! {
    name = pg_vs_jsonl;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(pg_vs_jsonl);
