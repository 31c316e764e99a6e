//! The registry's state behind its one lock (todo-jobs §4.2): records, indexes, owner
//! entries, per-kind counters and the registration layers, plus routing by scope (§1.3).

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use tokio_util::sync::CancellationToken;
use turnkit_core::{
    Agent, AgentId, AgentKey, HookId, Registered, RegistrationScope, ScopeKey, SessionId,
};
use turnkit_jobs::{
    BoxError, CancelHook, JobDoneListener, JobError, JobId, JobKind, JobLabel, JobProgress,
    JobSnapshot, JobStatus, JobsChangedListener, JobsLostListener, ReadOutputHook,
};

use crate::history::History;

/// The producer's cancel hook, shareable so it can be called without the lock.
pub(crate) type CancelFn = dyn Fn(Option<&str>) -> Result<(), BoxError> + Send + Sync;

/// A record's cancel hook: kept as the producer's box until somebody needs to call it (most
/// jobs are never cancelled), then moved into an `Arc` so it can be called without the lock.
pub(crate) enum Cancel {
    Owned(CancelHook),
    Shared(Arc<CancelFn>),
}

/// A hash map with a fast, non-cryptographic hasher: every key is registry-generated (job
/// numbers, pointer identities) or host-provided (agent ids, kinds).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The identity of an exact agent instance ([`AgentKey`]). It names its agent while any
/// handle to it is held, and the registry holds an `Arc` wherever a key is stored.
pub(crate) type OwnerKey = AgentKey;

pub(crate) fn owner_key(agent: &Arc<dyn Agent>) -> OwnerKey {
    AgentKey::of(agent)
}

/// A stream job's reader and history, locked on its own so `read_output` runs without the
/// registry lock.
pub(crate) struct Stream {
    pub(crate) read: ReadOutputHook,
    pub(crate) history: History,
}

/// A live `wait` on a record (§4.5).
pub(crate) struct Waiter {
    pub(crate) id: u64,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) resolve: oneshot::Sender<JobSnapshot>,
}

/// One job (§4.2).
pub(crate) struct Record {
    /// Registration order.
    pub(crate) seq: u64,
    pub(crate) id: JobId,
    pub(crate) kind: JobKind,
    pub(crate) label: JobLabel,
    pub(crate) limit: Option<NonZeroU64>,
    /// The exact owner instance, with what routing needs of it.
    pub(crate) owner: Option<Arc<OwnerInfo>>,
    /// `None` once terminal: the producer's hooks are released.
    pub(crate) cancel: Option<Cancel>,
    pub(crate) stream: Option<Arc<Mutex<Stream>>>,
    pub(crate) progress: Option<JobProgress>,
    pub(crate) status: JobStatus,
    pub(crate) detail: Option<Arc<str>>,
    pub(crate) output: Option<Box<str>>,
    pub(crate) started_at: i64,
    /// Epoch milliseconds at settlement; meaningful once the status is terminal.
    pub(crate) finished_at: i64,
    pub(crate) reported: bool,
    /// Live waits.
    #[expect(
        clippy::box_collection,
        reason = "one word in every record instead of three; most jobs are never waited on"
    )]
    pub(crate) waiters: Option<Box<Vec<Waiter>>>,
    /// The job's `harness.job` span while it runs (`None` when no subscriber wanted it):
    /// boxed, so a record without one pays one word.
    pub(crate) span: Option<Box<tracing::Span>>,
    /// Which teardown (owner or service disposal) asked the job to stop, if one did; the
    /// journal's `job/settle` keeps its reason.
    pub(crate) teardown: Option<Teardown>,
    /// A record of an earlier run, read back from the job journal (terminal from the start).
    pub(crate) earlier: bool,
}

impl Record {
    /// The cancel hook in a form callable without the lock (`None` once terminal).
    pub(crate) fn shared_cancel(&mut self) -> Option<Arc<CancelFn>> {
        let shared: Arc<CancelFn> = match self.cancel.take()? {
            Cancel::Owned(hook) => Arc::from(hook),
            Cancel::Shared(hook) => hook,
        };
        self.cancel = Some(Cancel::Shared(shared.clone()));
        Some(shared)
    }

