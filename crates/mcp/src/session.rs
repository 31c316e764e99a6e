//! [`SessionHost`]: one session served with every family installed, and the tool call
//! pipeline shared by the MCP server and in-process callers.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    Agent, Clock, ContentBlock, JsonlStore, PersistenceError, Progress, RegistrationScope, Session,
    SessionHeader, SessionId, SessionStore, StoreError, SystemClock, ToolDefinition, ToolOutput,
    UserMessage,
};
use turnkit_jobs::{JobRegistry, JobsChangedListener};

use turnkit_host::{HostKit, LoopAgent};

use crate::ServeError;
use crate::host::{HostSession, host_session, pull_agent};
use crate::inbox::{CLAIMED_EVENT, Inbox, Pending, QUEUED_EVENT, TASK_DELIVERED_EVENT};
use crate::tasks::state::Tasks;
use turnkit_families::{ChangedBy, Families, FamiliesConfig, ResourceContext};

/// Resource URI of the notices and reminders owed to the next tool result (the server's own
/// resource; the families declare theirs: `turnkit_families::resources`).
pub const INBOX_URI: &str = "harness://inbox";

/// The tool-jobs prompt section's sentence about notices, true of a host with a turn loop.
const IN_SESSION_NOTICES: &str = "You are notified in-session when a job finishes";

/// What replaces it in the server's instructions.
pub const MCP_NOTICES: &str = "You are told when a job finishes in the result of a later tool call";

/// The paragraph that ends the server's instructions: how notices and reminders reach the
/// model over MCP.
pub const MCP_DELIVERY: &str = "A finished background job's notice and a due reminder reach \
    you once: added to the result of your next tool call of this session (after that tool's \
    own output), or, when your client ran the call that started the job or created the \
    reminder as a background task, as that task's result. If a result says the change may not \
    be saved, the change is not yet durable: do not rely on it surviving a restart.";

/// Refuses a session folder this process cannot create files in: no session could be saved.
/// The probe file's name is unique to this open (the pid and a number no other open of this
/// process takes), so sessions opened at once never collide on it.
fn check_writable(dir: &std::path::Path) -> Result<(), ServeError> {
    static OPENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut tries = 0;
    let (created, probe) = loop {
        let open = OPENS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = dir.join(format!(
            ".harness-write-check-{}-{open}",
            std::process::id()
        ));
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe);
        tries += 1;
        // A probe left behind by a process that had this pid before takes the next number.
        match created {
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {}
            created => break (created, probe),
        }
    };
    match created {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(error) => Err(ServeError::Unusable(format!(
            "the session folder {} is not writable: {error}",
            dir.display()
        ))),
    }
}

/// How to open the served session.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// The folder of session files (`<id>.jsonl`); created if missing. Not used by
    /// [`SessionHost::open_in`], which is given its store.
    pub dir: PathBuf,
    /// The session to open, created if absent; `None` creates a session with a fresh id.
    pub session: Option<String>,
    /// Every family's configuration (the terminal family is served when it has a
    /// `terminal` object; a `subagent` object is refused: the client lends no model step).
    pub configs: FamiliesConfig,
    /// How long the task of a background job is kept (its `ttlMs`; past it the task is
    /// forgotten); `None`: [`crate::JOB_TASK_TTL`], a day. Whole milliseconds.
    pub job_task_ttl: Option<std::time::Duration>,
}

/// Something a client may want to hear about.
#[derive(Clone, Debug)]
pub(crate) enum Change {
    /// The resource with this URI (and every resource of its template) changed.
    Resource(&'static str),
    /// A notice or reminder was queued for the next tool result.
    Queued(UserMessage),
}

/// A tool result ready to be sent: the tool's output with the owed messages appended, and
/// the reservation to commit once the result has been written.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) output: ToolOutput,
    /// The owed messages appended to the output, each `{"source", "text"}`.
    pub(crate) owed: Vec<Value>,
    pub(crate) reservation: Option<u64>,
}

