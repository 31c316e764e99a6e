//! [`TerminalConfig`]: the terminal plugin's configuration.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnkit_bash::{Containment, DEFAULT_KILL_GRACE_MS, ProcessKeys, ProcessKeysMut, Sandbox};
use turnkit_core::{ConfigError, PluginConfig};

/// The plugin name, used as the prefix of configuration errors.
pub const PLUGIN_NAME: &str = "tool-terminal";

/// The smallest `maxResultBytes` (todo-jobs §6, PTY send).
pub const MIN_RESULT_BYTES: u64 = 64;

/// The default `maxResultBytes`: 256 KiB (todo-jobs §6, PTY send).
pub const DEFAULT_RESULT_BYTES: u64 = 256 * 1024;

/// Configuration of the terminal plugin. Every key is optional; unknown keys are rejected.
///
/// JSON keys (camelCase): `maxResultBytes`, `shell`, `cwd`, `env`, `rows`, `cols`,
/// `settleMs`, `defaultTimeoutMs`, `maxTimeoutMs`, `killGraceMs`, `containment`, `sandbox`,
/// `maxTerminalsPerOwner`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TerminalConfig {
    /// The cap of every model-facing result of a send, in UTF-8 bytes, status line
    /// included: the `outputLimitBytes` of each `pty-send` job (todo-jobs §6) and the cap of
    /// a foreground `terminal_send` result. Integer ≥ 64; default 262144 (256 KiB).
    pub max_result_bytes: u64,
    /// The program `terminal_start` runs when the call gives no `command` (it sees a
    /// terminal on stdin, so a shell is interactive). Default `bash`.
    pub shell: String,
    /// Working directory of every terminal; default: the host process's.
    pub cwd: Option<PathBuf>,
    /// Variables set in every terminal on top of the host's environment. `TERM` defaults to
    /// `dumb` (programs then print few escape sequences) unless set here.
    pub env: BTreeMap<String, String>,
    /// Terminal height in rows. 1 ..= 1000; default 24.
    pub rows: u16,
    /// Terminal width in columns. 1 ..= 1000; default 200 (wide, so programs seldom wrap).
    pub cols: u16,
    /// How long the output must stay quiet before a send without `wait_for` ends, in
    /// milliseconds on the host clock, when the call gives no `settle_ms`. ≥ 1; default 500.
    pub settle_ms: u64,
    /// The longest a send waits for its response when the call gives no `timeout_ms`, in
    /// milliseconds. ≥ 1; default 30000.
    pub default_timeout_ms: u64,
    /// Cap on a call's `timeout_ms`. ≥ `defaultTimeoutMs`; default 600000.
    pub max_timeout_ms: u64,
    /// Milliseconds between SIGHUP + SIGTERM and SIGKILL when a terminal is stopped.
    /// Integer ≥ 0; default 2000.
    pub kill_grace_ms: u64,
    /// How each terminal's process tree is contained, as for bash jobs: `"auto"` (default)
    /// or `"processTree"` (see `docs/process-containment.md`).
    pub containment: Containment,
    /// The confinement of every terminal, as for bash jobs ([`Sandbox`]); absent (the
    /// default): none. Checked at install: a confinement the host cannot provide is a
    /// startup error unless `bestEffort`.
    pub sandbox: Option<Sandbox>,
    /// Terminals one owner may have open at once (exited ones count until killed or their
    /// owner is disposed). ≥ 1; default 8.
    pub max_terminals_per_owner: u64,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            max_result_bytes: DEFAULT_RESULT_BYTES,
            shell: "bash".to_owned(),
            cwd: None,
            env: BTreeMap::new(),
            rows: 24,
            cols: 200,
            settle_ms: 500,
            default_timeout_ms: 30_000,
            max_timeout_ms: 600_000,
            kill_grace_ms: DEFAULT_KILL_GRACE_MS,
            containment: Containment::Auto,
            sandbox: None,
            max_terminals_per_owner: 8,
        }
    }
}

impl TerminalConfig {
    /// With `maxResultBytes` set.
    #[must_use]
    pub fn with_max_result_bytes(mut self, max_result_bytes: u64) -> Self {
        self.max_result_bytes = max_result_bytes;
        self
    }

