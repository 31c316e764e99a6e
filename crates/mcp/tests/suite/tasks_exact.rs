//! The tasks extension under concurrency and to the letter, over the real binary: 50 tasks
//! opened at once get 50 distinct unguessable ids that survive a restart (JSONL and
//! PostgreSQL), a failed save between two tasks leaves their ids distinct, a log written with
//! a duplicate id still opens, and a tool error completes its task with `isError: true`.
//!
//! The server is a real child process on the wall clock, so a wait here polls what it
//! answers with a short pause, bounded by a deadline.

use std::collections::HashSet;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::postgres::{fresh_database, server_url};
use crate::suite::support::BOUND;
use crate::suite::tasks::{
    GATED, Raw, TASK_NOTICE, gated_config, mcp_events, meta, task_id, texts,
};

/// How many task-opening calls are sent at once.
const AT_ONCE: usize = 50;

/// The command of call `i`: it ends once the test creates `go` in the server's `bash.cwd`.
fn gated(i: usize) -> String {
    format!("until [ -e go ]; do sleep 0.01; done; printf out-{i}")
}

/// Reads resource `uri` in the stateless era (a read carries no owed message).
async fn read(raw: &mut Raw, uri: &str) -> Value {
    let got = raw
        .request("resources/read", json!({"uri": uri, "_meta": meta(true)}))
        .await;
    let text = got["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{got}"));
    serde_json::from_str(text).unwrap()
}

/// Polls resource `uri` (a real process runs) until `check` holds of it, within [`BOUND`].
async fn until_read(raw: &mut Raw, uri: &str, check: impl Fn(&Value) -> bool) {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let value = read(raw, uri).await;
        if check(&value) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{uri}: {value}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Sends [`AT_ONCE`] `bash run_in_background` calls declaring the tasks extension before
/// reading any answer; returns, per call, its task id and its job id.
async fn open_at_once(raw: &mut Raw) -> Vec<(String, String)> {
    let mut sent = Vec::new();
    for i in 0..AT_ONCE {
        let params = json!({
            "name": "bash",
            "arguments": {"command": gated(i), "run_in_background": true},
            "_meta": meta(true),
        });
        sent.push(raw.send("tools/call", params).await);
    }
    let mut opened = Vec::new();
    for id in &sent {
        let reply = raw.reply(id).await;
        let result = &reply["result"];
        assert_eq!(result["resultType"], "task", "{reply}");
        let immediate = result["_meta"]["com.anthropic/agent-task"]["modelImmediateResponse"]
            .as_str()
            .unwrap();
        let job = immediate
            .strip_prefix("started background job ")
            .unwrap_or_else(|| panic!("{immediate}"));
        opened.push((task_id(result), job.to_owned()));
    }
    opened
}

/// 50 task-opening calls at once on one session, then a restart: 50 distinct ids, every task
/// answers its own job, the session opens.
async fn fifty_at_once_then_restart(dir: &Path, store: Option<&str>) {
    let mut config = gated_config(dir);
    config["jobs"] = json!({"maxConcurrentJobsPerOwner": AT_ONCE});
    let mut raw = Raw::spawn(Raw::command(dir, "s1", &config, store), None);
    raw.discover(true).await;
    let opened = open_at_once(&mut raw).await;
    let ids: HashSet<&String> = opened.iter().map(|(task, _)| task).collect();
    let jobs: HashSet<&String> = opened.iter().map(|(_, job)| job).collect();
    assert_eq!((ids.len(), jobs.len()), (AT_ONCE, AT_ONCE));
    std::fs::write(dir.join("go"), "").unwrap();
    // Every job ends and its notice is owed (read as resources: no tool result takes them).
    until_read(&mut raw, "harness://inbox", |owed| {
        owed.as_array().unwrap().len() == AT_ONCE
    })
    .await;
    raw.stop().await;

    let mut raw = Raw::spawn(Raw::command(dir, "s1", &config, store), None);
    raw.discover(true).await;
    for (i, (task, job)) in opened.iter().enumerate() {
        let done = raw.settled(task).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["isError"], false);
        assert_eq!(
            texts(&done["result"]),
            [
                format!(
                    "background job {job} (bash: {}) finished [status: completed, exit code: 0].",
                    gated(i)
                ),
                format!("(from before the restart)\nout-{i}\n[status: completed, exit code: 0]"),
            ]
        );
    }
    // Delivered through the tasks, no notice is left for a tool result.
    let listed = raw.call("todo_write", json!({"todos": []}), false).await;
    assert_eq!(texts(&listed["result"]).len(), 1, "{listed}");
    raw.stop().await;
}

