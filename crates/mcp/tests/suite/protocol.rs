//! The JSON-RPC surface as a raw client sees it.

use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::suite::support::{BOUND, config, harness_bin};

/// `harness mcp` serving `session` in a fresh folder, its standard input and output piped.
/// The folder lives as long as the returned guard.
fn serve(session: &str) -> (tempfile::TempDir, tokio::process::Child) {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let child = tokio::process::Command::new(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.path().join("sessions"))
        .args(["--session", session])
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (dir, child)
}

async fn exchange(lines: &[Value]) -> Vec<Value> {
    let raw: Vec<(String, bool)> = lines
        .iter()
        .map(|line| (line.to_string(), line.get("id").is_some()))
        .collect();
    exchange_lines(&raw).await
}

/// Writes each line and, where its flag is set, reads one reply line.
async fn exchange_lines(lines: &[(String, bool)]) -> Vec<Value> {
    let (_dir, mut child) = serve("raw");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut replies = Vec::new();
    for (line, replied) in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        if *replied {
            let reply = tokio::time::timeout(BOUND, stdout.next_line())
                .await
                .expect("a reply in time")
                .unwrap()
                .expect("a reply line");
            replies.push(serde_json::from_str(&reply).unwrap());
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the server exits when stdin closes")
        .unwrap();
    assert!(status.success());
    replies
}

fn initialize(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }})
}

#[tokio::test]
async fn unknown_methods_get_method_not_found_before_and_after_initialize() {
    let replies = exchange(&[
        json!({"jsonrpc": "2.0", "id": "probe-1", "method": "harness/probe"}),
        initialize("init"),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "harness/probe"}),
        json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {"name": "job_list", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "job_list", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 9, "method": "prompts/list"}),
    ])
    .await;
    assert_eq!(
        replies[0],
        json!({"jsonrpc": "2.0", "id": "probe-1", "error": {"code": -32601, "message": "Method not found: harness/probe"}})
    );
    assert_eq!(replies[1]["id"], "init");
    assert_eq!(replies[1]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        replies[1]["result"]["capabilities"],
        json!({"logging": {}, "resources": {"subscribe": true}, "tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert_eq!(
        replies[2],
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found: harness/probe"}})
    );
    let job_list =
        json!({"content": [{"type": "text", "text": "(no background jobs)"}], "isError": false});
    assert_eq!(
        replies[3],
        json!({"jsonrpc": "2.0", "id": "s", "result": job_list})
    );
    assert_eq!(
        replies[4],
        json!({"jsonrpc": "2.0", "id": 8, "result": job_list})
    );
    assert_eq!(replies[5]["error"]["code"], -32601);
}

fn handshake() -> Vec<(String, bool)> {
    vec![
        (initialize("init").to_string(), true),
        (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            false,
        ),
    ]
}

#[tokio::test]
async fn a_line_that_is_not_json_is_answered_parse_error_with_id_null() {
    let mut lines = handshake();
    lines.push(("not json".to_owned(), true));
    lines.push((r#"{"jsonrpc": "2.0", "id": 3, "method": "#.to_owned(), true));
    lines.push((
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "job_list", "arguments": {}}}).to_string(),
        true,
    ));
    let replies = exchange_lines(&lines).await;
    assert_eq!(
        replies[1],
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: expected ident at line 1 column 2"}})
    );
    assert_eq!(
        replies[2],
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: EOF while parsing a value at line 1 column 38"}})
    );
    // The connection goes on.
    assert_eq!(replies[3]["id"], 4);
    assert_eq!(replies[3]["result"]["isError"], false);
}

