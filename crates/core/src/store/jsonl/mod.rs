//! [`JsonlStore`]: one JSON Lines file per session — a header line, then one event per line.
//!
//! The folder provides the store (atomic create, open under an exclusive file lock, listing), the
//! session handle (appends buffer a line; a flush writes and syncs off the executor and puts the
//! file back at its durable length when it fails), and the parser that tells a torn last line
//! from corruption.
//!
//! - `store`: [`JsonlStore`] (create, open, list, fork).
//! - `open`: opening a file under its lock; `lock`: that lock.
//! - `parse`: [`SessionFile`], [`TornTail`] and the line parser.
//! - `session`: the handle, its buffered appends and its flush.
//! - `fault`: the errors that name a path.

mod fault;
mod lock;
mod open;
mod parse;
mod session;
mod store;

pub use parse::{SessionFile, TornTail};
pub use store::JsonlStore;

#[cfg(test)]
use open::open_file;
#[cfg(test)]
use session::{JsonlSession, LogFile};
#[cfg(test)]
use store::TEMP_SERIAL;

#[cfg(test)]
mod tests;
