//! [`MemoryHarness`]: a complete in-memory host implementing [`Harness`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AgentId, Clock, Harness, LifecycleListener, MemoryStore, Projection, ProjectionSet,
    PromptSection, PromptSections, RegisterError, Registration, RegistrationScope, SessionHeader,
    SessionId, SessionStore, StoreError, Tool, ToolOutput, ToolRegistry,
};
use turnkit_host::HostKit;

use crate::agent::{MemoryAgent, Recorder, RecorderSlot};
use crate::faults::{HostSession, SessionFaults};

/// An in-memory host: turnkit-host's [`HostKit`] (turnkit-core's [`ToolRegistry`],
/// [`ProjectionSet`], [`PromptSections`] and agent directory) over any [`SessionStore`],
/// with [`MemoryAgent`]s (the production turn loop and a scripted model) as its agents.
///
/// Creating an agent spawns its driver task, so a tokio runtime must be running. Fault
/// switches are kept per session id ([`MemoryHarness::faults`]) and can be shared with a
/// later harness over the same store (a simulated restart).
pub struct MemoryHarness {
    clock: Arc<dyn Clock>,
    store: Arc<dyn SessionStore>,
    kit: Arc<HostKit>,
    auto_turns: AtomicBool,
    recorder: Arc<RecorderSlot>,
    faults: Arc<Mutex<HashMap<SessionId, Arc<SessionFaults>>>>,
    agents: Mutex<Vec<Arc<MemoryAgent>>>,
}

impl MemoryHarness {
    /// A host over a fresh [`MemoryStore`].
    pub fn new(clock: Arc<dyn Clock>) -> Arc<Self> {
        let store = Arc::new(MemoryStore::new(clock.clone()));
        Self::with_store(store, clock)
    }

