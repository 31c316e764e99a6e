//! The tasks extension as an independent 2026-07-28 client sees it: raw JSON-RPC posted over
//! HTTP with a plain HTTP client (no MCP SDK), checking the result shapes, `tasks/update`,
//! `tasks/cancel` after the TTL, and that expired tasks are forgotten with their holds.
//!
//! The server is a real child process on the wall clock; a wait polls its answers with a
//! short pause, bounded by a deadline.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::http_support::{client, start_http, stateless, texts};
use crate::suite::support::BOUND;
use crate::suite::tasks::task_id;

type Http = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// Posts one request of the 2026-07-28 era declaring the tasks extension; its one message.
async fn post(http: &Http, url: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let reply = stateless(http, url, method, name, params, true).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.messages().remove(0)
}

async fn call(http: &Http, url: &str, tool: &str, arguments: Value) -> Value {
    post(
        http,
        url,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

async fn get(http: &Http, url: &str, task: &str) -> Value {
    post(http, url, "tasks/get", Some(task), json!({"taskId": task})).await
}

/// Polls `tasks/get` of `task` until `done` holds of the whole message, within [`BOUND`].
async fn until_got(http: &Http, url: &str, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let got = get(http, url, task).await;
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
    let http = client();
    let url = server.url("s1");
    let command = format!(
        "until [ -e {} ]; do sleep 0.01; done; printf done",
        gate.display()
    );
    let started = call(
        &http,
        &url,
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
        &http,
        &url,
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
        &http,
        &url,
        "tasks/update",
        Some("nope"),
        json!({"taskId": "nope", "inputResponses": {}}),
    )
    .await;
    assert_eq!(nope["error"], unknown("nope"));
    std::fs::write(&gate, "").unwrap();
    let done = until_got(&http, &url, &task, |got| {
        got["result"]["status"] != "working"
    })
    .await;
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
                    {"type": "text", "text": format!("background job bash-1 (bash: {command}) finished [status: completed, exit code: 0]. Read its output with job_output.")},
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
        &http,
        &url,
        "tasks/update",
        Some(&task),
        json!({"taskId": task, "inputResponses": {}}),
    )
    .await;
    assert_eq!(updated["result"], json!({"resultType": "complete"}));
}

/// With a one-second TTL (`--task-ttl 1`): past it a task is unknown to `tasks/get`,
/// `tasks/update` and `tasks/cancel`; the cancel kills nothing (the job still runs); the
/// task's hold is gone, so the notice of its job reaches the next tool result; and a
/// restarted server does not bring the task back.
#[tokio::test]
async fn past_its_ttl_a_task_is_forgotten_and_cancelling_it_kills_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let sessions = dir.path().join("sessions");
    let args = ["--dir", sessions.to_str().unwrap(), "--task-ttl", "1"];
    let mut server = start_http(dir.path(), &args).await;
    let http = client();
    let url = server.url("s1");
    let sleeper = call(
        &http,
        &url,
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
        &http,
        &url,
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
    .await;
    assert_eq!(gated["result"]["ttlMs"], 1000, "{gated}");
    let gated = task_id(&gated["result"]);
    assert_eq!(
        get(&http, &url, &gated).await["result"]["status"],
        "working"
    );
    // Polled all along, the task still ends with its TTL.
    let expired = until_got(&http, &url, &sleeper, |got| got.get("error").is_some()).await;
    assert_eq!(expired["error"], unknown(&sleeper));
    let cancelled = post(
        &http,
        &url,
        "tasks/cancel",
        Some(&sleeper),
        json!({"taskId": sleeper}),
    )
    .await;
    assert_eq!(cancelled["error"], unknown(&sleeper));
    let updated = post(
        &http,
        &url,
        "tasks/update",
        Some(&sleeper),
        json!({"taskId": sleeper, "inputResponses": {}}),
    )
    .await;
    assert_eq!(updated["error"], unknown(&sleeper));
    let gated_got = until_got(&http, &url, &gated, |got| got.get("error").is_some()).await;
    assert_eq!(gated_got["error"], unknown(&gated));
    let listed = call(&http, &url, "job_list", json!({})).await;
    assert_eq!(
        texts(&listed["result"]),
        [format!(
            "bash-1 [bash] running — sleep 1000\nbash-2 [bash] running — {command}"
        )]
    );
    // The expired task holds nothing: its job's notice goes to the next tool result.
    std::fs::write(&gate, "").unwrap();
    let notice = format!(
        "background job bash-2 (bash: {command}) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        // Polling the forgotten task does not keep the notice either.
        assert_eq!(get(&http, &url, &gated).await["error"], unknown(&gated));
        let listed = call(&http, &url, "job_list", json!({})).await;
        let got = texts(&listed["result"]);
        if got.len() > 1 {
            assert_eq!(got[1], notice, "{listed}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let killed = call(&http, &url, "job_kill", json!({"job_id": "bash-1"})).await;
    assert_eq!(killed["result"]["isError"], false, "{killed}");
    server.child.kill().await.unwrap();

    // Replayed past their TTL, the tasks are not loaded.
    let server = start_http(dir.path(), &args).await;
    let url = server.url("s1");
    assert_eq!(get(&http, &url, &sleeper).await["error"], unknown(&sleeper));
    assert_eq!(get(&http, &url, &gated).await["error"], unknown(&gated));
}
