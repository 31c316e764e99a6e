//! Crash torture over `harness mcp` itself: a scripted client calls tools while the server is
//! killed with SIGKILL at seeded random moments, over and over on one session. After every
//! kill the log must hold every call that was answered success, no job id answered twice, and
//! no process of any job (answered or not) running its command without a durable `job/start`
//! record of it: the `bash` tool holds a job's shell at its start gate until the start is
//! flushed, and a shell still at its gate when the host died exits there.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::suite::support::{BOUND, Recorder, harness_bin, texts};

/// A small seeded generator (xorshift64*): the same seed replays the same run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The seed: `HARNESS_TORTURE_SEED` if set (to replay a failure), else a fixed one.
fn seed() -> u64 {
    std::env::var("HARNESS_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026_1203)
}

/// Pids of the running processes whose command line contains `marker`.
fn alive_with(marker: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Every event of the session file, `(type, data)`, read as a restarted server would (a torn
/// last line is what a crash may leave and is skipped).
fn events(file: &Path) -> Vec<(String, Value)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_owned(),
                e["data"].clone(),
            )
        })
        .collect()
}

enum Step {
    Todo(String),
    Bash(String),
    List,
}

/// What the run saw answered success.
#[derive(Default)]
struct Acknowledged {
    todos: Vec<String>,
    job_ids: Vec<String>,
    /// The command of every acknowledged job start.
    job_commands: Vec<String>,
    /// Job shells seen still at their start gate after a kill (their start was not yet
    /// flushed); each must exit there without running its command.
    held: u64,
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Recorder>,
    step: &Step,
) -> Option<Value> {
    let (name, arguments) = match step {
        Step::Todo(item) => (
            "todo_write",
            json!({"todos": [{"content": item, "status": "pending"}]}),
        ),
        Step::Bash(command) => (
            "bash",
            json!({"command": command, "run_in_background": true}),
        ),
        Step::List => ("job_list", json!({})),
    };
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(map) = arguments {
        params = params.with_arguments(map);
    }
    let result = tokio::time::timeout(BOUND, client.call_tool(params))
        .await
        .ok()?
        .ok()?;
    Some(serde_json::to_value(result).unwrap())
}

fn record(step: &Step, result: &Value, seen: &mut Acknowledged) {
    if result["isError"] == json!(true) {
        return;
    }
    match step {
        Step::Todo(item) => seen.todos.push(item.clone()),
        Step::Bash(command) => {
            seen.job_commands.push(command.clone());
            let text = &texts(result)[0];
            let id = text
                .strip_prefix("started background job ")
                .unwrap_or_else(|| panic!("unexpected bash answer {text:?}"));
            seen.job_ids.push(id.to_owned());
        }
        Step::List => {}
    }
}

