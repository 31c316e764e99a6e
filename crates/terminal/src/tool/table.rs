//! [`Terminals`]: the table of open terminals, their owners and ids, and how each is
//! started, reached and stopped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use turnkit_bash::TaskSet;
use turnkit_core::{Agent, AgentId, Clock, lock, same_agent};
use turnkit_jobs::{JobError, JobId, JobRegistry};

use super::{JOBS_UNAVAILABLE, SETTLE_SLACK};
use crate::send::{Send, send_job_start};
use crate::{Terminal, TerminalConfig, TerminalId, TerminalOptions};

/// Why a terminal operation failed. `Display` is the model-facing message (exact).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerminalsError {
    /// No terminal has this id (never opened, killed, or its owner was disposed):
    /// `unknown terminal <id>`.
    #[error("unknown terminal {0}")]
    Unknown(String),
    /// The terminal belongs to another session: `terminal <id> belongs to another session`.
    #[error("terminal {0} belongs to another session")]
    Foreign(TerminalId),
    /// The owner has `maxTerminalsPerOwner` terminals: `terminal limit reached for this
    /// session (limit: <n>); use terminal_kill to stop an unneeded terminal, then retry`.
    #[error(
        "terminal limit reached for this session (limit: {0}); use terminal_kill to stop an unneeded terminal, then retry"
    )]
    Limit(u64),
    /// Input for a terminal whose program has exited: `terminal <id> has exited (<how>);
    /// start another with terminal_start`.
    #[error("terminal {0} has exited ({1}); start another with terminal_start")]
    Exited(TerminalId, String),
    /// The terminal could not be started.
    #[error(transparent)]
    Start(#[from] crate::TerminalError),
    /// No job registry is loaded ([`JOBS_UNAVAILABLE`]).
    #[error("{JOBS_UNAVAILABLE}")]
    Unavailable,
    /// The job registry refused the send (its exact message, or the busy refusal).
    #[error(transparent)]
    Job(#[from] JobError),
}

struct Entry {
    id: TerminalId,
    owner: Option<Arc<dyn Agent>>,
    terminal: Terminal,
}

struct Table {
    next: u64,
    open: Vec<Entry>,
    closed: bool,
}

struct Inner {
    config: TerminalConfig,
    clock: Arc<dyn Clock>,
    jobs: Option<Arc<dyn JobRegistry>>,
    table: Mutex<Table>,
    /// The tasks of every terminal opened here.
    tasks: TaskSet,
}

/// How [`Terminals::kill`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Killed {
    /// The terminal was running and has now ended; how (`signal: SIGHUP`, `exit code: 0`).
    Stopped(String),
    /// The program had already exited; how.
    AlreadyExited(String),
    /// The stop was requested, but the terminal did not end within twice the kill grace
    /// plus 10 s; it stays out of the table and gets SIGKILL when the grace ends.
    Requested,
}

/// The open terminals of one plugin instance: ids `term-1`, `term-2`, … (one counter per
/// instance, never reused), each owned by the agent that opened it (or unowned for a call
/// without an agent, open to every caller) and reachable only by a caller of the owner's
/// session. A terminal leaves the table when it is killed or its owner instance is disposed
/// (then it is stopped: SIGHUP and SIGTERM to its whole tree, SIGKILL after the grace), and
/// all leave when the plugin is disposed.
#[derive(Clone)]
pub struct Terminals {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Terminals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminals")
            .field("config", &self.inner.config)
            .field("open", &lock(&self.inner.table).open.len())
            .finish_non_exhaustive()
    }
}

