//! [`Families`]: every family installed into one host, and disposed in one order.

use std::sync::Arc;

use std::any::Any;

use turnkit_core::{BatchIndex, ConfigError, Harness};
use turnkit_jobs::JobRegistry;

use crate::config::FamiliesConfig;
use crate::entry::{Children, Member, Setup};

/// Every family installed into one host, one [`Entry`](crate::Entry) after another: the built-in ones
/// (todo, jobs-local, tool-jobs, schedule and bash always; terminal when the configuration
/// has a `terminal` object; subagent when the host runs children ([`Children`]); watch when
/// the configuration has a `watch` object), then the entries the configuration added
/// ([`FamiliesConfig::from_json_with`]).
///
/// The tools are registered in that order, which is the order hosts list them in.
/// [`Families::dispose`] undoes the installation in the reverse order: the added families
/// first, then watch, subagent, terminal, bash, schedule, tool-jobs, jobs-local, todo (the
/// job producers before the registry, so their jobs settle while it and its notices are
/// still installed).
pub struct Families {
    jobs: Arc<dyn JobRegistry>,
    /// Every installed family with its key, in installation order.
    members: Vec<(&'static str, Arc<dyn Member>)>,
}

impl std::fmt::Debug for Families {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.members.iter().map(|(key, _)| *key).collect();
        f.debug_struct("Families")
            .field("members", &keys)
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
        children: Option<&Children>,
    ) -> Result<Self, ConfigError> {
        let mut members = Vec::new();
        for entry in config.entries() {
            let setup = Setup {
                harness,
                object: config.object(entry.key),
                children,
                installed: &members,
            };
            if let Some(member) = (entry.install)(&setup)? {
                members.push((entry.key, member));
            }
        }
        let jobs = members
            .iter()
            .find_map(|(_, member)| {
                let member: &dyn Any = member.as_ref();
                member.downcast_ref::<turnkit_jobs_local::Installed>()
            })
            .map(turnkit_jobs_local::Installed::registry)
            .ok_or_else(|| {
                ConfigError::Invalid("jobs: no job registry was installed".to_owned())
            })?;
        Ok(Self { jobs, members })
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
        self.jobs.clone()
    }

    /// The installed family of type `T` (a family crate's `Installed`, or an added entry's
    /// [`Member`]); `None` when no family of that type is installed.
    pub fn get<T: Member>(&self) -> Option<&T> {
        self.members.iter().find_map(|(_, member)| {
            let member: &dyn Any = member.as_ref();
            member.downcast_ref::<T>()
        })
    }

    /// The keys of the installed families, in installation order (`["todo", "jobs",
    /// "toolJobs", "schedule", "bash"]` for the defaults).
    pub fn keys(&self) -> Vec<&'static str> {
        self.members.iter().map(|(key, _)| *key).collect()
    }

    /// The bash family (installed by every configuration).
    pub fn bash(&self) -> Option<&turnkit_bash::Installed> {
        self.get()
    }

    /// The terminal family, when the configuration had a `terminal` object.
    pub fn terminal(&self) -> Option<&turnkit_terminal::Installed> {
        self.get()
    }

    /// The watch family, when the configuration had a `watch` object.
    pub fn watch(&self) -> Option<&turnkit_watch::Installed> {
        self.get()
    }

    /// The subagent family, when the host runs children.
    pub fn subagent(&self) -> Option<&turnkit_subagent::Installed> {
        self.get()
    }

    /// Disposes every family in the reverse order of their installation (see [`Families`]):
    /// their tools, prompt sections and projections leave the host; running jobs are
    /// stopped. Once every family was disposed (the job registry's disposal awaited every
    /// settlement), each family's shutdown runs in the same order: the process tasks of
    /// terminal and bash are joined (what their stopped processes left is killed at once
    /// instead of after the grace), so no task of a family outlives this call. Idempotent
    /// (every family's disposal is): a second call finds nothing left to undo.
    pub async fn dispose(&self) {
        for (_, member) in self.members.iter().rev() {
            member.dispose().await;
        }
        for (_, member) in self.members.iter().rev() {
            member.shutdown().await;
        }
    }
}
