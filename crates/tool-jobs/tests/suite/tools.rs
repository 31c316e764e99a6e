//! `job_output`, `job_list`, `job_kill` through the host pipeline (cases-todo-jobs D).

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::ToolOutput;
use turnkit_jobs::{JobOutcome, JobStatus};
use turnkit_testkit::settle;

use super::fixture::{FakeProducer, Fx, OnCancel, T0};

fn error(text: &str) -> ToolOutput {
    ToolOutput::error(text)
}

fn ok_text(output: &ToolOutput) -> String {
    assert!(!output.is_error, "unexpected error: {}", output.text());
    output.text()
}

#[tokio::test(start_paused = true)]
async fn final_output_job() {
    // C-101
    let fx = Fx::default_config();
    let (id, job) = fx.start(
        FakeProducer::new("subagent", "research").stream(false),
        None,
    );
    assert_eq!(id.as_str(), "subagent-1");
    let running = fx
        .call("job_output", json!({"job_id": "subagent-1"}), None)
        .await;
    assert_eq!(
        running,
        ToolOutput::success(
            json!({"text": "", "job": {"id": "subagent-1", "kind": "subagent", "label": "research", "status": "running", "startedAt": T0}}),
            "(no new output)\n[status: running]"
        )
    );
    job.settle(
        JobOutcome::completed()
            .with_detail("completed")
            .with_output("the answer"),
    );
    settle().await;
    let done = fx
        .call("job_output", json!({"job_id": "subagent-1"}), None)
        .await;
    assert_eq!(
        done,
        ToolOutput::success(
            json!({"text": "the answer", "job": {"id": "subagent-1", "kind": "subagent", "label": "research", "status": "completed", "detail": "completed", "startedAt": T0, "finishedAt": T0}}),
            "the answer\n[status: completed, completed]"
        )
    );
    // Final output is idempotent (decision 9).
    let again = fx
        .call("job_output", json!({"job_id": "subagent-1"}), None)
        .await;
    assert_eq!(again.text(), "the answer\n[status: completed, completed]");
}

#[tokio::test(start_paused = true)]
async fn limit_applies_to_body_plus_status() {
    // C-102
    let fx = Fx::default_config();
    let (_, job) = fx.start(
        FakeProducer::new("bash", "cat big").output_limit_bytes(48),
        None,
    );
    job.emit(&"界".repeat(100));
    let output = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(
        ok_text(&output),
        "界界界\n[output truncated]\n[status: running]"
    );
    assert_eq!(output.text().len(), 46);
    assert_eq!(
        output.value["text"],
        json!("界".repeat(100)),
        "the value is not capped"
    );
}

#[tokio::test(start_paused = true)]
async fn limit_preserves_short_outputs() {
    // C-103
    let fx = Fx::default_config();
    let (_, job) = fx.start(
        FakeProducer::new("bash", "echo").output_limit_bytes(64),
        None,
    );
    let first = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(ok_text(&first), "(no new output)\n[status: running]");
    job.emit("line\n");
    let second = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(ok_text(&second), "line\n[status: running]");
}

#[tokio::test(start_paused = true)]
async fn read_failure_is_bounded() {
    // C-105
    let fx = Fx::default_config();
    let (_, job) = fx.start(
        FakeProducer::new("bash", "cat").output_limit_bytes(64),
        None,
    );
    job.fail_reads(Some("read failed: ".repeat(100)));
    let output = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(output.is_error, true);
    assert_eq!(
        output.text(),
        "iled: read failed: read failed: read failed: \n[result truncated]"
    );
    assert_eq!(output.text().len(), 64);
}

#[tokio::test(start_paused = true)]
async fn wait_blocks_until_settlement() {
    // C-107
    let fx = std::sync::Arc::new(Fx::default_config());
    let (_, job) = fx.start(
        FakeProducer::new("subagent", "delegate").stream(false),
        None,
    );
    let caller = fx.clone();
    let pending = tokio::spawn(async move {
        caller
            .call(
                "job_output",
                json!({"job_id": "subagent-1", "wait": true}),
                None,
            )
            .await
    });
    settle().await;
    assert!(!pending.is_finished());
    job.settle(JobOutcome::completed().with_output("done deal"));
    settle().await;
    let output = pending.await.unwrap();
    assert_eq!(ok_text(&output), "done deal\n[status: completed]");
    assert_eq!(fx.get("subagent-1").reported, true);
}

