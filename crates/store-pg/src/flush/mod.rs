//! The flush: one statement that checks the caller's ownership and last seq, inserts the
//! pending batch and notifies followers, with the index rows the batch implies in the same
//! transaction (docs/event-log.md, "The PostgreSQL store").
//!
//! Flushes of different sessions that wait at the same time share a transaction (group
//! commit): each session's check and notification are its own, decided row by row in one
//! `UPDATE`, then one `COPY` inserts the batches of the sessions whose check held, so one
//! transaction and one WAL flush carry them all.
//!
//! - [`Writer`] (`writer`): the entry of every flush, and the writers that take waiting
//!   flushes in groups.
//! - `queue`: the flushes waiting for a writer, the groups taken from them, [`FlushOutcome`].
//! - `single`: one session's flush statement, and why a check did not hold.
//! - `group`: a group's transaction (one checking `UPDATE`, one binary `COPY`).
//! - `rows`: a group's events as binary `COPY` rows.
//! - `index`: the index rows a batch implies, written in its transaction.

mod group;
mod index;
mod queue;
mod rows;
mod single;
mod writer;

pub(crate) use queue::FlushOutcome;
pub(crate) use writer::Writer;
