//! The record store: a slab of records, per-owner lists and the per-kind id tables.

use turnkit_core::AgentId;
use turnkit_jobs::{JobId, JobKind};

use crate::state::kinds::{KindIndex, split_id};
use crate::state::map::FastMap;
use crate::state::record::Record;

/// The records, stored inline in a slab (freed slots are reused), plus per-owner-id lists of
/// slots in registration order. `list` for a caller walks only the caller's list and the
/// unowned one, merged by sequence number, so its cost does not depend on other owners'
/// records.
///
/// Job ids are looked up without hashing them: an id is `<kind>-<n>` with `n` the kind's
/// counter, so each kind keeps a dense table from `n` to slot (see [`KindIndex`]).
#[derive(Default)]
pub(crate) struct Records {
    pub(super) slots: Slots,
    free: Vec<usize>,
    pub(super) kinds: Vec<KindIndex>,
    pub(super) kind_of: FastMap<JobKind, usize>,
    /// The kind of the latest start: most starts and reads repeat it, so it is checked
    /// before hashing.
    last_kind: usize,
    /// Per-owner-id slot lists, in registration order (an emptied list is dropped).
    owned: FastMap<AgentId, Vec<usize>>,
    unowned: Vec<usize>,
    len: usize,
}

/// Slab storage for records: fixed-size chunks, so growing never moves the records already
/// stored (a record is a few hundred bytes; a 100,000-record store would otherwise be copied
/// on every doubling).
#[derive(Default)]
pub(super) struct Slots {
    pub(super) chunks: Vec<Vec<Option<Record>>>,
}

impl Slots {
    /// Records per chunk.
    pub(super) const CHUNK: usize = 1024;

    /// The number of slots (occupied or free).
    fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |last| (self.chunks.len() - 1) * Self::CHUNK + last.len())
    }

    fn entry(&self, slot: usize) -> Option<&Option<Record>> {
        self.chunks.get(slot / Self::CHUNK)?.get(slot % Self::CHUNK)
    }

    fn entry_mut(&mut self, slot: usize) -> Option<&mut Option<Record>> {
        self.chunks
            .get_mut(slot / Self::CHUNK)?
            .get_mut(slot % Self::CHUNK)
    }

    fn get(&self, slot: usize) -> Option<&Record> {
        self.entry(slot)?.as_ref()
    }

    fn get_mut(&mut self, slot: usize) -> Option<&mut Record> {
        self.entry_mut(slot)?.as_mut()
    }

    fn take(&mut self, slot: usize) -> Option<Record> {
        self.entry_mut(slot)?.take()
    }

    /// Stores `record` in a free slot.
    fn put(&mut self, slot: usize, record: Record) {
        if let Some(entry) = self.entry_mut(slot) {
            *entry = Some(record);
        }
    }

    /// Stores `record` in a new slot at the end (numbered [`Slots::len`] before the call).
    fn push(&mut self, record: Record) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < Self::CHUNK => last.push(Some(record)),
            _ => {
                let mut chunk = Vec::with_capacity(Self::CHUNK);
                chunk.push(Some(record));
                self.chunks.push(chunk);
            }
        }
    }

    /// Every record, the slab consumed.
    fn into_records(self) -> impl Iterator<Item = Record> {
        self.chunks.into_iter().flatten().flatten()
    }

    fn iter(&self) -> impl Iterator<Item = &Record> {
        self.chunks.iter().flatten().flatten()
    }
}

impl Records {
    pub(crate) fn at(&self, slot: usize) -> Option<&Record> {
        self.slots.get(slot)
    }

    /// The record in `slot` if it is still the one registered as `seq`.
    pub(crate) fn at_mut(&mut self, slot: usize, seq: u64) -> Option<&mut Record> {
        self.slots.get_mut(slot).filter(|r| r.seq == seq)
    }

