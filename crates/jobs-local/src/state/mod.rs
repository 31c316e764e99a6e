//! The registry's state behind its one lock (todo-jobs §4.2): records, indexes, owner
//! entries, per-kind counters and the registration layers, plus routing by scope (§1.3).
//!
//! One topic per file: `record` (one job's record, its owner and hooks), `records` (the
//! record store and its per-owner lists), `kinds` (ids by kind), `routes` (registration
//! layers and routing), `locked` (the [`State`] the lock guards) and `map` (the hash map
//! they share).

mod kinds;
mod locked;
mod map;
mod record;
mod records;
mod routes;

pub(crate) use kinds::split_id;
pub(crate) use locked::State;
pub(crate) use record::{
    Cancel, CancelFn, OwnerEntry, OwnerInfo, OwnerKey, Record, Stream, Target, Teardown, Waiter,
    owner_key,
};
pub(crate) use records::Records;
pub(crate) use routes::{Layered, Layers, for_each_route, serves};

#[cfg(test)]
mod tests;
