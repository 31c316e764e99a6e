//! The [`Agent`] seam: what the families need from a live agent (todo-jobs §1.1,
//! schedule §14).

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::{AgentId, Registration, ScopeKey, Session, UserMessage};

/// Whether a driver is active for the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentStatus {
    /// No turn and no maintenance task runs.
    Idle,
    /// A turn is being driven (including pre-step processing and closing the turn). A
    /// maintenance task does not change the status; [`Agent::when_idle`] waits for it too.
    Running,
}

/// Something that happened to an agent, delivered to listeners synchronously and in order.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// The status changed.
    Status(AgentStatus),
    /// A pending message entered a step (`agent/inbox/claimed`), with its source.
    InboxClaimed {
        /// The message.
        message: UserMessage,
        /// The 1-based turn number that claimed it.
        turn: u64,
    },
    /// The agent was disposed; no more events follow.
    Disposed,
}

/// A listener for [`AgentEvent`]s. It must not block; it may call back into the agent.
pub type AgentListener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// Async cleanup run (and awaited) when the agent is disposed.
pub type DisposeHook = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// Identifies a registered [`DisposeHook`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HookId(pub u64);

/// Why an agent refused a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The agent is disposing or disposed.
    #[error("agent {0} is disposed")]
    Disposed(AgentId),
    /// The host refused the message.
    #[error("{0}")]
    Refused(String),
}

/// The agent is busy: a turn or another maintenance task owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the agent is busy")]
pub struct Busy;

/// Proof of holding an agent's idle (maintenance) phase. Input that arrives while it is held
/// is parked; dropping the guard releases the phase and lets parked input run.
#[must_use = "dropping the guard releases the maintenance phase at once"]
pub struct MaintenanceGuard {
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl MaintenanceGuard {
    /// A guard that calls `release` when dropped.
    pub fn new(release: impl FnOnce() + Send + 'static) -> Self {
        Self {
            release: Some(Box::new(release)),
        }
    }
}

impl Drop for MaintenanceGuard {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

impl std::fmt::Debug for MaintenanceGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MaintenanceGuard")
    }
}

/// A live agent, implemented by the host and shared as `Arc<dyn Agent>`.
///
/// Agents are compared by identity (`Arc::ptr_eq`) for lifecycle purposes and by
/// [`Agent::id`] for authorization (todo-jobs §1.1).
#[async_trait]
pub trait Agent: Send + Sync {
    /// The agent id (equal to its session id).
    fn id(&self) -> &AgentId;

    /// The agent's session.
    fn session(&self) -> Arc<dyn Session>;

    /// Whether this is a root agent (not a subagent). Schedule installs only on roots.
    fn is_root(&self) -> bool {
        true
    }

    /// The scope chain: the agent's own key first, then its ancestors (todo-jobs §1.3).
    fn scope_chain(&self) -> Vec<ScopeKey> {
        vec![ScopeKey::from(self.id())]
    }

    /// The current status.
    fn status(&self) -> AgentStatus;

    /// Queues `message` as the only ordinary input of a new turn and wakes the driver (an
    /// idle agent starts a turn).
    ///
    /// # Errors
    /// [`AgentError`] if the agent is disposed or the host refuses the message.
    fn followup(&self, message: UserMessage) -> Result<(), AgentError>;

    /// Queues `message` in the next-step inbox without waking the driver. A running turn
    /// claims it at its next step and cannot end while it is pending.
    ///
    /// # Errors
    /// [`AgentError`] if the agent is disposed or the host refuses the message.
    fn inject(&self, message: UserMessage) -> Result<(), AgentError>;

    /// Takes back an injected message that no step has claimed yet, by message id, and
    /// returns it (decision 12: tool-jobs moves a stranded notice to a followup). `None` when
    /// it was already claimed or is unknown. Hosts that cannot withdraw return `None`.
    fn withdraw_injected(&self, message_id: &str) -> Option<UserMessage> {
        let _ = message_id;
        None
    }