    /// A host over `store`.
    pub fn with_store(store: Arc<dyn SessionStore>, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            kit: Arc::new(HostKit::new(clock.clone())),
            clock,
            store,
            auto_turns: AtomicBool::new(true),
            recorder: Arc::new(RecorderSlot::default()),
            faults: Arc::new(Mutex::new(HashMap::new())),
            agents: Mutex::new(Vec::new()),
        })
    }

    /// A host over the same store and fault switches as `previous` (for a simulated restart;
    /// `previous` should be disposed first).
    pub fn restarted_from(previous: &MemoryHarness) -> Arc<Self> {
        let host = Self::with_store(previous.store.clone(), previous.clock.clone());
        let faults = previous.faults_map().clone();
        *host.faults_map() = faults;
        host.set_auto_turns(previous.auto_turns.load(Ordering::SeqCst));
        host
    }

    /// This host as the trait object plugins install into.
    pub fn as_dyn(self: &Arc<Self>) -> Arc<dyn Harness> {
        self.clone()
    }

    fn faults_map(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<SessionFaults>>> {
        turnkit_core::lock(&self.faults)
    }

    fn agents_list(&self) -> MutexGuard<'_, Vec<Arc<MemoryAgent>>> {
        turnkit_core::lock(&self.agents)
    }

    /// The fault switches of session `id` (created on first use).
    pub fn faults(&self, id: &SessionId) -> Arc<SessionFaults> {
        self.faults_map().entry(id.clone()).or_default().clone()
    }

    /// Turns automatic turns on or off (default on), for live agents and later ones: with
    /// them on, an idle agent that receives input runs a turn at once.
    pub fn set_auto_turns(&self, on: bool) {
        self.auto_turns.store(on, Ordering::SeqCst);
        let agents = self.agents_list().clone();
        for agent in agents {
            agent.set_auto_turns(on);
        }
    }

    /// Sends every [`HostRecord`](crate::HostRecord) to `recorder` from now on.
    pub fn set_recorder(&self, recorder: Recorder) {
        self.recorder.set(recorder);
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// The host kit underneath.
    pub fn kit(&self) -> &Arc<HostKit> {
        &self.kit
    }

    /// The tool registry.
    pub fn tools(&self) -> &ToolRegistry {
        self.kit.tools()
    }

    /// The projections.
    pub fn projections(&self) -> &ProjectionSet {
        self.kit.projections()
    }

    /// The prompt sections.
    pub fn prompts(&self) -> &PromptSections {
        self.kit.prompts()
    }

    /// Publishes a live agent; its turn loop runs as a task on the caller's tokio runtime,
    /// which [`runtime_present`] checked.
    fn publish(&self, session: Arc<dyn turnkit_core::Session>) -> Arc<MemoryAgent> {
        let faults = self.faults(session.id());
        let host_session = Arc::new(HostSession::new(session, faults));
        let kit = Arc::downgrade(&self.kit);
        let agent = MemoryAgent::spawn(
            host_session,
            self.recorder.clone(),
            !self.auto_turns.load(Ordering::SeqCst),
            Box::new(move |agent: &Arc<MemoryAgent>| {
                if let Some(kit) = kit.upgrade() {
                    kit.remove(&agent.as_dyn());
                }
            }),
        );
        self.agents_list().push(agent.clone());
        self.kit.publish(agent.as_dyn());
        agent
    }

    /// Creates a session and publishes a live root agent for it.
    ///
    /// # Errors
    /// [`HostError::NoRuntime`] outside a tokio runtime (nothing is created), else the
    /// store's error (an existing id, an invalid id, I/O).
    pub fn create_session(&self, header: SessionHeader) -> Result<Arc<MemoryAgent>, HostError> {
        runtime_present()?;
        let session = self.store.create(header)?;
        Ok(self.publish(session))
    }

    /// Publishes a live root agent over `session`, a session the caller opened itself (a
    /// wrapper whose flush it controls, say).
    ///
    /// # Errors
    /// [`HostError::NoRuntime`] outside a tokio runtime.
    pub fn adopt_session(
        &self,
        session: Arc<dyn turnkit_core::Session>,
    ) -> Result<Arc<MemoryAgent>, HostError> {
        runtime_present()?;
        Ok(self.publish(session))
    }

    /// Forks `from` into `id` and publishes a root agent for the fork.
    ///
    /// # Errors
    /// [`HostError::NoRuntime`] outside a tokio runtime (nothing is created), else the
    /// store's error.
    pub fn fork_session(
        &self,
        id: SessionId,
        from: &SessionId,
    ) -> Result<Arc<MemoryAgent>, HostError> {
        runtime_present()?;
        // The live log when an agent holds it (it may have unflushed events), else the store's.
        let parent = match self.memory_agent(from) {
            Some(agent) => agent.session(),
            None => self.store.open(from)?,
        };
        let session = self.store.fork(parent.as_ref(), id)?;
        Ok(self.publish(session))
    }

    /// Opens a stored session and publishes a new live root agent for it.
    ///
    /// # Errors
    /// [`HostError::NoRuntime`] outside a tokio runtime (nothing is opened), else the
    /// store's error.
    pub fn resume(&self, id: &SessionId) -> Result<Arc<MemoryAgent>, HostError> {
        runtime_present()?;
        let session = self.store.open(id)?;
        Ok(self.publish(session))
    }

    /// The live agent of session `id`.
    pub fn memory_agent(&self, id: &SessionId) -> Option<Arc<MemoryAgent>> {
        self.agents_list()
            .iter()
            .rev()
            .find(|a| a.id().as_str() == id.as_str() && !a.is_disposed())
            .cloned()
    }

    /// Disposes the live agent of session `id`, awaiting its hooks. Returns whether one
    /// existed.
    pub async fn dispose_agent(&self, id: &SessionId) -> bool {
        let Some(agent) = self.memory_agent(id) else {
            return false;
        };
        agent.dispose().await;
        self.agents_list().retain(|a| !Arc::ptr_eq(a, &agent));
        true
    }

    /// Disposes every live agent, in publication order.
    pub async fn dispose_all(&self) {
        let agents: Vec<Arc<MemoryAgent>> = std::mem::take(&mut *self.agents_list());
        for agent in agents {
            agent.dispose().await;
        }
    }

    /// Runs tool `name` with `arguments` for the live agent of `caller` (or without an agent).
    ///
    /// Not an acknowledgement: it returns before anything the call appended is flushed (what
    /// a test of a tool's own answer wants). What answers as a host must, after the flush, is
    /// [`MemoryHarness::answer`]; the scenario runner's `call` steps use it.
    pub async fn execute(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<&SessionId>,
    ) -> ToolOutput {
        self.execute_with_cancel(name, arguments, caller, CancellationToken::new())
            .await
    }

    /// Answers a model's tool call as a host must (spec decision 21): runs it like
    /// [`MemoryHarness::execute`], then flushes the caller's session when the call appended
    /// ([`turnkit_core::acknowledge`]); a failed flush turns a success into `Error: the
    /// change may not be saved: …`. A fenced session answers its fenced error.
    pub async fn answer(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<&SessionId>,
    ) -> ToolOutput {
        let agent = match caller {
            Some(id) => match self.memory_agent(id) {
                Some(agent) => Some(agent.as_dyn()),
                None => return ToolOutput::error(format!("no live agent for session {id}")),
            },
            None => None,
        };
        self.kit
            .answer(name, arguments, agent, CancellationToken::new())
            .await
            .unwrap_or_else(ToolOutput::error)
    }

    /// [`MemoryHarness::execute`] with a cancellation token.
    pub async fn execute_with_cancel(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<&SessionId>,
        cancel: CancellationToken,
    ) -> ToolOutput {
        let agent = match caller {
            Some(id) => match self.memory_agent(id) {
                Some(agent) => Some(agent.as_dyn()),
                None => return ToolOutput::error(format!("no live agent for session {id}")),
            },
            None => None,
        };
        self.kit.call(name, arguments, agent, cancel).await
    }
}

impl Harness for MemoryHarness {
    fn register_tool(
        &self,
        tool: Arc<dyn Tool>,
        scope: RegistrationScope,
    ) -> Result<Registration, RegisterError> {
        self.kit.register_tool(tool, scope)
    }

    fn register_projection(
        &self,
        projection: Arc<dyn Projection>,
    ) -> Result<Option<Registration>, RegisterError> {
        self.kit.register_projection(projection)
    }

    fn register_prompt_section(&self, section: PromptSection) -> Registration {
        self.kit.register_prompt_section(section)
    }

    fn agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        self.kit.agent(id)
    }

    fn agents_generation(&self) -> Option<u64> {
        self.kit.agents_generation()
    }

    fn agents(&self) -> Vec<Arc<dyn Agent>> {
        self.kit.agents()
    }

    fn subscribe_agents(&self, listener: LifecycleListener) -> Registration {
        self.kit.subscribe_agents(listener)
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    fn services(&self) -> &turnkit_core::Services {
        self.kit.services()
    }
}

/// Why the in-memory host could not publish an agent.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The store refused (an existing or invalid id, I/O, a malformed file).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Called outside a tokio runtime: an agent's turn loop runs as a task on the caller's
    /// runtime, so there must be one.
    #[error(
        "the in-memory host runs each agent's turn loop on a tokio runtime: call this inside one"
    )]
    NoRuntime,
}

fn runtime_present() -> Result<(), HostError> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|_| HostError::NoRuntime)
}
