//! A child whose start the parent's job journal cannot save never takes a model step: its
//! driver is spawned only once the registry drives the job, and a start refused by the
//! journal is stopped before that.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AppendError, Harness, HookedSession, MemoryStore, PersistenceError, SessionHeader,
    SessionHooks, SessionStore, UserMessage, async_trait,
};
use turnkit_host::HostKit;
use turnkit_jobs::{JobId, JobStatus};
use turnkit_subagent::{ChildContext, ChildHost, ChildModel, ChildStep, SubagentConfig};
use turnkit_testkit::{ManualClock, settle};

/// A child model that counts its steps.
struct Counting {
    steps: AtomicUsize,
}

#[async_trait]
impl ChildModel for Counting {
    async fn step(&self, _child: &ChildContext, _input: Vec<UserMessage>) -> ChildStep {
        self.steps.fetch_add(1, Ordering::SeqCst);
        ChildStep::Answer("done".to_owned())
    }
}

/// A host with the job registry (journaled), tool-jobs and subagent installed, a child
/// model that counts its steps, and the parent's session `s1` in a memory store.
struct Fixture {
    kit: Arc<HostKit>,
    jobs: turnkit_jobs_local::Installed,
    model: Arc<Counting>,
    session: Arc<dyn turnkit_core::Session>,
    _families: (turnkit_tool_jobs::Installed, turnkit_subagent::Installed),
}

fn fixture() -> Fixture {
    let clock = Arc::new(ManualClock::at_default());
    let kit = Arc::new(HostKit::new(clock.clone()));
    let harness: Arc<dyn Harness> = kit.clone();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new(clock));
    let jobs = turnkit_jobs_local::install(
        &harness,
        turnkit_jobs_local::JobsConfig::default().with_journal(true),
    )
    .unwrap();
    let tool_jobs = turnkit_tool_jobs::install(&harness, Default::default()).unwrap();
    let model = Arc::new(Counting {
        steps: AtomicUsize::new(0),
    });
    kit.services()
        .insert(ChildHost::new(&kit, store.clone(), model.clone()));
    let subagents = turnkit_subagent::install(&harness, SubagentConfig::default()).unwrap();
    let session = store.create(SessionHeader::new("s1")).unwrap();
    Fixture {
        kit,
        jobs,
        model,
        session,
        _families: (tool_jobs, subagents),
    }
}

/// The parent's session refuses its `job/start`, noting how many tasks the runtime had
/// alive at that moment (the child's driver, if it was already spawned, is one of them).
struct RefuseJobStart {
    alive_at_append: Mutex<Option<usize>>,
}

impl SessionHooks for RefuseJobStart {
    fn before_append(&self, r#type: &str) -> Result<(), AppendError> {
        if r#type != "job/start" {
            return Ok(());
        }
        let alive = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        *self.alive_at_append.lock().unwrap() = Some(alive);
        Err(AppendError::Rejected("refused for the test".to_owned()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_child_whose_start_cannot_be_saved_takes_no_model_step() {
    let Fixture {
        kit,
        jobs,
        model,
        session,
        _families,
    } = fixture();
    let hooks = Arc::new(RefuseJobStart {
        alive_at_append: Mutex::new(None),
    });
    let parent = kit.start_agent(Arc::new(HookedSession::new(session, hooks.clone())));
    settle().await;
    let alive_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();

    let result = kit
        .call(
            "agent",
            json!({"prompt": "work", "run_in_background": true}),
            Some(parent.as_dyn()),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        result.text(),
        "Error: background job subagent-1 was stopped: its start could not be saved: append rejected: refused for the test"
    );
    let settled = jobs
        .registry()
        .wait(
            &JobId::from("subagent-1"),
            Duration::from_secs(30),
            Some(parent.id()),
            None,
        )
        .await
        .unwrap();
    // No child driver existed while the start was being recorded.
    assert_eq!(*hooks.alive_at_append.lock().unwrap(), Some(alive_before));
    assert_eq!(settled.status, JobStatus::Killed);
    assert_eq!(model.steps.load(Ordering::SeqCst), 0);
    jobs.dispose().await;
}

/// The parent's session refuses every flush.
struct RefuseFlush;

#[async_trait]
impl SessionHooks for RefuseFlush {
    async fn before_flush(&self) -> Result<(), PersistenceError> {
        Err(PersistenceError::Failed("refused for the test".to_owned()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_child_whose_start_cannot_be_flushed_takes_no_model_step() {
    let Fixture {
        kit,
        jobs,
        model,
        session,
        _families,
    } = fixture();
    let parent = kit.start_agent(Arc::new(HookedSession::new(session, RefuseFlush)));
    settle().await;
    for background in [true, false] {
        let result = kit
            .call(
                "agent",
                json!({"prompt": "work", "run_in_background": background}),
                Some(parent.as_dyn()),
                CancellationToken::new(),
            )
            .await;
        let n = if background { 1 } else { 2 };
        assert_eq!(
            result.text(),
            format!(
                "Error: background job subagent-{n} was stopped: its start could not be saved: \
                 flush failed: refused for the test"
            )
        );
        let settled = jobs
            .registry()
            .wait(
                &JobId::from(format!("subagent-{n}")),
                Duration::from_secs(30),
                Some(parent.id()),
                None,
            )
            .await
            .unwrap();
        assert_eq!(settled.status, JobStatus::Killed);
    }
    settle().await;
    assert_eq!(model.steps.load(Ordering::SeqCst), 0);
    jobs.dispose().await;
}
