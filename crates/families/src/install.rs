//! [`Families`]: every family installed into one host, and disposed in one order.

use std::sync::Arc;

use turnkit_core::{BatchIndex, ConfigError, Harness, SessionStore, async_trait};
use turnkit_host::HostKit;
use turnkit_jobs::JobRegistry;
use turnkit_subagent::ChildModel;

use crate::config::{FamiliesConfig, Family};

/// What a host that runs children (turnkit-subagent's `agent` tool) gives
/// [`Families::install`]: the kit children are published in, the store their sessions are
/// created in, and the model that drives them.
#[derive(Clone)]
pub struct Children {
    /// The host kit the children are published in (the host's own, or the one under it).
    pub kit: Arc<HostKit>,
    /// The store child sessions are created in.
    pub store: Arc<dyn SessionStore>,
    /// The children's model step.
    pub model: Arc<dyn ChildModel>,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children").finish_non_exhaustive()
    }
}

/// One installed family as [`Families`] disposes it: every family has this shape, so the
/// disposal is one loop over an ordered list and adding a family is one entry there.
#[async_trait]
trait Member: Send + Sync {
    /// Undoes the installation: its tools, prompt sections and projections leave the host,
    /// and its running jobs are stopped (a registry awaits their settlements).
    async fn dispose(&self);