    pub(crate) fn snapshot(&self) -> JobSnapshot {
        let detail = if self.status.is_terminal() {
            self.detail.clone()
        } else {
            self.progress.as_ref().and_then(JobProgress::current)
        };
        JobSnapshot {
            id: self.id.clone(),
            kind: self.kind.clone(),
            label: self.label.clone(),
            output_limit_bytes: self.limit.map(NonZeroU64::get),
            owner_session: self.owner.as_ref().map(|o| SessionId::from(&o.id)),
            status: self.status,
            detail,
            started_at: self.started_at,
            finished_at: self.status.is_terminal().then_some(self.finished_at),
            reported: self.reported,
        }
    }

    /// The owner (with its scope chain), for routing notifications.
    pub(crate) fn route_target(&self) -> Target {
        Target {
            owner: self.owner.clone(),
        }
    }
}

/// A teardown that asks jobs to stop (§4.8, §4.9), by the reason it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// The owner's disposal: [`crate::OWNER_DISPOSED_REASON`].
    Owner,
    /// The registry's disposal: [`crate::SERVICE_DISPOSED_REASON`].
    Service,
}

impl Teardown {
    /// The reason handed to the producer's cancel hook.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Teardown::Owner => crate::OWNER_DISPOSED_REASON,
            Teardown::Service => crate::SERVICE_DISPOSED_REASON,
        }
    }
}

/// An exact owner instance as the registry keeps it: read from the host once, when its
/// first job starts, and shared by all its records.
pub(crate) struct OwnerInfo {
    pub(crate) agent: Arc<dyn Agent>,
    /// `agent.id()`, read once.
    pub(crate) id: AgentId,
    /// The owner's scope chain, read once (an agent's chain does not change).
    pub(crate) chain: Arc<[ScopeKey]>,
}

impl OwnerInfo {
    /// `id` is `agent.id()`, read by the caller (never under the registry's lock).
    pub(crate) fn new(agent: Arc<dyn Agent>, id: AgentId, chain: Arc<[ScopeKey]>) -> Self {
        Self { agent, id, chain }
    }

    pub(crate) fn key(&self) -> OwnerKey {
        owner_key(&self.agent)
    }
}

/// Who a notification is about: an exact owner (with its scope chain) or none.
#[derive(Clone, Default)]
pub(crate) struct Target {
    pub(crate) owner: Option<Arc<OwnerInfo>>,
}

impl Target {
    /// The owner's scope chain (`None`: unowned, global registrations only).
    pub(crate) fn chain(&self) -> Option<&[ScopeKey]> {
        self.owner.as_deref().map(|o| &*o.chain)
    }

    /// The owning agent, as listeners receive it.
    pub(crate) fn agent(&self) -> Option<&Arc<dyn Agent>> {
        self.owner.as_ref().map(|o| &o.agent)
    }
}

/// An owner that has (had) a job: its cleanup hook and its admission bucket.
pub(crate) struct OwnerEntry {
    pub(crate) info: Arc<OwnerInfo>,
    /// The agent registry's generation at this owner's last successful liveness check
    /// (`None`: never checked at a known generation).
    pub(crate) verified: Option<u64>,
    pub(crate) hook: HookId,
    /// Live (`running` / `stopping`) jobs plus admission reservations.
    pub(crate) live: u64,
}

/// A registration in a layer (§1.3).
#[derive(Clone)]
pub(crate) struct Layered<T> {
    pub(crate) scope: RegistrationScope,
    pub(crate) item: T,
}

/// Copy-on-write registration layers, each entry under the id its registration removes:
/// notifications clone the `Arc` under the lock and iterate after releasing it, without
/// allocating.
pub(crate) type Layers<T> = Arc<Registered<Layered<T>>>;

/// The records, stored inline in a slab (freed slots are reused), plus per-owner-id lists of
/// slots in registration order. `list` for a caller walks only the caller's list and the
/// unowned one, merged by sequence number, so its cost does not depend on other owners'
/// records.
///
/// Job ids are looked up without hashing them: an id is `<kind>-<n>` with `n` the kind's
/// counter, so each kind keeps a dense table from `n` to slot (see [`KindIndex`]).
#[derive(Default)]
pub(crate) struct Records {
    slots: Slots,
    free: Vec<usize>,
    kinds: Vec<KindIndex>,
    kind_of: FastMap<JobKind, usize>,
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
struct Slots {
    chunks: Vec<Vec<Option<Record>>>,
}

impl Slots {
    /// Records per chunk.
    const CHUNK: usize = 1024;

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

/// One kind's id counter and its `n → slot` table (todo-jobs §4.3 step 8: ids are
/// `<kind>-<n>`, per-kind counters starting at 1, never reused).
pub(crate) struct KindIndex {
    kind: JobKind,
    counter: u64,
    table: Table,
    /// Entries held (records of this kind in the store).
    held: usize,
}

/// A kind's `n → slot` table.
enum Table {
    /// `slots[i]` is the slot of job `n = first + i`, or [`Table::GONE`]. Removed entries at
    /// the front are dropped, so this spans the oldest held job of the kind to the newest.
    Dense { first: u64, slots: VecDeque<usize> },
    /// Used once a dense table is mostly holes (a long-held old job with many removed
    /// after it): memory then follows the records held, not the ids issued.
    Sparse(FastMap<u64, usize>),
}

impl Table {
    const GONE: usize = usize::MAX;