/// Runs `kills` iterations: start the server, make up to six calls, SIGKILL it during one of
/// them (or between two), then check the log and the surviving processes.
#[expect(clippy::print_stderr, reason = "the run reports what it exercised")]
async fn torture(kills: u64) {
    let seed = seed();
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("config.json");
    std::fs::write(
        &config_path,
        json!({"todo": {"allowParallelInProgress": false}, "jobs": {"journal": true}}).to_string(),
    )
    .unwrap();
    let file = dir.path().join("sessions").join("t.jsonl");
    let marker = format!("torture{seed:x}");
    let mut seen = Acknowledged::default();
    for round in 0..kills {
        let mut child = tokio::process::Command::new(harness_bin())
            .arg("mcp")
            .arg("--dir")
            .arg(dir.path().join("sessions"))
            .args(["--session", "t"])
            .arg("--config")
            .arg(&config_path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, _notes) = tokio::sync::mpsc::unbounded_channel();
        let client = Recorder::new(tx).serve((stdout, stdin)).await;
        let steps: Vec<Step> = (0..=rng.below(6))
            .map(|n| match rng.below(3) {
                0 => Step::Todo(format!("r{round}-{n}")),
                1 => Step::Bash(format!(
                    "sleep 0.{}; true {marker}-r{round}-{n}",
                    rng.below(3)
                )),
                _ => Step::List,
            })
            .collect();
        // The kill lands during step `at` (after a random delay of up to 3 ms), or before
        // any call when the handshake itself was cut short.
        let at = rng.below(steps.len() as u64) as usize;
        let delay = Duration::from_micros(rng.below(3000));
        if let Ok(client) = client {
            for step in &steps[..at] {
                if let Some(result) = call(&client, step).await {
                    record(step, &result, &mut seen);
                }
            }
            let last = &steps[at];
            let in_flight = call(&client, last);
            tokio::pin!(in_flight);
            let killed = tokio::select! {
                result = &mut in_flight => {
                    if let Some(result) = result {
                        record(last, &result, &mut seen);
                    }
                    false
                }
                () = tokio::time::sleep(delay) => true,
            };
            child.start_kill().unwrap();
            if killed {
                // A reply written before the kill may still be read.
                if let Some(result) = in_flight.await {
                    record(last, &result, &mut seen);
                }
            }
        } else {
            child.start_kill().unwrap();
        }
        child.wait().await.unwrap();
        check(&file, &mut seen, &marker, round);
    }
    // Leave nothing running.
    for (pid, _) in alive_with(&marker) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let summary = format!(
        "seed {seed}, {kills} kills: {} writes and {} job starts acknowledged, {} job \
         shells seen at their start gate after a kill (each exited there)",
        seen.todos.len(),
        seen.job_ids.len(),
        seen.held,
    );
    eprintln!("torture: {summary}");
    assert!(
        seen.todos.len() as u64 > kills / 10 && seen.job_ids.len() as u64 > kills / 10,
        "too few acknowledged calls to mean anything: {summary}"
    );
}

fn check(file: &Path, seen: &mut Acknowledged, marker: &str, round: u64) {
    let events = events(file);
    let todos: BTreeSet<&str> = events
        .iter()
        .filter(|(t, _)| t == "todo/write")
        .filter_map(|(_, d)| d["todos"][0]["content"].as_str())
        .collect();
    for item in &seen.todos {
        assert!(
            todos.contains(item.as_str()),
            "round {round}: {item} was answered success but is not in the log"
        );
    }
    let mut ids = BTreeSet::new();
    for id in &seen.job_ids {
        assert!(
            ids.insert(id),
            "round {round}: job id {id} was answered twice"
        );
    }
    let started: Vec<&str> = events
        .iter()
        .filter(|(t, _)| t == "job/start")
        .filter_map(|(_, d)| d["label"].as_str())
        .collect();
    for command in &seen.job_commands {
        assert!(
            started.contains(&command.as_str()),
            "round {round}: the start of {command:?} was answered success but is not in the log"
        );
    }
    // Every process of a job past its start gate (answered or not) has a durable record.
    let mut held = BTreeSet::new();
    for (pid, cmdline) in alive_with(marker) {
        if cmdline.starts_with(GATED) {
            held.insert(pid);
            continue;
        }
        let recorded = started.iter().any(|label| cmdline.contains(label));
        assert!(
            recorded,
            "round {round}: process {pid} ({cmdline}) runs a job's command with no job/start \
             record of it"
        );
    }
    // A shell still at its gate reads the end of its input (the host is gone) and exits
    // without running the command. Real processes: polled, at most 5 s.
    seen.held += held.len() as u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<(u32, String)> = alive_with(marker)
            .into_iter()
            .filter(|(pid, _)| held.contains(pid))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "round {round}: shells at their start gate did not exit: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How a job's shell held at its start gate shows in `/proc/<pid>/cmdline` (its command
/// runs only after the gate opens, as `bash -c COMMAND`).
const GATED: &str = "bash --posix -c read -r _ && exec bash";

#[tokio::test]
async fn kill_9_at_random_moments_never_loses_an_acknowledged_call() {
    torture(200).await;
}

#[tokio::test]
#[ignore = "long: 2,000 kills"]
async fn kill_9_at_random_moments_long_run() {
    torture(2000).await;
}
