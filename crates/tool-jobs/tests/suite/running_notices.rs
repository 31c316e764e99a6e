//! Notices a running job raises through its voice: delivered to its owner like a completion
//! notice (a followup that wakes an idle owner within the wake budget, injected into a busy
//! turn), about the job's notice subject, and silent once the job settled.

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::Subject;
use turnkit_jobs::JobOutcome;
use turnkit_testkit::settle;

use super::fixture::{FakeProducer, Fx, notice};

const SAID: &str = "background job bash-1 (bash: pnpm test) says: 3 of 10 suites failed";

#[tokio::test(start_paused = true)]
async fn a_running_jobs_notice_wakes_an_idle_owner_and_is_injected_into_a_busy_turn() {
    let fx = Fx::default_config();
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    assert!(job.say("failures", "3 of 10 suites failed"));
    settle().await;
    assert_eq!(
        fx.take(),
        [
            format!("followup s1: {SAID}"),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {SAID}"),
            "turn s1 end".to_owned(),
        ]
    );
    agent.start_turn();
    assert!(job.say("failures", "4 of 10 suites failed"));
    settle().await;
    agent.end_turn();
    settle().await;
    let later = "background job bash-1 (bash: pnpm test) says: 4 of 10 suites failed";
    assert_eq!(
        fx.take(),
        [
            "turn s1 start".to_owned(),
            format!("inject s1: {later}"),
            format!("claimed s1 (tool-jobs): {later}"),
            "turn s1 end".to_owned(),
        ]
    );
    // The job is still running; its settlement notice follows as always, and after it the
    // voice is closed.
    job.settle(JobOutcome::completed().with_detail("exit code: 0"));
    settle().await;
    assert!(!job.say("failures", "too late"));
    settle().await;
    let end = notice(
        "bash-1",
        "bash",
        "pnpm test",
        "[status: completed, exit code: 0]",
    );
    assert_eq!(
        fx.take(),
        [
            format!("followup s1: {end}"),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {end}"),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn running_notices_spend_the_owners_wake_budget() {
    let fx = Fx::new(json!({"maxConsecutiveWakes": 1}));
    let agent = fx.agent("s1");
    let (_, job) = fx.start(FakeProducer::new("bash", "pnpm test"), Some(&agent));
    assert!(job.say("a", "first"));
    settle().await;
    assert!(job.say("b", "second"));
    settle().await;
    let says = |text: &str| format!("background job bash-1 (bash: pnpm test) says: {text}");
    assert_eq!(
        fx.take(),
        [
            format!("followup s1: {}", says("first")),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {}", says("first")),
            "turn s1 end".to_owned(),
            // The budget is spent: the second waits, injected, for the next turn.
            format!("inject s1: {}", says("second")),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_running_notice_is_about_the_jobs_notice_subject_not_the_job() {
    let fx = Fx::default_config();
    let (_, _job) = fx.start(FakeProducer::new("bash", "pnpm test"), None);
    let notice = turnkit_jobs::JobNotice {
        key: "failures".to_owned(),
        text: "1 failed".to_owned(),
    };
    let message = turnkit_tool_jobs::running_notice_message(&fx.get("bash-1"), &notice);
    assert_eq!(
        message.joined_text(),
        "background job bash-1 (bash: pnpm test) says: 1 failed"
    );
    assert_eq!(
        message.subjects,
        vec![Subject::job_notice("bash-1", "failures")]
    );
    assert!(!message.is_about(&Subject::job("bash-1")));
}
