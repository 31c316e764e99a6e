#![doc = include_str!("../README.md")]

mod cap;
mod config;
mod delivery;
mod fit;
mod install;
mod public;
mod tasks;
mod text;
mod tools;

pub use cap::{cap_result, output_limit};
pub use config::{CompletionDelivery, ToolJobsConfig};
pub use delivery::{lost_notice_message, notice_message, running_notice_message};
pub use fit::{NoticeParts, OUTPUT_MARKER, fit_notice, fit_with_suffix};
pub use install::{Installed, install, install_scoped};
pub use public::PublicJob;
pub use tasks::{final_output, kill_job, started_job, task_notice, wait_moved, waited_job};
pub use text::{
    EARLIER_RUN_MARK, JOB_KILL, JOB_KILL_DESCRIPTION, JOB_LIST, JOB_LIST_DESCRIPTION, JOB_OUTPUT,
    JOB_OUTPUT_DESCRIPTION, PLUGIN_NAME, job_kill_schema, job_list_schema, job_output_schema,
    present_call, render_output, status_line,
};
