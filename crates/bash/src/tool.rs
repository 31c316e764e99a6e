//! The `bash` tool (decision 11) and [`BashJobs`], the launcher it shares with hosts and the
//! scenario runner.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnkit_core::{
    Agent, Clock, Tool, ToolCall, ToolDefinition, ToolError, ToolOutput, async_trait,
};
use turnkit_jobs::{
    Foreground, JobError, JobId, JobRegistry, JobSnapshot, OnTimeout, format_js_number,
    wait_foreground,
};

use crate::{BashConfig, TaskSet, job::bash_job_start_gated};

/// The tool name.
pub const TOOL_NAME: &str = "bash";

/// The error of a background start without a job registry (todo-jobs §6, exact).
pub const JOBS_UNAVAILABLE: &str =
    "background jobs unavailable: load @deepseek-ai/dsh-jobs and @deepseek-ai/dsh-tool-jobs";

const DESCRIPTION: &str = "Run a shell command with `bash -c` in its own process group. By default the call waits for the command to finish (up to `timeout_ms`, after which the command is killed) and returns its output — stdout, then a `[stderr]` section — followed by `[status: ...]`. With `run_in_background: true` it returns `started background job <id>` at once; you are notified when the job finishes, and you collect its output with job_output or stop it with job_kill. Output kept in memory is bounded; when some was dropped, the result names files holding the full output.";

/// Slack added to twice the kill grace when waiting for a killed foreground job to settle.
const SETTLE_SLACK_MS: u64 = 10_000;

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command to run, as `bash -c COMMAND`."
            },
            "description": {
                "type": "string",
                "description": "Optional short description of what the command does, for the user."
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Start the command as a background job and return its job id at once instead of waiting."
            },
            "timeout_ms": {
                "type": "number",
                "description": "Foreground only: max milliseconds to wait before the command is killed. Defaults to the configured timeout; capped by the configured maximum."
            }
        },
        "required": ["command"]
    })
}

fn output_schema() -> Value {
    json!({
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "background"},
                    "jobId": {"type": "string"}
                },
                "required": ["kind", "jobId"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "foreground"},
                    "jobId": {"type": "string"},
                    "output": {"type": "string"},
                    "status": {"enum": ["running", "stopping", "completed", "killed", "failed"]},
                    "detail": {"type": "string"},
                    "timedOut": {"type": "boolean"}
                },
                "required": ["kind", "jobId", "output", "status", "timedOut"],
                "additionalProperties": false
            }
        ]
    })
}

static DEFINITION: LazyLock<ToolDefinition> = LazyLock::new(|| ToolDefinition {
    name: TOOL_NAME.to_owned(),
    description: DESCRIPTION.to_owned(),
    input_schema: input_schema(),
    output_schema: Some(output_schema()),
    // Runs an arbitrary command: it may change or destroy anything the host user can reach.
    annotations: Some(turnkit_core::ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    }),
});

/// The arguments of `bash`. The root object is open (todo-jobs §1.4): other keys are
/// ignored.
#[derive(Debug, Deserialize)]
struct BashArgs {
    command: String,
    #[serde(default)]
    run_in_background: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<f64>,
}

/// Starts bash jobs under one configuration: used by the `bash` tool, and by hosts or the
/// scenario runner to start a background job directly.
#[derive(Clone)]
pub struct BashJobs {
    config: Arc<BashConfig>,
    clock: Arc<dyn Clock>,
    jobs: Option<Arc<dyn JobRegistry>>,
    /// The tasks of every process started here.
    tasks: TaskSet,
}

impl std::fmt::Debug for BashJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashJobs")
            .field("config", &self.config)
            .field("has_registry", &self.jobs.is_some())
            .finish_non_exhaustive()
    }
}

impl BashJobs {
    /// A launcher over `jobs` (`None`: every start fails with [`JOBS_UNAVAILABLE`]). `clock`
    /// measures the kill grace.
    pub fn new(
        config: BashConfig,
        clock: Arc<dyn Clock>,
        jobs: Option<Arc<dyn JobRegistry>>,
    ) -> Self {
        Self {
            config: Arc::new(config),
            clock,
            jobs,
            tasks: TaskSet::new(),
        }
    }

