//! The stateless (2026-07-28) era over stdio, the way Claude Code speaks it: raw JSON-RPC lines
//! to a release `harness mcp` child process, every request with its own `_meta`.
//!
//! - `settlement → completed`: a `bash` `printf x` started with the tasks extension declared,
//!   then `tasks/get` polled back to back; the latency is the wall time at which the first
//!   `completed` answer was read minus the job's `finishedAt` (epoch ms, from its `job/settle`
//!   event). 300 jobs (after 20 warm-up jobs). Target: p99 ≤ 50 ms.
//! - `todo_write`: the stateless round trip of a plain `todo_write` (tasks declared, no task
//!   opened) against [`SessionHost::call_tool`] in-process, 5,000 calls each (after 200
//!   warm-up calls). Target: ≤ 100 µs p50 overhead.
//!
//! Percentiles are printed to stderr. Sessions live under `/dev/shm` when it exists.
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use turnkit_mcp::{FamiliesConfig, SessionHost, SessionOptions};

mod common;
use common::{percentiles, release_harness, scratch, spawn_stdio, todos};

const JOBS: usize = 300;
const JOB_WARM_UP: usize = 20;
const CALLS: usize = 5_000;
const WARM_UP: usize = 200;

fn config() -> Value {
    json!({"todo": {"allowParallelInProgress": false}})
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    })
}

/// One server spoken to in raw lines.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    line: String,
}

impl Raw {
    fn start(bin: &Path, dir: &Path) -> Self {
        let (child, stdin, stdout) = spawn_stdio(bin, dir, &config());
        Self {
            child,
            stdin,
            stdout,
            next_id: 0,
            line: String::new(),
        }
    }

    async fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.next_id += 1;
        params["_meta"] = meta();
        let id = self.next_id;
        self.line.clear();
        self.line.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.line.push('\n');
        self.stdin.write_all(self.line.as_bytes()).await.unwrap();
        loop {
            let reply = self.stdout.next_line().await.unwrap().expect("a reply");
            let reply: Value = serde_json::from_str(&reply).unwrap();
            if reply.get("id") == Some(&json!(id)) {
                return reply;
            }
        }
    }

    async fn stop(mut self) {
        drop(self.stdin);
        self.child.wait().await.unwrap();
    }
}

/// The `finishedAt` of job `job` in the session file of `dir`.
fn finished_at(dir: &Path, job: &str) -> i64 {
    let text = std::fs::read_to_string(dir.join("sessions/bench.jsonl")).unwrap();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "job/settle" && event["data"]["id"] == job)
        .and_then(|event| event["data"]["finishedAt"].as_i64())
        .expect("the job settled")
}

async fn settlement_to_completed(bin: &Path) -> Vec<Duration> {
    let dir = scratch();
    let mut raw = Raw::start(bin, dir.path());
    raw.request("server/discover", json!({})).await;
    let mut samples = Vec::with_capacity(JOBS);
    for round in 0..JOB_WARM_UP + JOBS {
        let started = raw
            .request(
                "tools/call",
                json!({"name": "bash", "arguments": {"command": "printf x", "run_in_background": true}}),
            )
            .await;
        let task = started["result"]["taskId"].as_str().unwrap().to_owned();
        let done_at = loop {
            let got = raw.request("tasks/get", json!({"taskId": task})).await;
            if got["result"]["status"] == "completed" {
                break SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            }
        };
        let job = format!("bash-{}", round + 1);
        let settled = Duration::from_millis(u64::try_from(finished_at(dir.path(), &job)).unwrap());
        if round >= JOB_WARM_UP {
            samples.push(done_at.saturating_sub(settled));
        }
    }
    raw.stop().await;
    samples
}

async fn todo_stdio(bin: &Path) -> Vec<Duration> {
    let dir = scratch();
    let mut raw = Raw::start(bin, dir.path());
    raw.request("server/discover", json!({})).await;
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let params = json!({"name": "todo_write", "arguments": todos(round)});
        let start = Instant::now();
        let result = raw.request("tools/call", params).await;
        let elapsed = start.elapsed();
        assert_eq!(result["result"]["isError"], false);
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
    raw.stop().await;
    samples
}

async fn todo_in_process() -> Vec<Duration> {
    let dir = scratch();
    let host = SessionHost::open(&SessionOptions {
        dir: dir.path().join("sessions"),
        session: Some("bench".to_owned()),
        configs: FamiliesConfig::from_json(&config()).unwrap(),
        job_task_ttl: None,
    })
    .unwrap();
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let start = Instant::now();
        let output = host.call_tool("todo_write", todos(round)).await;
        let elapsed = start.elapsed();
        assert!(!output.is_error);
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
    host.shutdown().await;
    samples
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: build-check only.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let bin = release_harness();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (settle_p50, settle_p99) = percentiles(runtime.block_on(settlement_to_completed(&bin)));
    eprintln!("job settlement -> task completed over {JOBS} jobs (ms clock):");
    eprintln!("  p50 {settle_p50:>10.1?}  p99 {settle_p99:>10.1?} (target p99 <= 50ms)");
    let (local_p50, local_p99) = percentiles(runtime.block_on(todo_in_process()));
    let (stdio_p50, stdio_p99) = percentiles(runtime.block_on(todo_stdio(&bin)));
    eprintln!("todo_write round trip over {CALLS} calls (stateless era, tasks declared):");
    eprintln!("  in-process  p50 {local_p50:>10.1?}  p99 {local_p99:>10.1?}");
    eprintln!("  stdio (MCP) p50 {stdio_p50:>10.1?}  p99 {stdio_p99:>10.1?}");
    eprintln!(
        "  p50 overhead {:.1?} (target <= 100µs)",
        stdio_p50.saturating_sub(local_p50)
    );
}
