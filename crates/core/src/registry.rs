//! [`ToolRegistry`]: registration with scopes, argument validation, the `Error:` envelope,
//! dispatch by name and export of definitions.

use std::sync::{Arc, Mutex};
use tracing::Instrument;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    Agent, Progress, Registered, Registration, ScopeKey, Tool, ToolCall, ToolDefinition, ToolError,
    ToolOutput, lock,
};

/// Where a registration applies (decision 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegistrationScope {
    /// Every agent (and calls without an agent).
    Global,
    /// Agents whose scope chain contains this key.
    Scoped(ScopeKey),
    /// Exactly the agent whose own key (the first of its scope chain) is this key, not the
    /// agents that have it as an ancestor (a child agent reports its parent's chain after
    /// its own key). Schedule registers its tools this way: they serve roots only
    /// (schedule §9, §14).
    Agent(ScopeKey),
}

impl RegistrationScope {
    /// Whether a caller with this scope chain sees the registration. A caller without an
    /// agent (`chain == None`) sees only global registrations.
    pub fn serves(&self, chain: Option<&[ScopeKey]>) -> bool {
        match self {
            RegistrationScope::Global => true,
            RegistrationScope::Scoped(key) => chain.is_some_and(|c| c.contains(key)),
            RegistrationScope::Agent(key) => chain.and_then(|c| c.first()) == Some(key),
        }
    }

    /// The key of a scoped or agent registration (`None` for global).
    pub fn key(&self) -> Option<&ScopeKey> {
        match self {
            RegistrationScope::Global => None,
            RegistrationScope::Scoped(key) | RegistrationScope::Agent(key) => Some(key),
        }
    }
}

/// Why a registration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// A tool with this name is already visible in an overlapping scope.
    #[error("tool {0:?} is already registered")]
    ToolConflict(String),
    /// Another kind of conflict (a projection key, a double mount).
    #[error("{0}")]
    Conflict(String),
}

/// The message of the canonical aborted result (schedule §11: `ABORTED`).
pub const ABORTED_MESSAGE: &str = "This operation was aborted";

struct Entry {
    scope: RegistrationScope,
    tool: Arc<dyn Tool>,
}

/// A host building block holding the registered tools.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    inner: Arc<Mutex<Registered<Entry>>>,
}

/// The counter behind generated tool call ids (`harness-call-<N>`).
static NEXT_CALL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

tokio::task_local! {
    static TOOL_CALL_ID: Arc<str>;
}

