//! Messages owed to the model when a call opens a task: they ride the `CreateTaskResult`
//! (in `_meta["com.anthropic/agent-task"]`) only for Claude Code, the one client known to
//! show that text to the model; for any other tasks-capable client they stay owed and reach
//! the next ordinary tool result.
//!
//! The server is a real child process on the wall clock, so a wait here polls its session log
//! with a short pause, bounded by a deadline.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::BOUND;
use crate::suite::tasks::{GATED, NOTICE, Raw, gated_config, mcp_events, task_id, texts};

/// A request `_meta` of the stateless era from client `name`, declaring the tasks extension.
fn meta_of(name: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    })
}

/// A second job that runs until the test creates `go2`, so its own notice stays out of the way.
const SECOND: &str = "until [ -e go2 ]; do sleep 0.01; done; printf two";

/// Client `name` runs a job without a task, lets its notice become owed, then opens a task;
/// returns the task's immediate text, the texts of the next ordinary tool result after its
/// first block (the job list), and the types of the `mcp/*` events in the log once the claim is
/// recorded, read before the second job may end (its own notice would otherwise race the read).
async fn owed_around_a_task(dir: &Path, name: &str) -> (String, Vec<String>, Vec<String>) {
    let mut raw = Raw::start(dir, "s1", &gated_config(dir));
    raw.request("server/discover", json!({"_meta": meta_of(name)}))
        .await;
    let mut plain = meta_of(name);
    plain["io.modelcontextprotocol/clientCapabilities"] = json!({"extensions": {}});
    let call = |arguments: Value, meta: Value| json!({"name": "bash", "arguments": arguments, "_meta": meta});
    let started = raw
        .request(
            "tools/call",
            call(
                json!({"command": GATED, "run_in_background": true}),
                plain.clone(),
            ),
        )
        .await;
    assert_eq!(started["result"]["resultType"], "complete", "{started}");
    std::fs::write(dir.join("go"), "").unwrap();
    let deadline = tokio::time::Instant::now() + BOUND;
    while !mcp_events(dir, "s1").iter().any(|(t, _)| t == "mcp/queued") {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let opened = raw
        .request(
            "tools/call",
            call(
                json!({"command": SECOND, "run_in_background": true}),
                meta_of(name),
            ),
        )
        .await;
    let task = &opened["result"];
    assert_eq!(task["resultType"], "task", "{opened}");
    task_id(task);
    let immediate = task["_meta"]["com.anthropic/agent-task"]["modelImmediateResponse"]
        .as_str()
        .unwrap_or_else(|| panic!("{opened}"))
        .to_owned();
    let listed = raw
        .request(
            "tools/call",
            json!({"name": "job_list", "arguments": {}, "_meta": plain}),
        )
        .await;
    let rest = texts(&listed["result"]).split_off(1);
    // A claim is recorded once its response is written, so it may trail the answer a little.
    let deadline = tokio::time::Instant::now() + BOUND;
    while !mcp_events(dir, "s1")
        .iter()
        .any(|(t, _)| t == "mcp/claimed")
    {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let types = mcp_events(dir, "s1").into_iter().map(|(t, _)| t).collect();
    std::fs::write(dir.join("go2"), "").unwrap();
    raw.stop().await;
    (immediate, rest, types)
}

#[tokio::test]
async fn claude_code_gets_owed_notices_with_the_task_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let (immediate, rest, types) = owed_around_a_task(dir.path(), "claude-code").await;
    assert_eq!(
        immediate,
        format!("started background job bash-2\n\n{NOTICE}")
    );
    // Delivered with the task: the next result does not repeat it.
    assert_eq!(rest, Vec::<String>::new());
    assert_eq!(types, ["mcp/queued", "mcp/task", "mcp/claimed"]);
}

#[tokio::test]
async fn another_tasks_client_gets_owed_notices_with_its_next_tool_result() {
    let dir = tempfile::tempdir().unwrap();
    let (immediate, rest, types) = owed_around_a_task(dir.path(), "tasks-client").await;
    assert_eq!(immediate, "started background job bash-2");
    // Still owed after the task's answer: the next ordinary result carries it.
    assert_eq!(rest, [NOTICE]);
    assert_eq!(types, ["mcp/queued", "mcp/task", "mcp/claimed"]);
}
