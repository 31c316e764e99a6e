//! [`Subagents`]: starts children as jobs of kind `subagent`, keeps the caps, and drives each
//! child's turn on the production loop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::{
    Agent, AgentId, MessageSource, SessionHeader, SessionId, SessionStore, StoreError, UserMessage,
    lock,
};
use turnkit_host::{HostKit, LoopAgent, TurnObserver};
use turnkit_jobs::{
    JobError, JobHooks, JobId, JobKind, JobOutcome, JobRegistry, JobStart, StartGate,
};

use crate::{ChildContext, ChildModel, ChildStep, SubagentConfig};

/// The event a child's session opens with (before its turn): payload
/// `{"parent": <caller id>, "prompt": <text>, "description"?: <text>}`.
pub const SUBAGENT_START: &str = "subagent/start";
/// The event a child's session closes with (after its turn): payload
/// `{"status": "completed"|"killed"|"failed", "output"?: <answer>, "detail"?: <reason>}`.
pub const SUBAGENT_END: &str = "subagent/end";

/// Why a child could not be started. `Display` is the model-facing message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The tool was called without an agent.
    #[error("agent requires a calling agent")]
    NoCaller,
    /// The prompt is empty or only whitespace.
    #[error("prompt must not be empty")]
    EmptyPrompt,
    /// The caller is itself a child at depth `max` (`maxDepth`).
    #[error(
        "subagent limit reached: {agent} is a subagent at depth {max} and cannot start subagents (maxDepth)"
    )]
    TooDeep {
        /// The calling agent.
        agent: AgentId,
        /// The cap.
        max: u32,
    },
    /// The caller already has `max` children running (`maxConcurrentPerAgent`).
    #[error(
        "subagent limit reached: {agent} already has {max} running subagents (maxConcurrentPerAgent); wait for one to finish or stop one with job_kill"
    )]
    TooManyRunning {
        /// The calling agent.
        agent: AgentId,
        /// The cap.
        max: u32,
    },
    /// The caller's session already started `max` children (`maxSpawnsPerSession`).
    #[error(
        "subagent limit reached: session {session} already started {max} subagents (maxSpawnsPerSession)"
    )]
    TooManySpawns {
        /// The calling session.
        session: SessionId,
        /// The cap.
        max: u32,
    },
    /// The registry refused the start (its exact message), or the child's session could
    /// not be created (`failed to start subagent: <store error>`).
    #[error(transparent)]
    Job(#[from] JobError),
}

/// A started child: its job and its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spawned {
    /// The job id (`subagent-<N>`).
    pub job: JobId,
    /// The child's session id (`<caller session>.agent-<n>`).
    pub session: SessionId,
}

#[derive(Default)]
struct Counts {
    running: HashMap<AgentId, u32>,
    /// The depth of each live child (a root, absent, is at depth 0).
    depth: HashMap<AgentId, u32>,
    spawned: HashMap<SessionId, u32>,
}

struct Shared {
    config: SubagentConfig,
    kit: Arc<HostKit>,
    store: Arc<dyn SessionStore>,
    jobs: Arc<dyn JobRegistry>,
    model: Arc<dyn ChildModel>,
    counts: Mutex<Counts>,
}

/// Starts children for calling agents; shared by the `agent` tool and hosts that start a
/// child themselves.
#[derive(Clone)]
pub struct Subagents {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Subagents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subagents")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

/// Decrements the caller's running count when the child has settled (or never started).
struct Running {
    shared: Weak<Shared>,
    agent: AgentId,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            let mut counts = lock(&shared.counts);
            if let Some(n) = counts.running.get_mut(&self.agent) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.running.remove(&self.agent);
                }
            }
        }
    }
}

/// Removes a disposed child from the kit.
struct Leaves {
    kit: Weak<HostKit>,
}

impl TurnObserver for Leaves {
    fn disposed(&self, agent: &Arc<LoopAgent>) {
        if let Some(kit) = self.kit.upgrade() {
            kit.remove(&agent.as_dyn());
        }
    }
}

