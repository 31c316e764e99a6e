//! [`BashProcess`]: one `bash -c COMMAND` in its own process group, with concurrent
//! stdout/stderr readers into bounded buffers, private spill files, a kill of the whole
//! process tree with a grace period, and reaping (todo-jobs §6, decisions 11, 13 and 17).
//!
//! Three tokio tasks serve one process: a reader per pipe (pipe → spill file → bounded
//! buffer) and a supervisor that reaps the shell, escalates a cancel from SIGTERM to SIGKILL
//! after the grace period (measured through the [`Clock`] seam), and publishes the
//! [`ProcessEnd`] only once the shell is reaped **and** both pipes are closed. Which
//! processes a signal reaches is decided in `contain.rs`: every process the command
//! started, whatever session or process group it moved to.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::{Child, Command};
use tokio::sync::{Notify, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;
use turnkit_core::{Clock, lock};

use crate::buffer::StreamBuffer;
use crate::contain::{Containment, GATE, Group, MARKER_VAR, Mechanism, Tree, random_hex};
use crate::render::{append_notice, dropped_notice, render_delta};

/// Default cap of unread bytes kept in memory per stream: 1 MiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// Default cap of bytes written to each spill file: 64 MiB.
pub const DEFAULT_MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;
/// Default grace between SIGTERM and SIGKILL on cancel: 2 s.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Size of one read from a pipe.
const CHUNK_BYTES: usize = 64 * 1024;
/// Pipe capacity requested for the read ends (fewer wake-ups for chatty commands). A
/// refusal (e.g. over `/proc/sys/fs/pipe-max-size`) is ignored.
const PIPE_BYTES: usize = 1024 * 1024;

/// Where and how much of the full output to spill to files (decisions 11 and 17).
///
/// The folder is created on first use with mode 0700 (missing parents with the default
/// mode). A folder that is not a directory, is owned by another user, or is group or world
/// writable is refused: nothing is spilled, a warning is logged, and the dropped-output
/// notice says `(unavailable)`. Files are created new (never opened through a link) with
/// mode 0600 and the unpredictable names `bash-<32 hex digits>.stdout` / `.stderr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillOptions {
    /// The folder.
    pub dir: PathBuf,
    /// Bytes written to each file at most; later output is not spilled.
    pub max_bytes: u64,
    /// What happens to the files when the last handle of the process is dropped (the job
    /// record is removed, or the registry disposed).
    pub retention: SpillRetention,
}

impl SpillOptions {
    /// Spill files in `dir`, at most `max_bytes` each, removed with the process handle.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self {
            dir: dir.into(),
            max_bytes,
            retention: SpillRetention::Remove,
        }
    }
}

/// Whether spill files outlive their process handle (decision 17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpillRetention {
    /// Removed when the last handle is dropped (the default).
    #[default]
    Remove,
    /// Left in place for the host (only offered for a folder the host configured).
    Keep,
}

/// How to run one command.
#[derive(Clone)]
pub struct ProcessOptions {
    /// The command, run as `bash -c COMMAND`.
    pub command: String,
    /// Working directory; `None` inherits the host's.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Unread bytes kept in memory per stream (default [`DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output_bytes: usize,
    /// Spill files for the full output; `None` spills nothing (the dropped-output notice
    /// then says `(unavailable)`).
    pub spill: Option<SpillOptions>,
    /// Time between SIGTERM and SIGKILL on cancel (default [`DEFAULT_KILL_GRACE`]).
    pub kill_grace: Duration,
    /// How the process tree is contained (default [`Containment::Auto`]).
    pub containment: Containment,
    /// Measures the grace period.
    pub clock: Arc<dyn Clock>,
}

impl ProcessOptions {
    /// Options with the defaults: inherited directory and environment, 1 MiB per stream, no
    /// spill files, 2 s grace.
    pub fn new(command: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            command: command.into(),
            cwd: None,
            env: BTreeMap::new(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            spill: None,
            kill_grace: DEFAULT_KILL_GRACE,
            containment: Containment::Auto,
            clock,
        }
    }
}

impl std::fmt::Debug for ProcessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessOptions")
            .field("command", &self.command)
            .field("cwd", &self.cwd)
            .field("env", &self.env)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("spill", &self.spill)
            .field("kill_grace", &self.kill_grace)
            .field("containment", &self.containment)
            .finish_non_exhaustive()
    }
}

