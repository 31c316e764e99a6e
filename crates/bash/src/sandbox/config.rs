//! [`Sandbox`]: the configuration key `sandbox` of bash and the terminal.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::Network;

/// What a confined job may do (configuration key `sandbox`; its presence turns the
/// confinement on, for every job and terminal of the plugin). JSON keys (camelCase):
/// `writableRoots`, `network`, `memoryMaxBytes`, `pidsMax`, `cpuMax`, `bestEffort`,
/// `denyRead`, `readableRoots`, `isolateProcesses`, `inheritEnv`, `protectedPaths`,
/// `denyWrite`; every key is optional,
/// unknown keys are refused. See `docs/process-containment.md` for what
/// each mechanism guarantees and what it does not.
///
/// ```
/// let sandbox: turnkit_bash::Sandbox = serde_json::from_value(serde_json::json!({
///     "writableRoots": ["/srv/work"], "memoryMaxBytes": 536870912, "pidsMax": 256
/// })).unwrap();
/// assert_eq!(sandbox.network, turnkit_bash::Network::Off);
/// assert_eq!(sandbox.cpu_max, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Sandbox {
    /// The folders (absolute paths, which must exist) under which a job may create, change
    /// and remove files; everywhere else writes fail with `EACCES` (Landlock). The job's own
    /// temporary folder (`TMPDIR`, removed with the job) and the terminal devices
    /// (`/dev/null`, `/dev/tty`, `/dev/pts`, …) are always writable. Default: none.
    pub writable_roots: Vec<PathBuf>,
    /// What the job may reach on the network ([`Network`]: `false`, `true`, a list of host
    /// names or a [`crate::NetworkPolicy`] object). `false` (the default under a sandbox): a
    /// fresh network namespace with only its own loopback, so a connect to any address
    /// outside fails (`ENETUNREACH`; a connect to 127.0.0.1 reaches only listeners of the
    /// job). By name: the same namespace, whose only way out is the server's proxy on the
    /// job's `127.0.0.1:3128` (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and their lower-case
    /// forms are set for the job), which lets through only the names and ports allowed.
    /// `true`: the host's network.
    pub network: Network,
    /// Memory of the whole job in bytes (cgroup `memory.max`, or v1
    /// `memory.limit_in_bytes`; without a memory cgroup, `RLIMIT_AS` per process). At least
    /// 1 MiB.
    pub memory_max_bytes: Option<u64>,
    /// Processes (and threads) of the whole job at once (cgroup `pids.max`; without a pids
    /// cgroup, `RLIMIT_NPROC`, which counts every process of the user and does not bind
    /// root). At least 1.
    pub pids_max: Option<u64>,
    /// CPU time of the whole job in CPUs (e.g. `0.5`: half of one CPU; cgroup `cpu.max`
    /// or v1 `cpu.cfs_quota_us` over a 100 ms period). Greater than 0; no fallback.
    pub cpu_max: Option<f64>,
    /// When `true`, a confinement this host cannot provide is left out instead of refusing
    /// to start; the `bash` tool's description and the install log say what is in force
    /// (the line of [`crate::probe_sandbox`], which a host can show in its instructions).
    pub best_effort: bool,
    /// Absolute paths hidden from the job (a mount namespace of its own, inside a user
    /// namespace when the host is not root): a folder is covered by an empty read-only
    /// folder, anything else (file, socket, device) by an empty read-only file, so what was
    /// there can be neither read, listed, written nor connected to. A symbolic link is
    /// followed (its target is hidden); a path that does not exist when a job starts is
    /// skipped for that job. It may not contain a writable root. Default: none.
    pub deny_read: Vec<PathBuf>,
    /// When non-empty, the folders (absolute paths, which must exist) under which a job may
    /// read files, list folders and execute programs (Landlock read rights); the writable
    /// roots, the job's temporary folder and the devices are always readable too, nothing
    /// else is (`EACCES`). A job usually needs the system's folders listed here (`/usr`,
    /// `/lib`, `/etc`, `/proc`, …). Default: empty, reads are not restricted.
    pub readable_roots: Vec<PathBuf>,
    /// When set, the job's environment keeps only these variables of the host's (exact
    /// names; a name ending in `*` keeps every variable starting with what precedes it),
    /// plus what the job itself is given (the configured `env`, `TMPDIR`, the job's marker,
    /// a terminal's `TERM`). Recommended: `["PATH", "HOME", "LANG", "LC_*", "TERM", "TZ",
    /// "USER", "LOGNAME", "SHELL"]`. Default: none (`null`), everything is inherited.
    pub inherit_env: Option<Vec<String>>,
    /// When `true`, the job gets a PID namespace of its own with its own `/proc`: it sees,
    /// signals and traces only its own processes (the host's and other jobs' are not in
    /// its `/proc`, and their pids name nothing in it), and a `/dev/pts` of its own (other
    /// jobs' terminals are not in it). The job's shell is pid 2 of the namespace; pid 1 is a
    /// small reaper that only waits. Where Landlock has scopes (ABI 6), the job can also not
    /// signal nor reach an abstract Unix socket of any process outside it. Default `false`.
    pub isolate_processes: bool,
    /// The paths, relative to each writable root, that stay read-only for the job (a
    /// read-only bind mount of each over itself in a mount namespace of the job's: writes
    /// fail with `EROFS`, "Read-only file system"), so a job cannot plant code that runs
    /// later outside its confinement. `null` (the default): [`DEFAULT_PROTECTED`]
    /// (`.git/hooks`, `.git/config`, the shell start files, `.mcp.json`,
    /// `.vscode/tasks.json`, `.vscode/settings.json`); a list replaces it (`[]`: none). Only
    /// what exists when a job starts is protected. Relative paths without `..`.
    ///
    /// [`DEFAULT_PROTECTED`]: crate::DEFAULT_PROTECTED
    pub protected_paths: Option<Vec<String>>,
    /// Absolute paths that stay read-only for the job like the protected paths (anywhere;
    /// outside the writable roots writes are refused anyway). Default: none.
    pub deny_write: Vec<PathBuf>,
}

