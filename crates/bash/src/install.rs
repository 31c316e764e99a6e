//! [`install`]: loads the bash plugin into a host.

use std::sync::Arc;

use turnkit_core::{ConfigError, Harness, PluginConfig, Registration, RegistrationScope};
use turnkit_jobs::JobRegistry;

use crate::{BashConfig, BashJobs, BashTool};

/// The name of the prompt section a configured sandbox adds to the bash tool's host (the
/// server's instructions say what confinement is in force, `bestEffort` gaps included).
const SANDBOX_SECTION_NAME: &str = "tool:bash-sandbox";
/// Its sort key: after the jobs section.
const SANDBOX_SECTION_ORDER: i32 = 107;

/// What [`install`] registered; unloads when dropped or on [`Installed::dispose`].
///
/// It also owns the task set of every process its jobs run ([`BashJobs::tasks`]): the
/// supervisors, the grace timers that stop what a finished or stopped command left running,
/// and cgroup removals. [`Installed::shutdown`] joins them; dropping it does not (a drop
/// cannot await), the tasks then end on their own.
#[must_use = "dropping Installed unregisters the bash tool at once"]
pub struct Installed {
    tool: Registration,
    jobs: BashJobs,
    /// The leftover stopper of kind `bash` (`JobRegistry::on_leftovers`).
    _leftovers: Option<Registration>,
    /// With a sandbox: the prompt section saying what confinement is in force.
    sandbox_section: Option<Registration>,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

impl Installed {
    /// The launcher behind the tool: start a bash job for a session with
    /// [`BashJobs::start_saved`].
    pub fn jobs(&self) -> &BashJobs {
        &self.jobs
    }

    /// Unloads the plugin now (removes the `bash` tool). Idempotent. Jobs already started
    /// keep running under the registry (whose disposal stops them and awaits their
    /// settlement); [`Installed::shutdown`] then joins what their processes left.
    pub fn dispose(&self) {
        self.tool.unregister();
        if let Some(section) = &self.sandbox_section {
            section.unregister();
        }
    }

    /// The number of the plugin's process tasks still alive (a supervisor per running
    /// process, a grace timer per stopped one still counting, a cgroup removal waiting for
    /// members to exit); 0 once [`Installed::shutdown`] returned.
    pub fn running_tasks(&self) -> usize {
        self.jobs.tasks().len()
    }

    /// [`Installed::dispose`], then ends the plugin's process tasks and waits until none is
    /// alive ([`TaskSet::shutdown`](crate::TaskSet::shutdown)): meant after the job
    /// registry's disposal, when every job has settled and only grace timers and cgroup
    /// removals may be left; these kill (SIGKILL) what their processes left at once instead
    /// of when the grace ends. A process still running is killed the same way. Idempotent.
    pub async fn shutdown(&self) {
        self.dispose();
        self.jobs.tasks().shutdown().await;
    }
}

/// Loads the bash plugin: validates `config` and registers the `bash` tool globally over
/// the host's job registry, the `Arc<dyn JobRegistry>` in its service slot
/// ([`Harness::services`], provided by turnkit-jobs-local's `install`); without one every
/// call fails with [`crate::JOBS_UNAVAILABLE`]. The host clock measures the kill grace.
///
/// # Errors
/// [`ConfigError::Invalid`] from [`BashConfig::validate`], or naming the confinement of
/// `sandbox` this host cannot provide (e.g. `tool-bash: sandbox: the pids limit cannot be
/// enforced here: …`) unless `bestEffort`; [`ConfigError::Register`] when a
/// `bash` tool is already registered.
pub fn install(harness: &Arc<dyn Harness>, config: BashConfig) -> Result<Installed, ConfigError> {
    config.validate()?;
    let summary = match &config.sandbox {
        Some(sandbox) => {
            let summary = crate::probe_sandbox(sandbox)
                .map_err(|e| <BashConfig as PluginConfig>::invalid(e.0))?;
            tracing::info!("bash: {summary}");
            turnkit_jobs::KindNotes::set_on(
                harness.as_ref(),
                "bash",
                format!("bash jobs run confined: {summary}."),
            );
            Some(summary)
        }
        None => None,
    };
    let jobs = harness.services().get::<Arc<dyn JobRegistry>>();
    // A reopened journal's bash job whose host died: its leftovers are stopped before it is
    // reported (todo-jobs §5.9).
    let leftovers = jobs.as_ref().map(|registry| {
        registry.on_leftovers(
            &turnkit_jobs::JobKind::bash(),
            Arc::new(crate::contain::stop_job_leftovers),
        )
    });
    let jobs = BashJobs::new(config, harness.clock(), jobs);
    let tool = harness.register_tool(
        Arc::new(BashTool::new(jobs.clone())),
        RegistrationScope::Global,
    )?;
    let sandbox_section = summary.map(|summary| {
        harness.register_prompt_section(turnkit_core::PromptSection {
            name: SANDBOX_SECTION_NAME.to_owned(),
            order: SANDBOX_SECTION_ORDER,
            text: format!("Shell commands (bash) run confined: {summary}."),
            scope: RegistrationScope::Global,
        })
    });
    Ok(Installed {
        tool,
        jobs,
        _leftovers: leftovers,
        sandbox_section,
    })
}