    /// Joins what the family's work left running once every family was disposed (the process
    /// tasks of bash and terminal: what their stopped processes left is killed at once).
    async fn shutdown(&self) {}
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

/// Every family installed into one host: todo, jobs-local (the job registry), tool-jobs,
/// schedule and bash always; terminal when the configuration has a `terminal` object;
/// subagent when the host runs children ([`Children`]); watch when the configuration has a
/// `watch` object.
///
/// The tools are registered in that order (todo, jobs-local, tool-jobs, schedule, bash,
/// terminal, subagent, watch), which is the order hosts list them in. [`Families::dispose`]
/// undoes the installation in one fixed order, the families' list: watch, terminal, subagent, bash,
/// schedule, tool-jobs, jobs-local, todo (the job producers first, so their jobs settle while
/// the registry and its notices are still installed).
pub struct Families {
    jobs: Arc<turnkit_jobs_local::Installed>,
    bash: Arc<turnkit_bash::Installed>,
    terminal: Option<Arc<turnkit_terminal::Installed>>,
    subagent: Option<Arc<turnkit_subagent::Installed>>,
    watch: Option<Arc<turnkit_watch::Installed>>,
    /// Every installed family, in disposal order.
    members: Vec<Arc<dyn Member>>,
}

impl std::fmt::Debug for Families {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Families")
            .field("terminal", &self.terminal.is_some())
            .field("subagent", &self.subagent.is_some())
            .field("watch", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

impl Families {
    /// Installs every family into `harness` with its object of `config`.
    ///
    /// Must run inside a tokio runtime (schedule's timers and the jobs run as tasks on it).
    ///
    /// # Errors
    /// The first family's [`ConfigError`] (its own exact message, such as `tool-todo:
    /// $.allowParallelInProgress missing required value`; the families installed before it
    /// are dropped, which unregisters them); [`ConfigError::Invalid`] `subagent: this host runs no children; remove
    /// the "subagent" object` for a `subagent` object given to a host without [`Children`].
    pub fn install(
        harness: &Arc<dyn Harness>,
        config: &FamiliesConfig,
        children: Option<Children>,
    ) -> Result<Self, ConfigError> {
        if children.is_none() && config.subagent.is_some() {
            return Err(ConfigError::Invalid(
                "subagent: this host runs no children; remove the \"subagent\" object".to_owned(),
            ));
        }
        let todo = turnkit_todo::TodoConfig::from_json(config.family(Family::Todo))
            .and_then(|c| turnkit_todo::install(harness, c))?;
        let jobs = turnkit_jobs_local::JobsConfig::from_json(config.family(Family::Jobs))
            .and_then(|c| turnkit_jobs_local::install(harness, c))?;
        let tool_jobs =
            turnkit_tool_jobs::ToolJobsConfig::from_json(config.family(Family::ToolJobs))
                .and_then(|c| turnkit_tool_jobs::install(harness, c))?;
        let schedule = turnkit_schedule::ScheduleConfig::from_json(config.family(Family::Schedule))
            .and_then(|c| turnkit_schedule::install(harness, c))?;
        let bash = turnkit_bash::BashConfig::from_json(config.family(Family::Bash))
            .and_then(|c| turnkit_bash::install(harness, c))?;
        let terminal = match &config.terminal {
            None => None,
            Some(_) => Some(
                turnkit_terminal::TerminalConfig::from_json(config.family(Family::Terminal))
                    .and_then(|c| turnkit_terminal::install(harness, c))?,
            ),
        };
        let subagent = match children {
            None => None,
            Some(children) => Some(
                turnkit_subagent::SubagentConfig::from_json(config.family(Family::Subagent))
                    .and_then(|c| {
                        harness.services().insert(turnkit_subagent::ChildHost::new(
                            &children.kit,
                            children.store,
                            children.model,
                        ));
                        turnkit_subagent::install(harness, c)
                    })?,
            ),
        };
        let watch = match &config.watch {
            None => None,
            Some(_) => Some(
                turnkit_watch::WatchConfig::from_json(config.family(Family::Watch))
                    .and_then(|c| turnkit_watch::install(harness, c, Some(bash.jobs().clone())))?,
            ),
        };
        let watch = watch.map(Arc::new);
        let (todo, jobs, tool_jobs, schedule, bash) = (
            Arc::new(todo),
            Arc::new(jobs),
            Arc::new(tool_jobs),
            Arc::new(schedule),
            Arc::new(bash),
        );
        let terminal = terminal.map(Arc::new);
        let subagent = subagent.map(Arc::new);
        let mut members: Vec<Arc<dyn Member>> = Vec::new();
        if let Some(watch) = &watch {
            members.push(watch.clone());
        }
        if let Some(terminal) = &terminal {
            members.push(terminal.clone());
        }
        if let Some(subagent) = &subagent {
            members.push(subagent.clone());
        }
        members.push(bash.clone());
        members.push(schedule);
        members.push(tool_jobs);
        members.push(jobs.clone());
        members.push(todo);
        Ok(Self {
            jobs,
            bash,
            terminal,
            subagent,
            members,
            watch,
        })
    }

    /// The index rules of the families' events for a store that keeps indexes beside the
    /// log (the PostgreSQL store's `PgOptions::index`): schedule's [`ReminderIndex`], the due
    /// index of reminders (schedule §12), is the only family with one.
    ///
    /// [`ReminderIndex`]: turnkit_schedule::ReminderIndex
    pub fn batch_index() -> Arc<dyn BatchIndex> {
        Arc::new(turnkit_schedule::ReminderIndex)
    }

    /// The job registry every job-producing family starts its jobs in.
    pub fn registry(&self) -> Arc<dyn JobRegistry> {
        self.jobs.registry()
    }

    /// The bash family.
    pub fn bash(&self) -> &turnkit_bash::Installed {
        &self.bash
    }

    /// The terminal family, when the configuration had a `terminal` object.
    pub fn terminal(&self) -> Option<&turnkit_terminal::Installed> {
        self.terminal.as_deref()
    }

    /// The watch family, when the configuration had a `watch` object.
    pub fn watch(&self) -> Option<&turnkit_watch::Installed> {
        self.watch.as_deref()
    }

    /// The subagent family, when the host runs children.
    pub fn subagent(&self) -> Option<&turnkit_subagent::Installed> {
        self.subagent.as_deref()
    }

    /// Disposes every family in the order of [`Families`]: watch, terminal, subagent, bash,
    /// schedule, tool-jobs, jobs-local, todo. Their tools, prompt sections and projections
    /// leave the host; running jobs are stopped. Once every family was disposed (the job
    /// registry's disposal awaited every settlement), each family's shutdown runs in the same
    /// order: the process tasks of terminal and bash are joined (what their stopped processes
    /// left is killed at once instead of after the grace), so no task of a family outlives
    /// this call. Idempotent (every family's disposal is): a second call finds nothing left
    /// to undo.
    pub async fn dispose(&self) {
        for member in &self.members {
            member.dispose().await;
        }
        for member in &self.members {
            member.shutdown().await;
        }
    }
}
