//! The reporter driven directly with terminal snapshots, over the testkit's real turn loop.
//! (Settlement through the registry is covered by the integration tests.)

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use turnkit_core::{Agent, SessionHeader, Subject};
use turnkit_jobs::{JobSnapshot, JobStatus};
use turnkit_testkit::{HostRecord, ManualClock, MemoryAgent, MemoryHarness, settle};

use super::*;

struct Host {
    host: Arc<MemoryHarness>,
    records: Arc<Mutex<Vec<HostRecord>>>,
}

impl Host {
    fn new() -> Self {
        let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
        let records = Arc::new(Mutex::new(Vec::new()));
        let sink = records.clone();
        host.set_recorder(Arc::new(move |record| sink.lock().unwrap().push(record)));
        Self { host, records }
    }

    fn agent(&self, id: &str) -> Arc<MemoryAgent> {
        self.host.create_session(SessionHeader::new(id)).unwrap()
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.records.lock().unwrap())
            .into_iter()
            .map(|record| match record {
                HostRecord::Followup { session, text } => format!("followup {session}: {text}"),
                HostRecord::Inject { session, text } => format!("inject {session}: {text}"),
                HostRecord::Claimed {
                    session,
                    source,
                    text,
                } => format!("claimed {session} ({source}): {text}"),
                HostRecord::Turn { session, phase } => format!("turn {session} {phase}"),
            })
            .collect()
    }
}

fn snapshot(id: &str, label: &str, status: JobStatus, detail: Option<&str>) -> JobSnapshot {
    JobSnapshot {
        id: id.into(),
        kind: id.rsplit_once('-').map_or("bash", |(kind, _)| kind).into(),
        label: label.into(),
        output_limit_bytes: None,
        owner_session: Some("s1".into()),
        status,
        detail: detail.map(Into::into),
        started_at: 0,
        finished_at: Some(1),
        reported: false,
    }
}

fn done(id: &str) -> JobSnapshot {
    snapshot(id, "sleep 60", JobStatus::Completed, Some("exit code: 0"))
}

fn notice(id: &str) -> String {
    format!(
        "background job {id} (bash: sleep 60) finished [status: completed, exit code: 0]. Read its output with job_output."
    )
}

fn deliver(reporter: &Arc<Reporter>, snapshot: &JobSnapshot, owner: &Arc<MemoryAgent>) {
    let listener = reporter.listener();
    let result = listener(snapshot, Some(&owner.as_dyn()));
    assert!(matches!(result, Ok(None)), "listener failed");
}

#[test]
fn notice_message_shape() {
    let message = notice_message(&snapshot(
        "bash-1",
        "pnpm test",
        JobStatus::Completed,
        Some("exit code: 0"),
    ));
    assert_eq!(
        message.joined_text(),
        "background job bash-1 (bash: pnpm test) finished [status: completed, exit code: 0]. Read its output with job_output."
    );
    assert_eq!(
        message.source,
        MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: Some("notice".to_owned()),
            summary: Some("bash pnpm test [status: completed, exit code: 0]".to_owned()),
        }
    );
    assert_eq!(message.subjects, vec![Subject::job("bash-1")]);
}

#[test]
fn bounded_notices_keep_the_id_and_the_instruction() {
    // C-121, C-122, C-123: the fitted text plus the unbounded 120-character summary.
    let label = "x".repeat(1000);
    let detail = "d".repeat(1000);
    let cases: Vec<(&str, &str, Option<&str>, u64, &str)> = vec![
        (
            "subagent-1",
            &label,
            Some(&detail),
            61,
            "background job subagent-1\nDone; job_output.",
        ),
        (
            "subagent-2",
            &label,
            Some(&detail),
            80,
            "background job subagent-2 (subagent: xxxxxx\n[notice truncated]\nDone; job_output.",
        ),
        (
            "pty-send-100",
            &label,
            Some(&detail),
            64,
            "background job pty-send-100\n[notice truncated]\nDone; job_output.",
        ),
        ("pty-send-1", &label[..100], None, 8, "_output."),
        (
            "pty-send-2",
            &label[..100],
            None,
            32,
            "background job\nDone; job_output.",
        ),
    ];
    for (id, label, detail, limit, expected) in cases {
        let mut snap = snapshot(id, label, JobStatus::Completed, detail);
        snap.output_limit_bytes = Some(limit);
        let message = notice_message(&snap);
        assert_eq!(message.joined_text(), expected, "{id}");
        assert!(message.joined_text().len() as u64 <= limit);
    }
    let mut snap = snapshot("subagent-1", &label, JobStatus::Completed, Some(&detail));
    snap.output_limit_bytes = Some(61);
    let MessageSource::Plugin { summary, .. } = notice_message(&snap).source else {
        panic!("plugin source expected");
    };
    assert_eq!(summary, Some(format!("subagent {}…", "x".repeat(110))));
}

