//! The three tools (`terminal_start`, `terminal_send`, `terminal_kill`) and [`Terminals`],
//! the table of open terminals they share with hosts and the scenario runner.

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnkit_core::{
    Agent, AgentId, Clock, Tool, ToolAnnotations, ToolCall, ToolDefinition, ToolError, ToolOutput,
    async_trait, lock, same_agent,
};
use turnkit_jobs::{JobError, JobId, JobRegistry, JobSnapshot, OnTimeout, wait_foreground};

use crate::send::{Send, SendEnd, send_job_start};
use crate::{Terminal, TerminalId};
use crate::{TerminalConfig, TerminalOptions, key_bytes, unknown_key};

/// The name of the tool that opens a terminal.
pub const START_TOOL: &str = "terminal_start";
/// The name of the tool that types into a terminal.
pub const SEND_TOOL: &str = "terminal_send";
/// The name of the tool that stops a terminal.
pub const KILL_TOOL: &str = "terminal_kill";

/// The error of a send without a job registry (exact; the same text as the bash tool's).
pub const JOBS_UNAVAILABLE: &str = turnkit_bash::JOBS_UNAVAILABLE;

/// Slack added to a send's timeout (or to twice the kill grace) when waiting for it to
/// settle.
const SETTLE_SLACK: Duration = Duration::from_secs(10);

const START_DESCRIPTION: &str = "Open an interactive terminal (a PTY) running `command` with `bash -c`, or an interactive shell when no command is given, and return its id (`term-<N>`). Use a terminal for programs that prompt or keep running: REPLs, installers that ask questions, dev servers. Type into it with terminal_send; stop it with terminal_kill. Terminals are stopped when this session ends.";

const SEND_DESCRIPTION: &str = "Type into a terminal: `text` first, then each of `keys` (e.g. [\"enter\"], [\"ctrl-c\"]), and return what the terminal printed in response — everything it printed since the previous send, including the echo of your input, with escape sequences removed — followed by `[status: ...]`. The response ends when `wait_for` text appears, or (without `wait_for`) once the output has been quiet for `settle_ms`, or when the program exits, or after `timeout_ms`. Send nothing (no text, no keys) to just collect new output. With `run_in_background: true` it returns `started background job <id>` at once; collect the response with job_output. One send per terminal at a time.";

const KILL_DESCRIPTION: &str = "Stop a terminal and every process it started (SIGHUP and SIGTERM, then SIGKILL), and say how it ended.";

fn start_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command to run, as `bash -c COMMAND`. Leave out for an interactive shell."
            }
        }
    })
}

fn send_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "terminal_id": {
                "type": "string",
                "description": "The terminal, as returned by terminal_start."
            },
            "text": {
                "type": "string",
                "description": "Text to type. A newline in it is a line end (Enter)."
            },
            "keys": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Keys to press after the text, in order: enter, tab, backspace, escape, space, up, down, right, left, home, end, page-up, page-down, delete, ctrl-a … ctrl-z (ctrl-c interrupts the running program, ctrl-d ends input)."
            },
            "wait_for": {
                "type": "string",
                "description": "End the response as soon as this text appears in the output (e.g. the next prompt). The echo of your own input counts as output, so choose text your input does not contain."
            },
            "settle_ms": {
                "type": "number",
                "description": "Without wait_for: end the response once nothing has been printed for this many milliseconds. Defaults to the configured value."
            },
            "timeout_ms": {
                "type": "number",
                "description": "End the response after this many milliseconds at most. Defaults to the configured timeout; capped by the configured maximum."
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Return the job id at once instead of waiting for the response."
            }
        },
        "required": ["terminal_id"]
    })
}

fn kill_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "terminal_id": {
                "type": "string",
                "description": "The terminal to stop."
            }
        },
        "required": ["terminal_id"]
    })
}

