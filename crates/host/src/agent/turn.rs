//! Turns: the [`Turn`] a runtime drives, the [`TurnSource`] a driver task waits on, and
//! how a [`LoopAgent`] opens them.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use turnkit_core::{Agent, AgentEvent, AgentStatus, UserMessage, lock};

use crate::agent::loop_agent::{LoopAgent, TURN_START};

/// Whether a turn opens only for queued input.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opening {
    ForInput,
    Always,
}

impl LoopAgent {
    /// A handle for the driver task that does not keep the agent alive: its
    /// [`TurnSource::next_turn`] ends when the agent is disposed or dropped.
    pub fn turns(&self) -> TurnSource {
        TurnSource {
            agent: self.me.clone(),
            wake: self.wake.clone(),
        }
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
        let id = self.id.as_str();
        let span = tracing::info_span!(
            "invoke_agent",
            "otel.name" = %format_args!("invoke_agent {id}"),
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = id,
            "gen_ai.conversation.id" = %self.session.id(),
            "harness.turn" = number,
        );
        Some(Turn {
            agent,
            number,
            input: claimed,
            open: true,
            span,
        })
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
    /// The turn's `invoke_agent` span, closed with the turn.
    span: tracing::Span,
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

    /// The turn's `tracing` span, `invoke_agent` in the OpenTelemetry GenAI conventions
    /// (exported as `invoke_agent {gen_ai.agent.name}`): `gen_ai.operation.name`
    /// (`invoke_agent`), `gen_ai.agent.name` (the agent's id; an internal agent span carries
    /// no `gen_ai.agent.id`), `gen_ai.conversation.id` (the session id) and `harness.turn`
    /// (the turn number). It
    /// lasts as long as the turn; run the turn's model steps and tool calls in it
    /// (`tracing::Instrument::instrument(step, turn.span().clone())`) so their
    /// `execute_tool` spans nest under it (docs/observability.md).
    pub fn span(&self) -> &tracing::Span {
        &self.span
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
