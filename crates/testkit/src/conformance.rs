//! The host-contract conformance suite: one named check per obligation of the [`Agent`]
//! seam ([`check_agent`]) and of the `Harness` seam ([`check_harness`])
//! (docs/host-contract.md), run against a runtime author's own implementation.
//!
//! ```
//! # use std::sync::Arc;
//! # use futures::FutureExt;
//! # use turnkit_core::{MemoryStore, SessionHeader, SessionStore, SystemClock};
//! # use turnkit_host::LoopAgent;
//! # use turnkit_testkit::conformance::{self, Candidate};
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let store = Arc::new(MemoryStore::new(Arc::new(SystemClock)));
//! let mut n = 0;
//! let report = conformance::check_agent(|| {
//!     n += 1;
//!     let agent = LoopAgent::new(store.create(SessionHeader::new(format!("s{n}"))).unwrap());
//!     let turns = agent.turns();
//!     tokio::spawn(async move {
//!         while let Some(turn) = turns.next_turn().await {
//!             turn.finish();
//!         }
//!     });
//!     let disposed = agent.clone();
//!     Candidate::new(agent.as_dyn(), move || async move { disposed.dispose().await }.boxed())
//! })
//! .await;
//! assert!(report.passed(), "{report}");
//! # }
//! ```
//!
//! Run it on a current-thread tokio runtime with time paused (`#[tokio::test(start_paused =
//! true)]`): waiting for the agent to go quiet is then a 1 ms tokio sleep that completes only
//! when every other task is blocked, so the checks are deterministic, and a check that
//! waits for something that never happens fails after a bounded number of such waits.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use serde_json::Value;
use turnkit_core::{
    Agent, AgentError, AgentEvent, AgentStatus, MessageSource, Registration, UserMessage,
};

use crate::settle;

#[path = "conformance_ack.rs"]
mod ack;
#[path = "conformance_harness.rs"]
mod harness;
pub use harness::{HARNESS_CHECKS, HostCandidate, check_harness};

/// How often a check lets the agent run before it gives up waiting.
const PATIENCE: usize = 200;

/// One agent under test: a fresh, live, idle agent whose runtime drives its turns, and how
/// to dispose it (the host's own disposal, which [`Agent`] does not name).
pub struct Candidate {
    agent: Arc<dyn Agent>,
    dispose: Option<Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>>,
}

impl Candidate {
    /// `agent`, disposed by awaiting `dispose()`.
    pub fn new(
        agent: Arc<dyn Agent>,
        dispose: impl FnOnce() -> BoxFuture<'static, ()> + Send + 'static,
    ) -> Self {
        Self {
            agent,
            dispose: Some(Box::new(dispose)),
        }
    }

    async fn dispose(&mut self) {
        if let Some(dispose) = self.dispose.take() {
            dispose().await;
        }
    }
}

/// The outcome of one named check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's name (one of [`AGENT_CHECKS`] or [`HARNESS_CHECKS`]).
    pub name: &'static str,
    /// `Err` with what was observed instead.
    pub outcome: Result<(), String>,
}

/// What [`check_agent`] (or [`check_harness`]) found, one [`Check`] per obligation in
/// [`AGENT_CHECKS`] (or [`HARNESS_CHECKS`]) order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Every check, in order.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.outcome.is_ok())
    }

    /// The names of the failed checks, in order.
    pub fn failed(&self) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| c.outcome.is_err())
            .map(|c| c.name)
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for check in &self.checks {
            match &check.outcome {
                Ok(()) => writeln!(f, "ok    {}", check.name)?,
                Err(why) => writeln!(f, "FAIL  {}: {why}", check.name)?,
            }
        }
        Ok(())
    }
}

/// The agent checks, in the order [`check_agent`] runs them; docs/host-contract.md states
/// the obligation behind each name.
pub const AGENT_CHECKS: &[&str] = &[
    "id_is_session_id",
    "followup_opens_a_turn",
    "status_follows_the_turn",
    "inject_does_not_wake",
    "turn_drains_inbox_before_ending",
    "withdraw_returns_unclaimed",
    "idle_listener_followup_runs",
    "maintenance_refused_during_turn",
    "maintenance_is_exclusive",
    "maintenance_parks_input",
    "when_idle_waits_for_maintenance",
    "unsubscribe_stops_events",
    "dispose_awaits_hooks",
    "removed_hook_does_not_run",
    "disposed_refuses_input",
    "disposed_is_the_last_event",
];

