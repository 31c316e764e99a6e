//! Bounded under abuse: the attacker is a real client on real sockets against a real `harness
//! mcp --http`, and each test counts what got through: connections held past their timeouts,
//! clients kept out, sessions or session files created, memory kept, log lines written.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::http_support::{HttpServer, client, send, session_files, start_http, stateless, texts};
use super::support::BOUND;

/// Writes a measured figure to stderr, where every test run shows it (the harness captures
/// `print!`).
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

const CLIENT: &str = "client-token-0123456789abcdef";
const ATTACKER: &str = "attacker-token-0123456789abcdef";

/// A token file with the client's and the attacker's tokens, in `dir`.
fn token_file(dir: &std::path::Path) -> String {
    let path = dir.join("token-file");
    std::fs::write(&path, format!("{CLIENT}\n{ATTACKER}\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn todo_call(content: &str) -> Value {
    json!({"name": "todo_write", "arguments":
        {"todos": [{"content": content, "status": "in_progress"}]}})
}

const UPDATED: &str = "Updated todo list: 0 pending, 1 in progress, 0 completed.";

/// Reads `stream` until the server closes it (end of file or a reset); when that was.
async fn until_closed(mut stream: TcpStream) -> Instant {
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout(BOUND, stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return Instant::now(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("a connection was still open {BOUND:?} later"),
        }
    }
}

/// The server's resident set size, in KiB (`VmRSS` of `/proc/<pid>/status`).
fn rss_kib(server: &HttpServer) -> u64 {
    let pid = server.child.id().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .map(|kib| kib.trim().parse().unwrap())
        .unwrap()
}

/// Raises this process's soft limit of open files to its hard limit (thousands of sockets).
fn raise_open_files() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    );
}

/// Opens `count` attacker connections to `server`: a third send nothing, a third half a
/// request line, a third a request head (with the attacker's token) whose 100-byte body
/// never comes.
/// Each is read until the server closes it; the task yields how long it lived. `still_open`
/// counts those not closed yet.
async fn hold(
    server: &HttpServer,
    count: usize,
    still_open: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<Duration>> {
    let mut held = Vec::new();
    for i in 0..count {
        let mut stream = TcpStream::connect(&server.addr).await.unwrap();
        let bytes = if i % 3 == 0 {
            String::new()
        } else if i % 3 == 1 {
            "POST /sessions/victim/mc".to_owned()
        } else {
            format!(
                "POST /sessions/a-{i}/mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer \
                 {ATTACKER}\r\ncontent-type: application/json\r\naccept: application/json, \
                 text/event-stream\r\ncontent-length: 100\r\n\r\n",
                addr = server.addr
            )
        };
        stream.write_all(bytes.as_bytes()).await.unwrap();
        let sent = Instant::now();
        let open = still_open.clone();
        open.fetch_add(1, Ordering::SeqCst);
        held.push(tokio::spawn(async move {
            let closed = until_closed(stream).await;
            open.fetch_sub(1, Ordering::SeqCst);
            closed.duration_since(sent)
        }));
    }
    held
}

/// A `todo_write` on a new connection and `/healthz`: how long the call took.
async fn real_client(server: &HttpServer) -> Duration {
    let http = client();
    let started = Instant::now();
    let reply = stateless(
        &http,
        &server.url("real"),
        Some(&bearer(CLIENT)),
        "tools/call",
        Some("todo_write"),
        todo_call("still served"),
        false,
    )
    .await;
    let took = started.elapsed();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(texts(&reply.messages()[0]["result"]), [UPDATED]);
    let health = send(
        &client(),
        "GET",
        &format!("http://{}/healthz", server.addr),
        &[],
        "",
    )
    .await
    .unwrap();
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
    took
}

/// 2,000 connections held by an attacker (nothing sent, half a request line, or a request head
/// whose `Content-Length` body never comes), every one of them open when a real client comes: its
/// `todo_write` on a new connection is still answered within 1 s, `/healthz` too, and the
/// server closes every held connection within its header or body timeout (10 s here).
#[tokio::test]
async fn held_connections_keep_no_client_out_and_are_closed_within_their_timeouts() {
    raise_open_files();
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let tokens = token_file(dir.path());
    let timeout = Duration::from_secs(10);
    // Caps above the attack: this test holds all 2,000 (the next one fills the server).
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            &tokens,
            "--header-timeout",
            "10",
            "--body-timeout",
            "10",
            "--max-connections",
            "4096",
            "--max-connections-per-token",
            "4096",
        ],
    )
    .await;
    let still_open = Arc::new(AtomicUsize::new(0));
    let opening = Instant::now();
    let held = hold(&server, 2000, &still_open).await;
    let opened_in = opening.elapsed();
    let open_at_call = still_open.load(Ordering::SeqCst);
    let took = real_client(&server).await;
    report!(
        "a todo_write with {open_at_call} of 2000 attacker connections open (opened in {} \
         ms): answered in {} ms",
        opened_in.as_millis(),
        took.as_millis()
    );
    assert!(opened_in < timeout, "the attack took {opened_in:?} to open");
    assert_eq!(open_at_call, 2000);
    assert!(took < Duration::from_secs(1), "answered in {took:?}");

    // Every held connection was closed by the server within its timeout (plus the time to
    // notice it: a second).
    let mut late = Vec::new();
    let mut longest = Duration::ZERO;
    for task in held {
        let lived = task.await.unwrap();
        longest = longest.max(lived);
        if lived > timeout + Duration::from_secs(1) {
            late.push(lived);
        }
    }
    report!(
        "the longest held connection lived {} ms",
        longest.as_millis()
    );
    assert_eq!(late, Vec::<Duration>::new());
    assert_eq!(session_files(&sessions), ["real.jsonl"]);
}

