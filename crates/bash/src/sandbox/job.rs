//! [`JobSandbox`]: the confinement of one job, prepared in the parent before the spawn.

use std::path::{Path, PathBuf};

use super::child::{Bridge, ChildSetup, Init, Mounts, UserMaps};
use super::limits::{JobLimits, LimitHits};
use super::{Sandbox, SandboxError, Wall, available};
use crate::JobTree;
use crate::net::{Gate, PROXY_PORT, Refusals, proxy_env};

/// Devices every confined job may write (and open for writing): the null and zero devices,
/// the terminals.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/urandom",
];

/// The confinement of one job (see [`Sandbox`]): its own temporary folder (`TMPDIR`,
/// removed with the value), its limit cgroups (v1 folders removed with the value), and the
/// steps its first process runs before `exec`. Bash uses it inside
/// [`crate::BashProcess::spawn`]; a producer that starts its own process (the terminal)
/// uses it the same way:
///
/// 1. [`JobSandbox::prepare`] after [`JobTree::prepare`], before the spawn;
/// 2. if [`JobSandbox::inherited_env`] is set, clear the environment and set those first;
///    put `TMPDIR=`[`JobSandbox::temp_dir`] in the environment, and start the process
///    through [`JobSandbox::confine_pty`]; start it behind the gate if [`JobTree::gated`]
///    **or** [`JobSandbox::needs_gate`];
/// 3. after [`JobTree::adopt`], call [`JobSandbox::enter`] before opening the gate;
/// 4. keep the value as long as the job's record; read [`JobSandbox::hits`] at the end.
#[derive(Debug)]
pub struct JobSandbox {
    temp: tempfile::TempDir,
    limits: JobLimits,
    setup: Option<SetupSlot>,
    /// The empty file bound over hidden non-folders (kept while the job may start).
    _empty: Option<tempfile::NamedTempFile>,
    /// The host's variables kept by `inheritEnv`.
    inherit: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// With the network by name: the job's side of the server's proxy.
    proxy: Option<ProxyDoor>,
}

/// The server's end of the socket pair the job's listener arrives on, the job's policy and
/// refusals, and (once [`JobSandbox::enter`] received the listener) the accept task.
#[derive(Debug)]
struct ProxyDoor {
    channel: std::os::fd::OwnedFd,
    gate: std::sync::Arc<Gate>,
    serving: std::sync::Mutex<Option<tokio_util::task::AbortOnDropHandle<()>>>,
}

/// A `ChildSetup` behind a `Debug` face.
struct SetupSlot(ChildSetup);

impl std::fmt::Debug for SetupSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChildSetup")
    }
}

impl JobSandbox {
    /// Prepares the confinement of the job contained by `tree` under `sandbox`: creates the
    /// temporary folder, writes the limits (into the job's cgroup v2, or cgroup v1 folders of
    /// its own), and builds the Landlock ruleset.
    ///
    /// # Errors
    /// [`SandboxError`] naming what this host cannot provide (unless `bestEffort`, then it
    /// is left out), or an I/O failure.
    pub fn prepare(sandbox: &Sandbox, tree: &JobTree) -> Result<Self, SandboxError> {
        Self::prepare_for(sandbox, tree.cgroup_dir(), tree.marker())
    }