#[tokio::test]
async fn tools_call_params_that_do_not_decode_are_invalid_params_not_an_unknown_method() {
    let mut lines = handshake();
    for (id, params) in [
        (5, json!({"name": 7})),
        (6, json!({"arguments": {}})),
        (7, json!("job_list")),
    ] {
        lines.push((
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                .to_string(),
            true,
        ));
    }
    lines.push((
        json!({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": 1}})
            .to_string(),
        true,
    ));
    let replies = exchange_lines(&lines).await;
    let errors: Vec<Value> = replies[1..].iter().map(|r| r["error"].clone()).collect();
    assert_eq!(
        errors,
        [
            json!({"code": -32602, "message": "Invalid params for tools/call: invalid type: integer `7`, expected a string"}),
            json!({"code": -32602, "message": "Invalid params for tools/call: missing field `name`"}),
            json!({"code": -32602, "message": "Invalid params for tools/call: invalid type: string \"job_list\", expected struct CallToolRequestParams"}),
            json!({"code": -32602, "message": "Invalid params for resources/read: invalid type: integer `1`, expected a string"}),
        ]
    );
}

#[tokio::test]
async fn a_missing_parallel_choice_is_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, r#"{"todo":{}}"#).unwrap();
    let output = tokio::process::Command::new(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.path())
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!(
            "harness: {}: invalid configuration: tool-todo: $.allowParallelInProgress missing required value\n",
            config_path.display()
        )
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn sigterm_stops_the_jobs_and_exits_cleanly() {
    let (_dir, mut child) = serve("term");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in [
        initialize("init"),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "sleep 31.7", "run_in_background": true}}}),
    ] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        tokio::time::timeout(BOUND, stdout.next_line())
            .await
            .expect("a reply in time")
            .unwrap()
            .expect("a reply line");
    }
    super::support::kill("TERM", child.id().unwrap());
    // stdin stays open: only the signal ends the server.
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the server exits on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    drop(stdin);
    // The background job's process did not outlive the server.
    let survivors = std::process::Command::new("pgrep")
        .args(["-f", "sleep 31.7"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&survivors.stdout), "");
}

#[tokio::test]
async fn a_corrupt_inbox_event_refuses_the_session_and_leaves_the_log_alone() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let log = concat!(
        r#"{"id":"bad"}"#,
        "\n",
        r#"{"seq":1,"type":"mcp/claimed","time":"2026-08-05T12:00:00.000Z","data":{"seqs":[7]}}"#,
        "\n",
    );
    let file = sessions.join("bad.jsonl");
    std::fs::write(&file, log).unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let output = tokio::process::Command::new(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(&sessions)
        .args(["--session", "bad"])
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "harness: corrupt inbox log at seq 1: seq 7 is not an unclaimed mcp/queued\n"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), log);
}

/// `harness mcp` with `config` in a fresh folder and `dir` as its session folder; its exit
/// status and standard error.
async fn refused(config: Value, dir: Option<&std::path::Path>) -> (Option<i32>, String) {
    let folder = tempfile::tempdir().unwrap();
    let config_path = folder.path().join("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let sessions = folder.path().join("sessions");
    let output = tokio::process::Command::new(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.unwrap_or(&sessions))
        .args(["--session", "s"])
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(output.stdout.is_empty());
    (
        output.status.code(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[tokio::test]
async fn a_bash_cwd_that_does_not_exist_is_refused_at_startup() {
    let (code, stderr) = refused(
        json!({"todo": {"allowParallelInProgress": false}, "bash": {"cwd": "/nonexistent/project"}}),
        None,
    )
    .await;
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "harness: bash.cwd /nonexistent/project is not a folder: No such file or directory (os error 2)\n"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().display().to_string();
    let (code, stderr) = refused(
        json!({"todo": {"allowParallelInProgress": false}, "bash": {"cwd": path}}),
        None,
    )
    .await;
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        format!("harness: bash.cwd {path} is not a folder\n")
    );
}

#[tokio::test]
async fn a_session_folder_that_cannot_be_written_is_refused_at_startup() {
    // /proc exists and refuses new files, even to root.
    let (code, stderr) = refused(config(), Some(std::path::Path::new("/proc"))).await;
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("harness: the session folder /proc is not writable: "),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_instructions_say_how_notices_reach_an_mcp_client() {
    let replies = exchange(&[initialize("init")]).await;
    let instructions = replies[0]["result"]["instructions"].as_str().unwrap();
    assert!(!instructions.contains("in-session"), "{instructions}");
    assert!(
        instructions.contains(turnkit_mcp::MCP_NOTICES),
        "{instructions}"
    );
    assert!(
        instructions.ends_with(turnkit_mcp::MCP_DELIVERY),
        "{instructions}"
    );
}
