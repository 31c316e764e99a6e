//! The runner: executes the steps of a scenario against the in-memory host and collects the
//! transcript.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use turnkit_core::{
    Agent, Clock, JsonlStore, MemoryStore, SessionHeader, SessionId, SessionStore, SystemClock,
    ToolOutput,
};

use turnkit_jobs::{JobOutcome, TerminalStatus};

use turnkit_subagent::ChildAction;
use turnkit_testkit::{
    FakeJob, FakeProducer, HostRecord, ManualClock, MemoryAgent, MemoryHarness, OnCancel, Recorder,
    settle,
};

use crate::grammar::{
    CancelMode, ClockKind, Config, FaultMode, Phase, SettleStatus, Step, StoreKind,
};
use crate::plugins::{self, FamilyConfigs, Installed};
use crate::runtime::{RunFailure, block_on_paused};

/// The outcome of a scenario run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    /// One compact JSON object per line, in the order things happened.
    pub lines: Vec<String>,
    /// Whether the run stopped on a scenario error (the last line is then the `error`
    /// line; the CLI exits with status 2).
    pub failed: bool,
}

impl Transcript {
    /// The lines joined with `\n`, with a trailing newline when non-empty.
    pub fn to_text(&self) -> String {
        let mut out = self.lines.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// Runs a scenario on a fresh current-thread tokio runtime whose clock is paused (so "let
/// all work that can proceed finish" is exact: a 1 ms tokio sleep completes only once every
/// other task is blocked, and no library timer lives in tokio's clock). Works from synchronous code and from inside any tokio runtime (the
/// scenario then runs on a thread of its own). A panic inside the run keeps the transcript
/// printed so far and ends it with an `internal error` line.
pub fn run_scenario(source: &str) -> Transcript {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let outcome = block_on_paused(async move || run_into(source, sink).await);
    let mut printed = take_lines(&lines);
    match outcome {
        Ok(failed) => Transcript {
            lines: printed,
            failed,
        },
        Err(RunFailure::Runtime(error)) => Transcript {
            lines: vec![error_line(0, &format!("cannot start a runtime: {error}"))],
            failed: true,
        },
        Err(RunFailure::Panic(message)) => {
            // A bug, not a scenario error: keep what was printed and say where it stopped.
            printed.push(error_line(0, &format!("internal error: {message}")));
            Transcript {
                lines: printed,
                failed: true,
            }
        }
    }
}

/// Runs a scenario on the current tokio runtime, which must be a current-thread runtime
/// with a paused clock for the transcript to be deterministic.
pub async fn run_scenario_in_runtime(source: &str) -> Transcript {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let failed = run_into(source, lines.clone()).await;
    Transcript {
        lines: take_lines(&lines),
        failed,
    }
}

fn take_lines(lines: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *turnkit_core::lock(lines))
}

/// Runs the steps, appending transcript lines to `lines`; returns whether a scenario
/// error stopped the run.
async fn run_into(source: &str, lines: Arc<Mutex<Vec<String>>>) -> bool {
    let mut runner = Runner::new(lines.clone());
    let mut failed = false;
    for (index, text) in source.lines().enumerate() {
        let line = index + 1;
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let result = match serde_json::from_str::<Value>(trimmed) {
            Ok(value) => match Step::from_value(value) {
                Ok(step) => runner.step(line, step).await,
                Err(message) => Err(message),
            },
            Err(error) => Err(format!("invalid JSON: {error}")),
        };
        if let Err(message) = result {
            push(&lines, error_line(line, &message));
            failed = true;
            break;
        }
        settle().await;
    }
    if let Err(message) = runner.finish().await
        && !failed
    {
        // Not a step's error: line 0, like the runner's own failures.
        push(&lines, error_line(0, &message));
        failed = true;
    }
    failed
}

fn error_line(line: usize, message: &str) -> String {
    json!({"kind": "error", "line": line, "message": message}).to_string()
}

fn push(lines: &Mutex<Vec<String>>, line: String) {
    turnkit_core::lock(lines).push(line);
}

fn record_line(record: &HostRecord) -> String {
    match record {
        HostRecord::Followup { session, text } => {
            json!({"kind": "followup", "session": session, "text": text})
        }
        HostRecord::Inject { session, text } => {
            json!({"kind": "inject", "session": session, "text": text})
        }
        HostRecord::Claimed {
            session,
            source,
            text,
        } => json!({"kind": "claimed", "session": session, "source": source, "text": text}),
        HostRecord::Turn { session, phase } => {
            json!({"kind": "turn", "session": session, "phase": phase})
        }
    }
    .to_string()
}

fn result_line(call: &str, tool: &str, output: &ToolOutput) -> String {
    json!({
        "kind": "result",
        "call": call,
        "tool": tool,
        "isError": output.is_error,
        "value": output.value,
        "text": output.text(),
    })
    .to_string()
}

enum ClockMode {
    Manual(ManualClock),
    System,
}

struct Setup {
    clock_mode: ClockMode,
    clock: Arc<dyn Clock>,
    store: Arc<dyn SessionStore>,
    _dir: Option<tempfile::TempDir>,
    host: Arc<MemoryHarness>,
    installed: Option<Installed>,
    configs: FamilyConfigs,
}

struct Runner {
    lines: Arc<Mutex<Vec<String>>>,
    setup: Option<Setup>,
    steps_seen: usize,
    calls: HashMap<String, JoinHandle<()>>,
    jobs: HashMap<String, FakeJob>,
    /// The owner of every job a step started, for fenced lookups.
    owners: HashMap<String, Option<turnkit_core::AgentId>>,
    /// Sessions with a live agent, in publication order (restart republishes these).
    live: Vec<SessionId>,
}

impl Runner {
    fn new(lines: Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            lines,
            setup: None,
            steps_seen: 0,
            calls: HashMap::new(),
            jobs: HashMap::new(),
            owners: HashMap::new(),
            live: Vec::new(),
        }
    }