    fn in_order<'a>(&'a self, bucket: &'a [usize]) -> impl Iterator<Item = &'a Record> + 'a {
        bucket.iter().filter_map(|&slot| self.at(slot))
    }

    /// The index of `kind`'s table, if the kind has issued an id.
    fn kind_index(&self, kind: &str) -> Option<usize> {
        match self.kinds.get(self.last_kind) {
            Some(index) if index.kind == kind => Some(self.last_kind),
            _ => self.kind_of.get(kind).copied(),
        }
    }

    /// The slot of job `id`. Ids the registry did not issue (or no longer holds) are `None`;
    /// a non-canonical spelling of a held id (`bash-01`) is rejected by the final comparison,
    /// so lookups match the id string exactly (§4.4).
    pub(crate) fn slot_of(&self, id: &JobId) -> Option<usize> {
        let (kind, n) = split_id(id.as_str())?;
        let slot = self.kinds.get(self.kind_index(kind)?)?.get(n)?;
        self.at(slot).filter(|r| r.id == *id).map(|_| slot)
    }

    pub(crate) fn get(&self, id: &JobId) -> Option<&Record> {
        self.at(self.slot_of(id)?)
    }

    pub(crate) fn get_mut(&mut self, id: &JobId) -> Option<&mut Record> {
        let slot = self.slot_of(id)?;
        self.slots.get_mut(slot)
    }

    /// Makes `kind`'s next id number at least `n + 1` (the job journal: no id a session's log
    /// has seen is issued again).
    pub(crate) fn raise_counter(&mut self, kind: &JobKind, n: u64) {
        let k = self.kind_index_or_new(kind);
        self.kinds[k].raise(n);
    }

    fn kind_index_or_new(&mut self, kind: &JobKind) -> usize {
        match self.kind_index(kind.as_str()) {
            Some(k) => k,
            None => {
                self.kinds.push(KindIndex::new(kind.clone()));
                self.kind_of.insert(kind.clone(), self.kinds.len() - 1);
                self.kinds.len() - 1
            }
        }
    }

    /// Issues the next id of `kind` (`<kind>-<n>`, §4.3 step 8) and stores the record
    /// `build` makes for it. Returns the id and the record's slot.
    pub(crate) fn issue(
        &mut self,
        kind: JobKind,
        build: impl FnOnce(JobId, JobKind) -> Record,
    ) -> (JobId, usize) {
        let k = self.kind_index_or_new(&kind);
        self.last_kind = k;
        let free = self.free.pop();
        let slot = free.unwrap_or(self.slots.len());
        let n = self.kinds[k].issue(slot);
        let id = JobId::issued(&kind, n);
        let record = build(id.clone(), kind);
        self.store(slot, free.is_some(), record);
        (id, slot)
    }

    /// Stores the record `build` makes under the id `<kind>-<n>` (a job of an earlier run,
    /// read back from the journal), raising the kind's counter to `n` if it is lower. `None`,
    /// with nothing stored, when this registry holds a record with that id.
    pub(crate) fn issue_at(
        &mut self,
        kind: JobKind,
        n: u64,
        build: impl FnOnce(JobId, JobKind) -> Record,
    ) -> Option<JobId> {
        let k = self.kind_index_or_new(&kind);
        if n == 0 || self.kinds[k].get(n).is_some() {
            return None;
        }
        if self.kinds[k].counter < n {
            self.kinds[k].raise(n - 1);
            return Some(self.issue(kind, build).0);
        }
        // Issued by this registry and removed since (its owner was disposed): put back.
        let free = self.free.pop();
        let slot = free.unwrap_or(self.slots.len());
        self.kinds[k].place(n, slot);
        let record = build(JobId::issued(&kind, n), kind);
        let id = record.id.clone();
        self.store(slot, free.is_some(), record);
        Some(id)
    }

    /// Stores `record` in `slot` (reused when `reused`, else the next new one) and lists it
    /// in its owner's bucket.
    fn store(&mut self, slot: usize, reused: bool, record: Record) {
        match &record.owner {
            None => self.unowned.push(slot),
            Some(owner) => match self.owned.get_mut(&owner.id) {
                Some(bucket) => bucket.push(slot),
                None => {
                    self.owned.insert(owner.id.clone(), vec![slot]);
                }
            },
        }
        if reused {
            self.slots.put(slot, record);
        } else {
            self.slots.push(record);
        }
        self.len += 1;
    }

    /// Removes the records of `ids` (unknown ids are skipped), returning them in `ids` order.
    pub(crate) fn remove_all(&mut self, ids: &[JobId]) -> Vec<Record> {
        let mut removed = Vec::new();
        let mut owners: Vec<Option<AgentId>> = Vec::new();
        for id in ids {
            let Some(slot) = self.slot_of(id) else {
                continue;
            };
            let Some(record) = self.slots.take(slot) else {
                continue;
            };
            if let Some((kind, n)) = split_id(id.as_str())
                && let Some(k) = self.kind_index(kind)
            {
                self.kinds[k].remove(n);
            }
            self.free.push(slot);
            self.len -= 1;
            let owner = record.owner.as_ref().map(|o| o.id.clone());
            if !owners.contains(&owner) {
                owners.push(owner);
            }
            removed.push(record);
        }
        // Drop the emptied slots from the affected buckets (one pass per bucket). A freed
        // slot is not reused before this runs: the lock is held throughout.
        let slots = &self.slots;
        for owner in owners {
            match owner {
                None => self.unowned.retain(|&s| slots.get(s).is_some()),
                Some(owner) => {
                    if let Some(bucket) = self.owned.get_mut(&owner) {
                        bucket.retain(|&s| slots.get(s).is_some());
                        if bucket.is_empty() {
                            self.owned.remove(&owner);
                        }
                    }
                }
            }
        }
        removed
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Removes every record and returns them, for the caller to drop after releasing the
    /// lock (the per-kind counters stay: ids are never reused).
    pub(crate) fn take_all(&mut self) -> Vec<Record> {
        let taken: Vec<Record> = std::mem::take(&mut self.slots).into_records().collect();
        self.free.clear();
        self.owned.clear();
        self.unowned.clear();
        for index in &mut self.kinds {
            index.clear();
        }
        self.len = 0;
        taken
    }

    /// Every record, in registration order.
    pub(crate) fn values(&self) -> Vec<&Record> {
        let mut all: Vec<&Record> = self.slots.iter().collect();
        all.sort_by_key(|r| r.seq);
        all
    }

    /// Every id, in registration order.
    pub(crate) fn ids(&self) -> Vec<JobId> {
        self.values().into_iter().map(|r| r.id.clone()).collect()
    }

    /// The records of session `owner` (every instance), in registration order.
    pub(crate) fn owned_by(&self, owner: &AgentId) -> impl Iterator<Item = &Record> {
        self.in_order(self.bucket(owner))
    }

    /// The slots of owner id `owner`'s records, in registration order.
    fn bucket(&self, owner: &AgentId) -> &[usize] {
        self.owned.get(owner).map_or(&[][..], Vec::as_slice)
    }

    /// What `list(caller)` shows: the caller's records and the unowned ones, merged in
    /// registration order.
    pub(crate) fn visible(&self, caller: Option<&AgentId>) -> Vec<&Record> {
        let own = caller.map_or(&[][..], |c| self.bucket(c));
        let mut owned = self.in_order(own).peekable();
        let mut unowned = self.in_order(&self.unowned).peekable();
        let mut out = Vec::with_capacity(own.len() + self.unowned.len());
        loop {
            let next = match (owned.peek(), unowned.peek()) {
                (Some(a), Some(b)) if a.seq < b.seq => owned.next(),
                (Some(_) | None, Some(_)) => unowned.next(),
                (Some(_), None) => owned.next(),
                (None, None) => None,
            };
            match next {
                Some(record) => out.push(record),
                None => return out,
            }
        }
    }
}