/// A server full of connections nobody authenticated on (300 held against a cap of 100, with
/// the default 10 s header timeout): each new one closes the oldest of them, so a real client
/// is answered within 1 s all the same, and 200 of the attacker's were closed at once.
#[tokio::test]
async fn a_full_server_gives_up_unauthenticated_connections_for_a_client() {
    raise_open_files();
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let tokens = token_file(dir.path());
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            &tokens,
            "--max-connections",
            "100",
        ],
    )
    .await;
    let still_open = Arc::new(AtomicUsize::new(0));
    let mut held = Vec::new();
    for _ in 0..300 {
        // Half a request line each: none of them ever authenticated.
        let mut stream = TcpStream::connect(&server.addr).await.unwrap();
        stream.write_all(b"POST /sessions/victim/mc").await.unwrap();
        let open = still_open.clone();
        open.fetch_add(1, Ordering::SeqCst);
        let sent = Instant::now();
        held.push(tokio::spawn(async move {
            let closed = until_closed(stream).await;
            open.fetch_sub(1, Ordering::SeqCst);
            closed.duration_since(sent)
        }));
    }
    let took = real_client(&server).await;
    report!(
        "a todo_write on a full server: answered in {} ms",
        took.as_millis()
    );
    assert!(took < Duration::from_secs(1), "answered in {took:?}");
    // 300 connections against a cap of 100: the first 200 (and one more for each of the
    // client's two connections) were closed long before the header timeout.
    let lived: Vec<Duration> = futures::future::join_all(held)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let at_once = lived
        .iter()
        .filter(|lived| **lived < Duration::from_secs(5))
        .count();
    assert!(at_once >= 200, "only {at_once} closed at once");
}

