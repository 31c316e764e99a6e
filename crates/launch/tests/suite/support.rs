//! What the launch tests share: the `harness` binary, a raw JSON-RPC client of `harness mcp`
//! over stdio, and reading a session log without taking its lock.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnkit_core::SessionEvent;

/// How long a test waits for a real condition before failing.
pub(crate) const BOUND: Duration = Duration::from_secs(20);

/// The `harness` binary, built once per test process.
pub(crate) fn harness_bin() -> PathBuf {
    turnkit_testkit::binary::built("turnkit-cli", "harness")
}

/// `kill -SIGNAL pid`.
pub(crate) fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// `harness mcp --dir <dir>/sessions --session <session> --config <dir>/config.json` over
/// stdio, initialized.
pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

/// Starts the server with `config` written to `dir/config.json`.
pub(crate) fn start(dir: &Path, session: &str, config: &Value) -> Server {
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let mut child = Command::new(harness_bin())
        .arg("mcp")
        .arg("--dir")
        .arg(dir.join("sessions"))
        .args(["--session", session])
        .arg("--config")
        .arg(dir.join("config.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut server = Server {
        child,
        stdin,
        stdout,
        next: 1,
    };
    server.request(
        "initialize",
        &json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "launch-test", "version": "1"}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server
}

impl Server {
    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its `result` (notifications in between skipped).
    pub(crate) fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).unwrap();
            assert!(
                read > 0,
                "the server closed its output before answering {method}"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message["result"].clone();
            }
        }
    }

    /// `tools/call` of `name` with `arguments`: the call's result.
    pub(crate) fn call(&mut self, name: &str, arguments: &Value) -> Value {
        self.request("tools/call", &json!({"name": name, "arguments": arguments}))
    }

    /// Closes its input and waits for it to exit (it releases the session).
    pub(crate) fn stop(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < BOUND, "harness mcp did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The session's events, read without taking its lock (a server may hold it).
pub(crate) fn events(dir: &Path, session: &str) -> Vec<SessionEvent> {
    let path = dir.join("sessions").join(format!("{session}.jsonl"));
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// The events of `events` of type `type`.
pub(crate) fn of_type<'a>(events: &'a [SessionEvent], r#type: &str) -> Vec<&'a SessionEvent> {
    events.iter().filter(|e| e.r#type == r#type).collect()
}

/// Waits (bounded, real time) until the session holds an event of `type`; a failure shows
/// the events and the file `log` (the server's standard error).
pub(crate) fn wait_for_event(
    dir: &Path,
    session: &str,
    r#type: &str,
    log: &Path,
) -> Vec<SessionEvent> {
    let started = Instant::now();
    loop {
        let events = events(dir, session);
        if !of_type(&events, r#type).is_empty() {
            return events;
        }
        assert!(
            started.elapsed() < BOUND * 3,
            "no {type} in {events:#?}\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