/// Runs every check of [`AGENT_CHECKS`], each on a fresh [`Candidate`] from `factory`
/// (disposed afterwards), and reports each outcome. Never panics on a misbehaving agent.
pub async fn check_agent(mut factory: impl FnMut() -> Candidate) -> Report {
    let mut checks = Vec::new();
    for &name in AGENT_CHECKS {
        let mut candidate = factory();
        let outcome = run(name, &mut candidate).await;
        candidate.dispose().await;
        checks.push(Check { name, outcome });
    }
    Report { checks }
}

async fn run(name: &str, c: &mut Candidate) -> Result<(), String> {
    match name {
        "id_is_session_id" => id_is_session_id(c),
        "followup_opens_a_turn" => followup_opens_a_turn(c).await,
        "status_follows_the_turn" => status_follows_the_turn(c).await,
        "inject_does_not_wake" => inject_does_not_wake(c).await,
        "turn_drains_inbox_before_ending" => turn_drains_inbox_before_ending(c).await,
        "withdraw_returns_unclaimed" => withdraw_returns_unclaimed(c).await,
        "idle_listener_followup_runs" => idle_listener_followup_runs(c).await,
        "maintenance_refused_during_turn" => maintenance_refused_during_turn(c).await,
        "maintenance_is_exclusive" => maintenance_is_exclusive(c),
        "maintenance_parks_input" => maintenance_parks_input(c).await,
        "when_idle_waits_for_maintenance" => when_idle_waits_for_maintenance(c).await,
        "unsubscribe_stops_events" => unsubscribe_stops_events(c).await,
        "dispose_awaits_hooks" => dispose_awaits_hooks(c).await,
        "removed_hook_does_not_run" => removed_hook_does_not_run(c).await,
        "disposed_refuses_input" => disposed_refuses_input(c).await,
        "disposed_is_the_last_event" => disposed_is_the_last_event(c).await,
        other => Err(format!("unknown check {other:?}")),
    }
}

/// An event as the checks compare it: `running`, `idle`, `claimed <text> #<turn>`,
/// `disposed`.
fn describe(event: &AgentEvent) -> String {
    match event {
        AgentEvent::Status(AgentStatus::Running) => "running".to_owned(),
        AgentEvent::Status(AgentStatus::Idle) => "idle".to_owned(),
        AgentEvent::InboxClaimed { message, turn } => {
            format!("claimed {} #{turn}", message.joined_text())
        }
        AgentEvent::Disposed => "disposed".to_owned(),
    }
}

type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, line: String) {
    turnkit_core::lock(log).push(line);
}

fn lines(log: &Log) -> Vec<String> {
    turnkit_core::lock(log).clone()
}

/// Records every event of `agent` (described) until the registration drops.
fn record(agent: &Arc<dyn Agent>) -> (Log, Registration) {
    let log: Log = Arc::default();
    let sink = log.clone();
    let registration = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        push(&sink, describe(event));
    }));
    (log, registration)
}

fn message(text: &str) -> UserMessage {
    UserMessage::text(
        text,
        MessageSource::Plugin {
            plugin: "conformance".to_owned(),
            form: None,
            summary: None,
        },
    )
}

/// Lets the agent run until `done` holds, or gives up.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    for _ in 0..PATIENCE {
        if done() {
            return Ok(());
        }
        settle().await;
    }
    if done() {
        Ok(())
    } else {
        Err(format!("never saw {what}"))
    }
}

/// Lets the agent run until it is quiet.
async fn quiet() {
    for _ in 0..4 {
        settle().await;
    }
}

fn expect_lines(log: &Log, expected: &[String]) -> Result<(), String> {
    let seen = lines(log);
    if seen == expected {
        Ok(())
    } else {
        Err(format!("events {seen:?}, expected {expected:?}"))
    }
}

fn turn_starts(agent: &Arc<dyn Agent>) -> u64 {
    agent
        .session()
        .raw_events_after(0)
        .iter()
        .filter(|e| e.r#type() == "turn/start")
        .count() as u64
}

fn refused(what: &str, result: Result<(), AgentError>) -> Result<(), String> {
    match result {
        Err(AgentError::Disposed(_)) => Ok(()),
        Err(other) => Err(format!("{what} refused with {other:?}, expected Disposed")),
        Ok(()) => Err(format!("{what} was accepted after disposal")),
    }
}

fn id_is_session_id(c: &Candidate) -> Result<(), String> {
    let (agent, session) = (c.agent.id().to_string(), c.agent.session().id().to_string());
    if agent == session {
        Ok(())
    } else {
        Err(format!(
            "agent id {agent:?} differs from session id {session:?}"
        ))
    }
}

async fn followup_opens_a_turn(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let session = agent.session();
    let before = session.len();
    let n = turn_starts(agent) + 1;
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{n}"),
            "idle".to_owned(),
        ],
    )?;
    let logged: Vec<(String, Value)> = session
        .events_after(before)
        .into_iter()
        .filter(|e| e.r#type.starts_with("turn/"))
        .map(|e| (e.r#type.clone(), e.data))
        .collect();
    let expected = vec![
        ("turn/start".to_owned(), serde_json::json!({ "turn": n })),
        ("turn/end".to_owned(), serde_json::json!({ "turn": n })),
    ];
    if logged == expected {
        Ok(())
    } else {
        Err(format!("logged {logged:?}, expected {expected:?}"))
    }
}

/// The agent's reported status as seen from its own listeners.
async fn status_follows_the_turn(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let log: Log = Arc::default();
    let (sink, weak) = (log.clone(), Arc::downgrade(agent));
    let _keep = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        if let Some(agent) = weak.upgrade() {
            push(
                &sink,
                format!("{} while {:?}", describe(event), agent.status()),
            );
        }
    }));
    let before = agent.status();
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l.starts_with("idle"))
    })
    .await?;
    if before != AgentStatus::Idle {
        return Err(format!("a fresh agent reports {before:?}"));
    }
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running while Running".to_owned(),
            format!("claimed f1 #{n} while Running"),
            "idle while Idle".to_owned(),
        ],
    )
}

