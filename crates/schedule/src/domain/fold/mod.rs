//! The fold (schedule.md §5), maintained incrementally, with id allocation (§7) and the due
//! decision (§12.3).
//!
//! [`ScheduleFold::open_raw`] replays a whole log once (at session open); afterwards the
//! owner keeps the fold and calls [`ScheduleFold::apply_raw`] for each new event
//! (`session.raw_events_after(fold.last_seq())`), so a tool call costs O(new events), not
//! O(log). [`ScheduleFold::open`] and [`ScheduleFold::apply`] do the same over decoded
//! [`SessionEvent`]s.
//!
//! - `state`: [`ScheduleFold`] and [`FoldSnapshot`]: replay, apply, transitions, queries.
//! - `decide`: the due decision ([`Decision`], [`EveryBatch`]).
//! - `event`: the two event forms the fold reads.
//! - `seen`: [`SeenIds`] and id allocation (§7).

mod decide;
mod event;
mod seen;
mod state;

pub use decide::{Decision, EveryBatch};
pub use seen::SeenIds;
pub use state::{FoldSnapshot, ScheduleFold};

#[cfg(test)]
use crate::domain::change::{SCHEDULE_CHANGE, ScheduleChange, ScheduleRecord};
#[cfg(test)]
use crate::domain::error::{ResolveError, ScheduleLogError};
#[cfg(test)]
use crate::domain::every::resolve_every;
#[cfg(test)]
use crate::domain::instant::Timestamp;
#[cfg(test)]
use seen::*;
#[cfg(test)]
use state::check_seed_length;

#[cfg(test)]
mod tests;