/// Failures of the bash producer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BashError {
    /// `bash` could not be started (missing binary, bad working directory, …). Returned
    /// from [`BashProcess::spawn`]; the job is then never registered.
    #[error("failed to start bash: {0}")]
    Spawn(#[source] std::io::Error),
    /// [`BashProcess::spawn`] was called outside a tokio runtime.
    #[error("failed to start bash: no tokio runtime")]
    NoRuntime,
}

/// How the shell ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (this number).
    Signaled(i32),
    /// Its status could not be collected (the message says why).
    Lost(String),
}

/// The end of a process: its status and whether a cancel was requested before it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessEnd {
    /// How the shell ended.
    pub status: EndStatus,
    /// [`BashProcess::cancel`] was called before the process ended.
    pub cancel_requested: bool,
}

/// Byte counts of one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Bytes the command wrote.
    pub written: u64,
    /// Unread bytes dropped from memory.
    pub dropped: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Channel {
    Stdout,
    Stderr,
}

impl Channel {
    fn extension(self) -> &'static str {
        match self {
            Channel::Stdout => "stdout",
            Channel::Stderr => "stderr",
        }
    }
}

struct Streams {
    stdout: StreamBuffer,
    stderr: StreamBuffer,
    stdout_spill: Option<SpillFile>,
    stderr_spill: Option<SpillFile>,
}

/// A spill file's path; removes the file when dropped unless it is kept.
struct SpillFile {
    path: PathBuf,
    retention: SpillRetention,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        if self.retention == SpillRetention::Keep {
            return;
        }
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::debug!(
                "bash: removing spill file {} failed: {error}",
                self.path.display()
            );
        }
    }
}

impl Streams {
    fn buffer(&mut self, channel: Channel) -> &mut StreamBuffer {
        match channel {
            Channel::Stdout => &mut self.stdout,
            Channel::Stderr => &mut self.stderr,
        }
    }
}

struct Shared {
    streams: Mutex<Streams>,
    /// Signalled after every change of the streams (one permit is stored).
    output_ready: Notify,
    cancel: CancellationToken,
    /// Set once the process is reaped and its pipes are closed: no more group signals.
    finished: AtomicBool,
    tree: Arc<Tree>,
    /// For the stop of processes left behind by a finished command.
    grace: Duration,
    clock: Arc<dyn Clock>,
    runtime: tokio::runtime::Handle,
    end: watch::Sender<Option<ProcessEnd>>,
}

impl Shared {
    /// Signals every process of the job and its process group, unless the process has
    /// finished.
    fn signal_group(&self, signal: Signal) {
        if self.finished.load(Ordering::SeqCst) {
            return;
        }
        self.tree.signal(signal, Group::Include);
    }

    /// Stops what a finished command left running (background processes that closed or
    /// never held the pipes): SIGTERM now, SIGKILL after the grace. The group id is not
    /// used, since the shell is reaped; the marker and the cgroup still name the job's
    /// processes exactly.
    fn stop_leftovers(&self) {
        if !self.tree.has_members() {
            return;
        }
        self.tree.signal(Signal::TERM, Group::Skip);
        let last_resort = KillOnDrop(self.tree.clone());
        let sleep = self.clock.sleep(self.grace);
        // On a runtime that is shutting down the task is dropped unrun, and its guard kills
        // at once.
        self.runtime.spawn(async move {
            sleep.await;
            drop(last_resort);
        });
    }

    fn request_cancel(&self) {
        if self.cancel.is_cancelled() {
            return;
        }
        // Signal at once, so a busy runtime does not delay the stop; the supervisor arms the
        // grace timer when it sees the token.
        self.signal_group(Signal::TERM);
        self.cancel.cancel();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The supervisor is gone without finishing (its runtime shut down): kill the tree
        // as a last resort (the shell itself also gets `kill_on_drop`).
        if !self.finished.load(Ordering::SeqCst) {
            self.signal_group(Signal::KILL);
        }
        // Spill files live as long as the process handle: the job record owns them (each
        // `SpillFile` removes its file when dropped with the streams).
    }
}

