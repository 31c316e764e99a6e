//! A child whose start the parent's job journal cannot save never takes a model step: its
//! driver starts only once the registry has recorded the job, and a start refused by the
//! journal is stopped before that.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AppendError, Harness, HookedSession, MemoryStore, SessionHeader, SessionHooks,
    SessionStore, UserMessage, async_trait,
};
use turnkit_host::HostKit;
use turnkit_jobs::{JobId, JobStatus};
use turnkit_subagent::{ChildContext, ChildHost, ChildModel, ChildStep, SubagentConfig};
use turnkit_testkit::ManualClock;

/// A child model that counts its steps and says when one began.
struct Counting {
    steps: AtomicUsize,
    began: Mutex<Sender<()>>,
}

#[async_trait]
impl ChildModel for Counting {
    async fn step(&self, _child: &ChildContext, _input: Vec<UserMessage>) -> ChildStep {
        self.steps.fetch_add(1, Ordering::SeqCst);
        let _ = self.began.lock().unwrap().send(());
        ChildStep::Answer("done".to_owned())
    }
}

/// The parent's session refuses its `job/start`, but only after giving a child that already
/// runs (on another worker) the time to take its first step.
struct RefuseJobStart {
    began: Mutex<Receiver<()>>,
}

impl SessionHooks for RefuseJobStart {
    fn before_append(&self, r#type: &str) -> Result<(), AppendError> {
        if r#type != "job/start" {
            return Ok(());
        }
        // Bounded: with the driver started before the start is saved, the step arrives
        // within it; otherwise nothing arrives and the append is refused after it.
        let _ = self
            .began
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_millis(500));
        Err(AppendError::Rejected("refused for the test".to_owned()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_whose_start_cannot_be_saved_takes_no_model_step() {
    let clock = Arc::new(ManualClock::at_default());
    let kit = Arc::new(HostKit::new(clock.clone()));
    let harness: Arc<dyn Harness> = kit.clone();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new(clock));
    let jobs = turnkit_jobs_local::install(
        &harness,
        turnkit_jobs_local::JobsConfig::default().with_journal(true),
    )
    .unwrap();
    let _tool_jobs = turnkit_tool_jobs::install(&harness, Default::default()).unwrap();
    let (began, steps_began) = channel();
    let model = Arc::new(Counting {
        steps: AtomicUsize::new(0),
        began: Mutex::new(began),
    });
    kit.services()
        .insert(ChildHost::new(&kit, store.clone(), model.clone()));
    let _subagents = turnkit_subagent::install(&harness, SubagentConfig::default()).unwrap();
    let session = store.create(SessionHeader::new("s1")).unwrap();
    let hooks = RefuseJobStart {
        began: Mutex::new(steps_began),
    };
    let parent = kit.start_agent(Arc::new(HookedSession::new(session, hooks)));

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
    assert_eq!(settled.status, JobStatus::Killed);
    assert_eq!(model.steps.load(Ordering::SeqCst), 0);
    jobs.dispose().await;
}
