//! [`install`]: loads the subagent plugin into a host.

use std::sync::Arc;

use turnkit_core::{
    ConfigError, Harness, PluginConfig, Registration, RegistrationScope, SessionStore,
};
use turnkit_host::HostKit;
use turnkit_jobs::JobRegistry;

use crate::{AgentTool, ChildModel, SubagentConfig, Subagents};

/// What [`install`] registered; unloads when dropped or on [`Installed::dispose`].
#[must_use = "dropping Installed unregisters the agent tool at once"]
pub struct Installed {
    tool: Registration,
    subagents: Subagents,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("subagents", &self.subagents)
            .finish_non_exhaustive()
    }
}

impl Installed {
    /// The launcher behind the tool ([`Subagents::spawn`] starts a child directly).
    pub fn subagents(&self) -> &Subagents {
        &self.subagents
    }

    /// Unloads the plugin now (removes the `agent` tool). Idempotent. Children already
    /// started keep running under the registry (their owner's disposal or `job_kill` stops
    /// them).
    pub fn dispose(&self) {
        self.tool.unregister();
    }
}

/// Loads the subagent plugin: validates `config` and registers the `agent` tool globally in
/// `kit`. Children are published in `kit` (so tool routing, todo ownership and schedule's
/// roots-only rule apply to them), their sessions are created in `store`, their jobs are
/// registered in `jobs` (normally turnkit-jobs-local's registry, with turnkit-tool-jobs
/// installed for `job_output` / `job_kill` and the notices), and `model` runs their steps.
///
/// # Errors
/// [`ConfigError::Invalid`] from [`SubagentConfig::validate`]; [`ConfigError::Register`]
/// when an `agent` tool is already registered.
pub fn install(
    kit: &Arc<HostKit>,
    store: Arc<dyn SessionStore>,
    jobs: Arc<dyn JobRegistry>,
    model: Arc<dyn ChildModel>,
    config: SubagentConfig,
) -> Result<Installed, ConfigError> {
    config.validate()?;
    let subagents = Subagents::new(config, kit.clone(), store, jobs, model);
    let tool = kit.register_tool(
        Arc::new(AgentTool::new(subagents.clone())),
        RegistrationScope::Global,
    )?;
    Ok(Installed { tool, subagents })
}
