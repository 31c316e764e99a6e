//! The built-in families, one [`Entry`] each in [`BUILTIN`], and their [`Member`] shape.

use std::sync::Arc;

use turnkit_core::{ConfigError, async_trait};

use crate::entry::{Entry, Member, Setup};

/// The built-in families in installation order (the order hosts list their tools in):
/// todo, jobs-local (the job registry), tool-jobs, schedule and bash always; terminal and
/// watch when the configuration has their object; subagent when the host runs children.
pub(crate) const BUILTIN: [Entry; 8] = [
    Entry::new("todo", todo),
    Entry::new("jobs", jobs),
    Entry::new("toolJobs", tool_jobs),
    Entry::new("schedule", schedule),
    Entry::new("bash", bash),
    Entry::new("terminal", terminal),
    Entry::new("subagent", subagent),
    Entry::new("watch", watch),
];

type Installed = Result<Option<Arc<dyn Member>>, ConfigError>;

/// `member` as an installed family.
fn some(member: impl Member) -> Installed {
    Ok(Some(Arc::new(member)))
}

fn todo(setup: &Setup<'_>) -> Installed {
    let config = turnkit_todo::TodoConfig::from_json(setup.config())?;
    some(turnkit_todo::install(setup.harness, config)?)
}

fn jobs(setup: &Setup<'_>) -> Installed {
    let config = turnkit_jobs_local::JobsConfig::from_json(setup.config())?;
    some(turnkit_jobs_local::install(setup.harness, config)?)
}

fn tool_jobs(setup: &Setup<'_>) -> Installed {
    let config = turnkit_tool_jobs::ToolJobsConfig::from_json(setup.config())?;
    some(turnkit_tool_jobs::install(setup.harness, config)?)
}

fn schedule(setup: &Setup<'_>) -> Installed {
    let config = turnkit_schedule::ScheduleConfig::from_json(setup.config())?;
    some(turnkit_schedule::install(setup.harness, config)?)
}

fn bash(setup: &Setup<'_>) -> Installed {
    let config = turnkit_bash::BashConfig::from_json(setup.config())?;
    some(turnkit_bash::install(setup.harness, config)?)
}

/// Only with a `terminal` object: a host that has a PTY tool of its own keeps it.
fn terminal(setup: &Setup<'_>) -> Installed {
    if setup.object.is_none() {
        return Ok(None);
    }
    let config = turnkit_terminal::TerminalConfig::from_json(setup.config())?;
    some(turnkit_terminal::install(setup.harness, config)?)
}

/// Only for a host that runs children; a `subagent` object given to any other is refused.
fn subagent(setup: &Setup<'_>) -> Installed {
    let Some(children) = setup.children else {
        if setup.object.is_some() {
            return Err(ConfigError::Invalid(
                "subagent: this host runs no children; remove the \"subagent\" object".to_owned(),
            ));
        }
        return Ok(None);
    };
    let config = turnkit_subagent::SubagentConfig::from_json(setup.config())?;
    setup
        .harness
        .services()
        .insert(turnkit_subagent::ChildHost::new(
            &children.kit,
            children.store.clone(),
            children.model.clone(),
        ));
    some(turnkit_subagent::install(setup.harness, config)?)
}

/// Only with a `watch` object; after bash, whose launcher runs its check watches.
fn watch(setup: &Setup<'_>) -> Installed {
    if setup.object.is_none() {
        return Ok(None);
    }
    let config = turnkit_watch::WatchConfig::from_json(setup.config())?;
    // Check watches run their commands through bash's launcher.
    let runner = setup
        .installed::<turnkit_bash::Installed>()
        .map(|bash| bash.jobs().clone());
    some(turnkit_watch::install(setup.harness, config, runner)?)
}

#[async_trait]
impl Member for turnkit_todo::Installed {
    async fn dispose(&self) {
        turnkit_todo::Installed::dispose(self);
    }
}

#[async_trait]
impl Member for turnkit_jobs_local::Installed {
    async fn dispose(&self) {
        turnkit_jobs_local::Installed::dispose(self).await;
    }
}

#[async_trait]
impl Member for turnkit_tool_jobs::Installed {
    async fn dispose(&self) {
        turnkit_tool_jobs::Installed::dispose(self);
    }
}

#[async_trait]
impl Member for turnkit_schedule::Installed {
    async fn dispose(&self) {
        turnkit_schedule::Installed::dispose(self).await;
    }
}

#[async_trait]
impl Member for turnkit_bash::Installed {
    async fn dispose(&self) {
        turnkit_bash::Installed::dispose(self);
    }

    async fn shutdown(&self) {
        turnkit_bash::Installed::shutdown(self).await;
    }
}

#[async_trait]
impl Member for turnkit_terminal::Installed {
    async fn dispose(&self) {
        turnkit_terminal::Installed::dispose(self);
    }

    async fn shutdown(&self) {
        turnkit_terminal::Installed::shutdown(self).await;
    }
}

#[async_trait]
impl Member for turnkit_watch::Installed {
    async fn dispose(&self) {
        turnkit_watch::Installed::dispose(self);
    }
}

#[async_trait]
impl Member for turnkit_subagent::Installed {
    async fn dispose(&self) {
        turnkit_subagent::Installed::dispose(self);
    }
}