#[tokio::test]
async fn fifty_tasks_opened_at_once_get_distinct_ids_and_each_answers_its_own_job_after_a_restart()
{
    let dir = tempfile::tempdir().unwrap();
    fifty_at_once_then_restart(dir.path(), None).await;
    // The log holds one record per task, each naming the job its call started.
    let recorded: Vec<(String, String)> = mcp_events(dir.path(), "s1")
        .into_iter()
        .filter(|(t, _)| t == "mcp/task")
        .map(|(_, data)| {
            (
                data["taskId"].as_str().unwrap().to_owned(),
                data["job"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(recorded.len(), AT_ONCE);
    let distinct: HashSet<&String> = recorded.iter().map(|(task, _)| task).collect();
    assert_eq!(distinct.len(), AT_ONCE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_fifty_tasks_opened_at_once_get_distinct_ids_that_survive_a_restart() {
    let Some(url) = server_url() else { return };
    let store = fresh_database(&url).await;
    let dir = tempfile::tempdir().unwrap();
    fifty_at_once_then_restart(dir.path(), Some(&store)).await;
}

/// Sets the soft file-size limit of process `pid` (`unlimited`, or bytes; the hard limit
/// stays, so it can be raised again): a write past it fails
/// with `EFBIG`, as on a full disk (the server ignores `SIGXFSZ`; see [`limited`]).
fn set_file_limit(pid: u32, limit: &str) {
    let status = std::process::Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--fsize={limit}:"))
        .status()
        .unwrap();
    assert!(status.success());
}

/// `command` run through `sh`, which ignores `SIGXFSZ` (the ignored disposition survives
/// `exec`), so a write past the file-size limit fails instead of killing the server.
fn limited(command: &tokio::process::Command) -> tokio::process::Command {
    let inner = command.as_std();
    let mut wrapped = tokio::process::Command::new("sh");
    wrapped
        .arg("-c")
        .arg("trap '' XFSZ; exec \"$0\" \"$@\"")
        .arg(inner.get_program())
        .args(inner.get_args());
    wrapped
}

/// A task whose record could not be saved (the disk is full) is not opened, and the next
/// task, once the disk has room again, gets another id: the log, which then holds both
/// records, opens after a restart and the second task answers its job.
#[tokio::test]
async fn a_failed_save_between_two_task_creations_leaves_distinct_ids() {
    let dir = tempfile::tempdir().unwrap();
    let config = gated_config(dir.path());
    let store = dir.path().join("sessions");
    let command = || Raw::command(dir.path(), "s1", &config, None);
    let stderr = dir.path().join("stderr");
    let mut raw = Raw::spawn(limited(&command()), Some(&stderr));
    let pid = raw.pid();
    raw.discover(true).await;
    let started = raw
        .call(
            "bash",
            json!({"command": GATED, "run_in_background": true}),
            false,
        )
        .await;
    assert_eq!(texts(&started["result"]), ["started background job bash-1"]);
    let wait = json!({"job_id": "bash-1", "wait": true, "timeout_ms": 60_000});
    let file = store.join("s1.jsonl");
    set_file_limit(pid, &std::fs::metadata(&file).unwrap().len().to_string());
    // Past its bound the wait would become a task; its record cannot be saved, so the call
    // is answered as without tasks.
    let first = raw.call("job_output", wait.clone(), true).await;
    assert_eq!(first["result"]["resultType"], "complete", "{first}");
    assert_eq!(first["result"]["isError"], true, "{first}");
    set_file_limit(pid, "unlimited");
    let second = raw.call("job_output", wait, true).await;
    let id = task_id(&second["result"]);
    std::fs::write(dir.path().join("go"), "").unwrap();
    let done = raw.settled(&id).await;
    assert_eq!(
        texts(&done["result"]),
        [TASK_NOTICE, "done\n[status: completed, exit code: 0]"]
    );
    raw.stop().await;
    let log = std::fs::read_to_string(&file).unwrap();
    let opened: Vec<String> = log
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "mcp/task")
        .map(|event| event["data"]["taskId"].as_str().unwrap().to_owned())
        .collect();
    // The record that failed was written by a later flush, under its own id.
    assert_eq!(opened.len(), 2, "{opened:?}");
    assert_ne!(opened[0], opened[1]);
    assert_eq!(opened[1], id);
    let warned = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(
        warned.matches("could not make a task durable").count(),
        1,
        "{warned}"
    );

    let mut raw = Raw::spawn(command(), None);
    raw.discover(true).await;
    assert_eq!(raw.get(&id).await["result"]["result"], done["result"]);
    raw.stop().await;
}

/// A log written before ids were random, in which two tasks opened at once both got
/// `task-1`, opens: the first record of the id is kept (it answers its job), one warning says
/// so, and the session serves on.
#[tokio::test]
async fn a_replayed_log_that_opens_task_1_twice_opens_and_keeps_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = gated_config(dir.path());
    let mut raw = Raw::start(dir.path(), "s1", &config);
    raw.discover(true).await;
    let mut opened = Vec::new();
    for _ in 0..2 {
        let started = raw
            .call(
                "bash",
                json!({"command": GATED, "run_in_background": true}),
                true,
            )
            .await;
        opened.push(task_id(&started["result"]));
    }
    raw.stop().await;
    // Rewrite both ids as the old server wrote them.
    let file = dir.path().join("sessions").join("s1.jsonl");
    let mut log = std::fs::read_to_string(&file).unwrap();
    for id in &opened {
        log = log.replace(id.as_str(), "task-1");
    }
    assert_eq!(log.matches("\"taskId\":\"task-1\"").count(), 2, "{log}");
    std::fs::write(&file, log).unwrap();

    let stderr = dir.path().join("stderr");
    let mut raw = Raw::spawn(Raw::command(dir.path(), "s1", &config, None), Some(&stderr));
    raw.discover(true).await;
    let listed = raw.call("job_list", json!({}), false).await;
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    // The first record names bash-1: the task answers with the notice of the jobs stopped
    // with the host (one notice names both), then bash-1's output.
    let done = raw.settled("task-1").await;
    assert_eq!(done["status"], "completed", "{done}");
    // The task's result holds bash-1's output: its line does not point at job_output.
    let stopped = |job: &str| {
        format!(
            "background job {job} (bash: {GATED}) was still running when its host shut down [status: killed, stopped by the host's shutdown]."
        )
    };
    assert_eq!(
        texts(&done["result"]),
        [
            format!(
                "{}\n{} Read its output with job_output.",
                stopped("bash-1"),
                stopped("bash-2")
            ),
            "(from before the restart)\n(no new output)\n[status: killed, stopped by the host's shutdown]"
                .to_owned(),
        ]
    );
    raw.stop().await;
    let warned = std::fs::read_to_string(&stderr).unwrap();
    let warning = "the session log opens a task id more than once; the first record of each is kept: task-1 (again at seq ";
    assert_eq!(warned.matches(warning).count(), 1, "{warned}");
}

/// A task whose ending `job_output` is a tool error (the job journal is off, so after a
/// restart the registry does not know the job) is `completed` with `isError: true`.
#[tokio::test]
async fn a_tool_error_completes_its_task_with_is_error_true() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = gated_config(dir.path());
    config["jobs"] = json!({"journal": false});
    let mut raw = Raw::start(dir.path(), "s1", &config);
    raw.discover(true).await;
    let started = raw
        .call(
            "bash",
            json!({"command": GATED, "run_in_background": true}),
            true,
        )
        .await;
    let id = task_id(&started["result"]);
    raw.stop().await;
    let mut raw = Raw::start(dir.path(), "s1", &config);
    raw.discover(true).await;
    let done = raw.settled(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"],
        json!({
            "content": [{"type": "text", "text": "unknown job bash-1"}],
            "isError": true,
            "resultType": "complete",
        })
    );
    raw.stop().await;
    let delivered: Vec<Value> = mcp_events(dir.path(), "s1")
        .into_iter()
        .filter(|(t, _)| t == "mcp/taskDelivered")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(
        delivered,
        [json!({"taskId": id, "seqs": [], "content": ["unknown job bash-1"], "isError": true})]
    );
}
