//! The conformance suite against the production loop, the testkit's agent, and a broken
//! agent shaped like the smallest stub a runtime might write.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use harness_core::{
    Agent, AgentError, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, MemoryStore, Registration, SessionHeader, SessionId, SessionStore,
    UserMessage,
};
use harness_host::LoopAgent;
use harness_testkit::conformance::{self, AGENT_CHECKS, Candidate};
use harness_testkit::{ManualClock, MemoryHarness};
use pretty_assertions::assert_eq;

#[tokio::test(start_paused = true)]
async fn the_production_loop_passes() {
    let store = Arc::new(MemoryStore::new(Arc::new(ManualClock::at_default())));
    let mut n = 0;
    let report = conformance::check_agent(|| {
        n += 1;
        let session = store.create(SessionHeader::new(format!("s{n}"))).unwrap();
        let agent = LoopAgent::new(session);
        let turns = agent.turns();
        tokio::spawn(async move {
            while let Some(mut turn) = turns.next_turn().await {
                let _input = turn.take_input();
                let _late = turn.claim_injected();
                turn.finish();
            }
        });
        let disposed = agent.clone();
        Candidate::new(agent.as_dyn(), move || {
            async move { disposed.dispose().await }.boxed()
        })
    })
    .await;
    assert_eq!(report.failed(), Vec::<&str>::new(), "{report}");
    assert_eq!(report.checks.len(), AGENT_CHECKS.len());
}

#[tokio::test(start_paused = true)]
async fn the_memory_agent_passes() {
    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let mut n = 0;
    let report = conformance::check_agent(|| {
        n += 1;
        let agent = host
            .create_session(SessionHeader::new(format!("s{n}")))
            .unwrap();
        let (host, id) = (host.clone(), SessionId::from(format!("s{n}")));
        Candidate::new(agent.as_dyn(), move || {
            async move {
                host.dispose_agent(&id).await;
            }
            .boxed()
        })
    })
    .await;
    assert_eq!(report.failed(), Vec::<&str>::new(), "{report}");
}

/// Always idle, ignores maintenance and disposal, emits no events: queues input nobody
/// reads.
struct Stub {
    id: AgentId,
    session: Arc<dyn harness_core::Session>,
    queue: Mutex<Vec<UserMessage>>,
}

#[async_trait::async_trait]
impl Agent for Stub {
    fn id(&self) -> &AgentId {
        &self.id
    }
    fn session(&self) -> Arc<dyn harness_core::Session> {
        self.session.clone()
    }
    fn status(&self) -> AgentStatus {
        AgentStatus::Idle
    }
    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        self.queue.lock().unwrap().push(message);
        Ok(())
    }
    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        self.queue.lock().unwrap().push(message);
        Ok(())
    }
    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        Ok(MaintenanceGuard::new(|| {}))
    }
    async fn when_idle(&self) {}
    fn add_dispose_hook(&self, _hook: DisposeHook) -> Result<HookId, AgentError> {
        Ok(HookId(0))
    }
    fn remove_dispose_hook(&self, _id: HookId) -> Option<DisposeHook> {
        None
    }
    fn subscribe(&self, _listener: AgentListener) -> Registration {
        Registration::noop()
    }
    fn is_disposed(&self) -> bool {
        false
    }
}

#[tokio::test(start_paused = true)]
async fn a_stub_agent_fails_the_checks_it_breaks() {
    let store = Arc::new(MemoryStore::new(Arc::new(ManualClock::at_default())));
    let mut n = 0;
    let report = conformance::check_agent(|| {
        n += 1;
        let session = store.create(SessionHeader::new(format!("s{n}"))).unwrap();
        let agent: Arc<dyn Agent> = Arc::new(Stub {
            id: AgentId::from(format!("s{n}")),
            session,
            queue: Mutex::default(),
        });
        Candidate::new(agent, || async {}.boxed())
    })
    .await;
    assert_eq!(
        report.failed(),
        [
            "followup_opens_a_turn",
            "status_follows_the_turn",
            "inject_does_not_wake",
            "turn_drains_inbox_before_ending",
            "withdraw_returns_unclaimed",
            "idle_listener_followup_runs",
            "maintenance_refused_during_turn",
            "maintenance_is_exclusive",
            "maintenance_parks_input",
            "when_idle_waits_for_maintenance",
            "unsubscribe_stops_events",
            "dispose_awaits_hooks",
            "removed_hook_does_not_run",
            "disposed_refuses_input",
            "disposed_is_the_last_event",
        ],
        "{report}"
    );
    assert_eq!(
        report.checks[1].outcome,
        Err("never saw the turn end (idle)".to_owned())
    );
}
