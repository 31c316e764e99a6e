//! Launch on due in `harness mcp --http` on a JSONL folder, with real processes: a bash
//! script stands in for the headless agent and calls back over HTTP (bash's `/dev/tcp`) with
//! the token it was given, which reaches its own session and no other.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{BOUND, events, harness_bin, kill, of_type, wait_for_event};

/// The team's token (the token file's only line).
const TEAM: &str = "team-token-0123456789abcdef";

/// The agent: `$1` the output folder, `$2` the session's endpoint. With `$HARNESS_TOKEN` it
/// initializes, calls `todo_write` once in its session, then tries the same token on the
/// session `other` and records the status; prints a last line.
const AGENT: &str = r#"#!/bin/bash
set -eu
out=$1 endpoint=$2
hostport=${endpoint#http://}; hostport=${hostport%%/*}
host=${hostport%:*} port=${hostport##*:}
path=/${endpoint#http://*/}
printf '%s' "$HARNESS_TOKEN" > "$out/token.txt"
# post PATH BODY [MCP-SESSION-ID]: the whole response (status line, headers, body).
post() {
  local extra=""
  if [ -n "${3:-}" ]; then extra="mcp-session-id: $3"$'\r\n'; fi
  exec 3<>"/dev/tcp/$host/$port"
  printf 'POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n%sContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "$hostport" "$HARNESS_TOKEN" "$extra" "${#2}" "$2" >&3
  cat <&3
  exec 3<&-
}
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}'
response=$(post "$path" "$init")
sid=$(printf '%s' "$response" | tr -d '\r' | grep -i '^mcp-session-id:' | cut -d' ' -f2)
post "$path" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$sid" > /dev/null
post "$path" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"todo_write","arguments":{"todos":[{"content":"checked the deploy","status":"completed"}]}}}' "$sid" \
  | tr -d '\r' | sed -n '/^$/,$p' | sed -n 's/^data: //; /^{/p' > "$out/answer.json"
post "/sessions/other/mcp" "$init" | head -1 | tr -d '\r' > "$out/other.txt"
echo "agent done"
"#;

/// One raw HTTP/1.1 `POST` with the team token: the status and the body.
fn post(
    addr: &str,
    path: &str,
    body: &Value,
    session: Option<&str>,
    token: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    let extra = session.map_or(String::new(), |s| format!("mcp-session-id: {s}\r\n"));
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2025-06-18\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let sid = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(|_| l[16..].trim().to_owned())
        })
        .unwrap_or_default();
    (status, sid, body.to_owned())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"user","version":"1"}}}"#;

/// A running `harness mcp --http`, stopped (SIGTERM, then waited for) when dropped, a failed
/// test's included.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        kill("TERM", self.0.id());
        let _ = self.0.wait();
    }
}

/// `harness mcp --http 127.0.0.1:0` over `dir/sessions` with the team token, sessions released
/// after one idle second; returns it and `ADDR`. Its standard error goes on to `dir/server.log`.
fn serve(dir: &Path) -> (Served, String) {
    let mut child = Command::new(harness_bin())
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--idle-release",
            "1",
            "--dir",
        ])
        .arg(dir.join("sessions"))
        .arg("--config")
        .arg(dir.join("config.json"))
        .arg("--token-file")
        .arg(dir.join("tokens"))
        .env("RUST_LOG", "turnkit_launch=debug")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("harness mcp: serving http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    // Keep draining its standard error so it never blocks on a full pipe.
    let mut log = std::fs::File::create(dir.join("server.log")).unwrap();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
        }
    });
    (Served(child), addr)
}

#[test]
fn a_due_reminder_launches_the_agent_with_a_token_for_its_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = d.join("agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&agent)
        .status()
        .unwrap();
    std::fs::write(d.join("tokens"), format!("{TEAM}\n")).unwrap();
    let config = json!({
        "todo": {"allowParallelInProgress": false},
        "launch": {"argv": [agent, d, "{endpoint}"], "timeoutMs": 60000}
    });
    std::fs::write(d.join("config.json"), config.to_string()).unwrap();
    let (server, addr) = serve(d);
    // The user's client creates the reminder over HTTP, then goes away.
    let init: Value = serde_json::from_str(INITIALIZE).unwrap();
    let (status, sid, _) = post(&addr, "/sessions/s1/mcp", &init, None, TEAM);
    assert_eq!(status, 200);
    post(
        &addr,
        "/sessions/s1/mcp",
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&sid),
        TEAM,
    );
    let (status, _, body) = post(
        &addr,
        "/sessions/s1/mcp",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "schedule_create",
            "arguments": {"prompt": "check the deploy", "after_seconds": 2}}}),
        Some(&sid),
        TEAM,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"isError\":false"), "{body}");
    let log = wait_for_event(
        d,
        "s1",
        turnkit_launch::LAUNCH_ENDED_EVENT,
        &d.join("server.log"),
    );
    let ended = of_type(&log, turnkit_launch::LAUNCH_ENDED_EVENT)[0];
    assert_eq!(
        ended.data["outcome"]["status"], "exit code: 0",
        "{}",
        ended.data
    );
    assert_eq!(ended.data["outcome"]["outputTail"], "agent done\n");
    // Its call landed in its session; the same token was refused on another session.
    let answer: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("answer.json")).unwrap()).unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert_eq!(of_type(&log, "todo/write").len(), 1);
    assert_eq!(
        std::fs::read_to_string(d.join("other.txt")).unwrap(),
        "HTTP/1.1 403 Forbidden\n"
    );
    assert!(!d.join("sessions").join("other.jsonl").exists());
    // The token was the agent's alone: 64 hex digits, not the team's, and revoked at its end.
    let token = std::fs::read_to_string(d.join("token.txt")).unwrap();
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    let (status, _, body) = post(&addr, "/sessions/s1/mcp", &init, None, &token);
    assert_eq!(status, 401, "{body}");
    // The reminder was claimed once, never delivered to a tool result.
    let claims = of_type(&log, turnkit_mcp::LAUNCH_CLAIMED_EVENT);
    assert_eq!(claims.len(), 1);
    assert!(of_type(&log, turnkit_mcp::CLAIMED_EVENT).is_empty());
    assert!(
        !answer.to_string().contains("SCHEDULE REMINDER"),
        "{answer}"
    );
    // Nothing more is launched: wait for two more folder passes (a pass a second).
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        of_type(&events(d, "s1"), turnkit_mcp::LAUNCH_CLAIMED_EVENT).len(),
        1
    );
    assert!(started.elapsed() < BOUND);
    drop(server);
}
