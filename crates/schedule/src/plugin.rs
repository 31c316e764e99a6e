//! The plugin entry point (schedule.md §14): [`install`] adopts every live root agent created
//! after it, giving each its three tools, a status listener and a delivery runtime.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::FutureExt;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::task::TaskTracker;
use turnkit_core::{
    Agent, AgentEvent, AgentKey, AgentStatus, ConfigError, Harness, HookId, LifecycleEvent,
    PluginConfig, Registration, lock,
};

use crate::PLUGIN_NAME;
use crate::domain::Calendar;
use crate::ledger::Ledger;
use crate::runtime::{DeliveryRuntime, Liveness};
use crate::tools::ScheduleTools;

/// Configuration of the schedule plugin: `{}` is the default (the spec's three selectors);
/// `{"cron": true}` adds calendar recurrence, a `cron` selector with an explicit
/// `time_zone` (docs/spec/schedule.md Appendix B). Unknown keys are rejected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ScheduleConfig {
    /// `cron`: whether `schedule_create` accepts the `cron` selector (default `false`: a
    /// `cron` key is `invalid_selector`, as without the switch).
    #[serde(default)]
    pub cron: bool,
}

impl ScheduleConfig {
    /// Decodes the configuration from JSON ([`PluginConfig::decode`]): `{}` or
    /// `{"cron": <bool>}`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] `schedule: <serde message>` for an unknown key or a
    /// non-boolean `cron`.
    pub fn from_json(value: impl Borrow<Value>) -> Result<Self, ConfigError> {
        Self::decode(value)
    }

    /// The default configuration with calendar recurrence switched on or off.
    pub const fn with_cron(mut self, cron: bool) -> Self {
        self.cron = cron;
        self
    }

    /// Whether `schedule_create` takes `cron`.
    pub(crate) const fn calendar(&self) -> Calendar {
        if self.cron {
            Calendar::Accepted
        } else {
            Calendar::Refused
        }
    }
}

/// Nothing to check beyond the keys.
impl PluginConfig for ScheduleConfig {
    const PLUGIN: &'static str = PLUGIN_NAME;
}

/// One adopted agent: what its cleanup undoes.
struct Adopted {
    agent: Arc<dyn Agent>,
    tools: Registration,
    status: Registration,
    runtime: Arc<DeliveryRuntime>,
    hook: Option<HookId>,
}

impl Adopted {
    /// Unsubscribes, unregisters the tools and stops the runtime (awaiting its in-flight pass).
    async fn cleanup(self) {
        self.status.unregister();
        self.tools.unregister();
        self.runtime.dispose().await;
    }
}

struct PluginInner {
    harness: Weak<dyn Harness>,
    config: ScheduleConfig,
    handle: tokio::runtime::Handle,
    /// Every delivery task this plugin spawned; [`Installed::dispose`] closes it and waits.
    tasks: TaskTracker,
    stopping: AtomicBool,
    adopted: Mutex<HashMap<AgentKey, Adopted>>,
}

/// The adoption key: the agent's identity (an [`Adopted`] entry holds the agent).
fn key_of(agent: &Arc<dyn Agent>) -> AgentKey {
    AgentKey::of(agent)
}

impl PluginInner {
    /// Adopts a newly published root agent (§14): tools in the agent's own scope, the status
    /// listener, the runtime, and a dispose hook that runs the cleanup.
    fn adopt(self: &Arc<Self>, agent: Arc<dyn Agent>) {
        if self.stopping.load(Ordering::SeqCst) || !agent.is_root() || agent.is_disposed() {
            return;
        }
        let key = key_of(&agent);
        if lock(&self.adopted).contains_key(&key) {
            return;
        }
        let Some(harness) = self.harness.upgrade() else {
            return;
        };
        let clock = harness.clock();
        let ledger = Arc::new(Ledger::new(agent.session()));
        let liveness = Liveness::new(self.harness.clone());
        let runtime = DeliveryRuntime::new(
            ledger.clone(),
            agent.clone(),
            clock.clone(),
            liveness,
            &self.handle,
            &self.tasks,
        );
        let notify_runtime = Arc::downgrade(&runtime);
        let notify: crate::tools::Notify = Arc::new(move || {
            if let Some(runtime) = notify_runtime.upgrade() {
                runtime.request_drive();
            }
        });
        let tools = ScheduleTools::with_ledger(agent.clone(), clock, ledger, notify, self.config);
        let tools = match tools.register(harness.as_ref()) {
            Ok(registration) => registration,
            Err(error) => {
                tracing::warn!(
                    "schedule: could not register tools for {}: {error}",
                    agent.id()
                );
                return;
            }
        };
        let idle_runtime = Arc::downgrade(&runtime);
        let status = agent.subscribe(Arc::new(move |event: &AgentEvent| {
            if let AgentEvent::Status(AgentStatus::Idle) = event
                && let Some(runtime) = idle_runtime.upgrade()
            {
                runtime.request_idle_check();
            }
        }));
        let weak_self = Arc::downgrade(self);
        let hook = agent
            .add_dispose_hook(Box::new(move || {
                async move {
                    if let Some(inner) = weak_self.upgrade() {
                        let entry = lock(&inner.adopted).remove(&key);
                        if let Some(entry) = entry {
                            entry.cleanup().await;
                        }
                    }
                }
                .boxed()
            }))
            .ok();
        runtime.start();
        lock(&self.adopted).insert(
            key,
            Adopted {
                agent,
                tools,
                status,
                runtime,
                hook,
            },
        );
    }