    /// The task set every process started here runs its tasks in (clones of this launcher
    /// share it); the plugin's [`Installed::shutdown`](crate::Installed::shutdown) joins it.
    pub fn tasks(&self) -> &TaskSet {
        &self.tasks
    }

    /// The options of `command` under the configuration, its tasks in this launcher's set.
    fn options(&self, command: &str) -> crate::ProcessOptions {
        let mut options = self.config.process_options(command, self.clock.clone());
        options.tasks = self.tasks.clone();
        options
    }

    /// The configuration.
    pub fn config(&self) -> &BashConfig {
        &self.config
    }

    /// The job registry, if any.
    pub fn registry(&self) -> Option<&Arc<dyn JobRegistry>> {
        self.jobs.as_ref()
    }

    /// Starts `command` as a job of kind `bash` owned by `owner` (`None`: an unowned job),
    /// with an optional output limit, and returns its id (`bash-<N>`), through the jobs
    /// layer's saved start ([`turnkit_jobs::start_saved`]): the shell waits at its start gate
    /// while the registry records the job (with the job journal on, its `job/start`) and the
    /// owner's session is flushed, and only after that flush the command runs. So no process
    /// of a job runs without a durable record of it: a host killed before the flush leaves a
    /// shell that exits at its gate. Both the `bash` tool (foreground and background) and
    /// hosts (the scenario runner's `bash` step) start here.
    ///
    /// # Errors
    /// [`StartError::Unavailable`] without a registry; [`StartError::Job`] for every
    /// registry refusal (controller fence, owner checks, admission, `failed to start bash:
    /// …` from the spawn; then no job exists and no process runs);
    /// [`StartError::NotSaved`] when the job journal could not append its `job/start` or the
    /// flush failed: the held shell is stopped before it ran anything (the job settles
    /// `killed`, without a notice).
    pub async fn start_saved(
        &self,
        owner: Option<Arc<dyn Agent>>,
        command: &str,
        output_limit_bytes: Option<u64>,
    ) -> Result<JobId, StartError> {
        let jobs = self.jobs.as_ref().ok_or(StartError::Unavailable)?;
        let options = self.options(command);
        let started = turnkit_jobs::start_saved(jobs.as_ref(), owner, |gate| {
            bash_job_start_gated(options, output_limit_bytes, gate)
        })
        .await;
        match started {
            Ok(id) => Ok(id),
            Err(JobError::StartNotSaved { id, reason }) => Err(StartError::NotSaved { id, reason }),
            Err(error) => Err(error.into()),
        }
    }
}

/// Why [`BashJobs::start_saved`] failed. `Display` is the model-facing message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// No job registry is loaded (todo-jobs §6, exact text [`JOBS_UNAVAILABLE`]).
    #[error("{JOBS_UNAVAILABLE}")]
    Unavailable,
    /// The registry refused the start (its exact message).
    #[error(transparent)]
    Job(#[from] JobError),
    /// Job `id` was recorded but its start could not be saved (the job journal's append of
    /// its `job/start` was refused, or the owner's session could not be flushed), so its
    /// shell was stopped at its start gate (`background job <id> was stopped before its
    /// command ran: its start could not be saved: <why>`; the job settles `killed`).
    #[error(
        "background job {id} was stopped before its command ran: its start could not be saved: {reason}"
    )]
    NotSaved {
        /// The job, recorded and stopped.
        id: JobId,
        /// Why the start could not be saved (the append's or the flush's error text).
        reason: String,
    },
}

/// The `bash` tool (decision 11): `command` (required), `run_in_background`, `timeout_ms`.
///
/// - Background: returns `started background job <id>` with value
///   `{"kind":"background","jobId":<id>}`. A call already aborted fails before the start;
///   afterwards, aborting the call does not affect the job.
/// - Foreground: starts the same job owned by the caller, waits for it through the
///   registry (so the settlement counts as awaited and no completion notice is sent), then
///   reads its output. On timeout the job is killed and the result says
///   `[timed out after <n>ms]`; aborting the call kills the job and yields the aborted
///   result. The text is the output (or `(no output)`), a newline if needed, then the status
///   line, e.g. `hi\n[status: completed, exit code: 0]`; the value is
///   `{"kind":"foreground","jobId","output","status","detail"?,"timedOut"}`.
/// - Errors (`Error: <message>`): [`JOBS_UNAVAILABLE`] without a registry; the registry's
///   refusals; `invalid timeout_ms: expected a positive number of milliseconds, got <n>`.
pub struct BashTool {
    jobs: BashJobs,
    /// The definition with what the sandbox enforces appended, when one is configured.
    confined: Option<ToolDefinition>,
}

