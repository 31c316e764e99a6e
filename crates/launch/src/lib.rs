#![doc = include_str!("../README.md")]

//!
//! Launch on due: when a reminder falls due for a session no client is connected to, the
//! configured command (a headless agent: `claude -p …`, `codex exec …`) is started with the
//! reminder as its prompt and works on the same session through `harness mcp`.
//!
//! - `config`: [`LaunchConfig`] (the `launch` entry of the configuration) and its
//!   placeholders.
//! - `run`: [`run_launch`], one launch under its bounds (start retries, timeout killing the
//!   process tree, output tail) and its [`LaunchOutcome`].
//! - `record`: the launch's events in the session log.
//! - `claim`: the steps on an open session (claim, report unknown outcomes, record an end),
//!   through turnkit-mcp's seam (`SessionHost::claim_owed_reminders` and its neighbours).
//! - `cron`: [`run_cron`], `harness cron`'s loop over a JSONL folder with its due index.
//! - `served`: [`ServedLauncher`], the launches of `harness mcp --http` (the agent gets a
//!   token reaching its session only, in [`TOKEN_ENV`]).
//!
//! At most once per occurrence: the owed reminders are claimed in the log
//! (`mcp/launchClaimed`) and the claim is flushed before anything starts; a claimed reminder
//! is never delivered to a tool result or a task, and a claim is never started twice (a claim
//! whose runner died is reported as launched with an unknown outcome).

mod claim;
mod config;
mod cron;
mod record;
mod run;
mod served;

pub use config::{
    ENDPOINT_PLACEHOLDER, LaunchConfig, LaunchVars, PROMPT_PLACEHOLDER, SESSION_PLACEHOLDER,
};
pub use cron::{CronOptions, run_cron};
pub use record::{LAUNCH_ENDED_EVENT, LAUNCH_UNKNOWN_EVENT};
pub use run::{LaunchOutcome, run_launch};
pub use served::{ServedLauncher, TOKEN_ENV};
