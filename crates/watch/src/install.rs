//! [`install`]: loads the watch family into a host.

use std::sync::Arc;

use turnkit_core::{ConfigError, Harness, LifecycleEvent, Registration, RegistrationScope};
use turnkit_jobs::JobRegistry;

use crate::{WatchConfig, WatchTool, Watches};

/// What [`install`] registered; unloads when dropped or on [`Installed::dispose`].
#[must_use = "dropping Installed unregisters the watch tool at once"]
pub struct Installed {
    tool: Registration,
    lifecycle: Registration,
    watches: Watches,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("watches", &self.watches)
            .finish_non_exhaustive()
    }
}

impl Installed {
    /// The launcher behind the tool.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    /// Unloads the family now (removes `watch_create`). Idempotent. Watches already running
    /// keep running under the job registry, whose disposal stops them.
    pub fn dispose(&self) {
        self.tool.unregister();
        self.lifecycle.unregister();
    }

    /// [`Installed::dispose`]; the watches' tasks end when the registry's disposal cancels
    /// them (the same async shutdown as the other families).
    pub async fn shutdown(&self) {
        self.dispose();
    }
}

/// Loads the watch family: validates nothing more than [`WatchConfig::from_json`] did and
/// registers `watch_create` globally over the host's job registry (the
/// `Arc<dyn JobRegistry>` in [`Harness::services`]); without one every call fails with
/// [`crate::JOBS_UNAVAILABLE`]. Check watches run their commands through `runner` (bash's
/// launcher; `None`: refused with [`crate::CHECKS_UNAVAILABLE`]). The host clock measures
/// coalescing windows, check intervals and expiry.
///
/// Installed inside a tokio runtime, it also re-arms, for every agent the host publishes
/// (a session opened again after a restart), the path watches its session log says were
/// still armed when the previous host stopped; outside one it re-arms nothing.
///
/// # Errors
/// [`ConfigError::Register`] when a `watch_create` tool is already registered.
pub fn install(
    harness: &Arc<dyn Harness>,
    config: WatchConfig,
    runner: Option<turnkit_bash::BashJobs>,
) -> Result<Installed, ConfigError> {
    let jobs = harness.services().get::<Arc<dyn JobRegistry>>();
    let watches = Watches::new(config, harness.clock(), jobs).with_runner(runner);
    let tool = harness.register_tool(
        Arc::new(WatchTool::new(watches.clone())),
        RegistrationScope::Global,
    )?;
    let lifecycle = match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let rearming = watches.clone();
            harness.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
                if let LifecycleEvent::Created(agent) = event {
                    let watches = rearming.clone();
                    let agent = agent.clone();
                    drop(runtime.spawn(async move { watches.rearm(agent).await }));
                }
            }))
        }
        Err(_) => Registration::noop(),
    };
    Ok(Installed {
        tool,
        lifecycle,
        watches,
    })
}
