//! `harness mcp --http`: every session at its own URL, to rmcp's streamable HTTP client and to
//! raw requests; each refusal's status and body.
//!
//! The server (and any client) is a real child process on the wall clock, so a wait here
//! polls what it writes (its answers, its session log or the database) with a short pause,
//! bounded by a deadline; no pause stands in for an in-process event.

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::http_support::{
    Connection, INITIALIZE, NO_TOKEN, UNEXPANDED_TOKEN, WRONG_TOKEN, client, meta, send,
    start_http, texts,
};
use super::support::BOUND;

const TOKEN: &str = "0123456789abcdef-team";
const CI_TOKEN: &str = "fedcba9876543210-ci";

fn todos(content: &str) -> Value {
    json!({"todos": [{"content": content, "status": "in_progress"}]})
}

#[tokio::test]
async fn each_session_has_its_url_and_rmcp_client_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url("alpha"))
            .auth_header(server.token().unwrap()),
    );
    let rmcp_client = ().serve(transport).await.unwrap();
    let tools = rmcp_client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "todo_write",
            "job_output",
            "job_list",
            "job_kill",
            "bash",
            "schedule_create",
            "schedule_list",
            "schedule_delete"
        ]
    );
    let arguments = todos("alpha's step").as_object().cloned().unwrap();
    let result = rmcp_client
        .call_tool(CallToolRequestParams::new("todo_write").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "Updated todo list: 0 pending, 1 in progress, 0 completed."}])
    );

    // Another session, another URL: its own log and its own list.
    let http = client();
    let mut beta = Connection::open(&http, &server.url("beta"), server.token())
        .await
        .unwrap();
    let listed = beta.call(&http, "todo_write", todos("beta's step")).await;
    assert_eq!(
        texts(&listed.unwrap()),
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );
    rmcp_client.cancel().await.unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    files.sort();
    assert_eq!(files, ["alpha.jsonl", "beta.jsonl"]);
    let alpha = std::fs::read_to_string(sessions.join("alpha.jsonl")).unwrap();
    assert!(alpha.contains("alpha's step") && !alpha.contains("beta's step"));
}

/// A finished job's notice rides exactly one later result, and its delivery is recorded.
#[tokio::test]
async fn a_jobs_notice_rides_one_result_and_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    let http = client();
    let mut connection = Connection::open(&http, &server.url("jobs"), server.token())
        .await
        .unwrap();
    let started = connection
        .call(
            &http,
            "bash",
            json!({"command": "true", "run_in_background": true}),
        )
        .await
        .unwrap();
    let notice = "background job bash-1 (bash: true) finished [status: completed, exit code: 0]. \
                  Read its output with job_output.";
    let mut seen = texts(&started).iter().filter(|t| *t == notice).count();
    let deadline = tokio::time::Instant::now() + BOUND;
    while seen == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no notice arrived");
        let listed = connection.call(&http, "job_list", json!({})).await.unwrap();
        seen += texts(&listed).iter().filter(|t| *t == notice).count();
    }
    let after = connection.call(&http, "job_list", json!({})).await.unwrap();
    assert_eq!(texts(&after).iter().filter(|t| *t == notice).count(), 0);
    assert_eq!(seen, 1);
    // The claim is recorded once the body was written (the commit runs right after).
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let log = std::fs::read_to_string(sessions.join("jobs.jsonl")).unwrap();
        if log.contains("\"type\":\"mcp/claimed\"") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no claim recorded");
        connection.call(&http, "job_list", json!({})).await.unwrap();
    }
}

