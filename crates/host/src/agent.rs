//! [`LoopAgent`]: the production turn loop behind the [`Agent`] seam, the [`Turn`] a runtime
//! drives, the [`TurnSource`] a driver task waits on, and the [`TurnObserver`] it reports to.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;
use turnkit_core::{
    Agent, AgentError, AgentEvent, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, Registered, Registration, ScopeKey, Session, UserMessage, lock,
};

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

/// Whether a turn opens only for queued input.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opening {
    ForInput,
    Always,
}

/// The observer of an agent built without one.
struct Silent;

impl TurnObserver for Silent {}

struct Queued {
    message: UserMessage,
    client_time_zone: Option<String>,
}

#[derive(Default)]
struct State {
    turn: u64,
    turn_open: bool,
    maintenance: bool,
    paused: bool,
    disposing: bool,
    queue: VecDeque<Queued>,
    inbox: VecDeque<UserMessage>,
    client_time_zone: Option<String>,
    listeners: Registered<AgentListener>,
    hooks: Registered<DisposeHook>,
    scope_parents: Vec<ScopeKey>,
}

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
    id: AgentId,
    session: Arc<dyn Session>,
    root: bool,
    observer: Arc<dyn TurnObserver>,
    sink: Option<Arc<dyn InputSink>>,
    state: Mutex<State>,
    wake: Arc<Notify>,
    idle: Notify,
    me: Weak<LoopAgent>,
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

    fn emit(&self, event: &AgentEvent) {
        let listeners = lock(&self.state).listeners.to_vec();
        for listener in &listeners {
            listener(event);
        }
    }

    /// This agent as the trait object plugins see.
    pub fn as_dyn(self: &Arc<Self>) -> Arc<dyn Agent> {
        self.clone()
    }

    /// A handle for the driver task that does not keep the agent alive: its
    /// [`TurnSource::next_turn`] ends when the agent is disposed or dropped.
    pub fn turns(&self) -> TurnSource {
        TurnSource {
            agent: self.me.clone(),
            wake: self.wake.clone(),
        }
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

    fn enqueue(
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

    /// Opens the next turn if one may run now: the agent is idle (no turn, no maintenance
    /// guard), not paused, not disposing, and ordinary input is queued. `None` otherwise.
    pub fn try_next_turn(&self) -> Option<Turn> {
        self.open(Opening::ForInput)
    }

    /// Waits until a turn may run and opens it ([`LoopAgent::try_next_turn`]); `None` once the
    /// agent is disposing. One driver per agent: two concurrent callers may both wait.
    pub async fn next_turn(&self) -> Option<Turn> {
        loop {
            if let Some(turn) = self.try_next_turn() {
                return Some(turn);
            }
            if lock(&self.state).disposing {
                return None;
            }
            self.wake.notified().await;
        }
    }

    /// Opens a turn whether or not input is queued (a host whose own event starts a turn),
    /// claiming the first queued input, if any, and every injected message. `None` while a
    /// turn is open, a maintenance guard is held, or the agent is disposing.
    pub fn open_turn(&self) -> Option<Turn> {
        self.open(Opening::Always)
    }

    /// Waits until the agent is idle (no turn open, no maintenance guard held), then opens a
    /// turn as [`LoopAgent::open_turn`] does; `None` once the agent is disposing.
    ///
    /// A host whose own event starts a turn calls this rather than [`LoopAgent::open_turn`]
    /// when a plugin may be delivering at that moment: a reminder is queued with
    /// [`Agent::followup`] while the schedule runtime holds its maintenance guard
    /// (docs/host-contract.md, "Maintenance"), so a host that reacts to the followup at once
    /// finds the agent busy; the turn this opens, once the guard drops, claims that input.
    pub async fn open_turn_when_idle(&self) -> Option<Turn> {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if let Some(turn) = self.open_turn() {
                return Some(turn);
            }
            if lock(&self.state).disposing {
                return None;
            }
            idle.await;
        }
    }

    fn open(&self, opening: Opening) -> Option<Turn> {
        let agent = self.me.upgrade()?;
        let (number, claimed) = {
            let mut state = lock(&self.state);
            if state.turn_open || state.maintenance || state.disposing {
                return None;
            }
            if opening == Opening::ForInput && (state.paused || state.queue.is_empty()) {
                return None;
            }
            state.turn += 1;
            state.turn_open = true;
            let mut claimed = Vec::new();
            if let Some(queued) = state.queue.pop_front() {
                if queued.client_time_zone.is_some() {
                    state.client_time_zone = queued.client_time_zone;
                }
                claimed.push(queued.message);
            }
            claimed.extend(state.inbox.drain(..));
            (state.turn, claimed)
        };
        self.append_turn_event(TURN_START, number);
        self.observer.turn_started(&self.id, number);
        self.emit(&AgentEvent::Status(AgentStatus::Running));
        self.claim(number, &claimed);
        Some(Turn {
            agent,
            number,
            input: claimed,
            open: true,
        })
    }

    fn claim(&self, turn: u64, messages: &[UserMessage]) {
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

    fn claim_pending(&self, turn: u64) -> Vec<UserMessage> {
        let pending: Vec<UserMessage> = lock(&self.state).inbox.drain(..).collect();
        self.claim(turn, &pending);
        pending
    }

    fn close_turn(&self, turn: u64) -> Vec<UserMessage> {
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

    fn append_turn_event(&self, r#type: &str, turn: u64) {
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

    fn is_idle(&self) -> bool {
        let state = lock(&self.state);
        !state.turn_open && !state.maintenance
    }
}

/// The driver's handle of a [`LoopAgent`] ([`LoopAgent::turns`]). It holds the agent weakly,
/// so a driver task never keeps an abandoned agent (and its session) alive.
#[derive(Clone)]
pub struct TurnSource {
    agent: Weak<LoopAgent>,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for TurnSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurnSource")
    }
}

impl TurnSource {
    /// Waits until a turn may run and opens it, like [`LoopAgent::next_turn`]; `None` once
    /// the agent is disposing or dropped.
    pub async fn next_turn(&self) -> Option<Turn> {
        loop {
            {
                let agent = self.agent.upgrade()?;
                if let Some(turn) = agent.try_next_turn() {
                    return Some(turn);
                }
                if lock(&agent.state).disposing {
                    return None;
                }
            }
            self.wake.notified().await;
        }
    }
}

/// An open turn of a [`LoopAgent`]. The runtime runs its model steps while holding it,
/// claims injected messages between steps and finishes it; dropping it finishes it too,
/// unless the agent is disposed by then (a disposed agent reports nothing more).
#[must_use = "a turn is open until it is finished or dropped"]
pub struct Turn {
    agent: Arc<LoopAgent>,
    number: u64,
    input: Vec<UserMessage>,
    open: bool,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("agent", &self.agent.id)
            .field("number", &self.number)
            .finish_non_exhaustive()
    }
}

impl Turn {
    /// The 1-based turn number (the `turn` of its `turn/start` event).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<LoopAgent> {
        &self.agent
    }

    /// The messages claimed when the turn opened (the queued input first, then the injected
    /// messages), still held by the turn.
    pub fn input(&self) -> &[UserMessage] {
        &self.input
    }

    /// Takes the messages claimed when the turn opened, for the first model step.
    pub fn take_input(&mut self) -> Vec<UserMessage> {
        std::mem::take(&mut self.input)
    }

    /// Claims every injected message now pending (each reported as
    /// [`AgentEvent::InboxClaimed`] with this turn's number), for the next model step. Call
    /// it between steps; when it returns nothing and the model is done, finish the turn.
    pub fn claim_injected(&mut self) -> Vec<UserMessage> {
        self.agent.claim_pending(self.number)
    }

    /// Closes the turn: claims injected messages until the inbox stays empty, appends
    /// `turn/end`, then reports idle and wakes the driver. Returns what this closing step
    /// claimed (normally nothing: a message injected after the runtime's last
    /// [`Turn::claim_injected`]); the runtime carries it into the next turn's context.
    pub fn finish(mut self) -> Vec<UserMessage> {
        self.open = false;
        self.agent.close_turn(self.number)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        // After disposal nothing more is reported: an abandoned turn is left as it was.
        if self.open && !self.agent.is_disposed() {
            self.open = false;
            self.agent.close_turn(self.number);
        }
    }
}

