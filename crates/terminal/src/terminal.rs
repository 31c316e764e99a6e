//! [`Terminal`]: one program running in a PTY, contained like a bash job.
//!
//! Two tokio tasks serve a terminal: a reader that copies everything the PTY prints (raw
//! bytes) either into the active send's [`Capture`] or into the terminal's pending buffer,
//! and a supervisor that reaps the program. Output is normalised only when it is read
//! ([`crate::Screen`]).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::watch;
use turnkit_bash::{
    Containment, Group, JobSandbox, JobTree, MARKER_VAR, Mechanism, Sandbox, Signal, TTY_GATE,
    TaskSet,
};
use turnkit_core::{Clock, lock};

use crate::Screen;

turnkit_core::string_newtype!(
    /// A terminal's id, `term-<N>` (one counter per plugin instance, never reused).
    TerminalId
);

/// Size of one read from the PTY.
const READ_BYTES: usize = 8192;

/// What to run in a new terminal and how (see [`Terminal::spawn`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct TerminalOptions {
    /// The program and its arguments, e.g. `["bash"]` or `["bash", "-c", "read -p …"]`.
    /// Must not be empty.
    pub argv: Vec<String>,
    /// Variables set on top of the host's environment (`TERM` defaults to `dumb`).
    pub env: BTreeMap<String, String>,
    /// Working directory; default: the host process's.
    pub cwd: Option<PathBuf>,
    /// Terminal height in rows.
    pub rows: u16,
    /// Terminal width in columns.
    pub cols: u16,
    /// How the process tree is contained (as for bash jobs).
    pub containment: Containment,
    /// The confinement of every process of the terminal, as for bash jobs (default
    /// `None`: none).
    pub sandbox: Option<Arc<Sandbox>>,
    /// Time between SIGHUP + SIGTERM and SIGKILL when the terminal is stopped, on `clock`.
    pub kill_grace: Duration,
    /// The clock of the kill grace.
    pub clock: Arc<dyn Clock>,
    /// Bytes printed while no send is active that are kept for the next send (the newest
    /// ones; older ones are dropped and the next send's output says so).
    pub max_pending_bytes: usize,
    /// The set the terminal's tasks run in (its reader, its supervisor, the grace timer of
    /// a stop, the removal of its cgroup). Default: a set of its own; the plugin gives every
    /// terminal it opens its own set, which it joins ([`TaskSet::shutdown`]).
    pub tasks: TaskSet,
}

impl TerminalOptions {
    /// Options for `argv` with a 24×200 terminal, `TERM=dumb`, automatic containment, a 2 s
    /// kill grace and 256 KiB of pending output.
    pub fn new(argv: Vec<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            argv,
            env: BTreeMap::new(),
            cwd: None,
            rows: 24,
            cols: 200,
            containment: Containment::Auto,
            sandbox: None,
            kill_grace: Duration::from_millis(2000),
            clock,
            max_pending_bytes: 256 * 1024,
            tasks: TaskSet::new(),
        }
    }
}

impl std::fmt::Debug for TerminalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalOptions")
            .field("argv", &self.argv)
            .field("cwd", &self.cwd)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .finish_non_exhaustive()
    }
}

/// Why a terminal could not be started or written to. `Display` is the model-facing text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerminalError {
    /// Opening the PTY or starting the program failed.
    #[error("failed to start terminal: {0}")]
    Spawn(String),
    /// Not called inside a tokio runtime.
    #[error("failed to start terminal: no tokio runtime")]
    NoRuntime,
    /// Writing the input failed (the program closed the terminal).
    #[error("write to terminal failed: {0}")]
    Write(std::io::Error),
}

/// Raw bytes with a bound: the newest `max` are kept.
#[derive(Debug, Default)]
struct Raw {
    bytes: Vec<u8>,
    dropped: bool,
}

impl Raw {
    fn push(&mut self, bytes: &[u8], max: usize) {
        self.bytes.extend_from_slice(bytes);
        if self.bytes.len() > max {
            let cut = self.bytes.len() - max;
            self.bytes.drain(..cut);
            self.dropped = true;
        }
    }
}

/// The output of one send: the raw bytes printed since it started (and the pending ones it
/// took over), read through a [`Screen`] as a consuming delta, and matched against its
/// `wait_for` text as they arrive.
pub(crate) struct Capture {
    state: Mutex<CaptureState>,
    /// Raw bytes kept unread at most (the newest ones).
    keep: usize,
}

