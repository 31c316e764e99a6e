//! One broken agent per agent check: the production loop behind a wrapper that breaks one
//! obligation of docs/host-contract.md, and exactly the checks each one fails, with their
//! messages (the table in docs/host-contract.md, "Every check shown failing", names them).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio::sync::Notify;
use turnkit_core::{
    Agent, AgentError, AgentEvent, AgentId, AgentListener, AgentStatus, AppendError, Busy,
    DisposeHook, HookId, MaintenanceGuard, MemoryStore, PersistenceError, RawEvent, Registration,
    Session, SessionEvent, SessionHeader, SessionId, SessionStore, UserMessage,
};
use turnkit_host::LoopAgent;
use turnkit_testkit::ManualClock;
use turnkit_testkit::conformance::{self, AGENT_CHECKS, Candidate};

/// What the wrapper breaks, one obligation each, named after the check that states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// `id()` is not the session's id.
    IdIsNotTheSessionId,
    /// The session the agent hands out hides every `turn/end` event.
    TurnEndNotLogged,
    /// `status()` says `Idle` during a turn too.
    StatusAlwaysIdle,
    /// `inject` on an idle agent queues a followup, which wakes it.
    InjectWakes,
    /// `inject` during a turn queues a followup for the next turn instead.
    InjectDuringTurnWaits,
    /// `withdraw_injected` finds nothing.
    WithdrawFindsNothing,
    /// A followup queued by a listener of the idle report is dropped.
    IdleListenerFollowupLost,
    /// Maintenance is granted during a turn.
    MaintenanceDuringTurn,
    /// A second maintenance guard is granted while the first lives.
    MaintenanceShared,
    /// Maintenance is bookkeeping only: input runs while a guard lives.
    MaintenanceParksNothing,
    /// `when_idle` completes at once, guard or not.
    WhenIdleAtOnce,
    /// Dropping a registration does not unsubscribe.
    UnsubscribeKeepsListening,
    /// Disposal starts the hooks and does not await them.
    DisposeSpawnsHooks,
    /// `remove_dispose_hook` does not hand the hook back.
    RemovedHookNotHandedBack,
    /// A disposed agent accepts (and drops) input.
    DisposedAcceptsInput,
    /// A followup after disposal still reports `Running` to listeners.
    EventsAfterDisposed,
}

thread_local! {
    /// Whether this thread is inside a listener's idle report (`IdleListenerFollowupLost`).
    static IN_IDLE_REPORT: Cell<bool> = const { Cell::new(false) };
}

struct Faulty {
    inner: Arc<LoopAgent>,
    fault: Fault,
    other_id: AgentId,
    hiding: Arc<dyn Session>,
    listeners: Mutex<Vec<AgentListener>>,
    /// `DisposeSpawnsHooks`: the hooks as given, by the id the loop gave their starters.
    hooks: Arc<Mutex<BTreeMap<u64, DisposeHook>>>,
    /// `MaintenanceParksNothing`: whether a guard lives, and its release.
    maintained: Arc<AtomicBool>,
    released: Arc<Notify>,
}

impl Faulty {
    fn agent(&self) -> Arc<dyn Agent> {
        self.inner.as_dyn()
    }

    fn is(&self, fault: Fault) -> bool {
        self.fault == fault
    }
}