/// Sends SIGKILL to what is left of a job's tree when dropped.
struct KillOnDrop(Arc<Tree>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(Signal::KILL, Group::Skip);
    }
}

struct Handle {
    shared: Arc<Shared>,
    pid: u32,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Nobody can observe or stop the process any more: stop it (the supervisor still
        // escalates to SIGKILL and reaps), or what it left running.
        if self.shared.finished.load(Ordering::SeqCst) {
            self.shared.stop_leftovers();
        } else {
            self.shared.request_cancel();
        }
    }
}

/// A running (or finished) `bash -c COMMAND` in its own process group.
///
/// Cloning shares the process. When the last clone is dropped before the process ended, the
/// process tree is cancelled (SIGTERM, SIGKILL after the grace) and the shell still reaped;
/// when it is dropped after the end, the processes the command left running are stopped the
/// same way. Spill files are deleted once the last clone is dropped and the process has
/// ended, unless [`SpillRetention::Keep`] was asked for.
///
/// Every signal reaches all processes the command started, including those that left the
/// process group or the session (`setsid`, `set -m`, double forks, daemons): see
/// [`BashProcess::mechanism`] and the crate documentation for what is guaranteed where.
#[derive(Clone)]
pub struct BashProcess {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for BashProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashProcess")
            .field("pid", &self.handle.pid)
            .finish_non_exhaustive()
    }
}