    /// A dense table of at least this many entries becomes sparse when fewer than a quarter
    /// of them are held.
    const SPARSE_AFTER: usize = 1024;
}

impl KindIndex {
    fn new(kind: JobKind) -> Self {
        Self {
            kind,
            counter: 0,
            table: Table::Dense {
                first: 1,
                slots: VecDeque::new(),
            },
            held: 0,
        }
    }

    /// Issues the next number, held in `slot`.
    fn issue(&mut self, slot: usize) -> u64 {
        self.counter += 1;
        let n = self.counter;
        match &mut self.table {
            Table::Dense { first, slots } => {
                if slots.is_empty() {
                    *first = n;
                }
                // Numbers are issued one by one, so `n` is the table's next entry.
                slots.push_back(slot);
            }
            Table::Sparse(map) => {
                map.insert(n, slot);
            }
        }
        self.held += 1;
        n
    }

    /// Makes the next issued number at least `n + 1` (ids a journal has seen are never
    /// issued again). Numbers skipped over are holes of a dense table, or the table turns
    /// sparse when the jump is long.
    fn raise(&mut self, n: u64) {
        if n <= self.counter {
            return;
        }
        let gap = n - self.counter;
        if let Table::Dense { first, slots } = &mut self.table {
            if slots.is_empty() {
                *first = n + 1;
            } else if gap <= Table::SPARSE_AFTER as u64 {
                slots.extend(std::iter::repeat_n(Table::GONE, gap as usize));
            } else {
                let map = (*first..)
                    .zip(slots.iter().copied())
                    .filter(|&(_, slot)| slot != Table::GONE)
                    .collect();
                self.table = Table::Sparse(map);
            }
        }
        self.counter = n;
    }

    /// Holds `n` (at most the counter, not held) in `slot`: a journaled job's record put
    /// back after this registry removed it. A number before a dense table's first entry
    /// turns the table sparse.
    fn place(&mut self, n: u64, slot: usize) {
        if let Table::Dense { first, slots } = &mut self.table {
            if slots.is_empty() {
                // The table's last entry must stay the counter (`issue` pushes the next
                // number): the numbers after `n` are holes, or the table turns sparse.
                let after = self.counter.saturating_sub(n);
                if after <= Table::SPARSE_AFTER as u64 {
                    *first = n;
                    slots.push_back(slot);
                    slots.extend(std::iter::repeat_n(Table::GONE, after as usize));
                } else {
                    self.table = Table::Sparse(std::iter::once((n, slot)).collect());
                }
                self.held += 1;
                return;
            }
            let within = n
                .checked_sub(*first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| slots.get_mut(i));
            if let Some(entry) = within {
                *entry = slot;
                self.held += 1;
                return;
            }
            let map = (*first..)
                .zip(slots.iter().copied())
                .filter(|&(_, slot)| slot != Table::GONE)
                .collect();
            self.table = Table::Sparse(map);
        }
        if let Table::Sparse(map) = &mut self.table {
            map.insert(n, slot);
            self.held += 1;
        }
    }

    fn get(&self, n: u64) -> Option<usize> {
        match &self.table {
            Table::Dense { first, slots } => {
                let i = usize::try_from(n.checked_sub(*first)?).ok()?;
                let slot = *slots.get(i)?;
                (slot != Table::GONE).then_some(slot)
            }
            Table::Sparse(map) => map.get(&n).copied(),
        }
    }

    fn remove(&mut self, n: u64) {
        let removed = match &mut self.table {
            Table::Dense { first, slots } => {
                let entry = n
                    .checked_sub(*first)
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| slots.get_mut(i))
                    .filter(|slot| **slot != Table::GONE);
                let removed = entry.map(|slot| *slot = Table::GONE).is_some();
                while slots.front() == Some(&Table::GONE) {
                    slots.pop_front();
                    *first += 1;
                }
                removed
            }
            Table::Sparse(map) => map.remove(&n).is_some(),
        };
        if removed {
            self.held -= 1;
        }
        self.compact();
    }

