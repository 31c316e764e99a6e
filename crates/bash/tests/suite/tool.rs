//! The `bash` tool and the job producer through the local registry and tool-jobs, with real
//! processes (cases C-139, C-141, C-142, C-143 and further checks of decisions 11 and 13).

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use turnkit_bash::{BashConfig, JOBS_UNAVAILABLE};
use turnkit_core::{Harness, RegistrationScope, SessionId, SystemClock};
use turnkit_jobs::{JobId, JobStatus};
use turnkit_testkit::MemoryHarness;

use super::support::{Host, assert_group_gone, find_shell, live_group_members, marker, wait_until};

#[tokio::test]
async fn c139_background_acknowledgement_and_collection() {
    let host = Host::default_host();
    host.session("s1");
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "echo bg-ok", "description": "test command", "run_in_background": true}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(out.value, json!({"kind": "background", "jobId": "bash-1"}));
    assert_eq!(out.text(), "started background job bash-1");
    assert_eq!(
        host.collect(Some("s1"), "bash-1").await,
        "bg-ok\n[status: completed, exit code: 0]"
    );
    // The wait delivered the terminal state: no notice.
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn c141_ownership_and_kill() {
    let host = Host::default_host();
    host.session("sess-owner");
    let out = host
        .call(
            Some("sess-owner"),
            "bash",
            json!({"command": "sleep 60", "run_in_background": true}),
        )
        .await;
    assert_eq!(out.text(), "started background job bash-1");
    let foreign = host
        .call(None, "job_output", json!({"job_id": "bash-1"}))
        .await;
    assert!(foreign.is_error);
    assert_eq!(
        foreign.text(),
        "Error: job bash-1 belongs to another session"
    );
    let kill = host
        .call(Some("sess-owner"), "job_kill", json!({"job_id": "bash-1"}))
        .await;
    assert_eq!(kill.text(), "requested cancellation of job bash-1");
    assert_eq!(
        host.collect(Some("sess-owner"), "bash-1").await,
        "(no new output)\n[status: killed, signal: SIGTERM]"
    );
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn c141_stderr_sections() {
    let host = Host::default_host();
    host.session("s1");
    let cases = [
        (
            "echo out; echo err >&2",
            "out\n[stderr]\nerr\n[status: completed, exit code: 0]",
        ),
        (
            "printf out; echo err >&2",
            "out\n[stderr]\nerr\n[status: completed, exit code: 0]",
        ),
        (
            "echo err >&2",
            "[stderr]\nerr\n[status: completed, exit code: 0]",
        ),
    ];
    for (n, (command, expected)) in cases.into_iter().enumerate() {
        let id = format!("bash-{}", n + 1);
        let out = host
            .call(
                Some("s1"),
                "bash",
                json!({"command": command, "run_in_background": true}),
            )
            .await;
        assert_eq!(out.text(), format!("started background job {id}"));
        assert_eq!(host.collect(Some("s1"), &id).await, expected, "{command}");
    }
}

#[tokio::test]
async fn c142_dropped_output_notice_names_the_spill_file() {
    let host = Host::new(&json!({"maxOutputBytes": 100}), json!({}));
    host.session("s1");
    host.call(
        Some("s1"),
        "bash",
        json!({"command": "for i in $(seq 1 100); do echo line $i; done", "run_in_background": true}),
    )
    .await;
    let text = host.collect(Some("s1"), "bash-1").await;
    let spill: Vec<_> = std::fs::read_dir(host.spill.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(spill.len(), 1, "{spill:?}");
    let notice = format!(
        "[some output was dropped from memory; full output: {}]",
        spill[0].display()
    );
    assert!(
        text.ends_with(&format!(
            "line 100\n{notice}\n[status: completed, exit code: 0]"
        )),
        "{text}"
    );
    let full: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&spill[0]).unwrap(), full);
}

