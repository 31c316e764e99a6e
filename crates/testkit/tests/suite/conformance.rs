//! The conformance suite against the production loop, the testkit's agent, and a broken
//! agent shaped like the smallest stub a runtime might write.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AgentError, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, Harness, HookId,
    MaintenanceGuard, MemoryStore, ProjectionView, Registration, SessionHeader, SessionId,
    SessionStore, ToolOutput, UserMessage, same_agent,
};
use turnkit_host::{HostKit, LoopAgent};
use turnkit_testkit::conformance::{self, AGENT_CHECKS, Candidate, HARNESS_CHECKS, HostCandidate};
use turnkit_testkit::{ManualClock, MemoryHarness};

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
    session: Arc<dyn turnkit_core::Session>,
    queue: Mutex<Vec<UserMessage>>,
}

#[async_trait::async_trait]
impl Agent for Stub {
    fn id(&self) -> &AgentId {
        &self.id
    }
    fn session(&self) -> Arc<dyn turnkit_core::Session> {
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
    // Where a turn must end first, the stub fails on that (it never runs one); each of those
    // obligations fails on its own for the broken agents of `broken_agent`.
    let failed: Vec<(&str, String)> = report
        .checks
        .iter()
        .filter_map(|c| c.outcome.clone().err().map(|why| (c.name, why)))
        .collect();
    let expected: Vec<(&str, String)> = [
        ("followup_opens_a_turn", "never saw the turn end (idle)"),
        ("status_follows_the_turn", "never saw the turn end (idle)"),
        ("inject_does_not_wake", "never saw the turn end (idle)"),
        (
            "turn_drains_inbox_before_ending",
            "never saw the turn end (idle)",
        ),
        (
            "withdraw_returns_unclaimed",
            "withdraw gave None then None, expected Some(\"n1\") then None",
        ),
        ("idle_listener_followup_runs", "never saw a second turn end"),
        (
            "maintenance_refused_during_turn",
            "never saw the turn end (idle)",
        ),
        (
            "maintenance_is_exclusive",
            "a second maintenance guard was granted",
        ),
        (
            "maintenance_parks_input",
            "never saw the parked turn end (idle)",
        ),
        (
            "when_idle_waits_for_maintenance",
            "when_idle completed while a maintenance guard was held",
        ),
        ("unsubscribe_stops_events", "never saw the turn end (idle)"),
        (
            "dispose_awaits_hooks",
            "is_disposed is false after disposal",
        ),
        (
            "removed_hook_does_not_run",
            "remove_dispose_hook did not hand the hook back",
        ),
        (
            "disposed_refuses_input",
            "followup was accepted after disposal",
        ),
        (
            "disposed_is_the_last_event",
            "events [], expected [\"disposed\"]",
        ),
    ]
    .into_iter()
    .map(|(name, why)| (name, why.to_owned()))
    .collect();
    assert_eq!(failed, expected, "{report}");
}

/// `HostKit` over a memory store, each agent a `LoopAgent` driven by its own task (the broken
/// hosts of `broken_harness` wrap it).
pub(super) struct Kit {
    pub(super) kit: Arc<HostKit>,
    store: Arc<MemoryStore>,
    agents: Mutex<Vec<Arc<LoopAgent>>>,
}

impl Kit {
    pub(super) fn new() -> Arc<Self> {
        let clock = Arc::new(ManualClock::at_default());
        Arc::new(Self {
            kit: Arc::new(HostKit::new(clock.clone())),
            store: Arc::new(MemoryStore::new(clock)),
            agents: Mutex::default(),
        })
    }
}

impl HostCandidate for Kit {
    fn harness(&self) -> Arc<dyn Harness> {
        self.kit.clone()
    }
    fn start_agent(&self, id: &str) -> Arc<dyn Agent> {
        let session = self.store.create(SessionHeader::new(id)).unwrap();
        self.start_agent_in(session)
    }
    fn start_agent_in(&self, session: Arc<dyn turnkit_core::Session>) -> Arc<dyn Agent> {
        let agent = self.kit.start_agent(session);
        let turns = agent.turns();
        tokio::spawn(async move {
            while let Some(turn) = turns.next_turn().await {
                turn.finish();
            }
        });
        self.agents.lock().unwrap().push(agent.clone());
        agent.as_dyn()
    }
    fn dispose_agent(&self, agent: Arc<dyn Agent>) -> BoxFuture<'static, ()> {
        let found = self
            .agents
            .lock()
            .unwrap()
            .iter()
            .find(|a| same_agent(&a.as_dyn(), &agent))
            .cloned();
        async move {
            if let Some(agent) = found {
                agent.dispose().await;
            }
        }
        .boxed()
    }
    fn call(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
    ) -> BoxFuture<'static, ToolOutput> {
        let (kit, name) = (self.kit.clone(), name.to_owned());
        async move {
            kit.answer(&name, arguments, caller, CancellationToken::new())
                .await
                .unwrap_or_else(ToolOutput::error)
        }
        .boxed()
    }
    fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView> {
        self.kit.view(session, key)
    }
    fn system_prompt(&self, agent: &dyn Agent) -> String {
        self.kit.system_prompt(agent)
    }
}