#[async_trait]
impl Agent for LoopAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn session(&self) -> Arc<dyn Session> {
        self.session.clone()
    }

    fn is_root(&self) -> bool {
        self.root
    }

    fn scope_chain(&self) -> Vec<ScopeKey> {
        let mut chain = vec![ScopeKey::from(&self.id)];
        chain.extend(lock(&self.state).scope_parents.iter().cloned());
        chain
    }

    fn status(&self) -> AgentStatus {
        if lock(&self.state).turn_open {
            AgentStatus::Running
        } else {
            AgentStatus::Idle
        }
    }

    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        self.enqueue(message, None, true)
    }

    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        let reported = message.clone();
        let forward = {
            let mut state = lock(&self.state);
            if state.disposing {
                return Err(AgentError::Disposed(self.id.clone()));
            }
            if self.sink.is_none() {
                state.inbox.push_back(message);
                None
            } else {
                Some(message)
            }
        };
        if let (Some(sink), Some(message)) = (&self.sink, forward) {
            sink.inject(message).map_err(AgentError::Refused)?;
        }
        self.observer.injected(&self.id, &reported);
        Ok(())
    }

    fn withdraw_injected(&self, message_id: &str) -> Option<UserMessage> {
        let mut state = lock(&self.state);
        let index = state.inbox.iter().position(|m| m.id == message_id)?;
        state.inbox.remove(index)
    }

    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        {
            let mut state = lock(&self.state);
            if state.turn_open || state.maintenance || state.disposing {
                return Err(Busy);
            }
            state.maintenance = true;
        }
        let me = self.me.clone();
        Ok(MaintenanceGuard::new(move || {
            if let Some(agent) = me.upgrade() {
                lock(&agent.state).maintenance = false;
                agent.idle.notify_waiters();
                agent.wake.notify_one();
            }
        }))
    }

    async fn when_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_idle() || lock(&self.state).disposing {
                return;
            }
            notified.await;
        }
    }

    fn client_time_zone(&self) -> Option<String> {
        lock(&self.state).client_time_zone.clone()
    }

    fn add_dispose_hook(&self, hook: DisposeHook) -> Result<HookId, AgentError> {
        let mut state = lock(&self.state);
        if state.disposing {
            return Err(AgentError::Disposed(self.id.clone()));
        }
        Ok(HookId(state.hooks.insert(hook)))
    }

    fn remove_dispose_hook(&self, id: HookId) -> Option<DisposeHook> {
        lock(&self.state).hooks.remove(id.0)
    }

    fn subscribe(&self, listener: AgentListener) -> Registration {
        let id = lock(&self.state).listeners.insert(listener);
        Registration::from_weak(self.me.clone(), move |agent| {
            lock(&agent.state).listeners.remove(id);
        })
    }

    fn is_disposed(&self) -> bool {
        lock(&self.state).disposing
    }
}
