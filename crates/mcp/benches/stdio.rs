//! Round trip of a `todo_write` over stdio, against the same call in-process.
//!
//! - `stdio`: rmcp's client drives a release `harness mcp` child process; each call is timed
//!   from the client's `tools/call` to its parsed result.
//! - `in-process`: [`SessionHost::call_tool`] on the same configuration, in this process: the
//!   same tool path, log append and flush, without JSON-RPC or the pipe.
//!
//! - `http`: rmcp's streamable HTTP client against a release `harness mcp --http` on loopback.
//!
//! 10,000 calls each (after 200 warm-up calls); p50 and p99 of each and the p50 overhead are
//! printed to stderr. Target: ≤ 100 µs p50 overhead. Sessions live in a temporary folder (under
//! `/dev/shm` when it exists, so the fsync of every flush does not dominate both numbers).
#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark reports its numbers and unwraps its fixtures"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use turnkit_mcp::{FamiliesConfig, SessionHost, SessionOptions};

mod common;
use common::{percentiles, release_harness, scratch, todos};

const CALLS: usize = 10_000;
const WARM_UP: usize = 200;

struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

fn arguments(round: usize) -> serde_json::Map<String, Value> {
    todos(round).as_object().unwrap().clone()
}

fn config() -> Value {
    json!({"todo": {"allowParallelInProgress": false}})
}

async fn stdio(bin: &Path) -> Vec<Duration> {
    let dir = scratch();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut command = tokio::process::Command::new(bin);
    command
        .arg("mcp")
        .arg("--dir")
        .arg(dir.path().join("sessions"))
        .args(["--session", "bench"])
        .arg("--config")
        .arg(&config_path);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = Client.serve(transport).await.unwrap();
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let params = CallToolRequestParams::new("todo_write").with_arguments(arguments(round));
        let start = Instant::now();
        let result = client.call_tool(params).await.unwrap();
        let elapsed = start.elapsed();
        assert_eq!(result.is_error, Some(false));
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
    let mut client = client;
    client.close().await.unwrap();
    samples
}

/// The same calls over streamable HTTP: rmcp's HTTP client against `harness mcp --http` on
/// loopback, session `bench` at its URL.
async fn http(bin: &Path) -> Vec<Duration> {
    use tokio::io::AsyncBufReadExt;
    let dir = scratch();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut child = tokio::process::Command::new(bin)
        .args(["mcp", "--http", "127.0.0.1:0", "--dir"])
        .arg(dir.path().join("sessions"))
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
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!(
        "http://{addr}/sessions/bench/mcp"
    ));
    let client = Client.serve(transport).await.unwrap();
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let params = CallToolRequestParams::new("todo_write").with_arguments(arguments(round));
        let start = Instant::now();
        let result = client.call_tool(params).await.unwrap();
        let elapsed = start.elapsed();
        assert_eq!(result.is_error, Some(false));
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
    let mut client = client;
    client.close().await.unwrap();
    child.start_kill().unwrap();
    let _ = child.wait().await;
    samples
}

async fn in_process() -> Vec<Duration> {
    let dir = scratch();
    let host = SessionHost::open(&SessionOptions {
        dir: dir.path().join("sessions"),
        session: Some("bench".to_owned()),
        configs: FamiliesConfig::from_json(&config()).unwrap(),
    })
    .unwrap();
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let start = Instant::now();
        let output = host
            .call_tool("todo_write", Value::Object(arguments(round)))
            .await;
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
    let (local_p50, local_p99) = percentiles(runtime.block_on(in_process()));
    let (stdio_p50, stdio_p99) = percentiles(runtime.block_on(stdio(&bin)));
    let (http_p50, http_p99) = percentiles(runtime.block_on(http(&bin)));
    eprintln!("todo_write round trip over {CALLS} calls:");
    eprintln!("  in-process  p50 {local_p50:>10.1?}  p99 {local_p99:>10.1?}");
    eprintln!("  stdio (MCP) p50 {stdio_p50:>10.1?}  p99 {stdio_p99:>10.1?}");
    eprintln!("  http (MCP)  p50 {http_p50:>10.1?}  p99 {http_p99:>10.1?}");
    eprintln!(
        "  p50 overhead {:.1?} (target <= 100µs)",
        stdio_p50.saturating_sub(local_p50)
    );
    eprintln!(
        "  http / stdio p50 {:.2}x (target <= 2x)",
        http_p50.as_secs_f64() / stdio_p50.as_secs_f64()
    );
}
