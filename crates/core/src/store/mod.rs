//! Session stores: the [`SessionStore`] seam, [`MemoryStore`] and [`JsonlStore`].

mod jsonl;
mod log;
mod memory;

use std::sync::Arc;

pub use jsonl::{JsonlStore, SessionFile, TornTail};
pub use memory::MemoryStore;

use crate::{Session, SessionHeader, SessionId};

/// Why a store could not create, open or fork a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A session with this id already exists.
    #[error("session {0} already exists")]
    AlreadyExists(SessionId),
    /// No session with this id exists.
    #[error("session {0} not found")]
    NotFound(SessionId),
    /// The id cannot name a session in this store (JSONL: empty, `.`/`..`, or containing `/`,
    /// `\` or a NUL byte).
    #[error("invalid session id {0:?}")]
    InvalidId(String),
    /// A line of a session file is not a valid header or event. `line` is 1-based.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The file path.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An operating-system error.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Creates, opens and forks sessions. Implemented by [`MemoryStore`] and [`JsonlStore`].
pub trait SessionStore: Send + Sync {
    /// Creates an empty session with this header.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`], [`StoreError::InvalidId`], or an I/O error.
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError>;

    /// Opens an existing session and replays its log.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Malformed`] (JSONL), or an I/O error.
    fn open(&self, id: &SessionId) -> Result<Arc<dyn Session>, StoreError>;

    /// The ids of every stored session, sorted.
    fn list(&self) -> Vec<SessionId>;

    /// Creates `id` as a fork of `parent`: the parent's events are copied with their seq
    /// numbers and the header's `seed_length` is set to their count. The parent's time zone
    /// is inherited.
    ///
    /// # Errors
    /// As [`SessionStore::create`].
    fn fork(&self, parent: &dyn Session, id: SessionId) -> Result<Arc<dyn Session>, StoreError> {
        let events = parent.raw_events_after(0);
        let header = SessionHeader {
            id,
            seed_length: Some(events.len() as u64),
            time_zone: parent.header().time_zone.clone(),
        };
        self.create_with_events(header, events)
    }

    /// Creates a session whose log starts with `events`, shared as they are (used by
    /// [`SessionStore::fork`]).
    ///
    /// # Errors
    /// As [`SessionStore::create`].
    fn create_with_events(
        &self,
        header: SessionHeader,
        events: Vec<crate::RawEvent>,
    ) -> Result<Arc<dyn Session>, StoreError>;
}
