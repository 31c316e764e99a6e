//! [`BatchIndex`]: the rows of a store-kept index that a batch of a family's events implies.
//!
//! A store that keeps an index next to the log (the PostgreSQL store's due-reminder index,
//! read by its reminder scanner to find sessions with something due while no host has them
//! open) does not read event payloads itself: the family that owns the events says, for each
//! batch about to be written, which rows to put or remove, and the store writes exactly those
//! in the transaction that commits the batch. The rules (decoding, arithmetic) live in the
//! family; the store never names an event type.
//!
//! The index of one session is a value: [`BatchIndex::start`] builds it from the log a store
//! opened, and [`SessionIndex::after`] answers the rows a batch implies together with the
//! index as it stands once that batch is committed, leaving `self` as it was (a batch whose
//! write fails is sent again later, with the same answer).

use std::fmt;

use chrono::{DateTime, Utc};

use crate::RawEvent;

/// One change to a session's index rows, in batch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexChange {
    /// The row `key` is due at `due` (inserted, or moved when it exists).
    Put {
        /// The family's key for the row, unique within the session (a schedule record id).
        key: String,
        /// When the row is due.
        due: DateTime<Utc>,
    },
    /// The row `key` is gone (nothing is due for it any more).
    Remove {
        /// The family's key for the row.
        key: String,
    },
}

/// The index rules of one family, given to a store at its construction.
pub trait BatchIndex: Send + Sync + fmt::Debug {
    /// The index of a session whose durable log is `log` (empty for a new session).
    fn start(&self, log: &[RawEvent]) -> Box<dyn SessionIndex>;
}

/// One session's index as of the events committed so far.
pub trait SessionIndex: Send + Sync + fmt::Debug {
    /// The rows `batch` (the events after those this index has seen, in seq order) implies,
    /// and the index once it is committed; `None` when the batch leaves the index alone.
    /// Events the family cannot read are left out (its own replay reports them).
    fn after(&self, batch: &[RawEvent]) -> Option<IndexUpdate>;
}

/// What [`SessionIndex::after`] answers for a batch that changes the index.
#[derive(Debug)]
pub struct IndexUpdate {
    /// The changes to write with the batch, in order (possibly empty, when the batch only
    /// changes what the index remembers).
    pub changes: Vec<IndexChange>,
    /// The index once the batch is committed.
    pub next: Box<dyn SessionIndex>,
}