/// The `gen_ai.tool.call.id` of the tool call whose body is running on this task
/// ([`ToolRegistry::execute_call`]), or `None` outside one. A background job records the id
/// of the call that started it (docs/observability.md).
pub fn current_tool_call_id() -> Option<Arc<str>> {
    TOOL_CALL_ID.try_with(Arc::clone).ok()
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool` in `scope`. Two tools with one name conflict when either is global
    /// or both have the same scope key.
    ///
    /// # Errors
    /// [`RegisterError::ToolConflict`].
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        scope: RegistrationScope,
    ) -> Result<Registration, RegisterError> {
        let name = tool.definition().name.clone();
        let mut entries = lock(&self.inner);
        let conflict = entries.iter().any(|e| {
            e.tool.definition().name == name
                && (e.scope == RegistrationScope::Global
                    || scope == RegistrationScope::Global
                    || e.scope.key() == scope.key())
        });
        if conflict {
            return Err(RegisterError::ToolConflict(name));
        }
        let id = entries.insert(Entry { scope, tool });
        Ok(Registration::weak(&self.inner, move |entries| {
            lock(entries).remove(id);
        }))
    }

    /// The definitions visible to a caller with this scope chain, in registration order.
    pub fn definitions(&self, chain: Option<&[ScopeKey]>) -> Vec<ToolDefinition> {
        lock(&self.inner)
            .iter()
            .filter(|e| e.scope.serves(chain))
            .map(|e| e.tool.definition().clone())
            .collect()
    }

    /// Every registered definition (all scopes), in registration order.
    pub fn all_definitions(&self) -> Vec<ToolDefinition> {
        lock(&self.inner)
            .iter()
            .map(|e| e.tool.definition().clone())
            .collect()
    }

    /// The tool `name` visible to a caller with this scope chain.
    pub fn find(&self, name: &str, chain: Option<&[ScopeKey]>) -> Option<Arc<dyn Tool>> {
        lock(&self.inner)
            .iter()
            .find(|e| e.tool.definition().name == name && e.scope.serves(chain))
            .map(|e| e.tool.clone())
    }

    /// Runs the execution pipeline: find the tool for the caller, drop every `null` that
    /// stands for an optional argument ([`crate::null_as_absent`]: a model in OpenAI strict
    /// mode sends one for each argument it leaves out), validate the arguments against its
    /// input schema (decision 2), run the body, and render failures as `Error: <message>`
    /// (todo-jobs §1.4). Never panics on any input.
    ///
    /// Each call runs inside a `tracing` span named `execute_tool` (OpenTelemetry GenAI
    /// conventions; exported as `execute_tool {gen_ai.tool.name}` through its `otel.name`)
    /// with `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` (the requested name),
    /// `gen_ai.tool.call.id` (a process-unique `harness-call-<N>`; see
    /// [`ToolRegistry::execute_call`] for a caller's own id), `gen_ai.conversation.id` (the
    /// caller's session id, empty without a caller) and `error.type`, recorded on failure
    /// (`tool_error`, `aborted`, `unknown_tool` or `invalid_arguments`); and the earlier
    /// fields `tool`, `session` and `outcome` (`ok`, `error`, `aborted`, `unknown_tool`,
    /// `invalid_arguments`), kept as aliases for one release (docs/observability.md).
    pub async fn execute(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
    ) -> ToolOutput {
        self.execute_call(None, name, arguments, caller, cancel)
            .await
    }

    /// [`ToolRegistry::execute`] for a call the caller has an id for (the model's tool call
    /// id, an MCP request id): `call_id` becomes the span's `gen_ai.tool.call.id`, and the
    /// body sees it as [`current_tool_call_id`] (a job started by the call records it).
    /// `None` gives the call a process-unique `harness-call-<N>`.
    pub async fn execute_call(
        &self,
        call_id: Option<&str>,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
    ) -> ToolOutput {
        self.execute_reporting(
            call_id,
            name,
            arguments,
            caller,
            cancel,
            Progress::default(),
        )
        .await
    }

    /// [`ToolRegistry::execute_call`] with `progress` attached to the call
    /// ([`ToolCall::progress`]): a body that waits reports through it (an MCP request with a
    /// progress token passes one that sends `notifications/progress`).
    pub async fn execute_reporting(
        &self,
        call_id: Option<&str>,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
        progress: Progress,
    ) -> ToolOutput {
        let call_id: Arc<str> = match call_id {
            Some(id) => Arc::from(id),
            None => {
                let n = NEXT_CALL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Arc::from(format!("harness-call-{n}"))
            }
        };
        let session = caller.as_ref().map_or("", |a| a.id().as_str());
        let span = tracing::info_span!(
            "execute_tool",
            "otel.name" = %format_args!("execute_tool {name}"),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = name,
            "gen_ai.tool.call.id" = &*call_id,
            "gen_ai.conversation.id" = session,
            "error.type" = tracing::field::Empty,
            tool = name,
            session = session,
            outcome = tracing::field::Empty,
        );
        let (output, outcome) = TOOL_CALL_ID
            .scope(
                call_id,
                self.run(name, arguments, caller, cancel, progress)
                    .instrument(span.clone()),
            )
            .await;
        span.record("outcome", outcome);
        if outcome != "ok" {
            let error_type = if outcome == "error" {
                "tool_error"
            } else {
                outcome
            };
            span.record("error.type", error_type);
        }
        output
    }

    async fn run(
        &self,
        name: &str,
        arguments: Value,
        caller: Option<Arc<dyn Agent>>,
        cancel: CancellationToken,
        progress: Progress,
    ) -> (ToolOutput, &'static str) {
        let chain = caller.as_ref().map(|a| a.scope_chain());
        let Some(tool) = self.find(name, chain.as_deref()) else {
            return (
                ToolOutput::error(format!("unknown tool: {name}")),
                "unknown_tool",
            );
        };
        let schema = &tool.definition().input_schema;
        let arguments = crate::null_as_absent(schema, arguments);
        if let Err(message) = crate::validate_arguments(schema, &arguments) {
            return (ToolOutput::error(message), "invalid_arguments");
        }
        if cancel.is_cancelled() {
            return (ToolOutput::error(ABORTED_MESSAGE), "aborted");
        }
        let call = ToolCall {
            caller,
            arguments,
            cancel,
            progress,
        };
        match tool.call(call).await {
            Ok(output) => {
                let outcome = if output.is_error { "error" } else { "ok" };
                (output, outcome)
            }
            Err(ToolError::Aborted) => (ToolOutput::error(ABORTED_MESSAGE), "aborted"),
            Err(error) => (ToolOutput::error(error), "error"),
        }
    }
}
