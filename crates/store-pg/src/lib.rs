#![doc = include_str!("../README.md")]

mod copy;
mod db;
mod flush;
mod follow;
mod lease;
mod migrate;
mod notify;
mod options;
mod password;
mod rows;
mod scanner;
mod session;
mod shared;
mod store;

pub use follow::{FollowOptions, Follower};
pub use lease::{Lease, STOP_AFTER};
pub use options::PgOptions;
pub use password::{PassFile, PassKey, PgPassword, url_has_password, url_socket_folders};
pub use rows::SessionRow;
pub use scanner::{ReminderScanner, Resume, ScanOptions, ScanStats};
pub use session::PgSession;
pub use store::PgStore;
