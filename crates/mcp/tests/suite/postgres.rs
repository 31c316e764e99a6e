//! Two `harness mcp` processes on one session of one PostgreSQL store
//! (`HARNESS_TEST_POSTGRES_URL`): exactly one owns it and writes; the other is refused, and an
//! owner whose lease was taken answers every tool call with the fenced error.

use std::sync::atomic::{AtomicU64, Ordering};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{BOUND, config, harness_bin, kill, serve_command, texts};

/// The test server's URL, or `None` (after a skip line every run shows) when it is not set
/// outside CI. With `CI=true` a missing server fails the test.
pub(crate) fn server_url() -> Option<String> {
    match std::env::var("HARNESS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "HARNESS_TEST_POSTGRES_URL is not set and CI=true: the PostgreSQL tests need a \
                 server (.ci/postgres start)"
            );
            turnkit_testkit::skip::skipped(
                "HARNESS_TEST_POSTGRES_URL is not set; start a server with .ci/postgres and \
                 export its URL to run the PostgreSQL tests",
            );
            None
        }
    }
}

pub(crate) async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// A fresh database on the test server (the CLI uses the default schema), as a URL.
pub(crate) async fn fresh_database(url: &str) -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "t_mcp_{}_{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::SeqCst)
    );
    let admin = client(url).await;
    // One statement each: neither runs inside a transaction block.
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&statement).await.unwrap();
    }
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}{query}")
}

fn command(dir: &std::path::Path, store: &str) -> tokio::process::Command {
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut command = tokio::process::Command::new(harness_bin());
    command
        .args(["mcp", "--session", "s", "--store", store, "--config"])
        .arg(&config_path);
    command
}

