//! The [`Harness`] half of the conformance suite: one named check per `Harness` obligation
//! of docs/host-contract.md, run against a host through [`HostCandidate`].

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use turnkit_core::{
    Agent, Harness, LifecycleEvent, Projection, ProjectionState, ProjectionView, PromptSection,
    RegisterError, RegistrationScope, ScopeKey, Session, SessionEvent, SessionId, Tool, ToolCall,
    ToolDefinition, ToolError, ToolOutput, same_agent,
};

use super::{Check, Report};

/// A host under test: its [`Harness`] and the host operations the trait does not name
/// (publishing and disposing agents, running a tool call, reading a view, rendering a
/// prompt), each the host's own.
pub trait HostCandidate: Send + Sync {
    /// The host as plugins see it.
    fn harness(&self) -> Arc<dyn Harness>;
    /// Creates a session `id`, publishes a fresh live root agent for it and returns it.
    fn start_agent(&self, id: &str) -> Arc<dyn Agent>;
    /// Disposes `agent` (hooks awaited, then it leaves the directory).
    fn dispose_agent(&self, agent: Arc<dyn Agent>) -> BoxFuture<'static, ()>;
    /// Publishes a fresh live root agent over `session` (the check's own, whose flush it
    /// controls) and returns it.
    fn start_agent_in(&self, session: Arc<dyn Session>) -> Arc<dyn Agent>;
    /// Runs tool `name` for `caller` the way the host answers a model's tool call: the
    /// answer is what the model is told, so it is given only after the caller's session
    /// flushed the call's events (spec decision 21).
    fn call(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
    ) -> BoxFuture<'static, ToolOutput>;
    /// The view of projection `key` for `session` that the host serves to a UI.
    fn view(&self, session: &SessionId, key: &str) -> Option<ProjectionView>;
    /// The system prompt the host gives `agent`.
    fn system_prompt(&self, agent: &dyn Agent) -> String;
}

/// The harness checks, in the order [`check_harness`] runs them; docs/host-contract.md
/// ("Harness") states the obligation behind each name.
pub const HARNESS_CHECKS: &[&str] = &[
    "tool_conflict_refused",
    "tool_routed_by_scope",
    "tool_arguments_validated",
    "tool_unregisters_on_drop",
    "projection_conflict_refused",
    "views_follow_appends",
    "prompt_section_serves_its_scope",
    "directory_lists_live_agents",
    "generation_increases",
    "lifecycle_reports_after_the_change",
    "reply_is_an_acknowledgement",
];

/// Runs every check of [`HARNESS_CHECKS`], each on a fresh host from `factory`, and
/// reports each outcome (a [`Report`] whose checks are named from [`HARNESS_CHECKS`]).
/// Never panics on a misbehaving host. Run it on a current-thread tokio runtime with time
/// paused, like [`check_agent`](super::check_agent).
pub async fn check_harness(mut factory: impl FnMut() -> Arc<dyn HostCandidate>) -> Report {
    let mut checks = Vec::new();
    for &name in HARNESS_CHECKS {
        let host = factory();
        let outcome = run(name, host.as_ref()).await;
        checks.push(Check { name, outcome });
    }
    Report { checks }
}

async fn run(name: &str, h: &dyn HostCandidate) -> Result<(), String> {
    match name {
        "tool_conflict_refused" => tool_conflict_refused(h),
        "tool_routed_by_scope" => tool_routed_by_scope(h).await,
        "tool_arguments_validated" => tool_arguments_validated(h).await,
        "tool_unregisters_on_drop" => tool_unregisters_on_drop(h).await,
        "projection_conflict_refused" => projection_conflict_refused(h),
        "views_follow_appends" => views_follow_appends(h).await,
        "prompt_section_serves_its_scope" => prompt_section_serves_its_scope(h).await,
        "directory_lists_live_agents" => directory_lists_live_agents(h).await,
        "generation_increases" => generation_increases(h).await,
        "lifecycle_reports_after_the_change" => lifecycle_reports_after_the_change(h).await,
        "reply_is_an_acknowledgement" => super::ack::reply_is_an_acknowledgement(h).await,
        other => Err(format!("unknown check {other:?}")),
    }
}

/// A tool answering `ran for <caller id>`, taking one optional string argument `word`.
struct Echo {
    definition: ToolDefinition,
    calls: Arc<Mutex<u32>>,
}

fn echo(name: &str) -> (Arc<dyn Tool>, Arc<Mutex<u32>>) {
    let calls = Arc::new(Mutex::new(0));
    let definition = ToolDefinition {
        name: name.to_owned(),
        description: "conformance echo".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": { "word": { "type": "string" } },
            "additionalProperties": false
        }),
        output_schema: None,
        annotations: None,
    };
    let tool = Arc::new(Echo {
        definition,
        calls: calls.clone(),
    });
    (tool, calls)
}