/// One kind of request the flood sends: its method, its path, its headers, its body and the
/// status it must get.
struct Kind {
    method: &'static str,
    path: fn(usize) -> String,
    auth: Option<&'static str>,
    body: &'static str,
    status: u16,
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn kinds() -> Vec<Kind> {
    vec![
        // No token, a wrong token: 401.
        Kind {
            method: "POST",
            path: |i| format!("/sessions/none-{i}/mcp"),
            auth: None,
            body: CALL,
            status: 401,
        },
        Kind {
            method: "POST",
            path: |i| format!("/sessions/wrong-{i}/mcp"),
            auth: Some("Bearer wrong-token-0123456789abcdef"),
            body: CALL,
            status: 401,
        },
        // A malformed id: 400.
        Kind {
            method: "POST",
            path: |i| format!("/sessions/bad%20id{i}/mcp"),
            auth: Some("client"),
            body: CALL,
            status: 400,
        },
        // GET and DELETE of a session not open here: 404; OPTIONS and PUT: 405.
        Kind {
            method: "GET",
            path: |i| format!("/sessions/get-{i}/mcp"),
            auth: Some("client"),
            body: "",
            status: 404,
        },
        Kind {
            method: "DELETE",
            path: |i| format!("/sessions/delete-{i}/mcp"),
            auth: Some("client"),
            body: "",
            status: 404,
        },
        Kind {
            method: "OPTIONS",
            path: |i| format!("/sessions/options-{i}/mcp"),
            auth: None,
            body: "",
            status: 401,
        },
        Kind {
            method: "OPTIONS",
            path: |i| format!("/sessions/options-{i}/mcp"),
            auth: Some("client"),
            body: "",
            status: 405,
        },
        Kind {
            method: "PUT",
            path: |i| format!("/sessions/put-{i}/mcp"),
            auth: Some("client"),
            body: CALL,
            status: 405,
        },
        // A body that is not JSON-RPC: 400.
        Kind {
            method: "POST",
            path: |i| format!("/sessions/body-{i}/mcp"),
            auth: Some("client"),
            body: r#"{"hello":"world"}"#,
            status: 400,
        },
        Kind {
            method: "POST",
            path: |i| format!("/sessions/json-{i}/mcp"),
            auth: Some("client"),
            body: "not json",
            status: 400,
        },
        // A session whose log cannot be read: 500, its failure warned about once a minute
        // (and the session the failed open counted for the token given back each time).
        Kind {
            method: "POST",
            path: |_| "/sessions/broken/mcp".to_owned(),
            auth: Some("attacker"),
            body: CALL,
            status: 500,
        },
        // A well-formed request for a new session from a token at its cap of sessions: 429,
        // and its place in the server's table of sessions forgotten.
        Kind {
            method: "POST",
            path: |i| format!("/sessions/full-{i}/mcp"),
            auth: Some("client"),
            body: CALL,
            status: 429,
        },
    ]
}

/// Sends requests `range` of the flood (three in four of them for new sessions past the
/// token's cap, the rest of every other kind) from 32 tasks, each on a kept-alive connection; how
/// many of each kind got the status expected.
async fn flood(addr: &str, range: std::ops::Range<usize>) -> Vec<usize> {
    let kinds = Arc::new(kinds());
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new((0..kinds.len()).map(|_| AtomicUsize::new(0)).collect());
    let tasks = 32;
    let mut handles = Vec::new();
    for task in 0..tasks {
        let (kinds, counts, addr) = (kinds.clone(), counts.clone(), addr.to_owned());
        let range = range.clone();
        handles.push(tokio::spawn(async move {
            let http = client();
            let client_auth = bearer(CLIENT);
            let attacker_auth = bearer(ATTACKER);
            for i in range.filter(|i| i % tasks == task) {
                // Three in four are the deepest refusal (a failed open of a new session), the
                // rest every other kind in turn.
                let which = if i % 4 == 0 {
                    (i / 4) % (kinds.len() - 1)
                } else {
                    kinds.len() - 1
                };
                let kind = &kinds[which];
                let mut headers = Vec::new();
                match kind.auth {
                    Some("client") => headers.push(("authorization", client_auth.as_str())),
                    Some("attacker") => headers.push(("authorization", attacker_auth.as_str())),
                    Some(other) => headers.push(("authorization", other)),
                    None => {}
                }
                headers.push(("mcp-protocol-version", "2025-06-18"));
                let url = format!("http://{addr}{}", (kind.path)(i));
                let reply = send(&http, kind.method, &url, &headers, kind.body)
                    .await
                    .unwrap();
                assert_eq!(
                    reply.status, kind.status,
                    "{} {url}: {}",
                    kind.method, reply.body
                );
                counts[which].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    counts.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// 100,000 requests for nonexistent or malformed sessions (no token, a wrong one, a bad id,
/// GET / DELETE / OPTIONS / PUT of a session not open, bodies that are not JSON-RPC, a session
/// whose log is malformed, new sessions past the token's cap): every one refused with its
/// status, no session file created, the server's memory back within 10 MiB of where it was,
/// one warning a minute in its log.
#[tokio::test]
async fn a_flood_of_bad_requests_creates_nothing_and_keeps_no_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join("broken.jsonl"), "not a session log\n").unwrap();
    let tokens = token_file(dir.path());
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            &tokens,
            "--max-sessions-per-token",
            "1",
        ],
    )
    .await;
    // The client's token opens its one session.
    let opened = stateless(
        &client(),
        &server.url("first"),
        Some(&bearer(CLIENT)),
        "tools/call",
        Some("todo_write"),
        todo_call("first"),
        false,
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    // A warm-up: the allocator's and the runtime's own first growth is not a leak.
    let warm_up = 5_000;
    let began = Instant::now();
    flood(&server.addr, 0..warm_up).await;
    let before = rss_kib(&server);
    let total = 100_000;
    let started = Instant::now();
    let counts = flood(&server.addr, warm_up..warm_up + total).await;
    let after = rss_kib(&server);
    report!(
        "{total} refused requests in {} ms; VmRSS {before} KiB before, {after} KiB after",
        started.elapsed().as_millis()
    );
    assert_eq!(counts.iter().sum::<usize>(), total);
    assert!(
        after < before + 10 * 1024,
        "VmRSS grew from {before} KiB to {after} KiB"
    );
    assert_eq!(session_files(&sessions), ["broken.jsonl", "first.jsonl"]);
    assert_eq!(
        std::fs::read_to_string(sessions.join("broken.jsonl")).unwrap(),
        "not a session log\n"
    );
    // One warning a minute at most about the broken session, each counting the failures it
    // did not report; and the refused credentials told at most once per code per 10 s.
    let log = server.log.lock().unwrap().clone();
    let elapsed = started.elapsed().as_secs();
    let since_warm_up = began.elapsed().as_secs();
    let (refused, rest): (Vec<&String>, Vec<&String>) = log
        .iter()
        .partition(|line| line.contains(" WARN turnkit_mcp::http::request: refused a request"));
    assert!(
        !rest.is_empty() && rest.len() as u64 <= 2 + elapsed / 60,
        "{} lines in {elapsed} s: {rest:#?}",
        rest.len()
    );
    assert!(
        rest.iter()
            .all(|line| line.contains(" WARN ") && line.contains("opening session broken")),
        "{rest:#?}"
    );
    // Four refusal codes of 401 and 403 (unauthorized, forbidden, origin_refused,
    // host_refused), each at most once per window since the warm-up began.
    assert!(
        !refused.is_empty() && refused.len() as u64 <= 4 * (1 + since_warm_up.div_ceil(10)),
        "{} lines in {since_warm_up} s: {refused:#?}",
        refused.len()
    );
}

/// What a session's URL answers besides a POST of JSON-RPC, exactly, and that none of it
/// opens a session: GET and DELETE of a session not open (404), OPTIONS and PUT (405), a body
/// that is not JSON-RPC (400), a body that does not arrive in time (408, the connection
/// closed), a head past 64 KiB (431, closed); then a kept-alive connection left idle is closed
/// after the keep-alive timeout.
#[tokio::test]
async fn only_a_well_formed_request_opens_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let tokens = token_file(dir.path());
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            &tokens,
            "--body-timeout",
            "1",
            "--keep-alive-timeout",
            "1",
        ],
    )
    .await;
    let http = client();
    let auth = bearer(CLIENT);
    let url = server.url("closed");
    let not_open = json!({"error": "session_not_open",
        "message": "session closed is not open on this server; a POST of an MCP request opens it"});
    let not_allowed = json!({"error": "method_not_allowed",
        "message": "a session's URL takes POST, GET and DELETE"});
    let invalid = json!({"error": "invalid_body",
        "message": "a POST's body is a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\")"});
    for (method, body, status, expected) in [
        ("GET", "", 404, &not_open),
        ("DELETE", "", 404, &not_open),
        ("OPTIONS", "", 405, &not_allowed),
        ("PUT", CALL, 405, &not_allowed),
        ("POST", "[]", 400, &invalid),
        ("POST", r#"{"jsonrpc":"1.0","method":"x"}"#, 400, &invalid),
    ] {
        let reply = send(&http, method, &url, &[("authorization", &auth)], body)
            .await
            .unwrap();
        assert_eq!(
            (method, reply.status, reply.json()),
            (method, status, expected.clone())
        );
    }
    assert_eq!(session_files(&sessions), Vec::<String>::new());

    // A Content-Length whose body never comes: 408 after the body timeout, then closed.
    let mut stream = TcpStream::connect(&server.addr).await.unwrap();
    let head = format!(
        "POST /sessions/closed/mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: {auth}\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         content-length: 100\r\n\r\n{{\"jsonrpc\"",
        addr = server.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(BOUND, stream.read_to_end(&mut answer))
        .await
        .expect("closed by the server")
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n")
            && answer.contains("connection: close\r\n")
            && answer.ends_with(
                r#"{"error":"body_timeout","message":"the request body did not arrive within 1 s"}"#
            ),
        "{answer}"
    );
    assert_eq!(session_files(&sessions), Vec::<String>::new());

    // A head that never ends, 100 KiB of one header: refused at 64 KiB, the connection closed.
    let mut stream = TcpStream::connect(&server.addr).await.unwrap();
    let mut head = format!(
        "POST /sessions/closed/mcp HTTP/1.1\r\nhost: {addr}\r\nx-pad: ",
        addr = server.addr
    )
    .into_bytes();
    head.resize(100 * 1024, b'a');
    // The server may close before it has read it all.
    let _ = stream.write_all(&head).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(BOUND, stream.read_to_end(&mut answer))
        .await
        .expect("closed by the server");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer}"
    );

