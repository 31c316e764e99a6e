//! Jobs survive a restart of `harness mcp` (the job journal is on by default): a job still
//! running at a clean shutdown is stopped and reported as stopped by it, a finished job's
//! unread output is still there for the notice that promised it, and ids continue.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::suite::support::{Note, config, start};

/// Whether `note` is a log message whose text contains `needle`.
fn log_with(note: &Note, needle: &str) -> bool {
    matches!(note, Note::Log(data) if data["text"].as_str().is_some_and(|t| t.contains(needle)))
}

#[tokio::test]
async fn a_restart_keeps_the_jobs_their_output_and_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "s1", &config(), &[]).await;
    assert_eq!(
        server
            .texts(
                "bash",
                json!({"command": "sleep 1000", "run_in_background": true})
            )
            .await,
        ["started background job bash-1"]
    );
    // bash-2 ends only after its start was answered (its notice cannot ride that answer).
    let gate = dir.path().join("go");
    let command = format!(
        "while [ ! -e {} ]; do sleep 0.01; done; printf out-2",
        gate.display()
    );
    assert_eq!(
        server
            .texts(
                "bash",
                json!({"command": command, "run_in_background": true})
            )
            .await,
        ["started background job bash-2"]
    );
    std::fs::write(&gate, "").unwrap();
    // bash-2's notice is owed; the server stops before a result carries it.
    server.wait_for(|n| log_with(n, "bash-2")).await;
    server.stop().await;

    let mut server = start(dir.path(), "s1", &config(), &[]).await;
    server.wait_for(|n| log_with(n, "bash-1")).await;
    assert_eq!(
        server.texts("job_list", json!({})).await,
        [
            format!(
                "bash-1 [bash] killed — sleep 1000 (from before the restart)\n\
                 bash-2 [bash] completed — {command} (from before the restart)"
            ),
            format!(
                "background job bash-2 (bash: {command}) finished [status: completed, exit code: 0]. Read its output with job_output."
            ),
            "background job bash-1 (bash: sleep 1000) was still running when its host shut down [status: killed, stopped by the host's shutdown]. Read its output with job_output.".to_owned(),
        ]
    );
    assert_eq!(
        server
            .texts("job_output", json!({"job_id": "bash-2"}))
            .await,
        ["(from before the restart)\nout-2\n[status: completed, exit code: 0]"]
    );
    assert_eq!(
        server
            .texts("job_output", json!({"job_id": "bash-1"}))
            .await,
        [
            "(from before the restart)\n(no new output)\n[status: killed, stopped by the host's shutdown]"
        ]
    );
    assert_eq!(
        server
            .texts(
                "bash",
                json!({"command": "sleep 1000", "run_in_background": true})
            )
            .await,
        ["started background job bash-3"]
    );
    server.stop().await;

    // With the journal turned off, a restart forgets the jobs (as before).
    let mut off = config();
    off["jobs"] = json!({"journal": false});
    let server = start(dir.path(), "s2", &off, &[]).await;
    assert_eq!(
        server
            .texts(
                "bash",
                json!({"command": "sleep 1000", "run_in_background": true})
            )
            .await,
        ["started background job bash-1"]
    );
    server.stop().await;
    let server = start(dir.path(), "s2", &off, &[]).await;
    assert_eq!(
        server.texts("job_list", json!({})).await,
        ["(no background jobs)"]
    );
    server.stop().await;
}
