//! Launch on due through `harness cron`, with real processes: a small bash script stands in
//! for a headless agent and calls back into `harness mcp` on the session over stdio.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{JsonlStore, SessionHeader, SessionStore, SystemClock};

use super::support::{events, harness_bin, of_type, start, wait_for_event};

/// The agent: records its arguments, then, as an MCP client of `harness mcp --dir {endpoint}
/// --session {session}`, initializes and calls `todo_write` once, keeping the answer.
const AGENT: &str = r#"#!/bin/bash
set -eu
session=$1 prompt=$2 endpoint=$3 out=$4 config=$5
printf '%s' "$prompt" > "$out/prompt.txt"
coproc SERVER { exec "$HARNESS" mcp --dir "$endpoint" --session "$session" --config "$config"; }
answer() { while read -r line <&"${SERVER[0]}"; do case $line in *"\"id\":$1"*) printf '%s\n' "$line"; return;; esac; done; }
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}' >&"${SERVER[1]}"
answer 1 > /dev/null
echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"${SERVER[1]}"
echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"todo_write","arguments":{"todos":[{"content":"checked the deploy","status":"completed"}]}}}' >&"${SERVER[1]}"
answer 2 > "$out/answer.json"
exec {SERVER[1]}>&-
wait "$SERVER_PID"
echo "agent done for $session"
"#;

/// `dir/agent.sh` (executable) and `dir/config.json` whose `launch` starts it.
fn setup(dir: &Path, launch: &Value) -> (PathBuf, Value) {
    let agent = dir.join("agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&agent)
        .status()
        .unwrap();
    let mut config = json!({"todo": {"allowParallelInProgress": false}, "launch": launch});
    if config["launch"]["argv"].is_null() {
        config["launch"]["argv"] = json!([
            agent,
            "{session}",
            "{prompt}",
            "{endpoint}",
            dir,
            dir.join("config.json")
        ]);
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    (agent, config)
}

fn cron(dir: &Path) -> Child {
    Command::new(harness_bin())
        .arg("cron")
        .arg("--dir")
        .arg(dir.join("sessions"))
        .arg("--config")
        .arg(dir.join("config.json"))
        .args(["--interval-ms", "100"])
        .env("HARNESS", harness_bin())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn stop(mut child: Child) {
    super::support::kill("TERM", child.id());
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_due_with_no_client_launches_the_agent_once_and_is_never_delivered_again() {
    let dir = tempfile::tempdir().unwrap();
    let (_agent, config) = setup(dir.path(), &json!({"timeoutMs": 60000}));
    // The reminder is created over MCP, then the client goes away.
    let mut server = start(dir.path(), "s1", &config);
    let created = server.call(
        "schedule_create",
        &json!({"prompt": "check the deploy", "after_seconds": 1}),
    );
    assert_eq!(created["isError"], json!(false), "{created}");
    server.stop();
    let cron = cron(dir.path());
    let log = wait_for_event(
        dir.path(),
        "s1",
        turnkit_launch::LAUNCH_ENDED_EVENT,
        &dir.path().join("cron.log"),
    );
    let prompt = std::fs::read_to_string(dir.path().join("prompt.txt")).unwrap();
    assert!(
        prompt.starts_with("[SCHEDULE REMINDER]\n")
            && prompt.ends_with("reminder_prompt_json: \"check the deploy\""),
        "{prompt}"
    );
    // The agent's call landed in the session, and its answer carried no reminder.
    let answer: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("answer.json")).unwrap())
            .unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert!(
        !answer.to_string().contains("SCHEDULE REMINDER"),
        "{answer}"
    );
    assert_eq!(of_type(&log, "todo/write").len(), 1);
    let queued = of_type(&log, turnkit_mcp::QUEUED_EVENT);
    assert_eq!(queued.len(), 1);
    let claims = of_type(&log, turnkit_mcp::LAUNCH_CLAIMED_EVENT);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].data["seqs"], json!([queued[0].seq]));
    assert_eq!(claims[0].data["prompt"], json!(prompt));
    assert!(of_type(&log, turnkit_mcp::CLAIMED_EVENT).is_empty());
    let ended = of_type(&log, turnkit_launch::LAUNCH_ENDED_EVENT)[0];
    assert_eq!(ended.data["launch"], claims[0].data["launch"]);
    let outcome = &ended.data["outcome"];
    assert_eq!(outcome["status"], "exit code: 0", "{outcome}");
    assert_eq!(outcome["outputTail"], "agent done for s1\n");
    assert!(outcome["pid"].as_u64().unwrap() > 1);
    assert!(outcome["startedAt"].is_string() && outcome["durationMs"].is_u64());
    // More passes start nothing again.
    let before = events(dir.path(), "s1").len();
    std::thread::sleep(std::time::Duration::from_millis(600));
    stop(cron);
    assert_eq!(events(dir.path(), "s1").len(), before);
    assert_eq!(
        of_type(&events(dir.path(), "s1"), turnkit_mcp::LAUNCH_CLAIMED_EVENT).len(),
        1
    );
    // A client that comes back is not handed the reminder.
    let mut server = start(dir.path(), "s1", &config);
    let listed = server.call("todo_write", &json!({"todos": []}));
    assert!(
        !listed.to_string().contains("SCHEDULE REMINDER"),
        "{listed}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_runner_died_is_reported_unknown_once_and_never_started() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &json!({}));
    // What a cron killed with SIGKILL after its claim leaves: the owed reminder and the
    // durable claim, no end, no lock held.
    {
        let store = JsonlStore::new(dir.path().join("sessions"), Arc::new(SystemClock)).unwrap();
        let session = store.create(SessionHeader::new("s2")).unwrap();
        let queued = session
            .append(
                turnkit_mcp::QUEUED_EVENT,
                json!({"lane":"followup","source":{"kind":"plugin","plugin":"schedule"},"text":"[SCHEDULE REMINDER]\nx","subjects":[{"kind":"reminder","id":"schedule-1","occurrence":1}]}),
            )
            .unwrap();
        session
            .append(
                turnkit_mcp::LAUNCH_CLAIMED_EVENT,
                json!({"launch":"launch-dead","seqs":[queued.seq],"prompt":"[SCHEDULE REMINDER]\nx"}),
            )
            .unwrap();
        session.flush().await.unwrap();
    }
    let cron = cron(dir.path());
    let log = wait_for_event(
        dir.path(),
        "s2",
        turnkit_launch::LAUNCH_UNKNOWN_EVENT,
        &dir.path().join("cron.log"),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    stop(cron);
    let log_after = events(dir.path(), "s2");
    assert_eq!(log_after.len(), log.len(), "{log_after:#?}");
    assert_eq!(
        of_type(&log, turnkit_launch::LAUNCH_UNKNOWN_EVENT)[0].data,
        json!({"launch":"launch-dead"})
    );
    let notices: Vec<&str> = of_type(&log, turnkit_mcp::QUEUED_EVENT)
        .iter()
        .filter_map(|e| e.data["text"].as_str())
        .filter(|t| t.starts_with("[LAUNCH OUTCOME UNKNOWN]"))
        .collect();
    assert_eq!(notices.len(), 1);
    assert!(notices[0].contains("launch_id: launch-dead"));
    assert!(
        !dir.path().join("prompt.txt").exists(),
        "the agent was started"
    );
    assert!(of_type(&log, turnkit_launch::LAUNCH_ENDED_EVENT).is_empty());
}
