//! Another session's `todo_write` while the HTTP server opens a large session and releases
//! idle ones: the opening (a JSONL log read and replayed) and the releases run off the
//! threads that serve requests, so the calls of a session already open go on.
//!
//! A release `harness mcp --http --idle-release 1` (one worker thread, the default) serves a
//! folder holding session `big`, a log of `BENCH_BIG_EVENTS` events (default 1,000,000).
//! Session `hot` is warmed up (200 calls), 20 sessions are opened with one call each and left
//! to be released when idle, then `big` is opened by another client while `hot` calls
//! `todo_write` in a loop: until `big` answered and the 20 were released, at least 500 calls.
//! Printed: `hot`'s p50 and p99 during that window and alone before it (same run), how long
//! `big` took to open, and the longest call of the window (one call held behind a blocked
//! thread is one sample, which a p99 of thousands of calls hides). Target: p99 under 50 ms. JSONL only: the PostgreSQL stall of the same
//! scenario is not driven here (the partition test in `suite::http_partition` covers the
//! lease side).
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use turnkit_core::{JsonlStore, SessionHeader, SessionStore, SystemClock};

#[expect(dead_code, reason = "this benchmark does not drive stdio")]
mod common;
use common::{percentiles, release_harness, scratch, todos};

const WARM_UP: usize = 200;
const ALONE: usize = 500;
const MIN_CALLS: usize = 500;
const RELEASING: usize = 20;

struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

async fn client(url: String) -> rmcp::service::RunningService<rmcp::RoleClient, Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    Client.serve(transport).await.unwrap()
}

fn todo_write(round: usize) -> CallToolRequestParams {
    CallToolRequestParams::new("todo_write")
        .with_arguments(todos(round).as_object().unwrap().clone())
}

/// Writes session `big` into `sessions`: `events` events of a type no family folds (the log
/// is read and parsed in full at its opening, which is what is measured).
async fn write_big(sessions: &Path, events: usize) {
    let store = JsonlStore::new(sessions, Arc::new(SystemClock)).unwrap();
    let session = store.create(SessionHeader::new("big")).unwrap();
    for n in 0..events {
        session
            .append(
                "bench/filler",
                json!({"n": n, "text": "a line of filler of some length"}),
            )
            .unwrap();
    }
    session.flush().await.unwrap();
}

async fn run(bin: &Path, events: usize) {
    use tokio::io::AsyncBufReadExt;
    let dir = scratch();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let written = Instant::now();
    write_big(&sessions, events).await;
    let size = std::fs::metadata(sessions.join("big.jsonl")).unwrap().len();
    eprintln!(
        "served: session big: {events} events, {:.1} MB, written in {:?}",
        size as f64 / 1e6,
        written.elapsed()
    );
    let config_path = dir.path().join("config.json");
    std::fs::write(
        &config_path,
        json!({"todo": {"allowParallelInProgress": false}}).to_string(),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(bin)
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--idle-release",
            "1",
            "--dir",
        ])
        .arg(&sessions)
        .arg("--config")
        .arg(&config_path)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next_line().await.unwrap().expect("a listening line");
        if let Some(rest) = line.strip_prefix("harness mcp: serving http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let url = |id: &str| format!("http://{addr}/sessions/{id}/mcp");

    let hot = client(url("hot")).await;
    let mut alone = Vec::with_capacity(ALONE);
    for round in 0..WARM_UP + ALONE {
        let start = Instant::now();
        let result = hot.call_tool(todo_write(round)).await.unwrap();
        if round >= WARM_UP {
            alone.push(start.elapsed());
        }
        assert_eq!(result.is_error, Some(false));
    }
    for i in 0..RELEASING {
        let mut other = client(url(&format!("idle-{i}"))).await;
        other.call_tool(todo_write(i)).await.unwrap();
        other.close().await.unwrap();
    }
    let released_by = Instant::now() + Duration::from_millis(2500);
    let opened = Arc::new(AtomicBool::new(false));
    let opening = {
        let (url, opened) = (url("big"), opened.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            let big = client(url).await;
            let listed = big
                .call_tool(CallToolRequestParams::new("job_list"))
                .await
                .unwrap();
            let took = start.elapsed();
            opened.store(true, Ordering::SeqCst);
            assert_eq!(listed.is_error, Some(false));
            took
        })
    };
    let mut during = Vec::new();
    let mut round = WARM_UP + ALONE;
    while during.len() < MIN_CALLS || !opened.load(Ordering::SeqCst) || Instant::now() < released_by
    {
        let start = Instant::now();
        let result = hot.call_tool(todo_write(round)).await.unwrap();
        during.push(start.elapsed());
        assert_eq!(result.is_error, Some(false));
        round += 1;
    }
    let took = opening.await.unwrap();
    let (alone_p50, alone_p99) = percentiles(alone);
    let calls = during.len();
    // One call stalled behind a blocked thread is a single sample: p99 of thousands of calls
    // would not show it, the longest does.
    let longest = during.iter().max().copied().unwrap_or_default();
    let (p50, p99) = percentiles(during);
    eprintln!("served: hot todo_write alone: p50 {alone_p50:?}, p99 {alone_p99:?} ({ALONE} calls)");
    eprintln!(
        "served: hot todo_write while big opened ({took:?}) and {RELEASING} idle sessions were \
         released: p50 {p50:?}, p99 {p99:?}, longest {longest:?} ({calls} calls); target p99 < 50 \
         ms: {}",
        if p99 < Duration::from_millis(50) {
            "met"
        } else {
            "missed"
        }
    );
    let mut hot = hot;
    hot.close().await.unwrap();
    child.start_kill().unwrap();
    let _ = child.wait().await;
}

fn main() {
    let events = std::env::var("BENCH_BIG_EVENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let bin = release_harness();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(&bin, events));
}
