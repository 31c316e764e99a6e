use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::MemoryStore;

use super::*;

/// A session host over a memory store, with todo configured (shared with the HTTP module's
/// unit tests).
pub(crate) fn host() -> Arc<SessionHost> {
    let configs =
        FamiliesConfig::from_json(&json!({"todo": {"allowParallelInProgress": false}})).unwrap();
    let options = SessionOptions {
        dir: PathBuf::new(),
        session: Some("s".to_owned()),
        configs,
        job_task_ttl: None,
    };
    SessionHost::open_in(&MemoryStore::new(Arc::new(SystemClock)), &options).unwrap()
}

#[tokio::test]
async fn shutdown_returns_only_once_the_sessions_own_tasks_have_ended() {
    let host = host();
    // Fenced first, so the shutdown flushes nothing: all it waits for is the tasks.
    host.fence(&PersistenceError::Fenced(SessionId::from("s")))
        .await;
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    host.spawn(async move {
        let _ = finished.await;
        flag.store(true, Ordering::SeqCst);
    });
    // A task that waits on a client ends when the shutdown starts waiting.
    let stopping = host.stopping().clone();
    host.spawn(async move { stopping.cancelled().await });
    assert_eq!(host.background_tasks(), 2);

    let mut shutdown = std::pin::pin!(host.shutdown());
    assert!(futures::poll!(shutdown.as_mut()).is_pending());
    assert!(!ended.load(Ordering::SeqCst));
    finish.send(()).unwrap();
    // A guard against a hang (a task never told to stop), not a synchronisation.
    tokio::time::timeout(std::time::Duration::from_secs(20), shutdown)
        .await
        .unwrap_or_else(|_| panic!("the shutdown did not return within 20 s"));
    assert!(ended.load(Ordering::SeqCst));
    assert_eq!(host.background_tasks(), 0);
}

#[tokio::test]
async fn a_queued_messages_flush_is_a_task_of_the_session_joined_by_shutdown() {
    let host = host();
    assert_eq!(host.background_tasks(), 0);
    let notice = UserMessage::text(
        "job bash-1 finished",
        turnkit_core::MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: None,
            summary: None,
        },
    );
    host.agent_handle().followup(notice).unwrap();
    // Its flush was started and has not run yet (one thread, no await since).
    assert_eq!(host.background_tasks(), 1);
    host.shutdown().await;
    assert_eq!(host.background_tasks(), 0);
    let queued = host
        .log()
        .events()
        .iter()
        .filter(|event| event.r#type == QUEUED_EVENT)
        .count();
    assert_eq!(queued, 1);
}

