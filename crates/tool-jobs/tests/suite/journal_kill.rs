//! The job journal across `kill -9`: a real child host process (this test binary, re-run as
//! the ignored `journal_child` test) opens a JSONL session with the journal on and runs three
//! jobs; it is SIGKILLed, reopened on the same file, and reports the three as lost in one
//! notice; killed while that notice is still queued (no turn claimed it), the next host
//! reports them again; killed during the turn that claimed it (its delivery recorded), the
//! last host reports nothing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{Agent, JsonlStore, SessionHeader, SessionId, SessionStore, SystemClock};
use turnkit_testkit::{FakeProducer, HostRecord, MemoryHarness};

/// The environment variables that turn `journal_child` into a child host.
const DIR_VAR: &str = "HARNESS_JOURNAL_CHILD_DIR";
const STEP_VAR: &str = "HARNESS_JOURNAL_CHILD_STEP";

const LABELS: [&str; 3] = ["sleep 600", "tail -f build.log", "watch tests"];

/// How long the parent polls real state (a child's output, the session file) before failing.
const LIMIT: Duration = Duration::from_secs(30);

fn spawn_child(dir: &Path, step: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::journal_kill::journal_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir)
        .env(STEP_VAR, step)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// The child's lines (what it prints after `child: `; libtest may print its `test … ` before
/// the first on the same line) up to and including `until`.
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
    // `Child::kill` sends SIGKILL on Unix.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
}

/// Polls the session file until a line of type `job/lost` is in it (durable), in real time.
fn wait_for_durable_lost(file: &Path) {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.lines().any(|l| l.contains(r#""type":"job/lost""#)) {
            return;
        }
        assert!(
            started.elapsed() < LIMIT,
            "no job/lost in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn three_jobs_killed_with_their_host_are_reported_lost_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s1.jsonl");

    // 1. Three journaled jobs run; the host is killed.
    let (child, mut out) = spawn_child(dir.path(), "start");
    assert_eq!(
        lines_until(&mut out, "running"),
        ["job fake-1", "job fake-2", "job fake-3", "running"]
    );
    kill_9(child);

    // 2. Reopened: one notice names the three; killed while it is still queued (no turn
    //    claimed it, so its delivery is not recorded).
    let (child, mut out) = spawn_child(dir.path(), "reopen");
    let notice = "background job fake-1 (fake: sleep 600) was lost [status: failed, the host stopped while it ran]. Its output went with the stopped host.\n\
                  background job fake-2 (fake: tail -f build.log) was lost [status: failed, the host stopped while it ran]. Its output went with the stopped host.\n\
                  background job fake-3 (fake: watch tests) was lost [status: failed, the host stopped while it ran]. Its output went with the stopped host.";
    assert_eq!(
        lines_until(&mut out, "reopened"),
        [
            json!({"followup": notice}).to_string(),
            "reopened".to_owned()
        ]
    );
    kill_9(child);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(r#""type":"job/lost""#), "{text}");

    // 3. Reopened: the unseen notice is delivered again; a turn claims it, its delivery is
    //    recorded, and the host is killed during that turn.
    let (child, mut out) = spawn_child(dir.path(), "deliver");
    assert_eq!(
        lines_until(&mut out, "claimed"),
        [
            json!({"followup": notice}).to_string(),
            "claimed".to_owned()
        ]
    );
    wait_for_durable_lost(&file);
    kill_9(child);

    // 4. Reopened again: nothing is reported; the jobs read as lost, from before the restart.
    let (child, mut out) = spawn_child(dir.path(), "check");
    assert_eq!(
        lines_until(&mut out, "checked"),
        [
            "fake-1 [fake] failed — sleep 600 (from before the restart)\n\
             fake-2 [fake] failed — tail -f build.log (from before the restart)\n\
             fake-3 [fake] failed — watch tests (from before the restart)"
                .replace('\n', "\\n"),
            r#"job/lost {"version":1,"ids":["fake-1","fake-2","fake-3"]}"#.to_owned(),
            "checked".to_owned()
        ]
    );
    kill_9(child);
}

/// The child host (run only by the test above, with [`DIR_VAR`] and [`STEP_VAR`] set).
#[test]
#[ignore = "the child host of three_jobs_killed_with_their_host_are_reported_lost_once"]
fn journal_child() {
    let (Ok(dir), Ok(step)) = (std::env::var(DIR_VAR), std::env::var(STEP_VAR)) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(child_host(Path::new(&dir), &step));
}

/// Prints one line for the parent, flushed at once (the parent reads it before the kill).
fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "child: {line}").unwrap();
    out.flush().unwrap();
}

async fn child_host(dir: &Path, step: &str) {
    let clock: Arc<dyn turnkit_core::Clock> = Arc::new(SystemClock);
    let store: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(dir, clock.clone()).unwrap());
    let host = MemoryHarness::with_store(store, clock);
    // Queued notices stay queued: the kill comes while the notice is being delivered.
    host.set_auto_turns(false);
    host.set_recorder(Arc::new(|record| match record {
        HostRecord::Followup { text, .. } => say(json!({"followup": text})),
        HostRecord::Inject { text, .. } => say(json!({"inject": text})),
        _ => {}
    }));
    let harness = host.as_dyn();
    let jobs = turnkit_jobs_local::install(
        &harness,
        turnkit_core::decode_config("jobs-local", json!({"journal": true})).unwrap(),
    )
    .unwrap();
    let _tool_jobs =
        turnkit_tool_jobs::install(&harness, turnkit_tool_jobs::ToolJobsConfig::default()).unwrap();
    let id = SessionId::from("s1");
    match step {
        "start" => {
            let agent = host.create_session(SessionHeader::new("s1")).unwrap();
            let mut held = Vec::new();
            for label in LABELS {
                let (start, job) = FakeProducer::new("fake", label)
                    .owner(agent.as_dyn())
                    .build();
                say(format!("job {}", jobs.registry().start(start).unwrap()));
                held.push(job);
            }
            agent.session().flush().await.unwrap();
            say("running");
            std::future::pending::<()>().await;
        }
        "reopen" => {
            host.resume(&id).unwrap();
            // Lets the spawned report run (it queues the notice; no turn claims it).
            turnkit_testkit::settle().await;
            say("reopened");
            std::future::pending::<()>().await;
        }
        "deliver" => {
            let agent = host.resume(&id).unwrap();
            turnkit_testkit::settle().await;
            // A turn claims the notice; the report then appends and flushes `job/lost`.
            agent.start_turn_when_idle().await;
            turnkit_testkit::settle().await;
            say("claimed");
            std::future::pending::<()>().await;
        }
        _ => {
            let agent = host.resume(&id).unwrap();
            turnkit_testkit::settle().await;
            let listed = host.execute("job_list", json!({}), Some(&id)).await;
            say(listed.text().replace('\n', "\\n"));
            for event in agent.session().events() {
                if event.r#type == "job/lost" {
                    say(format!("job/lost {}", event.data));
                }
            }
            say("checked");
            std::future::pending::<()>().await;
        }
    }
}
