#![doc = include_str!("../README.md")]

pub mod domain;
mod index;
mod ledger;
mod plugin;
mod runtime;
pub mod tools;

/// The plugin name (schedule.md §14).
pub const PLUGIN_NAME: &str = "schedule";

pub use index::ReminderIndex;
pub use plugin::{Installed, ScheduleConfig, install};
pub use tools::{Notify, ScheduleTools};
