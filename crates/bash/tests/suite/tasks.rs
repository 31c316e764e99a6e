//! The plugin owns the tasks of its processes: after the registry's disposal settled every
//! job, [`turnkit_bash::Installed::shutdown`] ends what is left of them and joins it.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_bash::{BashProcess, EndStatus, ProcessEnd, ProcessOptions, TaskSet};
use turnkit_testkit::ManualClock;

use super::support::{
    Host, LIMIT, assert_group_gone, find_shell, live_group_members, marker, read_until, wait_until,
};

/// A job whose command leaves a process that ignores SIGTERM: the registry's disposal
/// settles the job (the shell died of SIGTERM), and two tasks wait out the grace before
/// their SIGKILL: the supervisor, and the stop of the leftovers that the dropped record's
/// handle started. The plugin's shutdown kills at once and joins both.
#[tokio::test]
async fn shutdown_ends_the_grace_of_a_disposed_jobs_leftover_and_joins_its_tasks() {
    // A grace no test waits out.
    let host = Host::new(&json!({"killGraceMs": 600_000}), json!({}));
    host.session("s1");
    assert_eq!(host.bash.running_tasks(), 0);
    let marker = marker("shutdown");
    let command =
        format!("(trap '' TERM; exec sleep 1000) >/dev/null 2>&1 & echo ready; wait # {marker}");
    let out = host
        .call(
            Some("s1"),
            "bash",
            json!({"command": command, "run_in_background": true}),
        )
        .await;
    assert_eq!(out.text(), "started background job bash-1");
    let mut found = None;
    wait_until(|| {
        found = find_shell(&marker).filter(|pgid| live_group_members(*pgid).len() == 2);
        found.is_some()
    })
    .await;
    let pgid = found.unwrap_or_default();
    // The supervisor of the running process.
    assert_eq!(host.bash.running_tasks(), 1);
    tokio::time::timeout(LIMIT, host.jobs.dispose())
        .await
        .expect("the registry's disposal finished");
    // The shell is gone; the leftover ignored SIGTERM and waits for the grace's SIGKILL.
    assert_eq!(live_group_members(pgid).len(), 1);
    assert_eq!(host.bash.running_tasks(), 2);
    tokio::time::timeout(LIMIT, host.bash.shutdown())
        .await
        .expect("the shutdown finished without waiting out the grace");
    assert_eq!(host.bash.running_tasks(), 0);
    assert_group_gone(pgid).await;
}

/// A process still running when its task set shuts down is killed (SIGKILL, no grace) and
/// its supervisor joined; the set's count says so.
#[tokio::test]
async fn a_task_set_shutdown_kills_a_running_process_and_joins_its_supervisor() {
    let tasks = TaskSet::new();
    let mut options = ProcessOptions::new(
        "echo ready; sleep 1000",
        Arc::new(ManualClock::at_default()),
    );
    options.tasks = tasks.clone();
    let process = BashProcess::spawn(options).unwrap();
    read_until(&process, "ready").await;
    let pgid = process.pid();
    assert_eq!(tasks.len(), 1);
    tokio::time::timeout(LIMIT, tasks.shutdown())
        .await
        .expect("the shutdown finished");
    assert_eq!(tasks.len(), 0);
    assert!(tasks.is_stopping());
    assert_eq!(
        process.try_end(),
        Some(ProcessEnd {
            status: EndStatus::Signaled(9),
            cancel_requested: false,
        })
    );
    assert_group_gone(pgid).await;
}
