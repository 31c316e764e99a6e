//! [`HostKit`]: a complete [`Harness`] assembled from turnkit-core's building blocks, with
//! agents published into it and their projections kept current by pulling the log.

use std::sync::{Arc, Weak};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AgentDirectory, AgentId, Clock, Harness, LifecycleListener, PersistenceError,
    Projection, ProjectionSet, ProjectionView, PromptSection, PromptSections, RegisterError,
    Registration, RegistrationScope, Services, Session, SessionId, Tool, ToolDefinition,
    ToolOutput, ToolRegistry,
};

use crate::agent::{LoopAgent, TurnObserver};

/// A host's registries and agent directory in one value that implements [`Harness`]
/// (docs/host-contract.md "Harness"):
///
/// * tools in a [`ToolRegistry`] (scoped routing of todo-jobs §1.3, argument validation of
///   decision 2), prompt sections in [`PromptSections`];
/// * projections in a [`ProjectionSet`] that folds each published agent's session by reading
///   the log suffix it has not folded yet (`raw_events_after`) whenever a view is read, so
///   the host's sessions need no wrapper: [`HostKit::view`] is always current;
/// * live agents in an [`AgentDirectory`] with its lifecycle broadcast and generation;
/// * the services plugins provide each other in a [`Services`] slot map.
///
/// Publish agents with [`HostKit::publish`] (any [`Agent`]) or [`HostKit::start_agent`] (a
/// [`LoopAgent`] that leaves the directory when disposed).
pub struct HostKit {
    clock: Arc<dyn Clock>,
    tools: ToolRegistry,
    projections: ProjectionSet,
    prompts: PromptSections,
    directory: AgentDirectory,
    services: Services,
}

impl std::fmt::Debug for HostKit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostKit")
            .field("agents", &self.directory.all().len())
            .finish_non_exhaustive()
    }
}

impl HostKit {
    /// An empty host on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            tools: ToolRegistry::new(),
            projections: ProjectionSet::new(),
            prompts: PromptSections::new(),
            directory: AgentDirectory::new(),
            services: Services::new(),
        }
    }

    /// The tool registry.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The projections.
    pub fn projections(&self) -> &ProjectionSet {
        &self.projections
    }

    /// The prompt sections.
    pub fn prompts(&self) -> &PromptSections {
        &self.prompts
    }

    /// The live agents.
    pub fn directory(&self) -> &AgentDirectory {
        &self.directory
    }

    /// Makes `agent` live: its session is folded into the projections (a full replay, once)
    /// and it is published in the directory (replacing an agent with the same id), which
    /// tells every [`Harness::subscribe_agents`] listener.
    pub fn publish(&self, agent: Arc<dyn Agent>) {
        self.projections.track(agent.session());
        self.directory.publish(agent);
    }

    /// Removes `agent` from the directory if it is the one published under its id (telling
    /// the listeners), and stops folding its session once no live agent holds that id (a
    /// durable store's handle can then close).
    pub fn remove(&self, agent: &Arc<dyn Agent>) {
        self.directory.remove(agent);
        if self.directory.get(agent.id()).is_none() {
            self.projections.untrack(&SessionId::from(agent.id()));
        }
    }

    /// Builds a root [`LoopAgent`] over `session`, publishes it, and returns it; disposing
    /// it removes it from this host ([`HostKit::remove`]). The caller drives its turns
    /// ([`LoopAgent::turns`]).
    pub fn start_agent(self: &Arc<Self>, session: Arc<dyn Session>) -> Arc<LoopAgent> {
        let agent = LoopAgent::builder(session)
            .observer(Arc::new(Leaves {
                kit: Arc::downgrade(self),
            }))
            .build();
        self.publish(agent.as_dyn());
        agent
    }

    /// Runs tool `name` with `arguments` for `caller` through the registry's pipeline
    /// ([`ToolRegistry::execute`]: scoped lookup, validation, `Error: <message>` rendering).
    ///
    /// Not an acknowledgement: it returns before anything the call appended is flushed. A
    /// host answering a model (or a client) uses [`HostKit::answer`]; `call` is for a caller
    /// that flushes on its own schedule (a turn loop whose turn end flushes, a host process
    /// that flushes before it reports).
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
    ) -> ToolOutput {
        self.tools.execute(name, arguments, caller, cancel).await
    }

    /// Answers a model's tool call (spec decision 21, "A reply is an acknowledgement"):
    /// [`HostKit::call`], then, when the call appended to the caller's session, that
    /// session's flush before the answer is returned ([`turnkit_core::acknowledge`]). A
    /// failed flush turns a successful result into `Error: the change may not be saved: …`
    /// ([`turnkit_core::unsaved_message`]); the events stay pending in the session for its
    /// next flush.
    ///
    /// # Errors
    /// [`PersistenceError::Fenced`] when the store gave the session to another host: the
    /// host must stop the session's agents and jobs.
    pub async fn answer(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, PersistenceError> {
        let session = caller.as_ref().map(|agent| agent.session());
        let before = session.as_ref().map_or(0, |s| s.len());
        let output = self.call(name, arguments, caller, cancel).await;
        match session {
            Some(session) => turnkit_core::acknowledge(session.as_ref(), before, output).await,
            None => Ok(output),
        }
    }

    /// The tools `agent` may call, in registration order (what the model is offered).
    pub fn tool_definitions(&self, agent: &dyn Agent) -> Vec<ToolDefinition> {
        self.tools.definitions(Some(&agent.scope_chain()))
    }

    /// The system-prompt sections `agent` sees, rendered.
    pub fn system_prompt(&self, agent: &dyn Agent) -> String {
        self.prompts.render(Some(&agent.scope_chain()))
    }

    /// The current view of projection `key` for `session` (folded up to the log's end).
    pub fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView> {
        self.projections.view(session, key)
    }
}

/// Removes a disposed [`LoopAgent`] from its kit.
struct Leaves {
    kit: Weak<HostKit>,
}

impl TurnObserver for Leaves {
    fn disposed(&self, agent: &Arc<LoopAgent>) {
        if let Some(kit) = self.kit.upgrade() {
            kit.remove(&agent.as_dyn());
        }
    }
}

impl Harness for HostKit {
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
        self.directory.get(id)
    }

    fn agents_generation(&self) -> Option<u64> {
        Some(self.directory.generation())
    }

    fn agents(&self) -> Vec<Arc<dyn Agent>> {
        self.directory.all()
    }

    fn subscribe_agents(&self, listener: LifecycleListener) -> Registration {
        self.directory.subscribe(listener)
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    fn services(&self) -> &Services {
        &self.services
    }
}
