#![doc = include_str!("../README.md")]

mod capabilities;
mod error;
mod handoff;
mod host;
pub mod http;
mod inbox;
mod lines;
mod serve;
mod server;
mod session;
mod tasks;
mod transport;
mod unavailable;

pub use error::ServeError;
pub use handoff::owes_reminder;
pub use inbox::{
    CLAIMED_EVENT, InboxLogError, LAUNCH_CLAIMED_EVENT, LaunchClaim, QUEUED_EVENT,
    SUPERSEDED_EVENT, TASK_DELIVERED_EVENT,
};
pub use serve::{ServeOptions, serve, serve_stdio};
pub use server::{OWED_FIELD, ResultShape, mcp_tool};
pub use session::{INBOX_URI, MCP_DELIVERY, MCP_NOTICES, SessionHost, SessionOptions};
pub use tasks::{JOB_TASK_TTL, TASK_CANCELLED_EVENT, TASK_EVENT};
pub use turnkit_families::FamiliesConfig;
pub use unavailable::{serve_unavailable, serve_unavailable_stdio, unavailable_reason};