/// One session, every family installed into a host of our own, and its pull agent.
///
/// Must be opened and used inside a tokio runtime (the schedule runtime and the bash jobs
/// run as tasks on it).
pub struct SessionHost {
    host: Arc<HostKit>,
    session: Arc<HostSession>,
    agent: Arc<LoopAgent>,
    inbox: Inbox,
    /// The tasks of the session (`mcp/task` and the events after it).
    tasks: Tasks,
    /// The `ttlMs` of a job's task.
    job_task_ttl_ms: u64,
    jobs: Arc<dyn JobRegistry>,
    families: Families,
    /// The job list listener (todo-jobs §4.7) that feeds the job resources' changes.
    jobs_changed: Mutex<Option<turnkit_core::Registration>>,
    created: bool,
    changes_rx: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    /// Set once the session's write ownership passed to another host: the text every later
    /// tool call answers with.
    fenced: OnceLock<String>,
    /// Set when the disposal has finished; every caller awaits the one disposal.
    disposed: tokio::sync::OnceCell<()>,
    /// The session's own tasks (flushes of queued messages, claims of written results,
    /// reservations waiting for their request to end); [`SessionHost::shutdown`] waits for
    /// them.
    background: TaskTracker,
    /// Cancelled by [`SessionHost::shutdown`] before it waits for `background`: a task that
    /// waits for a request to end stops waiting.
    stopping: CancellationToken,
    /// Cancelled by [`SessionHost::end_calls`]: every tool call in flight is aborted as if
    /// its request had been cancelled, and answers.
    ending: CancellationToken,
}

impl std::fmt::Debug for SessionHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHost")
            .field("session", self.session.id())
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

fn fresh_id(clock: &dyn Clock) -> String {
    let millis = turnkit_core::epoch_millis(clock.now());
    format!("mcp-{millis}-{}", std::process::id())
}

impl SessionHost {
    /// Opens (or creates) the session, installs every family with its configuration and
    /// publishes the session's agent. Owed messages recorded by an earlier server are
    /// delivered with the first tool result.
    ///
    /// # Errors
    /// [`ServeError::NoRuntime`] outside a tokio runtime, [`ServeError::Store`] when the
    /// store refuses (an invalid id, a malformed file, I/O), [`ServeError::Log`] for a
    /// corrupt `mcp/*` event, [`ServeError::Config`] when a family refuses its configuration,
    /// [`ServeError::Unusable`] for a `bash.cwd` that is not a folder (`bash.cwd /nope is not
    /// a folder: No such file or directory (os error 2)`) or a session folder that cannot be
    /// written (`the session folder /srv is not writable: …`).
    pub fn open(options: &SessionOptions) -> Result<Arc<Self>, ServeError> {
        tokio::runtime::Handle::try_current().map_err(|_| ServeError::NoRuntime)?;
        let store = JsonlStore::new(&options.dir, Arc::new(SystemClock))?;
        check_writable(&options.dir)?;
        Self::open_in(&store, options)
    }

