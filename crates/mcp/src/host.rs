//! The host behind the server's own parts: the served session (appends feed the change hook)
//! and the one agent, turnkit-host's [`LoopAgent`] with no turn loop, whose followups and
//! injected messages go to the pull [`Inbox`]. The `Harness` itself is turnkit-host's
//! `HostKit`, whose projections pull the session's log.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::task::TaskTracker;
use turnkit_core::{AgentId, HookedSession, Session, SessionHooks, UserMessage};
use turnkit_host::{InputSink, LoopAgent, TurnObserver};

use crate::inbox::{Inbox, Lane};

/// Called after every committed append with the event's type.
pub(crate) type AppendHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Called after a message was queued in the inbox, with its text.
pub(crate) type QueuedHook = Arc<dyn Fn(&UserMessage) + Send + Sync>;

/// The stored session as the host sees it: turnkit-core's [`HookedSession`], whose
/// [`ChangeHook`] reports every committed append's type to the change hook.
pub(crate) type HostSession = HookedSession<ChangeHook>;

/// Wraps `inner`; the hook is set once the server's change channel exists.
pub(crate) fn host_session(inner: Arc<dyn Session>) -> Arc<HostSession> {
    Arc::new(HookedSession::new(inner, ChangeHook::default()))
}

/// The [`SessionHooks`] of the served session: after each committed append, the hook set by
/// [`ChangeHook::set`] hears the event's type.
#[derive(Default)]
pub(crate) struct ChangeHook {
    hook: Mutex<Option<AppendHook>>,
}

impl ChangeHook {
    pub(crate) fn set(&self, hook: AppendHook) {
        *turnkit_core::lock(&self.hook) = Some(hook);
    }
}

impl SessionHooks for ChangeHook {
    fn appended(&self, _seq: u64, r#type: &str) {
        let hook = turnkit_core::lock(&self.hook).clone();
        if let Some(hook) = hook {
            hook(r#type);
        }
    }
}

/// The served session's agent: a [`LoopAgent`] that no turn loop drives (nothing can wake an
/// MCP client), so it is always idle, and a followup or an injected message is queued in the
/// [`Inbox`] (and recorded in the log) for the next tool result, whose delivery the session
/// reports with [`LoopAgent::report_claimed`]. The flush of each queued message runs in
/// `tasks` (the session host's).
pub(crate) fn pull_agent(
    session: Arc<dyn Session>,
    inbox: Inbox,
    on_queued: QueuedHook,
    tasks: TaskTracker,
) -> Arc<LoopAgent> {
    let input = PullInput {
        session: session.clone(),
        inbox,
        on_queued,
        tasks,
    };
    LoopAgent::builder(session)
        .observer(Arc::new(FlushLater))
        .input(Arc::new(input))
        .build()
}

/// The agent's observer: the session flushes once every family is disposed, not when the
/// agent is.
struct FlushLater;

#[async_trait]
impl TurnObserver for FlushLater {
    async fn shutting_down(&self, _agent: &AgentId, _session: &Arc<dyn Session>) {}
}

/// Where the agent's input goes: the pull [`Inbox`].
struct PullInput {
    session: Arc<dyn Session>,
    inbox: Inbox,
    on_queued: QueuedHook,
    /// The session host's tracker, which its shutdown waits for.
    tasks: TaskTracker,
}

impl PullInput {
    fn queue(&self, lane: Lane, message: UserMessage) -> Result<(), String> {
        let announced = message.clone();
        self.inbox.queue(lane, message)?;
        (self.on_queued)(&announced);
        // A notice has no barrier of its own (schedule flushes after its dispatch): make the
        // owed message durable now, so a crash cannot lose it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let session = self.session.clone();
            let flush = async move {
                if let Err(error) = session.flush().await {
                    tracing::warn!("mcp: could not flush a queued message: {error}");
                }
            };
            drop(self.tasks.spawn_on(flush, &runtime));
        }
        Ok(())
    }
}

impl InputSink for PullInput {
    fn followup(&self, message: UserMessage) -> Result<(), String> {
        self.queue(Lane::Followup, message)
    }

    fn inject(&self, message: UserMessage) -> Result<(), String> {
        self.queue(Lane::Inject, message)
    }
}
