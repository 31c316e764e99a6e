//! The tasks extension as an independent 2026-07-28 client sees it: raw JSON-RPC posted over
//! HTTP with a plain HTTP client (no MCP SDK), checking the result shapes, `tasks/update`,
//! `tasks/cancel` after the TTL, and that expired tasks are forgotten with their holds.
//!
//! The server is a real child process on the wall clock; a wait polls its answers with a
//! short pause, bounded by a deadline.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::http_support::{HttpServer, client, start_http, stateless, texts};
use crate::suite::support::BOUND;
use crate::suite::tasks::task_id;

type Http = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// A plain HTTP client speaking to session `s1` of one server, with its token.
struct Peer {
    http: Http,
    url: String,
    auth: String,
}

impl Peer {
    fn new(server: &HttpServer) -> Self {
        Self {
            http: client(),
            url: server.url("s1"),
            auth: server.bearer(),
        }
    }
}

/// Posts one request of the 2026-07-28 era declaring the tasks extension; its one message.
async fn post(peer: &Peer, method: &str, name: Option<&str>, params: Value) -> Value {
    let reply = stateless(
        &peer.http,
        &peer.url,
        Some(&peer.auth),
        method,
        name,
        params,
        true,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.messages().remove(0)
}

async fn call(peer: &Peer, tool: &str, arguments: Value) -> Value {
    post(
        peer,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

async fn get(peer: &Peer, task: &str) -> Value {
    post(peer, "tasks/get", Some(task), json!({"taskId": task})).await
}

/// Polls `tasks/get` of `task` until `done` holds of the whole message, within [`BOUND`].
async fn until_got(peer: &Peer, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let got = get(peer, task).await;
        if done(&got) {
            return got;
        }
        assert!(tokio::time::Instant::now() < deadline, "{got}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn unknown(task: &str) -> Value {
    json!({"code": -32602, "message": format!("unknown task: {task}")})
}

#[tokio::test]
async fn a_completed_task_is_a_tool_result_and_tasks_update_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let sessions = dir.path().join("sessions");
    let server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    let peer = Peer::new(&server);
    let command = format!(
        "until [ -e {} ]; do sleep 0.01; done; printf done",
        gate.display()
    );
    let started = call(
        &peer,
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
    .await;
    let task = task_id(&started["result"]);
    let created = started["result"]["createdAt"].clone();
    assert_eq!(
        started["result"],
        json!({
            "resultType": "task",
            "taskId": task,
            "status": "working",
            "createdAt": created,
            "lastUpdatedAt": created,
            "ttlMs": 86_400_000,
            "pollIntervalMs": 500,
            "_meta": {"com.anthropic/agent-task": {"modelImmediateResponse": "started background job bash-1"}},
        })
    );
    // tasks/update of a known task is acknowledged (the server asks no input; the responses
    // are ignored), of an unknown one refused with -32602.
    let updated = post(
        &peer,
        "tasks/update",
        Some(&task),
        json!({"taskId": task, "inputResponses": {"q": {"answer": 1}}}),
    )
    .await;
    assert_eq!(
        updated,
        json!({"jsonrpc": "2.0", "id": "r", "result": {"resultType": "complete"}})
    );
    let nope = post(
        &peer,
        "tasks/update",
        Some("nope"),
        json!({"taskId": "nope", "inputResponses": {}}),
    )
    .await;
    assert_eq!(nope["error"], unknown("nope"));
    std::fs::write(&gate, "").unwrap();
    let done = until_got(&peer, &task, |got| got["result"]["status"] != "working").await;
    let updated_at = done["result"]["lastUpdatedAt"].clone();
    assert_eq!(
        done["result"],
        json!({
            "taskId": task,
            "status": "completed",
            "createdAt": created,
            "lastUpdatedAt": updated_at,
            "ttlMs": 86_400_000,
            "pollIntervalMs": 500,
            "result": {
                "content": [
                    {"type": "text", "text": format!("background job bash-1 (bash: {command}) finished [status: completed, exit code: 0].")},
                    {"type": "text", "text": "done\n[status: completed, exit code: 0]"},
                ],
                "isError": false,
                "resultType": "complete",
            },
            "resultType": "complete",
        })
    );
    // A completed task is still acknowledged.
    let updated = post(
        &peer,
        "tasks/update",
        Some(&task),
        json!({"taskId": task, "inputResponses": {}}),
    )
    .await;
    assert_eq!(updated["result"], json!({"resultType": "complete"}));
}

/// With a one-second TTL (`--task-ttl 1`): past it a task is unknown to `tasks/get`,
/// `tasks/update` and `tasks/cancel` (and `tasks/list` is not served); the cancel kills nothing (the job still runs); the
/// task's hold is gone, so the notice of its job reaches the next tool result; and a
/// restarted server does not bring the task back.
#[tokio::test]
async fn past_its_ttl_a_task_is_forgotten_and_cancelling_it_kills_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let sessions = dir.path().join("sessions");
    let args = ["--dir", sessions.to_str().unwrap(), "--task-ttl", "1"];
    let mut server = start_http(dir.path(), &args).await;
    let peer = Peer::new(&server);
    let sleeper = call(
        &peer,
        "bash",
        json!({"command": "sleep 1000", "run_in_background": true}),
    )
    .await;
    let sleeper = task_id(&sleeper["result"]);
    let command = format!(
        "until [ -e {} ]; do sleep 0.01; done; printf done",
        gate.display()
    );
    let gated = call(
        &peer,
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
    .await;
    assert_eq!(gated["result"]["ttlMs"], 1000, "{gated}");
    let gated = task_id(&gated["result"]);
    assert_eq!(get(&peer, &gated).await["result"]["status"], "working");
    // Polled all along, the task still ends with its TTL.
    let expired = until_got(&peer, &sleeper, |got| got.get("error").is_some()).await;
    assert_eq!(expired["error"], unknown(&sleeper));
    let cancelled = post(
        &peer,
        "tasks/cancel",
        Some(&sleeper),
        json!({"taskId": sleeper}),
    )
    .await;
    assert_eq!(cancelled["error"], unknown(&sleeper));
    let updated = post(
        &peer,
        "tasks/update",
        Some(&sleeper),
        json!({"taskId": sleeper, "inputResponses": {}}),
    )
    .await;
    assert_eq!(updated["error"], unknown(&sleeper));
    // `tasks/list` is not served (the server advertises no listing; an unserved method is
    // refused with 404 and -32601), so no listing can show a forgotten task.
    let listing = stateless(
        &peer.http,
        &peer.url,
        Some(&peer.auth),
        "tasks/list",
        None,
        json!({}),
        true,
    )
    .await;
    assert_eq!(
        (
            listing.status,
            listing.messages().remove(0)["error"].clone()
        ),
        (
            404,
            json!({"code": -32601, "message": "Method not found: tasks/list"})
        ),
        "{}",
        listing.body
    );
    let gated_got = until_got(&peer, &gated, |got| got.get("error").is_some()).await;
    assert_eq!(gated_got["error"], unknown(&gated));
    let listed = call(&peer, "job_list", json!({})).await;
    // Both jobs still run (the list goes on with what confines them).
    let running =
        format!("bash-1 [bash] running — sleep 1000\nbash-2 [bash] running — {command}\n");
    let listed = texts(&listed["result"]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].starts_with(&running), "{listed:?}");
    // The expired task holds nothing: its job's notice goes to the next tool result.
    std::fs::write(&gate, "").unwrap();
    let notice = format!(
        "background job bash-2 (bash: {command}) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        // Polling the forgotten task does not keep the notice either.
        assert_eq!(get(&peer, &gated).await["error"], unknown(&gated));
        let listed = call(&peer, "job_list", json!({})).await;
        let got = texts(&listed["result"]);
        if got.len() > 1 {
            assert_eq!(got[1], notice, "{listed}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let killed = call(&peer, "job_kill", json!({"job_id": "bash-1"})).await;
    assert_eq!(killed["result"]["isError"], false, "{killed}");
    server.child.kill().await.unwrap();

    // Replayed past their TTL, the tasks are not loaded.
    let server = start_http(dir.path(), &args).await;
    let peer = Peer::new(&server);
    assert_eq!(get(&peer, &sleeper).await["error"], unknown(&sleeper));
    assert_eq!(get(&peer, &gated).await["error"], unknown(&gated));
}