impl BashProcess {
    /// Starts `bash -c COMMAND` as the leader of a new process group (pgid = pid), stdin
    /// from `/dev/null`, stdout and stderr piped, and the job's marker in its environment
    /// (`HARNESS_BASH_JOB`, 32 hex digits; it overrides a variable of that name in
    /// [`ProcessOptions::env`]). Under [`Containment::Auto`] the shell is moved into a
    /// cgroup of its own where the host can create one. Must be called inside a tokio
    /// runtime with I/O and time enabled.
    ///
    /// # Errors
    /// [`BashError::Spawn`] when the process cannot be started, [`BashError::NoRuntime`]
    /// outside a runtime. Nothing is left running on error.
    pub fn spawn(options: ProcessOptions) -> Result<Self, BashError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BashError::NoRuntime)?;
        let mut tree = Tree::prepare(options.containment);
        let mut command = Command::new("bash");
        if tree.gated() {
            command
                .args(["--posix", "-c", GATE, "bash", "-c"])
                .arg(&options.command)
                .stdin(Stdio::piped());
        } else {
            command.arg("-c").arg(&options.command).stdin(Stdio::null());
        }
        command
            .envs(&options.env)
            .env(MARKER_VAR, tree.marker())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &options.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(BashError::Spawn)?;
        let pid = child.id().unwrap_or(0);
        if let Some(pgid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            tree.adopt(pgid);
        }
        // Opens the gate (a shell started without one has no stdin pipe).
        drop(child.stdin.take());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            // Unreachable with piped stdio; the child is killed on drop.
            return Err(BashError::Spawn(std::io::Error::other("missing pipes")));
        };
        for fd in [
            rustix::fd::AsFd::as_fd(&stdout),
            rustix::fd::AsFd::as_fd(&stderr),
        ] {
            let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_BYTES);
        }
        let (end, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            streams: Mutex::new(Streams {
                stdout: StreamBuffer::new(options.max_output_bytes),
                stderr: StreamBuffer::new(options.max_output_bytes),
                stdout_spill: None,
                stderr_spill: None,
            }),
            output_ready: Notify::new(),
            cancel: CancellationToken::new(),
            finished: AtomicBool::new(false),
            tree: Arc::new(tree),
            grace: options.kill_grace,
            clock: options.clock.clone(),
            runtime,
            end,
        });
        let spill = options.spill.map(|spill| Spill {
            options: spill,
            stem: format!("bash-{}", random_hex()),
        });
        let out = tokio::spawn(pump(stdout, shared.clone(), Channel::Stdout, spill.clone()));
        let err = tokio::spawn(pump(stderr, shared.clone(), Channel::Stderr, spill));
        tokio::spawn(supervise(
            child,
            shared.clone(),
            [out, err],
            options.kill_grace,
            options.clock,
        ));
        Ok(Self {
            handle: Arc::new(Handle { shared, pid }),
        })
    }

    /// The shell's process id, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.handle.pid
    }

    /// How this process's tree is contained: [`Mechanism::Cgroup`] (a cgroup v2 of its
    /// own), [`Mechanism::ProcessTree`] (environment marker and parent links in `/proc`), or
    /// [`Mechanism::ProcessGroup`] (no `/proc`). Each includes the ones after it.
    pub fn mechanism(&self) -> Mechanism {
        self.handle.shared.tree.mechanism()
    }

    /// The job's marker (32 hex digits): the value of [`MARKER_VAR`] in its processes'
    /// environment and the name of its cgroup, `harness-bash-<marker>`.
    pub fn marker(&self) -> &str {
        self.handle.shared.tree.marker()
    }

    /// Takes the output written since the previous read, in the delta format (todo-jobs §6):
    /// stdout, then a `[stderr]` section; followed by the dropped-output notice naming the
    /// spill files when unread bytes were dropped from memory since the previous read.
    /// Never fails; invalid UTF-8 is replaced.
    pub fn read(&self) -> String {
        // Detach under the lock (pointer moves only); join and decode outside it.
        let (stdout, stderr, paths) = {
            let mut streams = lock(&self.handle.shared.streams);
            let stdout = streams.stdout.take();
            let stderr = streams.stderr.take();
            let paths = if stdout.lossy || stderr.lossy {
                Some([
                    spill_path(&streams.stdout_spill),
                    spill_path(&streams.stderr_spill),
                ])
            } else {
                None
            };
            (stdout, stderr, paths)
        };
        let stdout = stdout.into_text();
        let delta = if stderr.is_empty() {
            stdout
        } else {
            render_delta(&stdout, &stderr.into_text())
        };
        match paths {
            None => delta,
            Some(paths) => {
                // Only the files that (still) exist are named (todo-jobs §6).
                let existing: Vec<&Path> = paths
                    .iter()
                    .flatten()
                    .map(PathBuf::as_path)
                    .filter(|path| path.exists())
                    .collect();
                append_notice(delta, &dropped_notice(&existing))
            }
        }
    }

    /// Completes when unread output (or a drop) is waiting or the process ended. Meant for a
    /// single consumer that loops `output_ready().await; read()`; a notification that
    /// arrives between two waits is kept, so none is lost.
    pub async fn output_ready(&self) {
        let shared = &self.handle.shared;
        loop {
            let notified = shared.output_ready.notified();
            {
                let streams = lock(&shared.streams);
                if streams.stdout.has_unread() || streams.stderr.has_unread() {
                    return;
                }
            }
            if shared.end.borrow().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Requests a stop: SIGTERM to the process group now, SIGKILL after the grace period
    /// if the group still holds the pipes. Synchronous and idempotent; does nothing once the
    /// process has finished.
    pub fn cancel(&self) {
        self.handle.shared.request_cancel();
    }

    /// Whether [`BashProcess::cancel`] was called.
    pub fn cancel_requested(&self) -> bool {
        self.handle.shared.cancel.is_cancelled()
    }

    /// Completes once the shell is reaped and both pipes are closed (all output is in the
    /// buffers), with how it ended.
    pub fn wait(&self) -> BoxFuture<'static, ProcessEnd> {
        let mut end = self.handle.shared.end.subscribe();
        let shared = self.handle.shared.clone();
        Box::pin(async move {
            let result = end.wait_for(Option::is_some).await.map(|v| v.clone());
            match result {
                Ok(Some(end)) => end,
                Ok(None) | Err(_) => ProcessEnd {
                    status: EndStatus::Lost("the process supervisor stopped".to_owned()),
                    cancel_requested: shared.cancel.is_cancelled(),
                },
            }
        })
    }

    /// The ended state, if the process has finished.
    pub fn try_end(&self) -> Option<ProcessEnd> {
        self.handle.shared.end.borrow().clone()
    }

    /// Byte counts of stdout and stderr so far.
    pub fn stats(&self) -> (StreamStats, StreamStats) {
        let streams = lock(&self.handle.shared.streams);
        let of = |b: &StreamBuffer| StreamStats {
            written: b.total_bytes(),
            dropped: b.dropped_bytes(),
        };
        (of(&streams.stdout), of(&streams.stderr))
    }

    /// The spill files created so far (stdout's first).
    pub fn spill_paths(&self) -> Vec<PathBuf> {
        let streams = lock(&self.handle.shared.streams);
        [
            spill_path(&streams.stdout_spill),
            spill_path(&streams.stderr_spill),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

fn spill_path(file: &Option<SpillFile>) -> Option<PathBuf> {
    file.as_ref().map(|f| f.path.clone())
}

/// Why a spill folder was refused (decision 17).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FolderRefused {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is not a directory")]
    NotADirectory,
    #[error("it is owned by uid {0}, not by this user")]
    Owner(u32),
    #[error("it is group or world writable (mode {0:o})")]
    Writable(u32),
}

/// Makes sure `dir` is a private folder of this user: creates it with mode 0700 if it is
/// missing (its parents with the default mode), and refuses one that is a link, not a
/// directory, owned by another user, or group or world writable.
pub(crate) fn private_folder(dir: &Path) -> Result<(), FolderRefused> {
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error.into()),
            }
            std::fs::symlink_metadata(dir)?
        }
        Err(error) => return Err(error.into()),
    };
    if !metadata.is_dir() {
        return Err(FolderRefused::NotADirectory);
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(FolderRefused::Owner(metadata.uid()));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(FolderRefused::Writable(mode));
    }
    Ok(())
}

