#![doc = include_str!("../README.md")]

mod config;
mod error;
mod host;
mod inbox;
mod lines;
mod serve;
mod server;
mod session;
mod transport;

pub use config::FamilyConfigs;
pub use error::ServeError;
pub use inbox::{CLAIMED_EVENT, InboxLogError, QUEUED_EVENT};
pub use serve::{ServeOptions, serve, serve_stdio};
pub use server::{OWED_FIELD, ResultShape};
pub use session::{
    INBOX_URI, JOB_URI_PREFIX, JOBS_URI, MCP_DELIVERY, MCP_NOTICES, REMINDERS_URI, SessionHost,
    SessionOptions, TODOS_URI,
};