#[tokio::test]
async fn c143_admission_with_real_processes() {
    let host = Host::new(
        &json!({"killGraceMs": 300}),
        json!({"maxConcurrentJobsPerOwner": 1}),
    );
    host.session("s1");
    let first = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "sleep 60", "run_in_background": true}),
        )
        .await;
    assert_eq!(first.text(), "started background job bash-1");
    let flag = host.spill.path().join("marker");
    let touch = format!("touch '{}'", flag.display());
    let refused = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": touch, "run_in_background": true}),
        )
        .await;
    assert!(refused.is_error);
    assert_eq!(
        refused.text(),
        "Error: background job limit reached for this owner (limit: 1); use job_kill to stop an unneeded job, wait for it to finish, then retry"
    );
    host.call(Some("s1"), "job_kill", json!({"job_id": "bash-1"}))
        .await;
    host.settled(Some("s1"), "bash-1").await;
    assert!(!flag.exists());
    let again = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": touch, "run_in_background": true}),
        )
        .await;
    assert_eq!(again.text(), "started background job bash-2");
    host.settled(Some("s1"), "bash-2").await;
    assert!(flag.exists());
}

#[tokio::test]
async fn foreground_returns_output_and_status_without_a_notice() {
    let host = Host::default_host();
    let agent = host.session("s1");
    let out = host
        .call(Some("s1"), "bash", json!({"command": "echo hi"}))
        .await;
    assert!(!out.is_error);
    assert_eq!(out.text(), "hi\n[status: completed, exit code: 0]");
    assert_eq!(
        out.value,
        json!({"kind": "foreground", "jobId": "bash-1", "output": "hi\n", "status": "completed", "detail": "exit code: 0", "timedOut": false})
    );
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
    assert_eq!(agent.turns(), 0);
}

/// A foreground call's job holds an admission place only while it runs (todo-jobs §4.3
/// counts running and stopping records): with a limit of 2, five foreground calls in a row
/// each start, and a background job started after them is admitted too.
#[tokio::test]
async fn a_finished_foreground_call_frees_its_admission_slot() {
    let host = Host::new(
        &json!({"killGraceMs": 300}),
        json!({"maxConcurrentJobsPerOwner": 2}),
    );
    host.session("s1");
    let mut texts = Vec::new();
    for n in 1..=5 {
        let out = host
            .call(Some("s1"), "bash", json!({"command": format!("echo {n}")}))
            .await;
        texts.push(out.text());
    }
    assert_eq!(
        texts,
        (1..=5)
            .map(|n| format!("{n}\n[status: completed, exit code: 0]"))
            .collect::<Vec<_>>()
    );
    let background = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "true", "run_in_background": true}),
        )
        .await;
    assert_eq!(background.text(), "started background job bash-6");
    host.settled(Some("s1"), "bash-6").await;
}