impl Terminals {
    /// A table under `config` whose sends are jobs in `jobs` (`None`: every send fails with
    /// [`JOBS_UNAVAILABLE`]); `clock` measures quiet windows, timeouts and the kill grace.
    pub fn new(
        config: TerminalConfig,
        clock: Arc<dyn Clock>,
        jobs: Option<Arc<dyn JobRegistry>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                clock,
                jobs,
                table: Mutex::new(Table {
                    next: 0,
                    open: Vec::new(),
                    closed: false,
                }),
                tasks: TaskSet::new(),
            }),
        }
    }

    /// The task set every terminal opened here runs its tasks in (clones of this table
    /// share it); the plugin's [`Installed::shutdown`](crate::Installed::shutdown) joins it.
    pub fn tasks(&self) -> &TaskSet {
        &self.inner.tasks
    }

    /// The configuration.
    pub fn config(&self) -> &TerminalConfig {
        &self.inner.config
    }

    /// The options of a terminal running `command` (`bash -c COMMAND`), or the configured
    /// shell when `None`.
    pub fn options(&self, command: Option<&str>) -> TerminalOptions {
        let config = &self.inner.config;
        let argv = match command {
            Some(command) => vec!["bash".to_owned(), "-c".to_owned(), command.to_owned()],
            None => vec![config.shell.clone()],
        };
        let mut options = TerminalOptions::new(argv, self.inner.clock.clone());
        options.env = config.env.clone();
        options.cwd = config.cwd.clone();
        options.rows = config.rows;
        options.cols = config.cols;
        options.containment = config.containment;
        options.sandbox = config.sandbox.clone().map(Arc::new);
        options.kill_grace = Duration::from_millis(config.kill_grace_ms);
        options.max_pending_bytes =
            usize::try_from(config.max_result_bytes.saturating_mul(2)).unwrap_or(usize::MAX);
        options.tasks = self.inner.tasks.clone();
        options
    }

    /// Opens a terminal for `owner` running `command` (see [`Terminals::options`]).
    ///
    /// # Errors
    /// [`TerminalsError::Limit`] when the owner has `maxTerminalsPerOwner` terminals;
    /// [`TerminalsError::Start`] when it cannot be started (nothing is left running).
    pub fn start(
        &self,
        owner: Option<Arc<dyn Agent>>,
        command: Option<&str>,
    ) -> Result<TerminalId, TerminalsError> {
        let limit = self.inner.config.max_terminals_per_owner;
        let count = |table: &Table| {
            table
                .open
                .iter()
                .filter(|e| match (&e.owner, &owner) {
                    (Some(a), Some(b)) => same_agent(a, b),
                    (None, None) => true,
                    _ => false,
                })
                .count() as u64
        };
        if count(&lock(&self.inner.table)) >= limit {
            return Err(TerminalsError::Limit(limit));
        }
        let terminal = Terminal::spawn(self.options(command))?;
        let mut table = lock(&self.inner.table);
        if table.closed {
            terminal.stop();
            return Err(TerminalsError::Start(crate::TerminalError::Spawn(
                "the terminal plugin is disposed".to_owned(),
            )));
        }
        table.next += 1;
        let id = TerminalId::new(format!("term-{}", table.next));
        table.open.push(Entry {
            id: id.clone(),
            owner,
            terminal,
        });
        Ok(id)
    }

    /// The terminal `id` as `caller` may see it.
    ///
    /// # Errors
    /// [`TerminalsError::Unknown`], [`TerminalsError::Foreign`] (an owned terminal and a
    /// caller of another session, or no caller).
    pub fn get(&self, caller: Option<&AgentId>, id: &str) -> Result<Terminal, TerminalsError> {
        let table = lock(&self.inner.table);
        let entry = table
            .open
            .iter()
            .find(|e| e.id.as_str() == id)
            .ok_or_else(|| TerminalsError::Unknown(id.to_owned()))?;
        if let Some(owner) = &entry.owner
            && caller != Some(owner.id())
        {
            return Err(TerminalsError::Foreign(entry.id.clone()));
        }
        Ok(entry.terminal.clone())
    }

    /// Starts a send to terminal `id` as a `pty-send` job owned by `caller` and returns its
    /// id (`pty-send-<N>`), through the jobs layer's saved start
    /// ([`turnkit_jobs::start_saved`]): nothing is typed until the job's start is recorded
    /// and the owner's session flushed.
    ///
    /// # Errors
    /// [`TerminalsError::Unavailable`] without a registry; `Unknown` / `Foreign` from
    /// [`Terminals::get`]; [`TerminalsError::Exited`] for input to a terminal whose program
    /// has exited (an empty send still collects what it printed last);
    /// [`TerminalsError::Job`] for every registry refusal, for a terminal busy with another
    /// send, and for a start that could not be saved (`background job <id> was stopped: its
    /// start could not be saved: <why>`; that job settles `killed`). On error nothing was
    /// typed.
    pub async fn send(
        &self,
        caller: Option<Arc<dyn Agent>>,
        id: &str,
        send: Send,
    ) -> Result<JobId, TerminalsError> {
        let jobs = self
            .inner
            .jobs
            .as_ref()
            .ok_or(TerminalsError::Unavailable)?;
        let caller_id = caller.as_ref().map(|a| a.id().clone());
        let terminal = self.get(caller_id.as_ref(), id)?;
        let id = TerminalId::new(id);
        if !send.input.is_empty()
            && let Some(how) = terminal.exit()
        {
            return Err(TerminalsError::Exited(id, how));
        }
        let limit = self.inner.config.max_result_bytes;
        let clock = self.inner.clock.clone();
        let started = turnkit_jobs::start_saved(jobs.as_ref(), caller, |gate| {
            send_job_start(terminal, &id, send, limit, clock, gate)
        })
        .await;
        Ok(started?)
    }

    /// Stops terminal `id` and removes it from the table, then waits (on the clock, at most
    /// twice the kill grace plus 10 s) until it has ended.
    ///
    /// # Errors
    /// `Unknown` / `Foreign` from [`Terminals::get`].
    pub async fn kill(&self, caller: Option<&AgentId>, id: &str) -> Result<Killed, TerminalsError> {
        let terminal = self.get(caller, id)?;
        lock(&self.inner.table).open.retain(|e| e.id.as_str() != id);
        if let Some(how) = terminal.exit() {
            terminal.stop();
            return Ok(Killed::AlreadyExited(how));
        }
        terminal.stop();
        let bound =
            Duration::from_millis(self.inner.config.kill_grace_ms.saturating_mul(2)) + SETTLE_SLACK;
        let limit = self.inner.clock.sleep(bound);
        tokio::select! {
            () = terminal.wait_end() => Ok(Killed::Stopped(terminal.exit().unwrap_or_default())),
            () = limit => Ok(Killed::Requested),
        }
    }

    /// Removes and stops every terminal owned by this exact agent instance (its disposal).
    pub fn owner_disposed(&self, agent: &Arc<dyn Agent>) {
        let removed: Vec<Entry> = {
            let mut table = lock(&self.inner.table);
            let (gone, kept) = std::mem::take(&mut table.open)
                .into_iter()
                .partition(|e| e.owner.as_ref().is_some_and(|o| same_agent(o, agent)));
            table.open = kept;
            gone
        };
        for entry in removed {
            entry.terminal.stop();
        }
    }

    /// Removes and stops every terminal; later starts fail. Idempotent.
    pub fn dispose(&self) {
        let removed = {
            let mut table = lock(&self.inner.table);
            table.closed = true;
            std::mem::take(&mut table.open)
        };
        for entry in removed {
            entry.terminal.stop();
        }
    }

    /// How many open terminals still run their program (an exited one that was not yet
    /// killed does not count): a host that would release the session asks first.
    pub fn running(&self) -> usize {
        lock(&self.inner.table)
            .open
            .iter()
            .filter(|e| e.terminal.exit().is_none())
            .count()
    }

    /// The ids of the open terminals, in opening order.
    pub fn ids(&self) -> Vec<TerminalId> {
        lock(&self.inner.table)
            .open
            .iter()
            .map(|e| e.id.clone())
            .collect()
    }

    pub(super) fn registry(&self) -> Option<&Arc<dyn JobRegistry>> {
        self.inner.jobs.as_ref()
    }
}
