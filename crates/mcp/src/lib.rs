#![doc = include_str!("../README.md")]

mod error;
mod host;
mod inbox;
mod serve;
mod server;
mod session;
mod transport;

pub use error::ServeError;
pub use inbox::{CLAIMED_EVENT, InboxLogError, QUEUED_EVENT};
pub use serve::{ServeOptions, serve, serve_stdio};
pub use server::ResultShape;
pub use session::{INBOX_URI, SessionHost, SessionOptions};
pub use turnkit_families::FamiliesConfig;
