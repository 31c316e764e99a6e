//! The stateless 2026-07-28 era (`server/discover`, every request's own `_meta`) and the tasks
//! extension, driven line by line the way Claude Code drives it.

use std::path::Path;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::suite::support::{BOUND, config, harness_bin};

/// The tasks extension's capability key.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A request `_meta` of the stateless era; with `tasks`, the client declares the extension.
fn meta(tasks: bool) -> Value {
    let extensions = if tasks { json!({TASKS: {}}) } else { json!({}) };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    })
}

/// One `harness mcp` process spoken to in raw lines.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Raw {
    /// Serves session `session` of `dir/sessions` with `config`.
    fn start(dir: &Path, session: &str, config: &Value) -> Self {
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        let mut child = tokio::process::Command::new(harness_bin())
            .arg("mcp")
            .arg("--dir")
            .arg(dir.join("sessions"))
            .args(["--session", session])
            .arg("--config")
            .arg(&config_path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    /// Sends request `method` with `params` and returns its response (notifications skipped).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let reply = tokio::time::timeout(BOUND, self.stdout.next_line())
                .await
                .expect("a reply in time")
                .unwrap()
                .expect("a reply line");
            let reply: Value = serde_json::from_str(&reply).unwrap();
            if reply.get("id") == Some(&json!(id)) {
                return reply;
            }
        }
    }

    /// `server/discover` as Claude Code opens a server.
    async fn discover(&mut self, tasks: bool) -> Value {
        self.request("server/discover", json!({"_meta": meta(tasks)}))
            .await
    }

    /// `tools/call` of `name` with the stateless `_meta`.
    async fn call(&mut self, name: &str, arguments: Value, tasks: bool) -> Value {
        self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments, "_meta": meta(tasks)}),
        )
        .await
    }

    /// Closes standard input and waits for a clean exit.
    async fn stop(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(BOUND, self.child.wait())
            .await
            .expect("the server exits when stdin closes")
            .unwrap();
        assert!(status.success());
    }
}

#[tokio::test]
async fn discover_opens_the_stateless_era_and_initialize_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(dir.path(), "s1", &config());
    let discovered = raw.discover(true).await;
    let result = &discovered["result"];
    assert_eq!(
        result["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]),
        "{discovered}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "harness"
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["capabilities"]["tools"], json!({}));
    // Every later request carries its own `_meta`; a plain call answers as over initialize.
    let listed = raw.call("job_list", json!({}), false).await;
    assert_eq!(
        listed["result"]["content"],
        json!([{"type": "text", "text": "(no background jobs)"}]),
        "{listed}"
    );
    assert_eq!(listed["result"]["resultType"], "complete");
    // A request of the stateless era without its `_meta` is refused with -32602.
    let bare = raw
        .request("tools/call", json!({"name": "job_list", "arguments": {}}))
        .await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    raw.stop().await;

    // The same session over initialize, as Codex speaks it.
    let mut raw = Raw::start(dir.path(), "s1", &config());
    let init = raw
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex", "version": "0.169.0"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let listed = raw
        .request("tools/call", json!({"name": "job_list", "arguments": {}}))
        .await;
    assert_eq!(
        listed["result"],
        json!({"content": [{"type": "text", "text": "(no background jobs)"}], "isError": false})
    );
    raw.stop().await;
}
