//! [`SessionStore`]: the seam every session store implements.

use std::sync::Arc;

use crate::store::error::StoreError;
use crate::{Session, SessionHeader, SessionId};

/// Creates, opens and forks sessions. Implemented by [`MemoryStore`](crate::MemoryStore) and [`JsonlStore`](crate::JsonlStore).
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
    /// ([`StoreError::Locked`] while another lives); [`MemoryStore`](crate::MemoryStore) returns the same live log
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
