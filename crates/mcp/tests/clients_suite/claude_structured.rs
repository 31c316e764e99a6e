//! Claude Code against `harness mcp --structured`: it validates every `structuredContent`
//! against the tool's `outputSchema` and shows the model only `structuredContent`, so a
//! result that broke its schema would reach the model as a failed call. One-shot and
//! streaming (with the task feature on), every tool and the domain-error branches: no call
//! that ran is reported failed, and the model sees exactly what the server sent.

use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::clients_suite::claude::{
    CLAUDE, PACKAGE, Streaming, Tasks, command, http_entry, stdio_entry,
};
use crate::clients_suite::fake_api::{Block, Dialect, FakeApi, Turn};
use crate::clients_suite::proxy::Proxy;
use crate::clients_suite::support::{BOUND, GATED, Workspace, client_bin};

/// Every tool result the model was sent, in order (the last request's history holds them
/// all): the call id, whether Claude Code marked it `is_error`, and its texts.
fn shown_results(api: &FakeApi) -> Vec<(String, bool, Vec<String>)> {
    let requests = api.agent_requests();
    let last = requests.last().expect("a model request");
    let mut shown = Vec::new();
    for message in last.body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let texts = match &block["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            shown.push((
                block["tool_use_id"].as_str().unwrap().to_owned(),
                block["is_error"] == true,
                texts,
            ));
        }
    }
    shown
}

/// The `structuredContent` of each of the server's complete `tools/call` answers, in the
/// order the calls were sent (`sent` the client's messages, `answered` the server's).
fn structured_answers(sent: &[Value], answered: &[Value]) -> Vec<(String, Value)> {
    sent.iter()
        .filter(|m| m["method"] == "tools/call")
        .filter_map(|call| {
            let answer = answered
                .iter()
                .find(|a| a["id"] == call["id"] && a.get("method").is_none())
                .unwrap_or_else(|| panic!("no answer to {call}"));
            let result = &answer["result"];
            (result["resultType"] != "task").then(|| {
                (
                    call["params"]["name"].as_str().unwrap().to_owned(),
                    result["structuredContent"].clone(),
                )
            })
        })
        .collect()
}

/// The calls of the one-shot script: every tool of the default catalog, and the branches
/// whose values differ in shape (foreground and background `bash`, a view and a domain error
/// of `schedule_create`, a deleted and a not-found `schedule_delete`, a list of jobs).
fn one_shot_script() -> Vec<Turn> {
    let call = |id: &'static str, tool: &'static str, input: Value| {
        Turn::new(vec![Block::Call { id, tool, input }])
    };
    vec![
        call("toolu_01", "bash", json!({"command": "echo hi"})),
        call(
            "toolu_02",
            "bash",
            json!({"command": "printf bg", "run_in_background": true}),
        ),
        call(
            "toolu_03",
            "job_output",
            json!({"job_id": "bash-2", "wait": true}),
        ),
        call("toolu_04", "job_kill", json!({"job_id": "bash-2"})),
        call("toolu_05", "job_list", json!({})),
        call(
            "toolu_06",
            "schedule_create",
            json!({"prompt": "Check the build", "after_seconds": 3600}),
        ),
        call(
            "toolu_07",
            "schedule_create",
            json!({"prompt": "No selector"}),
        ),
        call("toolu_08", "schedule_list", json!({})),
        call("toolu_09", "schedule_delete", json!({"id": "schedule-1"})),
        call("toolu_10", "schedule_delete", json!({"id": "schedule-1"})),
        call(
            "toolu_11",
            "todo_write",
            json!({"todos": [{"content": "Ship it", "status": "in_progress"}]}),
        ),
        Turn::new(vec![Block::Text("All done.")]),
    ]
}

/// Each result the model was shown is the server's `structuredContent` of that call, as JSON
/// text, and none is marked failed.
fn assert_shown_as_sent(api: &FakeApi, ws: &Workspace, expected_tools: &[&str]) {
    let shown = shown_results(api);
    let answers = structured_answers(&ws.client_messages(), &ws.server_messages());
    let tools: Vec<&str> = answers.iter().map(|(tool, _)| tool.as_str()).collect();
    assert_eq!(tools, expected_tools);
    let failed: Vec<&(String, bool, Vec<String>)> =
        shown.iter().filter(|(_, failed, _)| *failed).collect();
    assert_eq!(failed, Vec::<&(String, bool, Vec<String>)>::new());
    let complete: Vec<&(String, bool, Vec<String>)> = shown
        .iter()
        .filter(|(_, _, texts)| !texts[0].starts_with("MCP tool \"harness/"))
        .collect();
    assert_eq!(complete.len(), answers.len(), "{shown:?}");
    for ((id, _, texts), (tool, structured)) in complete.iter().zip(&answers) {
        assert!(structured.is_object(), "{tool}: no structuredContent");
        assert_eq!(texts.len(), 1, "{id} {tool}: {texts:?}");
        let seen: Value = serde_json::from_str(&texts[0])
            .unwrap_or_else(|_| panic!("{id} {tool}: not the structured value: {texts:?}"));
        assert_eq!(&seen, structured, "{id} {tool}");
    }
}