#[test]
fn a_live_progress_line_never_reaches_the_notice() {
    // Decision 8: progress shows as `detail` while running; only the outcome detail of a
    // terminal snapshot is model-facing.
    let running = snapshot("bash-1", "ls", JobStatus::Running, Some("3/10"));
    assert_eq!(
        notice_message(&running).joined_text(),
        "background job bash-1 (bash: ls) finished [status: running]. Read its output with job_output."
    );
}

#[tokio::test(start_paused = true)]
async fn idle_owner_is_woken_and_busy_owner_is_injected() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 3);
    deliver(&reporter, &done("bash-1"), &agent);
    settle().await;
    assert_eq!(
        host.take(),
        [
            format!("followup s1: {}", notice("bash-1")),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {}", notice("bash-1")),
            "turn s1 end".to_owned(),
        ]
    );
    agent.start_turn();
    deliver(&reporter, &done("bash-2"), &agent);
    deliver(&reporter, &done("bash-3"), &agent);
    settle().await;
    agent.end_turn();
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            format!("inject s1: {}", notice("bash-2")),
            format!("inject s1: {}", notice("bash-3")),
            format!("claimed s1 (tool-jobs): {}", notice("bash-2")),
            format!("claimed s1 (tool-jobs): {}", notice("bash-3")),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn reported_and_unowned_settlements_are_silent() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 3);
    let mut reported = done("bash-1");
    reported.reported = true;
    deliver(&reporter, &reported, &agent);
    let listener = reporter.listener();
    assert!(matches!(listener(&done("bash-2"), None), Ok(None)));
    settle().await;
    assert_eq!(host.take(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn quiet_delivery_never_wakes() {
    // C-125
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Quiet, 3);
    deliver(&reporter, &done("bash-1"), &agent);
    settle().await;
    assert_eq!(host.take(), [format!("inject s1: {}", notice("bash-1"))]);
    assert_eq!(agent.pending_injected(), [notice("bash-1")]);
    assert_eq!(agent.turns(), 0);
}

#[tokio::test(start_paused = true)]
async fn spent_budget_falls_back_to_inject_until_a_user_message() {
    // C-126 and C-127 with a real turn loop.
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 2);
    for id in ["bash-1", "bash-2", "bash-3"] {
        deliver(&reporter, &done(id), &agent);
        settle().await;
    }
    let lanes: Vec<String> = host
        .take()
        .into_iter()
        .filter(|line| line.starts_with("followup") || line.starts_with("inject"))
        .collect();
    assert_eq!(
        lanes,
        [
            format!("followup s1: {}", notice("bash-1")),
            format!("followup s1: {}", notice("bash-2")),
            format!("inject s1: {}", notice("bash-3")),
        ]
    );
    assert_eq!(agent.pending_injected(), [notice("bash-3")]);
    // Claiming the plugin's own notices did not restore the budget; a user message does.
    agent.send_user("status?", None).unwrap();
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            "claimed s1 (user): status?".to_owned(),
            format!("claimed s1 (tool-jobs): {}", notice("bash-3")),
            "turn s1 end".to_owned(),
        ]
    );
    deliver(&reporter, &done("bash-4"), &agent);
    settle().await;
    assert_eq!(host.take()[0], format!("followup s1: {}", notice("bash-4")));
}

#[tokio::test(start_paused = true)]
async fn a_busy_owner_does_not_spend_budget() {
    // C-129
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 1);
    agent.start_turn();
    deliver(&reporter, &done("bash-1"), &agent);
    agent.end_turn();
    settle().await;
    deliver(&reporter, &done("bash-2"), &agent);
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            format!("inject s1: {}", notice("bash-1")),
            format!("claimed s1 (tool-jobs): {}", notice("bash-1")),
            "turn s1 end".to_owned(),
            format!("followup s1: {}", notice("bash-2")),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {}", notice("bash-2")),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_notice_stranded_by_the_idle_transition_becomes_a_followup() {
    // Decision 12: the settlement lands after the loop's last inbox check but before the
    // agent reports idle (the testkit's pre-idle hook is exactly that window).
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 3);
    let hook_reporter = reporter.clone();
    let hook_agent = Arc::downgrade(&agent);
    let mut fired = false;
    agent.set_pre_idle_hook(move || {
        if fired {
            return;
        }
        fired = true;
        if let Some(agent) = hook_agent.upgrade() {
            assert_eq!(agent.status(), turnkit_core::AgentStatus::Running);
            deliver(&hook_reporter, &done("bash-1"), &agent);
        }
    });
    agent.start_turn();
    agent.end_turn();
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            "turn s1 end".to_owned(),
            format!("inject s1: {}", notice("bash-1")),
            format!("followup s1: {}", notice("bash-1")),
            "turn s1 start".to_owned(),
            format!("claimed s1 (tool-jobs): {}", notice("bash-1")),
            "turn s1 end".to_owned(),
        ]
    );
    assert_eq!(agent.pending_injected(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_stranded_notice_stays_injected_when_the_budget_is_spent() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 1);
    deliver(&reporter, &done("bash-1"), &agent);
    settle().await;
    let hook_reporter = reporter.clone();
    let hook_agent = Arc::downgrade(&agent);
    let mut fired = false;
    agent.set_pre_idle_hook(move || {
        if !fired {
            fired = true;
            if let Some(agent) = hook_agent.upgrade() {
                deliver(&hook_reporter, &done("bash-2"), &agent);
            }
        }
    });
    host.take();
    agent.start_turn();
    agent.end_turn();
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            "turn s1 end".to_owned(),
            format!("inject s1: {}", notice("bash-2")),
        ]
    );
    assert_eq!(agent.pending_injected(), [notice("bash-2")]);
}

