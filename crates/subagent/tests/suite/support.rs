//! A host for the tests: a HostKit on a manual clock with jobs, tool-jobs, todo, schedule
//! and the subagent plugin over a scripted child model.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnkit_core::{Harness, MemoryStore, SessionHeader, SessionStore, ToolOutput};
use turnkit_host::{HostKit, LoopAgent};
use turnkit_subagent::{ScriptedChild, SubagentConfig};
use turnkit_testkit::ManualClock;

pub(crate) struct Host {
    pub(crate) kit: Arc<HostKit>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) children: Arc<ScriptedChild>,
    pub(crate) jobs: turnkit_jobs_local::Installed,
    pub(crate) subagents: turnkit_subagent::Installed,
    _tool_jobs: turnkit_tool_jobs::Installed,
    _todo: turnkit_todo::Installed,
    _schedule: turnkit_schedule::Installed,
}

impl Host {
    pub(crate) fn new(config: SubagentConfig) -> Self {
        let clock = Arc::new(ManualClock::at_default());
        let kit = Arc::new(HostKit::new(clock.clone()));
        let harness: Arc<dyn Harness> = kit.clone();
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new(clock));
        let todo = turnkit_todo::TodoConfig::from_json(
            serde_json::json!({"allowParallelInProgress": false}),
        )
        .and_then(|config| turnkit_todo::install(&harness, config))
        .unwrap();
        let jobs = turnkit_jobs_local::install(&harness, Default::default()).unwrap();
        let tool_jobs = turnkit_tool_jobs::install(&harness, Default::default()).unwrap();
        let schedule = turnkit_schedule::install(&harness, Default::default()).unwrap();
        let children = ScriptedChild::new();
        kit.services().insert(turnkit_subagent::ChildHost::new(
            &kit,
            store.clone(),
            children.clone(),
        ));
        let subagents = turnkit_subagent::install(&harness, config).unwrap();
        Self {
            kit,
            store,
            children,
            jobs,
            subagents,
            _tool_jobs: tool_jobs,
            _todo: todo,
            _schedule: schedule,
        }
    }

    /// A root agent, published, without a driver (its followups stay queued).
    pub(crate) fn root(&self, id: &str) -> Arc<LoopAgent> {
        self.kit
            .start_agent(self.store.create(SessionHeader::new(id)).unwrap())
    }

    pub(crate) async fn call(&self, agent: &Arc<LoopAgent>, tool: &str, args: Value) -> ToolOutput {
        self.call_with(agent, tool, args, CancellationToken::new())
            .await
    }

    pub(crate) async fn call_with(
        &self,
        agent: &Arc<LoopAgent>,
        tool: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> ToolOutput {
        self.kit
            .call(tool, args, Some(agent.as_dyn()), cancel)
            .await
    }

    /// The event types and payloads of a stored session.
    pub(crate) fn log(&self, id: &str) -> Vec<(String, Value)> {
        self.store
            .open(&turnkit_core::SessionId::from(id))
            .unwrap()
            .events()
            .into_iter()
            .map(|e| (e.r#type.clone(), e.data))
            .collect()
    }
}
