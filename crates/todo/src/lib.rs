#![doc = include_str!("../README.md")]

mod config;
mod definition;
mod error;
mod install;
mod invariant;
mod item;
mod projection;
mod write;

pub use config::{InProgressPolicy, PLUGIN_NAME, TodoConfig};
pub use definition::{TOOL_NAME, definition, description, input_schema, output_schema};
pub use error::TodoError;
pub use install::{Installed, install};
pub use invariant::{
    IncoherentWrite, InvariantViolation, check_event, check_history, check_raw_event,
    find_violations,
};
pub use item::{TodoCounts, TodoItem, TodoStatus, TodoWriteValue};
pub use projection::{TODOS_KEY, TODOS_STATE_VERSION, TodosProjection, TodosState};
pub use write::{CallCard, TODO_WRITE_EVENT, TodoWriteTool, present_call};
