//! [`BashProcess`]: starting the shell, reading its output, cancelling and waiting.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rustix::process::Pid;
use tokio::process::Command;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use turnkit_core::lock;

use super::end::{BashError, EndStatus, ProcessEnd, StreamStats};
use super::options::ProcessOptions;
use super::shared::{Handle, Shared};
use super::spill::{Spill, spill_path};
use super::streams::{Channel, Streams, pump};
use super::supervise::supervise;
use crate::JobSandbox;
use crate::buffer::StreamBuffer;
use crate::contain::{GATE, MARKER_VAR, Mechanism, Tree, random_hex};
use crate::render::{append_notice, dropped_notice, render_delta};

/// Pipe capacity requested for the read ends (fewer wake-ups for chatty commands). A
/// refusal (e.g. over `/proc/sys/fs/pipe-max-size`) is ignored.
const PIPE_BYTES: usize = 1024 * 1024;

/// A running (or finished) `bash -c COMMAND` in its own process group.
///
/// Cloning shares the process. When the last clone is dropped before the process ended, the
/// process tree is cancelled (SIGTERM, SIGKILL after the grace) and the shell still reaped;
/// when it is dropped after the end, the processes the command left running are stopped the
/// same way. Spill files are deleted once the last clone is dropped and the process has
/// ended, unless [`SpillRetention::Keep`](crate::SpillRetention::Keep) was asked for.
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
    /// [`ProcessOptions::env`]). Under [`Containment::Auto`](crate::Containment::Auto) the shell is moved into a
    /// cgroup of its own where the host can create one. Must be called inside a tokio
    /// runtime with I/O and time enabled.
    ///
    /// # Errors
    /// [`BashError::Spawn`] when the process cannot be started, [`BashError::NoRuntime`]
    /// outside a runtime. Nothing is left running on error.
    pub fn spawn(options: ProcessOptions) -> Result<Self, BashError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BashError::NoRuntime)?;
        let mut tree = Tree::prepare(options.containment);
        tree.track(options.tasks.clone());
        let mut sandbox = match &options.sandbox {
            Some(sandbox) => Some(
                JobSandbox::prepare_for(sandbox, tree.cgroup_dir(), tree.marker())
                    .map_err(|e| BashError::Sandbox(e.0))?,
            ),
            None => None,
        };
        let gated = options.hold_start
            || tree.gated()
            || sandbox.as_ref().is_some_and(JobSandbox::needs_gate);
        let mut command = Command::new("bash");
        if gated {
            command
                .args(["--posix", "-c", GATE, "bash", "-c"])
                .arg(&options.command)
                .stdin(Stdio::piped());
        } else {
            command.arg("-c").arg(&options.command).stdin(Stdio::null());
        }
        if let Some(vars) = sandbox.as_ref().and_then(JobSandbox::inherited_env) {
            command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
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
        if let Some(sandbox) = &mut sandbox {
            command.env("TMPDIR", sandbox.temp_dir());
            sandbox.confine_tokio(&mut command);
        }
        let mut child = command.spawn().map_err(BashError::Spawn)?;
        let pid = child.id().unwrap_or(0);
        if let Some(pgid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            tree.adopt(pgid);
        }
        if let Some(sandbox) = &sandbox
            && let Err(error) = sandbox.enter(pid)
        {
            // Still at the gate: nothing ran; the shell is killed on drop.
            tree.signal(rustix::process::Signal::KILL, crate::Group::Include);
            return Err(BashError::Sandbox(error.0));
        }
        // The gate's write end (a shell started without one has no stdin pipe): kept while
        // the start is held, else the gate opens now.
        let gate = child
            .stdin
            .take()
            .and_then(|stdin| stdin.into_owned_fd().ok());
        let gate = if options.hold_start {
            gate
        } else {
            open_gate(gate);
            None
        };
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
            refusals_told: AtomicBool::new(false),
            tree: Arc::new(tree),
            sandbox,
            grace: options.kill_grace,
            clock: options.clock.clone(),
            runtime: runtime.clone(),
            tasks: options.tasks.clone(),
            end,
            gate: Mutex::new(gate),
        });
        let spill = options.spill.map(|spill| Spill {
            options: spill,
            stem: format!("bash-{}", random_hex()),
        });
        // The readers belong to the supervisor, which joins them (and aborts them if it is
        // dropped); the supervisor belongs to the process's task set.
        let out = AbortOnDropHandle::new(runtime.spawn(pump(
            stdout,
            shared.clone(),
            Channel::Stdout,
            spill.clone(),
        )));
        let err = AbortOnDropHandle::new(runtime.spawn(pump(
            stderr,
            shared.clone(),
            Channel::Stderr,
            spill,
        )));
        options.tasks.spawn_on(
            supervise(
                child,
                shared.clone(),
                [out, err],
                options.kill_grace,
                options.clock,
            ),
            &runtime,
        );
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

    /// Lets a shell held at its start gate
    /// ([`ProcessOptions::hold_start`](crate::ProcessOptions::hold_start)) run its command;
    /// nothing when it was not held or is released already.
    pub fn release(&self) {
        open_gate(lock(&self.handle.shared.gate).take());
    }

    /// The job's marker (32 hex digits): the value of [`crate::MARKER_VAR`] in its
    /// processes' environment and the name of its cgroup, `harness-bash-<marker>`.
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
        let delta = match self.final_refusals() {
            Some(line) => append_notice(delta, &format!("{line}\n")),
            None => delta,
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

    /// Which limits of the job's sandbox stopped something so far (all `false` without a
    /// sandbox).
    pub fn limit_hits(&self) -> crate::LimitHits {
        self.handle
            .shared
            .sandbox
            .as_ref()
            .map(JobSandbox::hits)
            .unwrap_or_default()
    }

    /// With the network by name: the line of the connections the proxy refused the job so
    /// far (`network: 3 connections refused (example.com:443 ×3)`), `None` when there were
    /// none or the network is not by name. [`BashProcess::read`] ends the first read after
    /// the end with it, and the job's settlement detail ends with it.
    pub fn refusals(&self) -> Option<String> {
        self.handle
            .shared
            .sandbox
            .as_ref()
            .and_then(JobSandbox::refusals)
    }

    /// The refusal line, once, when the process has ended.
    fn final_refusals(&self) -> Option<String> {
        let shared = &self.handle.shared;
        if shared.end.borrow().is_none() {
            return None;
        }
        let line = self.refusals()?;
        (!shared
            .refusals_told
            .swap(true, std::sync::atomic::Ordering::SeqCst))
        .then_some(line)
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

/// Opens a start gate: one line lets the shell's `read` succeed (closing it without one
/// would make the shell exit). The pipe is empty, so the write does not block.
fn open_gate(gate: Option<std::os::fd::OwnedFd>) {
    if let Some(fd) = gate {
        let _ = rustix::io::write(&fd, b"\n");
    }
}
