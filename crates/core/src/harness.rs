//! The [`Harness`] seam the host implements, and the [`AgentDirectory`] building block.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::{
    Agent, AgentId, Clock, Projection, PromptSection, RegisterError, Registered, Registration,
    RegistrationScope, Services, Tool, lock,
};

/// An agent lifecycle change, as [`Harness`] subscribers see it.
#[derive(Clone)]
pub enum LifecycleEvent {
    /// An agent was published (made live).
    Created(Arc<dyn Agent>),
    /// An agent was disposed (its dispose hooks have run).
    Disposed(Arc<dyn Agent>),
}

impl std::fmt::Debug for LifecycleEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LifecycleEvent::Created(a) => f.debug_tuple("Created").field(a.id()).finish(),
            LifecycleEvent::Disposed(a) => f.debug_tuple("Disposed").field(a.id()).finish(),
        }
    }
}

/// A listener for [`LifecycleEvent`]s, called synchronously in registration order.
pub type LifecycleListener = Arc<dyn Fn(&LifecycleEvent) + Send + Sync>;

/// What a plugin needs from the host (decision 1). Every `register_*` returns a guard that
/// unregisters on drop or on an explicit, idempotent `unregister()`.
pub trait Harness: Send + Sync {
    /// Registers a model tool for `scope`.
    ///
    /// # Errors
    /// [`RegisterError::ToolConflict`] when the name is taken in an overlapping scope.
    fn register_tool(
        &self,
        tool: Arc<dyn Tool>,
        scope: RegistrationScope,
    ) -> Result<Registration, RegisterError>;

    /// Registers a session projection. Hosts without a projection registry return
    /// `Ok(None)`; plugins then skip their projection.
    ///
    /// # Errors
    /// [`RegisterError::Conflict`] when the key is taken.
    fn register_projection(
        &self,
        projection: Arc<dyn Projection>,
    ) -> Result<Option<Registration>, RegisterError>;

    /// Adds a system-prompt section.
    fn register_prompt_section(&self, section: PromptSection) -> Registration;

    /// The live agent registered under `id`, if any.
    fn agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>>;

    /// A counter of changes to the set of live agents, or `None` when the host does not keep
    /// one (the default).
    ///
    /// With it, callers may remember an answer of [`Harness::agent`] and reuse it while the
    /// number stays the same: the job registry checks a job owner's liveness (todo-jobs §4.3
    /// step 5.2) once per generation instead of on every start. A host that returns `Some`
    /// must keep two promises, or stale owners may be admitted:
    /// 1. the number only ever increases, by at least one for every agent published,
    ///    replaced or removed (it never returns to an earlier value);
    /// 2. whoever reads a new number also sees the change through [`Harness::agent`] — bump
    ///    it under the same lock as the change, as [`AgentDirectory`] does.
    fn agents_generation(&self) -> Option<u64> {
        None
    }

    /// Every live agent, in publication order.
    fn agents(&self) -> Vec<Arc<dyn Agent>>;

    /// Subscribes to agent lifecycle events until the registration is dropped.
    fn subscribe_agents(&self, listener: LifecycleListener) -> Registration;

    /// The host clock.
    fn clock(&self) -> Arc<dyn Clock>;

    /// The host's typed service slot: one value per type that plugins provide to each other
    /// (turnkit-jobs-local provides its `Arc<dyn JobRegistry>` here; bash, terminal,
    /// subagent and tool-jobs find it here at install). A host keeps one [`Services`] for
    /// its life and returns the same one on every call.
    fn services(&self) -> &Services;
}

/// The identity of one host instance, as [`crate::AgentKey`] is for agents: equal exactly
/// for handles of the same host value, by its allocation address. It names its host only
/// while a handle (strong or weak) to it is held; whoever stores a key keeps one beside it.
///
/// ```
/// # use std::sync::Arc;
/// # use turnkit_core::{Harness, HostKey};
/// # fn check(host: &Arc<dyn Harness>) {
/// assert_eq!(HostKey::of(host), HostKey::of_weak(&Arc::downgrade(host)));
/// # }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(usize);

impl HostKey {
    /// The key of `host`.
    pub fn of(host: &Arc<dyn Harness>) -> Self {
        Self(Arc::as_ptr(host).cast::<()>() as usize)
    }

    /// The key of the host `host` points at (alive or not).
    pub fn of_weak(host: &std::sync::Weak<dyn Harness>) -> Self {
        Self(host.as_ptr().cast::<()>() as usize)
    }
}

impl std::fmt::Debug for HostKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostKey({:#x})", self.0)
    }
}

#[derive(Default)]
struct DirectoryInner {
    agents: Vec<Arc<dyn Agent>>,
    listeners: Registered<LifecycleListener>,
}

/// A host building block: the live agents by id and a lifecycle broadcast. Listeners are
/// called without the directory's lock held, so they may call back into it.
#[derive(Clone, Default)]
pub struct AgentDirectory {
    inner: Arc<Mutex<DirectoryInner>>,
    /// Bumped (under the lock) by every change of `agents`.
    generation: Arc<AtomicU64>,
}

impl AgentDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Publishes `agent` (replacing any agent with the same id) and notifies listeners.
    pub fn publish(&self, agent: Arc<dyn Agent>) {
        let listeners = {
            let mut inner = lock(&self.inner);
            inner.agents.retain(|a| a.id() != agent.id());
            inner.agents.push(agent.clone());
            self.generation.fetch_add(1, Ordering::SeqCst);
            inner.listeners.to_vec()
        };
        let event = LifecycleEvent::Created(agent);
        for listener in listeners {
            listener(&event);
        }
    }

    /// Removes `agent` if it is the one registered under its id, and notifies listeners.
    pub fn remove(&self, agent: &Arc<dyn Agent>) {
        let listeners = {
            let mut inner = lock(&self.inner);
            let before = inner.agents.len();
            inner.agents.retain(|a| !crate::same_agent(a, agent));
            if inner.agents.len() == before {
                return;
            }
            self.generation.fetch_add(1, Ordering::SeqCst);
            inner.listeners.to_vec()
        };
        let event = LifecycleEvent::Disposed(agent.clone());
        for listener in listeners {
            listener(&event);
        }
    }

    /// The number of changes to the set of agents so far (see [`Harness::agents_generation`]):
    /// every [`AgentDirectory::publish`] and every effective [`AgentDirectory::remove`] bumps
    /// it before [`AgentDirectory::get`] can observe the change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The agent registered under `id`.
    pub fn get(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        lock(&self.inner)
            .agents
            .iter()
            .find(|a| a.id() == id)
            .cloned()
    }

    /// Every live agent, in publication order.
    pub fn all(&self) -> Vec<Arc<dyn Agent>> {
        lock(&self.inner).agents.clone()
    }

    /// Subscribes to lifecycle events.
    pub fn subscribe(&self, listener: LifecycleListener) -> Registration {
        let id = lock(&self.inner).listeners.insert(listener);
        Registration::weak(&self.inner, move |inner| {
            lock(inner).listeners.remove(id);
        })
    }
}