#[test]
fn sessions_opened_at_once_in_one_process_each_get_their_own_write_probe() {
    let dir = tempfile::tempdir().unwrap();
    // What an older server of this pid left behind does not stand in the way either.
    std::fs::write(
        dir.path()
            .join(format!(".harness-write-check-{}", std::process::id())),
        "",
    )
    .unwrap();
    let opens = 32;
    let start = Arc::new(std::sync::Barrier::new(opens));
    let threads: Vec<_> = (0..opens)
        .map(|_| {
            let start = start.clone();
            let dir = dir.path().to_owned();
            std::thread::spawn(move || {
                start.wait();
                (0..20).filter(|_| check_writable(&dir).is_err()).count()
            })
        })
        .collect();
    let refused: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(refused, 0);
    // Each probe is removed: only the old file is left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// Polls `condition` on the wall clock (a real job runs) until it holds, for at most 20 s.
async fn until(mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "not within 20 s");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_task_delivery_whose_response_was_dropped_is_owed_again_and_prepared_afresh() {
    let host = host();
    let started = host
        .call_tool(
            "bash",
            json!({"command": "printf done", "run_in_background": true}),
        )
        .await;
    let entry = host.open_task("bash", &started).await.unwrap();
    until(|| !host.owed().pending().is_empty()).await;
    let notice = host.owed().pending()[0].clone();
    let view = host.get_task(&entry.id).await.unwrap();
    let key = view.reservation.unwrap();
    let crate::tasks::TaskState::Completed(first) = view.state else {
        panic!("{:?}", view.state);
    };
    // The task's result holds the output: its notice line drops the pointer to job_output.
    assert_eq!(
        format!("{} Read its output with job_output.", first.content[0]),
        notice.message.joined_text()
    );
    assert!(!first.is_error);
    // The response was dropped: the notice is owed again, to this task's next poll.
    host.release(key);
    assert_eq!(
        host.owed().find(&turnkit_core::Subject::job("bash-1"), 0),
        Some((notice.clone(), false))
    );
    let again = host.get_task(&entry.id).await.unwrap();
    assert_eq!(again.state, crate::tasks::TaskState::Completed(first));
    host.release(again.reservation.unwrap());
    // The client stopped polling: past its hold the notice goes to a tool result, and the
    // task's next poll completes with the job's final output alone instead of staying
    // working on a delivery that can no longer be made.
    let later = host.clock().now_millis() + 60_000;
    let (key, taken) = host.owed().reserve(later).unwrap();
    assert_eq!(taken, vec![notice]);
    host.commit(key).await;
    let last = host.get_task(&entry.id).await.unwrap();
    assert_eq!(
        last.state,
        crate::tasks::TaskState::Completed(crate::tasks::Completion {
            content: vec!["done\n[status: completed, exit code: 0]".to_owned()],
            is_error: false,
        })
    );
    host.commit(last.reservation.unwrap()).await;
    host.shutdown().await;
}

/// A session host of session `s` kept in `store`, todo configured.
fn host_in(store: &MemoryStore) -> Arc<SessionHost> {
    let configs =
        FamiliesConfig::from_json(&json!({"todo": {"allowParallelInProgress": false}})).unwrap();
    let options = SessionOptions {
        dir: PathBuf::new(),
        session: Some("s".to_owned()),
        configs,
        job_task_ttl: None,
    };
    SessionHost::open_in(store, &options).unwrap()
}

/// The texts of a tool result's blocks after its first (the tool's own output).
fn owed_texts(output: &ToolOutput) -> Vec<String> {
    output.content[1..]
        .iter()
        .map(|block| block.as_text().to_owned())
        .collect()
}

#[tokio::test]
async fn a_running_jobs_notice_reaches_the_next_result_coalesced_and_a_reopening_neither_loses_nor_repeats_it()
 {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let host = host_in(&store);
    let (start, job) = turnkit_testkit::FakeProducer::new("watch", "src/")
        .owner(host.agent_handle())
        .build();
    let id = host.job_registry().start(start).unwrap();
    assert!(job.say("changed", "src/a.rs changed"));
    assert!(job.say("changed", "src/b.rs changed"));
    assert!(job.say("failed", "cargo check failed"));
    let says = |text: &str| format!("background job {id} (watch: src/) says: {text}");
    // Pull: the next tool result carries them, the first word under "changed" replaced.
    let listed = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(
        owed_texts(&listed),
        [says("src/b.rs changed"), says("cargo check failed")]
    );
    let again = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(owed_texts(&again), Vec::<String>::new());
    // One more, owed when the host stops.
    assert!(job.say("changed", "src/c.rs changed"));
    let inbox: Vec<(String, Value)> = host
        .log()
        .events()
        .iter()
        .filter(|e| e.r#type.starts_with("mcp/"))
        .map(|e| (e.r#type.clone(), e.data.clone()))
        .collect();
    let kinds: Vec<&str> = inbox.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        kinds,
        [
            QUEUED_EVENT,
            QUEUED_EVENT,
            crate::SUPERSEDED_EVENT,
            QUEUED_EVENT,
            CLAIMED_EVENT,
            QUEUED_EVENT,
        ]
    );
    assert_eq!(
        inbox[1].1["subjects"],
        json!([{"kind": "jobNotice", "id": id.as_str(), "key": "changed"}])
    );
    host.shutdown().await;
    drop(host);
    // Reopened: the word owed at the stop arrives once; the ones delivered do not again.
    let reopened = host_in(&store);
    let first = reopened.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(owed_texts(&first), [says("src/c.rs changed")]);
    let second = reopened.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(owed_texts(&second), Vec::<String>::new());
    reopened.shutdown().await;
}

#[tokio::test]
async fn a_jobs_task_lets_its_running_notices_go_to_tool_results_and_completes_with_its_end() {
    let host = host();
    let (start, job) = turnkit_testkit::FakeProducer::new("watch", "src/")
        .owner(host.agent_handle())
        .build();
    let id = host.job_registry().start(start).unwrap();
    let started = ToolOutput::success(json!({"kind": "background", "jobId": id.as_str()}), "ok");
    let entry = host.open_task("watch_start", &started).await.unwrap();
    assert!(job.say("changed", "src/a.rs changed"));
    // The task, polled, keeps waiting: the running notice is not the job's end ...
    let view = host.get_task(&entry.id).await.unwrap();
    assert_eq!(view.state, crate::tasks::TaskState::Working);
    // ... and it is not held for the task: the next tool result carries it.
    let listed = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(
        owed_texts(&listed),
        [format!(
            "background job {id} (watch: src/) says: src/a.rs changed"
        )]
    );
    job.settle(turnkit_jobs::JobOutcome::completed());
    until(|| !host.owed().pending().is_empty()).await;
    let done = host.get_task(&entry.id).await.unwrap();
    let crate::tasks::TaskState::Completed(completion) = done.state else {
        panic!("{:?}", done.state);
    };
    assert_eq!(
        completion.content[0],
        format!("background job {id} (watch: src/) finished [status: completed].")
    );
    assert_eq!(completion.content.len(), 2);
    assert!(completion.content[1].ends_with("[status: completed]"));
    host.commit(done.reservation.unwrap()).await;
    host.shutdown().await;
}

/// Where the kill -9 child keeps its JSONL session (set only for the child run).
const CHILD_DIR_VAR: &str = "HARNESS_MCP_NOTICE_CHILD_DIR";

/// A session host of session `s` in JSONL files under `dir`, todo configured.
fn jsonl_host(dir: &std::path::Path) -> Arc<SessionHost> {
    let configs =
        FamiliesConfig::from_json(&json!({"todo": {"allowParallelInProgress": false}})).unwrap();
    let options = SessionOptions {
        dir: dir.to_owned(),
        session: Some("s".to_owned()),
        configs,
        job_task_ttl: None,
    };
    SessionHost::open(&options).unwrap()
}

/// The child of the kill -9 test below (run only by it): a running job says three things
/// under one key; the first reaches a tool result, the third supersedes the second; the log
/// is flushed, `child: ready` printed, and the child waits to be killed.
#[tokio::test]
#[ignore = "run by a_running_notice_owed_at_a_kill_9_arrives_once_after_the_restart"]
async fn notice_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR_VAR) else {
        return;
    };
    let host = jsonl_host(std::path::Path::new(&dir));
    let (start, job) = turnkit_testkit::FakeProducer::new("watch", "src/")
        .owner(host.agent_handle())
        .build();
    host.job_registry().start(start).unwrap();
    assert!(job.say("changed", "src/a.rs changed"));
    let listed = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(listed.content.len(), 2);
    assert!(job.say("changed", "src/b.rs changed"));
    assert!(job.say("changed", "src/c.rs changed"));
    host.log().flush().await.unwrap();
    #[expect(clippy::print_stdout, reason = "the parent test reads this line")]
    {
        println!("child: ready");
    }
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn a_running_notice_owed_at_a_kill_9_arrives_once_after_the_restart() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "session::tests::notice_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_VAR, dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child ended first: {seen:?}"
        );
        if line.contains("child: ready") {
            break;
        }
        seen.push(line);
    }
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    // Restarted: the word owed at the kill arrives once (the superseded one never, the one
    // a result carried not again), and the job, which died with its host, is reported lost.
    let host = jsonl_host(dir.path());
    let first = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(
        owed_texts(&first),
        [
            "background job watch-1 (watch: src/) says: src/c.rs changed".to_owned(),
            "background job watch-1 (watch: src/) was lost [status: failed, the host stopped \
             while it ran]. Its output went with the stopped host."
                .to_owned(),
        ]
    );
    let second = host.call_tool("todo_write", json!({"todos": []})).await;
    assert_eq!(owed_texts(&second), Vec::<String>::new());
    host.shutdown().await;
}