async fn inject_does_not_wake(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    agent
        .inject(message("n1"))
        .map_err(|e| format!("inject refused: {e}"))?;
    quiet().await;
    if !lines(&log).is_empty() || agent.status() != AgentStatus::Idle {
        return Err(format!(
            "an inject woke the agent: events {:?}, status {:?}",
            lines(&log),
            agent.status()
        ));
    }
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{n}"),
            format!("claimed n1 #{n}"),
            "idle".to_owned(),
        ],
    )
}

/// A message injected while a turn runs is claimed by that turn before it ends.
async fn turn_drains_inbox_before_ending(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let weak = Arc::downgrade(agent);
    let once = Mutex::new(true);
    let _inject = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::InboxClaimed { message: m, .. } = event
            && m.joined_text() == "f1"
            && std::mem::take(&mut *turnkit_core::lock(&once))
            && let Some(agent) = weak.upgrade()
        {
            let _ = agent.inject(message("n1"));
        }
    }));
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{n}"),
            format!("claimed n1 #{n}"),
            "idle".to_owned(),
        ],
    )
}

async fn withdraw_returns_unclaimed(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let notice = message("n1");
    let id = notice.id.clone();
    agent
        .inject(notice)
        .map_err(|e| format!("inject refused: {e}"))?;
    let first = agent.withdraw_injected(&id).map(|m| m.joined_text());
    let second = agent.withdraw_injected(&id).map(|m| m.joined_text());
    if first.as_deref() != Some("n1") || second.is_some() {
        return Err(format!(
            "withdraw gave {first:?} then {second:?}, expected Some(\"n1\") then None"
        ));
    }
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{n}"),
            "idle".to_owned(),
        ],
    )
}

/// A followup queued by a listener of the idle report (tool-jobs moving a stranded notice,
/// decision 12) opens the next turn.
async fn idle_listener_followup_runs(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let weak = Arc::downgrade(agent);
    let once = Mutex::new(true);
    let _wake = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::Status(AgentStatus::Idle) = event
            && std::mem::take(&mut *turnkit_core::lock(&once))
            && let Some(agent) = weak.upgrade()
        {
            let _ = agent.followup(message("f2"));
        }
    }));
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("a second turn end", || {
        lines(&log).iter().filter(|l| *l == "idle").count() >= 2
    })
    .await?;
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{}", n - 1),
            "idle".to_owned(),
            "running".to_owned(),
            format!("claimed f2 #{n}"),
            "idle".to_owned(),
        ],
    )
}

async fn maintenance_refused_during_turn(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let seen: Log = Arc::default();
    let (sink, weak): (Log, Weak<dyn Agent>) = (seen.clone(), Arc::downgrade(agent));
    let _probe = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        if let AgentEvent::InboxClaimed { .. } = event
            && let Some(agent) = weak.upgrade()
        {
            let claim = agent.try_begin_maintenance();
            push(&sink, format!("maintenance {}", claim.is_ok()));
        }
    }));
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    expect_lines(&seen, &["maintenance false".to_owned()])
}

fn maintenance_is_exclusive(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let guard = agent
        .try_begin_maintenance()
        .map_err(|_| "an idle agent refused maintenance".to_owned())?;
    if agent.try_begin_maintenance().is_ok() {
        return Err("a second maintenance guard was granted".to_owned());
    }
    drop(guard);
    agent
        .try_begin_maintenance()
        .map(drop)
        .map_err(|_| "maintenance refused after the guard dropped".to_owned())
}

