//! Resources with subscriptions, and a long wait with progress and cancellation.

use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ReadResourceRequestParams, SubscribeRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use crate::suite::support::{Note, config, start};

async fn read(server: &crate::suite::support::Server, uri: &str) -> Value {
    let result = server
        .client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let contents = serde_json::to_value(&result).unwrap()["contents"].clone();
    assert_eq!(contents[0]["uri"], uri);
    assert_eq!(contents[0]["mimeType"], "application/json");
    serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn the_todos_resource_reads_and_notifies_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "s1", &config(), &[]).await;
    let listed = server.client.list_all_resources().await.unwrap();
    let uris: Vec<String> = listed.iter().map(|r| r.uri.clone()).collect();
    assert_eq!(
        uris,
        [
            "harness://todos",
            "harness://jobs",
            "harness://reminders",
            "harness://inbox"
        ]
    );
    assert_eq!(read(&server, "harness://todos").await, Value::Null);
    #[expect(
        deprecated,
        reason = "the legacy subscription is what this protocol version has"
    )]
    server
        .client
        .subscribe(SubscribeRequestParams::new("harness://todos"))
        .await
        .unwrap();
    server
        .call(
            "todo_write",
            json!({"todos": [{"content": "Ship", "status": "in_progress"}]}),
        )
        .await;
    assert_eq!(
        server.wait_for(|n| matches!(n, Note::Updated(_))).await,
        Note::Updated("harness://todos".to_owned())
    );
    assert_eq!(
        read(&server, "harness://todos").await,
        json!([{"content": "Ship", "status": "in_progress"}])
    );
    assert_eq!(read(&server, "harness://jobs").await, json!([]));
    #[expect(
        deprecated,
        reason = "the legacy subscription is what this protocol version has"
    )]
    server
        .client
        .subscribe(SubscribeRequestParams::new("harness://jobs"))
        .await
        .unwrap();
    server
        .texts(
            "bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        )
        .await;
    assert_eq!(
        server.wait_for(|n| matches!(n, Note::Updated(_))).await,
        Note::Updated("harness://jobs".to_owned())
    );
    let jobs = read(&server, "harness://jobs").await;
    assert_eq!(jobs[0]["id"], "bash-1");
    assert_eq!(jobs[0]["status"], "running");
    assert_eq!(read(&server, "harness://jobs/bash-1").await, jobs[0]);
    assert_eq!(read(&server, "harness://reminders").await, json!([]));
    assert_eq!(read(&server, "harness://inbox").await, json!([]));
    let missing = server
        .client
        .read_resource(ReadResourceRequestParams::new("harness://nope"))
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Mcp error: -32002: unknown resource: harness://nope"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_long_wait_reports_progress_and_ends_at_once_when_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "s1", &config(), &[]).await;
    server
        .texts(
            "bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        )
        .await;
    let params = CallToolRequestParams::new("job_output").with_arguments(
        json!({"job_id": "bash-1", "wait": true})
            .as_object()
            .unwrap()
            .clone(),
    );
    let handle = server
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    assert_eq!(
        server.wait_for(|n| matches!(n, Note::Progress(_))).await,
        Note::Progress(None)
    );
    handle
        .cancel(Some("user interrupt".to_owned()))
        .await
        .unwrap();
    // The cancel is read before the next request, so once that one is answered the wait is
    // over: no progress follows, and the job still runs.
    assert_eq!(
        server.texts("job_list", json!({})).await,
        ["bash-1 [bash] running — sleep 30"]
    );
    server.drain();
    let quiet = tokio::time::timeout(
        std::time::Duration::from_millis(1500),
        server.wait_for(|n| matches!(n, Note::Progress(_))),
    )
    .await;
    // A timeout's only error is `Elapsed` (opaque): no progress note came in the window.
    assert!(quiet.is_err(), "progress after the cancel: {quiet:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_foreground_bash_reports_progress_and_is_killed_when_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), "s1", &config(), &[]).await;
    let params = CallToolRequestParams::new("bash").with_arguments(
        json!({"command": "sleep 30", "timeout_ms": 60000})
            .as_object()
            .unwrap()
            .clone(),
    );
    let handle = server
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // bash publishes no progress line: the reports carry no message.
    assert_eq!(
        server.wait_for(|n| matches!(n, Note::Progress(_))).await,
        Note::Progress(None)
    );
    handle
        .cancel(Some("user interrupt".to_owned()))
        .await
        .unwrap();
    // An interrupted foreground call kills its job (reason `aborted`); the process ends in
    // real time, so the list is read until it says so.
    let deadline = tokio::time::Instant::now() + crate::suite::support::BOUND;
    loop {
        let listed = server.texts("job_list", json!({})).await;
        if listed == ["bash-1 [bash] killed — sleep 30"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still not killed: {listed:?}"
        );
        tokio::task::yield_now().await;
    }
    server.stop().await;
}
