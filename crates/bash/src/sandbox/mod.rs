//! Confined jobs (configuration key `sandbox`, opt-in): writes only under the writable roots
//! (Landlock), no network (a fresh network namespace with only its loopback), memory,
//! process count and CPU bounded by the job's cgroups (`RLIMIT_*` where no cgroup
//! controller exists). Set up in the child between `fork` and `exec`, with no external
//! binary, and inherited by everything the job starts. See `docs/process-containment.md`.
//!
//! One topic per file: `config` ([`Sandbox`]), `job` ([`JobSandbox`], one job's
//! confinement), `limits` (the cgroup limits and their counters), `child` (the steps run
//! before `exec`: the workspace's only `unsafe` code).

mod child;
mod config;
mod job;
mod limits;

pub use child::default_signals_pty;
pub use config::Sandbox;
pub use job::JobSandbox;
pub use limits::LimitHits;

use limits::{Controller, Via, available};

/// A confinement that cannot be provided (the message names what is missing), or a
/// failure preparing one. `Display` is the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

/// Whether this host can give a job a network namespace of its own: as root, or through
/// an unprivileged user namespace. `Ok(false)` only under `bestEffort`.
fn network_available(sandbox: &Sandbox) -> Result<bool, SandboxError> {
    let ns = std::path::Path::new("/proc/self/ns/net").exists();
    let root = rustix::process::geteuid().is_root();
    let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .is_some_and(|n| n > 0);
    if ns && (root || userns) {
        return Ok(true);
    }
    if sandbox.best_effort {
        return Ok(false);
    }
    Err(SandboxError(
        "sandbox: network off needs a network namespace (root, or user namespaces: \
         /proc/sys/user/max_user_namespaces is 0)"
            .to_owned(),
    ))
}

/// Whether this host can give a job the mount (and PID) namespaces that `denyRead` and
/// `isolateProcesses` ask for; `Ok(true)` when neither is asked for. `Ok(false)` only under
/// `bestEffort`.
fn namespaces_available(sandbox: &Sandbox) -> Result<bool, SandboxError> {
    if sandbox.deny_read.is_empty() && !sandbox.isolate_processes {
        return Ok(true);
    }
    let ns = std::path::Path::new("/proc/self/ns/mnt").exists()
        && std::path::Path::new("/proc/self/ns/pid").exists();
    let root = rustix::process::geteuid().is_root();
    let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .is_some_and(|n| n > 0);
    if ns && (root || userns) {
        return Ok(true);
    }
    if sandbox.best_effort {
        return Ok(false);
    }
    Err(SandboxError(
        "sandbox: denyRead and isolateProcesses need mount and PID namespaces (root, or user \
         namespaces: /proc/sys/user/max_user_namespaces is 0)"
            .to_owned(),
    ))
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
    match landlock_available() {
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
        match landlock_available() {
            Ok(()) => parts.push(format!("{reads} (Landlock)")),
            Err(error) if sandbox.best_effort => {
                missing.push(format!("read confinement ({error})"));
            }
            Err(error) => return Err(SandboxError(format!("sandbox: {error}"))),
        }
    }
    if sandbox.network {
        parts.push("network on".to_owned());
    } else if network_available(sandbox)? {
        parts.push("network off (network namespace, loopback only)".to_owned());
        parts.push("no Unix sockets (seccomp)".to_owned());
    } else {
        missing.push("network off (no network namespace)".to_owned());
    }
    let hidden: Vec<String> = sandbox
        .deny_read
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if namespaces_available(sandbox)? {
        if !hidden.is_empty() {
            parts.push(format!("hidden: {} (mount namespace)", hidden.join(", ")));
        }
        if sandbox.isolate_processes {
            parts.push("processes isolated (PID namespace, own /proc and /dev/pts)".to_owned());
            if scopes_available() {
                parts.push(
                    "no signals or abstract Unix sockets outside the job (Landlock scopes)"
                        .to_owned(),
                );
            } else {
                missing.push("signal and abstract socket scopes (Landlock ABI 6)".to_owned());
            }
        }
    } else {
        if !hidden.is_empty() {
            missing.push(format!(
                "hidden: {} (no mount namespace)",
                hidden.join(", ")
            ));
        }
        if sandbox.isolate_processes {
            missing.push("processes isolated (no PID namespace)".to_owned());
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
        let via =
            available_v2_enabled(controller, v2.as_deref()).or_else(|| available(controller, None));
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
    let mut summary = format!("sandbox: {}", parts.join("; "));
    if !missing.is_empty() {
        summary.push_str(&format!("; not in force: {}", missing.join(", ")));
    }
    Ok(summary)
}

/// Whether a job cgroup v2 made under `parent` would have `controller` (it is listed in the
/// parent's `cgroup.subtree_control`).
fn available_v2_enabled(controller: Controller, parent: Option<&std::path::Path>) -> Option<Via> {
    let control = std::fs::read_to_string(parent?.join("cgroup.subtree_control")).ok()?;
    control
        .split_whitespace()
        .any(|c| c == controller.name())
        .then_some(Via::CgroupV2)
}

#[cfg(target_os = "linux")]
fn landlock_available() -> Result<(), String> {
    use landlock::{ABI, AccessFs, CompatLevel, Compatible as _, Ruleset, RulesetAttr as _};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V3))
        .and_then(Ruleset::create)
        .map(drop)
        .map_err(|e| format!("Landlock ABI 3 or later is needed: {e}"))
}

/// Whether this kernel's Landlock has the signal and abstract Unix socket scopes (ABI 6).
#[cfg(target_os = "linux")]
fn scopes_available() -> bool {
    use landlock::{CompatLevel, Compatible as _, Ruleset, RulesetAttr as _, Scope};
    static SCOPES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SCOPES.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .and_then(Ruleset::create)
            .is_ok()
    })
}

#[cfg(not(target_os = "linux"))]
fn scopes_available() -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
fn landlock_available() -> Result<(), String> {
    Err("Landlock is Linux only".to_owned())
}