async fn maintenance_parks_input(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let guard = agent
        .try_begin_maintenance()
        .map_err(|_| "an idle agent refused maintenance".to_owned())?;
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    quiet().await;
    if !lines(&log).is_empty() {
        return Err(format!(
            "input ran under maintenance: events {:?}",
            lines(&log)
        ));
    }
    drop(guard);
    wait_until("the parked turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    let n = turn_starts(agent);
    expect_lines(
        &log,
        &[
            "running".to_owned(),
            format!("claimed f1 #{n}"),
            "idle".to_owned(),
        ],
    )
}

async fn when_idle_waits_for_maintenance(c: &Candidate) -> Result<(), String> {
    let agent = c.agent.clone();
    let guard = agent
        .try_begin_maintenance()
        .map_err(|_| "an idle agent refused maintenance".to_owned())?;
    let done = Arc::new(Mutex::new(false));
    let flag = done.clone();
    let waiter = agent.clone();
    let task = tokio::spawn(async move {
        waiter.when_idle().await;
        *turnkit_core::lock(&flag) = true;
    });
    quiet().await;
    let early = *turnkit_core::lock(&done);
    drop(guard);
    let finished = wait_until("when_idle complete after the guard dropped", || {
        *turnkit_core::lock(&done)
    })
    .await;
    task.abort();
    if early {
        return Err("when_idle completed while a maintenance guard was held".to_owned());
    }
    finished
}

async fn unsubscribe_stops_events(c: &Candidate) -> Result<(), String> {
    let agent = &c.agent;
    let (log, _keep) = record(agent);
    let (dropped, registration) = record(agent);
    drop(registration);
    agent
        .followup(message("f1"))
        .map_err(|e| format!("followup refused: {e}"))?;
    wait_until("the turn end (idle)", || {
        lines(&log).iter().any(|l| l == "idle")
    })
    .await?;
    expect_lines(&dropped, &[])
}

async fn dispose_awaits_hooks(c: &mut Candidate) -> Result<(), String> {
    let agent = c.agent.clone();
    let log: Log = Arc::default();
    let sink = log.clone();
    let _keep = agent.subscribe(Arc::new(move |event: &AgentEvent| {
        push(&sink, describe(event));
    }));
    let hook_log = log.clone();
    agent
        .add_dispose_hook(Box::new(move || {
            Box::pin(async move {
                push(&hook_log, "hook started".to_owned());
                tokio::task::yield_now().await;
                settle().await;
                push(&hook_log, "hook done".to_owned());
            })
        }))
        .map_err(|e| format!("add_dispose_hook refused: {e}"))?;
    c.dispose().await;
    if !agent.is_disposed() {
        return Err("is_disposed is false after disposal".to_owned());
    }
    expect_lines(
        &log,
        &[
            "hook started".to_owned(),
            "hook done".to_owned(),
            "disposed".to_owned(),
        ],
    )
}

async fn removed_hook_does_not_run(c: &mut Candidate) -> Result<(), String> {
    let agent = c.agent.clone();
    let ran = Arc::new(Mutex::new(false));
    let flag = ran.clone();
    let id = agent
        .add_dispose_hook(Box::new(move || {
            Box::pin(async move {
                *turnkit_core::lock(&flag) = true;
            })
        }))
        .map_err(|e| format!("add_dispose_hook refused: {e}"))?;
    let Some(hook) = agent.remove_dispose_hook(id) else {
        return Err("remove_dispose_hook did not hand the hook back".to_owned());
    };
    if agent.remove_dispose_hook(id).is_some() {
        return Err("a removed hook was handed back twice".to_owned());
    }
    c.dispose().await;
    if *turnkit_core::lock(&ran) {
        return Err("disposal ran a removed hook".to_owned());
    }
    hook().await;
    if *turnkit_core::lock(&ran) {
        Ok(())
    } else {
        Err("the handed-back hook did nothing".to_owned())
    }
}

async fn disposed_refuses_input(c: &mut Candidate) -> Result<(), String> {
    let agent = c.agent.clone();
    c.dispose().await;
    refused("followup", agent.followup(message("f1")))?;
    refused("inject", agent.inject(message("n1")))?;
    refused(
        "add_dispose_hook",
        agent
            .add_dispose_hook(Box::new(|| Box::pin(async {})))
            .map(drop),
    )?;
    if agent.try_begin_maintenance().is_ok() {
        return Err("maintenance granted after disposal".to_owned());
    }
    Ok(())
}

async fn disposed_is_the_last_event(c: &mut Candidate) -> Result<(), String> {
    let agent = c.agent.clone();
    let (log, _keep) = record(&agent);
    c.dispose().await;
    let _ = agent.followup(message("f1"));
    let _ = agent.inject(message("n1"));
    quiet().await;
    expect_lines(&log, &["disposed".to_owned()])
}