static START_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: START_TOOL.to_owned(),
    description: START_DESCRIPTION.to_owned(),
    input_schema: start_schema(),
    output_schema: Some(json!({
        "type": "object",
        "properties": {"terminalId": {"type": "string"}},
        "required": ["terminalId"],
        "additionalProperties": false
    })),
    // Runs an arbitrary program: it may change or destroy anything the host user can reach.
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

static SEND_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: SEND_TOOL.to_owned(),
    description: SEND_DESCRIPTION.to_owned(),
    input_schema: send_schema(),
    output_schema: Some(json!({
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "background"},
                    "jobId": {"type": "string"},
                    "terminalId": {"type": "string"}
                },
                "required": ["kind", "jobId", "terminalId"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "foreground"},
                    "jobId": {"type": "string"},
                    "terminalId": {"type": "string"},
                    "output": {"type": "string"},
                    "status": {"enum": ["running", "stopping", "completed", "killed", "failed"]},
                    "detail": {"type": "string"}
                },
                "required": ["kind", "jobId", "terminalId", "output", "status"],
                "additionalProperties": false
            }
        ]
    })),
    // Typing into a program can do anything the program does.
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

static KILL_DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: KILL_TOOL.to_owned(),
    description: KILL_DESCRIPTION.to_owned(),
    input_schema: kill_schema(),
    output_schema: Some(json!({
        "type": "object",
        "properties": {
            "terminalId": {"type": "string"},
            "stopped": {"type": "boolean"},
            "exit": {"type": "string"}
        },
        "required": ["terminalId", "stopped"],
        "additionalProperties": false
    })),
    annotations: Some(ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
    }),
});

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
            }),
        }
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
        options.kill_grace = Duration::from_millis(config.kill_grace_ms);
        options.max_pending_bytes =
            usize::try_from(config.max_result_bytes.saturating_mul(2)).unwrap_or(usize::MAX);
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
    /// id (`pty-send-<N>`).
    ///
    /// # Errors
    /// [`TerminalsError::Unavailable`] without a registry; `Unknown` / `Foreign` from
    /// [`Terminals::get`]; [`TerminalsError::Exited`] for input to a terminal whose program
    /// has exited (an empty send still collects what it printed last);
    /// [`TerminalsError::Job`] for every registry refusal and for a terminal busy with
    /// another send. On error nothing was typed.
    pub fn send(
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
        let start = send_job_start(
            terminal,
            &id,
            send,
            caller,
            self.inner.config.max_result_bytes,
            self.inner.clock.clone(),
        );
        Ok(jobs.start(start)?)
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

    /// The ids of the open terminals, in opening order.
    pub fn ids(&self) -> Vec<TerminalId> {
        lock(&self.inner.table)
            .open
            .iter()
            .map(|e| e.id.clone())
            .collect()
    }

    fn registry(&self) -> Option<&Arc<dyn JobRegistry>> {
        self.inner.jobs.as_ref()
    }
}

fn decode<T: serde::de::DeserializeOwned>(call: &ToolCall) -> Result<T, ToolError> {
    Ok(call.arguments_as::<T>()?)
}

fn tool_error(error: impl std::fmt::Display) -> ToolError {
    ToolError::msg(error.to_string())
}

/// The arguments of `terminal_start`. The root object is open (todo-jobs §1.4).
#[derive(Debug, Deserialize)]
struct StartArgs {
    #[serde(default)]
    command: Option<String>,
}

/// `terminal_start`: opens a terminal owned by the caller. Result `started terminal
/// <id>`, value `{"terminalId":<id>}`. Errors (`Error: <message>`): the limit and start
/// failures of [`Terminals::start`].
pub struct StartTool {
    terminals: Terminals,
}

impl StartTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }
}

#[async_trait]
impl Tool for StartTool {
    fn definition(&self) -> &ToolDefinition {
        &START_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: StartArgs = decode(&call)?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let id = self
            .terminals
            .start(call.caller.clone(), args.command.as_deref())
            .map_err(tool_error)?;
        Ok(ToolOutput::success(
            json!({"terminalId": id.as_str()}),
            format!("started terminal {id}"),
        ))
    }
}

