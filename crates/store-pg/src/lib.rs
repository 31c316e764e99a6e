#![doc = include_str!("../README.md")]

mod db;
mod lease;
mod migrate;
mod reminders;
mod scanner;
mod session;
mod store;

pub use lease::Lease;
pub use scanner::{ReminderScanner, Resume, ScanOptions, ScanStats};
pub use session::PgSession;
pub use store::{PgOptions, PgStore};