/// SIGTERM while a call runs: the server ends the call as a cancelled request (its
/// foreground job killed), writes its answer, then closes the connections and exits 0.
#[tokio::test]
async fn a_stopping_server_answers_the_call_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    let http = client();
    let mut connection = Connection::open(&http, &server.url("stop"), server.token())
        .await
        .unwrap();
    let call = connection.call_in_task(&http, 100, "bash", &json!({"command": "sleep 30"}));
    // The call is in flight once its job runs.
    connection
        .until_jobs_start_with(&http, "bash-1 [bash] running — sleep 30")
        .await;
    super::support::kill("TERM", server.child.id().unwrap());
    let reply = tokio::time::timeout(BOUND, call)
        .await
        .expect("the call is answered")
        .unwrap();
    let answers: Vec<Value> = reply
        .messages()
        .into_iter()
        .filter(|m| m.get("id") == Some(&json!(100)))
        .collect();
    assert_eq!(
        answers,
        [json!({"jsonrpc": "2.0", "id": 100, "result": {
            "content": [{"type": "text", "text": "Error: This operation was aborted"}],
            "isError": true,
        }})]
    );
    let status = tokio::time::timeout(BOUND, server.child.wait())
        .await
        .expect("the server exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let log = std::fs::read_to_string(sessions.join("stop.jsonl")).unwrap();
    assert_eq!(log.matches("\"type\":\"job/settle\"").count(), 1);
}

