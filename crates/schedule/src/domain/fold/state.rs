//! [`ScheduleFold`]: the folded state of a session's owned suffix (§5, §5.1), its replay and
//! incremental apply, the transitions a change makes, and the queries on it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use turnkit_core::{MAX_SAFE_INTEGER, RawEvent, SessionEvent, as_safe_integer};

use super::event::FoldEvent;
use super::seen::{SeenIds, allocate_with};
use crate::domain::change::{
    ChangeRef, SCHEDULE_CHANGE, ScheduleChange, ScheduleRecord, decode_change,
};
use crate::domain::error::ScheduleLogError;
use crate::domain::instant::Timestamp;

/// The folded schedule state of one session's owned suffix (§5, §5.1).
///
/// Holds the active records in creation order (an advanced `every` keeps its slot), every id
/// ever created in the owned suffix, and ordered target indexes for the due decision. Once an
/// event fails to fold the state is *corrupt*: it stays frozen and every later
/// [`ScheduleFold::apply`] returns the same error (an append-only log never heals).
#[derive(Clone, Debug, Default)]
pub struct ScheduleFold {
    /// Creation counter → active record.
    pub(super) active: BTreeMap<u64, ScheduleRecord>,
    /// Every id created in the owned suffix, with its creation counter (the record's slot
    /// while it is active).
    ids: SeenIds,
    /// `(scheduledAt ms, creation counter)` of active one-shots / every records.
    pub(super) one_shot_targets: BTreeSet<(i64, u64)>,
    pub(super) every_targets: BTreeSet<(i64, u64)>,
    seed_length: u64,
    last_seq: u64,
    corrupt: Option<ScheduleLogError>,
}

/// A comparable copy of a fold's observable state: active records in creation order and
/// seen ids in creation order (what §5 outputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldSnapshot {
    /// Active records in creation order.
    pub active: Vec<ScheduleRecord>,
    /// Every id ever created in the owned suffix, in creation order.
    pub seen_ids: Vec<String>,
}

impl ScheduleFold {
    /// An empty fold for a session with `seed_length` inherited events: events whose `seq` is
    /// ≤ `seed_length` are skipped by [`ScheduleFold::apply`].
    pub fn with_seed(seed_length: u64) -> ScheduleFold {
        ScheduleFold {
            seed_length,
            last_seq: seed_length,
            ..ScheduleFold::default()
        }
    }

    /// Full fold of a session log (§5): skips the first `seed_length` events (`None` = 0;
    /// never decoded, even if malformed), ignores other event types, applies the rest.
    ///
    /// # Errors
    /// [`ScheduleLogError`] when `seed_length` exceeds the log (detail mentions
    /// `seedLength`) or any owned `schedule/change` event is invalid.
    pub fn open(
        events: &[SessionEvent],
        seed_length: Option<u64>,
    ) -> Result<ScheduleFold, ScheduleLogError> {
        Self::open_events(events, seed_length)
    }

    /// [`ScheduleFold::open`] over the log's own form: each owned `schedule/change` payload is
    /// decoded straight from its raw JSON (the strict decoder of §4 over the text), other events are skipped by
    /// type without being decoded. Same result, same errors.
    ///
    /// # Errors
    /// As [`ScheduleFold::open`].
    pub fn open_raw(
        events: &[RawEvent],
        seed_length: Option<u64>,
    ) -> Result<ScheduleFold, ScheduleLogError> {
        Self::open_events(events, seed_length)
    }

    fn open_events<E: FoldEvent>(
        events: &[E],
        seed_length: Option<u64>,
    ) -> Result<ScheduleFold, ScheduleLogError> {
        let seed = seed_length.unwrap_or(0);
        let skip = usize::try_from(seed)
            .ok()
            .filter(|skip| *skip <= events.len())
            .ok_or_else(|| {
                ScheduleLogError::new(format!(
                    "seedLength {seed} exceeds the log length {}",
                    events.len()
                ))
            })?;
        let mut fold = ScheduleFold::with_seed(seed);
        for event in &events[skip..] {
            fold.apply_owned(event)?;
        }
        if let Some(last) = events.last() {
            fold.last_seq = fold.last_seq.max(last.seq());
        }
        Ok(fold)
    }

