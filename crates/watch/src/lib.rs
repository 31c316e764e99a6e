#![doc = include_str!("../README.md")]

mod check;
mod config;
mod durable;
mod frame;
mod hub;
mod install;
mod launch;
mod lines;
mod output;
mod path;
mod snapshot;
mod tool;

pub use config::{PLUGIN_NAME, WatchConfig};
pub use install::{Installed, install};
pub use tool::{CHECKS_UNAVAILABLE, JOBS_UNAVAILABLE, TOOL_NAME, WATCH_KIND, WatchTool, Watches};
