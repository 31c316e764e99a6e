//! [`install`]: loads the terminal plugin into a host.

use std::sync::Arc;

use turnkit_core::{
    ConfigError, Harness, LifecycleEvent, PluginConfig, Registration, RegistrationScope,
};
use turnkit_jobs::JobRegistry;

use crate::{KillTool, SendTool, StartTool, TerminalConfig, Terminals};

/// What [`install`] registered; unloads when dropped or on [`Installed::dispose`].
///
/// It also owns the task set of every terminal it opened ([`Terminals::tasks`]): readers,
/// supervisors, the grace timers of stops and cgroup removals. [`Installed::shutdown`]
/// joins them.
#[must_use = "dropping Installed unregisters the terminal tools and stops every terminal"]
pub struct Installed {
    tools: Vec<Registration>,
    lifecycle: Registration,
    terminals: Terminals,
    /// With a sandbox: the prompt section saying what confinement is in force.
    sandbox_section: Option<Registration>,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("terminals", &self.terminals)
            .finish_non_exhaustive()
    }
}

impl Installed {
    /// The table behind the tools: hosts and the scenario runner open terminals and send to
    /// them directly with it.
    pub fn terminals(&self) -> &Terminals {
        &self.terminals
    }

    /// Unloads the plugin now: removes the three tools, stops listening for agent disposal
    /// and stops every terminal ([`Terminals::dispose`]). Idempotent. Sends already
    /// registered settle under the registry (`terminal exited`).
    pub fn dispose(&self) {
        for tool in &self.tools {
            tool.unregister();
        }
        self.lifecycle.unregister();
        self.terminals.dispose();
        if let Some(section) = &self.sandbox_section {
            section.unregister();
        }
    }

    /// The number of the plugin's terminal tasks still alive (a reader and a supervisor per
    /// running terminal, a grace timer per stopped one still counting, a cgroup removal
    /// waiting for members to exit); 0 once [`Installed::shutdown`] returned.
    pub fn running_tasks(&self) -> usize {
        self.terminals.tasks().len()
    }

    /// [`Installed::dispose`], then ends the plugin's terminal tasks and waits until none
    /// is alive ([`TaskSet::shutdown`](turnkit_bash::TaskSet::shutdown)): a stop's grace
    /// timer kills (SIGKILL) what is left at once instead of when the grace ends, and a
    /// terminal still running is killed the same way and reaped. Meant after the job
    /// registry's disposal (the sends then have settled). Idempotent.
    pub async fn shutdown(&self) {
        self.dispose();
        self.terminals.tasks().shutdown().await;
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // A drop cannot await: the terminals are stopped, and their tasks end on their own
        // (the grace timers when the grace ends). Who needs them joined awaits
        // `Installed::shutdown` before dropping.
        self.dispose();
    }
}

/// Loads the terminal plugin: validates `config`, registers `terminal_start`,
/// `terminal_send` and `terminal_kill` globally over the host's job registry (the
/// `Arc<dyn JobRegistry>` in its service slot, [`Harness::services`]; without one every
/// send fails with [`crate::JOBS_UNAVAILABLE`]), and stops an agent's
/// terminals when that agent instance is disposed. The host clock measures quiet windows,
/// timeouts and the kill grace.
///
/// # Errors
/// [`ConfigError::Invalid`] from [`TerminalConfig::validate`]; [`ConfigError::Register`]
/// when one of the tool names is already registered (nothing stays registered).
pub fn install(
    harness: &Arc<dyn Harness>,
    config: TerminalConfig,
) -> Result<Installed, ConfigError> {
    config.validate()?;
    let summary = match &config.sandbox {
        Some(sandbox) => {
            let summary = turnkit_bash::probe_sandbox(sandbox)
                .map_err(|e| <TerminalConfig as turnkit_core::PluginConfig>::invalid(e.0))?;
            tracing::info!("terminal: {summary}");
            turnkit_jobs::KindNotes::set_on(
                harness.as_ref(),
                "pty-send",
                format!("Terminal programs (pty-send jobs) run confined: {summary}."),
            );
            Some(summary)
        }
        None => None,
    };
    let jobs = harness.services().get::<Arc<dyn JobRegistry>>();
    let terminals = Terminals::new(config, harness.clock(), jobs);
    let mut tools = Vec::with_capacity(3);
    for tool in [
        Arc::new(StartTool::new(terminals.clone())) as Arc<dyn turnkit_core::Tool>,
        Arc::new(SendTool::new(terminals.clone())),
        Arc::new(KillTool::new(terminals.clone())),
    ] {
        // On a conflict the registrations made so far drop (and unregister) with `tools`.
        tools.push(harness.register_tool(tool, RegistrationScope::Global)?);
    }
    let table = terminals.clone();
    let lifecycle = harness.subscribe_agents(Arc::new(move |event: &LifecycleEvent| {
        if let LifecycleEvent::Disposed(agent) = event {
            table.owner_disposed(agent);
        }
    }));
    let sandbox_section = summary.map(|summary| {
        harness.register_prompt_section(turnkit_core::PromptSection {
            name: "tool:terminal-sandbox".to_owned(),
            // After the jobs section and bash's.
            order: 108,
            text: format!("Terminal programs run confined: {summary}."),
            scope: RegistrationScope::Global,
        })
    });
    Ok(Installed {
        tools,
        lifecycle,
        terminals,
        sandbox_section,
    })
}
