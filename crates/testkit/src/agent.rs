//! [`MemoryAgent`]: a real in-memory turn loop implementing [`Agent`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use harness_core::{
    Agent, AgentError, AgentEvent, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, MessageSource, Registration, ScopeKey, Session, UserMessage,
};
use serde_json::json;
use tokio::sync::Notify;

use crate::faults::HostSession;
use crate::host::HostShared;

/// What the host did, for transcripts (scenarios.md "Transcript lines").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostRecord {
    /// A plugin queued a followup.
    Followup {
        /// The session.
        session: String,
        /// The message text.
        text: String,
    },
    /// A plugin injected a next-step message.
    Inject {
        /// The session.
        session: String,
        /// The message text.
        text: String,
    },
    /// A message entered a step.
    Claimed {
        /// The session.
        session: String,
        /// `user` or the plugin name.
        source: String,
        /// The message text.
        text: String,
    },
    /// A turn opened (`start`) or closed (`end`).
    Turn {
        /// The session.
        session: String,
        /// `start` or `end`.
        phase: &'static str,
    },
}

struct Queued {
    message: UserMessage,
    client_time_zone: Option<String>,
}

#[derive(Default)]
struct State {
    turn: u64,
    turn_open: bool,
    maintenance: bool,
    disposing: bool,
    queue: VecDeque<Queued>,
    inbox: VecDeque<UserMessage>,
    client_time_zone: Option<String>,
    next_id: u64,
    listeners: Vec<(u64, AgentListener)>,
    hooks: Vec<(HookId, DisposeHook)>,
    pre_idle: Option<Box<dyn FnMut() + Send>>,
    scope_parents: Vec<ScopeKey>,
}

/// An agent with a real turn loop, for tests and scenarios.
///
/// * [`Agent::followup`] and [`MemoryAgent::send_user`] queue ordinary input; with auto
///   turns on, the agent's driver task runs one turn per queued input as soon as the agent is
///   idle: `turn/start`, the input and every injected message claimed, `turn/end`. No model
///   acts in that turn; tests and scenarios play the model between steps.
/// * [`Agent::inject`] adds to the next-step inbox without waking the driver; a turn cannot
///   end while that inbox is non-empty.
/// * [`MemoryAgent::start_turn`] / [`MemoryAgent::end_turn`] drive a turn by hand.
/// * [`Agent::try_begin_maintenance`] is refused while a turn or another maintenance task
///   runs; input that arrives meanwhile is parked until the guard drops.
/// * [`MemoryAgent::dispose`] runs and awaits the disposal hooks, then flushes the store
///   (bypassing fault injection), as a graceful shutdown would.
pub struct MemoryAgent {
    id: AgentId,
    session: Arc<dyn Session>,
    host_session: Arc<HostSession>,
    host: Arc<HostShared>,
    state: Mutex<State>,
    wake: Arc<Notify>,
    idle: Notify,
    me: Weak<MemoryAgent>,
}

impl std::fmt::Debug for MemoryAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryAgent")
            .field("id", &self.id)
            .field("turn", &state.turn)
            .field("turn_open", &state.turn_open)
            .field("maintenance", &state.maintenance)
            .field("disposing", &state.disposing)
            .finish_non_exhaustive()
    }
}