#[tokio::test(start_paused = true)]
async fn wait_reads_after_waiting() {
    // §5.4 step 3: a settlement during the wait returns the rest of the stream.
    let fx = std::sync::Arc::new(Fx::default_config());
    let (_, job) = fx.start(FakeProducer::new("bash", "make"), None);
    job.emit("one\n");
    let caller = fx.clone();
    let pending = tokio::spawn(async move {
        caller
            .call(
                "job_output",
                json!({"job_id": "bash-1", "wait": true}),
                None,
            )
            .await
    });
    settle().await;
    job.emit("two\n");
    job.settle(JobOutcome::completed().with_detail("exit code: 0"));
    settle().await;
    assert_eq!(
        ok_text(&pending.await.unwrap()),
        "one\ntwo\n[status: completed, exit code: 0]"
    );
}

#[tokio::test(start_paused = true)]
async fn wait_timeouts_use_the_default_and_the_cap() {
    let fx = std::sync::Arc::new(Fx::new(
        json!({"waitTimeoutMs": 1000, "maxWaitTimeoutMs": 5000}),
    ));
    fx.start(FakeProducer::new("bash", "sleep 60"), None);
    // Default: waitTimeoutMs.
    let caller = fx.clone();
    let pending = tokio::spawn(async move {
        caller
            .call(
                "job_output",
                json!({"job_id": "bash-1", "wait": true}),
                None,
            )
            .await
    });
    settle().await;
    fx.clock.advance(Duration::from_millis(999)).await;
    assert!(!pending.is_finished());
    fx.clock.advance(Duration::from_millis(1)).await;
    let output = pending.await.unwrap();
    assert_eq!(ok_text(&output), "(no new output)\n[status: running]");
    assert_eq!(
        fx.get("bash-1").status,
        JobStatus::Running,
        "a wait never cancels"
    );
    // An explicit timeout above the cap waits only up to maxWaitTimeoutMs.
    let caller = fx.clone();
    let pending = tokio::spawn(async move {
        caller
            .call(
                "job_output",
                json!({"job_id": "bash-1", "wait": true, "timeout_ms": 60000}),
                None,
            )
            .await
    });
    settle().await;
    fx.clock.advance(Duration::from_millis(4999)).await;
    assert!(!pending.is_finished());
    fx.clock.advance(Duration::from_millis(1)).await;
    assert_eq!(
        ok_text(&pending.await.unwrap()),
        "(no new output)\n[status: running]"
    );
    // timeout_ms is ignored without wait: true.
    let output = fx
        .call(
            "job_output",
            json!({"job_id": "bash-1", "wait": false, "timeout_ms": 0}),
            None,
        )
        .await;
    assert_eq!(ok_text(&output), "(no new output)\n[status: running]");
}

#[tokio::test(start_paused = true)]
async fn zero_or_negative_timeout_is_rejected_by_the_registry() {
    // C-109
    let fx = Fx::default_config();
    fx.start(FakeProducer::new("bash", "sleep 60"), None);
    let output = fx
        .call(
            "job_output",
            json!({"job_id": "bash-1", "wait": true, "timeout_ms": 0}),
            None,
        )
        .await;
    assert_eq!(
        output,
        error("invalid wait timeout: expected a positive number of milliseconds, got 0")
    );
    let output = fx
        .call(
            "job_output",
            json!({"job_id": "bash-1", "wait": true, "timeout_ms": -5}),
            None,
        )
        .await;
    assert_eq!(
        output,
        error("invalid wait timeout: expected a positive number of milliseconds, got -5")
    );
}

#[tokio::test(start_paused = true)]
async fn an_aborted_wait_fails_with_wait_aborted() {
    let fx = std::sync::Arc::new(Fx::default_config());
    fx.start(FakeProducer::new("bash", "sleep 60"), None);
    let cancel = turnkit_core::CancellationToken::new();
    let caller = fx.clone();
    let token = cancel.clone();
    let pending = tokio::spawn(async move {
        caller
            .host
            .execute_with_cancel(
                "job_output",
                json!({"job_id": "bash-1", "wait": true}),
                None,
                token,
            )
            .await
    });
    settle().await;
    cancel.cancel();
    settle().await;
    assert_eq!(pending.await.unwrap(), error("wait aborted"));
    assert_eq!(fx.get("bash-1").status, JobStatus::Running);
}

