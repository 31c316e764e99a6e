//! [`MemoryAgent`]: the production [`LoopAgent`] with a scripted model, a recorder and
//! fault hooks, implementing [`Agent`].

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use turnkit_core::{
    Agent, AgentError, AgentId, AgentListener, AgentStatus, Busy, DisposeHook, HookId,
    MaintenanceGuard, MessageSource, Registration, ScopeKey, Session, UserMessage,
};
use turnkit_host::{LoopAgent, Turn, TurnObserver, TurnSource};

use crate::faults::HostSession;

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

/// A transcript sink for [`HostRecord`]s.
pub type Recorder = Arc<dyn Fn(HostRecord) + Send + Sync>;

/// The host-wide switches every [`MemoryAgent`] of one host reads: the recorder.
#[derive(Default)]
pub(crate) struct RecorderSlot {
    recorder: Mutex<Option<Recorder>>,
}

impl RecorderSlot {
    pub(crate) fn set(&self, recorder: Recorder) {
        *turnkit_core::lock(&self.recorder) = Some(recorder);
    }

    fn record(&self, record: HostRecord) {
        let recorder = turnkit_core::lock(&self.recorder).clone();
        if let Some(recorder) = recorder {
            recorder(record);
        }
    }
}

type PreIdleHook = Box<dyn FnMut() + Send>;

/// The testkit's [`TurnObserver`]: records for transcripts, the pre-idle hook, and the
/// graceful-shutdown flush that bypasses fault injection.
struct Observer {
    recorder: Arc<RecorderSlot>,
    host_session: Arc<HostSession>,
    pre_idle: Mutex<Option<PreIdleHook>>,
}

#[async_trait]
impl TurnObserver for Observer {
    fn followup_queued(&self, agent: &AgentId, message: &UserMessage) {
        self.recorder.record(HostRecord::Followup {
            session: agent.to_string(),
            text: message.joined_text(),
        });
    }

    fn injected(&self, agent: &AgentId, message: &UserMessage) {
        self.recorder.record(HostRecord::Inject {
            session: agent.to_string(),
            text: message.joined_text(),
        });
    }

    fn turn_started(&self, agent: &AgentId, _turn: u64) {
        self.recorder.record(HostRecord::Turn {
            session: agent.to_string(),
            phase: "start",
        });
    }

    fn claimed(&self, agent: &AgentId, _turn: u64, message: &UserMessage) {
        self.recorder.record(HostRecord::Claimed {
            session: agent.to_string(),
            source: message.source.name().to_owned(),
            text: message.joined_text(),
        });
    }

    fn turn_ended(&self, agent: &AgentId, _turn: u64) {
        self.recorder.record(HostRecord::Turn {
            session: agent.to_string(),
            phase: "end",
        });
        let hook = turnkit_core::lock(&self.pre_idle).take();
        if let Some(mut hook) = hook {
            hook();
            let mut slot = turnkit_core::lock(&self.pre_idle);
            if slot.is_none() {
                *slot = Some(hook);
            }
        }
    }

    async fn shutting_down(&self, agent: &AgentId, _session: &Arc<dyn Session>) {
        // A graceful shutdown persists what the log holds (a crash is a restart without it).
        if let Err(error) = self
            .host_session
            .hooks()
            .flush_store(&self.host_session)
            .await
        {
            tracing::warn!(agent = %agent, "could not flush the session at disposal: {error}");
        }
    }
}

/// The production turn loop ([`LoopAgent`]) with a scripted model, for tests and scenarios.
///
/// * [`Agent::followup`] and [`MemoryAgent::send_user`] queue ordinary input; with auto
///   turns on, the agent's driver task runs one turn per queued input as soon as the agent is
///   idle: `turn/start`, the input and every injected message claimed, `turn/end`. The
///   scripted model takes no step in that turn; tests and scenarios play the model between
///   steps.
/// * [`Agent::inject`] adds to the next-step inbox without waking the driver; a turn cannot
///   end while that inbox is non-empty.
/// * [`MemoryAgent::start_turn`] / [`MemoryAgent::end_turn`] drive a turn by hand.
/// * [`Agent::try_begin_maintenance`] is refused while a turn or another maintenance task
///   runs; input that arrives meanwhile is parked until the guard drops.
/// * [`MemoryAgent::dispose`] runs and awaits the disposal hooks, then flushes the store
///   (bypassing fault injection), as a graceful shutdown would.
///
/// Every [`HostRecord`] is reported through the host's recorder at the instant the
/// [`TurnObserver`] of the loop hears of it.
pub struct MemoryAgent {
    core: Arc<LoopAgent>,
    observer: Arc<Observer>,
    manual: Mutex<Option<Turn>>,
    leave: Leave,
    me: Weak<MemoryAgent>,
}

/// What the host does once an agent is disposed (take it out of its directory).
pub(crate) type Leave = Box<dyn Fn(&Arc<MemoryAgent>) + Send + Sync>;

