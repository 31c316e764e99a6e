//! The three model tools (todo-jobs §5.4): [`JobOutputTool`], [`JobListTool`] and
//! [`JobKillTool`].
//!
//! Argument schemas are validated by the host before a body runs (decision 2); bodies still
//! decode defensively and never panic. Failures of `job_output` and `job_kill` are returned as
//! `Error: <message>` results (not as `Err`) so that they can be capped to the job's
//! `outputLimitBytes` (§5.5).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use turnkit_core::{AgentId, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput};
use turnkit_jobs::{JobError, JobId, JobRegistry, KillOutcome, live_detail};

use crate::cap::{cap_result, limit_of};
use crate::config::ToolJobsConfig;
use crate::public::PublicJob;
use crate::text::{
    EMPTY_JOB_ID, JOB_KILL, JOB_KILL_DESCRIPTION, JOB_LIST, JOB_LIST_DESCRIPTION, JOB_OUTPUT,
    JOB_OUTPUT_DESCRIPTION, NO_JOBS, earlier_list_line, job_kill_schema, job_kill_value_schema,
    job_list_schema, job_list_value_schema, job_output_schema, job_output_value_schema, list_line,
    render_earlier_output, render_kill_earlier, render_kill_finished, render_kill_requested,
    render_output,
};

/// `job_output` arguments. The root object is open: unknown keys are ignored.
#[derive(Debug, Deserialize)]
struct OutputArgs {
    job_id: String,
    #[serde(default)]
    wait: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<f64>,
}

/// `job_kill` arguments. The root object is open: unknown keys are ignored.
#[derive(Debug, Deserialize)]
struct KillArgs {
    job_id: String,
    #[serde(default)]
    reason: Option<String>,
}

fn caller_id(call: &ToolCall) -> Option<AgentId> {
    call.caller.as_ref().map(|agent| agent.id().clone())
}

/// `job_output`: wait (only with `wait: true`), then a consuming read; the value is
/// `{ text, job: PublicJob }` and the rendering `<body>\n[status: …]` (todo-jobs §5.4).
pub(crate) struct JobOutputTool {
    definition: ToolDefinition,
    registry: Arc<dyn JobRegistry>,
    wait_timeout_ms: f64,
    max_wait_timeout_ms: f64,
}

impl JobOutputTool {
    /// The tool over `registry` with the wait settings of `config`.
    pub(crate) fn new(registry: Arc<dyn JobRegistry>, config: &ToolJobsConfig) -> Self {
        Self {
            definition: ToolDefinition {
                name: JOB_OUTPUT.to_owned(),
                description: JOB_OUTPUT_DESCRIPTION.to_owned(),
                input_schema: job_output_schema(),
                output_schema: Some(job_output_value_schema()),
                // Reads consume the job's unread output: not read-only, not idempotent.
                annotations: Some(turnkit_core::ToolAnnotations {
                    read_only: false,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                }),
            },
            registry,
            wait_timeout_ms: config.wait_timeout_ms,
            max_wait_timeout_ms: config.max_wait_timeout_ms,
        }
    }

    async fn run(&self, id: &JobId, args: &OutputArgs, call: &ToolCall) -> ToolOutput {
        let caller = caller_id(call);
        if args.wait == Some(true) {
            // No lower clamp: 0 or a negative value is refused, after the id is checked (an
            // unknown or foreign job is reported first, todo-jobs §4.5).
            let timeout_ms = args
                .timeout_ms
                .unwrap_or(self.wait_timeout_ms)
                .min(self.max_wait_timeout_ms);
            let waited = match JobError::wait_timeout(timeout_ms) {
                Ok(timeout) => {
                    let wait =
                        self.registry
                            .wait(id, timeout, caller.as_ref(), Some(call.cancel.clone()));
                    // While it waits, the call's progress hears the job's live line.
                    call.progress
                        .tick_while(wait, || {
                            live_detail(self.registry.as_ref(), id, caller.as_ref())
                        })
                        .await
                }
                Err(invalid) => self.registry.get(id, caller.as_ref()).and(Err(invalid)),
            };
            if let Err(error) = waited {
                return ToolOutput::error(error);
            }
        }
        read_output(self.registry.as_ref(), id, caller.as_ref())
    }
}

/// The consuming read that ends `job_output` (uncapped): `{ text, job }` rendered as
/// `<body>\n[status: …]`, or the registry's error as an `Error: …` result.
pub(crate) fn read_output(
    registry: &dyn JobRegistry,
    id: &JobId,
    caller: Option<&AgentId>,
) -> ToolOutput {
    match registry.read(id, caller) {
        Ok(read) => {
            let job = PublicJob::from_snapshot(&read.snapshot);
            let text = if registry.is_from_earlier_run(id, caller) {
                render_earlier_output(&read.text, &job.status_line())
            } else {
                render_output(&read.text, &job.status_line())
            };
            ToolOutput::success(json!({ "text": read.text, "job": job.to_value() }), text)
        }
        Err(error) => ToolOutput::error(error),
    }
}

#[async_trait]
impl Tool for JobOutputTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn present_call(&self, arguments: &Value) -> Option<Value> {
        crate::text::present_call(&self.definition.name, arguments)
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: OutputArgs = match call.arguments_as() {
            Ok(args) => args,
            Err(invalid) => return Ok(ToolOutput::error(invalid)),
        };
        if args.job_id.is_empty() {
            return Ok(ToolOutput::error(EMPTY_JOB_ID));
        }
        let id = JobId::new(args.job_id.as_str());
        // Captured before the body runs, as the spec's prepended pre-execute listener does.
        let limit = limit_of(self.registry.as_ref(), &id, caller_id(&call).as_ref());
        let output = self.run(&id, &args, &call).await;
        Ok(cap_result(JOB_OUTPUT, output, limit))
    }
}

