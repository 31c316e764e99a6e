//! The launch's bounds through `harness cron`, with real processes: the timeout kills the
//! agent's whole process tree, and the cap keeps launches from running together.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{BOUND, events, harness_bin, kill, of_type, start};

/// Writes `script` as `dir/agent.sh` and a config whose launch runs it as `agent.sh DIR
/// {session}` with `launch` merged in.
fn setup(dir: &Path, script: &str, launch: &Value) -> Value {
    let agent = dir.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&agent)
        .status()
        .unwrap();
    let mut config = json!({"todo": {"allowParallelInProgress": false},
                            "launch": {"argv": [agent, dir, "{session}"]}});
    for (key, value) in launch.as_object().unwrap() {
        config["launch"][key] = value.clone();
    }
    config
}

/// Session `id` with a reminder due in a second, made over MCP; no client left.
fn remind(dir: &Path, id: &str, config: &Value) {
    let mut server = start(dir, id, config);
    let created = server.call(
        "schedule_create",
        &json!({"prompt": "check the deploy", "after_seconds": 1}),
    );
    assert_eq!(created["isError"], json!(false), "{created}");
    server.stop();
}

struct Cron(Child);

impl Drop for Cron {
    fn drop(&mut self) {
        kill("TERM", self.0.id());
        let _ = self.0.wait();
    }
}

fn cron(dir: &Path) -> Cron {
    Cron(
        Command::new(harness_bin())
            .arg("cron")
            .arg("--dir")
            .arg(dir.join("sessions"))
            .arg("--config")
            .arg(dir.join("config.json"))
            .args(["--interval-ms", "100"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Waits (bounded) until every session of `ids` has its `mcp/launchEnded`; their outcomes.
fn ended(dir: &Path, ids: &[&str]) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let outcomes: Vec<Value> = ids
            .iter()
            .filter_map(|id| {
                of_type(&events(dir, id), turnkit_launch::LAUNCH_ENDED_EVENT)
                    .first()
                    .map(|e| e.data["outcome"].clone())
            })
            .collect();
        if outcomes.len() == ids.len() {
            return outcomes;
        }
        assert!(started.elapsed() < BOUND * 3, "ended: {outcomes:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[test]
fn the_timeout_kills_the_agents_whole_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The agent leaves a grandchild behind and never ends by itself.
    let script = "#!/bin/bash\nsleep 1000 &\necho $! > \"$1/grandchild.pid\"\necho started\nwait\n";
    let config = setup(d, script, &json!({"timeoutMs": 1500}));
    remind(d, "t1", &config);
    let _cron = cron(d);
    let outcome = &ended(d, &["t1"])[0];
    assert_eq!(
        outcome["status"], "timed out after 1500 ms (process tree killed)",
        "{outcome}"
    );
    assert_eq!(outcome["outputTail"], "started\n");
    let grandchild: u32 = std::fs::read_to_string(d.join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let started = Instant::now();
    while !gone(grandchild) {
        assert!(
            started.elapsed() < BOUND,
            "the grandchild {grandchild} outlived the timeout"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_cap_keeps_launches_from_running_together() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each agent counts the agents running while it runs (itself included).
    let script = "#!/bin/bash\nmkdir -p \"$1/running\"\ntouch \"$1/running/$2\"\n\
                  ls \"$1/running\" | wc -l >> \"$1/counts\"\nsleep 1\n\
                  ls \"$1/running\" | wc -l >> \"$1/counts\"\nrm \"$1/running/$2\"\n";
    let config = setup(d, script, &json!({"maxConcurrent": 1}));
    remind(d, "c1", &config);
    remind(d, "c2", &config);
    remind(d, "c3", &config);
    let _cron = cron(d);
    let outcomes = ended(d, &["c1", "c2", "c3"]);
    assert!(
        outcomes.iter().all(|o| o["status"] == "exit code: 0"),
        "{outcomes:?}"
    );
    let counts = std::fs::read_to_string(d.join("counts")).unwrap();
    assert_eq!(counts.split_whitespace().collect::<Vec<_>>(), ["1"; 6]);
}
