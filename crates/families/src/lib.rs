#![doc = include_str!("../README.md")]

mod catalog;
mod config;
mod entry;
mod install;
mod markdown;
mod members;
mod resources;
mod runtime;
mod summary;
mod tasks;
mod walls;

pub use catalog::{ChildrenMode, SetupError, catalog, projections};
pub use config::{FamiliesConfig, present};
pub use entry::{Children, Entry, Install, Member, Setup};
pub use install::Families;
pub use markdown::catalog_markdown;
pub use resources::{ChangedBy, FamilyResource, ResourceContext, ResourceTemplate, resources};
pub use runtime::{RunFailure, block_on_fresh};
pub use summary::{FileSummary, LogFileError, summarize_log, summarize_log_file};
pub use tasks::{TaskTarget, cancel_target, final_output, task_notice, task_target, waited_target};
pub use walls::{SAFE_ENV, Walls, secret_env_name};
