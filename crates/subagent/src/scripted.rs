//! [`ScriptedChild`]: a scripted [`ChildModel`] for tests and the scenario runner's
//! `child_script` step (turnkit-scenario), so they need no model.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{ChildContext, ChildModel, ChildStep};
use serde_json::Value;
use turnkit_core::{SessionId, UserMessage, async_trait};

/// One model step of a scripted child.
#[derive(Clone, Debug, PartialEq)]
pub enum ChildAction {
    /// Calls `tool` with `args` as the child, keeps the result's text, and asks for
    /// another step ([`ChildStep::Continue`]).
    Call {
        /// The tool name.
        tool: String,
        /// The arguments.
        args: Value,
    },
    /// Answers with this text.
    Answer(String),
    /// Answers with the text of the last tool result (`(no tool result)` when none).
    AnswerLastResult,
    /// Answers with the names of the tools the child is offered, joined with `, `.
    AnswerTools,
    /// Stops without an answer, with this reason ([`ChildStep::Stop`]).
    Fail(String),
    /// Never finishes the step (until the child is killed).
    Hang,
}

impl ChildAction {
    /// Decodes one action: `{"call": TOOL, "args": {…}}`, `{"answer": TEXT}`,
    /// `{"answer": {"from": "lastResult"}}`, `{"answer": {"from": "tools"}}`,
    /// `{"fail": REASON}` or `{"hang": true}`.
    ///
    /// # Errors
    /// A message naming what is wrong.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| "a child step must be an object".to_owned())?;
        if let Some(tool) = object.get("call") {
            let tool = tool
                .as_str()
                .ok_or_else(|| "call must be a tool name".to_owned())?;
            let args = object
                .get("args")
                .cloned()
                .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
            return Ok(ChildAction::Call {
                tool: tool.to_owned(),
                args,
            });
        }
        match (object.get("answer"), object.get("fail"), object.get("hang")) {
            (Some(Value::String(text)), None, None) => Ok(ChildAction::Answer(text.clone())),
            (Some(Value::Object(from)), None, None) => {
                match from.get("from").and_then(Value::as_str) {
                    Some("lastResult") => Ok(ChildAction::AnswerLastResult),
                    Some("tools") => Ok(ChildAction::AnswerTools),
                    _ => Err("answer.from must be \"lastResult\" or \"tools\"".to_owned()),
                }
            }
            (None, Some(Value::String(reason)), None) => Ok(ChildAction::Fail(reason.clone())),
            (None, None, Some(Value::Bool(true))) => Ok(ChildAction::Hang),
            _ => Err(
                "a child step is one of call, answer, fail (a string) or hang (true)".to_owned(),
            ),
        }
    }
}

#[derive(Default)]
struct State {
    scripts: HashMap<String, Vec<ChildAction>>,
    running: HashMap<SessionId, Running>,
}

struct Running {
    actions: VecDeque<ChildAction>,
    last: Option<String>,
}

/// A [`ChildModel`] that plays a script chosen by the child's prompt: the first step of a
/// child looks up [`ScriptedChild::script`] for its prompt (exact text) and each step then
/// plays the next [`ChildAction`]. A prompt without a script, or a script that runs out,
/// stops the child with `no script for this prompt` / `the script ended without an answer`.
#[derive(Default)]
pub struct ScriptedChild {
    state: Mutex<State>,
}

impl std::fmt::Debug for ScriptedChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScriptedChild")
    }
}

impl ScriptedChild {
    /// A model with no scripts.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        turnkit_core::lock(&self.state)
    }

    /// Sets the script of children started on `prompt` (replacing an earlier one).
    pub fn script(&self, prompt: impl Into<String>, actions: Vec<ChildAction>) {
        self.lock().scripts.insert(prompt.into(), actions);
    }

    fn next(&self, child: &ChildContext) -> Result<(ChildAction, Option<String>), String> {
        let mut state = self.lock();
        let id = child.id();
        if !state.running.contains_key(&id) {
            let actions = state
                .scripts
                .get(child.prompt())
                .cloned()
                .ok_or_else(|| "no script for this prompt".to_owned())?;
            state.running.insert(
                id.clone(),
                Running {
                    actions: actions.into(),
                    last: None,
                },
            );
        }
        let running = state
            .running
            .get_mut(&id)
            .ok_or_else(|| "no script for this prompt".to_owned())?;
        let action = running
            .actions
            .pop_front()
            .ok_or_else(|| "the script ended without an answer".to_owned())?;
        Ok((action, running.last.clone()))
    }

    fn keep(&self, child: &ChildContext, text: String) {
        if let Some(running) = self.lock().running.get_mut(&child.id()) {
            running.last = Some(text);
        }
    }
}

#[async_trait]
impl ChildModel for ScriptedChild {
    async fn step(&self, child: &ChildContext, _input: Vec<UserMessage>) -> ChildStep {
        let (action, last) = match self.next(child) {
            Ok(next) => next,
            Err(reason) => return ChildStep::Stop(reason),
        };
        match action {
            ChildAction::Call { tool, args } => {
                let output = child.call(&tool, args).await;
                self.keep(child, output.text());
                ChildStep::Continue
            }
            ChildAction::Answer(text) => ChildStep::Answer(text),
            ChildAction::AnswerLastResult => {
                ChildStep::Answer(last.unwrap_or_else(|| "(no tool result)".to_owned()))
            }
            ChildAction::AnswerTools => {
                let names: Vec<String> = child
                    .tool_definitions()
                    .into_iter()
                    .map(|d| d.name)
                    .collect();
                ChildStep::Answer(names.join(", "))
            }
            ChildAction::Fail(reason) => ChildStep::Stop(reason),
            ChildAction::Hang => std::future::pending().await,
        }
    }
}