    /// [`SessionHost::open`] with the session in `store` (a PostgreSQL store, say) instead of
    /// a JSONL file in `options.dir`. A store that refuses because another host owns the
    /// session fails with [`ServeError::Store`] holding its error
    /// (`StoreError::Owned`: "session s is owned by host h; retry after its lease expires").
    ///
    /// # Errors
    /// As [`SessionHost::open`].
    pub fn open_in(
        store: &dyn SessionStore,
        options: &SessionOptions,
    ) -> Result<Arc<Self>, ServeError> {
        tokio::runtime::Handle::try_current().map_err(|_| ServeError::NoRuntime)?;
        options
            .configs
            .check_folders()
            .map_err(ServeError::Unusable)?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (stored, created) = match &options.session {
            Some(id) => {
                let id = SessionId::from(id.as_str());
                match store.open(&id) {
                    Ok(session) => (session, false),
                    Err(StoreError::NotFound(_)) => (store.create(SessionHeader::new(id))?, true),
                    Err(error) => return Err(error.into()),
                }
            }
            None => (
                store.create(SessionHeader::new(fresh_id(clock.as_ref())))?,
                true,
            ),
        };
        let host = Arc::new(HostKit::new(clock));
        let harness: Arc<dyn turnkit_core::Harness> = host.clone();
        let (changes, changes_rx) = mpsc::unbounded_channel();
        let tx = changes.clone();
        let families = Families::install(&harness, &journal_on_by_default(&options.configs), None)?;
        let jobs_changed: JobsChangedListener = Arc::new(move |_owner: Option<&Arc<dyn Agent>>| {
            for resource in turnkit_families::resources() {
                if resource.changed_by == ChangedBy::JobList {
                    let _ = tx.send(Change::Resource(resource.uri));
                }
            }
            Ok(())
        });
        let jobs_changed = families
            .registry()
            .on_jobs_changed(RegistrationScope::Global, jobs_changed);
        let session = host_session(stored);
        let inbox = Inbox::open(session.clone())?;
        let tasks = Tasks::replay(
            &session.events(),
            turnkit_core::Harness::clock(host.as_ref()).now_millis(),
        )?;
        for hold in tasks.holds() {
            inbox.hold(hold);
        }
        let tx = changes.clone();
        session.hooks().set(Arc::new(move |r#type: &str| {
            if r#type == QUEUED_EVENT || r#type == CLAIMED_EVENT || r#type == TASK_DELIVERED_EVENT {
                let _ = tx.send(Change::Resource(INBOX_URI));
                return;
            }
            for resource in turnkit_families::resources() {
                if let ChangedBy::Events(types) = resource.changed_by
                    && types.contains(&r#type)
                {
                    let _ = tx.send(Change::Resource(resource.uri));
                }
            }
        }));
        let tx = changes;
        let background = TaskTracker::new();
        let agent = pull_agent(
            session.clone(),
            inbox.clone(),
            Arc::new(move |message: &UserMessage| {
                let _ = tx.send(Change::Queued(message.clone()));
            }),
            background.clone(),
        );
        let jobs = families.registry();
        host.publish(agent.as_dyn());
        Ok(Arc::new(Self {
            host,
            session,
            agent,
            inbox,
            tasks,
            job_task_ttl_ms: options
                .job_task_ttl
                .map_or(crate::tasks::state::JOB_TASK_TTL.as_millis(), |ttl| {
                    ttl.as_millis()
                })
                .try_into()
                .unwrap_or(u64::MAX),
            jobs,
            families,
            jobs_changed: Mutex::new(Some(jobs_changed)),
            created,
            changes_rx: Mutex::new(Some(changes_rx)),
            fenced: OnceLock::new(),
            disposed: tokio::sync::OnceCell::new(),
            background,
            stopping: CancellationToken::new(),
            ending: CancellationToken::new(),
        }))
    }

    /// The served session's id.
    pub fn session_id(&self) -> &str {
        self.session.id().as_str()
    }

    /// Whether [`SessionHost::open`] created the session (rather than opening a stored one).
    pub fn created(&self) -> bool {
        self.created
    }

    /// The definitions of the tools the session's agent may call, in registration order
    /// (what `turnkit_families::catalog` lists for the same configuration).
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.host.tool_definitions(self.agent.as_ref())
    }

    /// The server's instructions: the system-prompt sections of the installed families,
    /// rendered in order, with the tool-jobs claim of in-session notices replaced by what an
    /// MCP client gets ([`MCP_NOTICES`]), then [`MCP_DELIVERY`].
    pub fn instructions(&self) -> String {
        let chain = self.agent.scope_chain();
        let sections = self.host.prompts().render(Some(&chain));
        let sections = sections.replace(IN_SESSION_NOTICES, MCP_NOTICES);
        format!("{sections}\n\n{MCP_DELIVERY}")
    }

    pub(crate) fn take_changes(&self) -> Option<mpsc::UnboundedReceiver<Change>> {
        turnkit_core::lock(&self.changes_rx).take()
    }

    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        turnkit_core::Harness::clock(self.host.as_ref())
    }

    pub(crate) fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    pub(crate) fn job_task_ttl_ms(&self) -> u64 {
        self.job_task_ttl_ms
    }

    /// How many tasks the session keeps in memory, and how many holds keep a delivery from
    /// tool results: both shrink as tasks outlive their TTL.
    pub fn kept_tasks(&self) -> (usize, usize) {
        (self.tasks.len(), self.inbox.holds())
    }

    /// The served session's log.
    pub(crate) fn log(&self) -> &dyn Session {
        self.session.as_ref()
    }

    /// The inbox of messages owed to the model.
    pub(crate) fn owed(&self) -> &Inbox {
        &self.inbox
    }

    pub(crate) fn job_registry(&self) -> &Arc<dyn JobRegistry> {
        &self.jobs
    }

    pub(crate) fn agent_id(&self) -> &turnkit_core::AgentId {
        self.agent.id()
    }

    #[cfg(test)]
    pub(crate) fn agent_handle(&self) -> Arc<dyn Agent> {
        self.agent.clone()
    }

    pub(crate) fn is_tool(&self, name: &str) -> bool {
        let chain = self.agent.scope_chain();
        self.host.tools().find(name, Some(&chain)).is_some()
    }

    /// Runs tool `name` for the session's agent and makes its effects durable before the
    /// answer is given ([`turnkit_core::acknowledge`]: a failed flush answers `Error: the
    /// change may not be saved: …`, the events staying pending). Owed messages are appended
    /// to a successful result (one text block each, in order) and reserved; nothing is
    /// attached when `cancel` fired (the result will not be sent) or the result is an error
    /// (they wait for the next successful one). `cancel` and `progress`
    /// travel on the call ([`turnkit_core::ToolCall`]): a tool that waits reports through
    /// `progress` and stops waiting when `cancel` fires.
    ///
    /// `call_id` is the call's `gen_ai.tool.call.id` (the JSON-RPC request id of a
    /// `tools/call`; `None`: a process-unique `harness-call-<N>`), which a job the call
    /// starts records.
    pub(crate) async fn answer(
        &self,
        call_id: Option<&str>,
        name: &str,
        arguments: Value,
        cancel: CancellationToken,
        progress: Progress,
    ) -> Answer {
        if let Some(fenced) = self.fenced.get() {
            return Answer {
                output: ToolOutput::error(fenced),
                owed: Vec::new(),
                reservation: None,
            };
        }
        let caller: Arc<dyn Agent> = self.agent.clone();
        let before = self.session.len();
        let output = self
            .host
            .tools()
            .execute_reporting(
                call_id,
                name,
                arguments,
                Some(caller),
                cancel.clone(),
                progress,
            )
            .await;
        let failed = output.is_error;
        // A reply is an acknowledgement: what the call appended is durable before the answer
        // is given, or the answer says the change may not be saved.
        let mut output =
            match turnkit_core::acknowledge(self.session.as_ref(), before, output).await {
                Ok(output) => output,
                Err(error) => {
                    self.fence(&error).await;
                    return Answer {
                        output: ToolOutput::error(error),
                        owed: Vec::new(),
                        reservation: None,
                    };
                }
            };
        if output.is_error && !failed {
            tracing::warn!("mcp: {name}: {}", output.content[0].as_text());
        }
        // A cancelled call's result will not be sent; an error result carries no messages
        // (clients fold them into the error text the model reads as a failure): they wait for
        // the next successful result.
        if cancel.is_cancelled() || output.is_error {
            return Answer {
                output,
                owed: Vec::new(),
                reservation: None,
            };
        }
        let mut owed = Vec::new();
        let now = self.clock().now_millis();
        let reservation = self.inbox.reserve(now).map(|(key, pending)| {
            owed = append_owed(&mut output, &pending);
            key
        });
        Answer {
            output,
            owed,
            reservation,
        }
    }

    /// The result carrying `reservation` was written: records the claim (a task's delivery
    /// for a `tasks/get` result), tells the families the messages were seen, and flushes.
    pub(crate) async fn commit(&self, reservation: u64) {
        let committed = self.inbox.commit(reservation);
        if let Some(delivered) = &committed.task {
            self.task_delivered(delivered);
        } else if committed.messages.is_empty() {
            return;
        }
        if !committed.messages.is_empty() {
            self.agent.report_claimed(&committed.messages);
        }
        if committed.task.is_none() {
            self.complete_reminder_tasks(&committed);
        }
        match self.session.flush().await {
            Ok(()) => {}
            Err(error @ PersistenceError::Fenced(_)) => self.fence(&error).await,
            Err(error) => tracing::warn!("mcp: could not flush a claim: {error}"),
        }
    }

    /// The result carrying `reservation` will not be written; its messages stay owed (a
    /// task's delivery goes to its next poll, with the same content, or, once its hold
    /// lapsed, to a tool result).
    pub(crate) fn release(&self, reservation: u64) {
        self.inbox.release(reservation);
    }

    /// Runs tool `name` in-process, exactly as a `tools/call` would, and claims the owed
    /// messages it carries at once. For embedding and benchmarks.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> ToolOutput {
        let answer = self
            .answer(
                None,
                name,
                arguments,
                CancellationToken::new(),
                Progress::default(),
            )
            .await;
        if let Some(reservation) = answer.reservation {
            self.commit(reservation).await;
        }
        answer.output
    }

    /// The messages owed to the next tool result: `[{"seq","source","text"}]`.
    pub(crate) fn inbox_value(&self) -> Value {
        Value::Array(
            self.inbox
                .pending()
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "seq": p.seq,
                        "source": p.message.source,
                        "text": p.message.joined_text(),
                    })
                })
                .collect(),
        )
    }

    /// The value of resource `uri`: a family's ([`turnkit_families::resources`], or one of
    /// a family's templates) or the inbox; `None` for an unknown URI or a job the session
    /// may not see.
    pub(crate) fn resource_value(&self, uri: &str) -> Option<Value> {
        if uri == INBOX_URI {
            return Some(self.inbox_value());
        }
        let agent: Arc<dyn Agent> = self.agent.clone();
        let clock = self.clock();
        let context = ResourceContext {
            session: self.session.as_ref(),
            agent: &agent,
            projections: self.host.projections(),
            jobs: &self.jobs,
            clock: clock.as_ref(),
        };
        turnkit_families::resources().iter().find_map(|resource| {
            if resource.uri == uri {
                return Some((resource.read)(&context));
            }
            let template = resource.template?;
            let id = uri.strip_prefix(template.prefix)?;
            (template.read)(&context, id)
        })
    }

    /// The session's write ownership passed to another host (a flush was fenced, or the
    /// store reported the lease lost): disposes the agent and every family (bash jobs are
    /// killed) and answers every later tool call with `reason` as an error result
    /// (`PersistenceError::Fenced`: "session s: this host no longer owns the session; stop
    /// its agents and jobs"). Nothing more is flushed; resources show the last state.
    pub async fn fence(&self, reason: &PersistenceError) {
        self.fence_because(reason.to_string()).await;
    }

    /// [`SessionHost::fence`] with `reason` as the text every later tool call answers with:
    /// for a host that must stop the session's work for a reason of its own (its lease is
    /// about to lapse: another host may take the session soon). Returns once the agent and
    /// every family are disposed (the jobs and terminals stopped).
    pub async fn fence_because(&self, reason: String) {
        if self.fenced.set(reason.clone()).is_err() {
            // Fenced already: wait for the disposal under way.
            self.dispose().await;
            return;
        }
        tracing::warn!("mcp: {reason}");
        self.dispose().await;
    }

    /// How many of the session's background jobs have not ended.
    pub fn running_jobs(&self) -> usize {
        self.jobs
            .list(None)
            .iter()
            .filter(|job| !job.status.is_terminal())
            .count()
    }

    /// How many of the session's terminals still run their program (a REPL, a dev server):
    /// live work like a running job, which an idle release would end.
    pub fn running_terminals(&self) -> usize {
        self.families
            .terminal()
            .map_or(0, |terminal| terminal.terminals().running())
    }

    /// Whether [`SessionHost::fence`] was called.
    pub fn is_fenced(&self) -> bool {
        self.fenced.get().is_some()
    }

    /// Starts `work` as one of the session's own tasks, which [`SessionHost::shutdown`] waits
    /// for.
    pub(crate) fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        drop(self.background.spawn(work));
    }

    /// Cancelled when [`SessionHost::shutdown`] starts waiting for the session's tasks: a
    /// task that waits on a client ends then.
    pub(crate) fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// Aborts every tool call in flight, and every later one, as a cancelled request is
    /// (a `job_output` wait answers `wait aborted`, a foreground job is killed and its call
    /// answers): what a server that is stopping does before it closes the connections, so
    /// each call still gets its answer. Idempotent.
    pub fn end_calls(&self) {
        self.ending.cancel();
    }

    /// Cancelled by [`SessionHost::end_calls`].
    pub(crate) fn ending(&self) -> &CancellationToken {
        &self.ending
    }

    /// How many of the session's own tasks are running: flushes of queued messages, claims
    /// of written results, and reservations waiting for their request to end. 0 once
    /// [`SessionHost::shutdown`] has returned (until a late claim starts another).
    pub fn background_tasks(&self) -> usize {
        self.background.len()
    }

    /// Disposes the agent and every family (bash jobs are killed), waits for the session's
    /// own tasks (claims and flushes under way), flushes the log (unless the session is
    /// fenced), then releases the session in its store ([`Session::release`]: a PostgreSQL
    /// lease, given up without blocking the thread).
    pub async fn shutdown(&self) {
        self.dispose().await;
        self.stopping.cancel();
        self.background.close();
        self.background.wait().await;
        if !self.is_fenced()
            && let Err(error) = self.session.flush().await
        {
            tracing::warn!("mcp: could not flush the session at shutdown: {error}");
        }
        // The store's hold (a lease) is given up here, awaited, rather than by a blocking
        // drop wherever the last handle goes.
        self.session.release().await;
    }

    /// Disposes the agent and every family, once; a caller that comes while the disposal runs
    /// (a shutdown during a fence) waits for it to finish.
    async fn dispose(&self) {
        self.disposed.get_or_init(|| self.dispose_once()).await;
    }

    async fn dispose_once(&self) {
        let agent: Arc<dyn Agent> = self.agent.clone();
        self.agent.dispose().await;
        self.host.remove(&agent);
        self.families.dispose().await;
        drop(turnkit_core::lock(&self.jobs_changed).take());
    }
}

/// Appends each owed message as a text block; returns them as `{"source", "text"}`.
fn append_owed(output: &mut ToolOutput, owed: &[Pending]) -> Vec<Value> {
    owed.iter()
        .map(|pending| {
            let text = pending.message.joined_text();
            output.content.push(ContentBlock::text(text.clone()));
            serde_json::json!({"source": pending.message.source, "text": text})
        })
        .collect()
}

/// `configs` with the job journal on unless `jobs.journal` says otherwise: served jobs survive
/// a restart of the server (`docs/spec/todo-jobs.md` §5.9).
fn journal_on_by_default(configs: &FamiliesConfig) -> FamiliesConfig {
    let mut configs = configs.clone();
    configs
        .object_mut("jobs")
        .entry("journal")
        .or_insert(Value::Bool(true));
    configs
}

#[cfg(test)]
#[path = "session_tests.rs"]
pub(crate) mod tests;
