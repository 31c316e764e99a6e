//! The host behind the server's own parts: the served session (appends feed the change hook)
//! and the one agent, whose followups and injected messages go to the pull [`Inbox`]. The
//! `Harness` itself is harness-host's `HostKit`, whose projections pull the session's log.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use harness_core::{
    Agent, AgentError, AgentEvent, AgentId, AgentListener, AgentStatus, AppendError, Busy,
    DisposeHook, HookId, MaintenanceGuard, PersistenceError, RawEvent, Registered, Registration,
    Session, SessionEvent, SessionHeader, SessionId, UserMessage,
};
use serde_json::Value;

use crate::inbox::{Inbox, Lane};

/// Called after every committed append with the event's type.
pub(crate) type AppendHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Called after a message was queued in the inbox, with its text.
pub(crate) type QueuedHook = Arc<dyn Fn(&UserMessage) + Send + Sync>;

/// The stored session as the host sees it: every committed append is reported to the
/// change hook.
pub(crate) struct HostSession {
    inner: Arc<dyn Session>,
    hook: Mutex<Option<AppendHook>>,
}

impl HostSession {
    pub(crate) fn new(inner: Arc<dyn Session>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            hook: Mutex::new(None),
        })
    }

    pub(crate) fn set_hook(&self, hook: AppendHook) {
        *harness_core::lock(&self.hook) = Some(hook);
    }
}

#[async_trait]
impl Session for HostSession {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }

    fn header(&self) -> &SessionHeader {
        self.inner.header()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        self.inner.raw_events_after(after)
    }

    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        let event = self.inner.append(r#type, data)?;
        let hook = harness_core::lock(&self.hook).clone();
        if let Some(hook) = hook {
            hook(r#type);
        }
        Ok(event)
    }

    async fn flush(&self) -> Result<(), PersistenceError> {
        self.inner.flush().await
    }
}

#[derive(Default)]
struct AgentState {
    maintenance: bool,
    disposing: bool,
    /// The last dispose hook's id.
    next_id: u64,
    listeners: Registered<AgentListener>,
    hooks: Vec<(HookId, DisposeHook)>,
}

/// The served session's agent. Nothing can wake an MCP client, so there is no turn loop:
/// the agent is always idle, and a followup or an injected message is queued in the
/// [`Inbox`] (and recorded in the log) for the next tool result.
pub(crate) struct PullAgent {
    id: AgentId,
    session: Arc<dyn Session>,
    inbox: Inbox,
    on_queued: QueuedHook,
    state: Mutex<AgentState>,
    idle: tokio::sync::Notify,
    me: Weak<PullAgent>,
}

impl PullAgent {
    pub(crate) fn new(session: Arc<dyn Session>, inbox: Inbox, on_queued: QueuedHook) -> Arc<Self> {
        Arc::new_cyclic(|me| PullAgent {
            id: AgentId::from(session.id()),
            session,
            inbox,
            on_queued,
            state: Mutex::new(AgentState::default()),
            idle: tokio::sync::Notify::new(),
            me: me.clone(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, AgentState> {
        harness_core::lock(&self.state)
    }

    fn emit(&self, event: &AgentEvent) {
        let listeners = self.lock().listeners.to_vec();
        for listener in listeners {
            listener(event);
        }
    }

    /// Tells listeners that `messages` entered the model's context (a tool result).
    pub(crate) fn claimed(&self, messages: Vec<UserMessage>) {
        for message in messages {
            self.emit(&AgentEvent::InboxClaimed { message, turn: 0 });
        }
    }

    fn enqueue(&self, lane: Lane, message: UserMessage) -> Result<(), AgentError> {
        if self.lock().disposing {
            return Err(AgentError::Disposed(self.id.clone()));
        }
        let announced = message.clone();
        self.inbox
            .queue(lane, message)
            .map_err(AgentError::Refused)?;
        (self.on_queued)(&announced);
        // A notice has no barrier of its own (schedule flushes after its dispatch): make the
        // owed message durable now, so a crash cannot lose it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let session = self.session.clone();
            runtime.spawn(async move {
                if let Err(error) = session.flush().await {
                    tracing::warn!("mcp: could not flush a queued message: {error}");
                }
            });
        }
        Ok(())
    }

    /// Runs and awaits every disposal hook, then reports [`AgentEvent::Disposed`].
    pub(crate) async fn dispose(&self) {
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
        self.emit(&AgentEvent::Disposed);
        self.lock().listeners.clear();
        self.idle.notify_waiters();
    }
}

#[async_trait]
impl Agent for PullAgent {
    fn id(&self) -> &AgentId {
        &self.id
    }

    fn session(&self) -> Arc<dyn Session> {
        self.session.clone()
    }

    fn status(&self) -> AgentStatus {
        AgentStatus::Idle
    }

    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        self.enqueue(Lane::Followup, message)
    }

    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        self.enqueue(Lane::Inject, message)
    }

    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        {
            let mut state = self.lock();
            if state.maintenance || state.disposing {
                return Err(Busy);
            }
            state.maintenance = true;
        }
        let me = self.me.clone();
        Ok(MaintenanceGuard::new(move || {
            if let Some(agent) = me.upgrade() {
                agent.lock().maintenance = false;
                agent.idle.notify_waiters();
            }
        }))
    }

    async fn when_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if !state.maintenance || state.disposing {
                    return;
                }
            }
            notified.await;
        }
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
        let id = self.lock().listeners.insert(listener);
        match self.me.upgrade() {
            Some(me) => Registration::weak(&me, move |agent| {
                agent.lock().listeners.remove(id);
            }),
            None => Registration::noop(),
        }
    }

    fn is_disposed(&self) -> bool {
        self.lock().disposing
    }
}
