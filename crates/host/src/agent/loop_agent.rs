//! [`LoopAgent`] itself: its state behind one lock, the input it queues, the claims it
//! reports and its disposal, with the two seams it reports to ([`TurnObserver`],
//! [`InputSink`]) and the turn events it appends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;
use turnkit_core::{
    Agent, AgentError, AgentEvent, AgentId, AgentListener, AgentStatus, DisposeHook, Registered,
    ScopeKey, Session, UserMessage, lock,
};

#[cfg(doc)]
use crate::{LoopAgentBuilder, Turn, TurnSource};

/// What a host hears from a [`LoopAgent`], each call made after the state it reports is
/// already true and without any lock of the agent held (so a callback may call back into the
/// agent). Every method has an empty default, except [`TurnObserver::shutting_down`], which
/// flushes the session.
#[async_trait]
pub trait TurnObserver: Send + Sync {
    /// A followup was queued ([`Agent::followup`]); the driver is woken after this returns.
    fn followup_queued(&self, agent: &AgentId, message: &UserMessage) {
        let _ = (agent, message);
    }

    /// A message was put in the next-step inbox ([`Agent::inject`]).
    fn injected(&self, agent: &AgentId, message: &UserMessage) {
        let _ = (agent, message);
    }

    /// Turn `turn` (1-based) opened: `turn/start` is in the log; the agent reports
    /// [`AgentStatus::Running`] right after this returns.
    fn turn_started(&self, agent: &AgentId, turn: u64) {
        let _ = (agent, turn);
    }

    /// `message` entered a step of turn `turn`; listeners get
    /// [`AgentEvent::InboxClaimed`] right after this returns.
    fn claimed(&self, agent: &AgentId, turn: u64, message: &UserMessage) {
        let _ = (agent, turn, message);
    }

    /// Turn `turn` closed: `turn/end` is in the log but the agent has not reported idle yet.
    /// This is the idle-transition window of docs/spec/README.md decision 12: a message
    /// injected now stays in the inbox and the agent reports idle anyway, so a plugin must
    /// (and tool-jobs does) move it to a followup when it hears [`AgentStatus::Idle`].
    fn turn_ended(&self, agent: &AgentId, turn: u64) {
        let _ = (agent, turn);
    }

    /// Disposal ran and awaited every disposal hook; [`AgentEvent::Disposed`] follows when
    /// this completes. The default flushes `session` (a graceful shutdown persists what the
    /// log holds) and logs a failure as a warning.
    async fn shutting_down(&self, agent: &AgentId, session: &Arc<dyn Session>) {
        if let Err(error) = session.flush().await {
            tracing::warn!(agent = %agent, "could not flush the session at disposal: {error}");
        }
    }

    /// The agent is disposed: [`AgentEvent::Disposed`] was delivered and its listeners are
    /// gone. A host removes it from its directory here.
    fn disposed(&self, agent: &Arc<LoopAgent>) {
        let _ = agent;
    }
}

/// Where the input of an agent that no turn loop drives goes instead of the agent's own queue
/// and next-step inbox ([`LoopAgentBuilder::input`]): a host that hands owed messages out by
/// itself (an MCP server returns them with the next tool result) and reports each one it
/// handed out with [`LoopAgent::report_claimed`].
pub trait InputSink: Send + Sync {
    /// Takes a followup ([`Agent::followup`], [`LoopAgent::send`]); an `Err` text reaches
    /// the caller as [`AgentError::Refused`].
    ///
    /// # Errors
    /// The sink's own refusal, e.g. a log that cannot record the message.
    fn followup(&self, message: UserMessage) -> Result<(), String>;

    /// Takes an injected message ([`Agent::inject`]); an `Err` text reaches the caller as
    /// [`AgentError::Refused`].
    ///
    /// # Errors
    /// The sink's own refusal, as for [`InputSink::followup`].
    fn inject(&self, message: UserMessage) -> Result<(), String>;
}

pub(super) struct Queued {
    pub(super) message: UserMessage,
    pub(super) client_time_zone: Option<String>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) turn: u64,
    pub(super) turn_open: bool,
    pub(super) maintenance: bool,
    pub(super) paused: bool,
    pub(super) disposing: bool,
    pub(super) queue: VecDeque<Queued>,
    pub(super) inbox: VecDeque<UserMessage>,
    pub(super) client_time_zone: Option<String>,
    pub(super) listeners: Registered<AgentListener>,
    pub(super) hooks: Registered<DisposeHook>,
    pub(super) scope_parents: Vec<ScopeKey>,
}

/// The event a turn opens with; payload `{"turn": N}`.
pub const TURN_START: &str = "turn/start";
/// The event a turn closes with; payload `{"turn": N}`.
pub const TURN_END: &str = "turn/end";

