//! The saved start: a `terminal_send` whose job's start cannot be made durable (its owner's
//! session refuses every flush) types nothing and answers the spec's error.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{AgentId, SessionId};
use turnkit_jobs::{JobId, JobStatus};

use super::support::{Host, LIMIT};

#[tokio::test]
async fn a_send_whose_start_cannot_be_saved_types_nothing() {
    let host = Host::new(&json!({}));
    host.session("s1");
    let dir = tempfile::tempdir().unwrap();
    let typed = dir.path().join("typed");
    let started = host
        .call(
            Some("s1"),
            "terminal_start",
            json!({"command": format!("echo ready; exec cat > {}", typed.display())}),
        )
        .await;
    assert_eq!(started.text(), "started terminal term-1");
    let ready = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "wait_for": "ready"}),
        )
        .await;
    assert!(!ready.is_error, "{ready:?}");
    let faults = host.harness.faults(&SessionId::from("s1"));
    faults.set_flush_fail(true);
    let refused = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "first", "keys": ["enter"], "run_in_background": true}),
        )
        .await;
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(
        refused.text(),
        "Error: background job pty-send-2 was stopped: its start could not be saved: flush \
         failed: injected flush failure"
    );
    let settled = host
        .jobs
        .registry()
        .wait(
            &JobId::from("pty-send-2"),
            LIMIT,
            Some(&AgentId::from("s1")),
            None,
        )
        .await
        .unwrap();
    assert_eq!(settled.status, JobStatus::Killed, "{settled:?}");
    // The next send, saved, is the first input the program reads.
    faults.set_flush_fail(false);
    let second = host
        .call(
            Some("s1"),
            "terminal_send",
            json!({"terminal_id": "term-1", "text": "second", "keys": ["enter"], "wait_for": "second"}),
        )
        .await;
    assert!(!second.is_error, "{second:?}");
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut content = String::new();
    while !content.contains("second") {
        assert!(tokio::time::Instant::now() < deadline, "{content:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        content = std::fs::read_to_string(&typed).unwrap_or_default();
    }
    assert_eq!(content, "second\n");
}
