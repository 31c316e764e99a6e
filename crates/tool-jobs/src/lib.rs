//! harness-tool-jobs: the model-facing controller of background jobs (todo-jobs §5).
//!
//! Installing it attaches the job controller that `JobRegistry::start` requires, registers
//! the tools `job_output`, `job_list` and `job_kill`, the `tool:jobs` prompt section (order
//! 106), and the completion listener that delivers notices to job owners.

mod config;
mod fit;
mod text;

pub use config::{CompletionDelivery, ToolJobsConfig};
pub use fit::{
    NOTICE_ACTION, NOTICE_MARKER, NoticeParts, OUTPUT_MARKER, RESULT_MARKER, fit_notice,
    fit_with_suffix, head_utf8, tail_utf8,
};
pub use text::{
    EMPTY_JOB_ID, JOB_KILL, JOB_KILL_DESCRIPTION, JOB_LIST, JOB_LIST_DESCRIPTION, JOB_OUTPUT,
    JOB_OUTPUT_DESCRIPTION, NO_JOBS, NO_NEW_OUTPUT, PLUGIN_NAME, PROMPT_SECTION_NAME,
    PROMPT_SECTION_ORDER, PROMPT_SECTION_TEXT, SUMMARY_MAX_CHARS, job_kill_schema,
    job_kill_value_schema, job_list_schema, job_list_value_schema, job_output_schema,
    job_output_value_schema, list_line, notice_summary, output_body, present_call,
    public_job_schema, render_kill_finished, render_kill_requested, render_output, status_line,
};
