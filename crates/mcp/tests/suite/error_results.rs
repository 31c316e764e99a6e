//! A notice never rides an error result (clients fold it into the error text the model reads
//! as a failure): it waits for the next successful result.
//!
//! The server is a real child process on the wall clock, so a wait here polls what it answers
//! with a short pause, bounded by a deadline; no pause stands in for an in-process event.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::BOUND;
use crate::suite::tasks::Raw;

fn texts(reply: &Value) -> Vec<String> {
    reply["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_notice_owed_when_a_call_fails_waits_for_the_next_successful_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let config = json!({
        "todo": {"allowParallelInProgress": false},
        "bash": {"cwd": dir.path().join("work")},
    });
    let mut raw = Raw::start(dir.path(), "s", &config);
    raw.discover(false).await;
    let started = raw
        .call(
            "bash",
            json!({"command": "printf done", "run_in_background": true}),
            false,
        )
        .await;
    assert_eq!(texts(&started), ["started background job bash-1"]);
    // Wait until the job's notice is owed (the inbox resource lists it).
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let inbox = raw
            .request(
                "resources/read",
                json!({"uri": turnkit_mcp::INBOX_URI, "_meta": crate::suite::tasks::meta(false)}),
            )
            .await;
        let text = inbox["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or("[]");
        if text != "[]" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{inbox}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let failed = raw
        .call(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "bogus"}]}),
            false,
        )
        .await;
    assert_eq!(failed["result"]["isError"], true);
    assert_eq!(texts(&failed).len(), 1, "{failed}");
    let listed = raw.call("job_list", json!({}), false).await;
    let listed = texts(&listed);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        listed[1],
        "background job bash-1 (bash: printf done) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    raw.stop().await;
}
