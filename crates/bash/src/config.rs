//! [`BashConfig`]: the plugin configuration (todo-jobs §6, decision 11).

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_core::{Clock, ConfigError, PluginConfig};

use crate::process::private_folder;
use crate::{
    Containment, DEFAULT_KILL_GRACE_MS, ProcessKeys, ProcessKeysMut, ProcessOptions, Sandbox,
    SpillOptions, SpillRetention,
};

/// The plugin name, used as the prefix of configuration errors.
pub const PLUGIN_NAME: &str = "tool-bash";

/// Configuration of the bash plugin. Every key is optional; unknown keys are rejected.
///
/// JSON keys (camelCase): `maxOutputBytes`, `maxSpillBytes`, `spillDir`, `keepSpillFiles`,
/// `killGraceMs`, `containment`, `sandbox`, `cwd`, `env`, `defaultTimeoutMs`, `maxTimeoutMs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct BashConfig {
    /// Unread bytes kept in memory per stream (stdout and stderr each); older unread bytes
    /// are dropped and the next read carries the dropped-output notice. Integer ≥ 1;
    /// default 1 MiB (1048576).
    pub max_output_bytes: u64,
    /// Bytes written to each spill file at most. Integer ≥ 0 (0 disables spill files, and
    /// the notice then says `(unavailable)`); default 64 MiB.
    pub max_spill_bytes: u64,
    /// The folder for spill files (decision 17); default: the per-user folder
    /// `<system temp dir>/harness-bash-<uid>`, created with mode 0700. A folder owned by
    /// another user or writable by group or others is refused: for the default folder a
    /// fresh private folder `<system temp dir>/harness-bash-<uid>-<random>` replaces it;
    /// for a configured one nothing is spilled (the notice says `(unavailable)`) and a
    /// warning is logged.
    pub spill_dir: Option<PathBuf>,
    /// Keep spill files when their job record is removed or the registry is disposed
    /// (default `false`: they are removed). Only with `spillDir`: files in the default
    /// folder are always removed.
    pub keep_spill_files: bool,
    /// Milliseconds between SIGTERM and SIGKILL when a job is cancelled. Integer ≥ 0;
    /// default 2000.
    pub kill_grace_ms: u64,
    /// How each job's process tree is contained (decision 13): `"auto"` (default: a cgroup
    /// v2 per job where the host can create one, else `"processTree"`) or `"processTree"`
    /// (environment marker and parent links in `/proc`, plus the process group).
    pub containment: Containment,
    /// The confinement of every job ([`Sandbox`]: writable roots, network, memory, process
    /// and CPU limits); absent (the default): none. Checked at install: a confinement the
    /// host cannot provide is a startup error unless `bestEffort`.
    pub sandbox: Option<Sandbox>,
    /// Working directory of every command; default: the host process's.
    pub cwd: Option<PathBuf>,
    /// Variables set for every command on top of the host's environment.
    pub env: BTreeMap<String, String>,
    /// Foreground wait when the call gives no `timeout_ms`, in milliseconds. > 0; default
    /// 120000.
    pub default_timeout_ms: f64,
    /// Cap on a foreground call's `timeout_ms`. ≥ `defaultTimeoutMs`; default 600000.
    pub max_timeout_ms: f64,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            max_output_bytes: crate::DEFAULT_MAX_OUTPUT_BYTES as u64,
            max_spill_bytes: crate::DEFAULT_MAX_SPILL_BYTES,
            spill_dir: None,
            keep_spill_files: false,
            kill_grace_ms: DEFAULT_KILL_GRACE_MS,
            containment: Containment::Auto,
            sandbox: None,
            cwd: None,
            env: BTreeMap::new(),
            default_timeout_ms: 120_000.0,
            max_timeout_ms: 600_000.0,
        }
    }
}

impl BashConfig {
    /// With `maxOutputBytes` set.
    #[must_use]
    pub fn with_max_output_bytes(mut self, max_output_bytes: u64) -> Self {
        self.max_output_bytes = max_output_bytes;
        self
    }

    /// With `maxSpillBytes` set.
    #[must_use]
    pub fn with_max_spill_bytes(mut self, max_spill_bytes: u64) -> Self {
        self.max_spill_bytes = max_spill_bytes;
        self
    }

    /// With `spillDir` set.
    #[must_use]
    pub fn with_spill_dir(mut self, spill_dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(spill_dir.into());
        self
    }

    /// With `keepSpillFiles` set.
    #[must_use]
    pub fn with_keep_spill_files(mut self, keep_spill_files: bool) -> Self {
        self.keep_spill_files = keep_spill_files;
        self
    }

    /// With `defaultTimeoutMs` (milliseconds) set.
    #[must_use]
    pub fn with_default_timeout_ms(mut self, default_timeout_ms: f64) -> Self {
        self.default_timeout_ms = default_timeout_ms;
        self
    }

    /// With `maxTimeoutMs` (milliseconds) set.
    #[must_use]
    pub fn with_max_timeout_ms(mut self, max_timeout_ms: f64) -> Self {
        self.max_timeout_ms = max_timeout_ms;
        self
    }