#[tokio::test]
async fn one_shot_with_structured_results_no_call_that_ran_is_reported_failed() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::structured();
    let api = FakeApi::start(Dialect::Messages, one_shot_script()).await;
    let mut cmd = command(
        &bin,
        &ws,
        &api,
        Tasks::Off,
        &stdio_entry(&ws, "one-shot"),
        &["-p", "Use the harness tools.", "--output-format", "json"],
    );
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let output = tokio::time::timeout(BOUND, cmd.output())
        .await
        .expect("claude -p ends")
        .unwrap();
    assert!(
        output.status.success(),
        "claude -p exited {}",
        output.status
    );
    // With --verbose the JSON output is every message of the run; the last is the result.
    let messages: Value = serde_json::from_slice(&output.stdout).unwrap();
    let last = messages.as_array().and_then(|m| m.last()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["result"], "All done.");
    assert_eq!(api.turns_left(), 0);
    assert_shown_as_sent(
        &api,
        &ws,
        &[
            "bash",
            "bash",
            "job_output",
            "job_kill",
            "job_list",
            "schedule_create",
            "schedule_create",
            "schedule_list",
            "schedule_delete",
            "schedule_delete",
            "todo_write",
        ],
    );
    // The domain error is a value the model reads, not a failure.
    let shown = shown_results(&api);
    assert_eq!(
        serde_json::from_str::<Value>(&shown[6].2[0]).unwrap()["code"],
        "invalid_selector"
    );
}

/// The streaming script: a foreground call, a background job (a task that wakes the model),
/// then a reminder created and deleted twice.
fn streaming_script() -> Vec<Turn> {
    vec![
        Turn::new(vec![Block::Call {
            id: "toolu_01",
            tool: "bash",
            input: json!({"command": "echo hi"}),
        }]),
        Turn::new(vec![Block::Call {
            id: "toolu_02",
            tool: "bash",
            input: json!({"command": GATED, "run_in_background": true}),
        }]),
        Turn::new(vec![Block::Text("Waiting for the job.")]),
        // The wake of the job's completion.
        Turn::new(vec![Block::Call {
            id: "toolu_03",
            tool: "schedule_create",
            input: json!({"prompt": "No selector"}),
        }]),
        Turn::new(vec![Block::Call {
            id: "toolu_04",
            tool: "schedule_delete",
            input: json!({"id": "schedule-9"}),
        }]),
        Turn::new(vec![Block::Call {
            id: "toolu_05",
            tool: "job_list",
            input: json!({}),
        }]),
        Turn::new(vec![Block::Text("All done.")]),
    ]
}

/// Runs [`streaming_script`] in a streaming session with the task feature on and checks what
/// the model was shown: no failed call, the background call moved to a task, every other
/// result its structured value.
async fn assert_streaming(bin: &std::path::Path, ws: &Workspace, server: &Value) {
    let api = FakeApi::start(Dialect::Messages, streaming_script()).await;
    let mut claude = Streaming::start(bin, ws, &api, Tasks::On, server);
    claude.send("Use the harness tools.").await;
    assert_eq!(claude.result().await["result"], "Waiting for the job.");
    std::fs::write(ws.work().join("go"), "").unwrap();
    assert_eq!(claude.result().await["result"], "All done.");
    claude.finish().await;
    assert_eq!(api.turns_left(), 0);
    let shown = shown_results(&api);
    let failed: Vec<&(String, bool, Vec<String>)> =
        shown.iter().filter(|(_, failed, _)| *failed).collect();
    assert_eq!(failed, Vec::<&(String, bool, Vec<String>)>::new());
    let ids: Vec<&str> = shown.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["toolu_01", "toolu_02", "toolu_03", "toolu_04", "toolu_05"]
    );
    // The background call became a task; the others are their structured values.
    assert!(shown[1].2[0].starts_with("MCP tool \"harness/bash\" started server-side task "));
    let values: Vec<Value> = [0, 2, 3, 4]
        .iter()
        .map(|&i| serde_json::from_str(&shown[i].2[0]).unwrap_or_else(|_| panic!("{shown:?}")))
        .collect();
    assert_eq!(values[0]["kind"], "foreground");
    assert_eq!(values[0]["output"], "hi\n");
    assert_eq!(values[1]["code"], "invalid_selector");
    assert_eq!(
        values[2],
        json!({"id": "schedule-9", "deleted": false, "code": "schedule_not_found"})
    );
    let listed: Vec<&str> = values[3]["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["bash-1", "bash-2"]);
}

#[tokio::test]
async fn streaming_with_structured_results_and_tasks_no_call_that_ran_is_reported_failed() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::structured();
    assert_streaming(&bin, &ws, &stdio_entry(&ws, "stream")).await;
    assert_shown_as_sent_streaming(&ws);
}

/// Over stdio the recorded answers are the ones shown (the task's call excepted).
fn assert_shown_as_sent_streaming(ws: &Workspace) {
    let answers = structured_answers(&ws.client_messages(), &ws.server_messages());
    let tools: Vec<&str> = answers.iter().map(|(tool, _)| tool.as_str()).collect();
    assert_eq!(
        tools,
        ["bash", "schedule_create", "schedule_delete", "job_list"]
    );
    assert!(answers.iter().all(|(_, s)| s.is_object()), "{answers:?}");
}

#[tokio::test]
async fn over_http_streaming_with_structured_results_no_call_that_ran_is_reported_failed() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::structured();
    let server = ws.serve_http().await;
    let proxy = Proxy::start(server.addr).await;
    let url = format!("http://{}/sessions/stream-http/mcp", proxy.addr);
    assert_streaming(&bin, &ws, &http_entry(&url)).await;
}