#[tokio::test]
async fn a_reminders_task_completes_once_when_a_tool_result_carries_its_reminder() {
    let store = MemoryStore::new(Arc::new(SystemClock));
    let host = host_in(&store);
    let due = host.clock().now_millis() + 1_000;
    let scheduled =
        turnkit_core::format_instant(chrono::DateTime::from_timestamp_millis(due).unwrap());
    let created = ToolOutput::success(json!({"id": "schedule-1", "scheduledAt": scheduled}), "ok");
    let entry = host.open_task("schedule_create", &created).await.unwrap();
    let reminder = |text: &str| {
        turnkit_core::UserMessage::text(
            text,
            turnkit_core::MessageSource::Plugin {
                plugin: "schedule".to_owned(),
                form: None,
                summary: None,
            },
        )
        .about(vec![turnkit_core::Subject::reminder("schedule-1", due)])
    };
    host.owed()
        .queue(crate::inbox::Lane::Inject, reminder("stretch"))
        .unwrap();
    // The client stopped polling: past the task's hold a tool result carries the reminder,
    // and the task completes at once, saying so, with the reminder.
    let later = host.clock().now_millis() + 60_000;
    let (key, taken) = host.owed().reserve(later).unwrap();
    assert_eq!(taken.len(), 1);
    host.commit(key).await;
    let expected = crate::tasks::Completion {
        content: vec![
            "This reminder already reached the model with an earlier tool result.".to_owned(),
            "stretch".to_owned(),
        ],
        is_error: false,
    };
    let view = host.get_task(&entry.id).await.unwrap();
    assert_eq!(
        view.state,
        crate::tasks::TaskState::Completed(expected.clone())
    );
    assert_eq!(view.reservation, None);
    // A later occurrence reaching a tool result leaves the completed task as it is.
    host.owed()
        .queue(crate::inbox::Lane::Inject, reminder("stretch again"))
        .unwrap();
    let (key, _) = host.owed().reserve(later).unwrap();
    host.commit(key).await;
    let delivered: Vec<Value> = host
        .log()
        .events()
        .iter()
        .filter(|e| e.r#type == crate::inbox::TASK_DELIVERED_EVENT)
        .map(|e| e.data.clone())
        .collect();
    assert_eq!(
        delivered,
        [json!({"taskId": entry.id, "seqs": [], "content": expected.content})]
    );
    host.shutdown().await;
    drop(host);
    // Reopened: the task answers the same completed result, and nothing is owed.
    let reopened = host_in(&store);
    let view = reopened.get_task(&entry.id).await.unwrap();
    assert_eq!(view.state, crate::tasks::TaskState::Completed(expected));
    assert!(reopened.owed().pending().is_empty());
    reopened.shutdown().await;
}
