#![doc = include_str!("../README.md")]

mod catalog;
mod grammar;
mod plugins;
mod runner;
mod runtime;

pub use catalog::{
    FileSummary, LogFileError, SetupError, host_tool_catalog, summarize_log, summarize_log_file,
    tool_catalog,
};
pub use grammar::{
    CancelMode, ClockKind, ClockSpec, Config, FaultMode, Phase, SettleStatus, Step, StoreKind,
};
pub use runner::{Transcript, run_scenario, run_scenario_in_runtime};
pub use turnkit_testkit::catalog_markdown;
