//! The fold (schedule.md §5), maintained incrementally, with id allocation (§7) and the due
//! decision (§12.3).
//!
//! [`ScheduleFold::open_raw`] replays a whole log once (at session open); afterwards the
//! owner keeps the fold and calls [`ScheduleFold::apply_raw`] for each new event
//! (`session.raw_events_after(fold.last_seq())`), so a tool call costs O(new events), not
//! O(log). [`ScheduleFold::open`] and [`ScheduleFold::apply`] do the same over decoded
//! [`SessionEvent`]s.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;
use turnkit_core::{MAX_SAFE_INTEGER, RawEvent, SessionEvent, as_safe_integer};

use super::change::{
    ChangeRef, SCHEDULE_CHANGE, ScheduleChange, ScheduleRecord, canonical_transition,
    decode_change, decode_change_text,
};
use super::error::{ResolveError, ScheduleLogError};
use super::every::resolve_every;
use super::framing::{BatchItem, batch_framing, one_shot_framing};
use super::instant::Timestamp;

/// The folded schedule state of one session's owned suffix (§5, §5.1).
///
/// Holds the active records in creation order (an advanced `every` keeps its slot), every id
/// ever created in the owned suffix, and ordered target indexes for the due decision. Once an
/// event fails to fold the state is *corrupt*: it stays frozen and every later
/// [`ScheduleFold::apply`] returns the same error (an append-only log never heals).
#[derive(Clone, Debug, Default)]
pub struct ScheduleFold {
    /// Creation counter → active record.
    active: BTreeMap<u64, ScheduleRecord>,
    /// Every id created in the owned suffix, with its creation counter (the record's slot
    /// while it is active).
    ids: SeenIds,
    /// `(scheduledAt ms, creation counter)` of active one-shots / every records.
    one_shot_targets: BTreeSet<(i64, u64)>,
    every_targets: BTreeSet<(i64, u64)>,
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
                let Some(every_seconds) = record.every_seconds() else {
                    return Err(ScheduleLogError::new(format!(
                        "one-shot dispatch of {id:?} must not contain acceptedAt"
                    )));
                };
                let occurrence =
                    resolve_every(record.scheduled_at(), every_seconds, accepted_at.millis())
                        .map_err(|error| {
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

    /// The earliest target over all active records (what a waiting runtime arms its timer
    /// for), if any.
    pub fn next_target(&self) -> Option<Timestamp> {
        let one_shot = self.one_shot_targets.first().map(|(ms, _)| *ms);
        let every = self.every_targets.first().map(|(ms, _)| *ms);
        one_shot
            .into_iter()
            .chain(every)
            .min()
            .and_then(Timestamp::from_millis)
    }

    /// The due decision at `now_ms` (§12.3), pure:
    /// 1. the due one-shot with the smallest target (ties: creation order) →
    ///    [`Decision::OneShot`];
    /// 2. else every due `every` record, ordered by target then creation order, each with its
    ///    latest occurrence at `now_ms` → [`Decision::EveryBatch`] with
    ///    `accepted_at = now_ms`;
    /// 3. else [`Decision::Wait`] for [`ScheduleFold::next_target`].
    ///
    /// # Errors
    /// [`ResolveError`] when a batch is due but `now_ms` is not representable (an absurd
    /// clock): the runtime warns and arms nothing.
    pub fn decide(&self, now_ms: i64) -> Result<Decision, ResolveError> {
        if let Some((target, slot)) = self.one_shot_targets.first()
            && *target <= now_ms
            && let Some(record) = self.active.get(slot)
        {
            return Ok(Decision::OneShot(record.clone()));
        }
        let due: Vec<u64> = self
            .every_targets
            .iter()
            .take_while(|(target, _)| *target <= now_ms)
            .map(|(_, slot)| *slot)
            .collect();
        if due.is_empty() {
            return Ok(Decision::Wait {
                next_target: self.next_target(),
            });
        }
        let accepted_at =
            Timestamp::from_millis(now_ms).ok_or(ResolveError::AcceptedAtOutOfRange)?;
        let mut items = Vec::with_capacity(due.len());
        for record in due.iter().filter_map(|slot| self.active.get(slot)) {
            let every_seconds = record.every_seconds().unwrap_or(0);
            let occurrence = resolve_every(record.scheduled_at(), every_seconds, now_ms)?;
            items.push(BatchItem {
                record: record.clone(),
                occurrence_at: occurrence.occurrence_at,
                next_scheduled_at: occurrence.next_scheduled_at,
            });
        }
        Ok(Decision::EveryBatch(EveryBatch { accepted_at, items }))
    }
}

/// What the fold reads of an event: both event forms fold alike.
trait FoldEvent {
    fn seq(&self) -> u64;
    /// Whether the event is a `schedule/change` (decided without decoding the payload).
    fn is_change(&self) -> bool;
    /// The payload decoded strictly (§4).
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError>;
    /// The payload as a delete or dispatch read in place, when it is in its canonical form
    /// (then [`FoldEvent::change`] decodes it to the same change).
    fn transition(&self) -> Option<ChangeRef<'_>> {
        None
    }
}

impl FoldEvent for SessionEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn is_change(&self) -> bool {
        self.r#type == SCHEDULE_CHANGE
    }
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError> {
        decode_change(&self.data)
    }
}