    /// Runs the cleanup of an agent that left without its hook running.
    fn forget(&self, agent: &Arc<dyn Agent>) {
        let entry = lock(&self.adopted).remove(&key_of(agent));
        if let Some(entry) = entry {
            entry.status.unregister();
            entry.tools.unregister();
            entry.runtime.stop();
        }
    }

    fn take_all(&self) -> Vec<Adopted> {
        self.stopping.store(true, Ordering::SeqCst);
        lock(&self.adopted)
            .drain()
            .map(|(_, entry)| entry)
            .collect()
    }
}

/// The installed schedule plugin. It owns the agent-lifecycle subscription and every adopted
/// agent's registrations and runtime. [`Installed::dispose`] stops accepting agents and awaits
/// every cleanup; dropping it does the same without awaiting in-flight passes.
#[must_use = "dropping Installed unloads the schedule plugin at once"]
pub struct Installed {
    inner: Arc<PluginInner>,
    lifecycle: Registration,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("agents", &lock(&self.inner.adopted).len())
            .finish()
    }
}

impl Installed {
    /// The number of agents currently adopted.
    pub fn adopted_agents(&self) -> usize {
        lock(&self.inner.adopted).len()
    }

    /// Whether the runtime of this agent has faulted (schedule §12.1: sticky until disposal).
    /// `None` when the agent is not adopted.
    pub fn is_faulted(&self, agent: &Arc<dyn Agent>) -> Option<bool> {
        lock(&self.inner.adopted)
            .get(&key_of(agent))
            .map(|entry| entry.runtime.is_faulted())
    }

    /// The number of the plugin's delivery tasks still alive (one per adopted agent while it
    /// runs); 0 once [`Installed::dispose`] returned.
    pub fn running_tasks(&self) -> usize {
        self.inner.tasks.len()
    }

    /// Stops accepting new agents and runs every adopted agent's cleanup (unsubscribe,
    /// unregister tools, stop the runtime and await its in-flight pass), then closes the
    /// plugin's task set and waits until none of its tasks is alive (a runtime stopped by
    /// its agent's own disposal included). Idempotent.
    pub async fn dispose(&self) {
        self.lifecycle.unregister();
        let entries = self.inner.take_all();
        for entry in entries {
            if let Some(hook) = entry.hook {
                // The agent no longer needs to run our cleanup; we run it now.
                drop(entry.agent.remove_dispose_hook(hook));
            }
            entry.cleanup().await;
        }
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.lifecycle.unregister();
        for entry in self.inner.take_all() {
            if let Some(hook) = entry.hook {
                drop(entry.agent.remove_dispose_hook(hook));
            }
            entry.status.unregister();
            entry.tools.unregister();
            entry.runtime.stop();
        }
    }
}

/// Installs the schedule plugin (schedule.md §14).
///
/// From now on, every live root agent the host publishes (and only those: not agents that
/// existed before, not subagents) gets `schedule_create`, `schedule_list` and
/// `schedule_delete` registered in its own scope, and one delivery runtime (§12) that starts
/// with a preflight at once. Cold sessions are never scanned or woken.
///
/// Must be called inside a tokio runtime: the delivery tasks are spawned on it.
///
/// # Errors
/// [`ConfigError::Invalid`] if the configuration is invalid or no tokio runtime is current.
pub fn install(
    harness: &Arc<dyn Harness>,
    config: ScheduleConfig,
) -> Result<Installed, ConfigError> {
    config.validate()?;
    let handle = tokio::runtime::Handle::try_current().map_err(|_| {
        ConfigError::Invalid("schedule: install must run inside a tokio runtime".to_owned())
    })?;
    let inner = Arc::new(PluginInner {
        harness: Arc::downgrade(harness),
        config,
        handle,
        tasks: TaskTracker::new(),
        stopping: AtomicBool::new(false),
        adopted: Mutex::new(HashMap::new()),
    });
    let weak = Arc::downgrade(&inner);
    let lifecycle = harness.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
        let Some(inner) = weak.upgrade() else { return };
        match event {
            LifecycleEvent::Created(agent) => inner.adopt(agent.clone()),
            LifecycleEvent::Disposed(agent) => inner.forget(agent),
        }
    }));
    Ok(Installed { inner, lifecycle })
}
