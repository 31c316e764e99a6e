//! [`probe`]: what a sandbox gives on this host, each wall tried for real once per process
//! (a confined `true` started with only that wall must exit 0), and the whole confinement
//! tried once per call. Nothing is trusted from the euid or a sysctl: root without
//! `CAP_SYS_ADMIN` (a container's default) cannot `unshare`, and that is found here.

use std::sync::OnceLock;

use super::child::{ChildSetup, Init, Mounts, UserMaps};
use super::limits::Controller;
use super::{JobSandbox, Sandbox, SandboxError};

/// A wall that needs the kernel's cooperation beyond Landlock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wall {
    /// A network namespace of the job's own (with its loopback up).
    Network,
    /// A mount namespace with a hidden folder.
    Mounts,
    /// A PID namespace with its own `/proc` and `/dev/pts`.
    Pids,
    /// The seccomp filter of `network: false`.
    Seccomp,
}

impl Wall {
    fn what(self) -> &'static str {
        match self {
            Wall::Network => "network off needs a network namespace of the job's own",
            Wall::Mounts => "denyRead and protectedPaths need a mount namespace of the job's own",
            Wall::Pids => "isolateProcesses needs a PID namespace of the job's own",
            Wall::Seccomp => "network off needs a seccomp filter",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Whether `wall` can be built here (tried once per process). `Ok(false)` only under
/// `bestEffort`.
///
/// # Errors
/// [`SandboxError`] saying which key needs what and why it failed, e.g. `sandbox:
/// isolateProcesses needs a PID namespace of the job's own, and a confined process could
/// not start with one here: Operation not permitted (os error 1)`.
pub(crate) fn available(wall: Wall, sandbox: &Sandbox) -> Result<bool, SandboxError> {
    static TRIED: [OnceLock<Result<(), String>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    match TRIED[wall.index()].get_or_init(|| try_wall(wall)) {
        Ok(()) => Ok(true),
        Err(_) if sandbox.best_effort => Ok(false),
        Err(error) => Err(SandboxError(format!(
            "sandbox: {}, and a confined process could not start with one here: {error}",
            wall.what()
        ))),
    }
}

fn user_maps() -> Option<UserMaps> {
    (!rustix::process::geteuid().is_root()).then(UserMaps::own)
}

/// Starts `true` with only `wall` set up.
fn try_wall(wall: Wall) -> Result<(), String> {
    let mut setup = ChildSetup::nothing();
    let folder = tempfile::Builder::new()
        .prefix("harness-probe-")
        .tempdir()
        .map_err(|e| format!("no temporary folder: {e}"))?;
    let empty = folder.path().join("empty");
    std::fs::write(&empty, "").map_err(|e| format!("no empty file: {e}"))?;
    let hidden = folder.path().join("hidden");
    std::fs::create_dir(&hidden).map_err(|e| format!("no folder to hide: {e}"))?;
    match wall {
        Wall::Network => {
            setup.network_off = true;
            setup.user_maps = user_maps();
        }
        Wall::Mounts | Wall::Pids => {
            let deny = if wall == Wall::Mounts {
                vec![hidden]
            } else {
                Vec::new()
            };
            setup.mounts = Some(Mounts::prepare(&deny, &[], folder.path(), &empty)?);
            setup.user_maps = user_maps();
            if wall == Wall::Pids {
                setup.init = Some(Init {
                    cgroup_procs: Vec::new(),
                    strings: super::child::own_strings(),
                });
            }
        }
        Wall::Seccomp => {
            #[cfg(target_os = "linux")]
            {
                setup.seccomp = Some(super::job::no_unix_sockets().map_err(|e| e.0)?);
            }
        }
    }
    let mut command = std::process::Command::new("true");
    super::child::install_std(&mut command, setup);
    run_true(&mut command)
}

fn run_true(command: &mut std::process::Command) -> Result<(), String> {
    use std::process::Stdio;
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("a confined `true` ended with {status}"))
    }
}

/// The protected paths in words (`git hooks and config, shell start files, .mcp.json and
/// editor tasks and settings inside the writable roots`, or the configured entries), then the
/// `denyWrite` paths; `None` when nothing is protected.
fn describe_protected(sandbox: &Sandbox) -> Option<String> {
    let mut parts = Vec::new();
    if !sandbox.writable_roots.is_empty() {
        match &sandbox.protected_paths {
            None => parts.push(
                "git hooks and config, shell start files, .mcp.json and editor tasks and \
                 settings inside the writable roots"
                    .to_owned(),
            ),
            Some(entries) if !entries.is_empty() => {
                parts.push(format!("{} inside the writable roots", entries.join(", ")));
            }
            Some(_) => {}
        }
    }
    parts.extend(sandbox.deny_write.iter().map(|p| p.display().to_string()));
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `allow a, b; deny c; ports 443, 80` (the parts present).
fn describe_policy(policy: &crate::NetworkPolicy) -> String {
    let mut text = format!("allow {}", policy.allow.join(", "));
    if !policy.deny.is_empty() {
        text.push_str(&format!("; deny {}", policy.deny.join(", ")));
    }
    if !policy.ports.is_empty() {
        let ports: Vec<String> = policy.ports.iter().map(u16::to_string).collect();
        text.push_str(&format!("; ports {}", ports.join(", ")));
    }
    text
}

/// Starts `true` with the whole confinement of `sandbox` (its limits aside, which are
/// checked on their own): the walls may each work and still not together.
fn try_whole(sandbox: &Sandbox) -> Result<(), SandboxError> {
    let mut whole = sandbox.clone();
    whole.memory_max_bytes = None;
    whole.pids_max = None;
    whole.cpu_max = None;
    let mut job = JobSandbox::prepare_for(&whole, None, "probe")?;
    let mut command = tokio::process::Command::new("true");
    command.env("TMPDIR", job.temp_dir());
    job.confine_tokio(&mut command);
    run_true(command.as_std_mut())
        .map_err(|e| SandboxError(format!("sandbox: {e} (every wall at once)")))
}

/// What a sandbox gives on this host, checked at install (a startup check, so a missing
/// confinement is refused before any job runs). `summary` is one line for the tool
/// description and the server's instructions, e.g. `sandbox: writes only under /srv and
/// the job's temporary folder (Landlock); network off (network namespace); pids ≤ 64
/// (cgroup v1)`; under `bestEffort` it ends with `; not in force: …` for what is left out.
///
/// # Errors
/// [`SandboxError`] naming the first confinement this host cannot provide, unless
/// `bestEffort`.
pub fn probe(sandbox: &Sandbox) -> Result<String, SandboxError> {
    sandbox.validate().map_err(SandboxError)?;
    let mut parts = Vec::new();
    let mut missing = Vec::new();
    let roots: Vec<String> = sandbox
        .writable_roots
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let writes = if roots.is_empty() {
        "writes only in the job's temporary folder".to_owned()
    } else {
        format!(
            "writes only under {} and the job's temporary folder",
            roots.join(", ")
        )
    };
    match super::landlock_available() {
        Ok(()) => parts.push(format!("{writes} (Landlock)")),
        Err(error) if sandbox.best_effort => missing.push(format!("write confinement ({error})")),
        Err(error) => return Err(SandboxError(format!("sandbox: {error}"))),
    }
    if !sandbox.readable_roots.is_empty() {
        let roots: Vec<String> = sandbox
            .readable_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let reads = format!(
            "reads only under {}, the writable roots, the job's temporary folder and the devices",
            roots.join(", ")
        );
        match super::landlock_available() {
            Ok(()) => parts.push(format!("{reads} (Landlock)")),
            Err(error) if sandbox.best_effort => {
                missing.push(format!("read confinement ({error})"));
            }
            Err(error) => return Err(SandboxError(format!("sandbox: {error}"))),
        }
    }
    let by_name = sandbox.network.policy().map(describe_policy);
    if !sandbox.network.isolated() {
        parts.push("network on".to_owned());
    } else if available(Wall::Network, sandbox)? {
        match &by_name {
            Some(policy) => parts.push(format!(
                "network by name: {policy} (network namespace, loopback only; the server's \
                 HTTP and SOCKS5 proxy on 127.0.0.1:{})",
                crate::net::PROXY_PORT
            )),
            None => parts.push("network off (network namespace, loopback only)".to_owned()),
        }
        if available(Wall::Seccomp, sandbox)? {
            parts.push("no Unix sockets (seccomp)".to_owned());
        } else {
            missing.push("no Unix sockets (no seccomp)".to_owned());
        }
    } else if let Some(policy) = &by_name {
        missing.push(format!("network by name: {policy} (no network namespace)"));
    } else {
        missing.push("network off (no network namespace)".to_owned());
    }
    if let Some(paths) = describe_protected(sandbox) {
        if available(Wall::Mounts, sandbox)? {
            parts.push(format!("read-only: {paths} (mount namespace)"));
        } else {
            missing.push(format!("read-only: {paths} (no mount namespace)"));
        }
    }
    let hidden: Vec<String> = sandbox
        .deny_read
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if !hidden.is_empty() {
        if available(Wall::Mounts, sandbox)? {
            parts.push(format!("hidden: {} (mount namespace)", hidden.join(", ")));
        } else {
            missing.push(format!(
                "hidden: {} (no mount namespace)",
                hidden.join(", ")
            ));
        }
    }
    if sandbox.isolate_processes {
        if available(Wall::Pids, sandbox)? {
            parts.push("processes isolated (PID namespace, own /proc and /dev/pts)".to_owned());
        } else {
            missing.push("processes isolated (no PID namespace)".to_owned());
        }
        if super::scopes_available() {
            parts.push(
                "no signals or abstract Unix sockets outside the job (Landlock scopes)".to_owned(),
            );
        } else {
            missing.push("signal and abstract socket scopes (Landlock ABI 6)".to_owned());
        }
    }
    if let Some(names) = &sandbox.inherit_env {
        parts.push(format!(
            "environment: only {} of the host's",
            names.join(", ")
        ));
    }
    let v2 = crate::contain::job_cgroup_parent();
    let wanted = [
        (
            Controller::Memory,
            sandbox
                .memory_max_bytes
                .map(|b| format!("memory ≤ {b} bytes")),
        ),
        (
            Controller::Pids,
            sandbox.pids_max.map(|n| format!("pids ≤ {n}")),
        ),
        (
            Controller::Cpu,
            sandbox
                .cpu_max
                .map(|c| format!("cpu ≤ {} CPUs", turnkit_jobs::format_js_number(c))),
        ),
    ];
    for (controller, text) in wanted {
        let Some(text) = text else { continue };
        let via = super::available_v2_enabled(controller, v2.as_deref())
            .or_else(|| super::limits::available(controller, None));
        match via {
            Some(via) => parts.push(format!("{text} ({})", via.describe())),
            None if sandbox.best_effort => missing.push(text),
            None => {
                return Err(SandboxError(format!(
                    "sandbox: the {} limit cannot be enforced here: no {} cgroup controller \
                     (cgroup v2 or v1) and no rlimit for it",
                    controller.name(),
                    controller.name()
                )));
            }
        }
    }
    try_whole(sandbox)?;
    let mut summary = format!("sandbox: {}", parts.join("; "));
    if !missing.is_empty() {
        summary.push_str(&format!("; not in force: {}", missing.join(", ")));
    }
    Ok(summary)
}
