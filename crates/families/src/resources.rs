//! [`FamilyResource`]: what each family offers a host to show beside the conversation (the
//! `harness://…` resources of `harness mcp`): a URI, the changes that make it stale, and a read.

use std::sync::Arc;

use serde_json::Value;
use turnkit_core::{Agent, Clock, ProjectionSet, Session, epoch_millis};
use turnkit_jobs::{JobId, JobRegistry};
use turnkit_schedule::domain::{SCHEDULE_CHANGE, ScheduleFold};
use turnkit_todo::TODO_WRITE_EVENT;
use turnkit_tool_jobs::PublicJob;

/// What a resource read sees: the served session, its agent, and the host's parts.
pub struct ResourceContext<'a> {
    /// The session.
    pub session: &'a dyn Session,
    /// The session's agent (the owner whose jobs are shown).
    pub agent: &'a Arc<dyn Agent>,
    /// The host's projections (pulled from the log when read).
    pub projections: &'a ProjectionSet,
    /// The job registry.
    pub jobs: &'a Arc<dyn JobRegistry>,
    /// The host's clock (reminder views show times relative to now).
    pub clock: &'a dyn Clock,
}

impl std::fmt::Debug for ResourceContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceContext")
            .field("session", self.session.id())
            .finish_non_exhaustive()
    }
}

/// What makes a resource stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangedBy {
    /// An append of one of these event types to the session.
    Events(&'static [&'static str]),
    /// A change of the job list (todo-jobs §4.7 `onJobsChanged`), which also touches every
    /// resource of the [`FamilyResource::template`].
    JobList,
}

/// One resource a family declares: a fixed URI, and optionally a URI template whose
/// resources (`<prefix><id>`) change with it. Values are JSON in the tools' own shapes.
#[derive(Clone, Copy)]
pub struct FamilyResource {
    /// The URI (`harness://todos`).
    pub uri: &'static str,
    /// The short name (`todos`).
    pub name: &'static str,
    /// What it holds, for clients.
    pub description: &'static str,
    /// What makes it stale.
    pub changed_by: ChangedBy,
    /// Its current value.
    pub read: fn(&ResourceContext<'_>) -> Value,
    /// A URI template of resources read by id (`harness://jobs/{id}`), if any.
    pub template: Option<ResourceTemplate>,
}

impl std::fmt::Debug for FamilyResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FamilyResource")
            .field("uri", &self.uri)
            .field("changed_by", &self.changed_by)
            .finish_non_exhaustive()
    }
}

/// Resources read by id under one URI prefix.
#[derive(Clone, Copy)]
pub struct ResourceTemplate {
    /// The prefix (`harness://jobs/`); the template is `<prefix>{id}`.
    pub prefix: &'static str,
    /// The short name (`job`).
    pub name: &'static str,
    /// What each holds.
    pub description: &'static str,
    /// The value of the resource with this id, if the session may see it.
    pub read: fn(&ResourceContext<'_>, &str) -> Option<Value>,
}

/// The resources of the families, in order: the `todos` projection (todo), the session's jobs
/// and each job (tool-jobs, as `job_list` shows them), and the active reminders (schedule, as
/// `schedule_list` shows them).
pub fn resources() -> [FamilyResource; 3] {
    [
        FamilyResource {
            uri: "harness://todos",
            name: "todos",
            description: "The session's todo list (the `todos` projection).",
            changed_by: ChangedBy::Events(&[TODO_WRITE_EVENT]),
            read: read_todos,
            template: None,
        },
        FamilyResource {
            uri: "harness://jobs",
            name: "jobs",
            description: "The session's background jobs, as job_list shows them.",
            changed_by: ChangedBy::JobList,
            read: read_jobs,
            template: Some(ResourceTemplate {
                prefix: "harness://jobs/",
                name: "job",
                description: "One background job of the session, as job_list shows it.",
                read: read_job,
            }),
        },
        FamilyResource {
            uri: "harness://reminders",
            name: "reminders",
            description: "The session's active reminders, as schedule_list shows them.",
            changed_by: ChangedBy::Events(&[SCHEDULE_CHANGE]),
            read: read_reminders,
            template: None,
        },
    ]
}

fn read_todos(context: &ResourceContext<'_>) -> Value {
    context
        .projections
        .view(context.session.id(), turnkit_todo::TODOS_KEY)
        .map_or(Value::Null, |view| view.value)
}

fn read_jobs(context: &ResourceContext<'_>) -> Value {
    Value::Array(
        context
            .jobs
            .list(Some(context.agent.id()))
            .iter()
            .map(|s| PublicJob::from_snapshot(s).to_value())
            .collect(),
    )
}

fn read_job(context: &ResourceContext<'_>, id: &str) -> Option<Value> {
    context
        .jobs
        .get(&JobId::from(id), Some(context.agent.id()))
        .ok()
        .map(|s| PublicJob::from_snapshot(&s).to_value())
}

/// The active reminders of the live log, each as `schedule_list` shows it (schedule §9.6),
/// or the log's corruption value when the log does not fold.
fn read_reminders(context: &ResourceContext<'_>) -> Value {
    let events = context.session.raw_events_after(0);
    match ScheduleFold::open_raw(&events, context.session.header().seed_length) {
        Ok(fold) => {
            let now_ms = epoch_millis(context.clock.now());
            Value::Array(fold.active().map(|record| record.view(now_ms)).collect())
        }
        Err(error) => error.to_value(),
    }
}
