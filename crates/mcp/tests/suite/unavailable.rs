//! A second `harness mcp` on a session another server holds: it still answers the handshake,
//! lists its tools, and says in its instructions and in every tool call exactly why it cannot
//! serve and what to do, in both lifecycles; its standard error says why once, and it exits 1
//! when the client disconnects. Nothing of the first server's session changes.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::{BOUND, config};
use crate::suite::tasks::{Raw, meta};

/// What the client is told about session `s` of `dir` held by another server.
fn reason(dir: &std::path::Path) -> String {
    format!(
        "harness cannot serve session s: its session file {} is locked by another open \
         handle: another harness server (another client, or another window of this one) is \
         serving it. Give each project and each client window a session of its own (start \
         `harness mcp` with its own --session, for example one per working folder), or close \
         the other client; then reconnect this MCP server (Claude Code: /mcp, then reconnect; \
         Codex: start a new session).",
        dir.join("sessions").join("s.jsonl").display()
    )
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const TOOLS: [&str; 8] = [
    "todo_write",
    "job_output",
    "job_list",
    "job_kill",
    "bash",
    "schedule_create",
    "schedule_list",
    "schedule_delete",
];

#[tokio::test]
async fn a_second_server_on_a_locked_session_tells_the_client_why_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Raw::start(dir.path(), "s", &config());
    first.discover(false).await;
    let wrote = first
        .call(
            "todo_write",
            json!({"todos": [{"content": "Ship", "status": "in_progress"}]}),
            false,
        )
        .await;
    assert_eq!(wrote["result"]["isError"], false);
    let log = std::fs::read_to_string(dir.path().join("sessions/s.jsonl")).unwrap();
    let why = reason(dir.path());
    let refused = json!({
        "content": [{"type": "text", "text": format!("Error: {why}")}],
        "isError": true,
    });
    let instructions = format!(
        "{why}\n\nUntil then every harness tool call answers with this error: tell the user \
         exactly this, and do not retry the call."
    );

    // The initialize lifecycle (Codex, and Claude Code's fallback).
    let mut second = Raw::start(dir.path(), "s", &config());
    let init = second
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "codex", "version": "0.169.0"}}),
        )
        .await;
    assert_eq!(init["result"]["instructions"], instructions.as_str());
    assert_eq!(init["result"]["serverInfo"]["name"], "harness");
    second.notify("notifications/initialized").await;
    assert_eq!(
        tool_names(&second.request("tools/list", json!({})).await),
        TOOLS
    );
    for tool in TOOLS {
        let result = second
            .request("tools/call", json!({"name": tool, "arguments": {}}))
            .await;
        assert_eq!(result["result"], refused, "{tool}");
    }
    second.kill().await;

    // The stateless lifecycle (Claude Code's `server/discover`).
    let mut third = Raw::start(dir.path(), "s", &config());
    let discovered = third.discover(true).await;
    assert_eq!(discovered["result"]["instructions"], instructions.as_str());
    let listed = third
        .request("tools/list", json!({"_meta": meta(true)}))
        .await;
    assert_eq!(tool_names(&listed), TOOLS);
    let ran = dir.path().join("ran");
    let command = format!("touch '{}'", ran.display());
    let mut result = third
        .call(
            "bash",
            json!({"command": command, "run_in_background": true}),
            true,
        )
        .await;
    result["result"]
        .as_object_mut()
        .unwrap()
        .remove("resultType");
    assert_eq!(result["result"], refused);
    third.kill().await;
    assert!(!ran.exists(), "a refused call ran");

    // Standard error says it once; a client that disconnects ends it with exit code 1.
    let output = tokio::time::timeout(
        BOUND,
        Raw::command(dir.path(), "s", &config(), None).output(),
    )
    .await
    .expect("the refused server exits once its client is gone")
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!(
            "harness: session file {} is locked by another open handle\n",
            dir.path().join("sessions/s.jsonl").display()
        )
    );

    // The first server's session is as it left it, and it still serves.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sessions/s.jsonl")).unwrap(),
        log
    );
    let listed = first.call("job_list", json!({}), false).await;
    assert_eq!(listed["result"]["isError"], false);
    first.stop().await;
}