fn todos(content: &str) -> Value {
    json!({"todos": [{"content": content, "status": "in_progress"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_session_exactly_one_writes() {
    let Some(url) = server_url() else {
        return;
    };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let (a, a_pid) = serve_command(command(dir.path(), &store)).await;
    assert_eq!(
        a.texts("todo_write", todos("from a")).await,
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );
    let sql = client(&store).await;
    let owner: String = sql
        .query_one("SELECT owner FROM harness.sessions WHERE id = 's'", &[])
        .await
        .unwrap()
        .get(0);

    // A second server on the session is refused while the first holds its lease.
    let refused = tokio::time::timeout(BOUND, command(dir.path(), &store).output())
        .await
        .expect("the refused server exits in time")
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(refused.stderr).unwrap(),
        format!("harness: session s is owned by host {owner}; retry after its lease expires\n")
    );

    // A client of that second server still gets its handshake answered, and every call says
    // which host serves the session and what to do.
    let why = format!(
        "harness cannot serve session s: host {owner} serves it and its lease is live. Give \
         this client a session of its own (start `harness mcp` with its own --session), or \
         wait until that host stops and its lease expires; then reconnect this MCP server \
         (Claude Code: /mcp, then reconnect; Codex: start a new session)."
    );
    let mut second = super::tasks::Raw::spawn(command(dir.path(), &store), None);
    let init = second
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "second", "version": "1"}}),
        )
        .await;
    assert!(
        init["result"]["instructions"]
            .as_str()
            .unwrap()
            .starts_with(&why),
        "{init}"
    );
    second.notify("notifications/initialized").await;
    let refused = second
        .request(
            "tools/call",
            json!({"name": "todo_write", "arguments": todos("from the second")}),
        )
        .await;
    assert_eq!(
        refused["result"],
        json!({"content": [{"type": "text", "text": format!("Error: {why}")}], "isError": true})
    );
    second.kill().await;

    // The first server stops (a paused VM) past its lease; a second server takes the session.
    kill("STOP", a_pid);
    sql.execute(
        "UPDATE harness.sessions SET lease_expires = now() - interval '1 second'",
        &[],
    )
    .await
    .unwrap();
    let (b, _) = serve_command(command(dir.path(), &store)).await;
    assert_eq!(
        b.texts("todo_write", todos("from b")).await,
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );

    // The first wakes up: its write is fenced, and so is every later call.
    kill("CONT", a_pid);
    let fenced = "Error: session s: this host no longer owns the session; stop its agents and jobs";
    let result = a.call("todo_write", todos("stale a")).await;
    assert_eq!(result["isError"], true);
    assert_eq!(texts(&result), [fenced]);
    let result = a.call("schedule_list", json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(texts(&result), [fenced]);

    b.stop().await;
    a.stop().await;
    let log: Vec<(i64, String, String)> = sql
        .query(
            "SELECT seq, type, data::text FROM harness.events WHERE session_id = 's' ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let write = |content: &str| {
        json!({"todos": [{"content": content, "status": "in_progress"}]}).to_string()
    };
    assert_eq!(
        log,
        [
            (1, "todo/write".to_owned(), write("from a")),
            (2, "todo/write".to_owned(), write("from b")),
        ]
    );
    let (owner, epoch): (Option<String>, i64) = sql
        .query_one(
            "SELECT owner, epoch FROM harness.sessions WHERE id = 's'",
            &[],
        )
        .await
        .map(|row| (row.get(0), row.get(1)))
        .unwrap();
    // Created by a (1), taken by b (2); b released it when it stopped.
    assert_eq!((owner, epoch), (None, 2));
}

/// `harness mcp` on PostgreSQL joins its own tasks (the lease watcher and the fence task) when
/// it stops: a SIGTERM ends it with status 0 in time, its lease released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_postgres_server_and_its_tasks_with_the_lease_released() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Some(url) = server_url() else {
        return;
    };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = command(dir.path(), &store)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "todo_write", "arguments": todos("before the signal")}}),
    ] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        tokio::time::timeout(BOUND, stdout.next_line())
            .await
            .expect("a reply in time")
            .unwrap()
            .expect("a reply line");
    }
    kill("TERM", child.id().unwrap());
    // stdin stays open: only the signal ends the server.
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the server exits on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    drop(stdin);
    let (owner, epoch, last): (Option<String>, i64, i64) = client(&store)
        .await
        .query_one(
            "SELECT owner, epoch, last_seq FROM harness.sessions WHERE id = 's'",
            &[],
        )
        .await
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .unwrap();
    assert_eq!((owner, epoch, last), (None, 1, 1));
}

/// `url` as a libpq key-value connection string (`host=… port=… user=… dbname=…`), each
/// value quoted.
fn key_value(url: &str) -> String {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let quote = |value: &str| format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"));
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        tokio_postgres::config::Host::Unix(path) => path.to_str().unwrap().to_owned(),
    };
    let mut pairs = vec![format!("host={}", quote(&host))];
    if let Some(port) = config.get_ports().first() {
        pairs.push(format!("port={port}"));
    }
    if let Some(user) = config.get_user() {
        pairs.push(format!("user={}", quote(user)));
    }
    pairs.push(format!("dbname={}", quote(config.get_dbname().unwrap())));
    pairs.join(" ")
}

/// `--store` given as a key-value connection string serves the session from that database
/// (its write is a row there) and creates nothing in the working folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_value_connection_string_is_a_postgres_store() {
    let Some(url) = server_url() else {
        return;
    };
    let store = fresh_database(&url).await;
    let conninfo = key_value(&store);
    assert!(conninfo.starts_with("host="), "{conninfo}");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut command = command(dir.path(), &conninfo);
    command.current_dir(&work);
    let (server, _) = serve_command(command).await;
    assert_eq!(
        server.texts("todo_write", todos("kept in postgres")).await,
        ["Updated todo list: 0 pending, 1 in progress, 0 completed."]
    );
    server.stop().await;
    let log: Vec<(i64, String)> = client(&store)
        .await
        .query(
            "SELECT seq, type FROM harness.events WHERE session_id = 's' ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(log, [(1, "todo/write".to_owned())]);
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}
