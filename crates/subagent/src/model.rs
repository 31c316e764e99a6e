//! The host's side of a child: [`ChildModel`] (one model step) and [`ChildContext`] (what a
//! step may see and do).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnkit_core::{Agent, AgentId, SessionId, ToolDefinition, ToolOutput, UserMessage};
use turnkit_host::{HostKit, LoopAgent};

/// What one model step of a child decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildStep {
    /// The step made tool calls (through [`ChildContext::call`]) and the model wants another
    /// step; the next step's input is the messages injected meanwhile (often none).
    Continue,
    /// The model is done: this text is the child's final answer, the job's output
    /// (todo-jobs §6: `completed`).
    Answer(String),
    /// The model stopped without an answer (`max-tokens`, a refused request, a transport
    /// error): the job settles `failed` with this text as its detail (todo-jobs §6).
    Stop(String),
}

/// The host's model step for children: the one piece of a subagent this crate does not own.
///
/// The production turn loop calls [`ChildModel::step`] repeatedly inside the child's single
/// turn: first with the child's input (the prompt, as a [`turnkit_core::MessageSource::User`]
/// message), then with the messages injected since the previous step, until it returns
/// [`ChildStep::Answer`] or [`ChildStep::Stop`]. The model keeps its own conversation state
/// (the context it sends to its LLM) across steps of one child; [`ChildContext::id`] tells
/// children apart.
///
/// Cancellation: when the job is killed (`job_kill`, the owner's disposal, the registry's
/// teardown) the step's future is dropped and [`ChildContext::cancel`] fires; a step need not
/// watch it, but a long tool call made through [`ChildContext::call`] sees it.
#[async_trait]
pub trait ChildModel: Send + Sync {
    /// Runs one model step over `input`; tool calls go through `child`.
    async fn step(&self, child: &ChildContext, input: Vec<UserMessage>) -> ChildStep;
}

/// One running child as its model step sees it: its agent, what it was asked, the tools it
/// may call and a way to call them.
pub struct ChildContext {
    pub(crate) agent: Arc<LoopAgent>,
    pub(crate) kit: Arc<HostKit>,
    pub(crate) parent: AgentId,
    pub(crate) prompt: String,
    pub(crate) description: Option<String>,
    pub(crate) cancel: CancellationToken,
}

impl std::fmt::Debug for ChildContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildContext")
            .field("id", self.agent.id())
            .field("parent", &self.parent)
            .finish_non_exhaustive()
    }
}

impl ChildContext {
    /// The child's session id (also its agent id).
    pub fn id(&self) -> SessionId {
        SessionId::from(self.agent.id())
    }

    /// The child agent (not a root; its scope chain is its own key, then its parent's chain).
    pub fn agent(&self) -> &Arc<LoopAgent> {
        &self.agent
    }

    /// The calling agent that started the child.
    pub fn parent(&self) -> &AgentId {
        &self.parent
    }

    /// The task the child was given (the `prompt` argument).
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The `description` argument, if one was given.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The tools the child may call, in registration order: global tools and those scoped
    /// to its chain. Schedule's tools are never among them (schedule §14: roots only).
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        self.kit.tool_definitions(self.agent.as_ref())
    }

    /// The system-prompt sections the child sees, rendered.
    pub fn system_prompt(&self) -> String {
        self.kit.system_prompt(self.agent.as_ref())
    }

    /// Runs tool `name` as the child (validation and `Error: <message>` rendering as for any
    /// call); the call is cancelled when the child is killed.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
        self.kit
            .call(
                name,
                arguments,
                Some(self.agent.as_dyn()),
                self.cancel.child_token(),
            )
            .await
    }

    /// Fires when the child is killed.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }
}