    /// Switches a mostly-empty dense table to a sparse one, and an emptied sparse table back.
    fn compact(&mut self) {
        match &self.table {
            Table::Dense { first, slots }
                if slots.len() >= Table::SPARSE_AFTER && self.held * 4 < slots.len() =>
            {
                let map = (*first..)
                    .zip(slots.iter().copied())
                    .filter(|&(_, slot)| slot != Table::GONE)
                    .collect();
                self.table = Table::Sparse(map);
            }
            Table::Sparse(map) if map.is_empty() => self.clear(),
            _ => {}
        }
    }

    /// Forgets every entry (the counter stays).
    fn clear(&mut self) {
        self.table = Table::Dense {
            first: self.counter + 1,
            slots: VecDeque::new(),
        };
        self.held = 0;
    }
}

/// Splits a job id into its kind and counter (`<kind>-<n>`, split at the last `-`).
pub(crate) fn split_id(id: &str) -> Option<(&str, u64)> {
    let (kind, n) = id.rsplit_once('-')?;
    Some((kind, n.parse().ok()?))
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

#[derive(Default)]
pub(crate) struct State {
    pub(crate) records: Records,
    pub(crate) unowned_live: u64,
    pub(crate) owners: FastMap<OwnerKey, OwnerEntry>,
    pub(crate) next_seq: u64,
    /// The last waiter id issued (ids start at 1).
    next_waiter: u64,
    pub(crate) controllers: Layers<Arc<str>>,
    pub(crate) done_listeners: Layers<JobDoneListener>,
    pub(crate) observers: Layers<JobsChangedListener>,
    pub(crate) lost_listeners: Layers<JobsLostListener>,
    pub(crate) disposed: bool,
}

impl State {
    /// A new waiter id, by which a timed-out or aborted wait removes exactly its own waiter.
    pub(crate) fn next_waiter_id(&mut self) -> u64 {
        self.next_waiter += 1;
        self.next_waiter
    }

    /// Lookup, then the access fence (§4.5).
    pub(crate) fn find(
        &mut self,
        id: &JobId,
        caller: Option<&AgentId>,
    ) -> Result<&mut Record, JobError> {
        let record = self
            .records
            .get_mut(id)
            .ok_or_else(|| JobError::UnknownJob(id.clone()))?;
        if let Some(owner) = &record.owner
            && caller != Some(&owner.id)
        {
            return Err(JobError::Foreign(id.clone()));
        }
        Ok(record)
    }

    /// The admission bucket of an owner (or the unowned bucket).
    pub(crate) fn bucket(&mut self, owner: Option<OwnerKey>) -> Option<&mut u64> {
        match owner {
            Some(key) => self.owners.get_mut(&key).map(|e| &mut e.live),
            None => Some(&mut self.unowned_live),
        }
    }

    /// Releases one slot of a bucket.
    pub(crate) fn release(&mut self, owner: Option<OwnerKey>) {
        if let Some(live) = self.bucket(owner) {
            *live = live.saturating_sub(1);
        }
    }
}

/// Calls `f` with each registration of `layers` that serves `chain`, in delivery order:
/// global first, then the chain from the farthest ancestor to the nearest, each in
/// registration order (§1.3). `None` (an unowned job) reaches global registrations only.
pub(crate) fn for_each_route<T>(
    layers: &Registered<Layered<T>>,
    chain: Option<&[ScopeKey]>,
    mut f: impl FnMut(&T),
) {
    for layer in layers.iter() {
        if layer.scope == RegistrationScope::Global {
            f(&layer.item);
        }
    }
    if let Some(chain) = chain {
        for (index, key) in chain.iter().enumerate().rev() {
            for layer in layers.iter() {
                let routed = match &layer.scope {
                    RegistrationScope::Global => false,
                    RegistrationScope::Scoped(k) => k == key,
                    RegistrationScope::Agent(k) => index == 0 && k == key,
                };
                if routed {
                    f(&layer.item);
                }
            }
        }
    }
}

/// Whether any registration of `layers` serves `chain` (`None`: unowned, global only).
pub(crate) fn serves<T>(layers: &Registered<Layered<T>>, chain: Option<&[ScopeKey]>) -> bool {
    layers.iter().any(|l| l.scope.serves(chain))
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