#[derive(Clone)]
struct Spill {
    options: SpillOptions,
    stem: String,
}

/// The spill file of one stream: created on the first byte, written up to the cap, given
/// up (with a warning) on the first error.
struct SpillWriter {
    spill: Option<Spill>,
    file: Option<File>,
    written: u64,
}

impl SpillWriter {
    fn write(&mut self, shared: &Shared, channel: Channel, bytes: &[u8]) {
        let Some(spill) = &self.spill else { return };
        let room = spill.options.max_bytes.saturating_sub(self.written);
        if room == 0 {
            return;
        }
        if self.file.is_none() {
            let dir = &spill.options.dir;
            if let Err(refused) = private_folder(dir) {
                tracing::warn!(
                    "bash: refusing spill folder {}: {refused}; output is not spilled",
                    dir.display(),
                );
                self.spill = None;
                return;
            }
            let path = dir.join(format!("{}.{}", spill.stem, channel.extension()));
            // `create_new` never follows a link planted at the name.
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match created {
                Ok(file) => {
                    let spilled = SpillFile {
                        path,
                        retention: spill.options.retention,
                    };
                    let mut streams = lock(&shared.streams);
                    match channel {
                        Channel::Stdout => streams.stdout_spill = Some(spilled),
                        Channel::Stderr => streams.stderr_spill = Some(spilled),
                    }
                    self.file = Some(file);
                }
                Err(error) => {
                    tracing::warn!("bash: cannot create spill file {}: {error}", path.display());
                    self.spill = None;
                    return;
                }
            }
        }
        let take = usize::try_from(room).map_or(bytes.len(), |room| room.min(bytes.len()));
        if let Some(file) = &mut self.file {
            // A page-cache write of at most one chunk; short enough to do on the runtime.
            if let Err(error) = file.write_all(&bytes[..take]) {
                tracing::warn!("bash: writing a spill file failed: {error}");
                self.spill = None;
                self.file = None;
                return;
            }
            self.written += take as u64;
        }
    }
}

/// Copies one pipe into its spill file and bounded buffer until end of file.
async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    shared: Arc<Shared>,
    channel: Channel,
    spill: Option<Spill>,
) {
    let mut writer = SpillWriter {
        spill,
        file: None,
        written: 0,
    };
    let mut chunk = Vec::with_capacity(CHUNK_BYTES);
    loop {
        match pipe.read_buf(&mut chunk).await {
            Ok(0) => break,
            Ok(_) => {
                writer.write(&shared, channel, &chunk);
                // A well-filled chunk is handed over as is; a small one is copied into the
                // buffer and the chunk reused.
                if chunk.len() * 2 >= chunk.capacity() {
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES));
                    lock(&shared.streams).buffer(channel).push_owned(full);
                } else {
                    lock(&shared.streams).buffer(channel).push(&chunk);
                    chunk.clear();
                }
                shared.output_ready.notify_one();
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!("bash: reading {} failed: {error}", channel.extension());
                break;
            }
        }
    }
    lock(&shared.streams).buffer(channel).close();
    shared.output_ready.notify_one();
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Running,
    /// SIGTERM sent; the timer runs to SIGKILL.
    Terminating,
    /// SIGKILL sent; the timer runs to abandoning the pipes.
    Killed,
    /// The pipes were abandoned; nothing more to do.
    Abandoned,
}