#[tokio::test(start_paused = true)]
async fn the_host_kit_passes_the_harness_checks() {
    let report = conformance::check_harness(|| Kit::new() as Arc<dyn HostCandidate>).await;
    assert_eq!(report.failed(), Vec::<&str>::new(), "{report}");
    let names: Vec<&str> = report.checks.iter().map(|c| c.name).collect();
    assert_eq!(names, HARNESS_CHECKS);
}

/// The testkit's host, its agents `MemoryAgent`s.
struct Memory(Arc<MemoryHarness>);

impl HostCandidate for Memory {
    fn harness(&self) -> Arc<dyn Harness> {
        self.0.as_dyn()
    }
    fn start_agent(&self, id: &str) -> Arc<dyn Agent> {
        self.0
            .create_session(SessionHeader::new(id))
            .unwrap()
            .as_dyn()
    }
    fn start_agent_in(&self, session: Arc<dyn turnkit_core::Session>) -> Arc<dyn Agent> {
        self.0.adopt_session(session).unwrap().as_dyn()
    }
    fn dispose_agent(&self, agent: Arc<dyn Agent>) -> BoxFuture<'static, ()> {
        let host = self.0.clone();
        async move {
            host.dispose_agent(&SessionId::from(agent.id())).await;
        }
        .boxed()
    }
    fn call(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
    ) -> BoxFuture<'static, ToolOutput> {
        let (host, name) = (self.0.clone(), name.to_owned());
        async move {
            let caller = caller.map(|a| SessionId::from(a.id()));
            host.answer(&name, arguments, caller.as_ref()).await
        }
        .boxed()
    }
    fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView> {
        self.0.projections().view(session, key)
    }
    fn system_prompt(&self, agent: &dyn Agent) -> String {
        self.0.kit().system_prompt(agent)
    }
}

#[tokio::test(start_paused = true)]
async fn the_memory_harness_passes_the_harness_checks() {
    let report = conformance::check_harness(|| {
        Arc::new(Memory(MemoryHarness::new(Arc::new(
            ManualClock::at_default(),
        )))) as Arc<dyn HostCandidate>
    })
    .await;
    assert_eq!(report.failed(), Vec::<&str>::new(), "{report}");
}

/// docs/host-contract.md's table of broken implementations has one row per check, in order.
#[test]
fn the_contract_page_shows_every_check_failing() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/host-contract.md"
    ))
    .unwrap();
    let (_, section) = page
        .split_once("## Every check shown failing")
        .unwrap_or_else(|| panic!("docs/host-contract.md has no \"Every check shown failing\""));
    let section = section.split_once("\n## ").map_or(section, |(s, _)| s);
    let rows: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(name, _)| name))
        .collect();
    let checks: Vec<&str> = AGENT_CHECKS.iter().chain(HARNESS_CHECKS).copied().collect();
    assert_eq!(rows, checks);
}

/// docs/host-contract.md names, in brackets, exactly the checks the suite runs.
#[test]
fn the_contract_page_names_every_check() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/host-contract.md"
    ))
    .unwrap();
    let mut named: Vec<&str> = page
        .split("[`")
        .skip(1)
        .filter_map(|rest| rest.split_once("`]").map(|(name, _)| name))
        .collect();
    named.sort_unstable();
    let mut checks: Vec<&str> = AGENT_CHECKS.iter().chain(HARNESS_CHECKS).copied().collect();
    checks.sort_unstable();
    assert_eq!(named, checks);
}