#[tokio::test(start_paused = true)]
async fn empty_or_unknown_id() {
    // C-110
    let fx = Fx::default_config();
    assert_eq!(
        fx.call("job_output", json!({"job_id": ""}), None).await,
        error("invalid job_id: expected a non-empty string, got \"\"")
    );
    assert_eq!(
        fx.call("job_output", json!({"job_id": "bash-99"}), None)
            .await,
        error("unknown job bash-99")
    );
    assert_eq!(
        fx.call("job_kill", json!({"job_id": ""}), None).await,
        error("invalid job_id: expected a non-empty string, got \"\"")
    );
    assert_eq!(
        fx.call("job_kill", json!({"job_id": "bash-99"}), None)
            .await,
        error("unknown job bash-99")
    );
    // Argument validation is the host's (decision 2); the root stays open.
    assert_eq!(
        fx.call("job_output", json!({"job_id": 7}), None).await,
        error("invalid arguments: \"job_id\" must be a string")
    );
    assert_eq!(
        fx.call("job_output", json!({"job_id": "bash-99", "extra": 1}), None)
            .await,
        error("unknown job bash-99")
    );
}

#[tokio::test(start_paused = true)]
async fn foreign_jobs_are_denied_and_not_capped() {
    // C-111
    let fx = Fx::default_config();
    let alice = fx.agent("alice");
    fx.agent("bob");
    fx.start(
        FakeProducer::new("bash", "sleep 60").output_limit_bytes(8),
        Some(&alice),
    );
    let denied = error("job bash-1 belongs to another session");
    assert_eq!(
        fx.call("job_output", json!({"job_id": "bash-1"}), Some("bob"))
            .await,
        denied
    );
    assert_eq!(
        fx.call("job_output", json!({"job_id": "bash-1"}), None)
            .await,
        denied
    );
    assert_eq!(
        fx.call("job_kill", json!({"job_id": "bash-1"}), Some("bob"))
            .await,
        denied
    );
    // The owner's own errors are capped to the limit.
    let own = fx
        .call(
            "job_output",
            json!({"job_id": "bash-1", "wait": true, "timeout_ms": 0}),
            Some("alice"),
        )
        .await;
    assert_eq!(own.text(), "uncated]");
}

#[tokio::test(start_paused = true)]
async fn kill_of_a_running_job() {
    // C-113
    let fx = Fx::default_config();
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), None);
    let output = fx
        .call(
            "job_kill",
            json!({"job_id": "bash-1", "reason": "superseded"}),
            None,
        )
        .await;
    assert_eq!(
        output,
        ToolOutput::success(
            json!({"outcome": "cancellation-requested", "job": {"id": "bash-1", "kind": "bash", "label": "sleep 60", "status": "stopping", "startedAt": T0}}),
            "requested cancellation of job bash-1"
        )
    );
    assert_eq!(job.cancels(), [Some("superseded".to_owned())]);
    settle().await;
    let snapshot = fx.get("bash-1");
    assert_eq!(
        (snapshot.status, snapshot.detail.as_deref()),
        (JobStatus::Killed, Some("cancelled"))
    );
}

#[tokio::test(start_paused = true)]
async fn kill_acknowledgement_under_a_tiny_limit() {
    // C-114
    let fx = Fx::default_config();
    let (_, job) = fx.start(
        FakeProducer::new("bash", "sleep 60").output_limit_bytes(8),
        None,
    );
    let output = fx.call("job_kill", json!({"job_id": "bash-1"}), None).await;
    assert_eq!(ok_text(&output), "uncated]");
    assert_eq!(output.value["outcome"], json!("cancellation-requested"));
    assert_eq!(job.cancels(), [None]);
}

#[tokio::test(start_paused = true)]
async fn cancel_failure_is_bounded_and_leaves_the_job_untouched() {
    // C-115
    let fx = Fx::default_config();
    fx.start(
        FakeProducer::new("bash", "sleep 60")
            .output_limit_bytes(64)
            .on_cancel(OnCancel::Throw("cancel failed: ".repeat(100))),
        None,
    );
    let output = fx.call("job_kill", json!({"job_id": "bash-1"}), None).await;
    assert_eq!(output.is_error, true);
    assert_eq!(
        output.text(),
        "cancel failed: cancel failed: cancel failed: \n[result truncated]"
    );
    let snapshot = fx.get("bash-1");
    assert_eq!(
        (snapshot.status, snapshot.reported),
        (JobStatus::Running, false)
    );
}