struct Escalation {
    stage: Stage,
    timer: Option<BoxFuture<'static, ()>>,
    grace: Duration,
    clock: Arc<dyn Clock>,
}

impl Escalation {
    async fn next_deadline(&mut self) {
        match &mut self.timer {
            Some(timer) => timer.await,
            None => std::future::pending().await,
        }
    }

    fn on_cancel(&mut self, shared: &Shared) {
        if self.stage == Stage::Running {
            shared.signal_group(Signal::TERM);
            self.stage = Stage::Terminating;
            self.timer = Some(self.clock.sleep(self.grace));
        }
    }

    fn on_deadline(&mut self, shared: &Shared, readers: &[AbortHandle; 2]) {
        match self.stage {
            Stage::Terminating => {
                shared.signal_group(Signal::KILL);
                self.stage = Stage::Killed;
                self.timer = Some(self.clock.sleep(self.grace));
            }
            Stage::Killed => {
                // Something outside the group (a daemonized grandchild) still holds a
                // pipe: stop reading so the job can settle.
                tracing::warn!("bash: pipes still open after SIGKILL; abandoning them");
                for reader in readers {
                    reader.abort();
                }
                self.stage = Stage::Abandoned;
                self.timer = None;
            }
            Stage::Running | Stage::Abandoned => self.timer = None,
        }
    }
}

/// Reaps the shell, escalates a cancel, waits for both pipes to close, then publishes the
/// end.
async fn supervise(
    mut child: Child,
    shared: Arc<Shared>,
    readers: [JoinHandle<()>; 2],
    grace: Duration,
    clock: Arc<dyn Clock>,
) {
    let cancel = shared.cancel.clone();
    let aborts = [readers[0].abort_handle(), readers[1].abort_handle()];
    let mut escalation = Escalation {
        stage: Stage::Running,
        timer: None,
        grace,
        clock,
    };
    let waited = loop {
        tokio::select! {
            status = child.wait() => break status,
            () = cancel.cancelled(), if escalation.stage == Stage::Running => {
                escalation.on_cancel(&shared);
            }
            () = escalation.next_deadline() => escalation.on_deadline(&shared, &aborts),
        }
    };
    let status = match waited {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => EndStatus::Exited(code),
            (None, Some(signal)) => EndStatus::Signaled(signal),
            (None, None) => EndStatus::Lost(format!("unrecognised exit status {status}")),
        },
        Err(error) => EndStatus::Lost(format!("waiting for bash failed: {error}")),
    };
    // Grandchildren may still hold the pipes: the job runs until they close them, and a
    // cancel meanwhile still reaches (and escalates on) the whole group.
    let mut pipes = futures::future::join_all(readers);
    loop {
        tokio::select! {
            _ = &mut pipes => break,
            () = cancel.cancelled(), if escalation.stage == Stage::Running => {
                escalation.on_cancel(&shared);
            }
            () = escalation.next_deadline() => escalation.on_deadline(&shared, &aborts),
        }
    }
    let cancel_requested = cancel.is_cancelled();
    shared.finished.store(true, Ordering::SeqCst);
    {
        let mut streams = lock(&shared.streams);
        streams.stdout.close();
        streams.stderr.close();
    }
    shared.end.send_replace(Some(ProcessEnd {
        status,
        cancel_requested,
    }));
    shared.output_ready.notify_one();
    // A cancelled command whose pipes closed within the grace may have left processes that
    // ignore SIGTERM: they still get SIGKILL when the grace ends.
    if escalation.stage == Stage::Terminating && shared.tree.has_members() {
        let last_resort = KillOnDrop(shared.tree.clone());
        drop(shared);
        escalation.next_deadline().await;
        drop(last_resort);
    }
}
