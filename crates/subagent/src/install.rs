//! [`install`]: loads the subagent plugin into a host.

use std::sync::{Arc, Weak};

use turnkit_core::{
    ConfigError, Harness, PluginConfig, Registration, RegistrationScope, SessionStore,
};
use turnkit_host::HostKit;
use turnkit_jobs::JobRegistry;

use crate::{AgentTool, ChildModel, SubagentConfig, Subagents};

/// What the subagent family needs from its host besides the job registry, found by
/// [`install`] in the host's service slot ([`Harness::services`]): the [`HostKit`] children
/// are published in (held weakly, so the slot never keeps its own host alive), the store
/// their sessions are created in, and the model that runs their steps. The host inserts it
/// before installing: `kit.services().insert(ChildHost::new(&kit, store, model))`.
#[derive(Clone)]
pub struct ChildHost {
    kit: Weak<HostKit>,
    store: Arc<dyn SessionStore>,
    model: Arc<dyn ChildModel>,
}

impl ChildHost {
    /// Children of `kit`, with sessions in `store`, run by `model`.
    pub fn new(
        kit: &Arc<HostKit>,
        store: Arc<dyn SessionStore>,
        model: Arc<dyn ChildModel>,
    ) -> Self {
        Self {
            kit: Arc::downgrade(kit),
            store,
            model,
        }
    }
}

impl std::fmt::Debug for ChildHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildHost").finish_non_exhaustive()
    }
}

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

/// Loads the subagent plugin: validates `config` and registers the `agent` tool globally on
/// `harness`. Children are published in the [`ChildHost`]'s kit (so tool routing, todo
/// ownership and schedule's roots-only rule apply to them), their sessions are created in
/// its store, their jobs are registered in the host's job registry (the
/// `Arc<dyn JobRegistry>` in the service slot: turnkit-jobs-local's, with turnkit-tool-jobs
/// installed for `job_output` / `job_kill` and the notices), and its model runs their steps.
///
/// # Errors
/// [`ConfigError::Invalid`] from [`SubagentConfig::validate`];
/// [`ConfigError::Invalid`] `subagent: no job registry on this host (install
/// turnkit-jobs-local first)` or `subagent: no ChildHost in this host's services (insert
/// one before install)` (also when its kit is gone); [`ConfigError::Register`] when an
/// `agent` tool is already registered.
pub fn install(
    harness: &Arc<dyn Harness>,
    config: SubagentConfig,
) -> Result<Installed, ConfigError> {
    config.validate()?;
    let jobs = harness
        .services()
        .get::<Arc<dyn JobRegistry>>()
        .ok_or_else(|| {
            ConfigError::Invalid(
                "subagent: no job registry on this host (install turnkit-jobs-local first)"
                    .to_owned(),
            )
        })?;
    let host = harness.services().get::<ChildHost>();
    let Some((kit, host)) = host.and_then(|host| Some((host.kit.upgrade()?, host))) else {
        return Err(ConfigError::Invalid(
            "subagent: no ChildHost in this host's services (insert one before install)".to_owned(),
        ));
    };
    let subagents = Subagents::new(config, kit, host.store, jobs, host.model);
    let tool = harness.register_tool(
        Arc::new(AgentTool::new(subagents.clone())),
        RegistrationScope::Global,
    )?;
    Ok(Installed { tool, subagents })
}
