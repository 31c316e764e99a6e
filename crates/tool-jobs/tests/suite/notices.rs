//! Completion notices through the registry's settlement (cases-todo-jobs D, §5.7, §5.8,
//! decision 12).

use std::sync::{Arc, mpsc};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{Agent, RegistrationScope, ScopeKey};
use turnkit_jobs::JobOutcome;
use turnkit_testkit::settle;
use turnkit_tool_jobs::{ToolJobsConfig, install_scoped};

use super::fixture::{FakeProducer, Fx, OnCancel, describe, notice};

fn exit0(id: &str, label: &str) -> String {
    notice(id, "bash", label, "[status: completed, exit code: 0]")
}

fn completed() -> JobOutcome {
    JobOutcome::completed().with_detail("exit code: 0")
}

#[tokio::test(start_paused = true)]
async fn an_idle_owner_is_woken_by_a_followup_turn() {
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    job.settle(completed());
    settle().await;
    let text = exit0("bash-1", "pnpm test");
    assert_eq!(
        fx.take(),
        [
            format!("followup s1: {text}"),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {text}"),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_owner_gets_both_notices_in_its_open_turn() {
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, one) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    let (_, two) = fx.start(FakeProducer::new("bash", "pnpm lint"), Some(&agent));
    agent.start_turn();
    one.settle(completed());
    two.settle(completed());
    settle().await;
    agent.end_turn();
    settle().await;
    assert_eq!(
        fx.take(),
        [
            "turn s1 start".to_owned(),
            format!("inject s1: {}", exit0("bash-1", "pnpm test")),
            format!("inject s1: {}", exit0("bash-2", "pnpm lint")),
            format!("claimed s1 (tool-jobs): {}", exit0("bash-1", "pnpm test")),
            format!("claimed s1 (tool-jobs): {}", exit0("bash-2", "pnpm lint")),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn two_scoped_mounts_deliver_one_notice() {
    // C-119, adapted: the testkit's agents report only their own scope key, so the two
    // mounts are scoped to the owner's key and to an unrelated key.
    let fx = Fx::without_tool_jobs();
    let agent = fx.agent("sess-scoped");
    let _a = install_scoped(
        &fx.harness,
        ToolJobsConfig::default(),
        RegistrationScope::Scoped(ScopeKey::from("sess-scoped")),
    )
    .unwrap();
    let _b = install_scoped(
        &fx.harness,
        ToolJobsConfig::default(),
        RegistrationScope::Scoped(ScopeKey::from("preset-b")),
    )
    .unwrap();
    agent.start_turn();
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    job.settle(completed());
    settle().await;
    assert_eq!(
        fx.notices(),
        [format!(
            "inject sess-scoped: {}",
            exit0("bash-1", "pnpm test")
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn pty_minimum_limit_of_64() {
    // C-122: 99 settled pty-send jobs first, so the id is pty-send-100.
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    agent.start_turn();
    for _ in 0..99 {
        let (_, job) = fx.start(FakeProducer::new("pty-send", "s: ls"), None);
        job.settle(JobOutcome::completed());
        settle().await;
    }
    let (id, job) = fx.start(
        FakeProducer::new("pty-send", "x".repeat(1000)).output_limit_bytes(64),
        Some(&agent),
    );
    assert_eq!(id.as_str(), "pty-send-100");
    job.settle(JobOutcome::completed().with_detail("d".repeat(1000)));
    settle().await;
    let expected = "background job pty-send-100\n[notice truncated]\nDone; job_output.";
    assert_eq!(expected.len(), 64);
    assert_eq!(fx.notices(), [format!("inject s1: {expected}")]);
}

#[tokio::test(start_paused = true)]
async fn quiet_delivery_never_wakes() {
    // C-125
    let fx = Fx::new(json!({"completionDelivery": "quiet"}));
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    job.settle(completed());
    settle().await;
    assert_eq!(
        fx.take(),
        [format!("inject s1: {}", exit0("bash-1", "pnpm test"))]
    );
    assert_eq!(agent.turns(), 0);
    assert_eq!(agent.pending_injected(), [exit0("bash-1", "pnpm test")]);
}

#[tokio::test(start_paused = true)]
async fn a_spent_wake_budget_falls_back_to_inject() {
    // C-126
    let fx = Fx::new(json!({"maxConsecutiveWakes": 2}));
    let agent = fx.agent("s1");
    for n in 1..=3 {
        let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
        job.settle(completed());
        settle().await;
        assert_eq!(agent.status(), turnkit_core::AgentStatus::Idle, "round {n}");
    }
    let lanes: Vec<String> = fx
        .notices()
        .into_iter()
        .map(|line| line.split(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(lanes, ["followup s1", "followup s1", "inject s1"]);
}

#[tokio::test(start_paused = true)]
async fn a_user_message_restores_the_budget() {
    // C-127
    let fx = Fx::new(json!({"maxConsecutiveWakes": 1}));
    let agent = fx.agent("s1");
    for _ in 0..2 {
        let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
        job.settle(completed());
        settle().await;
    }
    let lanes: Vec<String> = fx
        .notices()
        .into_iter()
        .map(|line| line.split(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(lanes, ["followup s1", "inject s1"]);
    agent.send_user("hello", None).unwrap();
    settle().await;
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    job.settle(completed());
    settle().await;
    assert_eq!(
        fx.take(),
        [
            "turn s1 start".to_owned(),
            "claimed s1 (user): hello".to_owned(),
            format!("claimed s1 (tool-jobs): {}", exit0("bash-2", "sleep 60")),
            "turn s1 end".to_owned(),
            format!("followup s1: {}", exit0("bash-3", "sleep 60")),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {}", exit0("bash-3", "sleep 60")),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_owner_does_not_spend_budget() {
    // C-129
    let fx = Fx::new(json!({"maxConsecutiveWakes": 1}));
    let agent = fx.agent("s1");
    let (_, one) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    let (_, two) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    agent.start_turn();
    one.settle(completed());
    settle().await;
    agent.end_turn();
    settle().await;
    two.settle(completed());
    settle().await;
    let lanes: Vec<String> = fx
        .notices()
        .into_iter()
        .map(|line| line.split(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(lanes, ["inject s1", "followup s1"]);
}

#[tokio::test(start_paused = true)]
async fn teardown_never_notifies() {
    // C-130: owner disposal with a cancel that settles, and with one that throws while
    // `done` never settles.
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, settles) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    let (_, throws) = fx.start(
        FakeProducer::new("bash", "sleep 61").on_cancel(OnCancel::Throw("cancel boom".into())),
        Some(&agent),
    );
    let logs = turnkit_testkit::LogCapture::start();
    agent.dispose().await;
    settle().await;
    assert_eq!(fx.notices(), Vec::<String>::new());
    assert!(
        logs.text().contains("work may be orphaned"),
        "{}",
        logs.text()
    );
    assert_eq!(settles.cancels(), [Some("owner disposed".to_owned())]);
    assert_eq!(throws.cancels(), [Some("owner disposed".to_owned())]);
    assert_eq!(
        fx.call("job_list", json!({}), None).await.text(),
        "(no background jobs)"
    );
}

#[tokio::test(start_paused = true)]
async fn service_disposal_never_notifies() {
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    fx.jobs.dispose().await;
    settle().await;
    assert_eq!(fx.notices(), Vec::<String>::new());
    assert_eq!(job.cancels(), [Some("jobs service disposed".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn a_model_kill_suppresses_the_notice() {
    // C-131
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    agent.start_turn();
    let (_, job) = fx.start(
        FakeProducer::new("bash", "sleep 60").on_cancel(OnCancel::Hang),
        Some(&agent),
    );
    let output = fx
        .call("job_kill", json!({"job_id": "bash-1"}), Some("s1"))
        .await;
    assert_eq!(output.text(), "requested cancellation of job bash-1");
    job.settle(JobOutcome::killed());
    settle().await;
    assert_eq!(fx.notices(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_saw_the_settlement_suppresses_the_notice() {
    let fx = Arc::new(Fx::default_config());
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "make"), Some(&agent));
    let caller = fx.clone();
    let pending = tokio::spawn(async move {
        caller
            .call(
                "job_output",
                json!({"job_id": "bash-1", "wait": true}),
                Some("s1"),
            )
            .await
    });
    settle().await;
    job.settle(completed());
    settle().await;
    assert_eq!(
        pending.await.unwrap().text(),
        "(no new output)\n[status: completed, exit code: 0]"
    );
    assert_eq!(fx.notices(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_later_read_does_not_retract_a_sent_notice() {
    // C-133
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    agent.start_turn();
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&agent));
    job.settle(completed());
    settle().await;
    assert_eq!(fx.notices().len(), 1);
    let read = fx
        .call("job_output", json!({"job_id": "bash-1"}), Some("s1"))
        .await;
    assert_eq!(
        read.text(),
        "(no new output)\n[status: completed, exit code: 0]"
    );
    settle().await;
    assert_eq!(fx.notices(), Vec::<String>::new());
    assert_eq!(agent.pending_injected(), [exit0("bash-1", "sleep 60")]);
}

#[tokio::test(start_paused = true)]
async fn unowned_jobs_produce_no_notice() {
    // C-134
    let fx = Fx::default_config();
    fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "sleep 60"), None);
    job.settle(completed());
    settle().await;
    assert_eq!(fx.take(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn the_old_owner_keeps_its_notice() {
    // C-135 and C-137 (adapted: the host's directory no longer lists the owner, because a
    // same-id replacement took its place; delivery never looks the owner up again).
    let fx = Fx::default_config();
    let old = fx.agent("shared");
    old.start_turn();
    let (_, first) = fx.start(FakeProducer::new("bash", "sleep 60"), Some(&old));
    let (_, second) = fx.start(FakeProducer::new("bash", "sleep 61"), Some(&old));
    let replacement = fx.host.resume(&"shared".into()).unwrap();
    assert!(!Arc::ptr_eq(&old, &replacement));
    first.settle(JobOutcome::completed());
    second.settle(JobOutcome::failed());
    settle().await;
    assert_eq!(
        old.pending_injected(),
        [
            notice("bash-1", "bash", "sleep 60", "[status: completed]"),
            notice("bash-2", "bash", "sleep 61", "[status: failed]"),
        ]
    );
    assert_eq!(replacement.pending_injected(), Vec::<String>::new());
    assert_eq!(replacement.pending_input(), Vec::<String>::new());
}

/// Decision 12 through the real registry: the settlement's continuation runs on another
/// worker thread while the owner's turn loop sits between its last inbox check and reporting
/// idle (the testkit's pre-idle hook holds it there until the notice has been injected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settlement_in_the_idle_transition_window_still_wakes_the_owner() {
    let fx = Fx::default_config();
    let (records_tx, records_rx) = mpsc::channel::<String>();
    fx.host.set_recorder(Arc::new(move |record| {
        let _ = records_tx.send(describe(&record));
    }));
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    let (injected_tx, injected_rx) = mpsc::channel::<()>();
    let hook_job = job.clone();
    let mut armed = true;
    agent.set_pre_idle_hook(move || {
        if std::mem::take(&mut armed) {
            hook_job.settle(completed());
            // Bounded real-time guard only; the inject normally arrives within microseconds.
            injected_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the settlement was delivered while the turn was closing");
        }
    });
    let text = exit0("bash-1", "pnpm test");
    let driver = agent.clone();
    let closing = tokio::task::spawn_blocking(move || {
        driver.start_turn();
        driver.end_turn();
    });
    let mut seen = Vec::new();
    while seen.len() < 7 {
        let line = records_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the expected records arrive");
        if line.starts_with("inject") {
            injected_tx.send(()).unwrap();
        }
        seen.push(line);
    }
    closing.await.unwrap();
    assert_eq!(
        seen,
        [
            "turn s1 start".to_owned(),
            "turn s1 end".to_owned(),
            format!("inject s1: {text}"),
            format!("followup s1: {text}"),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {text}"),
            "turn s1 end".to_owned(),
        ]
    );
    assert_eq!(agent.pending_injected(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_quiet_notice_pending_on_disposal_is_never_delivered() {
    // C-138: the host drops a pending injected notice when its agent is disposed.
    let fx = Fx::new(json!({"completionDelivery": "quiet"}));
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    job.settle(completed());
    settle().await;
    assert_eq!(
        fx.take(),
        [format!("inject s1: {}", exit0("bash-1", "pnpm test"))]
    );
    agent.dispose().await;
    assert_eq!(
        agent.send_user("hello", None).unwrap_err().to_string(),
        "agent s1 is disposed"
    );
    agent.start_turn();
    settle().await;
    assert_eq!(fx.take(), Vec::<String>::new(), "no turn ever claims it");
    assert_eq!(agent.turns(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_unmounted_tool_jobs_delivers_nothing() {
    let mut fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    fx.tool_jobs.take().unwrap().dispose();
    job.settle(completed());
    settle().await;
    assert_eq!(fx.take(), Vec::<String>::new());
}
