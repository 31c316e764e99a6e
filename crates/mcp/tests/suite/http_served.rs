//! What an HTTP server keeps and says between calls: a session with live work is not released
//! when idle, and browsers of the origins `--allow-origin` admits get their CORS answers.
//!
//! The server is a real child process on the wall clock: a wait polls what it writes (its
//! answers, its session files), bounded by a deadline.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http_support::{Connection, INITIALIZE, client, send, start_http_with, texts};
use super::support::BOUND;

/// Waits until the server no longer holds session file `log` (it is locked while the session
/// is open), bounded by [`BOUND`].
async fn until_released(log: &std::path::Path) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while std::fs::File::open(log).unwrap().try_lock().is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} was never released",
            log.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn held(log: &std::path::Path) -> bool {
    std::fs::File::open(log).unwrap().try_lock().is_err()
}

/// A terminal whose program runs (a REPL, a dev server) is live work: with `--idle-release 1`
/// a session idle longer than a session that was released keeps its terminal, which still
/// answers on the same connection; once the terminal is killed, the session is released.
#[tokio::test]
async fn idle_release_keeps_a_session_whose_terminal_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let config = json!({"todo": {"allowParallelInProgress": false}, "terminal": {}});
    let server = start_http_with(
        dir.path(),
        &config,
        &["--dir", sessions.to_str().unwrap(), "--idle-release", "1"],
        &[],
    )
    .await;
    let http = client();
    let mut repl = Connection::open(&http, &server.url("repl"), server.token())
        .await
        .unwrap();
    let started = repl
        .call(&http, "terminal_start", json!({"command": "exec cat"}))
        .await
        .unwrap();
    assert_eq!(texts(&started), ["started terminal term-1"]);
    // Opened after the terminal's session went quiet: idle for less time than it.
    let mut quiet = Connection::open(&http, &server.url("quiet"), server.token())
        .await
        .unwrap();
    quiet
        .call(
            &http,
            "todo_write",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
        )
        .await
        .unwrap();
    until_released(&sessions.join("quiet.jsonl")).await;
    assert!(
        held(&sessions.join("repl.jsonl")),
        "the terminal's session was released"
    );

    let echoed = repl
        .call(
            &http,
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "still here\n", "wait_for": "still here"}),
        )
        .await
        .unwrap();
    let text = texts(&echoed).join("\n");
    assert!(text.contains("still here"), "{text}");
    assert!(
        text.ends_with("[status: completed, wait_for matched]"),
        "{text}"
    );

    let killed = repl
        .call(&http, "terminal_kill", json!({"terminal_id": "term-1"}))
        .await
        .unwrap();
    assert_eq!(killed["isError"], Value::Bool(false), "{killed}");
    until_released(&sessions.join("repl.jsonl")).await;
}

/// Over HTTP nothing is sent between calls (no `notifications/resources/updated`, no
/// `notifications/message`), so neither `resources.subscribe` nor `logging` is advertised;
/// stdio advertises both (`suite::protocol`).
#[tokio::test]
async fn http_advertises_no_subscriptions_and_no_logging() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let config = json!({"todo": {"allowParallelInProgress": false}});
    let server = start_http_with(
        dir.path(),
        &config,
        &["--dir", sessions.to_str().unwrap()],
        &[],
    )
    .await;
    let http = client();
    let bearer = server.bearer();
    let reply = send(
        &http,
        "POST",
        &server.url("caps"),
        &[("authorization", bearer.as_str())],
        INITIALIZE,
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.messages()[0]["result"]["capabilities"],
        json!({"tools": {}, "resources": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}

/// A browser page of an origin `--allow-origin` admits gets its preflight answered (no token:
/// browsers send none with it) and the CORS headers on every answer, refusals included; any
/// other origin is refused with no CORS header, so its page can read nothing.
#[tokio::test]
async fn allowed_origins_get_cors_answers_and_others_none() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let config = json!({"todo": {"allowParallelInProgress": false}});
    let server = start_http_with(
        dir.path(),
        &config,
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--allow-origin",
            "https://app.example",
        ],
        &[],
    )
    .await;
    let http = client();
    let url = server.url("web");
    let cors = |reply: &super::http_support::Reply, name: &str| {
        reply
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let preflight = [
        ("origin", "https://app.example"),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "authorization, content-type, mcp-protocol-version",
        ),
    ];
    let reply = send(&http, "OPTIONS", &url, &preflight, "").await.unwrap();
    assert_eq!(reply.status, 204, "{}", reply.body);
    assert_eq!(
        [
            "access-control-allow-origin",
            "access-control-allow-methods",
            "access-control-allow-headers",
            "access-control-max-age",
        ]
        .map(|name| cors(&reply, name)),
        [
            Some("https://app.example".to_owned()),
            Some("GET, POST, DELETE".to_owned()),
            Some(
                "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, \
                 mcp-method, mcp-name, last-event-id"
                    .to_owned()
            ),
            Some("600".to_owned()),
        ]
    );

    let bearer = server.bearer();
    let reply = send(
        &http,
        "POST",
        &url,
        &[
            ("origin", "https://app.example"),
            ("authorization", bearer.as_str()),
        ],
        INITIALIZE,
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        (
            cors(&reply, "access-control-allow-origin"),
            cors(&reply, "access-control-expose-headers")
        ),
        (
            Some("https://app.example".to_owned()),
            Some("mcp-session-id, mcp-protocol-version, www-authenticate".to_owned())
        )
    );
    assert!(reply.headers.contains_key("mcp-session-id"));

    // A refusal is readable by the admitted page.
    let reply = send(
        &http,
        "POST",
        &url,
        &[("origin", "https://app.example")],
        INITIALIZE,
    )
    .await
    .unwrap();
    assert_eq!(
        (reply.status, cors(&reply, "access-control-allow-origin")),
        (401, Some("https://app.example".to_owned()))
    );

    // Another origin: its preflight and its requests are refused, with no CORS header.
    let mut foreign = preflight;
    foreign[0].1 = "https://evil.example";
    let reply = send(&http, "OPTIONS", &url, &foreign, "").await.unwrap();
    assert_eq!(
        (
            reply.status,
            reply.json()["error"].clone(),
            cors(&reply, "access-control-allow-origin")
        ),
        (403, json!("origin_refused"), None)
    );
    let reply = send(
        &http,
        "POST",
        &url,
        &[
            ("origin", "https://evil.example"),
            ("authorization", bearer.as_str()),
        ],
        INITIALIZE,
    )
    .await
    .unwrap();
    assert_eq!(
        (reply.status, cors(&reply, "access-control-allow-origin")),
        (403, None)
    );
}
