//! Fixed-rate arithmetic with latest-only catch-up (schedule.md §6).

use turnkit_core::MAX_SAFE_INTEGER;

use super::error::ResolveError;
use super::instant::{MAX_MILLIS, MIN_MILLIS, Timestamp};

/// The result of resolving an `every` record at a decision time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Occurrence {
    /// The latest creation-aligned occurrence ≤ the decision time (the one presented).
    pub occurrence_at: Timestamp,
    /// The first aligned point strictly after the decision time, or `None` when it would
    /// be after `9999-12-31T23:59:59.999Z` (the record terminates on this dispatch).
    pub next_scheduled_at: Option<Timestamp>,
}

/// Resolves an `every` record with target `scheduled_at` and interval `every_seconds` at the
/// decision time `accepted_at_ms` (epoch milliseconds), per §6:
/// `steps = ⌊(A − T) / I⌋`, `occurrence = T + steps·I`, `next = occurrence + I`.
///
/// # Errors
/// In this order: [`ResolveError::AcceptedAtOutOfRange`] when `accepted_at_ms` is not a safe
/// integer inside the representable range; [`ResolveError::IntervalNotSafe`] when
/// `every_seconds × 1000` is not a positive safe integer; [`ResolveError::Precedes`] when
/// `accepted_at_ms < scheduled_at`.
pub(crate) fn resolve_every(
    scheduled_at: Timestamp,
    every_seconds: i64,
    accepted_at_ms: i64,
) -> Result<Occurrence, ResolveError> {
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&accepted_at_ms) {
        return Err(ResolveError::AcceptedAtOutOfRange);
    }
    let interval = match every_seconds.checked_mul(1000) {
        Some(ms) if ms > 0 && ms <= MAX_SAFE_INTEGER => ms,
        _ => return Err(ResolveError::IntervalNotSafe),
    };
    let target = scheduled_at.millis();
    if accepted_at_ms < target {
        return Err(ResolveError::Precedes);
    }
    // Both in range, so the difference and the products below stay far from i64 limits.
    let steps = (accepted_at_ms - target) / interval;
    let occurrence = target + steps * interval;
    let occurrence_at = Timestamp::from_millis(occurrence).ok_or(ResolveError::Precedes)?;
    let next_scheduled_at = occurrence
        .checked_add(interval)
        .and_then(Timestamp::from_millis);
    Ok(Occurrence {
        occurrence_at,
        next_scheduled_at,
    })
}

#[cfg(test)]
#[path = "every_tests.rs"]
mod tests;