impl std::fmt::Debug for MemoryAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAgent")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl MemoryAgent {
    /// Builds the agent over `host_session` and spawns its driver task (the scripted model)
    /// on the caller's tokio runtime. `paused` is the host's auto-turns switch, inverted.
    pub(crate) fn spawn(
        host_session: Arc<HostSession>,
        recorder: Arc<RecorderSlot>,
        paused: bool,
        leave: Leave,
    ) -> Arc<Self> {
        let session: Arc<dyn Session> = host_session.clone();
        let observer = Arc::new(Observer {
            recorder,
            host_session,
            pre_idle: Mutex::new(None),
        });
        let core = LoopAgent::builder(session)
            .observer(observer.clone())
            .build();
        core.set_paused(paused);
        let agent = Arc::new_cyclic(|me| MemoryAgent {
            core,
            observer,
            manual: Mutex::new(None),
            leave,
            me: me.clone(),
        });
        tokio::spawn(scripted_model(agent.core.turns()));
        agent
    }

    /// This agent as a trait object.
    pub fn as_dyn(self: &Arc<Self>) -> Arc<dyn Agent> {
        self.clone()
    }

    /// The production loop underneath.
    pub fn turn_loop(&self) -> &Arc<LoopAgent> {
        &self.core
    }

    fn manual(&self) -> MutexGuard<'_, Option<Turn>> {
        turnkit_core::lock(&self.manual)
    }

    /// Turns automatic turns on (`true`) or off.
    pub(crate) fn set_auto_turns(&self, on: bool) {
        self.core.set_paused(!on);
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
        self.core.send(
            UserMessage::text(text, MessageSource::User),
            client_time_zone,
        )
    }

    /// Opens a turn by hand: appends `turn/start`, then claims the first queued input and
    /// every injected message. Does nothing if a turn is already open.
    pub fn start_turn(&self) {
        self.hold(self.core.open_turn());
    }

    /// Opens a turn by hand once the agent is idle ([`LoopAgent::open_turn_when_idle`]): waits
    /// out an open turn or a plugin's maintenance task (a reminder being delivered), then
    /// appends `turn/start` and claims as [`MemoryAgent::start_turn`] does. Does nothing once
    /// the agent is disposing.
    pub async fn start_turn_when_idle(&self) {
        let turn = self.core.open_turn_when_idle().await;
        self.hold(turn);
    }

    /// Keeps a turn opened by hand until [`MemoryAgent::end_turn`]; the guard of the slot is
    /// released before the turn it replaced (if any) is dropped.
    fn hold(&self, turn: Option<Turn>) {
        if let Some(turn) = turn {
            let previous = self.manual().replace(turn);
            drop(previous);
        }
    }

    /// Closes the turn opened by [`MemoryAgent::start_turn`]: claims injected messages until
    /// the inbox stays empty, appends `turn/end`, then reports idle. Does nothing if no turn
    /// is open.
    pub fn end_turn(&self) {
        let turn = self.manual().take();
        if let Some(turn) = turn {
            let _late = turn.finish();
        }
    }

    /// Installs a hook that runs after `turn/end` is appended but before the agent reports
    /// idle — the window of decision 12, reproduced deterministically.
    pub fn set_pre_idle_hook(&self, hook: impl FnMut() + Send + 'static) {
        *turnkit_core::lock(&self.observer.pre_idle) = Some(Box::new(hook));
    }

    /// Sets the ancestors reported after the agent's own key in [`Agent::scope_chain`]
    /// (e.g. a preset's key), nearest first, for tests of scoped registrations
    /// (todo-jobs §1.3).
    pub fn set_scope_parents(&self, parents: Vec<ScopeKey>) {
        self.core.set_scope_parents(parents);
    }

    /// Whether a turn is open.
    pub fn turn_open(&self) -> bool {
        self.core.turn_open()
    }

    /// The number of turns started in this session so far.
    pub fn turns(&self) -> u64 {
        self.core.turns_started()
    }

    /// Texts of injected messages not yet claimed.
    pub fn pending_injected(&self) -> Vec<String> {
        self.core
            .pending_injected()
            .iter()
            .map(UserMessage::joined_text)
            .collect()
    }

    /// Texts of queued ordinary input not yet claimed.
    pub fn pending_input(&self) -> Vec<String> {
        self.core
            .pending_input()
            .iter()
            .map(UserMessage::joined_text)
            .collect()
    }

    /// Disposes the agent through the production loop ([`LoopAgent::dispose`]): refuses new
    /// input, runs and awaits every disposal hook, flushes the store (bypassing fault
    /// injection), emits [`turnkit_core::AgentEvent::Disposed`], then removes it from the
    /// host's directory and, once no live agent holds the session, from its projections.
    /// Idempotent.
    pub async fn dispose(&self) {
        self.core.dispose().await;
        if let Some(me) = self.me.upgrade() {
            (self.leave)(&me);
        }
    }
}

/// The scripted model: takes no step, so each turn opens and closes at once.
async fn scripted_model(turns: TurnSource) {
    while let Some(turn) = turns.next_turn().await {
        let _late = turn.finish();
    }
}

#[async_trait]
impl Agent for MemoryAgent {
    fn id(&self) -> &AgentId {
        self.core.id()
    }

    fn session(&self) -> Arc<dyn Session> {
        self.core.session()
    }

    fn is_root(&self) -> bool {
        self.core.is_root()
    }

    fn scope_chain(&self) -> Vec<ScopeKey> {
        self.core.scope_chain()
    }

    fn status(&self) -> AgentStatus {
        self.core.status()
    }

    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        self.core.followup(message)
    }

    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        self.core.inject(message)
    }

    fn withdraw_injected(&self, message_id: &str) -> Option<UserMessage> {
        self.core.withdraw_injected(message_id)
    }

    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        self.core.try_begin_maintenance()
    }

    async fn when_idle(&self) {
        self.core.when_idle().await;
    }

    fn client_time_zone(&self) -> Option<String> {
        self.core.client_time_zone()
    }

    fn add_dispose_hook(&self, hook: DisposeHook) -> Result<HookId, AgentError> {
        self.core.add_dispose_hook(hook)
    }

    fn remove_dispose_hook(&self, id: HookId) -> Option<DisposeHook> {
        self.core.remove_dispose_hook(id)
    }

    fn subscribe(&self, listener: AgentListener) -> Registration {
        self.core.subscribe(listener)
    }

    fn is_disposed(&self) -> bool {
        self.core.is_disposed()
    }
}