impl Sandbox {
    /// The `protectedPaths` in force (the default list when unset).
    pub fn protected(&self) -> Vec<&str> {
        match &self.protected_paths {
            Some(entries) => entries.iter().map(String::as_str).collect(),
            None => super::protect::DEFAULT_PROTECTED.to_vec(),
        }
    }

    /// Whether the host's variable `name` is kept by `inheritEnv` (always without it).
    pub fn inherits(&self, name: &str) -> bool {
        match &self.inherit_env {
            None => true,
            Some(names) => names.iter().any(|kept| match kept.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == kept,
            }),
        }
    }

    /// Checks the ranges documented on the fields; the message names the key, e.g.
    /// `sandbox.writableRoots: "rel" is not an absolute path`.
    ///
    /// # Errors
    /// The message, without the plugin prefix.
    pub fn validate(&self) -> Result<(), String> {
        for root in &self.writable_roots {
            if !root.is_absolute() {
                return Err(format!(
                    "sandbox.writableRoots: {:?} is not an absolute path",
                    root.display().to_string()
                ));
            }
            if !root.exists() {
                return Err(format!(
                    "sandbox.writableRoots: {:?} does not exist",
                    root.display().to_string()
                ));
            }
        }
        for root in &self.readable_roots {
            if !root.is_absolute() {
                return Err(format!(
                    "sandbox.readableRoots: {:?} is not an absolute path",
                    root.display().to_string()
                ));
            }
            if !root.exists() {
                return Err(format!(
                    "sandbox.readableRoots: {:?} does not exist",
                    root.display().to_string()
                ));
            }
        }
        for name in self.inherit_env.iter().flatten() {
            let bare = name.strip_suffix('*').unwrap_or(name);
            if name.is_empty() || bare.contains(['=', '*', '\0']) {
                return Err(format!(
                    "sandbox.inheritEnv: {name:?} is not a variable name (or a prefix ending in *)"
                ));
            }
        }
        for hidden in &self.deny_read {
            if !hidden.is_absolute() {
                return Err(format!(
                    "sandbox.denyRead: {:?} is not an absolute path",
                    hidden.display().to_string()
                ));
            }
            if let Some(root) = self.writable_roots.iter().find(|r| r.starts_with(hidden)) {
                return Err(format!(
                    "sandbox.denyRead: {:?} would hide the writable root {:?}",
                    hidden.display().to_string(),
                    root.display().to_string()
                ));
            }
        }
        for entry in self.protected_paths.iter().flatten() {
            if !super::protect::is_relative_entry(entry) {
                return Err(format!(
                    "sandbox.protectedPaths: {entry:?} is not a relative path without .."
                ));
            }
        }
        for path in &self.deny_write {
            if !path.is_absolute() {
                return Err(format!(
                    "sandbox.denyWrite: {:?} is not an absolute path",
                    path.display().to_string()
                ));
            }
        }
        if let Some(policy) = self.network.policy() {
            policy.validate()?;
        }
        if let Some(bytes) = self.memory_max_bytes
            && bytes < 1024 * 1024
        {
            return Err(format!(
                "sandbox.memoryMaxBytes ({bytes}) must be at least 1048576"
            ));
        }
        if self.pids_max == Some(0) {
            return Err("sandbox.pidsMax (0) must be at least 1".to_owned());
        }
        if let Some(cpus) = self.cpu_max
            && !(cpus.is_finite() && cpus > 0.0 && cpus <= 4096.0)
        {
            return Err(format!(
                "sandbox.cpuMax ({}) must be a number of CPUs greater than 0",
                turnkit_jobs::format_js_number(cpus)
            ));
        }
        Ok(())
    }
}
