//! [`Walls`]: what a server that runs other people's commands keeps out of reach of every job
//! and terminal of its sessions, added to the `sandbox` of every family that runs commands
//! (bash, and the terminal when it is served).

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use turnkit_core::ConfigError;

use crate::config::FamiliesConfig;

/// The variables a walled job inherits from the server when the operator gave no
/// `inheritEnv` (a trailing `*` is a prefix): what ordinary shell work needs, and nothing that
/// carries a credential.
pub const SAFE_ENV: [&str; 11] = [
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "PWD",
];

/// Whether an environment variable name (or an `inheritEnv` pattern) may carry one of the
/// server's secrets, so a walled job never inherits it: `HARNESS_*`, `PG*` (libpq's
/// `PGPASSWORD`, `PGPASSFILE`, …), `DATABASE_URL`, and any name containing `TOKEN`, `SECRET`,
/// `PASSWORD` or `KEY` (case-insensitive).
#[must_use]
pub fn secret_env_name(name: &str) -> bool {
    let upper = name.trim_end_matches('*').to_ascii_uppercase();
    // A pattern that is a prefix of a secret name (`P*`, `*`) would let it through too.
    let broad = name.ends_with('*')
        && ["HARNESS_", "PG", "DATABASE_URL"]
            .iter()
            .any(|secret| secret.starts_with(&upper));
    broad
        || upper.starts_with("HARNESS_")
        || upper.starts_with("PG")
        || upper == "DATABASE_URL"
        || ["TOKEN", "SECRET", "PASSWORD", "KEY"]
            .iter()
            .any(|word| upper.contains(word))
}

/// What the server hides from every job and terminal of its sessions (its own files); the
/// families add their own (bash's spill folder).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walls {
    /// Absolute paths hidden from every job (`sandbox.denyRead`): the session store's
    /// folder, the token file, the configuration file, the store's password files and socket
    /// folder, …
    pub deny_read: Vec<PathBuf>,
}

impl FamiliesConfig {
    /// This configuration with `walls` around every family that runs commands (bash always,
    /// the terminal when its object is present). Each family's `sandbox` keeps the operator's
    /// keys and gets:
    ///
    /// * `denyRead`: the operator's paths, then `walls.deny_read`, then bash's spill folder
    ///   (`spillDir` or the per-user default), without repeats;
    /// * `isolateProcesses: true` (a PID namespace with its own `/proc`);
    /// * `inheritEnv`: the operator's list without the names [`secret_env_name`] matches (a
    ///   warning names each one dropped), or [`SAFE_ENV`] when none was given.
    ///
    /// A family without a `sandbox` gets `{"writableRoots": ["/"], "network": true}` plus the
    /// walls: writes and the network stay as without a sandbox, except in the hidden paths.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when the bash configuration does not decode (its own message)
    /// or a `sandbox` is not an object.
    pub fn with_walls(mut self, walls: &Walls) -> Result<Self, ConfigError> {
        // The sandbox is decoded (and checked) by the family at install, with the walls in.
        let mut bash = self.family("bash");
        if let Value::Object(map) = &mut bash {
            map.remove("sandbox");
        }
        let spill = turnkit_bash::BashConfig::from_json(bash)?.spill_folder();
        let mut hidden = walls.deny_read.clone();
        hidden.push(spill);
        let bash = self.object_mut("bash");
        wall_sandbox(bash, "bash", &hidden)?;
        if self.object("terminal").is_some() {
            wall_sandbox(self.object_mut("terminal"), "terminal", &hidden)?;
        }
        Ok(self)
    }

    /// The sandbox summary of every family that runs commands and has a `sandbox` (the line
    /// the family's tool description carries), probed as the family's install probes it:
    /// `("bash", "sandbox: …")`, then the terminal's.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] when a configuration does not decode, or a sandbox cannot be
    /// built on this host (the probe's message) and is not `bestEffort`.
    pub fn sandbox_summaries(&self) -> Result<Vec<(&'static str, String)>, ConfigError> {
        use turnkit_core::PluginConfig as _;
        let mut summaries = Vec::new();
        let bash = turnkit_bash::BashConfig::from_json(self.family("bash"))?;
        if let Some(sandbox) = &bash.sandbox {
            let summary = turnkit_bash::probe_sandbox(sandbox)
                .map_err(|e| turnkit_bash::BashConfig::invalid(e.0))?;
            summaries.push(("bash", summary));
        }
        if self.object("terminal").is_some() {
            let terminal = turnkit_terminal::TerminalConfig::from_json(self.family("terminal"))?;
            if let Some(sandbox) = &terminal.sandbox {
                let summary = turnkit_bash::probe_sandbox(sandbox)
                    .map_err(|e| turnkit_terminal::TerminalConfig::invalid(e.0))?;
                summaries.push(("terminal", summary));
            }
        }
        Ok(summaries)
    }
}

/// Adds the walls to the `sandbox` of one family's object.
fn wall_sandbox(
    family: &mut Map<String, Value>,
    name: &str,
    hidden: &[PathBuf],
) -> Result<(), ConfigError> {
    let sandbox = family
        .entry("sandbox")
        .or_insert_with(|| json!({"writableRoots": ["/"], "network": true}));
    let Value::Object(sandbox) = sandbox else {
        return Err(ConfigError::Invalid(format!(
            "{name}.sandbox: expected an object"
        )));
    };
    let deny = sandbox
        .entry("denyRead")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(deny) = deny {
        for path in hidden {
            let path = Value::String(path.display().to_string());
            if !deny.contains(&path) {
                deny.push(path);
            }
        }
    }
    sandbox.insert("isolateProcesses".to_owned(), Value::Bool(true));
    let inherit = match sandbox.get("inheritEnv") {
        Some(Value::Array(names)) => names
            .iter()
            .filter(|entry| match entry.as_str() {
                Some(text) if secret_env_name(text) => {
                    tracing::warn!(
                        "{name}.sandbox.inheritEnv: {text} is left out: a served job never \
                         inherits the server's secrets"
                    );
                    false
                }
                _ => true,
            })
            .cloned()
            .collect(),
        _ => SAFE_ENV
            .iter()
            .map(|n| Value::String((*n).to_owned()))
            .collect(),
    };
    sandbox.insert("inheritEnv".to_owned(), Value::Array(inherit));
    Ok(())
}

#[cfg(test)]
#[path = "walls_tests.rs"]
mod tests;