    fn recorder(&self) -> Recorder {
        let lines = self.lines.clone();
        Arc::new(move |record: HostRecord| push(&lines, record_line(&record)))
    }

    fn configure(&mut self, config: Option<Config>) -> Result<(), String> {
        let mut configs = FamilyConfigs::default();
        let mut clock_mode = ClockMode::Manual(ManualClock::at_default());
        let mut jsonl = false;
        let mut auto_turns = true;
        if let Some(Config {
            todo,
            jobs,
            tool_jobs,
            schedule,
            bash,
            terminal,
            subagent,
            clock,
            store,
            auto_turns: turns,
        }) = config
        {
            configs.todo = todo.map(Value::Object);
            configs.jobs = jobs.map(Value::Object);
            configs.tool_jobs = tool_jobs.map(Value::Object);
            configs.schedule = schedule.map(Value::Object);
            configs.bash = bash.map(Value::Object);
            configs.terminal = terminal.map(Value::Object);
            configs.subagent = subagent.map(Value::Object);
            if let Some(clock) = clock {
                clock_mode = match clock.mode {
                    Some(ClockKind::Manual) | None => ClockMode::Manual(match &clock.start {
                        None => ManualClock::at_default(),
                        Some(start) => ManualClock::new(parse_instant(start)?),
                    }),
                    Some(ClockKind::System) => ClockMode::System,
                };
            }
            jsonl = store == Some(StoreKind::Jsonl);
            auto_turns = turns.unwrap_or(true);
        }
        let clock: Arc<dyn Clock> = match &clock_mode {
            ClockMode::Manual(clock) => Arc::new(clock.clone()),
            ClockMode::System => Arc::new(RealTimeClock),
        };
        let (store, dir): (Arc<dyn SessionStore>, _) = if jsonl {
            let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
            let store = JsonlStore::new(dir.path(), clock.clone()).map_err(|e| e.to_string())?;
            (Arc::new(store), Some(dir))
        } else {
            (Arc::new(MemoryStore::new(clock.clone())), None)
        };
        let host = MemoryHarness::with_store(store.clone(), clock.clone());
        host.set_auto_turns(auto_turns);
        host.set_recorder(self.recorder());
        let installed = plugins::install(&host, &configs)?;
        self.setup = Some(Setup {
            clock_mode,
            clock,
            store,
            _dir: dir,
            host,
            installed: Some(installed),
            configs,
        });
        Ok(())
    }

    fn setup(&mut self) -> Result<&mut Setup, String> {
        if self.setup.is_none() {
            self.configure(None)?;
        }
        self.setup
            .as_mut()
            .ok_or_else(|| "the scenario host is not set up".to_owned())
    }

