#![doc = include_str!("../README.md")]

pub mod domain;
mod ledger;
mod plugin;
mod runtime;
pub mod tools;

pub use plugin::{Installed, PLUGIN_NAME, ScheduleConfig, install};
pub use tools::{Notify, ScheduleTools};
