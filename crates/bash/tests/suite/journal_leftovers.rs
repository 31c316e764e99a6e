//! Lost means lost: a real child host (this test binary, re-run as the ignored
//! `leftovers_child` test) journals a running bash job and is killed with `kill -9`; its
//! `sleep` lives on. The restarted host stops it before it builds the notice, and the notice
//! says so.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{
    Agent, Harness, JsonlStore, SessionHeader, SessionId, SessionStore, SystemClock,
};
use turnkit_testkit::{HostRecord, MemoryHarness};

const DIR_VAR: &str = "HARNESS_LEFTOVERS_CHILD_DIR";
const STEP_VAR: &str = "HARNESS_LEFTOVERS_CHILD_STEP";
const NAME_VAR: &str = "HARNESS_LEFTOVERS_CHILD_NAME";

fn spawn_child(dir: &Path, step: &str, name: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::journal_leftovers::leftovers_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .env(STEP_VAR, step)
        .env(NAME_VAR, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// The child's lines (after `child: `) up to and including `until`.
fn lines_until(stdout: &mut BufReader<ChildStdout>, until: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(
            read > 0,
            "the child ended before {until:?}; it printed {seen:?}"
        );
        if let Some((_, line)) = line.trim_end().split_once("child: ") {
            seen.push(line.to_owned());
            if line == until {
                return seen;
            }
        }
    }
}

fn kill_9(mut child: Child) {
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
}

/// Live (not zombie) processes whose `argv[0]` is `name`.
fn alive(name: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            let pid = entry.file_name();
            let Some(pid) = pid.to_str().filter(|p| p.parse::<u32>().is_ok()) else {
                return false;
            };
            let named = std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).next() == Some(name.as_bytes()));
            named
                && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    stat.rfind(')').is_some_and(|close| {
                        !matches!(stat[close + 1..].split_whitespace().next(), Some("Z" | "X"))
                    })
                })
        })
        .count()
}

#[test]
fn a_job_that_outlived_its_killed_host_is_stopped_and_reported_so() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("harness-leftover-{}", std::process::id());
    let (child, mut out) = spawn_child(dir.path(), "start", &name);
    assert_eq!(
        lines_until(&mut out, "running"),
        ["started background job bash-1", "running"]
    );
    kill_9(child);
    // The host is gone; its job's `sleep` is not.
    assert_eq!(alive(&name), 1);

    let (child, mut out) = spawn_child(dir.path(), "reopen", &name);
    let notice = format!(
        "background job bash-1 (bash: exec -a {name} sleep 1000) was running when its host stopped; its processes were stopped [status: killed, stopped at the restart]. Its output went with the stopped host."
    );
    assert_eq!(
        lines_until(&mut out, "reopened"),
        [
            json!({"followup": notice}).to_string(),
            "reopened".to_owned()
        ]
    );
    // Stopped before the notice was built.
    let left = alive(&name);
    kill_9(child);
    assert_eq!(left, 0);
}

/// The child host (run only by the test above).
#[test]
#[ignore = "the child host of a_job_that_outlived_its_killed_host_is_stopped_and_reported_so"]
fn leftovers_child() {
    let (Ok(dir), Ok(step), Ok(name)) = (
        std::env::var(DIR_VAR),
        std::env::var(STEP_VAR),
        std::env::var(NAME_VAR),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(child_host(Path::new(&dir), &step, &name));
}

fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "child: {line}").unwrap();
    out.flush().unwrap();
}

async fn child_host(dir: &Path, step: &str, name: &str) {
    let clock: Arc<dyn turnkit_core::Clock> = Arc::new(SystemClock);
    let store: Arc<dyn SessionStore> =
        Arc::new(JsonlStore::new(dir.join("sessions"), clock.clone()).unwrap());
    let host = MemoryHarness::with_store(store, clock);
    host.set_auto_turns(false);
    host.set_recorder(Arc::new(|record| {
        if let HostRecord::Followup { text, .. } = record {
            say(json!({"followup": text}));
        }
    }));
    let harness: Arc<dyn Harness> = host.as_dyn();
    let _jobs = turnkit_jobs_local::install(
        &harness,
        turnkit_core::decode_config("jobs-local", json!({"journal": true})).unwrap(),
    )
    .unwrap();
    let _tool_jobs =
        turnkit_tool_jobs::install(&harness, turnkit_tool_jobs::ToolJobsConfig::default()).unwrap();
    let mut config = turnkit_bash::BashConfig::from_json(json!({})).unwrap();
    config.spill_dir = Some(dir.join("spill"));
    let _bash = turnkit_bash::install(&harness, config).unwrap();
    let id = SessionId::from("s1");
    if step == "start" {
        let agent = host.create_session(SessionHeader::new("s1")).unwrap();
        let out = host
            .execute(
                "bash",
                json!({"command": format!("exec -a {name} sleep 1000"), "run_in_background": true}),
                Some(&id),
            )
            .await;
        say(out.text());
        agent.session().flush().await.unwrap();
        // The parent counts the `sleep` after the kill; it is running by then. A real
        // process's start has no event to wait on: polled every 5 ms, for at most 10 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive(name) == 0 {
            assert!(std::time::Instant::now() < deadline, "{name} never started");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        say("running");
    } else {
        host.resume(&id).unwrap();
        turnkit_testkit::settle().await;
        say("reopened");
    }
    std::future::pending::<()>().await;
}