struct CaptureState {
    unread: Raw,
    reader: Screen,
    matcher: Option<Matcher>,
}

struct Matcher {
    pattern: String,
    screen: Screen,
    window: String,
    matched: bool,
}

impl Capture {
    pub(crate) fn new(keep: usize, wait_for: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(CaptureState {
                unread: Raw::default(),
                reader: Screen::new(),
                matcher: wait_for.map(|pattern| Matcher {
                    pattern,
                    screen: Screen::new(),
                    window: String::new(),
                    matched: false,
                }),
            }),
            keep: keep.max(1),
        })
    }

    fn push(&self, bytes: &[u8], dropped_before: bool) {
        let mut state = lock(&self.state);
        state.unread.push(bytes, self.keep);
        state.unread.dropped |= dropped_before;
        if let Some(matcher) = &mut state.matcher
            && !matcher.matched
        {
            matcher.screen.feed_after(bytes, &mut matcher.window);
            if matcher.window.contains(&matcher.pattern) {
                matcher.matched = true;
                matcher.window.clear();
            } else {
                let keep = turnkit_core::tail_utf8(&matcher.window, matcher.pattern.len());
                matcher.window = keep.to_owned();
            }
        }
    }

    /// Whether the `wait_for` text has appeared (always false without one).
    pub(crate) fn matched(&self) -> bool {
        lock(&self.state)
            .matcher
            .as_ref()
            .is_some_and(|m| m.matched)
    }

    /// The text printed since the previous read. When unread bytes were dropped (more than
    /// the bound arrived between two reads), the text is the newest part followed by
    /// `\n[output truncated]` (no second `\n` after a line end) (the marker `job_output` then reuses, todo-jobs §5.5).
    pub(crate) fn read(&self) -> String {
        let mut state = lock(&self.state);
        let unread = std::mem::take(&mut state.unread);
        let mut text = state.reader.feed(&unread.bytes);
        if unread.dropped {
            // `\n[output truncated]`, without doubling a line end the text already has.
            let marker = turnkit_tool_jobs::OUTPUT_MARKER;
            text.push_str(if text.ends_with('\n') {
                &marker[1..]
            } else {
                marker
            });
        }
        text
    }
}

struct State {
    pending: Raw,
    capture: Option<Arc<Capture>>,
    /// How the program ended (`exit code: N`, `signal: SIGHUP`), once reaped.
    exit: Option<String>,
    /// Whether the PTY reported end of file (nothing holds the terminal any more).
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped after every change a send may wait for (output, exit, close).
    activity: watch::Sender<u64>,
    writer: tokio::sync::Mutex<pty_process::OwnedWritePty>,
    tree: Arc<JobTree>,
    /// The terminal's confinement (its temporary folder and limit cgroups live as long as
    /// this).
    _sandbox: Option<JobSandbox>,
    /// Set once the program is reaped: no more process-group signals.
    reaped: AtomicBool,
    stop_requested: AtomicBool,
    max_pending: usize,
    grace: Duration,
    clock: Arc<dyn Clock>,
    runtime: tokio::runtime::Handle,
    /// The set the terminal's tasks run in.
    tasks: TaskSet,
    pid: u32,
}

impl Shared {
    fn bump(&self) {
        self.activity.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn printed(&self, bytes: &[u8]) {
        {
            let mut state = lock(&self.state);
            match &state.capture {
                Some(capture) => capture.push(bytes, false),
                None => {
                    let max = self.max_pending;
                    state.pending.push(bytes, max);
                }
            }
        }
        self.bump();
    }

    fn group(&self) -> Group {
        if self.reaped.load(Ordering::SeqCst) {
            Group::Skip
        } else {
            Group::Include
        }
    }

    /// SIGHUP and SIGTERM now (an interactive shell ignores SIGTERM but leaves on SIGHUP,
    /// as when a terminal window closes), SIGKILL to everything left when the grace ends.
    fn stop(self: &Arc<Self>) {
        if self.stop_requested.swap(true, Ordering::SeqCst) {
            return;
        }
        let group = self.group();
        self.tree.signal(Signal::HUP, group);
        self.tree.signal(Signal::TERM, group);
        // The guard kills when the grace ends, or at once when the task set shuts down (or
        // the runtime drops the task unrun).
        let last_resort = KillOnDrop(self.clone());
        self.tasks
            .drop_after(self.clock.sleep(self.grace), last_resort, &self.runtime);
    }
}

/// Sends SIGKILL to what is left of a terminal's tree when dropped.
struct KillOnDrop(Arc<Shared>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let group = self.0.group();
        self.0.tree.signal(Signal::KILL, group);
    }
}

struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Nobody can reach the terminal any more: stop it and whatever it left running.
        self.shared.stop();
    }
}

/// A program running in a PTY of its own, as the leader of a new session (so its process
/// group is the terminal's foreground group until it starts jobs of its own), contained
/// like a bash job: the job marker `HARNESS_BASH_JOB` in its environment and, where the
/// host can create one, a cgroup of its own entered behind a start gate (see
/// `docs/process-containment.md`).
///
/// Cloning shares the terminal. [`Terminal::stop`] (and dropping the last clone) sends
/// SIGHUP and SIGTERM to the whole tree, then SIGKILL when the grace ends.
#[derive(Clone)]
pub struct Terminal {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("pid", &self.handle.shared.pid)
            .finish_non_exhaustive()
    }
}

impl Terminal {
    /// Opens a PTY of `rows`×`cols`, starts `argv` on it, and starts the reader and the
    /// supervisor. Must be called inside a tokio runtime with I/O and time enabled.
    ///
    /// # Errors
    /// [`TerminalError::Spawn`] (empty `argv`, no PTY, the program cannot be started),
    /// [`TerminalError::NoRuntime`]. Nothing is left running on error.
    pub fn spawn(options: TerminalOptions) -> Result<Self, TerminalError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TerminalError::NoRuntime)?;
        let Some((program, args)) = options.argv.split_first() else {
            return Err(TerminalError::Spawn("no program given".to_owned()));
        };
        let spawn_error = |e: pty_process::Error| TerminalError::Spawn(e.to_string());
        let (pty, pts) = pty_process::open().map_err(spawn_error)?;
        pty.resize(pty_process::Size::new(options.rows, options.cols))
            .map_err(spawn_error)?;
        let mut tree = JobTree::prepare(options.containment);
        tree.track(options.tasks.clone());
        let mut sandbox = match &options.sandbox {
            Some(sandbox) => Some(
                JobSandbox::prepare(sandbox, &tree)
                    .map_err(|e| TerminalError::Spawn(e.to_string()))?,
            ),
            None => None,
        };
        let gated = tree.gated() || sandbox.as_ref().is_some_and(JobSandbox::needs_gate);
        let mut command = if gated {
            pty_process::Command::new("bash")
                .args(["--posix", "-c", TTY_GATE, "bash"])
                .arg(program)
                .args(args)
                .stdin(Stdio::piped())
        } else {
            pty_process::Command::new(program).args(args)
        };
        if let Some(vars) = sandbox.as_ref().and_then(JobSandbox::inherited_env) {
            command = command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
        }
        if !options.env.contains_key("TERM") {
            command = command.env("TERM", "dumb");
        }
        command = turnkit_bash::default_signals_pty(command)
            .envs(&options.env)
            .env(MARKER_VAR, tree.marker())
            .kill_on_drop(true);
        if let Some(cwd) = &options.cwd {
            command = command.current_dir(cwd);
        }
        if let Some(sandbox) = &mut sandbox {
            command = sandbox.confine_pty(command.env("TMPDIR", sandbox.temp_dir()));
        }
        let mut child = command.spawn(pts).map_err(spawn_error)?;
        let pid = child.id().unwrap_or(0);
        tree.adopt(pid);
        if let Some(sandbox) = &sandbox
            && let Err(error) = sandbox.enter(pid)
        {
            // Still at the gate: nothing ran; the program is killed on drop.
            tree.signal(Signal::KILL, Group::Include);
            return Err(TerminalError::Spawn(error.to_string()));
        }
        // Opens the gate (a program started without one has the terminal as stdin).
        drop(child.stdin.take());
        let (reader, writer) = pty.into_split();
        let (activity, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: Raw::default(),
                capture: None,
                exit: None,
                closed: false,
            }),
            activity,
            writer: tokio::sync::Mutex::new(writer),
            tree: Arc::new(tree),
            _sandbox: sandbox,
            reaped: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            max_pending: options.max_pending_bytes.max(1),
            grace: options.kill_grace,
            clock: options.clock,
            runtime: runtime.clone(),
            tasks: options.tasks.clone(),
            pid,
        });
        options
            .tasks
            .spawn_on(pump(reader, shared.clone()), &runtime);
        options
            .tasks
            .spawn_on(supervise(child, shared.clone()), &runtime);
        Ok(Self {
            handle: Arc::new(Handle { shared }),
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// The program's process id (also its session and process group id).
    pub fn pid(&self) -> u32 {
        self.shared().pid
    }

    /// The strongest containment mechanism in force.
    pub fn mechanism(&self) -> Mechanism {
        self.shared().tree.mechanism()
    }

    /// Writes `bytes` to the terminal, as typed on its keyboard.
    ///
    /// # Errors
    /// [`TerminalError::Write`] when the terminal no longer accepts input.
    pub async fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
        let mut writer = self.shared().writer.lock().await;
        writer
            .write_all(bytes)
            .await
            .map_err(TerminalError::Write)?;
        writer.flush().await.map_err(TerminalError::Write)
    }

    /// How the program ended (`exit code: N` or `signal: SIGNAME`), once it was reaped.
    pub fn exit(&self) -> Option<String> {
        lock(&self.shared().state).exit.clone()
    }

    /// Whether the program was reaped **and** nothing holds the terminal open any more: no
    /// more output can arrive.
    pub fn ended(&self) -> bool {
        let state = lock(&self.shared().state);
        state.exit.is_some() && state.closed
    }

    /// Whether any process of the terminal's tree is alive (zombies do not count).
    pub fn has_members(&self) -> bool {
        self.shared().tree.has_members()
    }

    /// Stops the terminal: SIGHUP and SIGTERM to every process of its tree now, SIGKILL to
    /// what is left when the grace ends. Idempotent; returns at once.
    pub fn stop(&self) {
        self.shared().stop();
    }

    /// Whether [`Terminal::stop`] was called.
    pub fn stop_requested(&self) -> bool {
        self.shared().stop_requested.load(Ordering::SeqCst)
    }

    /// Completes once [`Terminal::ended`] is true.
    pub async fn wait_end(&self) {
        let mut activity = self.shared().activity.subscribe();
        loop {
            if self.ended() {
                return;
            }
            if activity.changed().await.is_err() {
                return;
            }
        }
    }

    /// A receiver that sees every change a send may wait for (output, exit, close).
    pub(crate) fn activity(&self) -> watch::Receiver<u64> {
        self.shared().activity.subscribe()
    }

    /// Makes `capture` the active send's output: it takes over the pending bytes and
    /// receives everything printed from now on. Refused while another send is active.
    pub(crate) fn attach(&self, capture: &Arc<Capture>) -> Result<(), ()> {
        let mut state = lock(&self.shared().state);
        if state.capture.is_some() {
            return Err(());
        }
        let pending = std::mem::take(&mut state.pending);
        capture.push(&pending.bytes, pending.dropped);
        state.capture = Some(capture.clone());
        Ok(())
    }

    /// Ends `capture`'s turn: later output is pending again.
    pub(crate) fn detach(&self, capture: &Arc<Capture>) {
        let mut state = lock(&self.shared().state);
        if state
            .capture
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, capture))
        {
            state.capture = None;
        }
    }
}