impl BashTool {
    /// The tool over a launcher. With a `sandbox` configured, the description ends with a
    /// paragraph `Commands run confined: <what is in force>` (the line of
    /// [`crate::probe_sandbox`]), so the model knows what will be refused; without one the
    /// definition is the spec's.
    pub fn new(jobs: BashJobs) -> Self {
        let confined = jobs.config().sandbox.as_ref().map(|sandbox| {
            let summary = crate::probe_sandbox(sandbox).unwrap_or_else(|e| e.0);
            let mut definition = DEFINITION.clone();
            definition
                .description
                .push_str(&format!("\n\nCommands run confined: {summary}."));
            definition
        });
        Self { jobs, confined }
    }

    async fn foreground(
        &self,
        call: &ToolCall,
        id: JobId,
        timeout_ms: f64,
    ) -> Result<ToolOutput, ToolError> {
        let Some(jobs) = self.jobs.registry() else {
            return Err(ToolError::msg(JOBS_UNAVAILABLE));
        };
        let timeout =
            JobError::wait_timeout(timeout_ms).map_err(|e| ToolError::msg(e.to_string()))?;
        let settle = Duration::from_millis(self.jobs.config().kill_grace_ms.saturating_mul(2))
            + Duration::from_millis(SETTLE_SLACK_MS);
        let Foreground { read, timed_out } =
            wait_foreground(&**jobs, &id, call, timeout, OnTimeout::Kill { settle }).await?;
        Ok(render_foreground(
            &read.text,
            &read.snapshot,
            timed_out.then_some(timeout_ms),
        ))
    }
}

/// The foreground result: text and value (see [`BashTool`]).
fn render_foreground(output: &str, snapshot: &JobSnapshot, timed_out: Option<f64>) -> ToolOutput {
    let mut text = if output.is_empty() {
        "(no output)".to_owned()
    } else {
        output.to_owned()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if let Some(timeout_ms) = timed_out {
        text.push_str(&format!(
            "[timed out after {}ms]\n",
            format_js_number(timeout_ms)
        ));
    }
    text.push_str(&snapshot.status_line());
    let mut value = json!({
        "kind": "foreground",
        "jobId": snapshot.id.as_str(),
        "output": output,
        "status": snapshot.status.as_str(),
    });
    if let (Some(detail), Some(object)) = (&snapshot.detail, value.as_object_mut()) {
        object.insert("detail".to_owned(), Value::from(&**detail));
    }
    if let Some(object) = value.as_object_mut() {
        object.insert("timedOut".to_owned(), Value::Bool(timed_out.is_some()));
    }
    ToolOutput::success(value, text)
}

#[async_trait]
impl Tool for BashTool {
    fn definition(&self) -> &ToolDefinition {
        self.confined.as_ref().unwrap_or(&DEFINITION)
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolError> {
        let args: BashArgs = call.arguments_as()?;
        if call.cancel.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let background = args.run_in_background == Some(true);
        let timeout_ms = if background {
            0.0
        } else {
            let config = self.jobs.config();
            match args.timeout_ms {
                None => config.default_timeout_ms,
                Some(t) if t.is_finite() && t > 0.0 => t.min(config.max_timeout_ms),
                Some(t) => {
                    return Err(ToolError::msg(format!(
                        "invalid timeout_ms: expected a positive number of milliseconds, got {}",
                        format_js_number(t)
                    )));
                }
            }
        };
        let id = self
            .jobs
            .start_saved(call.caller.clone(), &args.command, None)
            .await
            .map_err(|e| ToolError::msg(e.to_string()))?;
        if background {
            let text = format!("started background job {id}");
            return Ok(ToolOutput::success(
                json!({"kind": "background", "jobId": id.as_str()}),
                text,
            ));
        }
        self.foreground(&call, id, timeout_ms).await
    }
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