/// Posts a 2026-07-28 `tools/call` of a foreground `bash sleep 30` to session `id` of `server`
/// on a connection of its own, and hangs up once the call's job runs; returns once the call
/// was ended (its job killed).
async fn hang_up_mid_call(server: &super::http_support::HttpServer, id: &str) {
    use tokio::io::AsyncWriteExt;
    let http = client();
    let body = json!({"jsonrpc": "2.0", "id": "h", "method": "tools/call", "params": {
        "_meta": meta(false), "name": "bash", "arguments": {"command": "sleep 30"}}})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let request = format!(
        "POST /sessions/{id}/mcp HTTP/1.1\r\nhost: {addr}\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: bash\r\n\
         authorization: {bearer}\r\ncontent-length: {length}\r\n\r\n{body}",
        addr = server.addr,
        bearer = server.bearer(),
        length = body.len(),
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let job = |wanted: &'static str| {
        let http = http.clone();
        let url = server.url(id);
        let bearer = server.bearer();
        async move {
            let deadline = tokio::time::Instant::now() + BOUND;
            loop {
                let listed = super::http_support::stateless(
                    &http,
                    &url,
                    Some(&bearer),
                    "tools/call",
                    Some("job_list"),
                    json!({"name": "job_list", "arguments": {}}),
                    false,
                )
                .await;
                let result = &listed.messages()[0]["result"];
                if texts(result)[0].starts_with(wanted) {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "never {wanted}: {result}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    job("bash-1 [bash] running").await;
    drop(stream);
    job("bash-1 [bash] killed").await;
}

/// A client that hangs up while its 2026-07-28 call runs (the transport answers such a call
/// inside the request, which is dropped with the connection) leaves no request counted in
/// flight: the session is released once idle.
#[tokio::test]
async fn a_session_whose_client_hung_up_mid_call_is_released_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let server = start_http(
        dir.path(),
        &["--dir", sessions.to_str().unwrap(), "--idle-release", "1"],
    )
    .await;
    hang_up_mid_call(&server, "hung").await;
    let log = sessions.join("hung.jsonl");
    let deadline = tokio::time::Instant::now() + BOUND;
    // The session's file is locked for as long as the server holds the session.
    while std::fs::File::open(&log).unwrap().try_lock().is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session was never released"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Nor does such a call keep a stopping server waiting for an answer it can no longer write
/// (each session waited 5 s for it, one session after another).
#[tokio::test]
async fn a_stopping_server_does_not_wait_for_answers_whose_client_hung_up() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    hang_up_mid_call(&server, "one").await;
    hang_up_mid_call(&server, "two").await;
    super::support::kill("TERM", server.child.id().unwrap());
    let status = tokio::time::timeout(std::time::Duration::from_secs(4), server.child.wait())
        .await
        .expect("the server exits without waiting for answers nobody reads")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    for id in ["one", "two"] {
        let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
        assert_eq!(log.matches("\"type\":\"job/settle\"").count(), 1, "{log}");
    }
}

/// Clients that stall in the middle of a request's body, in three sessions, cannot hold a
/// stopping server (with a healthy store) until its shutdown bound: their answers are waited
/// for once (5 s), not once per session, and once every session was released the server stops
/// waiting for connections (5 s more) and exits 0.
#[tokio::test]
async fn clients_stalled_mid_request_cannot_hold_a_stopping_server() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--shutdown-grace",
            "600",
        ],
    )
    .await;
    let http = client();
    let mut stalled = Vec::new();
    for id in ["one", "two", "three"] {
        let mut connection = Connection::open(&http, &server.url(id), server.token())
            .await
            .unwrap();
        connection
            .call(&http, "todo_write", todos("saved"))
            .await
            .unwrap();
        let mut stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
        let head = format!(
            "POST /sessions/{id}/mcp HTTP/1.1\r\nhost: {addr}\r\n\
             content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
             mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n\
             content-length: 100\r\n\r\n{{\"jsonrpc\"",
            addr = server.addr,
            session = connection.session,
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    // Time for the stalled requests to reach their sessions (without it a connection would
    // be closed as idle; the test would pass either way, never fail wrongly).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    super::support::kill("TERM", server.child.id().unwrap());
    let status = tokio::time::timeout(std::time::Duration::from_secs(14), server.child.wait())
        .await
        .expect("the server exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    drop(stalled);
    for id in ["one", "two", "three"] {
        let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
        assert_eq!(log.matches("\"type\":\"todo/write\"").count(), 1, "{log}");
    }
}

/// SIGTERM with a call in flight in each of three sessions, each a foreground command that
/// ignores SIGTERM (killed after the 2 s kill grace): the calls are ended together, so the
/// server is done in about one grace, not one per session.
#[tokio::test]
async fn a_stopping_server_ends_every_sessions_calls_together() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    let http = client();
    let mut calls = Vec::new();
    for id in ["one", "two", "three"] {
        let mut connection = Connection::open(&http, &server.url(id), server.token())
            .await
            .unwrap();
        calls.push(connection.call_in_task(
            &http,
            100,
            "bash",
            &json!({"command": "trap '' TERM; sleep 30"}),
        ));
        connection
            .until_jobs_start_with(&http, "bash-1 [bash] running")
            .await;
    }
    super::support::kill("TERM", server.child.id().unwrap());
    let status = tokio::time::timeout(BOUND, server.child.wait())
        .await
        .expect("the server exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // The three jobs ended within one kill grace (2 s) of each other, as calls ended together
    // do; ended one session after another, each would end a grace after the one before.
    let finished: Vec<i64> = ["one", "two", "three"]
        .iter()
        .map(|id| {
            let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
            let settle = log
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).unwrap())
                .find(|event| event["type"] == "job/settle")
                .unwrap_or_else(|| panic!("no job/settle in {log}"));
            settle["data"]["finishedAt"].as_i64().unwrap()
        })
        .collect();
    let spread = finished.iter().max().unwrap() - finished.iter().min().unwrap();
    assert!(spread < 2000, "jobs ended {spread} ms apart: {finished:?}");
    for call in calls {
        let reply = call.await.unwrap();
        assert!(
            reply.body.contains("This operation was aborted"),
            "{}",
            reply.body
        );
    }
}

/// A refused request: what it is, its URL, headers and body, and the status and body expected.
type Case = (
    &'static str,
    String,
    Vec<(&'static str, String)>,
    String,
    u16,
    Value,
);

/// Every refusal: its status and its exact body.
#[tokio::test]
async fn refusals_have_stable_statuses_and_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("# the team\n{TOKEN}\n\n# ci runners\n{CI_TOKEN} ci- nightly-\n"),
    )
    .unwrap();
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            tokens.to_str().unwrap(),
            "--allow-origin",
            "https://app.example",
        ],
    )
    .await;
    let http = client();
    let team = format!("Bearer {TOKEN}");
    let ci = format!("Bearer {CI_TOKEN}");
    let url = server.url("ci-1");
    let cases: Vec<Case> = vec![
        (
            "no token",
            url.clone(),
            vec![],
            INITIALIZE.to_owned(),
            401,
            json!({"error": "unauthorized", "message": NO_TOKEN}),
        ),
        (
            "a wrong token",
            url.clone(),
            vec![("authorization", format!("Bearer {TOKEN}x"))],
            INITIALIZE.to_owned(),
            401,
            json!({"error": "unauthorized", "message": WRONG_TOKEN}),
        ),
        (
            "a placeholder the client did not expand",
            url.clone(),
            vec![("authorization", "Bearer ${HARNESS_TOKEN}".to_owned())],
            INITIALIZE.to_owned(),
            401,
            json!({"error": "unauthorized", "message": UNEXPANDED_TOKEN}),
        ),
        (
            "not a bearer token",
            url.clone(),
            vec![("authorization", format!("Basic {TOKEN}"))],
            INITIALIZE.to_owned(),
            401,
            json!({"error": "unauthorized", "message": NO_TOKEN}),
        ),
        (
            "a token limited to other prefixes",
            server.url("team-1"),
            vec![("authorization", ci.clone())],
            INITIALIZE.to_owned(),
            403,
            json!({"error": "forbidden", "message": "this token may not reach this session"}),
        ),
        (
            "a foreign origin",
            url.clone(),
            vec![
                ("authorization", team.clone()),
                ("origin", "https://evil.example".to_owned()),
            ],
            INITIALIZE.to_owned(),
            403,
            json!({"error": "origin_refused", "message": "the request's Origin is not allowed (see --allow-origin)"}),
        ),
        (
            "a rebound host name",
            url.clone(),
            vec![
                ("authorization", team.clone()),
                ("host", "evil.example".to_owned()),
            ],
            INITIALIZE.to_owned(),
            403,
            json!({"error": "host_refused", "message": "a loopback server answers requests for localhost, 127.0.0.1 or [::1] only"}),
        ),
        (
            "a session id with a bad character",
            server.url("a%2Fb"),
            vec![("authorization", team.clone())],
            INITIALIZE.to_owned(),
            400,
            json!({"error": "invalid_session_id", "message": "a session id is 1 to 128 characters of A-Z a-z 0-9 . _ -"}),
        ),
        (
            "a session id too long",
            server.url(&"s".repeat(129)),
            vec![("authorization", team.clone())],
            INITIALIZE.to_owned(),
            400,
            json!({"error": "invalid_session_id", "message": "a session id is 1 to 128 characters of A-Z a-z 0-9 . _ -"}),
        ),
        (
            "an unknown path",
            format!("http://{}/mcp", server.addr),
            vec![("authorization", team.clone())],
            INITIALIZE.to_owned(),
            404,
            json!({"error": "not_found", "message": "sessions are served at /sessions/{id}/mcp"}),
        ),
    ];
    for (what, url, headers, body, status, expected) in cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let reply = send(&http, "POST", &url, &headers, &body).await.unwrap();
        assert_eq!((what, reply.status, reply.json()), (what, status, expected));
        assert_eq!(
            reply.headers.get("content-type").unwrap(),
            "application/json",
            "{what}"
        );
        if status == 401 {
            assert_eq!(reply.headers.get("www-authenticate").unwrap(), "Bearer");
        }
    }
    // A body declared too large is refused from its headers alone. Sent over a bare socket
    // that writes no body: a client still writing a megabyte when the refusal and the close
    // arrive may see the connection reset before it reads the answer.
    let raw = raw_post(
        &server.addr,
        "/sessions/ci-1/mcp",
        &[("authorization", &team), ("content-length", "1048577")],
    )
    .await;
    assert!(
        raw.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
        "{raw}"
    );
    assert!(
        raw.contains("\r\ncontent-type: application/json\r\n"),
        "{raw}"
    );
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<Value>(body).unwrap(),
        json!({"error": "body_too_large", "message": "a request body is at most 1048576 bytes"})
    );
    // What passes: the team's token anywhere, the ci token on its prefixes, an allowed
    // origin, a loopback one.
    for (token, session) in [
        (TOKEN, "team-1"),
        (CI_TOKEN, "ci-1"),
        (CI_TOKEN, "nightly-7"),
    ] {
        let mut connection = Connection::open(&http, &server.url(session), Some(token))
            .await
            .unwrap_or_else(|reply| panic!("{session}: {reply:?}"));
        let result = connection.call(&http, "job_list", json!({})).await.unwrap();
        // A served session's jobs are walled: the list ends with what is in force.
        let listed = texts(&result).join("\n");
        assert!(
            listed.starts_with("(no background jobs)\n\nbash jobs run confined: sandbox: "),
            "{listed}"
        );
    }
    for origin in [
        "https://app.example",
        "http://127.0.0.1:9",
        "http://localhost:5173",
    ] {
        let reply = send(
            &http,
            "POST",
            &server.url("ci-2"),
            &[("authorization", &ci), ("origin", origin)],
            INITIALIZE,
        )
        .await
        .unwrap();
        assert_eq!((origin, reply.status), (origin, 200));
    }
}