#[async_trait::async_trait]
impl Tool for Echo {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        *turnkit_core::lock(&self.calls) += 1;
        let caller = call.caller.as_ref().map_or("none", |a| a.id().as_str());
        Ok(ToolOutput::success(
            Value::Null,
            format!("ran for {caller}"),
        ))
    }
}

fn scope_of(agent: &Arc<dyn Agent>) -> RegistrationScope {
    RegistrationScope::Scoped(ScopeKey::from(agent.id()))
}

fn expect_text(what: &str, output: &ToolOutput, expected: &str) -> Result<(), String> {
    let text = output.text();
    if text == expected {
        Ok(())
    } else {
        Err(format!("{what} answered {text:?}, expected {expected:?}"))
    }
}

fn tool_conflict_refused(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let _first = harness
        .register_tool(echo("conformance_echo").0, RegistrationScope::Global)
        .map_err(|e| format!("first registration refused: {e}"))?;
    match harness.register_tool(echo("conformance_echo").0, RegistrationScope::Global) {
        Err(RegisterError::ToolConflict(name)) if name == "conformance_echo" => Ok(()),
        Err(other) => Err(format!("a taken name was refused with {other:?}")),
        Ok(_) => Err("a taken name was registered twice".to_owned()),
    }
}

async fn tool_routed_by_scope(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let a = h.start_agent("a");
    let b = h.start_agent("b");
    let _tool = harness
        .register_tool(echo("conformance_echo").0, scope_of(&a))
        .map_err(|e| format!("registration refused: {e}"))?;
    let mine = h.call("conformance_echo", json!({}), Some(a.clone())).await;
    let theirs = h.call("conformance_echo", json!({}), Some(b.clone())).await;
    let result = expect_text("a call from the scope", &mine, "ran for a").and_then(|()| {
        expect_text(
            "a call from outside the scope",
            &theirs,
            "Error: unknown tool: conformance_echo",
        )
    });
    h.dispose_agent(a).await;
    h.dispose_agent(b).await;
    result
}

async fn tool_arguments_validated(h: &dyn HostCandidate) -> Result<(), String> {
    let (tool, calls) = echo("conformance_echo");
    let _tool = h
        .harness()
        .register_tool(tool, RegistrationScope::Global)
        .map_err(|e| format!("registration refused: {e}"))?;
    let output = h.call("conformance_echo", json!({ "word": 7 }), None).await;
    let ran = *turnkit_core::lock(&calls);
    if !output.is_error || !output.text().starts_with("Error: ") || ran != 0 {
        return Err(format!(
            "invalid arguments gave {:?} (is_error {}), the tool ran {ran} times",
            output.text(),
            output.is_error
        ));
    }
    Ok(())
}

async fn tool_unregisters_on_drop(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let guard = harness
        .register_tool(echo("conformance_echo").0, RegistrationScope::Global)
        .map_err(|e| format!("registration refused: {e}"))?;
    guard.unregister();
    guard.unregister();
    let after = h.call("conformance_echo", json!({}), None).await;
    expect_text(
        "a call after unregister()",
        &after,
        "Error: unknown tool: conformance_echo",
    )?;
    let again = harness
        .register_tool(echo("conformance_echo").0, RegistrationScope::Global)
        .map_err(|e| format!("the name stayed taken after unregister(): {e}"))?;
    drop(again);
    let after = h.call("conformance_echo", json!({}), None).await;
    expect_text(
        "a call after the guard dropped",
        &after,
        "Error: unknown tool: conformance_echo",
    )
}

/// Counts the session's `conformance/tick` events.
struct Ticks;

impl Projection for Ticks {
    fn key(&self) -> &str {
        "conformance_ticks"
    }

    fn init(&self) -> ProjectionState {
        Arc::new(0_u64)
    }