    fn host(&mut self) -> Result<Arc<MemoryHarness>, String> {
        Ok(self.setup()?.host.clone())
    }

    async fn step(&mut self, line: usize, step: Step) -> Result<(), String> {
        self.steps_seen += 1;
        match step {
            Step::Config(config) => {
                if self.steps_seen != 1 {
                    return Err("config must be the first step".to_owned());
                }
                self.configure(Some(*config))?;
            }
            Step::Session { id, time_zone } => {
                let mut header = SessionHeader::new(id.as_str());
                header.time_zone = time_zone;
                self.host()?
                    .create_session(header)
                    .map_err(|e| e.to_string())?;
                self.live.push(SessionId::from(id));
            }
            Step::Fork { id, from } => {
                let id = SessionId::from(id);
                let from = SessionId::from(from);
                self.host()?
                    .fork_session(id.clone(), &from)
                    .map_err(|e| e.to_string())?;
                self.live.push(id);
            }
            Step::Dispose { session } => {
                let id = SessionId::from(session);
                let host = self.host()?;
                if host.memory_agent(&id).is_none() {
                    return Err(format!("no live agent for session {id}"));
                }
                let what = format!("dispose of session {id}");
                let stuck = blocked(&what, &format!("{TEARDOWN_HINT} first"));
                let registry = self.registry().ok();
                let disposal = host.dispose_agent(&id);
                self.until_done(registry, &what, stuck, disposal).await?;
                self.live.retain(|s| s != &id);
            }
            Step::Resume { session } => {
                let id = SessionId::from(session);
                let host = self.host()?;
                if host.memory_agent(&id).is_some() {
                    return Err(format!("session {id} already has a live agent"));
                }
                host.resume(&id).map_err(|e| e.to_string())?;
                self.live.push(id);
            }
            Step::Restart {} => self.restart().await?,
            Step::Turn { session, phase } => {
                let agent = self.agent(&session)?;
                match phase {
                    Phase::Start => agent.start_turn(),
                    Phase::End => agent.end_turn(),
                }
            }
            Step::User {
                session,
                text,
                client_time_zone,
            } => {
                let agent = self.agent(&session)?;
                agent
                    .send_user(&text, client_time_zone)
                    .map_err(|e| e.to_string())?;
            }
            Step::Call {
                tool,
                args,
                session,
                id,
                is_async,
            } => {
                let id = id.unwrap_or_else(|| format!("L{line}"));
                let session = session.map(SessionId::from);
                self.call(id, tool, args, session, is_async.unwrap_or(false))
                    .await?;
            }
            Step::Await { call: id } => {
                let mut handle = self
                    .calls
                    .remove(&id)
                    .ok_or_else(|| format!("no async call {id:?} is pending"))?;
                let what = format!("the await of call {id:?}");
                let stuck = blocked(
                    &what,
                    "advance the clock or settle the job before awaiting it",
                );
                let registry = self.registry().ok();
                match self.until_done(registry, &what, stuck, &mut handle).await {
                    Ok(joined) => joined.map_err(|e| format!("call {id:?} failed: {e}"))?,
                    Err(error) => {
                        // The run stops here: the call must not print after the error.
                        handle.abort();
                        return Err(error);
                    }
                }
            }
            Step::Advance { ms } => match &self.setup()?.clock_mode {
                ClockMode::Manual(clock) => {
                    let by = Duration::from_millis(ms);
                    if !clock.can_advance(by) {
                        return Err(format!(
                            "advance by {ms} ms leaves the representable time range"
                        ));
                    }
                    clock.advance(by).await;
                }
                ClockMode::System => {
                    return Err("advance needs the manual clock".to_owned());
                }
            },
            Step::SetClock { at } => {
                let at = parse_instant(&at)?;
                match &self.setup()?.clock_mode {
                    ClockMode::Manual(clock) => clock.set(at),
                    ClockMode::System => {
                        return Err("set_clock needs the manual clock".to_owned());
                    }
                }
            }
            Step::Fault {
                session,
                flush,
                append,
            } => {
                let faults = self.host()?.faults(&SessionId::from(session));
                if let Some(mode) = flush {
                    faults.set_flush_fail(mode == FaultMode::Fail);
                }
                if let Some(mode) = append {
                    faults.set_append_fail(mode == FaultMode::Fail);
                }
            }
            Step::Projection { session, key } => {
                let value = self
                    .host()?
                    .projections()
                    .view(&SessionId::from(session.as_str()), &key)
                    .map_or(Value::Null, |v| v.value);
                push(
                    &self.lines,
                    json!({"kind": "projection", "session": session, "key": key, "value": value})
                        .to_string(),
                );
            }
            Step::Log {
                session,
                event_type,
            } => {
                let id = SessionId::from(session.as_str());
                let host = self.host()?;
                let log = match host.memory_agent(&id) {
                    Some(agent) => agent.session(),
                    None => host.store().open(&id).map_err(|e| e.to_string())?,
                };
                let events: Vec<Value> = log
                    .events()
                    .into_iter()
                    .filter(|e| event_type.as_ref().is_none_or(|t| *t == e.r#type))
                    .map(|e| json!({"seq": e.seq, "type": e.r#type, "data": e.data}))
                    .collect();
                push(
                    &self.lines,
                    json!({"kind": "log", "session": session, "events": events}).to_string(),
                );
            }
            Step::ChildScript { prompt, steps } => {
                let actions = steps
                    .iter()
                    .map(ChildAction::from_json)
                    .collect::<Result<Vec<_>, _>>()?;
                self.setup()?.configs.children.script(prompt, actions);
            }
            Step::FakeJob {
                session,
                kind,
                label,
                stream,
                output_limit_bytes,
                on_cancel,
            } => {
                let owner = self.owner(session.as_deref())?;
                let mut producer = FakeProducer::new(kind, label)
                    .stream(stream.unwrap_or(true))
                    .owner_opt(owner.as_ref().map(|a| a.as_dyn()));
                if let Some(limit) = output_limit_bytes {
                    producer = producer.output_limit_bytes(limit);
                }
                producer = producer.on_cancel(match on_cancel {
                    None | Some(CancelMode::Settle) => OnCancel::Settle,
                    Some(CancelMode::Hang) => OnCancel::Hang,
                    Some(CancelMode::Throw) => OnCancel::Throw("cancel failed".to_owned()),
                });
                self.fake_job(owner, producer)?;
            }
            Step::Emit { job, text } => self.fake(&job)?.emit(&text),
            Step::Settle {
                job,
                status,
                detail,
                output,
            } => {
                let job = self.fake(&job)?;
                let status = match status {
                    SettleStatus::Completed => TerminalStatus::Completed,
                    SettleStatus::Killed => TerminalStatus::Killed,
                    SettleStatus::Failed => TerminalStatus::Failed,
                };
                job.settle(JobOutcome {
                    status,
                    detail,
                    output,
                });
            }
            Step::Bash {
                session,
                command,
                output_limit_bytes,
            } => self.bash(session.as_deref(), &command, output_limit_bytes)?,
            Step::Terminal { session, command } => {
                self.terminal(session.as_deref(), command.as_deref())?;
            }
            Step::AwaitJob { job, timeout_ms } => {
                self.await_job(job, Duration::from_millis(timeout_ms.unwrap_or(30_000)))
                    .await?;
            }
        }
        Ok(())
    }

    fn registry(&mut self) -> Result<Arc<dyn turnkit_jobs::JobRegistry>, String> {
        self.setup()?
            .installed
            .as_ref()
            .map(Installed::registry)
            .ok_or_else(|| "the job registry is not installed".to_owned())
    }

    fn fake(&self, id: &str) -> Result<FakeJob, String> {
        self.jobs
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no fake job {id:?}"))
    }

    fn owner(&mut self, session: Option<&str>) -> Result<Option<Arc<MemoryAgent>>, String> {
        session.map(|session| self.agent(session)).transpose()
    }

    fn insert_job_line(&self, mark: usize, id: &str, owner: Option<&Arc<MemoryAgent>>) {
        let session = owner.map_or(Value::Null, |a| json!(a.id().as_str()));
        let line = json!({"kind": "job", "id": id, "session": session}).to_string();
        let mut lines = turnkit_core::lock(&self.lines);
        let at = mark.min(lines.len());
        lines.insert(at, line);
    }

    fn mark(&self) -> usize {
        turnkit_core::lock(&self.lines).len()
    }

    fn bash(
        &mut self,
        session: Option<&str>,
        command: &str,
        limit: Option<u64>,
    ) -> Result<(), String> {
        let owner = self.owner(session)?;
        let mark = self.mark();
        let setup = self.setup()?;
        let installed = setup
            .installed
            .as_ref()
            .ok_or_else(|| "the bash plugin is not installed".to_owned())?;
        let id = installed
            .bash
            .jobs()
            .start_background(owner.as_ref().map(|a| a.as_dyn()), command, limit)
            .map_err(|e| format!("the job was refused: {e}"))?;
        self.insert_job_line(mark, id.as_str(), owner.as_ref());
        self.owners
            .insert(id.as_str().to_owned(), owner.map(|a| a.id().clone()));
        Ok(())
    }

    /// Opens a real terminal (a PTY) for the step's session and prints a `terminal` line.
    fn terminal(&mut self, session: Option<&str>, command: Option<&str>) -> Result<(), String> {
        let owner = self.owner(session)?;
        let setup = self.setup()?;
        let installed = setup
            .installed
            .as_ref()
            .ok_or_else(|| "the terminal plugin is not installed".to_owned())?;
        let id = installed
            .terminal
            .as_ref()
            .ok_or_else(|| {
                "the terminal plugin is not installed (give the config step a \"terminal\" object)"
                    .to_owned()
            })?
            .terminals()
            .start(owner.as_ref().map(|a| a.as_dyn()), command)
            .map_err(|e| format!("the terminal was refused: {e}"))?;
        let session = owner
            .as_ref()
            .map_or(Value::Null, |a| json!(a.id().as_str()));
        push(
            &self.lines,
            json!({"kind": "terminal", "id": id.as_str(), "session": session}).to_string(),
        );
        Ok(())
    }

    /// Waits, in real time, for the job to settle (processes run in real time; tokio's clock
    /// is paused, so the time limit is kept by a watchdog thread), then lets the notice go
    /// out.
    async fn await_job(&mut self, id: String, limit: Duration) -> Result<(), String> {
        let registry = self.registry()?;
        let job_id = turnkit_jobs::JobId::from(id.as_str());
        // Jobs started by a step have a known owner; one started by a tool call (`bash` with
        // `run_in_background`) belongs to whichever live session can see it.
        let caller = match self.owners.get(&id) {
            Some(owner) => owner.clone(),
            None => {
                let live: Vec<Option<turnkit_core::AgentId>> = std::iter::once(None)
                    .chain(
                        self.live
                            .iter()
                            .map(|s| Some(turnkit_core::AgentId::from(s))),
                    )
                    .collect();
                live.into_iter()
                    .find(|caller| registry.get(&job_id, caller.as_ref()).is_ok())
                    .flatten()
            }
        };
        let target = job_id.clone();
        let settlement = Settlement::watch(registry.as_ref(), move |id| *id == target);
        let terminal = registry
            .get(&job_id, caller.as_ref())
            .map_err(|e| format!("await_job {id:?}: {e}"))?
            .status
            .is_terminal();
        if !terminal && self.jobs.contains_key(&id) {
            // Nothing settles a fake job in real time: waiting could only run out the limit.
            return Err(format!(
                "job {id:?} is a fake job: only a later \"settle\" step can finish it"
            ));
        }
        if !terminal && !settlement.within(limit).await {
            return Err(format!(
                "job {id:?} did not finish within {}ms",
                limit.as_millis()
            ));
        }
        settle().await;
        Ok(())
    }

    /// Drives a step's pending work (a synchronous call, or the `await` of an async one) to
    /// its end. On the manual clock, once every task that can run without time passing has
    /// run, the work can only go on while a real process runs (processes run in real time):
    /// it is given each running real job's settlement, for at most
    /// [`REAL_TIME_LIMIT`] of real time at a stretch. With no real job running, nothing but
    /// a later step or manual time can finish it, so waiting would hang the run: that is a
    /// scenario error naming `what`, with `hint` saying how to write the step instead.
    async fn until_done<T>(
        &mut self,
        registry: Option<Arc<dyn turnkit_jobs::JobRegistry>>,
        what: &str,
        blocked: String,
        work: impl Future<Output = T>,
    ) -> Result<T, String> {
        let manual = matches!(self.setup()?.clock_mode, ClockMode::Manual(_));
        tokio::pin!(work);
        if !manual {
            return Ok(work.await);
        }
        loop {
            tokio::select! {
                biased;
                output = &mut work => return Ok(output),
                () = settle() => {}
            }
            let Some(registry) = registry.clone() else {
                return Err(blocked);
            };
            let fakes: Vec<turnkit_jobs::JobId> = self
                .jobs
                .keys()
                .map(|id| turnkit_jobs::JobId::from(id.as_str()))
                .collect();
            let real = move |id: &turnkit_jobs::JobId| !fakes.contains(id);
            // Listen before looking, so a settlement between the two is not missed.
            let settlement = Settlement::watch(registry.as_ref(), real.clone());
            let callers = std::iter::once(None).chain(
                self.live
                    .iter()
                    .map(|s| Some(turnkit_core::AgentId::from(s))),
            );
            let running = callers
                .flat_map(|caller| registry.list(caller.as_ref()))
                .any(|job| !job.status.is_terminal() && real(&job.id));
            if !running {
                return Err(blocked);
            }
            if !settlement.within(REAL_TIME_LIMIT).await {
                return Err(format!(
                    "{what} did not finish: no real job settled within {}ms",
                    REAL_TIME_LIMIT.as_millis()
                ));
            }
        }
    }

    fn fake_job(
        &mut self,
        owner: Option<Arc<MemoryAgent>>,
        producer: FakeProducer,
    ) -> Result<(), String> {
        let (start, job) = producer.build();
        let registry = self.registry()?;
        let mark = self.mark();
        match registry.start(start) {
            Ok(id) => {
                self.insert_job_line(mark, id.as_str(), owner.as_ref());
                self.owners
                    .insert(id.as_str().to_owned(), owner.map(|a| a.id().clone()));
                self.jobs.insert(id.as_str().to_owned(), job);
                Ok(())
            }
            Err(error) => Err(format!("the job was refused: {error}")),
        }
    }

    fn agent(&mut self, session: &str) -> Result<Arc<MemoryAgent>, String> {
        let id = SessionId::from(session);
        self.host()?
            .memory_agent(&id)
            .ok_or_else(|| format!("no live agent for session {id}"))
    }

    async fn call(
        &mut self,
        id: String,
        tool: String,
        args: Value,
        session: Option<SessionId>,
        is_async: bool,
    ) -> Result<(), String> {
        let host = self.host()?;
        if let Some(session) = &session
            && host.memory_agent(session).is_none()
        {
            return Err(format!("no live agent for session {session}"));
        }
        if is_async {
            if self.calls.contains_key(&id) {
                return Err(format!("async call {id:?} is already pending"));
            }
            let lines = self.lines.clone();
            let call_id = id.clone();
            let handle = tokio::spawn(async move {
                let output = host.execute(&tool, args, session.as_ref()).await;
                push(&lines, result_line(&call_id, &tool, &output));
            });
            self.calls.insert(id, handle);
            return Ok(());
        }
        let mark = turnkit_core::lock(&self.lines).len();
        let what = format!("call {id:?} ({tool})");
        let stuck = blocked(
            &what,
            "make it \"async\":true, then advance the clock or settle the job",
        );
        let registry = self.registry().ok();
        let output = self
            .until_done(
                registry,
                &what,
                stuck,
                host.execute(&tool, args, session.as_ref()),
            )
            .await?;
        let mut lines = turnkit_core::lock(&self.lines);
        let at = mark.min(lines.len());
        lines.insert(at, result_line(&id, &tool, &output));
        Ok(())
    }

    async fn restart(&mut self) -> Result<(), String> {
        let recorder = self.recorder();
        let registry = self.registry().ok();
        let setup = self.setup()?;
        let teardown = teardown(setup.host.clone(), setup.installed.take());
        let what = "the restart";
        let stuck = blocked(what, &format!("{TEARDOWN_HINT} first"));
        self.until_done(registry, what, stuck, teardown).await?;
        let setup = self.setup()?;
        let host = MemoryHarness::restarted_from(&setup.host);
        host.set_recorder(recorder);
        setup.installed = Some(plugins::install(&host, &setup.configs)?);
        setup.host = host.clone();
        let _ = (&setup.clock, &setup.store);
        for id in &self.live {
            host.resume(id).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Disposes every agent and plugin. On the manual clock a disposal that only time or a
    /// step could finish (a job that hangs on cancel) is abandoned with an error instead of
    /// waiting forever.
    async fn finish(&mut self) -> Result<(), String> {
        for (_, handle) in self.calls.drain() {
            handle.abort();
        }
        let Some(setup) = self.setup.as_mut() else {
            return Ok(());
        };
        let registry = setup.installed.as_ref().map(Installed::registry);
        let teardown = teardown(setup.host.clone(), setup.installed.take());
        let what = "the end of the run (disposing every agent and plugin)";
        let stuck = format!(
            "{what} cannot finish until the manual clock moves; {TEARDOWN_HINT} before the \
             scenario ends"
        );
        let result = self.until_done(registry, what, stuck, teardown).await;
        self.setup = None;
        result
    }
}

/// How to write a scenario whose disposal would wait for a job that hangs on cancel.
const TEARDOWN_HINT: &str = "settle the jobs that hang on cancel (\"onCancel\":\"hang\")";

/// Disposes every agent of `host`, then the plugins.
async fn teardown(host: Arc<MemoryHarness>, installed: Option<Installed>) {
    host.dispose_all().await;
    if let Some(installed) = installed {
        installed.dispose().await;
    }
}

/// How long a step may wait, in real time, for a running real job to settle while its work
/// is pending on the manual clock.
const REAL_TIME_LIMIT: Duration = Duration::from_secs(30);

fn blocked(what: &str, hint: &str) -> String {
    format!("{what} cannot finish until the manual clock moves or a later step runs; {hint}")
}

/// A wait for the next settlement of a job that `matches`, bounded in real time.
///
/// The listener is registered on creation, so a settlement that happens between creating
/// this and awaiting [`Settlement::within`] is not missed. The bound is kept by a watchdog
/// thread, since tokio's clock is paused under the runner.
struct Settlement {
    settled: Arc<tokio::sync::Notify>,
    _listener: turnkit_core::Registration,
}

impl Settlement {
    fn watch(
        registry: &dyn turnkit_jobs::JobRegistry,
        matches: impl Fn(&turnkit_jobs::JobId) -> bool + Send + Sync + 'static,
    ) -> Self {
        let settled = Arc::new(tokio::sync::Notify::new());
        let signal = settled.clone();
        let listener = registry.on_job_done(
            turnkit_core::RegistrationScope::Global,
            Arc::new(move |snapshot, _| {
                if matches(&snapshot.id) {
                    signal.notify_one();
                }
                Ok(None)
            }),
        );
        Self {
            settled,
            _listener: listener,
        }
    }

    /// Whether a matching job settled within `limit` of real time.
    async fn within(&self, limit: Duration) -> bool {
        let (_cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let (expire, expired) = futures::channel::oneshot::channel::<()>();
        std::thread::spawn(move || {
            // Returns at once when `_cancel` is dropped (the wait ended first).
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                let _ = expire.send(());
            }
        });
        tokio::select! {
            () = self.settled.notified() => true,
            _ = expired => false,
        }
    }
}

/// The system clock of `{"mode":"system"}`, with sleeps in real time. The runner's runtime has
/// a paused clock, on which [`SystemClock`]'s tokio sleeps would end as soon as the runtime is
/// idle: a 2 s `job_output` wait returned at once, a kill grace ended early, and a reminder's
/// timer spun until the wall clock reached its time. Each sleep waits on a thread of its own,
/// which returns at once when the sleep is dropped.
struct RealTimeClock;

impl Clock for RealTimeClock {
    fn now(&self) -> DateTime<Utc> {
        SystemClock.now()
    }

    fn now_millis(&self) -> i64 {
        SystemClock.now_millis()
    }

    fn sleep(&self, duration: Duration) -> futures::future::BoxFuture<'static, ()> {
        let (dropped, cancelled) = std::sync::mpsc::channel::<()>();
        let (elapse, elapsed) = futures::channel::oneshot::channel::<()>();
        let started = std::thread::Builder::new()
            .name("harness-scenario-sleep".to_owned())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    cancelled.recv_timeout(duration)
                {
                    let _ = elapse.send(());
                }
            });
        Box::pin(async move {
            let _dropped = dropped;
            // Without a thread the sleep never ends, like a timer that never comes due.
            if started.is_err() || elapsed.await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

fn parse_instant(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("invalid instant {text:?}: {e}"))
}