impl MemoryAgent {
    pub(crate) fn spawn(host_session: Arc<HostSession>, host: Arc<HostShared>) -> Arc<Self> {
        let session: Arc<dyn Session> = host_session.clone();
        let turns = session
            .raw_events_after(0)
            .iter()
            .filter(|e| e.r#type() == "turn/start")
            .count() as u64;
        let agent = Arc::new_cyclic(|me| MemoryAgent {
            id: AgentId::from(session.id()),
            session,
            host_session,
            host,
            state: Mutex::new(State {
                turn: turns,
                ..State::default()
            }),
            wake: Arc::new(Notify::new()),
            idle: Notify::new(),
            me: me.clone(),
        });
        let driver = Arc::downgrade(&agent);
        let wake = agent.wake.clone();
        tokio::spawn(async move { drive(driver, wake).await });
        agent
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This agent as a trait object.
    pub fn as_dyn(self: &Arc<Self>) -> Arc<dyn Agent> {
        self.clone()
    }

    fn emit(&self, events: &[AgentEvent]) {
        if events.is_empty() {
            return;
        }
        let listeners: Vec<AgentListener> = self
            .lock()
            .listeners
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for event in events {
            for listener in &listeners {
                listener(event);
            }
        }
    }

    fn record(&self, record: HostRecord) {
        self.host.record(record);
    }

    /// A user-typed message (scenario `user` step): queued as ordinary input, claimed at the
    /// start of the next turn; wakes the driver. `client_time_zone` becomes the agent's
    /// client zone when the message is claimed.
    ///
    /// # Errors
    /// [`AgentError::Disposed`].
    pub fn send_user(
        &self,
        text: impl Into<String>,
        client_time_zone: Option<String>,
    ) -> Result<(), AgentError> {
        self.enqueue(
            UserMessage::text(text, MessageSource::User),
            client_time_zone,
            None,
        )
    }

    /// Queues ordinary input, then reports `record` (the input is already queued when the
    /// recorder sees it, so a runtime that opens a turn on that report claims it), then
    /// wakes the driver.
    fn enqueue(
        &self,
        message: UserMessage,
        client_time_zone: Option<String>,
        record: Option<HostRecord>,
    ) -> Result<(), AgentError> {
        {
            let mut state = self.lock();
            if state.disposing {
                return Err(AgentError::Disposed(self.id.clone()));
            }
            state.queue.push_back(Queued {
                message,
                client_time_zone,
            });
        }
        if let Some(record) = record {
            self.record(record);
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Opens a turn by hand: appends `turn/start`, then claims the first queued input and
    /// every injected message. Does nothing if a turn is already open.
    pub fn start_turn(&self) {
        let (turn, claimed) = {
            let mut state = self.lock();
            if state.turn_open || state.disposing {
                return;
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
        self.append_turn_event("turn/start", turn);
        self.record(HostRecord::Turn {
            session: self.id.to_string(),
            phase: "start",
        });
        self.emit(&[AgentEvent::Status(AgentStatus::Running)]);
        self.claim(turn, claimed);
    }

    /// Closes the open turn: claims injected messages until the inbox stays empty, appends
    /// `turn/end`, then reports idle. Does nothing if no turn is open.
    pub fn end_turn(&self) {
        let turn = {
            let state = self.lock();
            if !state.turn_open {
                return;
            }
            state.turn
        };
        loop {
            let pending: Vec<UserMessage> = self.lock().inbox.drain(..).collect();
            if pending.is_empty() {
                break;
            }
            self.claim(turn, pending);
        }
        self.append_turn_event("turn/end", turn);
        self.record(HostRecord::Turn {
            session: self.id.to_string(),
            phase: "end",
        });
        let hook = self.lock().pre_idle.take();
        if let Some(mut hook) = hook {
            hook();
            let mut state = self.lock();
            if state.pre_idle.is_none() {
                state.pre_idle = Some(hook);
            }
        }
        self.lock().turn_open = false;
        self.emit(&[AgentEvent::Status(AgentStatus::Idle)]);
        self.idle.notify_waiters();
        self.wake.notify_one();
    }

    fn claim(&self, turn: u64, messages: Vec<UserMessage>) {
        for message in messages {
            self.record(HostRecord::Claimed {
                session: self.id.to_string(),
                source: message.source.name().to_owned(),
                text: message.joined_text(),
            });
            self.emit(&[AgentEvent::InboxClaimed { message, turn }]);
        }
    }

    fn append_turn_event(&self, r#type: &str, turn: u64) {
        if let Err(error) = self.session.append(r#type, json!({ "turn": turn })) {
            tracing::warn!(agent = %self.id, "could not append {type}: {error}");
        }
    }

    /// Installs a hook that runs after `turn/end` is appended but before the agent reports
    /// idle — the window of decision 12, reproduced deterministically.
    pub fn set_pre_idle_hook(&self, hook: impl FnMut() + Send + 'static) {
        self.lock().pre_idle = Some(Box::new(hook));
    }

    /// Sets the ancestors reported after the agent's own key in [`Agent::scope_chain`]
    /// (e.g. a preset's key), nearest first, for tests of scoped registrations
    /// (todo-jobs §1.3).
    pub fn set_scope_parents(&self, parents: Vec<ScopeKey>) {
        self.lock().scope_parents = parents;
    }

    /// Whether a turn is open.
    pub fn turn_open(&self) -> bool {
        self.lock().turn_open
    }

    /// The number of turns started in this session so far.
    pub fn turns(&self) -> u64 {
        self.lock().turn
    }

    /// Texts of injected messages not yet claimed.
    pub fn pending_injected(&self) -> Vec<String> {
        self.lock().inbox.iter().map(|m| m.joined_text()).collect()
    }

    /// Texts of queued ordinary input not yet claimed.
    pub fn pending_input(&self) -> Vec<String> {
        self.lock()
            .queue
            .iter()
            .map(|q| q.message.joined_text())
            .collect()
    }

    /// Disposes the agent: refuses new input, runs and awaits every disposal hook, emits
    /// [`AgentEvent::Disposed`], and removes it from the host's directory. Idempotent.
    pub async fn dispose(&self) {
        let hooks = {
            let mut state = self.lock();
            if state.disposing {
                return;
            }
            state.disposing = true;
            std::mem::take(&mut state.hooks)
        };
        for (_, hook) in hooks {
            hook().await;
        }
        // A graceful shutdown persists what the log holds (a crash is a restart without it).
        if let Err(error) = self.host_session.flush_store().await {
            tracing::warn!(agent = %self.id, "could not flush the session at disposal: {error}");
        }
        self.emit(&[AgentEvent::Disposed]);
        self.lock().listeners.clear();
        if let Some(me) = self.me.upgrade() {
            self.host.directory.remove(&me.as_dyn());
        }
        // The projections hold the session; once no live agent uses it, let go of it, so a
        // durable store's handle (and its file lock) closes when the last user drops it.
        if self.host.directory.get(&self.id).is_none() {
            self.host_session.untrack();
        }
        self.idle.notify_waiters();
        self.wake.notify_one();
    }

    fn runnable(&self) -> bool {
        let state = self.lock();
        self.host.auto_turns()
            && !state.disposing
            && !state.turn_open
            && !state.maintenance
            && !state.queue.is_empty()
    }

    fn is_idle(&self) -> bool {
        let state = self.lock();
        !state.turn_open && !state.maintenance
    }
}

async fn drive(agent: Weak<MemoryAgent>, wake: Arc<Notify>) {
    loop {
        {
            let Some(strong) = agent.upgrade() else {
                return;
            };
            if strong.lock().disposing {
                return;
            }
            while strong.runnable() {
                strong.start_turn();
                strong.end_turn();
            }
        }
        // `notify_one` stores a permit when nobody waits, so no wake-up is lost here.
        wake.notified().await;
    }
}

#[async_trait]
impl Agent for MemoryAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn session(&self) -> Arc<dyn Session> {
        self.session.clone()
    }

    fn scope_chain(&self) -> Vec<ScopeKey> {
        let mut chain = vec![ScopeKey::from(&self.id)];
        chain.extend(self.lock().scope_parents.iter().cloned());
        chain
    }

    fn status(&self) -> AgentStatus {
        if self.lock().turn_open {
            AgentStatus::Running
        } else {
            AgentStatus::Idle
        }
    }

    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        let text = message.joined_text();
        self.enqueue(
            message,
            None,
            Some(HostRecord::Followup {
                session: self.id.to_string(),
                text,
            }),
        )
    }

    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        let text = message.joined_text();
        {
            let mut state = self.lock();
            if state.disposing {
                return Err(AgentError::Disposed(self.id.clone()));
            }
            state.inbox.push_back(message);
        }
        self.record(HostRecord::Inject {
            session: self.id.to_string(),
            text,
        });
        Ok(())
    }

    fn withdraw_injected(&self, message_id: &str) -> Option<UserMessage> {
        let mut state = self.lock();
        let index = state.inbox.iter().position(|m| m.id == message_id)?;
        state.inbox.remove(index)
    }

    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        {
            let mut state = self.lock();
            if state.turn_open || state.maintenance || state.disposing {
                return Err(Busy);
            }
            state.maintenance = true;
        }
        let me = self.me.clone();
        Ok(MaintenanceGuard::new(move || {
            if let Some(agent) = me.upgrade() {
                agent.lock().maintenance = false;
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
            if self.is_idle() || self.lock().disposing {
                return;
            }
            notified.await;
        }
    }

    fn client_time_zone(&self) -> Option<String> {
        self.lock().client_time_zone.clone()
    }

    fn add_dispose_hook(&self, hook: DisposeHook) -> Result<HookId, AgentError> {
        let mut state = self.lock();
        if state.disposing {
            return Err(AgentError::Disposed(self.id.clone()));
        }
        state.next_id += 1;
        let id = HookId(state.next_id);
        state.hooks.push((id, hook));
        Ok(id)
    }

    fn remove_dispose_hook(&self, id: HookId) -> Option<DisposeHook> {
        let mut state = self.lock();
        let index = state.hooks.iter().position(|(h, _)| *h == id)?;
        Some(state.hooks.remove(index).1)
    }

    fn subscribe(&self, listener: AgentListener) -> Registration {
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.listeners.push((id, listener));
            id
        };
        let me = self.me.clone();
        Registration::new(move || {
            if let Some(agent) = me.upgrade() {
                agent.lock().listeners.retain(|(l, _)| *l != id);
            }
        })
    }

    fn is_disposed(&self) -> bool {
        self.lock().disposing
    }
}