    fn apply(&self, state: &ProjectionState, event: &SessionEvent) -> Option<ProjectionState> {
        let n = *state.downcast_ref::<u64>()?;
        (event.r#type == "conformance/tick").then(|| Arc::new(n + 1) as ProjectionState)
    }

    fn view(&self, state: &ProjectionState) -> Value {
        json!(state.downcast_ref::<u64>().copied().unwrap_or(0))
    }
}

fn projection_conflict_refused(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let first = harness
        .register_projection(Arc::new(Ticks))
        .map_err(|e| format!("first registration refused: {e}"))?;
    let Some(_first) = first else {
        return Ok(()); // a host without projections
    };
    match harness.register_projection(Arc::new(Ticks)) {
        Err(RegisterError::Conflict(_)) => Ok(()),
        Err(other) => Err(format!("a taken key was refused with {other:?}")),
        Ok(_) => Err("a taken key was registered twice".to_owned()),
    }
}

async fn views_follow_appends(h: &dyn HostCandidate) -> Result<(), String> {
    let registered = h
        .harness()
        .register_projection(Arc::new(Ticks))
        .map_err(|e| format!("registration refused: {e}"))?;
    let Some(_projection) = registered else {
        return Ok(()); // a host without projections
    };
    let agent = h.start_agent("a");
    let session = agent.session();
    let mut seen = Vec::new();
    for _ in 0..2 {
        session
            .append("conformance/tick", json!({}))
            .map_err(|e| format!("append failed: {e}"))?;
        let view = h.view(session.id(), "conformance_ticks");
        seen.push(view.map(|v| (v.value, v.as_of_seq)));
    }
    let len = session.len();
    h.dispose_agent(agent).await;
    let expected = vec![Some((json!(1), len - 1)), Some((json!(2), len))];
    if seen == expected {
        Ok(())
    } else {
        Err(format!(
            "views after each append {seen:?}, expected {expected:?}"
        ))
    }
}

async fn prompt_section_serves_its_scope(h: &dyn HostCandidate) -> Result<(), String> {
    let a = h.start_agent("a");
    let b = h.start_agent("b");
    let section = h.harness().register_prompt_section(PromptSection {
        name: "conformance".to_owned(),
        order: 0,
        text: "conformance section".to_owned(),
        scope: scope_of(&a),
    });
    let shows = |agent: &Arc<dyn Agent>| {
        h.system_prompt(agent.as_ref())
            .contains("conformance section")
    };
    let seen = (shows(&a), shows(&b));
    drop(section);
    let after = shows(&a);
    h.dispose_agent(a).await;
    h.dispose_agent(b).await;
    if seen == (true, false) && !after {
        Ok(())
    } else {
        Err(format!(
            "the section showed to (its scope, another agent) {seen:?}, expected (true, false); after its guard dropped {after}"
        ))
    }
}

fn ids(agents: &[Arc<dyn Agent>]) -> Vec<String> {
    agents.iter().map(|a| a.id().to_string()).collect()
}

async fn directory_lists_live_agents(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let a = h.start_agent("a");
    let b = h.start_agent("b");
    let found = harness.agent(a.id());
    let listed = ids(&harness.agents());
    h.dispose_agent(a.clone()).await;
    let gone = harness.agent(a.id()).is_none();
    let left = ids(&harness.agents());
    h.dispose_agent(b).await;
    if !found.is_some_and(|f| same_agent(&f, &a)) {
        return Err("agent(id) did not return the published agent".to_owned());
    }
    if listed != ["a", "b"] || !gone || left != ["b"] {
        return Err(format!(
            "agents() {listed:?} then {left:?} after disposing a (agent(a) gone: {gone}), expected [\"a\", \"b\"] then [\"b\"]"
        ));
    }
    Ok(())
}

async fn generation_increases(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let Some(start) = harness.agents_generation() else {
        return Ok(()); // a host without a generation
    };
    let a = h.start_agent("a");
    let published = harness.agents_generation();
    h.dispose_agent(a).await;
    let removed = harness.agents_generation();
    match (published, removed) {
        (Some(p), Some(r)) if p > start && r > p => Ok(()),
        other => Err(format!(
            "generation {start}, then {:?} after a publish and {:?} after a removal",
            other.0, other.1
        )),
    }
}

async fn lifecycle_reports_after_the_change(h: &dyn HostCandidate) -> Result<(), String> {
    let harness = h.harness();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let hook_ran = Arc::new(Mutex::new(false));
    let (sink, weak, ran) = (log.clone(), Arc::downgrade(&harness), hook_ran.clone());
    let _listening = harness.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
        let Some(harness) = weak.upgrade() else {
            return;
        };
        let line = match event {
            LifecycleEvent::Created(a) => {
                format!(
                    "created {} live {}",
                    a.id(),
                    harness.agent(a.id()).is_some()
                )
            }
            LifecycleEvent::Disposed(a) => format!(
                "disposed {} live {} hook ran {}",
                a.id(),
                harness.agent(a.id()).is_some(),
                *turnkit_core::lock(&ran)
            ),
        };
        turnkit_core::lock(&sink).push(line);
    }));
    let a = h.start_agent("a");
    let ran = hook_ran.clone();
    a.add_dispose_hook(Box::new(move || {
        Box::pin(async move {
            *turnkit_core::lock(&ran) = true;
        })
    }))
    .map_err(|e| format!("hook refused: {e}"))?;
    h.dispose_agent(a).await;
    let seen = turnkit_core::lock(&log).clone();
    let expected = ["created a live true", "disposed a live false hook ran true"];
    if seen == expected {
        Ok(())
    } else {
        Err(format!("lifecycle {seen:?}, expected {expected:?}"))
    }
}
