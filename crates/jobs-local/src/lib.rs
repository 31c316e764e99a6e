#![doc = include_str!("../README.md")]

mod config;
mod driver;
mod history;
mod install;
mod journal;
mod journal_fold;
mod lookup;
mod registry;
mod state;

pub use config::{
    DEFAULT_MAX_CONCURRENT_JOBS_PER_OWNER, DEFAULT_OUTPUT_HISTORY_BYTES, JobLimits, JobsConfig,
};
pub use install::{Installed, install};
pub use journal::{
    JOB_LOST_EVENT, JOB_SETTLE_EVENT, JOB_START_EVENT, JOURNAL_OUTPUT_BYTES, JOURNAL_VERSION,
    JournalError,
};
pub use journal_fold::{JournalFold, JournaledJob, JournaledSettlement};
pub use lookup::{AgentLookup, HarnessAgents};
pub use registry::{
    LocalJobRegistry, MAX_WAIT_TIMEOUT_MS, OWNER_DISPOSED_REASON, SERVICE_DISPOSED_REASON,
    UNSAVED_START_REASON,
};