    /// Claims the idle phase synchronously.
    ///
    /// # Errors
    /// [`Busy`] while a turn or another maintenance task owns the agent.
    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy>;

    /// Completes when no turn and no maintenance task is running (at once if idle).
    async fn when_idle(&self);

    /// The client time zone reported for the current turn, if the host knows it
    /// (decision 6).
    fn client_time_zone(&self) -> Option<String> {
        None
    }

    /// Registers async cleanup that disposal runs and awaits.
    ///
    /// # Errors
    /// [`AgentError::Disposed`] if the agent is already disposing.
    fn add_dispose_hook(&self, hook: DisposeHook) -> Result<HookId, AgentError>;

    /// Removes a hook without running it and hands it back (the caller may run it: "detach
    /// runs the cleanup"). `None` if it already ran or was removed.
    fn remove_dispose_hook(&self, id: HookId) -> Option<DisposeHook>;

    /// Subscribes to this agent's events until the registration is dropped.
    fn subscribe(&self, listener: AgentListener) -> Registration;

    /// Whether disposal has begun.
    fn is_disposed(&self) -> bool;
}

/// Whether two agent handles are the same instance: [`AgentKey`] equality, for strong and
/// weak handles alike (in any mix).
///
/// ```
/// # use std::sync::Arc;
/// # use turnkit_core::{Agent, same_agent};
/// # fn check(a: &Arc<dyn Agent>) {
/// assert!(same_agent(a, &Arc::downgrade(a)));
/// # }
/// ```
pub fn same_agent(a: &impl AgentHandle, b: &impl AgentHandle) -> bool {
    AgentKey::of(a) == AgentKey::of(b)
}

/// The identity of one agent instance, the workspace's one identity test for agents: two
/// keys are equal exactly when they were taken from handles of the same instance (a
/// same-id replacement agent has another key). It is the agent's allocation address (never
/// its vtable), so it is `Copy`, hashes in one word and orders by address.
///
/// A key names its instance only while a handle to it (strong or weak) is held: a weak
/// handle keeps the allocation, so the address cannot be reused while it lives. Whoever
/// stores a key keeps a handle next to it (the job registry keeps the owner's `Arc`,
/// schedule keeps the adopted agent).
///
/// ```
/// # use std::sync::Arc;
/// # use turnkit_core::{Agent, AgentKey};
/// # fn check(a: &Arc<dyn Agent>, b: &Arc<dyn Agent>) {
/// assert_eq!(AgentKey::of(a), AgentKey::of(&Arc::downgrade(a)));
/// assert_eq!(AgentKey::of(a) == AgentKey::of(b), Arc::ptr_eq(a, b));
/// # }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentKey(usize);

impl AgentKey {
    /// The key of the agent `handle` points at.
    pub fn of(handle: &impl AgentHandle) -> Self {
        Self(handle.address() as usize)
    }

    /// Whether `handle` points at this key's agent.
    pub fn is(self, handle: &impl AgentHandle) -> bool {
        self == Self::of(handle)
    }
}

impl std::fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentKey({:#x})", self.0)
    }
}

/// A handle [`AgentKey`] and [`same_agent`] read: `Arc<dyn Agent>` or `Weak<dyn Agent>`.
/// Sealed.
pub trait AgentHandle: handle::Sealed {
    /// The address of the agent the handle points at.
    fn address(&self) -> *const ();
}

mod handle {
    pub trait Sealed {}
    impl Sealed for std::sync::Arc<dyn super::Agent> {}
    impl Sealed for std::sync::Weak<dyn super::Agent> {}
}

impl AgentHandle for Arc<dyn Agent> {
    fn address(&self) -> *const () {
        Arc::as_ptr(self).cast()
    }
}

impl AgentHandle for std::sync::Weak<dyn Agent> {
    fn address(&self) -> *const () {
        self.as_ptr().cast()
    }
}
