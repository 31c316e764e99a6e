//! Claude Code (npm `@anthropic-ai/claude-code`, pinned in `.ci/run`) as the MCP client of
//! `harness mcp`, in its streaming mode, against the fake Messages API.

use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::clients_suite::fake_api::{
    Block, Dialect, FakeApi, Turn, claude_last_message_texts, claude_tool_results,
};
use crate::clients_suite::support::{
    BOUND, GATED, GATED_NOTICE, Workspace, client_bin, methods, wait_for_events,
};

/// The environment variable naming the `claude` binary.
const CLAUDE: &str = "HARNESS_TEST_CLAUDE";
const PACKAGE: &str = "@anthropic-ai/claude-code@2.1.332";

/// Whether the session runs with Claude Code's background-task feature.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tasks {
    On,
    Off,
}

/// What one streaming session left behind.
struct Session {
    /// Claude Code's stream-json output lines.
    output: Vec<Value>,
}

/// Runs one streaming Claude Code session (`claude -p --input-format stream-json
/// --output-format stream-json`, stdin open) served by `harness mcp` on session `session`
/// and by `api`: sends the user message `prompt`, waits for `turns` results (a wake is a turn
/// of its own), then closes stdin and waits for the exit.
async fn run(
    bin: &Path,
    ws: &Workspace,
    api: &FakeApi,
    tasks: Tasks,
    session: &str,
    prompt: &str,
    turns: usize,
) -> Session {
    let (command, args) = ws.server_command(session);
    let mcp =
        json!({"mcpServers": {"harness": {"type": "stdio", "command": command, "args": args}}});
    let mcp_path = ws.path().join("mcp.json");
    std::fs::write(&mcp_path, mcp.to_string()).unwrap();
    // The background-task feature's remote flag, as a cached value (nothing is fetched).
    let seed = match tasks {
        Tasks::On => json!({"cachedGrowthBookFeatures": {"tengu_glowing_lark": true}}),
        Tasks::Off => json!({}),
    };
    std::fs::write(ws.home().join(".claude.json"), seed.to_string()).unwrap();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--strict-mcp-config",
        "--mcp-config",
    ])
    .arg(&mcp_path)
    .args(["--allowedTools", "mcp__harness"])
    .current_dir(ws.work())
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", ws.home())
    .env("ANTHROPIC_BASE_URL", api.url())
    .env("ANTHROPIC_API_KEY", "sk-fake")
    .env("DISABLE_AUTOUPDATER", "1")
    .env("DISABLE_TELEMETRY", "1")
    // The harness tools are offered to the model directly, not behind a tool search.
    .env("ENABLE_TOOL_SEARCH", "false")
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true);
    if tasks == Tasks::On {
        cmd.env("CLAUDE_AUTO_BACKGROUND_TASKS", "1")
            .env("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let message = json!({"type": "user", "message": {"role": "user", "content": prompt}});
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut output = Vec::new();
    let mut results = 0;
    let read = async {
        while results < turns {
            let Some(line) = lines.next_line().await.unwrap() else {
                break;
            };
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if value["type"] == "result" {
                results += 1;
            }
            output.push(value);
        }
    };
    tokio::time::timeout(BOUND, read)
        .await
        .unwrap_or_else(|_| panic!("Claude Code did not finish {turns} turns within {BOUND:?}"));
    drop(stdin);
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("Claude Code exits once stdin is closed")
        .unwrap();
    assert!(status.success(), "Claude Code exited with {status}");
    Session { output }
}

/// The script of a pull delivery: a gated background job, then (once the job's notice is
/// queued) `job_list`, then `todo_write`, then a final answer.
fn pull_script(ws: &Workspace, session: &'static str) -> Vec<Turn> {
    let work = ws.work();
    let root = ws.path().to_owned();
    vec![
        Turn::new(vec![Block::Call {
            id: "toolu_01",
            tool: "bash",
            input: json!({"command": GATED, "run_in_background": true}),
        }]),
        Turn::after(
            move || {
                std::fs::write(work.join("go"), "").unwrap();
                wait_for_events(&root, session, "mcp/queued", 1);
            },
            vec![Block::Call {
                id: "toolu_02",
                tool: "job_list",
                input: json!({}),
            }],
        ),
        Turn::new(vec![Block::Call {
            id: "toolu_03",
            tool: "todo_write",
            input: json!({"todos": [{"content": "Ship it", "status": "in_progress"}]}),
        }]),
        Turn::new(vec![Block::Text("All done.")]),
    ]
}

/// What the model was sent in each of a pull session's agent requests after the first: the
/// start answer, the notice riding `job_list`'s result, and a plain `todo_write` result.
fn assert_pulled(api: &FakeApi) {
    let requests = api.agent_requests();
    assert_eq!(requests.len(), 4, "one model request per scripted turn");
    assert_eq!(api.turns_left(), 0);
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    let results: Vec<_> = requests[1..]
        .iter()
        .map(|r| claude_tool_results(&r.body))
        .collect();
    assert_eq!(
        results,
        vec![
            vec![(
                "toolu_01".to_owned(),
                vec!["started background job bash-1".to_owned()]
            )],
            vec![(
                "toolu_02".to_owned(),
                vec![
                    format!("bash-1 [bash] completed — {GATED}"),
                    GATED_NOTICE.to_owned()
                ]
            )],
            vec![(
                "toolu_03".to_owned(),
                vec!["Updated todo list: 0 pending, 1 in progress, 0 completed.".to_owned()]
            )],
        ]
    );
    // The notice reached the model once: in no other request's new message.
    let carrying: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            claude_last_message_texts(&r.body)
                .iter()
                .any(|t| t.contains(GATED_NOTICE))
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(carrying, vec![2]);
}

/// How Claude Code opens the server: `server/discover` at 2026-07-28, which the server answers,
/// so no `initialize` follows; every later request carries the same `_meta` (protocol
/// version, client capabilities: the tasks extension only with the feature on).
fn assert_opened_with_discover(ws: &Workspace, tasks: Tasks) {
    let sent = ws.client_messages();
    let capabilities = match tasks {
        Tasks::On => json!({"roots": {"listChanged": true}, "elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        Tasks::Off => {
            json!({"roots": {"listChanged": true}, "elicitation": {"form": {}, "url": {}}})
        }
    };
    assert_eq!(sent[0]["method"], "server/discover");
    let answered = ws.server_messages();
    assert_eq!(answered[0]["id"], "server-discover-probe-1");
    assert_eq!(answered[0]["result"]["resultType"], "complete");
    assert_eq!(
        answered[0]["result"]["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ])
    );
    let methods = methods(&sent);
    let mut listing = methods[1..3].to_vec();
    listing.sort();
    assert_eq!(listing, ["resources/list", "tools/list"]);
    assert_eq!(methods[3..], ["tools/call", "tools/call", "tools/call"]);
    for request in &sent {
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            capabilities
        );
    }
}

#[tokio::test]
async fn with_the_task_feature_off_a_job_notice_rides_the_next_tool_result_once() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let api = FakeApi::start(Dialect::Messages, pull_script(&ws, "off")).await;
    let session = run(&bin, &ws, &api, Tasks::Off, "off", "Run the job.", 1).await;
    assert_eq!(session.output.last().unwrap()["result"], "All done.");
    assert_pulled(&api);
    assert_opened_with_discover(&ws, Tasks::Off);
}

#[tokio::test]
async fn with_the_task_feature_on_every_request_declares_tasks_and_delivery_is_still_pull() {
    let Some(bin) = client_bin(CLAUDE, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let api = FakeApi::start(Dialect::Messages, pull_script(&ws, "on")).await;
    let session = run(&bin, &ws, &api, Tasks::On, "on", "Run the job.", 1).await;
    assert_eq!(session.output.last().unwrap()["result"], "All done.");
    assert_pulled(&api);
    assert_opened_with_discover(&ws, Tasks::On);
}