/// Copies the PTY's output until end of file (Linux reports `EIO` once the last process
/// holding the terminal closed it), or until the task set shuts down.
async fn pump(mut reader: pty_process::OwnedReadPty, shared: Arc<Shared>) {
    let mut buffer = vec![0u8; READ_BYTES];
    let stopped = shared.tasks.stopped();
    tokio::pin!(stopped);
    loop {
        let read = tokio::select! {
            read = reader.read(&mut buffer) => read,
            () = &mut stopped => break,
        };
        match read {
            Ok(0) => break,
            Ok(n) => shared.printed(buffer.get(..n).unwrap_or_default()),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lock(&shared.state).closed = true;
    shared.bump();
}

/// Reaps the program and records how it ended. When the task set shuts down first, the
/// whole tree gets SIGKILL at once and the program is still reaped.
async fn supervise(mut child: tokio::process::Child, shared: Arc<Shared>) {
    let waited = tokio::select! {
        waited = child.wait() => waited,
        () = shared.tasks.stopped() => {
            shared.tree.signal(Signal::KILL, Group::Include);
            child.wait().await
        }
    };
    let exit = match waited {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code: {code}"),
            (None, Some(signal)) => format!("signal: {}", turnkit_bash::signal_name(signal)),
            (None, None) => format!("unrecognised exit status {status}"),
        },
        Err(error) => format!("waiting for the terminal failed: {error}"),
    };
    shared.reaped.store(true, Ordering::SeqCst);
    lock(&shared.state).exit = Some(exit);
    shared.bump();
}
