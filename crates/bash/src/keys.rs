//! [`ProcessKeys`]: the configuration keys bash shares with every plugin that runs its
//! processes the same way (turnkit-terminal).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::{Containment, Sandbox};

/// The default `killGraceMs` of bash and the terminal: 2000 ms between the polite signals
/// and SIGKILL.
pub const DEFAULT_KILL_GRACE_MS: u64 = 2000;

/// The shared keys of a configuration, borrowed for [`ProcessKeys`]' builders.
#[derive(Debug)]
pub struct ProcessKeysMut<'a> {
    /// `cwd`: the working directory of every process; `None`: the host process's.
    pub cwd: &'a mut Option<PathBuf>,
    /// `env`: variables set for every process on top of the host's environment.
    pub env: &'a mut BTreeMap<String, String>,
    /// `killGraceMs`: milliseconds between the polite signals and SIGKILL.
    pub kill_grace_ms: &'a mut u64,
    /// `containment`: how each process tree is contained (`docs/process-containment.md`).
    pub containment: &'a mut Containment,
    /// `sandbox`: the confinement of every process (`None`: none).
    pub sandbox: &'a mut Option<Sandbox>,
}

/// The configuration keys `cwd`, `env`, `killGraceMs`, `containment` and `sandbox`, which bash and the
/// terminal read the same way: one set of builders for both. Each configuration keeps the
/// keys as its own fields, so its serde form (every key optional, unknown keys refused) is
/// unchanged.
///
/// ```
/// use turnkit_bash::{BashConfig, Containment, ProcessKeys};
/// let config = BashConfig::default()
///     .with_cwd("/srv")
///     .with_kill_grace_ms(30)
///     .with_containment(Containment::ProcessTree);
/// assert_eq!(config.kill_grace_ms, 30);
/// assert_eq!(config.cwd.as_deref(), Some(std::path::Path::new("/srv")));
/// ```
pub trait ProcessKeys: Sized {
    /// The shared keys of `self`.
    fn process_keys(&mut self) -> ProcessKeysMut<'_>;

    /// With `cwd` set.
    #[must_use]
    fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        *self.process_keys().cwd = Some(cwd.into());
        self
    }

    /// With `env` set.
    #[must_use]
    fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        *self.process_keys().env = env;
        self
    }

    /// With `killGraceMs` set.
    #[must_use]
    fn with_kill_grace_ms(mut self, kill_grace_ms: u64) -> Self {
        *self.process_keys().kill_grace_ms = kill_grace_ms;
        self
    }

    /// With `containment` set.
    #[must_use]
    fn with_containment(mut self, containment: Containment) -> Self {
        *self.process_keys().containment = containment;
        self
    }

    /// With `sandbox` set.
    #[must_use]
    fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        *self.process_keys().sandbox = Some(sandbox);
        self
    }
}
