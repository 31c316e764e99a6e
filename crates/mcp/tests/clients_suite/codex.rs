//! Codex CLI (npm `@openai/codex`, pinned in `.ci/run`) as the MCP client of `harness mcp`
//! over stdio (protocol 2025-06-18), against the fake Responses API.

use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::clients_suite::fake_api::{Block, Dialect, FakeApi, Turn, codex_call_outputs};
use crate::clients_suite::support::{
    BOUND, GATED, GATED_NOTICE, REMINDER_PROMPT, Workspace, client_bin, methods, reminder_text,
    wait_for_events,
};

/// The environment variable naming the `codex` binary.
const CODEX: &str = "HARNESS_TEST_CODEX";
const PACKAGE: &str = "@openai/codex@0.169.0";

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Runs `codex exec` once with `prompt`, served by `harness mcp` on session `session` and by
/// `api`; returns its `--json` event lines.
async fn run(bin: &Path, ws: &Workspace, api: &FakeApi, session: &str, prompt: &str) -> Vec<Value> {
    let (command, args) = ws.server_command(session);
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    let config = format!(
        "model = \"fake-model\"\nmodel_provider = \"fake\"\n\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = {base}\nwire_api = \"responses\"\n\
         env_key = \"FAKE_API_KEY\"\n\n\
         [mcp_servers.harness]\ncommand = {command}\nargs = [{args}]\n\
         default_tools_approval_mode = \"approve\"\n",
        base = toml_string(&format!("{}/v1", api.url())),
        command = toml_string(&command),
        args = args.join(", "),
    );
    let codex_home = ws.home().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let child = tokio::process::Command::new(bin)
        .args(["exec", "--skip-git-repo-check", "--json", prompt])
        .current_dir(ws.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", ws.home())
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "sk-fake")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("codex exec did not finish within {BOUND:?}"))
        .unwrap();
    assert!(
        output.status.success(),
        "codex exec exited with {}",
        output.status
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Codex puts its own first block before the tool's content: `Wall time: <s> seconds\nOutput:`.
/// Returns the blocks after it, checking its shape.
fn tool_blocks(texts: &[String]) -> Vec<String> {
    let (first, rest) = texts
        .split_first()
        .expect("a function_call_output with text");
    assert!(
        first.starts_with("Wall time: ") && first.ends_with(" seconds\nOutput:"),
        "Codex's own first block: {first:?}"
    );
    rest.to_vec()
}

#[tokio::test]
async fn over_stdio_a_job_notice_and_a_reminder_ride_the_next_tool_result_once() {
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let work = ws.work();
    let root = ws.path().to_owned();
    let script = vec![
        Turn::new(vec![Block::Call {
            id: "call_1",
            tool: "todo_write",
            input: json!({"todos": [{"content": "Ship it", "status": "in_progress"}]}),
        }]),
        Turn::new(vec![Block::Call {
            id: "call_2",
            tool: "bash",
            input: json!({"command": GATED, "run_in_background": true}),
        }]),
        Turn::new(vec![Block::Call {
            id: "call_3",
            tool: "schedule_create",
            input: json!({"prompt": REMINDER_PROMPT, "after_seconds": 1}),
        }]),
        Turn::after(
            move || {
                // The job ends now, a second before the reminder is due.
                std::fs::write(work.join("go"), "").unwrap();
                wait_for_events(&root, "codex", "mcp/queued", 2);
            },
            vec![Block::Call {
                id: "call_4",
                tool: "job_list",
                input: json!({}),
            }],
        ),
        Turn::new(vec![Block::Call {
            id: "call_5",
            tool: "todo_write",
            input: json!({"todos": [{"content": "Ship it", "status": "completed"}]}),
        }]),
        Turn::new(vec![Block::Text("All done.")]),
    ];
    let api = FakeApi::start(Dialect::Responses, script).await;
    let events = run(&bin, &ws, &api, "codex", "Run the job.").await;
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed")
        .unwrap();
    assert_eq!(last["item"]["text"], "All done.");

    let requests = api.agent_requests();
    assert_eq!(requests.len(), 6, "one model request per scripted turn");
    assert_eq!(api.turns_left(), 0);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    // Each request carries every earlier output; the model sees each once, in the request
    // after its call. The last request holds all five, in order.
    let outputs: Vec<(String, Vec<String>)> = codex_call_outputs(&requests[5].body)
        .into_iter()
        .map(|(id, texts)| (id, tool_blocks(&texts)))
        .collect();
    let created = outputs[2].1[0].clone();
    assert_eq!(
        outputs,
        vec![
            (
                "call_1".to_owned(),
                vec!["Updated todo list: 0 pending, 1 in progress, 0 completed.".to_owned()]
            ),
            (
                "call_2".to_owned(),
                vec!["started background job bash-1".to_owned()]
            ),
            ("call_3".to_owned(), vec![created.clone()]),
            (
                "call_4".to_owned(),
                vec![
                    format!("bash-1 [bash] completed — {GATED}"),
                    GATED_NOTICE.to_owned(),
                    reminder_text(&created),
                ]
            ),
            (
                "call_5".to_owned(),
                vec!["Updated todo list: 0 pending, 0 in progress, 1 completed.".to_owned()]
            ),
        ]
    );
    // Request n+1 is request n plus call n's output: nothing earlier was rewritten.
    for (n, request) in requests.iter().enumerate().skip(1) {
        assert_eq!(codex_call_outputs(&request.body).len(), n);
    }

    // Codex speaks 2025-06-18 over stdio, initialize first, and declares no tasks.
    let sent = ws.client_messages();
    assert_eq!(sent[0]["method"], "initialize");
    assert_eq!(sent[0]["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        methods(&sent),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/call",
            "tools/call",
            "tools/call",
        ]
    );
    assert_eq!(
        sent[0]["params"]["capabilities"].get("extensions"),
        None,
        "Codex declares no extensions"
    );
}
