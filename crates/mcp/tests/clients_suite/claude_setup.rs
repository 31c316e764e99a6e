//! What a Claude Code user sees when the harness server cannot serve: a session another
//! server holds (a second client or window on the same `--session`), shown to the model in the
//! server's instructions and in the failed call's text; and a token that is wrong or unset,
//! shown as a failed server whose refusal body Claude Code's MCP log holds.

use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

use crate::clients_suite::claude::{CLAUDE, PACKAGE, Tasks, command, http_entry, stdio_entry};
use crate::clients_suite::fake_api::{Block, Dialect, FakeApi, Turn};
use crate::clients_suite::support::{BOUND, Workspace, client_bin};

/// The tool results of the last model request, with Claude Code's error flag.
fn last_results(api: &FakeApi) -> Vec<(String, bool, Vec<String>)> {
    let requests = api.agent_requests();
    let last = requests.last().expect("a model request");
    let Some(message) = last.body["messages"].as_array().and_then(|m| m.last()) else {
        return Vec::new();
    };
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let texts = match &b["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            (
                b["tool_use_id"].as_str().unwrap().to_owned(),
                b["is_error"] == true,
                texts,
            )
        })
        .collect()
}

/// Every string inside `value`, depth first.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn a_second_window_on_a_held_session_is_told_why_and_what_to_do() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    // The first window's server holds session `held`.
    let (program, args) = ws.server_command("held");
    let mut first = tokio::process::Command::new(program)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(first.stderr.take().unwrap()).lines();
    let opened = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .expect("the first server opens its session")
        .unwrap();
    assert_eq!(opened.as_deref(), Some("harness mcp: session held"));

    let script = vec![
        Turn::new(vec![Block::Call {
            id: "toolu_01",
            tool: "todo_write",
            input: json!({"todos": [{"content": "Ship it", "status": "in_progress"}]}),
        }]),
        Turn::new(vec![Block::Text("Told the user.")]),
    ];
    let api = FakeApi::start(Dialect::Messages, script).await;
    let mut cmd = command(
        &bin,
        &ws,
        &api,
        Tasks::Off,
        &stdio_entry(&ws, "held"),
        &["-p", "Plan the work.", "--output-format", "json"],
    );
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let output = tokio::time::timeout(BOUND, cmd.output())
        .await
        .expect("claude -p ends")
        .unwrap();
    let messages: Value = serde_json::from_slice(&output.stdout).unwrap();
    let last = messages.as_array().and_then(|m| m.last()).unwrap();
    assert_eq!(last["result"], "Told the user.");
    // `/mcp` (and the init message) shows the server connected, not failed.
    assert_eq!(
        messages[0]["mcp_servers"],
        json!([{"name": "harness", "status": "connected", "source": "dynamic"}])
    );
    let why = format!(
        "harness cannot serve session held: its session file {} is locked by another open \
         handle: another harness server (another client, or another window of this one) is \
         serving it. Give each project and each client window a session of its own (start \
         `harness mcp` with its own --session, for example one per working folder), or close \
         the other client; then reconnect this MCP server (Claude Code: /mcp, then reconnect; \
         Codex: start a new session).",
        ws.path().join("sessions/held.jsonl").display()
    );
    // The model reads why in the server's instructions (Claude Code puts them under "MCP
    // Server Instructions" in the first message) and in the call's result.
    let requests = api.agent_requests();
    let mut texts = Vec::new();
    strings(&requests[0].body, &mut texts);
    let section = texts
        .iter()
        .find_map(|t| t.split_once("## harness\n").map(|(_, rest)| rest))
        .expect("an MCP Server Instructions section for harness");
    assert!(
        section.starts_with(&format!(
            "{why}\n\nUntil then every harness tool call answers with this error"
        )),
        "{section}"
    );
    assert_eq!(
        last_results(&api),
        [("toolu_01".to_owned(), true, vec![format!("Error: {why}")])]
    );
    first.kill().await.unwrap();
}

/// What Claude Code wrote to its MCP log for the `harness` server of workspace `ws` (under
/// `~/.cache/claude-cli-nodejs/<work folder>/mcp-logs-harness/`): every `debug` and `error`
/// text.
fn claude_mcp_log(ws: &Workspace) -> Vec<String> {
    let mut texts = Vec::new();
    let cache = ws.home().join(".cache/claude-cli-nodejs");
    for project in std::fs::read_dir(&cache).unwrap() {
        let logs = project.unwrap().path().join("mcp-logs-harness");
        for file in std::fs::read_dir(&logs).into_iter().flatten() {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            for line in text.lines() {
                let entry: Value = serde_json::from_str(line).unwrap();
                for key in ["debug", "error"] {
                    if let Some(text) = entry[key].as_str() {
                        texts.push(text.to_owned());
                    }
                }
            }
        }
    }
    texts
}

/// Claude Code over HTTP with `HARNESS_TOKEN` wrong (`Some`) or unset (`None`): `/mcp` shows
/// the server failed, and Claude Code's MCP log holds the refusal's JSON body, whose message
/// says what to do.
async fn refused_token(token: Option<&str>, message: &str) {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let server = ws.serve_http().await;
    let url = format!("http://{}/sessions/tok/mcp", server.addr);
    let api = FakeApi::start(
        Dialect::Messages,
        vec![Turn::new(vec![Block::Text("No tools.")])],
    )
    .await;
    let mut cmd = command(
        &bin,
        &ws,
        &api,
        Tasks::Off,
        &http_entry(&url),
        &["-p", "Plan the work.", "--output-format", "json"],
    );
    match token {
        Some(token) => cmd.env("HARNESS_TOKEN", token),
        None => cmd.env_remove("HARNESS_TOKEN"),
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let output = tokio::time::timeout(BOUND, cmd.output())
        .await
        .expect("claude -p ends")
        .unwrap();
    let messages: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        messages[0]["mcp_servers"],
        json!([{"name": "harness", "status": "failed", "source": "dynamic"}])
    );
    let body = json!({"error": "unauthorized", "message": message}).to_string();
    let log = claude_mcp_log(&ws);
    assert!(
        log.iter()
            .any(|text| text.contains(&format!("Error POSTing to endpoint: {body}"))),
        "{log:?}"
    );
    assert!(
        log.iter().any(|text| text
            .starts_with("Server rejected the configured Authorization header (HTTP 401).")),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_wrong_token_fails_the_server_and_claude_codes_log_shows_why() {
    refused_token(
        Some("wrong"),
        "the token sent is not one of this server's tokens. Send the token the server printed \
         (a line of its token file) as the Bearer token of the Authorization header",
    )
    .await;
}

#[tokio::test]
async fn an_unset_token_variable_fails_the_server_and_claude_codes_log_says_to_set_it() {
    refused_token(
        None,
        "the token sent is the unexpanded text ${HARNESS_TOKEN}: set HARNESS_TOKEN to the token \
         the server printed in the environment the client starts in, then restart the client",
    )
    .await;
}
