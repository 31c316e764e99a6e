//! Session stores: the [`SessionStore`] seam, [`MemoryStore`] and [`JsonlStore`], and the
//! [`BatchIndex`] seam through which a family names the index rows its events imply.

mod index;
mod jsonl;
mod log;
mod memory;

use std::sync::Arc;

pub use index::{BatchIndex, IndexChange, IndexUpdate, SessionIndex};
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
    /// A newline-terminated line of a session file is not a valid header or event (including
    /// a blank line, invalid UTF-8, a gap in `seq`, and a header naming another session than
    /// the file's), wherever it stands; nothing in the file was changed. `line` is 1-based.
    /// Corruption: a person must look at the file.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The file path.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Another live handle — in this process or another — holds this session's file open for
    /// writing (JSONL: its exclusive advisory lock). Nothing was read or changed. The lock goes
    /// when that handle is dropped or its process dies; use the live handle, or retry after.
    /// A held lock is waited for up to 100 ms first: a process being started from this one
    /// shares the lock between `fork` and `exec`, for a moment after the last handle is gone.
    #[error("session file {path} is locked by another open handle")]
    Locked {
        /// The session file.
        path: String,
    },
    /// Another host owns the session (the PostgreSQL store: a live lease held by `owner`).
    /// Nothing was read or changed. Leave the session to its owner, or retry after the lease
    /// expires (docs/event-log.md, "Write ownership").
    #[error("session {session} is owned by host {owner}; retry after its lease expires")]
    Owned {
        /// The session.
        session: SessionId,
        /// The host id holding the lease.
        owner: String,
    },
    /// A database-backed store could not run its statement (connection refused, query failed);
    /// nothing was changed. `message` is the database client's. Retry when the cause is gone.
    #[error("store backend error: {message}")]
    Backend {
        /// The client's error message.
        message: String,
    },
    /// The session file has no complete header line (zero bytes, or a header without its
    /// newline): what a create interrupted in a build without atomic create leaves. No event
    /// was ever acknowledged in such a file, so nothing is lost by removing it; the file was
    /// not changed. Recovery: delete the file and create the session again.
    #[error(
        "{file}: no complete session header (left by an interrupted create); \
         nothing in it was acknowledged: delete the file and create the session again"
    )]
    InterruptedCreate {
        /// The session file.
        file: String,
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
    /// Atomic: when it fails or the process dies, either no session exists or a complete one.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`], [`StoreError::InvalidId`], or an I/O error.
    fn create(&self, header: SessionHeader) -> Result<Arc<dyn Session>, StoreError>;

    /// Opens an existing session and replays its log.
    ///
    /// A store with durable files hands out one writing handle per session at a time
    /// ([`StoreError::Locked`] while another lives); [`MemoryStore`] returns the same live log
    /// to every caller.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::InvalidId`], and for JSONL
    /// [`StoreError::Locked`], [`StoreError::Malformed`] (also when the header names another
    /// session), [`StoreError::InterruptedCreate`], or an I/O error.
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
