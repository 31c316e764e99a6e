//! [`AgentLookup`]: how the registry finds the live agent registered under an id
//! (todo-jobs §1.2), and [`HarnessAgents`], the lookup through a [`Harness`].

use std::sync::{Arc, Weak};

use turnkit_core::{Agent, AgentDirectory, AgentId, Harness};

/// The agent registry as the job registry sees it: the instance currently registered under
/// an id. Owned starts require one (§4.3 step 5).
pub trait AgentLookup: Send + Sync {
    /// The live agent registered under `id`, if any.
    fn live_agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>>;

    /// Whether the agent registry still exists. When it does not, owned starts fail with
    /// `background job ownership requires the agent registry (load @deepseek-ai/dsh-agent)`.
    /// Already-recorded owners keep their notices either way.
    fn is_available(&self) -> bool {
        true
    }

    /// A counter of changes to what [`AgentLookup::live_agent`] answers, or `None` (the
    /// default) when the lookup keeps none. While it stays the same, the registry reuses an
    /// owner's last successful liveness check instead of calling `live_agent` on every start.
    /// It must keep the promises of [`turnkit_core::Harness::agents_generation`]: it only
    /// ever increases (at least once per change), and a reader of a new value sees the
    /// change through `live_agent`.
    fn generation(&self) -> Option<u64> {
        None
    }
}

/// The agents of a [`Harness`], held weakly so the registry never keeps its host alive. Once
/// the host is gone the agent registry counts as absent.
#[derive(Clone)]
pub struct HarnessAgents(Weak<dyn Harness>);

impl HarnessAgents {
    /// A lookup through `harness`.
    pub fn new(harness: &Arc<dyn Harness>) -> Self {
        Self(Arc::downgrade(harness))
    }
}

impl AgentLookup for HarnessAgents {
    fn live_agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        self.0.upgrade()?.agent(id)
    }

    fn is_available(&self) -> bool {
        self.0.strong_count() > 0
    }

    fn generation(&self) -> Option<u64> {
        self.0.upgrade()?.agents_generation()
    }
}

impl AgentLookup for AgentDirectory {
    fn live_agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        self.get(id)
    }

    fn generation(&self) -> Option<u64> {
        Some(AgentDirectory::generation(self))
    }
}
