//! The smallest host a runtime would write, without the testkit: a `Harness` built from
//! harness-core's building blocks and an `Agent` whose turn loop is the runtime's own (here a
//! queue the example drains by hand). Installs the todo family and calls `todo_write`.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use harness_core::{
    Agent, AgentDirectory, AgentError, AgentId, AgentListener, AgentStatus, AppendError, Busy,
    Clock, DisposeHook, Harness, HookId, LifecycleListener, MaintenanceGuard, MemoryStore,
    PersistenceError, Projection, ProjectionSet, PromptSection, PromptSections, RawEvent,
    RegisterError, Registration, RegistrationScope, Session, SessionEvent, SessionHeader,
    SessionId, SessionStore, SystemClock, Tool, ToolRegistry, UserMessage,
};
use serde_json::{Value, json};

/// The host: registries from harness-core plus the runtime's agent directory.
#[derive(Default)]
struct Host {
    tools: ToolRegistry,
    projections: ProjectionSet,
    prompts: PromptSections,
    agents: AgentDirectory,
}

impl Harness for Host {
    fn register_tool(
        &self,
        tool: Arc<dyn Tool>,
        scope: RegistrationScope,
    ) -> Result<Registration, RegisterError> {
        self.tools.register(tool, scope)
    }

    fn register_projection(
        &self,
        projection: Arc<dyn Projection>,
    ) -> Result<Option<Registration>, RegisterError> {
        self.projections.register(projection).map(Some)
    }

    fn register_prompt_section(&self, section: PromptSection) -> Registration {
        self.prompts.register(section)
    }

    fn agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        self.agents.get(id)
    }

    // Optional: lets the job registry skip re-checking an owner on every start.
    fn agents_generation(&self) -> Option<u64> {
        Some(self.agents.generation())
    }

    fn agents(&self) -> Vec<Arc<dyn Agent>> {
        self.agents.all()
    }

    fn subscribe_agents(&self, listener: LifecycleListener) -> Registration {
        self.agents.subscribe(listener)
    }

    fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(SystemClock)
    }
}

/// A stored session whose appends also feed the host's projections.
struct Projected {
    inner: Arc<dyn Session>,
    projections: ProjectionSet,
}

#[async_trait]
impl Session for Projected {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }
    fn header(&self) -> &SessionHeader {
        self.inner.header()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.inner.raw_events_after(after)
    }
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        let event = self.inner.append(r#type, data)?;
        self.projections.apply(self.inner.id(), &event);
        Ok(event)
    }
    async fn flush(&self) -> Result<(), PersistenceError> {
        self.inner.flush().await
    }
}

/// The runtime's agent. Its turn loop would drain `queue` (followups) and `inbox`
/// (injected messages); this example only shows the shape.
struct MyAgent {
    id: AgentId,
    session: Arc<dyn Session>,
    queue: Mutex<Vec<UserMessage>>,
    inbox: Mutex<Vec<UserMessage>>,
}

#[async_trait]
impl Agent for MyAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }
    fn session(&self) -> Arc<dyn Session> {
        self.session.clone()
    }
    fn status(&self) -> AgentStatus {
        AgentStatus::Idle
    }
    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(message);
        Ok(())
    }
    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        self.inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(message);
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let host = Arc::new(Host::default());
    let harness: Arc<dyn Harness> = host.clone();
    let _todo = harness_todo::install(&harness, harness_todo::TodoConfig::new(false))?;

    let store = MemoryStore::new(Arc::new(SystemClock));
    let stored = store.create(SessionHeader::new("s1"))?;
    let session: Arc<dyn Session> = Arc::new(Projected {
        inner: stored,
        projections: host.projections.clone(),
    });
    host.projections.track(session.clone());
    let agent: Arc<dyn Agent> = Arc::new(MyAgent {
        id: AgentId::from("s1"),
        session,
        queue: Mutex::default(),
        inbox: Mutex::default(),
    });
    host.agents.publish(agent.clone());

    let args = json!({"todos": [{"content": "Embed harness", "status": "in_progress"}]});
    let output = host
        .tools
        .execute("todo_write", args, Some(agent), Default::default())
        .await;
    println!("todo_write -> {}", output.text());
    let view = host.projections.view(&SessionId::from("s1"), "todos");
    println!(
        "todos projection -> {}",
        view.map_or(Value::Null, |v| v.value)
    );
    Ok(())
}
