#![doc = include_str!("../README.md")]
// A PTY and the process model (sessions, signals, /proc) are Unix only; elsewhere the crate
// is empty.
#![cfg(unix)]

mod config;
mod install;
mod keys;
mod screen;
mod send;
mod terminal;
mod tool;

pub use config::{DEFAULT_RESULT_BYTES, MIN_RESULT_BYTES, PLUGIN_NAME, TerminalConfig};
pub use install::{Installed, install};
pub use keys::{KEY_NAMES, key_bytes, unknown_key};
pub use screen::Screen;
pub use send::{KIND, Send, SendEnd, SendError, send_job_start};
pub use terminal::{Terminal, TerminalError, TerminalId, TerminalOptions};
pub use tool::{
    JOBS_UNAVAILABLE, KILL_TOOL, KillTool, Killed, SEND_TOOL, START_TOOL, SendTool, StartTool,
    Terminals, TerminalsError,
};