#[tokio::test]
async fn foreground_exit_codes() {
    let host = Host::default_host();
    host.session("s1");
    let cases = [
        ("exit 0", "(no output)\n[status: completed, exit code: 0]"),
        ("exit 3", "(no output)\n[status: completed, exit code: 3]"),
        (
            "printf 'no newline'; exit 3",
            "no newline\n[status: completed, exit code: 3]",
        ),
    ];
    for (command, expected) in cases {
        let out = host
            .call(Some("s1"), "bash", json!({"command": command}))
            .await;
        assert_eq!(out.text(), expected, "{command}");
    }
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "no-such-command-harness"}),
        )
        .await;
    let text = out.text();
    assert!(text.starts_with("[stderr]\nbash: "), "{text}");
    assert!(
        text.ends_with(
            "no-such-command-harness: command not found\n[status: completed, exit code: 127]"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn foreground_timeout_kills_the_command() {
    let host = Host::default_host();
    host.session("s1");
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "echo started; sleep 30", "timeout_ms": 200}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(
        out.text(),
        "started\n[timed out after 200ms]\n[status: killed, signal: SIGTERM]"
    );
    assert_eq!(out.value["timedOut"], json!(true));
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn foreground_rejects_a_non_positive_timeout() {
    let host = Host::default_host();
    host.session("s1");
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": "true", "timeout_ms": 0}),
        )
        .await;
    assert_eq!(
        out.text(),
        "Error: invalid timeout_ms: expected a positive number of milliseconds, got 0"
    );
    let list = host.call(Some("s1"), "job_list", json!({})).await;
    assert_eq!(list.text(), "(no background jobs)");
}

#[tokio::test]
async fn aborting_a_foreground_call_kills_the_job() {
    let host = Host::default_host();
    host.session("s1");
    let cancel = CancellationToken::new();
    let marker = marker("abort");
    let command = format!("sleep 1000; echo unreachable # {marker}");
    let call = {
        let harness = host.harness.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            harness
                .execute_with_cancel(
                    "bash",
                    json!({"command": command}),
                    Some(&SessionId::from("s1")),
                    cancel,
                )
                .await
        })
    };
    // Read once: the shell's command line changes when it leaves the containment gate.
    let mut found = None;
    wait_until(|| {
        found = find_shell(&marker);
        found.is_some()
    })
    .await;
    let pgid = found.unwrap();
    cancel.cancel();
    let out = call.await.unwrap();
    assert_eq!(out.text(), "Error: This operation was aborted");
    let snapshot = host.settled(Some("s1"), "bash-1").await;
    assert_eq!(snapshot.status, JobStatus::Killed);
    assert_group_gone(pgid).await;
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn an_already_aborted_call_starts_nothing() {
    let host = Host::default_host();
    host.session("s1");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = host
        .harness
        .execute_with_cancel(
            "bash",
            json!({"command": "echo never", "run_in_background": true}),
            Some(&SessionId::from("s1")),
            cancel,
        )
        .await;
    assert_eq!(out.text(), "Error: This operation was aborted");
    let list = host.call(Some("s1"), "job_list", json!({})).await;
    assert_eq!(list.text(), "(no background jobs)");
}

#[tokio::test]
async fn without_a_registry_the_tool_fails_clearly() {
    let harness = MemoryHarness::new(Arc::new(SystemClock));
    let host: Arc<dyn Harness> = harness.as_dyn();
    let _bash = turnkit_bash::install(&host, BashConfig::default()).unwrap();
    for args in [
        json!({"command": "echo x", "run_in_background": true}),
        json!({"command": "echo x"}),
    ] {
        let out = harness.execute("bash", args, None).await;
        assert!(out.is_error);
        assert_eq!(out.text(), format!("Error: {JOBS_UNAVAILABLE}"));
    }
    assert_eq!(
        JOBS_UNAVAILABLE,
        "background jobs unavailable: load @deepseek-ai/dsh-jobs and @deepseek-ai/dsh-tool-jobs"
    );
}

#[tokio::test]
async fn a_command_ignoring_sigterm_is_killed_after_the_grace() {
    let host = Host::default_host();
    host.session("s1");
    host.call(
        Some("s1"),
        "bash",
        json!({"command": "trap '' TERM; echo ready; sleep 1000", "run_in_background": true}),
    )
    .await;
    let first = host
        .call(
            Some("s1"),
            "job_output",
            json!({"job_id": "bash-1", "wait": true, "timeout_ms": 300}),
        )
        .await;
    assert_eq!(first.text(), "ready\n[status: running]");
    host.call(Some("s1"), "job_kill", json!({"job_id": "bash-1"}))
        .await;
    assert_eq!(
        host.collect(Some("s1"), "bash-1").await,
        "(no new output)\n[status: killed, signal: SIGKILL]"
    );
}

