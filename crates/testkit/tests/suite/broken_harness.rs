//! One broken host per harness check: `HostKit` behind a wrapper that breaks one obligation
//! of docs/host-contract.md ("Harness"), and exactly the checks each one fails, with their
//! messages (the table in docs/host-contract.md, "Every check shown failing", names them).

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use turnkit_core::{
    Agent, AgentId, Clock, Harness, LifecycleEvent, LifecycleListener, Projection, ProjectionView,
    PromptSection, RegisterError, Registration, RegistrationScope, SessionId, Tool, ToolCall,
    ToolDefinition, ToolError, ToolOutput,
};
use turnkit_host::HostKit;
use turnkit_testkit::conformance::{self, HARNESS_CHECKS, HostCandidate};

use super::conformance::Kit;

/// What the wrapper breaks, one obligation each, named after the check that states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// A second tool under a taken name is accepted (and does nothing).
    ToolConflictAccepted,
    /// Every tool is registered globally, whatever its scope.
    ScopeIgnored,
    /// Tools are registered with an input schema that accepts any object.
    SchemaLoosened,
    /// Tool registrations are never undone.
    ToolNeverUnregistered,
    /// A second projection under a taken key is accepted (and does nothing).
    ProjectionConflictAccepted,
    /// The first view read of each projection is served ever after.
    StaleViews,
    /// Every prompt section is shown to every agent.
    PromptSectionForEveryone,
    /// `agents()` keeps listing disposed agents.
    DirectoryKeepsDisposed,
    /// The generation never moves.
    GenerationFrozen,
    /// `Disposed` is reported when disposal begins, before the hooks ran.
    DisposedReportedEarly,
    /// A tool call is answered without flushing the caller's session.
    AnswersBeforeFlush,
}

/// What the broken host and its harness share.
#[derive(Default)]
struct Shared {
    /// Every agent ever started, in order.
    started: Mutex<Vec<Arc<dyn Agent>>>,
    /// Every lifecycle listener ever subscribed.
    listeners: Mutex<Vec<LifecycleListener>>,
}

struct Broken {
    kit: Arc<Kit>,
    fault: Fault,
    shared: Arc<Shared>,
    stale: Mutex<Vec<(String, ProjectionView)>>,
}

struct BrokenHarness {
    kit: Arc<HostKit>,
    fault: Fault,
    shared: Arc<Shared>,
}

/// A tool advertised with an input schema that accepts any object.
struct Loosened {
    inner: Arc<dyn Tool>,
    definition: ToolDefinition,
}

#[async_trait::async_trait]
impl Tool for Loosened {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        self.inner.call(call).await
    }
}

impl Harness for BrokenHarness {
    fn register_tool(
        &self,
        tool: Arc<dyn Tool>,
        scope: RegistrationScope,
    ) -> Result<Registration, RegisterError> {
        match self.fault {
            Fault::ToolConflictAccepted => match self.kit.register_tool(tool, scope) {
                Err(RegisterError::ToolConflict(_)) => Ok(Registration::noop()),
                other => other,
            },
            Fault::ScopeIgnored => self.kit.register_tool(tool, RegistrationScope::Global),
            Fault::SchemaLoosened => {
                let mut definition = tool.definition().clone();
                definition.input_schema = json!({ "type": "object" });
                self.kit.register_tool(
                    Arc::new(Loosened {
                        inner: tool,
                        definition,
                    }),
                    scope,
                )
            }
            Fault::ToolNeverUnregistered => {
                std::mem::forget(self.kit.register_tool(tool, scope)?);
                Ok(Registration::noop())
            }
            _ => self.kit.register_tool(tool, scope),
        }
    }
    fn register_projection(
        &self,
        projection: Arc<dyn Projection>,
    ) -> Result<Option<Registration>, RegisterError> {
        match self.kit.register_projection(projection) {
            Err(RegisterError::Conflict(_)) if self.fault == Fault::ProjectionConflictAccepted => {
                Ok(Some(Registration::noop()))
            }
            other => other,
        }
    }
    fn register_prompt_section(&self, mut section: PromptSection) -> Registration {
        if self.fault == Fault::PromptSectionForEveryone {
            section.scope = RegistrationScope::Global;
        }
        self.kit.register_prompt_section(section)
    }
    fn agent(&self, id: &AgentId) -> Option<Arc<dyn Agent>> {
        self.kit.agent(id)
    }
    fn agents_generation(&self) -> Option<u64> {
        if self.fault == Fault::GenerationFrozen {
            Some(0)
        } else {
            self.kit.agents_generation()
        }
    }
    fn agents(&self) -> Vec<Arc<dyn Agent>> {
        if self.fault == Fault::DirectoryKeepsDisposed {
            turnkit_core::lock(&self.shared.started).clone()
        } else {
            self.kit.agents()
        }
    }
    fn subscribe_agents(&self, listener: LifecycleListener) -> Registration {
        turnkit_core::lock(&self.shared.listeners).push(listener.clone());
        self.kit.subscribe_agents(listener)
    }
    fn clock(&self) -> Arc<dyn Clock> {
        self.kit.clock()
    }
    fn services(&self) -> &turnkit_core::Services {
        self.kit.services()
    }
}