/// `job_list`: the caller's jobs plus unowned jobs, one line each (todo-jobs §5.4). Never
/// capped. When the host's services hold [`turnkit_jobs::KindNotes`] (a job kind's plugin
/// says how its jobs run, e.g. a sandbox's confinement), the text ends with a blank line and
/// those lines.
pub(crate) struct JobListTool {
    definition: ToolDefinition,
    registry: Arc<dyn JobRegistry>,
    services: turnkit_core::Services,
}

impl JobListTool {
    /// The tool over `registry`, reading the kind notes in `services` at each call.
    pub(crate) fn new(registry: Arc<dyn JobRegistry>, services: turnkit_core::Services) -> Self {
        Self {
            definition: ToolDefinition {
                name: JOB_LIST.to_owned(),
                description: JOB_LIST_DESCRIPTION.to_owned(),
                input_schema: job_list_schema(),
                output_schema: Some(job_list_value_schema()),
                annotations: Some(turnkit_core::ToolAnnotations::READ_ONLY),
            },
            registry,
            services,
        }
    }
}

#[async_trait]
impl Tool for JobListTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn present_call(&self, arguments: &Value) -> Option<Value> {
        crate::text::present_call(&self.definition.name, arguments)
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let caller = caller_id(&call);
        let jobs: Vec<PublicJob> = self
            .registry
            .list(caller.as_ref())
            .iter()
            .map(PublicJob::from_snapshot)
            .collect();
        let text = if jobs.is_empty() {
            NO_JOBS.to_owned()
        } else {
            jobs.iter()
                .map(|job| {
                    let line = if self
                        .registry
                        .is_from_earlier_run(&JobId::new(job.id.as_str()), caller.as_ref())
                    {
                        earlier_list_line
                    } else {
                        list_line
                    };
                    line(&job.id, &job.kind, job.status.as_str(), job.label.as_str())
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let notes = self
            .services
            .get::<turnkit_jobs::KindNotes>()
            .map(|notes| notes.lines())
            .unwrap_or_default();
        let text = if notes.is_empty() {
            text
        } else {
            format!("{text}\n\n{}", notes.join("\n"))
        };
        let value = Value::Array(jobs.iter().map(PublicJob::to_value).collect());
        Ok(ToolOutput::success(value, text))
    }
}

/// `job_kill`: cancel first, then a non-consuming `get`; the value is
/// `{ outcome: "cancellation-requested" | "already-finished", job }` (todo-jobs §5.4).
pub(crate) struct JobKillTool {
    definition: ToolDefinition,
    registry: Arc<dyn JobRegistry>,
}

impl JobKillTool {
    /// The tool over `registry`.
    pub(crate) fn new(registry: Arc<dyn JobRegistry>) -> Self {
        Self {
            definition: ToolDefinition {
                name: JOB_KILL.to_owned(),
                description: JOB_KILL_DESCRIPTION.to_owned(),
                input_schema: job_kill_schema(),
                output_schema: Some(job_kill_value_schema()),
                // Stops a job's work; killing a terminal job changes nothing.
                annotations: Some(turnkit_core::ToolAnnotations {
                    read_only: false,
                    destructive: true,
                    idempotent: true,
                    open_world: false,
                }),
            },
            registry,
        }
    }
}

/// The body of `job_kill` (uncapped): cancel first, then a non-consuming `get`.
pub(crate) fn kill(
    registry: &dyn JobRegistry,
    id: &JobId,
    reason: Option<&str>,
    caller: Option<&AgentId>,
) -> ToolOutput {
    let outcome = match registry.kill(id, caller, reason) {
        Ok(outcome) => outcome,
        Err(error) => return ToolOutput::error(error),
    };
    let snapshot = match registry.get(id, caller) {
        Ok(snapshot) => snapshot,
        Err(error) => return ToolOutput::error(error),
    };
    let job = PublicJob::from_snapshot(&snapshot);
    let (outcome, text) = match outcome {
        KillOutcome::Requested => ("cancellation-requested", render_kill_requested(&job.id)),
        KillOutcome::AlreadyFinished if registry.is_from_earlier_run(id, caller) => (
            "already-finished",
            render_kill_earlier(&job.id, &job.status_line()),
        ),
        KillOutcome::AlreadyFinished => (
            "already-finished",
            render_kill_finished(&job.id, &job.status_line()),
        ),
    };
    ToolOutput::success(json!({ "outcome": outcome, "job": job.to_value() }), text)
}

#[async_trait]
impl Tool for JobKillTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn present_call(&self, arguments: &Value) -> Option<Value> {
        crate::text::present_call(&self.definition.name, arguments)
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: KillArgs = match call.arguments_as() {
            Ok(args) => args,
            Err(invalid) => return Ok(ToolOutput::error(invalid)),
        };
        if args.job_id.is_empty() {
            return Ok(ToolOutput::error(EMPTY_JOB_ID));
        }
        let id = JobId::new(args.job_id.as_str());
        let caller = caller_id(&call);
        let limit = limit_of(self.registry.as_ref(), &id, caller.as_ref());
        let output = kill(
            self.registry.as_ref(),
            &id,
            args.reason.as_deref(),
            caller.as_ref(),
        );
        Ok(cap_result(JOB_KILL, output, limit))
    }
}
