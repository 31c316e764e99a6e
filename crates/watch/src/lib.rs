#![doc = include_str!("../README.md")]

mod config;
mod frame;
mod install;
mod lines;
mod output;
mod tool;

pub use config::{PLUGIN_NAME, WatchConfig};
pub use install::{Installed, install};
pub use tool::{JOBS_UNAVAILABLE, TOOL_NAME, WATCH_KIND, WatchTool, Watches};