impl HostCandidate for Broken {
    fn harness(&self) -> Arc<dyn Harness> {
        Arc::new(BrokenHarness {
            kit: self.kit.kit.clone(),
            fault: self.fault,
            shared: self.shared.clone(),
        })
    }
    fn start_agent(&self, id: &str) -> Arc<dyn Agent> {
        let agent = self.kit.start_agent(id);
        turnkit_core::lock(&self.shared.started).push(agent.clone());
        agent
    }
    fn start_agent_in(&self, session: Arc<dyn turnkit_core::Session>) -> Arc<dyn Agent> {
        let agent = self.kit.start_agent_in(session);
        turnkit_core::lock(&self.shared.started).push(agent.clone());
        agent
    }
    fn dispose_agent(&self, agent: Arc<dyn Agent>) -> BoxFuture<'static, ()> {
        if self.fault == Fault::DisposedReportedEarly {
            let listeners = turnkit_core::lock(&self.shared.listeners).clone();
            for listener in listeners {
                listener(&LifecycleEvent::Disposed(agent.clone()));
            }
        }
        self.kit.dispose_agent(agent)
    }
    fn call(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
    ) -> BoxFuture<'static, ToolOutput> {
        if self.fault != Fault::AnswersBeforeFlush {
            return self.kit.call(name, arguments, caller);
        }
        let (kit, name) = (self.kit.kit.clone(), name.to_owned());
        Box::pin(async move {
            kit.call(
                &name,
                arguments,
                caller,
                tokio_util::sync::CancellationToken::new(),
            )
            .await
        })
    }
    fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView> {
        if self.fault != Fault::StaleViews {
            return self.kit.view(session, key);
        }
        let cache_key = format!("{session}/{key}");
        let mut stale = turnkit_core::lock(&self.stale);
        if let Some((_, view)) = stale.iter().find(|(k, _)| *k == cache_key) {
            return Some(view.clone());
        }
        let view = self.kit.view(session, key)?;
        stale.push((cache_key, view.clone()));
        Some(view)
    }
    fn system_prompt(&self, agent: &dyn Agent) -> String {
        self.kit.system_prompt(agent)
    }
}

/// Each failed check of `HostKit` behind `fault`, with its message.
async fn failures(fault: Fault) -> Vec<(&'static str, String)> {
    let report = conformance::check_harness(|| {
        Arc::new(Broken {
            kit: Kit::new(),
            fault,
            shared: Arc::default(),
            stale: Mutex::default(),
        }) as Arc<dyn HostCandidate>
    })
    .await;
    assert_eq!(report.checks.len(), HARNESS_CHECKS.len());
    report
        .checks
        .into_iter()
        .filter_map(|c| c.outcome.err().map(|why| (c.name, why)))
        .collect()
}

fn owned(expected: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    expected
        .iter()
        .map(|(n, m)| (*n, (*m).to_owned()))
        .collect()
}

macro_rules! broken {
    ($test:ident, $fault:ident, [$(($check:literal, $message:expr)),+ $(,)?]) => {
        #[tokio::test(start_paused = true)]
        async fn $test() {
            assert_eq!(failures(Fault::$fault).await, owned(&[$(($check, $message)),+]));
        }
    };
}

broken!(
    a_taken_tool_name_accepted,
    ToolConflictAccepted,
    [("tool_conflict_refused", "a taken name was registered twice")]
);

broken!(
    scopes_ignored,
    ScopeIgnored,
    [(
        "tool_routed_by_scope",
        "a call from outside the scope answered \"ran for b\", expected \"Error: unknown tool: conformance_echo\""
    )]
);

broken!(
    schemas_loosened,
    SchemaLoosened,
    [(
        "tool_arguments_validated",
        "invalid arguments gave \"ran for none\" (is_error false), the tool ran 1 times"
    )]
);

broken!(
    tools_never_unregistered,
    ToolNeverUnregistered,
    [(
        "tool_unregisters_on_drop",
        "a call after unregister() answered \"ran for none\", expected \"Error: unknown tool: conformance_echo\""
    )]
);

broken!(
    a_taken_projection_key_accepted,
    ProjectionConflictAccepted,
    [(
        "projection_conflict_refused",
        "a taken key was registered twice"
    )]
);

broken!(
    stale_views,
    StaleViews,
    [(
        "views_follow_appends",
        "views after each append [Some((Number(1), 1)), Some((Number(1), 1))], expected [Some((Number(1), 1)), Some((Number(2), 2))]"
    )]
);

broken!(
    prompt_sections_for_everyone,
    PromptSectionForEveryone,
    [(
        "prompt_section_serves_its_scope",
        "the section showed to (its scope, another agent) (true, true), expected (true, false); after its guard dropped false"
    )]
);

broken!(
    a_directory_that_keeps_the_disposed,
    DirectoryKeepsDisposed,
    [(
        "directory_lists_live_agents",
        "agents() [\"a\", \"b\"] then [\"a\", \"b\"] after disposing a (agent(a) gone: true), expected [\"a\", \"b\"] then [\"b\"]"
    )]
);

broken!(
    a_frozen_generation,
    GenerationFrozen,
    [(
        "generation_increases",
        "generation 0, then Some(0) after a publish and Some(0) after a removal"
    )]
);

broken!(
    disposal_reported_before_the_hooks,
    DisposedReportedEarly,
    [(
        "lifecycle_reports_after_the_change",
        "lifecycle [\"created a live true\", \"disposed a live true hook ran false\", \"disposed a live false hook ran true\"], expected [\"created a live true\", \"disposed a live false hook ran true\"]"
    )]
);

broken!(
    answers_before_the_flush,
    AnswersBeforeFlush,
    [(
        "reply_is_an_acknowledgement",
        "a call that appended was answered \"appended\" before any flush of its session"
    )]
);