/// The production turn loop: an [`Agent`] whose state machine is complete and whose model
/// step is the runtime's. The obligations it keeps are those of docs/host-contract.md:
///
/// * **Followups open turns.** [`Agent::followup`] and [`LoopAgent::send`] queue ordinary
///   input and wake the driver; an idle driver opens one turn per queued input
///   ([`LoopAgent::next_turn`]): `turn/start` `{"turn": N}` is appended, the agent reports
///   [`AgentStatus::Running`], then the input and every injected message are claimed
///   ([`AgentEvent::InboxClaimed`], in that order).
/// * **The next-step inbox.** [`Agent::inject`] never wakes the driver. The runtime claims
///   injected messages between model steps ([`Turn::claim_injected`]); [`Turn::finish`]
///   claims until the inbox stays empty, so a turn never ends with one pending.
/// * **Closing.** `turn/end` is appended, [`TurnObserver::turn_ended`] sees the
///   idle-transition window, then the agent reports [`AgentStatus::Idle`] and wakes the
///   driver for the next queued input.
/// * **Maintenance.** [`Agent::try_begin_maintenance`] is refused during a turn, under
///   another guard and after disposal; queued input is parked until the guard drops.
/// * **Disposal.** [`LoopAgent::dispose`] refuses new input, runs and awaits every disposal
///   hook in registration order, lets the observer flush, reports [`AgentEvent::Disposed`]
///   (the last event) and ends the driver.
///
/// A runtime drives it with one task per agent:
///
/// ```
/// # use std::sync::Arc;
/// # use turnkit_core::{Agent, MemoryStore, MessageSource, SessionHeader, SessionStore, SystemClock, UserMessage};
/// # use turnkit_host::LoopAgent;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = MemoryStore::new(Arc::new(SystemClock));
/// let agent = LoopAgent::new(store.create(SessionHeader::new("s1"))?);
/// let driver = agent.turns();
/// let (ended, mut turns_ended) = tokio::sync::mpsc::unbounded_channel();
/// let runtime = tokio::spawn(async move {
///     while let Some(mut turn) = driver.next_turn().await {
///         let mut context: Vec<UserMessage> = turn.take_input();
///         loop {
///             // One model step over `context` would run here (tool calls included).
///             let late = turn.claim_injected();
///             if late.is_empty() {
///                 break;
///             }
///             context.extend(late);
///         }
///         let number = turn.number();
///         turn.finish();
///         let _ = ended.send(number);
///     }
/// });
/// agent.followup(UserMessage::text("hello", MessageSource::User))?;
/// assert_eq!(turns_ended.recv().await, Some(1));
/// agent.dispose().await;
/// runtime.await?;
/// # Ok(())
/// # }
/// ```
pub struct LoopAgent {
    pub(super) id: AgentId,
    pub(super) session: Arc<dyn Session>,
    pub(super) root: bool,
    pub(super) observer: Arc<dyn TurnObserver>,
    pub(super) sink: Option<Arc<dyn InputSink>>,
    pub(super) state: Mutex<State>,
    pub(super) wake: Arc<Notify>,
    pub(super) idle: Notify,
    pub(super) me: Weak<LoopAgent>,
}

impl std::fmt::Debug for LoopAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("LoopAgent")
            .field("id", &self.id)
            .field("turn", &state.turn)
            .field("turn_open", &state.turn_open)
            .field("maintenance", &state.maintenance)
            .field("disposing", &state.disposing)
            .finish_non_exhaustive()
    }
}

impl Drop for LoopAgent {
    fn drop(&mut self) {
        // Ends a waiting `TurnSource::next_turn`, which then finds the agent gone.
        self.wake.notify_one();
    }
}

impl LoopAgent {
    pub(super) fn emit(&self, event: &AgentEvent) {
        let listeners = lock(&self.state).listeners.to_vec();
        for listener in &listeners {
            listener(event);
        }
    }

    /// This agent as the trait object plugins see.
    pub fn as_dyn(self: &Arc<Self>) -> Arc<dyn Agent> {
        self.clone()
    }

    /// Queues user input (or any ordinary input a host receives) for a turn of its own and
    /// wakes the driver. `client_time_zone` becomes [`Agent::client_time_zone`] when the
    /// input is claimed (decision 6). Unlike [`Agent::followup`], the observer hears
    /// nothing.
    ///
    /// # Errors
    /// [`AgentError::Disposed`] once disposal has begun.
    pub fn send(
        &self,
        message: UserMessage,
        client_time_zone: Option<String>,
    ) -> Result<(), AgentError> {
        self.enqueue(message, client_time_zone, false)
    }