impl FoldEvent for RawEvent {
    fn seq(&self) -> u64 {
        RawEvent::seq(self)
    }
    fn is_change(&self) -> bool {
        self.r#type() == SCHEDULE_CHANGE
    }
    fn change(&self) -> Result<ScheduleChange, ScheduleLogError> {
        decode_change_text(self.payload())
    }
    fn transition(&self) -> Option<ChangeRef<'_>> {
        canonical_transition(self.payload())
    }
}

/// The fold's id map: foldhash, not SipHash (ids come from our own log, and the map is
/// touched once per change).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Every id created in a fold's owned suffix, in creation order, each with its creation
/// counter (its index in that order).
///
/// Ids of the form `schedule-N` (what §7 allocates: `N` in decimal without leading zeros)
/// are held as the number `N`, most of them in a table indexed by `N`; other ids are
/// hashed. Remembering an allocated id costs a few bytes and no allocation.
#[derive(Clone, Debug, Default)]
pub struct SeenIds {
    /// Creation order: `N` of a `schedule-N` id, or the index of a named id in `named`
    /// with [`NAMED`] set.
    order: Vec<u64>,
    /// At `N`: 1 + the creation counter of `schedule-N` (0: not seen or held in `sparse`).
    dense: Vec<u64>,
    /// `schedule-N` ids whose `N` is too far beyond the count to be held in `dense`.
    sparse: HashMap<u64, u64>,
    /// Every other id → its creation counter.
    named: HashMap<Arc<str>, u64>,
    /// Other ids in creation order (indexed from `order`).
    names: Vec<Arc<str>>,
}

/// The tag of a named id in [`SeenIds::order`].
const NAMED: u64 = 1 << 63;

/// `N` of an id `schedule-N` whose `N` is written in decimal without leading zeros (so the
/// id is `format!("schedule-{N}")`), below 10^18.
fn numbered(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("schedule-")?.as_bytes();
    if digits.is_empty() || digits.len() > 18 || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &digit| {
        digit
            .is_ascii_digit()
            .then(|| n * 10 + u64::from(digit - b'0'))
    })
}

impl SeenIds {
    /// How many ids were seen.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no id was seen.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether `id` was seen.
    pub fn contains(&self, id: &str) -> bool {
        self.slot(id).is_some()
    }