    // A request served, then the connection left idle: closed after the keep-alive timeout.
    let mut stream = TcpStream::connect(&server.addr).await.unwrap();
    let request = format!(
        "GET /healthz HTTP/1.1\r\nhost: {addr}\r\n\r\n",
        addr = server.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let answered = Instant::now();
    let closed = until_closed(stream).await;
    let idle = closed.duration_since(answered);
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(3),
        "closed after {idle:?}"
    );
}

/// The caps per token: connections (the third connection of a token capped at 2 is answered
/// 429 and closed; another token is not affected) and sessions (the third session of a token
/// capped at 2 is refused 429 and not created, until one of its sessions is released).
#[tokio::test]
async fn a_token_holds_no_more_connections_and_sessions_than_its_caps() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let tokens = token_file(dir.path());
    let server = start_http(
        dir.path(),
        &[
            "--dir",
            sessions.to_str().unwrap(),
            "--token-file",
            &tokens,
            "--max-connections-per-token",
            "2",
            "--max-sessions-per-token",
            "2",
            "--idle-release",
            "1",
        ],
    )
    .await;
    let request = |session: &str, token: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "_meta": super::http_support::meta(false), "name": "todo_write",
            "arguments": todo_call("x")["arguments"]}})
        .to_string();
        format!(
            "POST /sessions/{session}/mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer \
             {token}\r\ncontent-type: application/json\r\naccept: application/json, \
             text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\n\
             mcp-name: todo_write\r\ncontent-length: {length}\r\n\r\n{body}",
            addr = server.addr,
            length = body.len()
        )
    };
    // Reads one answer's head and body (by its content-length) from `stream`.
    async fn answer(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let read = tokio::time::timeout(BOUND, stream.read(&mut buffer))
                .await
                .expect("an answer")
                .unwrap();
            answer.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&answer).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .unwrap()
                    .parse()
                    .unwrap();
                if body.len() >= length || read == 0 {
                    return text;
                }
            }
        }
    }
    let mut kept = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(&server.addr).await.unwrap();
        stream
            .write_all(request("one", CLIENT).as_bytes())
            .await
            .unwrap();
        assert!(answer(&mut stream).await.starts_with("HTTP/1.1 200 OK\r\n"));
        kept.push(stream);
    }
    let mut third = TcpStream::connect(&server.addr).await.unwrap();
    third
        .write_all(request("one", CLIENT).as_bytes())
        .await
        .unwrap();
    let refused = answer(&mut third).await;
    assert!(
        refused.starts_with("HTTP/1.1 429 Too Many Requests\r\n")
            && refused.contains("connection: close\r\n")
            && refused.ends_with(
                r#"{"error":"too_many_connections","message":"this token holds 2 connections to this server already"}"#
            ),
        "{refused}"
    );
    until_closed(third).await;
    // Another token is not held back by this one's connections.
    let mut other = TcpStream::connect(&server.addr).await.unwrap();
    other
        .write_all(request("one", ATTACKER).as_bytes())
        .await
        .unwrap();
    assert!(answer(&mut other).await.starts_with("HTTP/1.1 200 OK\r\n"));
    drop(other);
    // A connection given up frees its place.
    drop(kept.pop());
    let deadline = Instant::now() + BOUND;
    loop {
        let mut again = TcpStream::connect(&server.addr).await.unwrap();
        again
            .write_all(request("one", CLIENT).as_bytes())
            .await
            .unwrap();
        if answer(&mut again).await.starts_with("HTTP/1.1 200 OK\r\n") {
            break;
        }
        assert!(Instant::now() < deadline, "the freed place never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(kept);

    // Sessions: "one" and "two" are the client token's two; a third is refused, not created.
    let http = client();
    let auth = bearer(CLIENT);
    let call = |session: &'static str| {
        let (http, auth, url) = (http.clone(), auth.clone(), server.url(session));
        async move {
            stateless(
                &http,
                &url,
                Some(&auth),
                "tools/call",
                Some("todo_write"),
                todo_call(session),
                false,
            )
            .await
        }
    };
    assert_eq!(call("two").await.status, 200);
    let refused = call("three").await;
    assert_eq!(
        (refused.status, refused.json()),
        (
            429,
            json!({"error": "too_many_sessions",
                "message": "this token has 2 sessions open on this server; retry once one is released (idle)"})
        )
    );
    assert_eq!(session_files(&sessions), ["one.jsonl", "two.jsonl"]);
    // Once its sessions are released (idle for a second), the token opens another.
    let deadline = Instant::now() + BOUND;
    loop {
        let reply = call("three").await;
        if reply.status == 200 {
            break;
        }
        assert_eq!(reply.status, 429, "{}", reply.body);
        assert!(
            Instant::now() < deadline,
            "the sessions were never released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        session_files(&sessions),
        ["one.jsonl", "three.jsonl", "two.jsonl"]
    );
}
