//! Codex CLI (npm `@openai/codex`, pinned in `.ci/run`) as the MCP client of `harness mcp`
//! over stdio (protocol 2025-06-18), against the fake Responses API.

use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::clients_suite::fake_api::{Block, Dialect, FakeApi, Turn, codex_call_outputs};
use crate::clients_suite::proxy::Proxy;
use crate::clients_suite::support::{
    BOUND, GATED, GATED_NOTICE, REMINDER_PROMPT, Workspace, client_bin, methods, reminder_text,
    wait_for_events, without_walls,
};

/// The environment variable naming the `codex` binary.
const CODEX: &str = "HARNESS_TEST_CODEX";
const PACKAGE: &str = "@openai/codex@0.169.0";

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// The `[mcp_servers.harness]` table of `harness mcp` over stdio on `ws`'s session `session`
/// (through the recording wrapper).
fn stdio_server(ws: &Workspace, session: &str) -> String {
    let (command, args) = ws.server_command(session);
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    format!(
        "command = {command}\nargs = [{args}]\n",
        command = toml_string(&command),
        args = args.join(", "),
    )
}

/// The `[mcp_servers.harness]` table of the session at `url` over streamable HTTP, with the
/// bearer token from `HARNESS_TOKEN`.
fn http_server(url: &str) -> String {
    format!(
        "url = {url}\nbearer_token_env_var = \"HARNESS_TOKEN\"\n",
        url = toml_string(url)
    )
}

/// Runs `codex exec [flags] PROMPT` once with `server` as its `harness` MCP server and `api`
/// as its model; returns its `--json` event lines.
async fn run(
    bin: &Path,
    ws: &Workspace,
    api: &FakeApi,
    server: &str,
    flags: &[&str],
    prompt: &str,
) -> Vec<Value> {
    let token = ws.token().unwrap_or_default();
    run_as(bin, ws, api, server, flags, prompt, Some(token))
        .await
        .0
}

/// [`run`] with `HARNESS_TOKEN` set to `token` (unset for `None`); returns the `--json` event
/// lines and what Codex wrote to its stderr.
async fn run_as(
    bin: &Path,
    ws: &Workspace,
    api: &FakeApi,
    server: &str,
    flags: &[&str],
    prompt: &str,
    token: Option<&str>,
) -> (Vec<Value>, String) {
    let config = format!(
        "model = \"fake-model\"\nmodel_provider = \"fake\"\n\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = {base}\nwire_api = \"responses\"\n\
         env_key = \"FAKE_API_KEY\"\n\n\
         [mcp_servers.harness]\n{server}default_tools_approval_mode = \"approve\"\n",
        base = toml_string(&format!("{}/v1", api.url())),
    );
    let codex_home = ws.home().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.arg("exec")
        .args(flags)
        .args(["--skip-git-repo-check", "--json", prompt])
        .current_dir(ws.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", ws.home())
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "sk-fake")
        // Where Codex says why an MCP server did not start.
        .env("RUST_LOG", "warn");
    if let Some(token) = token {
        cmd.env("HARNESS_TOKEN", token);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let events = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (events, String::from_utf8_lossy(&output.stderr).into_owned())
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
    rest.iter().map(|text| without_walls(text)).collect()
}

/// The script: `todo_write`, a gated background job, a 1 s reminder, then (once the job's
/// notice and the reminder are queued on session `session`) `job_list`, then `todo_write`,
/// then a final answer.
fn pull_script(ws: &Workspace, session: &'static str) -> Vec<Turn> {
    let work = ws.work();
    let root = ws.path().to_owned();
    vec![
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
                wait_for_events(&root, session, "mcp/queued", 2);
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
    ]
}

/// What the model was sent: each call's output once, in the request after the call; the
/// notice and the reminder ride `job_list`'s output after its own text; `events` (Codex's
/// `--json` lines) end with the final answer.
fn assert_pulled(api: &FakeApi, events: &[Value]) {
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
}

/// The harness tools' calls Codex made, as JSON-RPC methods after the opening ones.
const CALLS: [&str; 5] = ["tools/call"; 5];

#[tokio::test]
async fn over_stdio_a_job_notice_and_a_reminder_ride_the_next_tool_result_once() {
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let api = FakeApi::start(Dialect::Responses, pull_script(&ws, "codex")).await;
    let events = run(
        &bin,
        &ws,
        &api,
        &stdio_server(&ws, "codex"),
        &[],
        "Run the job.",
    )
    .await;
    assert_pulled(&api, &events);
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

#[tokio::test]
async fn over_http_in_its_default_mode_a_job_notice_and_a_reminder_ride_the_next_tool_result_once()
{
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let server = ws.serve_http().await;
    let proxy = Proxy::start(server.addr).await;
    let url = format!("http://{}/sessions/codex-http/mcp", proxy.addr);
    let api = FakeApi::start(Dialect::Responses, pull_script(&ws, "codex-http")).await;
    let events = run(&bin, &ws, &api, &http_server(&url), &[], "Run the job.").await;
    assert_pulled(&api, &events);
    // Without the flag Codex opens the session with initialize 2025-06-18 over HTTP too.
    let posted = proxy.posted();
    assert_eq!(posted[0]["method"], "initialize");
    assert_eq!(posted[0]["params"]["protocolVersion"], "2025-06-18");
    let methods = methods(&posted);
    assert_eq!(
        methods[..3],
        ["initialize", "notifications/initialized", "tools/list"]
    );
    assert_eq!(methods[3..], CALLS);
}

#[tokio::test]
async fn over_http_with_mcp_2026_07_28_a_job_notice_and_a_reminder_ride_the_next_tool_result_once()
{
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let server = ws.serve_http().await;
    let proxy = Proxy::start(server.addr).await;
    let url = format!("http://{}/sessions/codex-2026/mcp", proxy.addr);
    let api = FakeApi::start(Dialect::Responses, pull_script(&ws, "codex-2026")).await;
    let flags = ["--enable", "mcp_2026_07_28"];
    let events = run(&bin, &ws, &api, &http_server(&url), &flags, "Run the job.").await;
    assert_pulled(&api, &events);
    // With the flag Codex opens the session with server/discover at 2026-07-28 (no
    // initialize), declaring no extensions, and names the version on its requests.
    let posted = proxy.posted();
    assert_eq!(posted[0]["method"], "server/discover");
    let meta = &posted[0]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}})
    );
    let methods = methods(&posted);
    assert_eq!(methods[..2], ["server/discover", "tools/list"]);
    assert_eq!(methods[2..], CALLS);
}

