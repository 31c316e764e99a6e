//! Scale of the inspector: a folder of 1,000 sessions read and listed, and a session of
//! 100,000 events read and rendered (targets: 500 ms and 300 ms), each cold (the folder
//! read from disk and folded) and warm (the page rendered from the folded state); and how
//! long an append (flushed by a `JsonlStore` writer through the handle it created the session
//! with, as `harness mcp` writes) takes to reach an open page's `/updates` stream, in a served
//! folder of 1,000 sessions (target: 1 s).
#![expect(clippy::unwrap_used, reason = "a benchmark stops on failure")]

use std::io::Write;
use std::path::Path;

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use turnkit_core::{CancellationToken, JsonlStore, SessionHeader, SessionStore, SystemClock};
use turnkit_inspect::{Inspector, ListQuery, SessionQuery};

/// One event line in the store's form.
fn line(out: &mut Vec<u8>, seq: u64, r#type: &str, data: &str) {
    let ms = seq % 1000;
    let s = (seq / 1000) % 60;
    writeln!(
        out,
        r#"{{"seq":{seq},"type":"{type}","time":"2026-08-05T12:{:02}:{s:02}.{ms:03}Z","data":{data}}}"#,
        (seq / 60_000) % 60
    )
    .unwrap();
}

/// A session of `events` events: turns with plans, jobs and reminders, like a busy agent's.
fn session(dir: &Path, id: &str, events: u64) {
    let mut out = format!("{{\"id\":\"{id}\",\"timeZone\":\"Europe/Paris\"}}\n").into_bytes();
    let mut seq = 0;
    let mut job = 0;
    let mut reminder = 0;
    while seq < events {
        let n = seq;
        let mut next = |out: &mut Vec<u8>, r#type: &str, data: &str| {
            if seq < events {
                seq += 1;
                line(out, seq, r#type, data);
            }
        };
        next(
            &mut out,
            "turn/start",
            &format!("{{\"turn\":{}}}", n / 8 + 1),
        );
        next(
            &mut out,
            "todo/write",
            r#"{"todos":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"in_progress"},{"content":"Write the test","status":"pending"}]}"#,
        );
        job += 1;
        next(
            &mut out,
            "job/start",
            &format!(
                r#"{{"version":1,"id":"bash-{job}","kind":"bash","label":"cargo test","startedAt":1785931200000}}"#
            ),
        );
        next(
            &mut out,
            "job/settle",
            &format!(
                r#"{{"version":1,"id":"bash-{job}","status":"completed","detail":"exit code 0","finishedAt":1785931260000,"output":"test result: ok"}}"#
            ),
        );
        reminder += 1;
        next(
            &mut out,
            "schedule/change",
            &format!(
                r#"{{"version":1,"operation":"create","schedule":{{"id":"schedule-{reminder}","kind":"at","prompt":"look again","scheduledAt":"2030-01-01T12:00:00.000Z"}}}}"#
            ),
        );
        next(
            &mut out,
            "schedule/change",
            &format!(r#"{{"version":1,"operation":"delete","id":"schedule-{reminder}"}}"#),
        );
        next(
            &mut out,
            "mcp/queued",
            r#"{"lane":"followup","source":{"kind":"plugin","plugin":"tool-jobs","form":"notice","summary":"done"},"text":"background job finished"}"#,
        );
        next(&mut out, "turn/end", &format!("{{\"turn\":{}}}", n / 8 + 1));
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), out).unwrap();
}

fn bench(c: &mut Criterion) {
    let many = tempfile::tempdir().unwrap();
    for i in 0..1000 {
        session(many.path(), &format!("session-{i:04}"), 40);
    }
    let big = tempfile::tempdir().unwrap();
    session(big.path(), "big", 100_000);

    let mut group = c.benchmark_group("inspect");
    group.sample_size(10);
    group.bench_function("list_1000_sessions_cold", |b| {
        b.iter(|| {
            let inspector = Inspector::open(many.path()).unwrap();
            inspector.sessions_fragment(&ListQuery::default())
        });
    });
    let listed = Inspector::open(many.path()).unwrap();
    group.bench_function("list_1000_sessions_warm", |b| {
        b.iter(|| listed.sessions_fragment(&ListQuery::default()));
    });
    group.bench_function("session_100000_events_cold", |b| {
        b.iter(|| {
            let inspector = Inspector::open(big.path()).unwrap();
            inspector
                .session_fragment("big", &SessionQuery::default())
                .unwrap()
        });
    });
    let opened = Inspector::open(big.path()).unwrap();
    let page = opened
        .session_fragment("big", &SessionQuery::default())
        .unwrap();
    assert!(page.contains("100000"), "the page shows the last event");
    group.bench_function("session_100000_events_warm", |b| {
        b.iter(|| {
            opened
                .session_fragment("big", &SessionQuery::default())
                .unwrap()
        });
    });
    group.finish();
    append_to_page(c);
}

/// An append by a live writer until the page's event stream names its session.
fn append_to_page(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1000 {
        session(dir.path(), &format!("session-{i:04}"), 40);
    }
    let store = JsonlStore::new(dir.path(), Arc::new(SystemClock)).unwrap();
    let live = store.create(SessionHeader::new("live")).unwrap();
    let stop = CancellationToken::new();
    let mut stream = runtime.block_on(async {
        let inspector = Inspector::open(dir.path()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(inspector.serve(listener, stop.clone()));
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET /updates HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut head = [0u8; 512];
        let n = stream.read(&mut head).await.unwrap();
        assert!(head[..n].starts_with(b"HTTP/1.1 200"));
        stream
    });
    let mut group = c.benchmark_group("inspect");
    group.sample_size(20);
    let mut turn = 0;
    group.bench_function("append_to_page_1000_sessions", |b| {
        b.iter(|| {
            turn += 1;
            runtime.block_on(async {
                live.append("turn/start", serde_json::json!({ "turn": turn }))
                    .unwrap();
                live.flush().await.unwrap();
                let mut seen = Vec::new();
                while !seen.windows(11).any(|w| w == b"data: live\n") {
                    let mut buf = [0u8; 1024];
                    let n = stream.read(&mut buf).await.unwrap();
                    assert!(n > 0, "the stream ended");
                    seen.extend_from_slice(&buf[..n]);
                }
            });
        });
    });
    group.finish();
    stop.cancel();
}

criterion_group!(benches, bench);
criterion_main!(benches);
