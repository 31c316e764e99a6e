//! harness-tool-jobs: the model-facing controller of background jobs (todo-jobs §5).
//!
//! [`install`] (or [`install_scoped`]) mounts it on a host over a `harness_jobs::JobRegistry`:
//! it attaches the job controller that `JobRegistry::start` requires, registers the tools
//! `job_output`, `job_list` and `job_kill`, the `tool:jobs` prompt section (order 106), and
//! the completion listener that delivers notices to job owners (followup for an idle owner
//! with wake budget under `wakeup`, inject otherwise; decision 12 moves a notice stranded by
//! the idle transition to a followup).
//!
//! The pure pieces are public too: [`fit_with_suffix`] and [`cap_result`] (output capping,
//! §5.5), [`fit_notice`] (notice fitting, §5.7), the exact texts and schemas, and
//! [`present_call`] (UI cards).
//!
//! ```
//! use harness_tool_jobs::{ToolJobsConfig, status_line};
//! let config = ToolJobsConfig::from_json(serde_json::json!({})).unwrap();
//! assert_eq!(config.max_consecutive_wakes, 3.0);
//! assert_eq!(status_line("completed", Some("exit code: 0")), "[status: completed, exit code: 0]");
//! ```

mod cap;
mod config;
mod delivery;
mod fit;
mod install;
mod public;
mod text;
mod tools;

pub use cap::{cap_result, output_limit};
pub use config::{CompletionDelivery, ToolJobsConfig};
pub use delivery::notice_message;
pub use fit::{
    NOTICE_ACTION, NOTICE_MARKER, NoticeParts, OUTPUT_MARKER, RESULT_MARKER, fit_notice,
    fit_with_suffix, head_utf8, tail_utf8,
};
pub use install::{Installed, install, install_scoped};
pub use public::PublicJob;
pub use text::{
    EMPTY_JOB_ID, JOB_KILL, JOB_KILL_DESCRIPTION, JOB_LIST, JOB_LIST_DESCRIPTION, JOB_OUTPUT,
    JOB_OUTPUT_DESCRIPTION, NO_JOBS, NO_NEW_OUTPUT, PLUGIN_NAME, PROMPT_SECTION_NAME,
    PROMPT_SECTION_ORDER, PROMPT_SECTION_TEXT, SUMMARY_MAX_CHARS, job_kill_schema,
    job_kill_value_schema, job_list_schema, job_list_value_schema, job_output_schema,
    job_output_value_schema, list_line, notice_summary, output_body, present_call,
    public_job_schema, render_kill_finished, render_kill_requested, render_output, status_line,
};
pub use tools::{JobKillTool, JobListTool, JobOutputTool};