    pub(crate) fn prepare_for(
        sandbox: &Sandbox,
        v2: Option<&Path>,
        marker: &str,
    ) -> Result<Self, SandboxError> {
        let temp = tempfile::Builder::new()
            .prefix("harness-job-")
            .tempdir()
            .map_err(|e| SandboxError(format!("sandbox: no temporary folder: {e}")))?;
        let limits = JobLimits::prepare(sandbox, v2, marker).map_err(SandboxError)?;
        let network_off = sandbox.network.isolated() && available(Wall::Network, sandbox)?;
        let (proxy, bridge) = match sandbox.network.policy() {
            Some(policy) if network_off => {
                let (channel, child) = rustix::net::socketpair(
                    rustix::net::AddressFamily::UNIX,
                    rustix::net::SocketType::STREAM,
                    rustix::net::SocketFlags::CLOEXEC,
                    None,
                )
                .map_err(|e| SandboxError(format!("sandbox: no socket pair for the proxy: {e}")))?;
                let gate = Gate {
                    policy: policy.clone(),
                    refusals: std::sync::Arc::new(Refusals::new()),
                };
                let door = ProxyDoor {
                    channel,
                    gate: std::sync::Arc::new(gate),
                    serving: std::sync::Mutex::new(None),
                };
                let bridge = Bridge {
                    channel: child,
                    port: PROXY_PORT,
                };
                (Some(door), Some(bridge))
            }
            _ => (None, None),
        };
        let hide = !sandbox.deny_read.is_empty() && available(Wall::Mounts, sandbox)?;
        let isolate = sandbox.isolate_processes && available(Wall::Pids, sandbox)?;
        let mut empty = None;
        let protected = super::protect::resolve(sandbox);
        let protect = !protected.is_empty() && available(Wall::Mounts, sandbox)?;
        let mounts = if hide || isolate || protect {
            let file = tempfile::Builder::new()
                .prefix("harness-hidden-")
                .tempfile()
                .map_err(|e| SandboxError(format!("sandbox: no empty file: {e}")))?;
            let deny: &[PathBuf] = if hide { &sandbox.deny_read } else { &[] };
            let read_only: &[PathBuf] = if protect { &protected } else { &[] };
            let mounts =
                Mounts::prepare(deny, read_only, temp.path(), file.path()).map_err(SandboxError)?;
            empty = Some(file);
            Some(mounts)
        } else {
            None
        };
        let init = isolate.then(|| {
            let mut cgroup_procs = Vec::new();
            cgroup_procs.extend(v2.map(|dir| dir.join("cgroup.procs")));
            cgroup_procs.extend(limits.folders().iter().map(|dir| dir.join("cgroup.procs")));
            Init {
                cgroup_procs: cgroup_procs
                    .iter()
                    .filter_map(|p| {
                        std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
                            p.as_os_str(),
                        ))
                        .ok()
                    })
                    .collect(),
                strings: super::child::own_strings(),
            }
        });
        #[cfg(target_os = "linux")]
        let seccomp = if network_off && available(Wall::Seccomp, sandbox)? {
            Some(no_unix_sockets()?)
        } else {
            None
        };
        let user_maps = ((network_off || mounts.is_some())
            && !rustix::process::geteuid().is_root())
        .then(UserMaps::own);
        let setup = ChildSetup {
            rlimits: limits.rlimits.clone(),
            network_off,
            bridge,
            user_maps,
            mounts,
            init,
            #[cfg(target_os = "linux")]
            ruleset: ruleset(sandbox, temp.path())?,
            #[cfg(target_os = "linux")]
            seccomp,
        };
        Ok(Self {
            temp,
            limits,
            setup: Some(SetupSlot(setup)),
            _empty: empty,
            inherit: sandbox.inherit_env.is_some().then(|| {
                std::env::vars_os()
                    .filter(|(name, _)| name.to_str().is_some_and(|n| sandbox.inherits(n)))
                    .collect()
            }),
            proxy,
        })
    }

    /// With `inheritEnv`: the host's variables the job keeps (the caller clears the
    /// environment and sets these before its own variables); `None` without it.
    pub fn inherited_env(&self) -> Option<&[(std::ffi::OsString, std::ffi::OsString)]> {
        self.inherit.as_deref()
    }

    /// The job's own temporary folder (always writable; removed with the value).
    pub fn temp_dir(&self) -> &Path {
        self.temp.path()
    }

    /// Whether the first process must wait at a start gate until [`JobSandbox::enter`].
    pub fn needs_gate(&self) -> bool {
        self.limits.needs_entry()
    }

    /// Moves the started (gated) process into the job's limit cgroups.
    ///
    /// # Errors
    /// [`SandboxError`] when a move fails (the caller stops the process).
    pub fn enter(&self, pid: u32) -> Result<(), SandboxError> {
        let pid = i32::try_from(pid).map_err(|_| SandboxError(format!("bad pid {pid}")))?;
        self.limits
            .enter(pid)
            .map_err(|e| SandboxError(format!("sandbox: {e}")))?;
        if let Some(door) = &self.proxy {
            door.open()?;
        }
        Ok(())
    }

    /// With the network by name: the line of what the proxy refused the job so far
    /// ([`Refusals::summary`], e.g. `network: 1 connection refused (127.0.0.1:8080)`);
    /// `None` when nothing was refused or the network is not by name.
    pub fn refusals(&self) -> Option<String> {
        self.proxy
            .as_ref()
            .and_then(|door| door.gate.refusals.summary())
    }

    /// Which limits stopped something of the job so far.
    pub fn hits(&self) -> LimitHits {
        self.limits.hits()
    }

    /// `command` with the confinement steps run in its child before `exec` (once: a second
    /// call returns `command` unchanged).
    pub fn confine_pty(&mut self, command: pty_process::Command) -> pty_process::Command {
        match self.setup.take() {
            Some(SetupSlot(setup)) => {
                let command = match &self.proxy {
                    Some(_) => command.envs(proxy_env()),
                    None => command,
                };
                super::child::install_pty(command, setup)
            }
            None => command,
        }
    }

    pub(crate) fn confine_tokio(&mut self, command: &mut tokio::process::Command) {
        if let Some(SetupSlot(setup)) = self.setup.take() {
            if self.proxy.is_some() {
                command.envs(proxy_env());
            }
            super::child::install_tokio(command, setup);
        }
    }
}