    pub(super) fn enqueue(
        &self,
        message: UserMessage,
        client_time_zone: Option<String>,
        report: bool,
    ) -> Result<(), AgentError> {
        let reported = report.then(|| message.clone());
        let forward = {
            let mut state = lock(&self.state);
            if state.disposing {
                return Err(AgentError::Disposed(self.id.clone()));
            }
            if self.sink.is_none() {
                state.queue.push_back(Queued {
                    message,
                    client_time_zone,
                });
                None
            } else {
                Some(message)
            }
        };
        if let (Some(sink), Some(message)) = (&self.sink, forward) {
            sink.followup(message).map_err(AgentError::Refused)?;
        }
        if let Some(message) = reported {
            self.observer.followup_queued(&self.id, &message);
        }
        // `notify_one` stores a permit when no driver waits, so no wake-up is lost.
        self.wake.notify_one();
        Ok(())
    }

    pub(super) fn claim(&self, turn: u64, messages: &[UserMessage]) {
        for message in messages {
            self.observer.claimed(&self.id, turn, message);
            self.emit(&AgentEvent::InboxClaimed {
                message: message.clone(),
                turn,
            });
        }
    }

    /// Reports `messages`, which the host of an agent with an [`InputSink`] delivered itself
    /// (outside any turn), as claimed: [`TurnObserver::claimed`], then
    /// [`AgentEvent::InboxClaimed`] for each, in order, with `turn` the number of turns
    /// started so far (0 in a session no turn ran in).
    pub fn report_claimed(&self, messages: &[UserMessage]) {
        let turn = lock(&self.state).turn;
        self.claim(turn, messages);
    }

    pub(super) fn claim_pending(&self, turn: u64) -> Vec<UserMessage> {
        let pending: Vec<UserMessage> = lock(&self.state).inbox.drain(..).collect();
        self.claim(turn, &pending);
        pending
    }

    pub(super) fn close_turn(&self, turn: u64) -> Vec<UserMessage> {
        let mut late = Vec::new();
        loop {
            let pending = self.claim_pending(turn);
            if pending.is_empty() {
                break;
            }
            late.extend(pending);
        }
        self.append_turn_event(TURN_END, turn);
        self.observer.turn_ended(&self.id, turn);
        lock(&self.state).turn_open = false;
        self.emit(&AgentEvent::Status(AgentStatus::Idle));
        self.idle.notify_waiters();
        self.wake.notify_one();
        late
    }

    pub(super) fn append_turn_event(&self, r#type: &str, turn: u64) {
        if let Err(error) = self.session.append(r#type, json!({ "turn": turn })) {
            tracing::warn!(agent = %self.id, "could not append {type}: {error}");
        }
    }

    /// Stops (`true`) or resumes (`false`) opening turns for queued input; a paused agent
    /// still accepts input and [`LoopAgent::open_turn`] still works. Resuming wakes the
    /// driver.
    pub fn set_paused(&self, paused: bool) {
        lock(&self.state).paused = paused;
        if !paused {
            self.wake.notify_one();
        }
    }

    /// Replaces the ancestors reported after the agent's own key in [`Agent::scope_chain`].
    pub fn set_scope_parents(&self, parents: Vec<ScopeKey>) {
        lock(&self.state).scope_parents = parents;
    }

    /// Whether a turn is open.
    pub fn turn_open(&self) -> bool {
        lock(&self.state).turn_open
    }

    /// The number of turns started in this session so far (resumed sessions included).
    pub fn turns_started(&self) -> u64 {
        lock(&self.state).turn
    }

    /// Injected messages no step has claimed yet, oldest first.
    pub fn pending_injected(&self) -> Vec<UserMessage> {
        lock(&self.state).inbox.iter().cloned().collect()
    }

    /// Queued ordinary input no turn has claimed yet, oldest first.
    pub fn pending_input(&self) -> Vec<UserMessage> {
        lock(&self.state)
            .queue
            .iter()
            .map(|q| q.message.clone())
            .collect()
    }

    /// Disposes the agent: refuses new input and new hooks, runs and awaits every disposal
    /// hook in registration order, awaits [`TurnObserver::shutting_down`], reports
    /// [`AgentEvent::Disposed`], drops every listener, calls [`TurnObserver::disposed`], and
    /// ends the driver's [`TurnSource::next_turn`]. Idempotent: a second call returns at
    /// once. A turn still open stays open; its [`Turn::finish`] still closes it.
    pub async fn dispose(&self) {
        let hooks = {
            let mut state = lock(&self.state);
            if state.disposing {
                return;
            }
            state.disposing = true;
            state.hooks.drain()
        };
        for hook in hooks {
            hook().await;
        }
        self.observer.shutting_down(&self.id, &self.session).await;
        self.emit(&AgentEvent::Disposed);
        lock(&self.state).listeners.clear();
        if let Some(me) = self.me.upgrade() {
            self.observer.disposed(&me);
        }
        self.idle.notify_waiters();
        self.wake.notify_one();
    }

    pub(super) fn is_idle(&self) -> bool {
        let state = lock(&self.state);
        !state.turn_open && !state.maintenance
    }
}