    /// With `shell` set.
    #[must_use]
    pub fn with_shell(mut self, shell: impl Into<String>) -> Self {
        self.shell = shell.into();
        self
    }

    /// With `settleMs` set.
    #[must_use]
    pub fn with_settle_ms(mut self, settle_ms: u64) -> Self {
        self.settle_ms = settle_ms;
        self
    }

    /// With `defaultTimeoutMs` set.
    #[must_use]
    pub fn with_default_timeout_ms(mut self, default_timeout_ms: u64) -> Self {
        self.default_timeout_ms = default_timeout_ms;
        self
    }

    /// With `maxTerminalsPerOwner` set.
    #[must_use]
    pub fn with_max_terminals_per_owner(mut self, max: u64) -> Self {
        self.max_terminals_per_owner = max;
        self
    }

    /// Decodes and validates the configuration from JSON.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] prefixed `tool-terminal: ` for a decode failure (unknown
    /// key, wrong type) or a failed [`TerminalConfig::validate`].
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }
}

/// `cwd`, `env`, `killGraceMs`, `containment` and `sandbox` mean what they mean for bash.
impl ProcessKeys for TerminalConfig {
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

impl PluginConfig for TerminalConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;

    /// Checks the ranges above.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with `tool-terminal: <key> must be <rule>, got <value>`,
    /// e.g. `tool-terminal: maxResultBytes must be an integer ≥ 64, got 63`.
    fn validate(&self) -> Result<(), ConfigError> {
        let fail = |key: &str, rule: &str, got: &dyn std::fmt::Display| {
            Err(Self::invalid(format_args!(
                "{key} must be {rule}, got {got}"
            )))
        };
        if self.max_result_bytes < MIN_RESULT_BYTES || self.max_result_bytes > (1 << 53) - 1 {
            return fail(
                "maxResultBytes",
                "an integer ≥ 64 and ≤ 2^53−1",
                &self.max_result_bytes,
            );
        }
        if self.shell.is_empty() {
            return fail("shell", "a non-empty program name", &"\"\"");
        }
        if !(1..=1000).contains(&self.rows) {
            return fail("rows", "an integer from 1 to 1000", &self.rows);
        }
        if !(1..=1000).contains(&self.cols) {
            return fail("cols", "an integer from 1 to 1000", &self.cols);
        }
        if self.settle_ms == 0 {
            return fail("settleMs", "an integer ≥ 1", &self.settle_ms);
        }
        if self.default_timeout_ms == 0 {
            return fail(
                "defaultTimeoutMs",
                "an integer ≥ 1",
                &self.default_timeout_ms,
            );
        }
        if self.max_timeout_ms < self.default_timeout_ms {
            return fail(
                "maxTimeoutMs",
                "an integer ≥ defaultTimeoutMs",
                &self.max_timeout_ms,
            );
        }
        if let Some(sandbox) = &self.sandbox {
            sandbox.validate().map_err(Self::invalid)?;
        }
        if self.max_terminals_per_owner == 0 {
            return fail(
                "maxTerminalsPerOwner",
                "an integer ≥ 1",
                &self.max_terminals_per_owner,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_and_range_errors() {
        assert_eq!(
            TerminalConfig::from_json(json!({})).unwrap(),
            TerminalConfig::default()
        );
        assert_eq!(TerminalConfig::default().max_result_bytes, 262_144);
        assert_eq!(
            TerminalConfig::from_json(json!({"maxResultBytes": 63})).unwrap_err(),
            ConfigError::Invalid(
                "tool-terminal: maxResultBytes must be an integer ≥ 64 and ≤ 2^53−1, got 63"
                    .to_owned()
            )
        );
        assert!(TerminalConfig::from_json(json!({"maxResultBytes": 64})).is_ok());
        assert_eq!(
            TerminalConfig::from_json(json!({"maxTimeoutMs": 10})).unwrap_err(),
            ConfigError::Invalid(
                "tool-terminal: maxTimeoutMs must be an integer ≥ defaultTimeoutMs, got 10"
                    .to_owned()
            )
        );
        let unknown = TerminalConfig::from_json(json!({"maxResultByte": 64})).unwrap_err();
        assert!(
            unknown
                .to_string()
                .starts_with("tool-terminal: unknown field `maxResultByte`"),
            "{unknown}"
        );
    }
}