#[async_trait::async_trait]
impl Agent for Faulty {
    fn id(&self) -> &AgentId {
        if self.is(Fault::IdIsNotTheSessionId) {
            &self.other_id
        } else {
            self.inner.id()
        }
    }
    fn session(&self) -> Arc<dyn Session> {
        if self.is(Fault::TurnEndNotLogged) {
            self.hiding.clone()
        } else {
            self.agent().session()
        }
    }
    fn status(&self) -> AgentStatus {
        if self.is(Fault::StatusAlwaysIdle) {
            AgentStatus::Idle
        } else {
            self.inner.status()
        }
    }
    fn followup(&self, message: UserMessage) -> Result<(), AgentError> {
        let disposed = self.inner.is_disposed();
        if disposed && self.is(Fault::DisposedAcceptsInput) {
            return Ok(());
        }
        if disposed && self.is(Fault::EventsAfterDisposed) {
            let listeners = turnkit_core::lock(&self.listeners).clone();
            for listener in listeners {
                listener(&AgentEvent::Status(AgentStatus::Running));
            }
        }
        if self.is(Fault::IdleListenerFollowupLost) && IN_IDLE_REPORT.get() {
            return Ok(());
        }
        self.agent().followup(message)
    }
    fn inject(&self, message: UserMessage) -> Result<(), AgentError> {
        let status = self.inner.status();
        if self.inner.is_disposed() && self.is(Fault::DisposedAcceptsInput) {
            return Ok(());
        }
        if (self.is(Fault::InjectWakes) && status == AgentStatus::Idle)
            || (self.is(Fault::InjectDuringTurnWaits) && status == AgentStatus::Running)
        {
            return self.agent().followup(message);
        }
        self.agent().inject(message)
    }
    fn withdraw_injected(&self, message_id: &str) -> Option<UserMessage> {
        if self.is(Fault::WithdrawFindsNothing) {
            None
        } else {
            self.agent().withdraw_injected(message_id)
        }
    }
    fn try_begin_maintenance(&self) -> Result<MaintenanceGuard, Busy> {
        let idle = self.inner.status() == AgentStatus::Idle && !self.inner.is_disposed();
        match self.fault {
            Fault::MaintenanceDuringTurn if self.inner.status() == AgentStatus::Running => {
                Ok(MaintenanceGuard::new(|| {}))
            }
            Fault::MaintenanceShared => match self.agent().try_begin_maintenance() {
                Err(Busy) if idle => Ok(MaintenanceGuard::new(|| {})),
                other => other,
            },
            Fault::MaintenanceParksNothing => {
                if !idle || self.maintained.swap(true, Ordering::SeqCst) {
                    return Err(Busy);
                }
                let (maintained, released) = (self.maintained.clone(), self.released.clone());
                Ok(MaintenanceGuard::new(move || {
                    maintained.store(false, Ordering::SeqCst);
                    released.notify_waiters();
                }))
            }
            _ => self.agent().try_begin_maintenance(),
        }
    }
    async fn when_idle(&self) {
        match self.fault {
            Fault::WhenIdleAtOnce => {}
            Fault::MaintenanceParksNothing => {
                loop {
                    let released = self.released.notified();
                    if !self.maintained.load(Ordering::SeqCst) {
                        break;
                    }
                    released.await;
                }
                self.agent().when_idle().await;
            }
            _ => self.agent().when_idle().await,
        }
    }
    fn add_dispose_hook(&self, hook: DisposeHook) -> Result<HookId, AgentError> {
        if !self.is(Fault::DisposeSpawnsHooks) {
            return self.agent().add_dispose_hook(hook);
        }
        // The loop runs a starter, which spawns the hook and returns at once.
        let (hooks, slot) = (self.hooks.clone(), Arc::new(Mutex::new(None::<u64>)));
        let key = slot.clone();
        let id = self.agent().add_dispose_hook(Box::new(move || {
            let id = *turnkit_core::lock(&key);
            let hook = id.and_then(|id| turnkit_core::lock(&hooks).remove(&id));
            async move {
                if let Some(hook) = hook {
                    tokio::spawn(hook());
                }
            }
            .boxed()
        }))?;
        *turnkit_core::lock(&slot) = Some(id.0);
        turnkit_core::lock(&self.hooks).insert(id.0, hook);
        Ok(id)
    }
    fn remove_dispose_hook(&self, id: HookId) -> Option<DisposeHook> {
        match self.fault {
            Fault::RemovedHookNotHandedBack => None,
            Fault::DisposeSpawnsHooks => {
                drop(self.agent().remove_dispose_hook(id));
                turnkit_core::lock(&self.hooks).remove(&id.0)
            }
            _ => self.agent().remove_dispose_hook(id),
        }
    }
    fn subscribe(&self, listener: AgentListener) -> Registration {
        turnkit_core::lock(&self.listeners).push(listener.clone());
        match self.fault {
            Fault::UnsubscribeKeepsListening => {
                std::mem::forget(self.agent().subscribe(listener));
                Registration::noop()
            }
            Fault::IdleListenerFollowupLost => {
                self.agent().subscribe(Arc::new(move |event: &AgentEvent| {
                    let idle = *event == AgentEvent::Status(AgentStatus::Idle);
                    IN_IDLE_REPORT.set(idle);
                    listener(event);
                    IN_IDLE_REPORT.set(false);
                }))
            }
            _ => self.agent().subscribe(listener),
        }
    }
    fn is_disposed(&self) -> bool {
        self.inner.is_disposed()
    }
}