#[tokio::test(start_paused = true)]
async fn kill_of_a_finished_job_does_not_consume_output() {
    // C-117
    let fx = Fx::default_config();
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), None);
    job.emit("unread tail");
    job.settle(JobOutcome::completed().with_detail("exit code: 0"));
    settle().await;
    let output = fx.call("job_kill", json!({"job_id": "bash-1"}), None).await;
    assert_eq!(
        output,
        ToolOutput::success(
            json!({"outcome": "already-finished", "job": {"id": "bash-1", "kind": "bash", "label": "sleep 60", "status": "completed", "detail": "exit code: 0", "startedAt": T0, "finishedAt": T0}}),
            "job bash-1 had already finished [status: completed, exit code: 0]"
        )
    );
    assert_eq!(job.cancels(), Vec::<Option<String>>::new());
    let read = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(
        ok_text(&read),
        "unread tail\n[status: completed, exit code: 0]"
    );
}

#[tokio::test(start_paused = true)]
async fn job_list_renders_one_line_per_visible_job_and_is_never_capped() {
    let fx = Fx::default_config();
    assert_eq!(
        fx.call("job_list", json!({}), None).await,
        ToolOutput::success(json!([]), "(no background jobs)")
    );
    let alice = fx.agent("alice");
    let bob = fx.agent("bob");
    let (_, first) = fx.start(
        FakeProducer::new("bash", "pnpm test").output_limit_bytes(8),
        Some(&alice),
    );
    fx.start(FakeProducer::new("subagent", "summarize notes"), None);
    fx.start(FakeProducer::new("bash", "bob's build"), Some(&bob));
    first.settle(JobOutcome::completed().with_detail("exit code: 0"));
    settle().await;
    fx.clock.advance(Duration::from_millis(1500)).await;
    let output = fx
        .call("job_list", json!({"ignored": true}), Some("alice"))
        .await;
    assert_eq!(
        output,
        ToolOutput::success(
            json!([
                {"id": "bash-1", "kind": "bash", "label": "pnpm test", "status": "completed", "detail": "exit code: 0", "startedAt": T0, "finishedAt": T0},
                {"id": "subagent-1", "kind": "subagent", "label": "summarize notes", "status": "running", "startedAt": T0}
            ]),
            "bash-1 [bash] completed — pnpm test\nsubagent-1 [subagent] running — summarize notes"
        )
    );
    assert_eq!(
        fx.call("job_list", json!({}), None).await.text(),
        "subagent-1 [subagent] running — summarize notes"
    );
}

#[tokio::test(start_paused = true)]
async fn a_live_progress_line_is_not_model_facing() {
    // Decision 8: the progress line shows as the snapshot's detail for observers only.
    let fx = Fx::default_config();
    let (_, job) = fx.start(FakeProducer::new("bash", "build").with_progress(), None);
    job.set_progress("3/10 crates");
    assert_eq!(fx.get("bash-1").detail.as_deref(), Some("3/10 crates"));
    let output = fx
        .call("job_output", json!({"job_id": "bash-1"}), None)
        .await;
    assert_eq!(ok_text(&output), "(no new output)\n[status: running]");
    assert_eq!(output.value["job"].get("detail"), None);
}

/// Each registered tool presents the card of todo-jobs §5.4 through `Tool::present_call`.
#[test]
fn registered_tools_present_their_call_cards() {
    let fx = Fx::default_config();
    let card = |name: &str, args: serde_json::Value| {
        fx.host
            .tools()
            .find(name, None)
            .and_then(|tool| tool.present_call(&args))
    };
    assert_eq!(
        card("job_output", json!({"job_id": "bash-1"})),
        Some(
            json!({"card":"generic","title":"Read output from background job bash-1","kind":"read","rawInput":"bash-1"})
        )
    );
    assert_eq!(
        card("job_list", json!({})),
        Some(json!({"card":"generic","title":"List background jobs","kind":"read"}))
    );
    assert_eq!(
        card("job_kill", json!({"job_id": "subagent-2"})),
        Some(
            json!({"card":"generic","title":"Kill background job subagent-2","kind":"execute","rawInput":"subagent-2"})
        )
    );
}