/// The arguments of `terminal_send`.
#[derive(Debug, Deserialize)]
struct SendArgs {
    terminal_id: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    keys: Option<Vec<String>>,
    #[serde(default)]
    wait_for: Option<String>,
    #[serde(default)]
    settle_ms: Option<f64>,
    #[serde(default)]
    timeout_ms: Option<f64>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

/// A positive number of milliseconds, or the exact error
/// `invalid <name>: expected a positive number of milliseconds, got <n>`.
fn positive_ms(name: &str, value: Option<f64>, default: u64, max: u64) -> Result<u64, ToolError> {
    match value {
        None => Ok(default.min(max)),
        Some(ms) if ms.is_finite() && ms > 0.0 => Ok((ms.ceil() as u64).clamp(1, max)),
        Some(ms) => Err(ToolError::msg(format!(
            "invalid {name}: expected a positive number of milliseconds, got {}",
            turnkit_jobs::format_js_number(ms)
        ))),
    }
}

/// `terminal_send`: types `text`, then `keys`, and registers the send as a `pty-send` job
/// owned by the caller (label `<terminal id>: <text or (input)>`, `outputLimitBytes` =
/// `maxResultBytes`; see [`crate::SendEnd`] for when the response ends).
///
/// - Background: `started background job <id>`, value
///   `{"kind":"background","jobId","terminalId"}`; the response is read with job_output,
///   and a completion notice is sent when it ends.
/// - Foreground: waits through the registry (no notice), reads the response and renders it
///   as job_output does — the output (or `(no output)`), a newline if needed, the status
///   line, e.g. `Name? Alice\nhello Alice\n[status: completed, wait_for matched]` — capped
///   at `maxResultBytes` with the tail kept and `\n[output truncated]` before the status
///   line (todo-jobs §5.5). Value `{"kind":"foreground","jobId","terminalId","output",
///   "status","detail"?}` with the capped output. Aborting the call kills the send.
/// - Errors (`Error: <message>`): [`JOBS_UNAVAILABLE`]; `unknown terminal <id>`;
///   `terminal <id> belongs to another session`; `terminal <id> has exited (…)`; the busy
///   refusal; the unknown-key message of [`crate::unknown_key`];
///   `invalid settle_ms: …` / `invalid timeout_ms: …`; the registry's refusals.
pub struct SendTool {
    terminals: Terminals,
}

impl SendTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }

    async fn foreground(
        &self,
        call: &ToolCall,
        terminal: &str,
        id: JobId,
        timeout: Duration,
    ) -> Result<ToolOutput, ToolError> {
        let jobs = self
            .terminals
            .registry()
            .ok_or_else(|| ToolError::msg(JOBS_UNAVAILABLE))?;
        let settle = OnTimeout::Kill {
            settle: SETTLE_SLACK,
        };
        let read = wait_foreground(&**jobs, &id, call, timeout + SETTLE_SLACK, settle)
            .await?
            .read;
        let limit = usize::try_from(self.terminals.config().max_result_bytes).unwrap_or(usize::MAX);
        Ok(render_foreground(
            &read.text,
            &read.snapshot,
            terminal,
            limit,
        ))
    }
}

/// The foreground result (see [`SendTool`]).
fn render_foreground(
    output: &str,
    snapshot: &JobSnapshot,
    terminal: &str,
    limit: usize,
) -> ToolOutput {
    let body = if output.is_empty() {
        "(no output)"
    } else {
        output
    };
    let content = body.strip_suffix('\n').unwrap_or(body);
    let suffix = format!("\n{}", snapshot.status_line());
    let text = turnkit_tool_jobs::fit_with_suffix(
        content,
        &suffix,
        limit,
        turnkit_tool_jobs::OUTPUT_MARKER,
    );
    let shown = if output.is_empty() {
        String::new()
    } else if text.len() == content.len() + suffix.len() {
        output.to_owned()
    } else {
        text.strip_suffix(suffix.as_str())
            .unwrap_or(&text)
            .to_owned()
    };
    let mut value = json!({
        "kind": "foreground",
        "jobId": snapshot.id.as_str(),
        "terminalId": terminal,
        "output": shown,
        "status": snapshot.status.as_str(),
    });
    if let (Some(detail), Some(object)) = (&snapshot.detail, value.as_object_mut()) {
        object.insert("detail".to_owned(), Value::from(&**detail));
    }
    ToolOutput::success(value, text)
}