impl ProxyDoor {
    /// Receives the listener the job's first process sent before `exec` (so it is waiting
    /// once the spawn returned) and starts serving it on the current runtime.
    fn open(&self) -> Result<(), SandboxError> {
        use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        let failed = |what: String| SandboxError(format!("sandbox: the proxy {what}"));
        let mut serving = turnkit_core::lock(&self.serving);
        if serving.is_some() {
            return Ok(());
        }
        let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut byte = [0u8; 1];
        rustix::net::recvmsg(
            &self.channel,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
        )
        .map_err(|e| failed(format!("got no listener from the job: {e}")))?;
        let mut listener = None;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                for fd in fds {
                    listener.get_or_insert(fd);
                }
            }
        }
        let listener = listener.ok_or_else(|| failed("got no listener from the job".to_owned()))?;
        let handle = crate::net::serve(std::net::TcpListener::from(listener), self.gate.clone())
            .map_err(|e| failed(format!("could not serve: {e}")))?;
        *serving = Some(handle);
        Ok(())
    }
}

/// The Landlock ruleset: every write right handled (and, with `readableRoots`, every read
/// right), granted under the writable roots, the temporary folder and the devices (reads
/// also under the readable roots); with `isolateProcesses`, the signal and abstract Unix
/// socket scopes where the kernel has them (ABI 6).
#[cfg(target_os = "linux")]
fn ruleset(
    sandbox: &Sandbox,
    temp: &Path,
) -> Result<Option<landlock::RulesetCreated>, SandboxError> {
    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _,
        RulesetCreatedAttr as _, Scope, path_beneath_rules,
    };
    let level = if sandbox.best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    // ABI 3: every write right (including `Refer`, so links and renames cannot carry a
    // file out of the roots, and `Truncate`), but not ABI 5's device ioctls.
    let write = AccessFs::from_write(ABI::V3);
    let read = AccessFs::from_read(ABI::V3);
    let handled = if sandbox.readable_roots.is_empty() {
        write
    } else {
        write | read
    };
    let missing = |e: landlock::RulesetError| SandboxError(format!("sandbox: Landlock: {e}"));
    let mut paths: Vec<PathBuf> = sandbox.writable_roots.clone();
    paths.push(temp.to_path_buf());
    paths.extend(DEVICES.iter().map(PathBuf::from));
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(handled)
        .map_err(missing)?;
    if sandbox.isolate_processes && super::scopes_available() {
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(missing)?;
    }
    let mut created = ruleset
        .create()
        .map_err(missing)?
        .add_rules(path_beneath_rules(&paths, handled))
        .map_err(missing)?;
    if !sandbox.readable_roots.is_empty() {
        created = created
            .add_rules(path_beneath_rules(&sandbox.readable_roots, read))
            .map_err(missing)?;
    }
    Ok(Some(created))
}

/// The seccomp filter of a job without network: `socket(AF_UNIX, …)` and `io_uring_setup`
/// (whose operations would bypass the filter) fail with `EPERM`; everything else is allowed.
/// Compiled once, in the parent.
#[cfg(target_os = "linux")]
pub(super) fn no_unix_sockets() -> Result<seccompiler::BpfProgram, SandboxError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    static PROGRAM: std::sync::OnceLock<Result<BpfProgram, String>> = std::sync::OnceLock::new();
    let program = PROGRAM.get_or_init(|| {
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|e| format!("seccomp: {e}"))?;
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| format!("seccomp: {e}"))?;
        let rules = [
            (libc::SYS_socket, vec![unix]),
            (libc::SYS_io_uring_setup, Vec::new()),
        ]
        .into_iter()
        .collect();
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(|e| format!("seccomp: {e}"))?;
        filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| format!("seccomp: {e}"))
    });
    program
        .clone()
        .map_err(|e| SandboxError(format!("sandbox: {e}")))
}