#[tokio::test(start_paused = true)]
async fn a_quiet_mount_leaves_a_stranded_notice_alone() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Quiet, 3);
    agent.start_turn();
    deliver(&reporter, &done("bash-1"), &agent);
    // The notice is injected while the turn is open, so it is claimed before the turn ends.
    agent.end_turn();
    settle().await;
    assert_eq!(
        host.take(),
        [
            "turn s1 start".to_owned(),
            format!("inject s1: {}", notice("bash-1")),
            format!("claimed s1 (tool-jobs): {}", notice("bash-1")),
            "turn s1 end".to_owned(),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn budgets_are_per_exact_owner_instance() {
    // A same-id replacement starts with a full budget; the old instance keeps its notice.
    let host = Host::new();
    let old = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 1);
    deliver(&reporter, &done("bash-1"), &old);
    settle().await;
    old.dispose().await;
    let replacement = host.host.resume(&"s1".into()).unwrap();
    host.take();
    deliver(&reporter, &done("bash-2"), &replacement);
    settle().await;
    assert_eq!(host.take()[0], format!("followup s1: {}", notice("bash-2")));
}

#[tokio::test(start_paused = true)]
async fn a_closed_mount_delivers_nothing() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 3);
    reporter.close();
    deliver(&reporter, &done("bash-1"), &agent);
    settle().await;
    assert_eq!(host.take(), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn a_disposed_owner_makes_the_listener_report_the_refusal() {
    let host = Host::new();
    let agent = host.agent("s1");
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 3);
    agent.dispose().await;
    let listener = reporter.listener();
    let Err(error) = listener(&done("bash-1"), Some(&agent.as_dyn())) else {
        panic!("a disposed owner refuses the notice");
    };
    assert_eq!(error.to_string(), "agent s1 is disposed");
}

#[test]
fn lost_notice_message_names_every_job_in_one_message() {
    let lost = |id: &str, label: &str| {
        snapshot(
            id,
            label,
            JobStatus::Failed,
            Some(turnkit_jobs::LOST_DETAIL),
        )
    };
    let message = lost_notice_message(&[lost("bash-2", "sleep 600"), lost("subagent-1", "draft")]);
    assert_eq!(
        message.joined_text(),
        "background job bash-2 (bash: sleep 600) was lost [status: failed, the host stopped while it ran]. Its output went with the stopped host.\n\
         background job subagent-1 (subagent: draft) was lost [status: failed, the host stopped while it ran]. Its output went with the stopped host."
    );
    let summary = "bash sleep 600 [status: failed, the host stopped while it ran]; subagent draft [status: failed, the host stopped while …";
    assert_eq!(summary.chars().count(), 120);
    assert_eq!(
        message.source,
        MessageSource::Plugin {
            plugin: "tool-jobs".to_owned(),
            form: Some("notice".to_owned()),
            summary: Some(summary.to_owned()),
        }
    );
    assert_eq!(
        message.subjects,
        vec![Subject::job("bash-2"), Subject::job("subagent-1")]
    );
}

#[tokio::test(start_paused = true)]
async fn the_lost_notice_wakes_an_idle_owner_within_the_budget_and_is_injected_after() {
    let clock = turnkit_testkit::ManualClock::at_default();
    let host = MemoryHarness::new(Arc::new(clock));
    let owner = host
        .create_session(turnkit_core::SessionHeader::new("s1"))
        .unwrap();
    host.set_auto_turns(false);
    let reporter = Reporter::new(CompletionDelivery::Wakeup, 1);
    let listener = reporter.lost_listener();
    let lost = [snapshot(
        "bash-1",
        "sleep 600",
        JobStatus::Failed,
        Some(turnkit_jobs::LOST_DETAIL),
    )];
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = records.clone();
    host.set_recorder(Arc::new(move |record| {
        let lane = match record {
            HostRecord::Followup { .. } => "followup",
            HostRecord::Inject { .. } => "inject",
            _ => return,
        };
        sink.lock().unwrap().push(lane);
    }));
    let first = listener(&lost, &owner.as_dyn()).unwrap();
    let second = listener(&lost, &owner.as_dyn()).unwrap();
    // Each answer is the id of the message handed over (the registry waits for its claim).
    assert!(first.is_some() && second.is_some() && first != second);
    assert_eq!(*records.lock().unwrap(), ["followup", "inject"]);
    // A closed mount delivers nothing and says so.
    reporter.close();
    assert_eq!(listener(&lost, &owner.as_dyn()).unwrap(), None);
    assert_eq!(listener(&[], &owner.as_dyn()).unwrap(), None);
}