#[async_trait]
impl Tool for SendTool {
    fn definition(&self) -> &ToolDefinition {
        &SEND_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: SendArgs = decode(&call)?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let config = self.terminals.config();
        let settle = positive_ms(
            "settle_ms",
            args.settle_ms,
            config.settle_ms,
            config.max_timeout_ms,
        )?;
        let timeout = positive_ms(
            "timeout_ms",
            args.timeout_ms,
            config.default_timeout_ms,
            config.max_timeout_ms,
        )?;
        let text = args.text.unwrap_or_default();
        let mut input = text.clone().into_bytes();
        for key in args.keys.unwrap_or_default() {
            let bytes = key_bytes(&key).ok_or_else(|| ToolError::msg(unknown_key(&key)))?;
            input.extend_from_slice(bytes);
        }
        let label_text = if text.is_empty() {
            "(input)".to_owned()
        } else {
            text
        };
        let timeout = Duration::from_millis(timeout);
        let send = Send {
            input,
            label_text,
            end: SendEnd {
                wait_for: args.wait_for.filter(|w| !w.is_empty()),
                settle: Duration::from_millis(settle),
                timeout,
            },
        };
        let id = self
            .terminals
            .send(call.caller.clone(), &args.terminal_id, send)
            .map_err(tool_error)?;
        if args.run_in_background == Some(true) {
            return Ok(ToolOutput::success(
                json!({"kind": "background", "jobId": id.as_str(), "terminalId": args.terminal_id}),
                format!("started background job {id}"),
            ));
        }
        self.foreground(&call, &args.terminal_id, id, timeout).await
    }
}

/// The arguments of `terminal_kill`.
#[derive(Debug, Deserialize)]
struct KillArgs {
    terminal_id: String,
}

/// `terminal_kill`: stops a terminal (see [`Terminals::kill`]). Results (exact):
/// `stopped terminal <id> (<how>)`, `terminal <id> had already exited (<how>)`, or
/// `requested stop of terminal <id>`; value `{"terminalId","stopped","exit"?}`. Errors:
/// `unknown terminal <id>`, `terminal <id> belongs to another session`.
pub struct KillTool {
    terminals: Terminals,
}

impl KillTool {
    /// The tool over a table.
    pub fn new(terminals: Terminals) -> Self {
        Self { terminals }
    }
}

#[async_trait]
impl Tool for KillTool {
    fn definition(&self) -> &ToolDefinition {
        &KILL_DEFINITION
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: KillArgs = decode(&call)?;
        let caller: Option<AgentId> = call.caller.as_ref().map(|a| a.id().clone());
        let id = args.terminal_id;
        let killed = self
            .terminals
            .kill(caller.as_ref(), &id)
            .await
            .map_err(tool_error)?;
        Ok(match killed {
            Killed::Stopped(how) => ToolOutput::success(
                json!({"terminalId": id, "stopped": true, "exit": how}),
                format!("stopped terminal {id} ({how})"),
            ),
            Killed::AlreadyExited(how) => ToolOutput::success(
                json!({"terminalId": id, "stopped": false, "exit": how}),
                format!("terminal {id} had already exited ({how})"),
            ),
            Killed::Requested => ToolOutput::success(
                json!({"terminalId": id, "stopped": false}),
                format!("requested stop of terminal {id}"),
            ),
        })
    }
}
