//! A PostgreSQL server that stops answering (connections stay open, nothing comes back) while
//! `harness mcp` is asked to stop: the server cannot flush or release its lease, and the
//! shutdown bound (`--shutdown-grace`) ends the process anyway, with every call it answered
//! success already in the store.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::postgres::{client, fresh_database, server_url};
use super::support::{BOUND, config, harness_bin};

/// The socket file PostgreSQL listens on in its socket folder (the default port).
const SOCKET: &str = ".s.PGSQL.5432";

/// A relay in front of the test server's socket that can stop relaying: what a server that
/// hangs looks like to its clients.
struct Relay {
    dir: tempfile::TempDir,
    frozen: watch::Sender<bool>,
    _accept: AbortOnDropHandle<()>,
}

impl Relay {
    fn start(upstream: PathBuf) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join(SOCKET)).unwrap();
        let (frozen, watching) = watch::channel(false);
        let accept = tokio::spawn(async move {
            let mut connections = Vec::new();
            while let Ok((downstream, _)) = listener.accept().await {
                let upstream = UnixStream::connect(&upstream).await.unwrap();
                let (down_read, down_write) = downstream.into_split();
                let (up_read, up_write) = upstream.into_split();
                connections.push(AbortOnDropHandle::new(tokio::spawn(pipe(
                    down_read,
                    up_write,
                    watching.clone(),
                ))));
                connections.push(AbortOnDropHandle::new(tokio::spawn(pipe(
                    up_read,
                    down_write,
                    watching.clone(),
                ))));
            }
        });
        Self {
            dir,
            frozen,
            _accept: AbortOnDropHandle::new(accept),
        }
    }

    /// From now on nothing more is relayed either way.
    fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// `url` (a URL of the test server) through this relay.
    fn url(&self, url: &str) -> String {
        let (scheme_user, rest) = url.split_once('@').unwrap();
        let (_, path) = rest.split_once('/').unwrap();
        let host = self.dir.path().to_str().unwrap().replace('/', "%2F");
        format!("{scheme_user}@{host}/{path}")
    }
}

/// Copies `from` to `to` until either ends, holding every chunk once frozen.
async fn pipe(
    mut from: tokio::net::unix::OwnedReadHalf,
    mut to: tokio::net::unix::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let Ok(n) = from.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        // Never thawed: the chunk waits for good.
        if frozen.wait_for(|f| !*f).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The socket of the test server at `url` (its host is the percent-encoded socket folder).
fn server_socket(url: &str) -> PathBuf {
    let (_, rest) = url.split_once('@').unwrap();
    let (host, _) = rest.split_once('/').unwrap();
    Path::new(&host.replace("%2F", "/")).join(SOCKET)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_stops_answering_cannot_hold_a_stopping_server_past_its_grace() {
    let Some(url) = server_url() else {
        return;
    };
    let store = fresh_database(&url).await;
    let relay = Relay::start(server_socket(&url));
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(&config_path, config().to_string()).unwrap();
    let mut child = tokio::process::Command::new(harness_bin())
        .args(["mcp", "--session", "s", "--shutdown-grace", "1", "--store"])
        .arg(relay.url(&store))
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut replies = Vec::new();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "todo_write",
            "arguments": {"todos": [{"content": "saved before the hang", "status": "pending"}]},
        }}),
        // A job running at the signal: stopping it appends its settlement, which the
        // shutdown then cannot flush.
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "bash",
            "arguments": {"command": "sleep 60", "run_in_background": true},
        }}),
    ] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let reply = tokio::time::timeout(BOUND, stdout.next_line())
            .await
            .expect("a reply in time")
            .unwrap()
            .expect("a reply line");
        replies.push(serde_json::from_str::<serde_json::Value>(&reply).unwrap());
    }
    assert_eq!(
        replies[1]["result"]["content"][0]["text"],
        json!("Updated todo list: 1 pending, 0 in progress, 0 completed.")
    );
    assert_eq!(
        replies[2]["result"]["content"][0]["text"],
        json!("started background job bash-1")
    );
    relay.freeze();
    super::support::kill("TERM", child.id().unwrap());
    // stdin stays open: only the signal, then the bound, end the server.
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the bound ends the server")
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(
        stderr.contains(
            "harness mcp: still stopping 1s after the signal (a store that does not answer?); \
             exiting without a clean shutdown"
        ),
        "stderr: {stderr}"
    );
    drop(stdin);
    // The answered call was flushed before its answer.
    let saved: Vec<String> = client(&store)
        .await
        .query(
            "SELECT type FROM harness.events WHERE session_id = 's' ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(saved, ["todo/write", "job/start"]);
}