/// Starts `sleep 1000 & sleep 1000 & wait` as a background job of `s1` and returns its
/// process group once all three processes run.
async fn start_grandchildren(host: &Host, test: &str) -> u32 {
    let marker = marker(test);
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": format!("sleep 1000 & sleep 1000 & wait # {marker}"), "run_in_background": true}),
        )
        .await;
    assert_eq!(out.text(), "started background job bash-1");
    let mut found = None;
    wait_until(|| {
        found = find_shell(&marker).filter(|pgid| live_group_members(*pgid).len() == 3);
        found.is_some()
    })
    .await;
    found.unwrap()
}

#[tokio::test]
async fn decision13_job_kill_leaves_no_process_of_the_group() {
    let host = Host::default_host();
    host.session("s1");
    let pgid = start_grandchildren(&host, "kill").await;
    host.call(Some("s1"), "job_kill", json!({"job_id": "bash-1"}))
        .await;
    let snapshot = host.settled(Some("s1"), "bash-1").await;
    assert_eq!(snapshot.status, JobStatus::Killed);
    assert_eq!(snapshot.detail.as_deref(), Some("signal: SIGTERM"));
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn decision13_owner_disposal_leaves_no_process_of_the_group() {
    let host = Host::default_host();
    host.session("s1");
    let pgid = start_grandchildren(&host, "owner").await;
    let disposed = tokio::time::timeout(
        super::support::LIMIT,
        host.harness.dispose_agent(&SessionId::from("s1")),
    )
    .await
    .unwrap();
    assert!(disposed);
    assert_group_gone(pgid).await;
    assert_eq!(host.jobs.local().record_count(), 0);
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn decision13_registry_disposal_leaves_no_process_of_the_group() {
    let host = Host::default_host();
    host.session("s1");
    let pgid = start_grandchildren(&host, "registry").await;
    tokio::time::timeout(super::support::LIMIT, host.jobs.dispose())
        .await
        .unwrap();
    assert_group_gone(pgid).await;
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
}

#[tokio::test]
async fn a_kill_racing_a_natural_exit_settles_exactly_once() {
    let host = Host::default_host();
    let registry = host.jobs.registry();
    let settlements = Arc::new(Mutex::new(Vec::<(String, JobStatus)>::new()));
    let sink = settlements.clone();
    let _listener = registry.on_job_done(
        RegistrationScope::Global,
        Arc::new(move |snapshot, _owner| {
            sink.lock()
                .unwrap()
                .push((snapshot.id.to_string(), snapshot.status));
            Ok(None)
        }),
    );
    let rounds = 20;
    for round in 1..=rounds {
        let id = host
            .bash
            .jobs()
            .start_saved(None, "true", None)
            .await
            .unwrap();
        assert_eq!(id, JobId::from(format!("bash-{round}")));
        registry.kill(&id, None, Some("race")).unwrap();
        let snapshot = host.settled(None, id.as_str()).await;
        assert!(
            matches!(snapshot.status, JobStatus::Killed | JobStatus::Completed),
            "{snapshot:?}"
        );
    }
    let settlements = settlements.lock().unwrap().clone();
    assert_eq!(settlements.len(), rounds);
    for (round, (id, status)) in settlements.iter().enumerate() {
        assert_eq!(id, &format!("bash-{}", round + 1));
        assert!(status.is_terminal());
    }
}

#[tokio::test]
async fn an_unread_job_notifies_its_idle_owner() {
    let host = Host::default_host();
    host.session("s1");
    host.call(
        Some("s1"),
        "bash",
        json!({"command": "echo done", "run_in_background": true}),
    )
    .await;
    wait_until(|| !host.notices().is_empty()).await;
    assert_eq!(
        host.notices(),
        vec![(
            "s1".to_owned(),
            "background job bash-1 (bash: echo done) finished [status: completed, exit code: 0]. Read its output with job_output.".to_owned()
        )]
    );
    let out = host
        .call(Some("s1"), "job_output", json!({"job_id": "bash-1"}))
        .await;
    assert_eq!(out.text(), "done\n[status: completed, exit code: 0]");
}
