//! The [`Agent`] seam of a [`LoopAgent`]: what plugins call.

use std::sync::Arc;

use async_trait::async_trait;
use turnkit_core::{
    Agent, AgentError, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, Registration, ScopeKey, Session, UserMessage, lock,
};

use crate::agent::loop_agent::LoopAgent;

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
