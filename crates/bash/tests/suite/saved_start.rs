//! The saved start: a `bash` call whose job's start cannot be made durable (its owner's
//! session refuses every flush) runs nothing, in the background and in the foreground, and
//! answers the spec's error.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::SessionId;
use turnkit_jobs::JobStatus;

use super::support::Host;

#[tokio::test]
async fn a_bash_call_whose_start_cannot_be_saved_runs_nothing() {
    let host = Host::default_host();
    host.session("s1");
    host.harness
        .faults(&SessionId::from("s1"))
        .set_flush_fail(true);
    let dir = tempfile::tempdir().unwrap();
    for (n, background) in [(1, true), (2, false)] {
        let ran = dir.path().join(format!("ran-{n}"));
        let command = format!("echo ran > {}", ran.display());
        let result = host
            .call(
                Some("s1"),
                "bash",
                json!({"command": command, "run_in_background": background}),
            )
            .await;
        assert!(result.is_error, "{result:?}");
        assert_eq!(
            result.text(),
            format!(
                "Error: background job bash-{n} was stopped before its command ran: its start \
                 could not be saved: flush failed: injected flush failure"
            )
        );
        let settled = host.settled(Some("s1"), &format!("bash-{n}")).await;
        assert_eq!(settled.status, JobStatus::Killed, "{settled:?}");
        // The job settled: its shell is gone, and it never ran the command.
        assert!(!ran.exists(), "the command of bash-{n} ran");
    }
    // Stopped for its owner: no completion notice either.
    assert_eq!(host.notices(), Vec::<(String, String)>::new());
    host.harness
        .faults(&SessionId::from("s1"))
        .set_flush_fail(false);
    let ran = dir.path().join("ran-3");
    let command = format!("echo ran > {}", ran.display());
    let result = host
        .call(Some("s1"), "bash", json!({"command": command}))
        .await;
    assert_eq!(
        result.text(),
        "(no output)\n[status: completed, exit code: 0]"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
}