/// The agent's session with every `turn/end` left out of what it reads back.
struct HidesTurnEnds(Arc<dyn Session>);

#[async_trait::async_trait]
impl Session for HidesTurnEnds {
    fn id(&self) -> &SessionId {
        self.0.id()
    }
    fn header(&self) -> &SessionHeader {
        self.0.header()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn raw_events_after(&self, after: u64) -> Vec<RawEvent> {
        let mut events = self.0.raw_events_after(after);
        events.retain(|e| e.r#type() != "turn/end");
        events
    }
    fn append(&self, r#type: &str, data: Value) -> Result<SessionEvent, AppendError> {
        self.0.append(r#type, data)
    }
    async fn flush(&self) -> Result<(), PersistenceError> {
        self.0.flush().await
    }
}

/// Each failed check of the production loop behind `fault`, with its message.
async fn failures(fault: Fault) -> Vec<(&'static str, String)> {
    let store = Arc::new(MemoryStore::new(Arc::new(ManualClock::at_default())));
    let mut n = 0;
    let report = conformance::check_agent(|| {
        n += 1;
        let session = store.create(SessionHeader::new(format!("s{n}"))).unwrap();
        let inner = LoopAgent::new(session.clone());
        let turns = inner.turns();
        tokio::spawn(async move {
            while let Some(mut turn) = turns.next_turn().await {
                let _input = turn.take_input();
                let _late = turn.claim_injected();
                turn.finish();
            }
        });
        let agent = Arc::new(Faulty {
            inner: inner.clone(),
            fault,
            other_id: AgentId::from(format!("agent-s{n}")),
            hiding: Arc::new(HidesTurnEnds(session)),
            listeners: Mutex::default(),
            hooks: Arc::default(),
            maintained: Arc::default(),
            released: Arc::default(),
        });
        Candidate::new(agent, move || async move { inner.dispose().await }.boxed())
    })
    .await;
    assert_eq!(report.checks.len(), AGENT_CHECKS.len());
    report
        .checks
        .into_iter()
        .filter_map(|c| c.outcome.err().map(|why| (c.name, why)))
        .collect()
}

fn owned(expected: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    expected
        .iter()
        .map(|(n, m)| (*n, (*m).to_owned()))
        .collect()
}

macro_rules! broken {
    ($test:ident, $fault:ident, [$(($check:literal, $message:expr)),+ $(,)?]) => {
        #[tokio::test(start_paused = true)]
        async fn $test() {
            assert_eq!(failures(Fault::$fault).await, owned(&[$(($check, $message)),+]));
        }
    };
}

broken!(
    an_id_other_than_the_session_id,
    IdIsNotTheSessionId,
    [(
        "id_is_session_id",
        "agent id \"agent-s1\" differs from session id \"s1\""
    )]
);

broken!(
    a_log_without_turn_end,
    TurnEndNotLogged,
    [(
        "followup_opens_a_turn",
        "logged [(\"turn/start\", Object {\"turn\": Number(1)})], expected [(\"turn/start\", Object {\"turn\": Number(1)}), (\"turn/end\", Object {\"turn\": Number(1)})]"
    )]
);

broken!(
    a_status_that_never_says_running,
    StatusAlwaysIdle,
    [(
        "status_follows_the_turn",
        "events [\"running while Idle\", \"claimed f1 #1 while Idle\", \"idle while Idle\"], expected [\"running while Running\", \"claimed f1 #1 while Running\", \"idle while Idle\"]"
    )]
);

broken!(
    an_inject_that_wakes,
    InjectWakes,
    [
        (
            "inject_does_not_wake",
            "an inject woke the agent: events [\"running\", \"claimed n1 #1\", \"idle\"], status Idle"
        ),
        // The injected message became a followup, so there is nothing to withdraw.
        (
            "withdraw_returns_unclaimed",
            "withdraw gave None then None, expected Some(\"n1\") then None"
        ),
    ]
);

broken!(
    an_inject_during_a_turn_left_for_the_next,
    InjectDuringTurnWaits,
    [(
        "turn_drains_inbox_before_ending",
        "events [\"running\", \"claimed f1 #1\", \"idle\", \"running\", \"claimed n1 #2\", \"idle\"], expected [\"running\", \"claimed f1 #2\", \"claimed n1 #2\", \"idle\"]"
    )]
);

broken!(
    a_withdraw_that_finds_nothing,
    WithdrawFindsNothing,
    [(
        "withdraw_returns_unclaimed",
        "withdraw gave None then None, expected Some(\"n1\") then None"
    )]
);

broken!(
    a_followup_from_the_idle_report_dropped,
    IdleListenerFollowupLost,
    [("idle_listener_followup_runs", "never saw a second turn end")]
);

broken!(
    maintenance_granted_during_a_turn,
    MaintenanceDuringTurn,
    [(
        "maintenance_refused_during_turn",
        "events [\"maintenance true\"], expected [\"maintenance false\"]"
    )]
);

broken!(
    maintenance_granted_twice,
    MaintenanceShared,
    [(
        "maintenance_is_exclusive",
        "a second maintenance guard was granted"
    )]
);

broken!(
    maintenance_that_parks_nothing,
    MaintenanceParksNothing,
    [(
        "maintenance_parks_input",
        "input ran under maintenance: events [\"running\", \"claimed f1 #1\", \"idle\"]"
    )]
);

broken!(
    a_when_idle_that_does_not_wait,
    WhenIdleAtOnce,
    [(
        "when_idle_waits_for_maintenance",
        "when_idle completed while a maintenance guard was held"
    )]
);

broken!(
    a_registration_that_does_not_unsubscribe,
    UnsubscribeKeepsListening,
    [(
        "unsubscribe_stops_events",
        "events [\"running\", \"claimed f1 #1\", \"idle\"], expected []"
    )]
);

broken!(
    a_disposal_that_does_not_await_its_hooks,
    DisposeSpawnsHooks,
    [(
        "dispose_awaits_hooks",
        "events [\"disposed\"], expected [\"hook started\", \"hook done\", \"disposed\"]"
    )]
);

broken!(
    a_removed_hook_not_handed_back,
    RemovedHookNotHandedBack,
    [(
        "removed_hook_does_not_run",
        "remove_dispose_hook did not hand the hook back"
    )]
);

broken!(
    a_disposed_agent_that_takes_input,
    DisposedAcceptsInput,
    [(
        "disposed_refuses_input",
        "followup was accepted after disposal"
    )]
);

broken!(
    events_after_disposed,
    EventsAfterDisposed,
    [(
        "disposed_is_the_last_event",
        "events [\"disposed\", \"running\"], expected [\"disposed\"]"
    )]
);
