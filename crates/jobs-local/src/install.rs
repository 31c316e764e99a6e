//! [`install`]: the plugin entry point, one call that registers the family with a host.

use std::sync::Arc;

use turnkit_core::{ConfigError, Harness, LifecycleEvent, RegisterError, Registration};
use turnkit_jobs::JobRegistry;

use crate::{HarnessAgents, JobsConfig, LocalJobRegistry};

/// The installed registry. Owns it: [`Installed::dispose`] (or dropping, which starts the
/// same disposal on the current tokio runtime) tears it down (§4.9); dropping it also frees
/// the host's registry slot ([`Harness::services`]).
#[must_use = "dropping Installed disposes the job registry at once"]
pub struct Installed {
    registry: LocalJobRegistry,
    /// The registry's entry in the host's service slot, removed on drop.
    slot: Registration,
    /// With the journal on: the subscription that reads each published agent's journal.
    lifecycle: Option<Registration>,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("registry", &self.registry)
            .finish()
    }
}

impl Installed {
    /// The registry as the seam other plugins use (tool-jobs, bash).
    pub fn registry(&self) -> Arc<dyn JobRegistry> {
        Arc::new(self.registry.clone())
    }

    /// The concrete registry.
    pub fn local(&self) -> &LocalJobRegistry {
        &self.registry
    }

    /// The number of the registry's tasks still alive ([`LocalJobRegistry::running_tasks`]);
    /// 0 once [`Installed::dispose`] returned.
    pub fn running_tasks(&self) -> usize {
        self.registry.running_tasks()
    }

    /// Service disposal (§4.9), awaited: returns once every settlement was awaited and none
    /// of the registry's tasks is alive. Idempotent.
    pub async fn dispose(&self) {
        if let Some(lifecycle) = &self.lifecycle {
            lifecycle.unregister();
        }
        self.registry.dispose().await;
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.slot.unregister();
        if !self.registry.is_disposed()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // A drop cannot await: the disposal (which itself joins every task of the
            // registry) runs on its own task. Who needs the join awaits `dispose` instead.
            let registry = self.registry.clone();
            drop(runtime.spawn(async move { registry.dispose().await }));
        }
    }
}

/// Installs the local job registry for `harness` (todo-jobs §4): validates `config`, then
/// creates a [`LocalJobRegistry`] that stamps times and measures waits with the host's clock
/// and checks owners against the host's live agents (held weakly). With `journal: true` it
/// also subscribes to the host's agent lifecycle and calls
/// [`LocalJobRegistry::session_opened`] for every agent published. The registry is provided
/// in the host's service slot as an `Arc<dyn JobRegistry>` (one registry per host context,
/// todo-jobs §3.2 / C-033): the families that start jobs find it there.
///
/// # Errors
/// [`ConfigError::Invalid`] for a bad configuration (see [`JobsConfig::limits`]);
/// [`ConfigError::Register`] with `RegisterError::Conflict("service \"jobs\" is already
/// registered")` when this host's service slot already holds an `Arc<dyn JobRegistry>`
/// (C-033).
pub fn install(harness: &Arc<dyn Harness>, config: JobsConfig) -> Result<Installed, ConfigError> {
    let limits = config.limits()?;
    let conflict = || {
        ConfigError::Register(RegisterError::Conflict(
            "service \"jobs\" is already registered".to_owned(),
        ))
    };
    if harness.services().contains::<Arc<dyn JobRegistry>>() {
        return Err(conflict());
    }
    let registry = LocalJobRegistry::new(
        limits,
        harness.clock(),
        Some(Arc::new(HarnessAgents::new(harness))),
    );
    let slot = harness
        .services()
        .provide::<Arc<dyn JobRegistry>>(Arc::new(registry.clone()))
        .map_err(|_| conflict())?;
    let lifecycle = registry.limits().journal.then(|| {
        let weak = registry.downgrade();
        harness.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
            if let LifecycleEvent::Created(agent) = event
                && let Some(registry) = LocalJobRegistry::upgrade(&weak)
            {
                registry.session_opened(agent);
            }
        }))
    });
    Ok(Installed {
        registry,
        slot,
        lifecycle,
    })
}
