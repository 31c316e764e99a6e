//! The `beacon` kind, added by one families entry, served over MCP in-process (the server
//! `harness mcp` runs, on a byte stream): a client that declares tasks gets a task for a
//! beacon and its final output once it is released; a client without tasks gets the running
//! notice by pull; `job_list` lists beacons, `job_kill` kills one, the job journal records
//! them; and no line of the server or of the job tools names the kind.
#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use turnkit_mcp::{FamiliesConfig, ServeOptions, SessionHost, SessionOptions, serve};
use turnkit_test_kind::{BEACON, KIND, release};

/// How long anything here may take; a wait polls a real condition up to it.
const BOUND: Duration = Duration::from_secs(20);

/// A client speaking the stateless era in raw lines.
struct Client {
    write: WriteHalf<DuplexStream>,
    read: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next: u64,
}

impl Client {
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = format!("r{}", self.next);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(BOUND, self.read.next_line())
                .await
                .unwrap();
            let reply: Value = serde_json::from_str(&line.unwrap().unwrap()).unwrap();
            if reply["id"] == id.as_str() {
                return reply;
            }
        }
    }

    /// `tools/call` of `name`; with `tasks`, the client declares the tasks extension.
    async fn call(&mut self, name: &str, arguments: Value, tasks: bool) -> Value {
        let meta = meta(tasks);
        let params = json!({"name": name, "arguments": arguments, "_meta": meta});
        self.request("tools/call", params).await["result"].clone()
    }

    /// The texts of `job_list`'s result (the list, then what it carries).
    async fn list(&mut self) -> Vec<String> {
        texts(&self.call("job_list", json!({}), false).await)
    }
}

fn meta(tasks: bool) -> Value {
    let extensions = if tasks {
        json!({"io.modelcontextprotocol/tasks": {}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    })
}

fn texts(result: &Value) -> Vec<String> {
    let blocks = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"));
    blocks
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `check` until it answers `Some`, for at most [`BOUND`].
async fn until<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        if let Some(got) = check().await {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited too long for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `type` and `data` of every `job/*` event in session `s1`'s log under `dir`.
fn journal(dir: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(dir.join("s1.jsonl")).unwrap();
    let events = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    events
        .filter(|e| e["type"].as_str().unwrap().starts_with("job/"))
        .map(|e| (e["type"].as_str().unwrap().to_owned(), e["data"].clone()))
        .collect()
}

#[tokio::test]
async fn a_kind_added_by_one_entry_is_served_with_tasks_pull_journal_list_and_kill() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"todo": {"allowParallelInProgress": false}, "beacon": {"reply": "pong"}});
    let configs = FamiliesConfig::from_json_with(&config, &[BEACON]).unwrap();
    let options = SessionOptions {
        dir: dir.path().to_owned(),
        session: Some("s1".to_owned()),
        configs,
        job_task_ttl: None,
    };
    let host = SessionHost::open(&options).unwrap();
    let (near, far) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(far);
    let stop = turnkit_core::CancellationToken::new();
    let options = ServeOptions {
        stop: stop.clone(),
        ..ServeOptions::default()
    };
    let serving = tokio::spawn(serve(host, options, read, write));
    let (read, write) = tokio::io::split(near);
    let mut client = Client {
        write,
        read: BufReader::new(read).lines(),
        next: 0,
    };
    client
        .request("server/discover", json!({"_meta": meta(true)}))
        .await;
    let tools = client
        .request("tools/list", json!({"_meta": meta(true)}))
        .await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Global tools in entry order (the added entry's last), then the agent's own.
    let global = [
        "todo_write",
        "job_output",
        "job_list",
        "job_kill",
        "bash",
        "beacon_start",
    ];
    let own = ["schedule_create", "schedule_list", "schedule_delete"];
    assert_eq!(names, [&global[..], &own[..]].concat());

    // A client that declares tasks: the beacon becomes a task, completed by its release.
    let started = client
        .call("beacon_start", json!({"label": "served-a"}), true)
        .await;
    assert_eq!(started["resultType"], "task", "{started}");
    let task = started["taskId"].as_str().unwrap().to_owned();
    let immediate = &started["_meta"]["com.anthropic/agent-task"]["modelImmediateResponse"];
    assert_eq!(immediate, "started background job beacon-1");
    // Its running notice is owed to the next tool result: pull delivery.
    let says = "background job beacon-1 (beacon: served-a) says: pong is listening";
    let got = until("the running notice", async || {
        let got = client.list().await;
        (got.len() > 1).then_some(got)
    })
    .await;
    assert_eq!(got, ["beacon-1 [beacon] running — served-a", says]);
    assert!(release("served-a"));
    let done = until("the task's end", async || {
        let params = json!({"taskId": task, "_meta": meta(true)});
        let got = client.request("tasks/get", params).await["result"].clone();
        (got["status"] != "working").then_some(got)
    })
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        texts(&done["result"]),
        [
            "background job beacon-1 (beacon: served-a) finished [status: completed].",
            "pong served-a\n[status: completed]",
        ]
    );

    // A client without tasks: the start answers at once; job_kill kills the beacon.
    let started = client
        .call("beacon_start", json!({"label": "served-b"}), false)
        .await;
    let mut carried = texts(&started);
    assert_eq!(carried.remove(0), "started background job beacon-2");
    // Its running notice is carried by this result or a later one, once.
    let says = "background job beacon-2 (beacon: served-b) says: pong is listening";
    while carried.is_empty() {
        carried = until("the second notice", async || {
            let mut got = client.list().await;
            got.remove(0);
            Some(got)
        })
        .await;
    }
    assert_eq!(carried, [says]);
    let killed = client
        .call("job_kill", json!({"job_id": "beacon-2"}), false)
        .await;
    assert_eq!(texts(&killed), ["requested cancellation of job beacon-2"]);
    let listed = until("the kill", async || {
        let got = client.list().await;
        got[0].contains("beacon-2 [beacon] killed").then_some(got)
    })
    .await;
    assert_eq!(
        listed[0],
        "beacon-1 [beacon] completed — served-a\nbeacon-2 [beacon] killed — served-b"
    );
    stop.cancel();
    serving.await.unwrap().unwrap();

    let journal = journal(dir.path());
    let kinds: Vec<(&str, &str)> = journal
        .iter()
        .map(|(t, d)| (t.as_str(), d["id"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        kinds,
        [
            ("job/start", "beacon-1"),
            ("job/settle", "beacon-1"),
            ("job/start", "beacon-2"),
            ("job/settle", "beacon-2")
        ]
    );

    // Nothing the server or the job tools run names the kind.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in ["crates/mcp/src", "crates/tool-jobs/src"] {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(!text.contains(KIND), "{} names {KIND}", file.display());
        }
    }
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}
