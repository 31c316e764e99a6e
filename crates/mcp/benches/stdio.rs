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
use common::{percentiles, release_harness, scratch, spawn_stdio, todos};

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

/// A release `harness mcp --http` on loopback with the token it generates (every deployed
/// server checks one): session `bench`'s URL, the token, the child and its session folder.
async fn start_http(bin: &Path) -> (String, String, tokio::process::Child, tempfile::TempDir) {
    use tokio::io::AsyncBufReadExt;
    let dir = scratch();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut child = tokio::process::Command::new(bin)
        .args(["mcp", "--http", "127.0.0.1:0", "--dir"])
        .arg(dir.path().join("sessions"))
        .arg("--config")
        .arg(&config_path)
        .arg("--token-dir")
        .arg(dir.path().join("tokens"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut token = String::new();
    let addr = loop {
        let line = lines.next_line().await.unwrap().expect("a listening line");
        if let Some(rest) = line.strip_prefix("harness mcp: token ") {
            token = rest.split(' ').next().unwrap().to_owned();
        }
        if let Some(rest) = line.strip_prefix("harness mcp: serving http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (
        format!("http://{addr}/sessions/bench/mcp"),
        token,
        child,
        dir,
    )
}

/// The same calls over streamable HTTP: rmcp's HTTP client against `harness mcp --http` on
/// loopback, session `bench` at its URL.
async fn http(bin: &Path) -> Vec<Duration> {
    let (url, token, mut child, _dir) = start_http(bin).await;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token),
    );
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

/// The `initialize` request and `initialized` notification a raw client sends first.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Round `round`'s `tools/call` as one JSON-RPC line.
fn call_line(round: usize) -> String {
    json!({"jsonrpc": "2.0", "id": round + 1, "method": "tools/call",
        "params": {"name": "todo_write", "arguments": todos(round)}})
    .to_string()
}

/// The server's own share over stdio: the same calls written and read as raw lines (no
/// client library), each timed from its write to its answer line.
async fn raw_stdio(bin: &Path) -> Vec<Duration> {
    use tokio::io::AsyncWriteExt;
    let dir = scratch();
    let (mut child, mut stdin, mut lines) = spawn_stdio(bin, dir.path(), &config());
    stdin
        .write_all(format!("{INITIALIZE}\n{INITIALIZED}\n").as_bytes())
        .await
        .unwrap();
    lines.next_line().await.unwrap().unwrap();
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let line = format!("{}\n", call_line(round));
        let start = Instant::now();
        stdin.write_all(line.as_bytes()).await.unwrap();
        let answer = lines.next_line().await.unwrap().unwrap();
        let elapsed = start.elapsed();
        assert!(answer.contains(r#""isError":false"#), "{answer}");
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    samples
}

/// The server's own share over HTTP: the same calls as raw `POST`s on one kept-alive
/// HTTP/1.1 connection (hyper's client, no MCP client library), each timed from the request
/// to the last byte of its answer.
async fn raw_http(bin: &Path) -> Vec<Duration> {
    use http_body_util::{BodyExt, Full};
    let (url, token, mut child, _dir) = start_http(bin).await;
    let bearer = format!("Bearer {token}");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let post = |body: String, session: Option<String>| {
        let mut request = http::Request::post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", &bearer);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request.body(Full::new(bytes::Bytes::from(body))).unwrap();
        let client = client.clone();
        async move {
            let response = client.request(request).await.unwrap();
            let session = response
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (session, String::from_utf8(body.to_vec()).unwrap())
        }
    };
    let (session, _) = post(INITIALIZE.to_owned(), None).await;
    post(INITIALIZED.to_owned(), session.clone()).await;
    let mut samples = Vec::with_capacity(CALLS);
    for round in 0..WARM_UP + CALLS {
        let body = call_line(round);
        let start = Instant::now();
        let (_, answer) = post(body, session.clone()).await;
        let elapsed = start.elapsed();
        assert!(answer.contains(r#""isError":false"#), "{answer}");
        if round >= WARM_UP {
            samples.push(elapsed);
        }
    }
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
    let (raw_stdio_p50, raw_stdio_p99) = percentiles(runtime.block_on(raw_stdio(&bin)));
    let (raw_http_p50, raw_http_p99) = percentiles(runtime.block_on(raw_http(&bin)));
    eprintln!("todo_write round trip over {CALLS} calls:");
    eprintln!("  in-process  p50 {local_p50:>10.1?}  p99 {local_p99:>10.1?}");
    eprintln!("  stdio (MCP) p50 {stdio_p50:>10.1?}  p99 {stdio_p99:>10.1?}");
    eprintln!("  http (MCP)  p50 {http_p50:>10.1?}  p99 {http_p99:>10.1?}");
    eprintln!("  raw stdio   p50 {raw_stdio_p50:>10.1?}  p99 {raw_stdio_p99:>10.1?}");
    eprintln!("  raw http    p50 {raw_http_p50:>10.1?}  p99 {raw_http_p99:>10.1?}");
    eprintln!(
        "  p50 overhead {:.1?} (target <= 100µs)",
        stdio_p50.saturating_sub(local_p50)
    );
    eprintln!(
        "  http / stdio p50 {:.2}x (target <= 2x)",
        http_p50.as_secs_f64() / stdio_p50.as_secs_f64()
    );
    eprintln!(
        "  http overhead over in-process / stdio round trip, p50 {:.2}x; raw http / raw stdio p50 {:.2}x",
        http_p50.saturating_sub(local_p50).as_secs_f64() / stdio_p50.as_secs_f64(),
        raw_http_p50.as_secs_f64() / raw_stdio_p50.as_secs_f64()
    );
}
