//! A `tools/call` is a `tools/call {name}` span (`mcp.method.name`, `jsonrpc.request.id`)
//! around the tool's `execute_tool` span, whose `gen_ai.tool.call.id` is the JSON-RPC
//! request id (docs/observability.md).
//!
//! A test binary of its own: `tracing` caches each callsite's interest process-wide.
#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use turnkit_mcp::{FamiliesConfig, ServeOptions, SessionHost, SessionOptions, serve};

/// Captures what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Capture(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_request_id_is_the_tool_call_id() {
    let capture = Capture::default();
    let sink = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_level(false)
        .with_max_level(tracing::Level::INFO)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || sink.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();

    let dir = tempfile::tempdir().unwrap();
    let host = SessionHost::open(&SessionOptions {
        dir: dir.path().to_owned(),
        session: Some("s1".to_owned()),
        configs: FamiliesConfig::defaults(),
        job_task_ttl: None,
    })
    .unwrap();
    let (client, server) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server);
    let stop = turnkit_core::CancellationToken::new();
    let serving = tokio::spawn(serve(
        host,
        ServeOptions {
            stop: stop.clone(),
            ..ServeOptions::default()
        },
        read,
        write,
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut replies = BufReader::new(client_read).lines();
    let mut send = async |line: Value, reply: bool| {
        client_write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        if reply {
            let line = tokio::time::timeout(Duration::from_secs(10), replies.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            serde_json::from_str::<Value>(&line).unwrap()
        } else {
            Value::Null
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        true,
    )
    .await;
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    )
    .await;
    let reply = send(
        json!({"jsonrpc": "2.0", "id": "call-41", "method": "tools/call", "params": {
            "name": "todo_write",
            "arguments": {"todos": [{"content": "trace it", "status": "in_progress"}]}}}),
        true,
    )
    .await;
    assert_eq!(reply["id"], "call-41");
    stop.cancel();
    let _ = serving.await;

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let closes: Vec<&str> = text
        .lines()
        .filter(|line| line.ends_with("close") || line.contains(": close "))
        .filter(|line| line.contains("tools/call"))
        // rmcp's own span of the connection is the outermost.
        .map(|line| line.trim_start_matches("serve_inner:"))
        .map(|line| line.split(": close").next().unwrap())
        .collect();
    assert_eq!(
        closes,
        [
            // The body of `todo_write` is the agent's `plan` span (docs/observability.md).
            "tools/call{otel.name=tools/call todo_write mcp.method.name=\"tools/call\" \
             jsonrpc.request.id=call-41 gen_ai.operation.name=\"execute_tool\" \
             gen_ai.tool.name=todo_write}:execute_tool{otel.name=execute_tool todo_write \
             gen_ai.operation.name=\"execute_tool\" gen_ai.tool.name=\"todo_write\" \
             gen_ai.tool.call.id=\"call-41\" gen_ai.conversation.id=\"s1\" tool=\"todo_write\" \
             session=\"s1\"}:plan{otel.name=plan s1 gen_ai.operation.name=\"plan\" \
             gen_ai.agent.name=\"s1\"}",
            "tools/call{otel.name=tools/call todo_write mcp.method.name=\"tools/call\" \
             jsonrpc.request.id=call-41 gen_ai.operation.name=\"execute_tool\" \
             gen_ai.tool.name=todo_write}:execute_tool{otel.name=execute_tool todo_write \
             gen_ai.operation.name=\"execute_tool\" gen_ai.tool.name=\"todo_write\" \
             gen_ai.tool.call.id=\"call-41\" gen_ai.conversation.id=\"s1\" tool=\"todo_write\" \
             session=\"s1\" outcome=\"ok\"}",
            "tools/call{otel.name=tools/call todo_write mcp.method.name=\"tools/call\" \
             jsonrpc.request.id=call-41 gen_ai.operation.name=\"execute_tool\" \
             gen_ai.tool.name=todo_write}",
        ],
        "{text}"
    );
}