    /// Full fold of bare payloads `(event type, data)` (the shape of the spec's domain
    /// tests): `seed_length` is a JSON number that must be a safe integer within
    /// `0..=events.len()`.
    ///
    /// # Errors
    /// [`ScheduleLogError`] as [`ScheduleFold::open`]; a bad `seed_length` mentions
    /// `seedLength`.
    pub fn open_payloads<'a>(
        events: impl ExactSizeIterator<Item = (&'a str, &'a Value)>,
        seed_length: &Value,
    ) -> Result<ScheduleFold, ScheduleLogError> {
        let seed = check_seed_length(seed_length, events.len())?;
        // `check_seed_length` bounds it by the length, which is a usize.
        let seed = usize::try_from(seed).unwrap_or(usize::MAX);
        let mut fold = ScheduleFold::with_seed(0);
        for (r#type, data) in events.skip(seed) {
            if r#type == SCHEDULE_CHANGE {
                fold.apply_value(data)?;
            }
        }
        Ok(fold)
    }

    /// Applies one session event: events already applied (`seq ≤ last_seq`, so replaying an
    /// overlapping suffix is harmless), inherited events (`seq ≤ seed_length`) and types other
    /// than `schedule/change` are skipped; `last_seq` advances to `event.seq`.
    ///
    /// # Errors
    /// [`ScheduleLogError`] if the change is invalid or the fold is already corrupt; the
    /// state is left unchanged and becomes corrupt.
    pub fn apply(&mut self, event: &SessionEvent) -> Result<(), ScheduleLogError> {
        self.apply_event(event)
    }

    /// [`ScheduleFold::apply`] for an event in the log's own form (the payload is decoded
    /// straight from its raw JSON, and only for an owned `schedule/change`).
    ///
    /// # Errors
    /// As [`ScheduleFold::apply`].
    pub fn apply_raw(&mut self, event: &RawEvent) -> Result<(), ScheduleLogError> {
        self.apply_event(event)
    }

    fn apply_event<E: FoldEvent>(&mut self, event: &E) -> Result<(), ScheduleLogError> {
        if let Some(error) = &self.corrupt {
            return Err(error.clone());
        }
        if event.seq() <= self.last_seq {
            return Ok(());
        }
        if event.seq() > self.seed_length {
            self.apply_owned(event)?;
        }
        self.last_seq = self.last_seq.max(event.seq());
        Ok(())
    }

    fn apply_owned<E: FoldEvent>(&mut self, event: &E) -> Result<(), ScheduleLogError> {
        if event.is_change() {
            if let Some(error) = &self.corrupt {
                return Err(error.clone());
            }
            match event.transition() {
                // A delete or dispatch read in place: what decoding it and applying the
                // change does, without an owned id.
                Some(change) => self.apply_ref(change),
                None => self.apply_decoded(event.change()),
            }
        } else {
            Ok(())
        }
    }

    /// Decodes and applies one `schedule/change` payload.
    ///
    /// # Errors
    /// As [`ScheduleFold::apply_change`], plus decoding errors (§4).
    pub fn apply_value(&mut self, data: &Value) -> Result<(), ScheduleLogError> {
        if let Some(error) = &self.corrupt {
            return Err(error.clone());
        }
        self.apply_decoded(decode_change(data))
    }

    fn apply_decoded(
        &mut self,
        decoded: Result<ScheduleChange, ScheduleLogError>,
    ) -> Result<(), ScheduleLogError> {
        match decoded {
            Ok(change) => self.apply_change(change),
            Err(error) => {
                self.corrupt = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Applies one decoded change (§5 step 4).
    ///
    /// # Errors
    /// [`ScheduleLogError`]: a reused id (`was reused`), a transition of an inactive id
    /// (`inactive id`), a one-shot dispatch with `acceptedAt` (`must not contain
    /// acceptedAt`), an every dispatch without it (`must contain acceptedAt`), or an every
    /// dispatch before its target (`cannot precede`). The fold is then corrupt and unchanged.
    pub fn apply_change(&mut self, change: ScheduleChange) -> Result<(), ScheduleLogError> {
        if let Some(error) = &self.corrupt {
            return Err(error.clone());
        }
        match self.transition(&change) {
            Ok(transition) => {
                self.commit(change, transition);
                Ok(())
            }
            Err(error) => {
                self.corrupt = Some(error.clone());
                Err(error)
            }
        }
    }

    /// [`ScheduleFold::apply_change`] for a delete or dispatch with a borrowed id.
    fn apply_ref(&mut self, change: ChangeRef<'_>) -> Result<(), ScheduleLogError> {
        match self.transition_of(change) {
            Ok(transition) => {
                self.commit_transition(transition);
                Ok(())
            }
            Err(error) => {
                self.corrupt = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Checks that `change` would fold cleanly on top of this state, without applying it
    /// (the §15 invariant for an append candidate).
    ///
    /// # Errors
    /// As [`ScheduleFold::apply_change`].
    pub fn check_change(&self, change: &ScheduleChange) -> Result<(), ScheduleLogError> {
        if let Some(error) = &self.corrupt {
            return Err(error.clone());
        }
        self.transition(change).map(|_| ())
    }

    fn transition(&self, change: &ScheduleChange) -> Result<Transition, ScheduleLogError> {
        match change {
            ScheduleChange::Create(record) => {
                if self.ids.contains(record.id()) {
                    Err(ScheduleLogError::new(format!(
                        "schedule id {:?} was reused",
                        record.id()
                    )))
                } else {
                    Ok(Transition::Create)
                }
            }
            ScheduleChange::Delete { id } => self.transition_of(ChangeRef::Delete(id)),
            ScheduleChange::Dispatch { id } => self.transition_of(ChangeRef::Dispatch(id)),
            ScheduleChange::DispatchEvery { id, accepted_at } => {
                self.transition_of(ChangeRef::DispatchEvery(id, *accepted_at))
            }
        }
    }

    /// The transition of a delete or dispatch.
    fn transition_of(&self, change: ChangeRef<'_>) -> Result<Transition, ScheduleLogError> {
        match change {
            ChangeRef::Delete(id) => {
                let (slot, _) = self.active_slot(id)?;
                Ok(Transition::Remove(slot))
            }
            ChangeRef::Dispatch(id) => {
                let (slot, record) = self.active_slot(id)?;
                if record.kind().is_one_shot() {
                    Ok(Transition::Remove(slot))
                } else {
                    Err(ScheduleLogError::new(format!(
                        "every dispatch of {id:?} must contain acceptedAt"
                    )))
                }
            }
            ChangeRef::DispatchEvery(id, accepted_at) => {
                let (slot, record) = self.active_slot(id)?;
                if record.kind().is_one_shot() {
                    return Err(ScheduleLogError::new(format!(
                        "one-shot dispatch of {id:?} must not contain acceptedAt"
                    )));
                }
                let occurrence = record.resolve(accepted_at.millis()).map_err(|error| {
                    ScheduleLogError::new(format!("dispatch of {id:?}: {error}"))
                })?;
                match occurrence.next_scheduled_at {
                    Some(next) => Ok(Transition::Advance(slot, next)),
                    None => Ok(Transition::Remove(slot)),
                }
            }
        }
    }

    fn commit(&mut self, change: ScheduleChange, transition: Transition) {
        match change {
            ScheduleChange::Create(record) => {
                let slot = self.ids.insert(record.id_arc());
                self.targets_mut(&record)
                    .insert((record.scheduled_at().millis(), slot));
                self.active.insert(slot, record);
            }
            _ => self.commit_transition(transition),
        }
    }

    /// Commits the transition of a delete or dispatch.
    fn commit_transition(&mut self, transition: Transition) {
        match transition {
            Transition::Remove(slot) => {
                if let Some(record) = self.active.remove(&slot) {
                    self.targets_mut(&record)
                        .remove(&(record.scheduled_at().millis(), slot));
                }
            }
            Transition::Advance(slot, next) => {
                if let Some(record) = self.active.get_mut(&slot) {
                    self.every_targets
                        .remove(&(record.scheduled_at().millis(), slot));
                    self.every_targets.insert((next.millis(), slot));
                    record.set_scheduled_at(next);
                }
            }
            Transition::Create => {}
        }
    }

    fn targets_mut(&mut self, record: &ScheduleRecord) -> &mut BTreeSet<(i64, u64)> {
        if record.kind().is_one_shot() {
            &mut self.one_shot_targets
        } else {
            &mut self.every_targets
        }
    }

    /// The slot and record of an active id.
    fn active_slot(&self, id: &str) -> Result<(u64, &ScheduleRecord), ScheduleLogError> {
        self.ids
            .slot(id)
            .and_then(|slot| self.active.get(&slot).map(|record| (slot, record)))
            .ok_or_else(|| {
                ScheduleLogError::new(format!("transition references inactive id {id:?}"))
            })
    }

    /// The fold's error if it is corrupt.
    pub fn corruption(&self) -> Option<&ScheduleLogError> {
        self.corrupt.as_ref()
    }

    /// The fork boundary this fold skips (`header.seed_length`, 0 if none).
    pub fn seed_length(&self) -> u64 {
        self.seed_length
    }

    /// The highest event seq seen so far (read `session.raw_events_after(last_seq)` next).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Active records in creation order.
    pub fn active(&self) -> impl ExactSizeIterator<Item = &ScheduleRecord> + '_ {
        self.active.values()
    }

    /// Number of active records.
    pub fn active_len(&self) -> usize {
        self.active.len()
    }

    /// The active record with `id`.
    pub fn get(&self, id: &str) -> Option<&ScheduleRecord> {
        self.ids.slot(id).and_then(|slot| self.active.get(&slot))
    }

    /// Whether `id` is active.
    pub fn is_active(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Every id created in the owned suffix (including deleted / dispatched ones), in
    /// creation order.
    pub fn seen_ids(&self) -> &SeenIds {
        &self.ids
    }

    /// A comparable copy of the state.
    pub fn snapshot(&self) -> FoldSnapshot {
        FoldSnapshot {
            active: self.active.values().cloned().collect(),
            seen_ids: self.ids.iter().map(Cow::into_owned).collect(),
        }
    }

    /// The next free id (§7): `schedule-N` with N starting at |seen| + 1 and incremented
    /// while `schedule-N` was seen.
    pub fn allocate_id(&self) -> String {
        allocate_with(self.ids.len(), |id| self.ids.contains(id))
    }
}

#[derive(Clone, Copy)]
pub(super) enum Transition {
    Create,
    Remove(u64),
    Advance(u64, Timestamp),
}

/// Validates a JSON `seedLength` (§5 step 1) against a log of `len` events.
///
/// # Errors
/// [`ScheduleLogError`] mentioning `seedLength` unless it is a safe integer in `0..=len`.
pub(crate) fn check_seed_length(seed_length: &Value, len: usize) -> Result<u64, ScheduleLogError> {
    as_safe_integer(seed_length)
        .filter(|seed| (0..=MAX_SAFE_INTEGER).contains(seed))
        .and_then(|seed| u64::try_from(seed).ok())
        .filter(|seed| usize::try_from(*seed).is_ok_and(|seed| seed <= len))
        .ok_or_else(|| {
            ScheduleLogError::new(format!(
                "seedLength must be a safe integer between 0 and {len}"
            ))
        })
}