    /// Decodes and validates the configuration from JSON.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] prefixed `tool-bash: ` for a decode failure (unknown key,
    /// wrong type) or a failed [`BashConfig::validate`].
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }
}

impl ProcessKeys for BashConfig {
    fn process_keys(&mut self) -> ProcessKeysMut<'_> {
        ProcessKeysMut {
            cwd: &mut self.cwd,
            env: &mut self.env,
            kill_grace_ms: &mut self.kill_grace_ms,
            containment: &mut self.containment,
            sandbox: &mut self.sandbox,
        }
    }
}

impl PluginConfig for BashConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    /// Checks the ranges documented on the fields.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`], e.g. `tool-bash: maxOutputBytes (0) must be at least 1`,
    /// `tool-bash: defaultTimeoutMs (700000) exceeds maxTimeoutMs (600000)` or
    /// `tool-bash: keepSpillFiles needs spillDir (files in the default folder are always removed)`.
    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |message: String| Err(Self::invalid(message));
        if self.keep_spill_files && self.spill_dir.is_none() {
            return invalid(
                "keepSpillFiles needs spillDir (files in the default folder are always removed)"
                    .to_owned(),
            );
        }
        if let Some(sandbox) = &self.sandbox {
            sandbox.validate().map_err(Self::invalid)?;
        }
        if self.max_output_bytes == 0 {
            return invalid("maxOutputBytes (0) must be at least 1".to_owned());
        }
        if usize::try_from(self.max_output_bytes).is_err() {
            return invalid(format!(
                "maxOutputBytes ({}) is too large",
                self.max_output_bytes
            ));
        }
        for (key, value) in [
            ("defaultTimeoutMs", self.default_timeout_ms),
            ("maxTimeoutMs", self.max_timeout_ms),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return invalid(format!(
                    "{key} ({}) must be a positive number of milliseconds",
                    turnkit_jobs::format_js_number(value)
                ));
            }
        }
        if self.default_timeout_ms > self.max_timeout_ms {
            return invalid(format!(
                "defaultTimeoutMs ({}) exceeds maxTimeoutMs ({})",
                turnkit_jobs::format_js_number(self.default_timeout_ms),
                turnkit_jobs::format_js_number(self.max_timeout_ms)
            ));
        }
        Ok(())
    }
}

impl BashConfig {
    /// The grace between SIGTERM and SIGKILL.
    pub fn kill_grace(&self) -> Duration {
        Duration::from_millis(self.kill_grace_ms)
    }

    /// The spill folder: `spillDir`, or the per-user default folder (see
    /// [`BashConfig::spill_dir`]; prepared on the first call in this process).
    pub fn spill_folder(&self) -> PathBuf {
        self.spill_dir.clone().unwrap_or_else(default_spill_folder)
    }

    /// The process options for `command` under this configuration.
    pub fn process_options(&self, command: &str, clock: Arc<dyn Clock>) -> ProcessOptions {
        let mut options = ProcessOptions::new(command, clock);
        options.cwd = self.cwd.clone();
        options.env = self.env.clone();
        options.max_output_bytes = usize::try_from(self.max_output_bytes).unwrap_or(usize::MAX);
        options.spill = (self.max_spill_bytes > 0).then(|| SpillOptions {
            dir: self.spill_folder(),
            max_bytes: self.max_spill_bytes,
            retention: if self.keep_spill_files && self.spill_dir.is_some() {
                SpillRetention::Keep
            } else {
                SpillRetention::Remove
            },
        });
        options.kill_grace = self.kill_grace();
        options.containment = self.containment;
        options.sandbox = self.sandbox.clone().map(Arc::new);
        options
    }
}

/// `<system temp dir>/harness-bash-<uid>` if it is (or can be made) a private folder of
/// this user; otherwise a fresh `<system temp dir>/harness-bash-<uid>-<random>` (mode 0700),
/// chosen once per process.
fn default_spill_folder() -> PathBuf {
    static FOLDER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FOLDER
        .get_or_init(|| choose_default_folder(&std::env::temp_dir()))
        .clone()
}

/// `<temp>/harness-bash-<uid>` if it is (or can be made) a private folder of this user;
/// otherwise a fresh `<temp>/harness-bash-<uid>-<random>` created with mode 0700.
fn choose_default_folder(temp: &std::path::Path) -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    let shared = temp.join(format!("harness-bash-{uid}"));
    let refused = match private_folder(&shared) {
        Ok(()) => return shared,
        Err(refused) => refused,
    };
    let fresh = tempfile::Builder::new()
        .prefix(&format!("harness-bash-{uid}-"))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(temp)
        .map(tempfile::TempDir::keep);
    match fresh {
        Ok(fresh) => {
            tracing::warn!(
                "bash: refusing spill folder {}: {refused}; using {} instead",
                shared.display(),
                fresh.display()
            );
            fresh
        }
        // Spilling then fails on the refused folder, with its own warning.
        Err(_) => shared,
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
