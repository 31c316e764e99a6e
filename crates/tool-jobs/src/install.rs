//! [`install`]: mounting tool-jobs on a host (todo-jobs §5.2, decision 1).

use std::sync::Arc;

use turnkit_core::{
    ConfigError, Harness, PluginConfig, PromptSection, RegisterError, Registration,
    RegistrationScope,
};
use turnkit_jobs::JobRegistry;

use crate::config::ToolJobsConfig;
use crate::delivery::Reporter;
use crate::text::{PLUGIN_NAME, PROMPT_SECTION_NAME, PROMPT_SECTION_ORDER, PROMPT_SECTION_TEXT};
use crate::tools::{JobKillTool, JobListTool, JobOutputTool};

/// A mounted tool-jobs. Dropping it (or calling [`Installed::dispose`]) detaches the
/// controller (so `start` fails the controller fence again for the owners it served),
/// removes the tools, the prompt section and the completion listener, and drops every
/// owner subscription.
#[must_use = "dropping Installed removes the job tools at once"]
pub struct Installed {
    registrations: Vec<Registration>,
    reporter: Arc<Reporter>,
    scope: RegistrationScope,
}

impl Installed {
    /// The scope this mount serves.
    pub fn scope(&self) -> &RegistrationScope {
        &self.scope
    }

    /// Unmounts now. Idempotent.
    pub fn dispose(&self) {
        self.reporter.close();
        for registration in self.registrations.iter().rev() {
            registration.unregister();
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.dispose();
    }
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Mounts tool-jobs globally: it serves every agent and unowned jobs. See [`install_scoped`].
///
/// # Errors
/// As [`install_scoped`].
pub fn install(
    harness: &Arc<dyn Harness>,
    config: ToolJobsConfig,
) -> Result<Installed, ConfigError> {
    install_scoped(harness, config, RegistrationScope::Global)
}

/// Mounts tool-jobs for `scope` (todo-jobs §5.2) over the host's job registry (the
/// `Arc<dyn JobRegistry>` in its service slot, [`Harness::services`], which
/// turnkit-jobs-local's `install` provides), in this order: validates `config`, finds the
/// registry, attaches the controller `tool-jobs`, registers the `tool:jobs` prompt section (order
/// 106), the completion listener, the lost-jobs listener (the job journal), and the tools `job_output`, `job_list`, `job_kill`. Every
/// registration is made for `scope` and lives as long as the returned [`Installed`].
///
/// Under `wakeup` delivery the mount subscribes to an owner's agent events when it first
/// delivers a notice to it, to reset the wake budget on a claimed user message and to move
/// stranded notices to a followup (decision 12). Under `quiet` it listens to nothing.
///
/// # Errors
/// - [`ConfigError::Invalid`] with the exact load-time messages of [`ToolJobsConfig::validate`];
///   nothing is registered.
/// - [`ConfigError::Invalid`] `tool-jobs: no job registry on this host (install
///   turnkit-jobs-local first)` when the service slot holds no `Arc<dyn JobRegistry>`;
///   nothing is registered.
/// - [`ConfigError::Invalid`] `tool-jobs: another tool-jobs mount already serves these agents
///   (<host message>)` when the host refuses the tools because a mount in an overlapping
///   scope exists (a global mount plus a scoped one over the same agents is rejected,
///   decision 1); everything registered so far is removed again.
pub fn install_scoped(
    harness: &Arc<dyn Harness>,
    config: ToolJobsConfig,
    scope: RegistrationScope,
) -> Result<Installed, ConfigError> {
    config.validate()?;
    let max_wakes = config.wakes_budget().ok_or_else(|| {
        ConfigError::Invalid(format!("{PLUGIN_NAME}: invalid maxConsecutiveWakes"))
    })?;
    let registry = harness
        .services()
        .get::<Arc<dyn JobRegistry>>()
        .ok_or_else(|| {
            ConfigError::Invalid(format!(
                "{PLUGIN_NAME}: no job registry on this host (install turnkit-jobs-local first)"
            ))
        })?;
    let reporter = Reporter::new(config.completion_delivery, max_wakes);
    // Built before any registration so that a refused mount leaves nothing behind.
    let mut installed = Installed {
        registrations: Vec::with_capacity(7),
        reporter: reporter.clone(),
        scope,
    };
    installed
        .registrations
        .push(registry.attach_controller(installed.scope.clone(), PLUGIN_NAME));
    installed
        .registrations
        .push(harness.register_prompt_section(PromptSection {
            name: PROMPT_SECTION_NAME.to_owned(),
            order: PROMPT_SECTION_ORDER,
            text: PROMPT_SECTION_TEXT.to_owned(),
            scope: installed.scope.clone(),
        }));
    installed
        .registrations
        .push(registry.on_job_done(installed.scope.clone(), reporter.listener()));
    installed
        .registrations
        .push(registry.on_jobs_lost(installed.scope.clone(), reporter.lost_listener()));
    installed
        .registrations
        .push(registry.on_job_notice(installed.scope.clone(), reporter.notice_listener()));
    let tools: [Arc<dyn turnkit_core::Tool>; 3] = [
        Arc::new(JobOutputTool::new(registry.clone(), &config)),
        Arc::new(JobListTool::new(
            registry.clone(),
            harness.services().clone(),
        )),
        Arc::new(JobKillTool::new(registry)),
    ];
    for tool in tools {
        let registration = harness
            .register_tool(tool, installed.scope.clone())
            .map_err(|error| match error {
                RegisterError::ToolConflict(_) => ConfigError::Invalid(format!(
                    "{PLUGIN_NAME}: another tool-jobs mount already serves these agents ({error})"
                )),
                other => ConfigError::Register(other),
            })?;
        installed.registrations.push(registration);
    }
    Ok(installed)
}
