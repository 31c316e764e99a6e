//! Confined jobs (configuration key `sandbox`, opt-in): writes only under the writable roots
//! (Landlock), no network (a fresh network namespace with only its loopback), memory,
//! process count and CPU bounded by the job's cgroups (`RLIMIT_*` where no cgroup
//! controller exists). Set up in the child between `fork` and `exec`, with no external
//! binary, and inherited by everything the job starts. See `docs/process-containment.md`.
//!
//! One topic per file: `config` ([`Sandbox`]), `job` ([`JobSandbox`], one job's
//! confinement), `limits` (the cgroup limits and their counters), `protect` (the
//! protected paths inside the writable roots), `child` (the steps run
//! before `exec`: the workspace's only `unsafe` code).

mod child;
mod config;
mod job;
mod limits;
mod probe;
mod protect;

pub use child::default_signals_pty;
pub use config::Sandbox;
pub use job::JobSandbox;
pub use limits::LimitHits;
pub use probe::probe;
pub(crate) use probe::{Wall, available};
pub use protect::DEFAULT_PROTECTED;

use limits::{Controller, Via};

/// A confinement that cannot be provided (the message names what is missing), or a
/// failure preparing one. `Display` is the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

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
