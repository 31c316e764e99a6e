#![doc = include_str!("../README.md")]

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
    fit_with_suffix,
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