/// The 2026-07-28 era over HTTP: no handshake, each request on its own; a background call
/// that declares the tasks extension is answered with a task, whose result `tasks/get` reads.
#[tokio::test]
async fn the_2026_era_and_tasks_are_served_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let server = start_http(dir.path(), &["--dir", sessions.to_str().unwrap()]).await;
    let http = client();
    let url = server.url("stateless");
    let bearer = server.bearer();
    let post = |method: &'static str, name: Option<String>, body: Value| {
        let http = http.clone();
        let url = url.clone();
        let bearer = bearer.clone();
        async move {
            let mut headers = vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
                ("authorization", bearer.as_str()),
            ];
            if let Some(name) = &name {
                headers.push(("mcp-name", name.as_str()));
            }
            let reply = send(&http, "POST", &url, &headers, &body.to_string())
                .await
                .unwrap();
            assert_eq!(reply.status, 200, "{}", reply.body);
            reply.messages().pop().unwrap()
        }
    };
    let discovered = post(
        "server/discover",
        None,
        json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta(false)}}),
    )
    .await;
    assert_eq!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "2026-07-28"
    );
    let written = post(
        "tools/call",
        Some("todo_write".to_owned()),
        json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": {
            "_meta": meta(false), "name": "todo_write", "arguments": todos("no handshake")}}),
    )
    .await;
    assert_eq!(
        written["result"]["content"],
        json!([{"type": "text", "text": "Updated todo list: 0 pending, 1 in progress, 0 completed."}])
    );
    let started = post(
        "tools/call",
        Some("bash".to_owned()),
        json!({"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {
            "_meta": meta(true), "name": "bash",
            "arguments": {"command": "echo over-http", "run_in_background": true}}}),
    )
    .await;
    assert_eq!(started["result"]["resultType"], "task");
    let task = started["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + BOUND;
    let result = loop {
        let got = post(
            "tasks/get",
            Some(task.clone()),
            json!({"jsonrpc": "2.0", "id": "g", "method": "tasks/get", "params": {
                "_meta": meta(true), "taskId": task}}),
        )
        .await;
        if got["result"]["status"] == "completed" {
            break got["result"]["result"].clone();
        }
        assert_eq!(got["result"]["status"], "working", "{got}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never completed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("over-http"), "{result}");
}

/// The answer to a `POST` of `path` with `headers` and no body bytes, as text, read until
/// the server closes the connection or the answer's `content-length` is complete.
async fn raw_post(addr: &str, path: &str, headers: &[(&str, &str)]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\n");
    request.push_str(
        "content-type: application/json\r\naccept: application/json, text/event-stream\r\n",
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .expect("the refusal in time")
            .unwrap_or(0);
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .and_then(|value| value.trim().parse::<usize>().ok());
            if length.is_some_and(|length| body.len() >= length) {
                break;
            }
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}