impl Subagents {
    /// A launcher: children are published in `kit`, their sessions created in `store`,
    /// their jobs registered in `jobs`, and their steps run by `model`.
    pub fn new(
        config: SubagentConfig,
        kit: Arc<HostKit>,
        store: Arc<dyn SessionStore>,
        jobs: Arc<dyn JobRegistry>,
        model: Arc<dyn ChildModel>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                kit,
                store,
                jobs,
                model,
                counts: Mutex::new(Counts::default()),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SubagentConfig {
        &self.shared.config
    }

    /// The job registry.
    pub fn registry(&self) -> &Arc<dyn JobRegistry> {
        &self.shared.jobs
    }

    /// How many children `agent` has running now.
    pub fn running(&self, agent: &AgentId) -> u32 {
        lock(&self.shared.counts)
            .running
            .get(agent)
            .copied()
            .unwrap_or(0)
    }

    /// Starts a child for `caller` on `prompt` and registers it as a job of kind `subagent`
    /// owned by `caller`, labelled `description` (or the prompt's first line). The child is a
    /// fresh session `<caller session>.agent-<n>` in the store, opening with
    /// [`SUBAGENT_START`]; a [`LoopAgent`] that is not a root and whose scope parents are the
    /// caller's chain runs one turn on it, then appends [`SUBAGENT_END`], is disposed
    /// (flushing its log) and leaves the kit. The job settles (todo-jobs §6): `completed` with
    /// the answer as its final output, `failed` with the model's stop reason as detail, or
    /// `killed` when it was cancelled. No job exists when this returns an error.
    ///
    /// # Errors
    /// [`SpawnError`]; checks run in this order: caller, prompt, `maxDepth`,
    /// `maxConcurrentPerAgent`, `maxSpawnsPerSession`, then the registry's preflight.
    pub async fn spawn(
        &self,
        caller: Option<Arc<dyn Agent>>,
        prompt: &str,
        description: Option<&str>,
    ) -> Result<Spawned, SpawnError> {
        let caller = caller.ok_or(SpawnError::NoCaller)?;
        if turnkit_core::js_trim(prompt).is_empty() {
            return Err(SpawnError::EmptyPrompt);
        }
        let shared = &self.shared;
        let parent = caller.id().clone();
        let parent_session = SessionId::from(caller.session().id().as_str());
        let (number, depth) = {
            let mut counts = lock(&shared.counts);
            let depth = counts.depth.get(&parent).copied().unwrap_or(0) + 1;
            if depth > shared.config.max_depth {
                return Err(SpawnError::TooDeep {
                    agent: parent,
                    max: shared.config.max_depth,
                });
            }
            let running = counts.running.get(&parent).copied().unwrap_or(0);
            if running >= shared.config.max_concurrent_per_agent {
                return Err(SpawnError::TooManyRunning {
                    agent: parent,
                    max: shared.config.max_concurrent_per_agent,
                });
            }
            let spawned = counts.spawned.get(&parent_session).copied().unwrap_or(0);
            if spawned >= shared.config.max_spawns_per_session {
                return Err(SpawnError::TooManySpawns {
                    session: parent_session,
                    max: shared.config.max_spawns_per_session,
                });
            }
            *counts.running.entry(parent.clone()).or_insert(0) += 1;
            (spawned + 1, depth)
        };
        let running = Running {
            shared: Arc::downgrade(shared),
            agent: parent,
        };
        let label = description
            .filter(|d| !turnkit_core::js_trim(d).is_empty())
            .map_or_else(|| first_line(prompt), str::to_owned);
        let created: Arc<Mutex<Option<SessionId>>> = Arc::default();
        let run_shared = shared.clone();
        let run_created = created.clone();
        let run_caller = caller.clone();
        let prompt = prompt.to_owned();
        let description = description.map(str::to_owned);
        let job = turnkit_jobs::start_saved(shared.jobs.as_ref(), Some(caller), |gate| {
            JobStart::new(JobKind::subagent(), label, move || {
                let child = start_child(
                    &run_shared,
                    &run_caller,
                    Numbered { number, depth },
                    Brief {
                        prompt,
                        description,
                    },
                    running,
                    gate,
                )?;
                *lock(&run_created) = Some(child.0);
                Ok(child.1)
            })
        })
        .await?;
        *lock(&shared.counts)
            .spawned
            .entry(parent_session.clone())
            .or_insert(0) += 1;
        let session = lock(&created).take().unwrap_or(parent_session);
        Ok(Spawned { job, session })
    }
}

fn first_line(text: &str) -> String {
    let line = turnkit_core::js_trim(text).lines().next().unwrap_or("");
    line.to_owned()
}

/// Why the child's session could not be created; propagates from `start` as
/// `failed to start subagent: <store error>`.
#[derive(Debug, thiserror::Error)]
#[error("failed to start subagent: {0}")]
struct CreateFailed(StoreError);

fn create_session(
    store: &dyn SessionStore,
    parent: &SessionId,
    mut number: u32,
) -> Result<Arc<dyn turnkit_core::Session>, CreateFailed> {
    // A resumed parent starts numbering again; skip the ids its earlier children hold.
    loop {
        let id = format!("{parent}.agent-{number}");
        match store.create(SessionHeader::new(id.as_str())) {
            Err(StoreError::AlreadyExists(_)) => number = number.saturating_add(1),
            other => return other.map_err(CreateFailed),
        }
    }
}

type Started = (SessionId, JobHooks);

/// A child's number in its parent's session and its depth.
#[derive(Clone, Copy)]
struct Numbered {
    number: u32,
    depth: u32,
}

/// What the child is asked: its prompt and optional description.
struct Brief {
    prompt: String,
    description: Option<String>,
}

fn start_child(
    shared: &Arc<Shared>,
    caller: &Arc<dyn Agent>,
    numbered: Numbered,
    brief: Brief,
    running: Running,
    gate: StartGate,
) -> Result<Started, turnkit_jobs::BoxError> {
    let Brief {
        prompt,
        description,
    } = brief;
    let parent = SessionId::from(caller.session().id().as_str());
    let session = create_session(shared.store.as_ref(), &parent, numbered.number)?;
    let mut start = Map::new();
    start.insert("parent".to_owned(), Value::from(caller.id().as_str()));
    start.insert("prompt".to_owned(), Value::from(prompt.as_str()));
    if let Some(description) = &description {
        start.insert("description".to_owned(), Value::from(description.as_str()));
    }
    session.append(SUBAGENT_START, Value::Object(start))?;
    let agent = LoopAgent::builder(session)
        .root(false)
        .scope_parents(caller.scope_chain())
        .observer(Arc::new(Leaves {
            kit: Arc::downgrade(&shared.kit),
        }))
        .build();
    let id = SessionId::from(agent.id().as_str());
    lock(&shared.counts)
        .depth
        .insert(agent.id().clone(), numbered.depth);
    let cancel = CancellationToken::new();
    let context = ChildContext {
        agent: agent.clone(),
        kit: shared.kit.clone(),
        parent: caller.id().clone(),
        prompt: prompt.clone(),
        description,
        cancel: cancel.clone(),
    };
    agent.send(UserMessage::text(prompt, MessageSource::User), None)?;
    shared.kit.publish(agent.as_dyn());
    let model = shared.model.clone();
    // The child's driver belongs to its job: it is spawned when the registry first polls
    // `done`, which happens only after `start` recorded the job (a start the job journal
    // could not save is cancelled before that, so the child ends before any model step);
    // `done` resolves when the task has ended (so the registry's disposal, which awaits
    // every settlement, joins it), and dropping `done` unsettled aborts it.
    // The child takes no model step before its start is saved (the jobs layer's saved
    // start opens `gate` once the parent's session was flushed); when it never is, the
    // child ends killed without a turn.
    let driver = async move {
        let result = if gate.opened().await {
            drive(&context, model.as_ref()).await
        } else {
            JobOutcome::killed()
        };
        record_end(&context.agent, &result);
        context.agent.dispose().await;
        if let Some(shared) = running.shared.upgrade() {
            lock(&shared.counts).depth.remove(context.agent.id());
        }
        drop(running);
        drop(context);
        result
    };
    let hooks = JobHooks::new(
        move |_reason| {
            cancel.cancel();
            Ok(())
        },
        async move {
            AbortOnDropHandle::new(tokio::spawn(driver))
                .await
                .map_err(|_| "the subagent's driver ended without an outcome".into())
        },
    );
    Ok((id, hooks))
}

/// Runs the child's one turn to its outcome.
async fn drive(context: &ChildContext, model: &dyn ChildModel) -> JobOutcome {
    let agent = &context.agent;
    let opened = tokio::select! {
        biased;
        () = context.cancel.cancelled() => return JobOutcome::killed(),
        turn = agent.next_turn() => turn,
    };
    let Some(mut turn) = opened else {
        return JobOutcome::failed().with_detail("the subagent was disposed before its turn");
    };
    let mut input = turn.take_input();
    loop {
        let step = tokio::select! {
            biased;
            () = context.cancel.cancelled() => None,
            step = model.step(context, std::mem::take(&mut input)) => Some(step),
        };
        match step {
            None => {
                drop(turn.finish());
                return JobOutcome::killed();
            }
            Some(ChildStep::Continue) => input = turn.claim_injected(),
            Some(ChildStep::Answer(answer)) => {
                drop(turn.finish());
                return JobOutcome::completed().with_output(answer);
            }
            Some(ChildStep::Stop(reason)) => {
                drop(turn.finish());
                return JobOutcome::failed().with_detail(reason);
            }
        }
    }
}

fn record_end(agent: &LoopAgent, outcome: &JobOutcome) {
    let mut data = json!({"status": outcome.status.as_str()});
    if let Some(object) = data.as_object_mut() {
        if let Some(output) = &outcome.output {
            object.insert("output".to_owned(), Value::from(output.as_str()));
        }
        if let Some(detail) = &outcome.detail {
            object.insert("detail".to_owned(), Value::from(detail.as_str()));
        }
    }
    if let Err(error) = agent.session().append(SUBAGENT_END, data) {
        tracing::warn!(agent = %agent.id(), "could not append {SUBAGENT_END}: {error}");
    }
}