/// A second Codex on a session another server holds: Codex connects (the handshake is
/// answered), offers the harness tools, and the model reads why the call failed and what to do,
/// and the server's instructions say the same.
#[tokio::test]
async fn on_a_session_another_server_holds_the_model_reads_why_and_what_to_do() {
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let (program, args) = ws.server_command("held");
    let mut first = tokio::process::Command::new(program)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(first.stderr.take().unwrap()));
    let opened = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .expect("the first server opens its session")
        .unwrap();
    assert_eq!(opened.as_deref(), Some("harness mcp: session held"));
    let script = vec![
        Turn::new(vec![Block::Call {
            id: "call_1",
            tool: "todo_write",
            input: json!({"todos": [{"content": "Ship it", "status": "in_progress"}]}),
        }]),
        Turn::new(vec![Block::Text("Told the user.")]),
    ];
    let api = FakeApi::start(Dialect::Responses, script).await;
    let events = run(
        &bin,
        &ws,
        &api,
        &stdio_server(&ws, "held"),
        &[],
        "Plan the work.",
    )
    .await;
    assert!(events.iter().any(|e| e["item"]["text"] == "Told the user."));
    let why = format!(
        "harness cannot serve session held: its session file {} is locked by another open \
         handle: another harness server (another client, or another window of this one) is \
         serving it. Give each project and each client window a session of its own (start \
         `harness mcp` with its own --session, for example one per working folder), or close \
         the other client; then reconnect this MCP server (Claude Code: /mcp, then reconnect; \
         Codex: start a new session).",
        ws.path().join("sessions/held.jsonl").display()
    );
    let requests = api.agent_requests();
    let outputs: Vec<(String, Vec<String>)> = codex_call_outputs(&requests[1].body)
        .into_iter()
        .map(|(id, texts)| (id, tool_blocks(&texts)))
        .collect();
    assert_eq!(
        outputs,
        [("call_1".to_owned(), vec![format!("Error: {why}")])]
    );
    // The handshake was answered with the reason as the instructions.
    let answered = ws.server_messages();
    assert!(
        answered[0]["result"]["instructions"]
            .as_str()
            .unwrap()
            .starts_with(&why),
        "{}",
        answered[0]
    );
    first.kill().await.unwrap();
}

/// Codex over HTTP with `HARNESS_TOKEN` wrong (`Some`) or unset (`None`): `codex exec` goes
/// on without the harness tools (the model is offered none of them) and says why only in its
/// own log on stderr (`RUST_LOG=warn`), as `warning` (its text after `error=`).
async fn refused_token(token: Option<&str>, warning: &str) {
    let Some(bin) = client_bin(CODEX, PACKAGE) else {
        return;
    };
    let ws = Workspace::new();
    let server = ws.serve_http().await;
    let url = format!("http://{}/sessions/tok/mcp", server.addr);
    let api = FakeApi::start(
        Dialect::Responses,
        vec![Turn::new(vec![Block::Text("No tools.")])],
    )
    .await;
    let (events, stderr) = run_as(
        &bin,
        &ws,
        &api,
        &http_server(&url),
        &[],
        "Plan the work.",
        token,
    )
    .await;
    // The run itself succeeds: nothing in its events says the server is missing.
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("turn.completed"))
    );
    let requests = api.recorded();
    assert!(!requests.is_empty());
    for request in &requests {
        let tools: Vec<&str> = request.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for harness_tool in ["todo_write", "bash", "job_list", "schedule_create"] {
            assert!(!tools.contains(&harness_tool), "{tools:?}");
        }
    }
    let warned: Vec<&str> = stderr
        .lines()
        .filter_map(|line| {
            line.split_once(" WARN codex_mcp::rmcp_client: MCP server startup failed ")
                .map(|(_, rest)| rest)
        })
        .collect();
    assert_eq!(
        warned.first().copied(),
        Some(format!("server_name=\"harness\" error={warning}").as_str()),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_wrong_token_leaves_codex_without_the_harness_tools_and_its_log_says_auth_required() {
    // Codex does not show the refusal's JSON message, only that authentication was required.
    let transport = "codex_rmcp_client::tool_list_changes::ToolListChanges<\
        codex_rmcp_client::event_notification_transport::EventNotificationTransport<\
        rmcp::transport::worker::WorkerTransport<\
        rmcp::transport::streamable_http_client::StreamableHttpClientWorker<\
        codex_rmcp_client::http_client_adapter::StreamableHttpClientAdapter>>>>";
    let once = format!(
        "Send message error Transport [{transport}] error: Auth required, when send initialize \
         request"
    );
    refused_token(
        Some("wrong"),
        &format!("handshaking with MCP server failed: {once}: {once}"),
    )
    .await;
}

#[tokio::test]
async fn an_unset_token_variable_leaves_codex_without_the_harness_tools_and_its_log_names_it() {
    refused_token(
        None,
        "Environment variable HARNESS_TOKEN for MCP server 'harness' is not set",
    )
    .await;
}