    /// The ids in creation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cow<'_, str>> + '_ {
        self.order.iter().map(|&entry| {
            if entry & NAMED == 0 {
                Cow::Owned(format!("schedule-{entry}"))
            } else {
                let index = usize::try_from(entry & !NAMED).unwrap_or(usize::MAX);
                Cow::Borrowed(self.names.get(index).map_or("", |name| &**name))
            }
        })
    }

    /// The creation counter of a seen id.
    fn slot(&self, id: &str) -> Option<u64> {
        match numbered(id) {
            Some(n) => usize::try_from(n)
                .ok()
                .and_then(|n| self.dense.get(n))
                .and_then(|slot| slot.checked_sub(1))
                .or_else(|| {
                    if self.sparse.is_empty() {
                        None
                    } else {
                        self.sparse.get(&n).copied()
                    }
                }),
            None => self.named.get(id).copied(),
        }
    }

    /// Adds an id not seen before; returns its creation counter.
    fn insert(&mut self, id: &Arc<str>) -> u64 {
        let slot = self.order.len() as u64;
        match numbered(id) {
            Some(n) => {
                // The table grows to twice the count (plus some room), so ids allocated
                // by §7 (from the count upward) land in it.
                let bound = 2 * self.order.len() + 4096;
                match usize::try_from(n).ok().filter(|&n| n < bound) {
                    Some(index) => {
                        if self.dense.len() <= index {
                            self.dense.resize((index + 1).max(2 * self.dense.len()), 0);
                        }
                        self.dense[index] = slot + 1;
                    }
                    None => {
                        self.sparse.insert(n, slot);
                    }
                }
                self.order.push(n);
            }
            None => {
                self.order.push(NAMED | self.names.len() as u64);
                self.names.push(Arc::clone(id));
                self.named.insert(Arc::clone(id), slot);
            }
        }
        slot
    }
}

#[derive(Clone, Copy)]
enum Transition {
    Create,
    Remove(u64),
    Advance(u64, Timestamp),
}

/// §7 over an arbitrary set of seen ids.
#[cfg(test)]
pub(crate) fn allocate_id_in<S: std::borrow::Borrow<str> + Eq + std::hash::Hash>(
    seen: &std::collections::HashSet<S>,
) -> String {
    allocate_with(seen.len(), |id| seen.contains(id))
}

fn allocate_with(seen_len: usize, is_seen: impl Fn(&str) -> bool) -> String {
    let mut n = seen_len as u64 + 1;
    loop {
        let id = format!("schedule-{n}");
        if !is_seen(&id) {
            return id;
        }
        n += 1;
    }
}

/// §7 over seen ids in any order (e.g. `["custom", "schedule-3"]` → `schedule-4`).
#[cfg(test)]
pub(crate) fn allocate_id<S: AsRef<str>>(seen_ids: &[S]) -> String {
    let seen: std::collections::HashSet<&str> = seen_ids.iter().map(AsRef::as_ref).collect();
    allocate_id_in(&seen)
}

/// What the runtime should do now (§12.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Deliver exactly this one-shot (others follow in later passes).
    OneShot(ScheduleRecord),
    /// Deliver one batch of every due `every` record.
    EveryBatch(EveryBatch),
    /// Nothing is due; arm a timer for `next_target` if there is one.
    Wait {
        /// The earliest active target, `None` when nothing is active.
        next_target: Option<Timestamp>,
    },
}

impl Decision {
    /// The framing text of §13 for a delivery, `None` for [`Decision::Wait`].
    pub fn framing_text(&self) -> Option<String> {
        match self {
            Decision::OneShot(record) => Some(one_shot_framing(record)),
            Decision::EveryBatch(batch) => Some(batch_framing(&batch.items)),
            Decision::Wait { .. } => None,
        }
    }

    /// The dispatch changes to append after the follow-up was queued (§12.2 e): one id-only
    /// dispatch for a one-shot; for a batch, one dispatch per item in batch order, all with
    /// the same `acceptedAt`. Empty for [`Decision::Wait`].
    pub fn dispatch_changes(&self) -> Vec<ScheduleChange> {
        match self {
            Decision::OneShot(record) => vec![ScheduleChange::Dispatch {
                id: Arc::clone(record.id_arc()),
            }],
            Decision::EveryBatch(batch) => batch
                .items
                .iter()
                .map(|item| ScheduleChange::DispatchEvery {
                    id: Arc::clone(item.record.id_arc()),
                    accepted_at: batch.accepted_at,
                })
                .collect(),
            Decision::Wait { .. } => Vec::new(),
        }
    }
}

/// A batch of due `every` records (§12.3 step 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EveryBatch {
    /// The decision time, written as every dispatch's `acceptedAt`.
    pub accepted_at: Timestamp,
    /// Due records ordered by target, then creation order.
    pub items: Vec<BatchItem>,
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

#[cfg(test)]
#[path = "fold_tests.rs"]
mod tests;
