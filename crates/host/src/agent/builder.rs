//! [`LoopAgentBuilder`]: the options of a [`LoopAgent`], and the agent's constructors.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use turnkit_core::{AgentId, ScopeKey, Session};

use crate::agent::loop_agent::{InputSink, LoopAgent, State, TURN_START, TurnObserver};

#[cfg(doc)]
use crate::TurnSource;
#[cfg(doc)]
use turnkit_core::Agent;

/// The observer of an agent built without one.
struct Silent;

impl TurnObserver for Silent {}

/// Options of a [`LoopAgent`], from [`LoopAgent::builder`].
pub struct LoopAgentBuilder {
    session: Arc<dyn Session>,
    root: bool,
    scope_parents: Vec<ScopeKey>,
    observer: Arc<dyn TurnObserver>,
    sink: Option<Arc<dyn InputSink>>,
}

impl LoopAgentBuilder {
    /// Marks the agent as a subagent (`false`) or a root (`true`, the default). Schedule
    /// installs only on roots (schedule §14).
    pub fn root(mut self, root: bool) -> Self {
        self.root = root;
        self
    }

    /// The ancestors reported after the agent's own key in [`Agent::scope_chain`], nearest
    /// first (todo-jobs §1.3): for a child agent, its parent's scope chain.
    pub fn scope_parents(mut self, parents: Vec<ScopeKey>) -> Self {
        self.scope_parents = parents;
        self
    }

    /// Where the agent reports queueing, claims, turns and disposal (default: nowhere).
    pub fn observer(mut self, observer: Arc<dyn TurnObserver>) -> Self {
        self.observer = observer;
        self
    }

    /// Sends every followup and injected message to `sink` instead of queueing it (default:
    /// the agent queues its own input). Such an agent opens turns only through
    /// [`LoopAgent::open_turn`] and reports what its host delivered with
    /// [`LoopAgent::report_claimed`].
    pub fn input(mut self, sink: Arc<dyn InputSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Builds the agent. Nothing runs until a driver asks for turns
    /// ([`LoopAgent::next_turn`] or a [`TurnSource`]); no tokio runtime is needed to build.
    pub fn build(self) -> Arc<LoopAgent> {
        let turns = self
            .session
            .raw_events_after(0)
            .iter()
            .filter(|e| e.r#type() == TURN_START)
            .count() as u64;
        Arc::new_cyclic(|me| LoopAgent {
            id: AgentId::from(self.session.id()),
            session: self.session,
            root: self.root,
            observer: self.observer,
            sink: self.sink,
            state: Mutex::new(State {
                turn: turns,
                scope_parents: self.scope_parents,
                ..State::default()
            }),
            wake: Arc::new(Notify::new()),
            idle: Notify::new(),
            me: me.clone(),
        })
    }
}

impl LoopAgent {
    /// A root agent over `session` with no observer.
    pub fn new(session: Arc<dyn Session>) -> Arc<Self> {
        Self::builder(session).build()
    }

    /// Options for an agent over `session`. Its turn count continues from the number of
    /// `turn/start` events already in the log (a resumed session keeps numbering).
    pub fn builder(session: Arc<dyn Session>) -> LoopAgentBuilder {
        LoopAgentBuilder {
            session,
            root: true,
            scope_parents: Vec::new(),
            observer: Arc::new(Silent),
            sink: None,
        }
    }
}
