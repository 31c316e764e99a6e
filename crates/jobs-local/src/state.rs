//! The registry's state behind its one lock (todo-jobs §4.2): records, indexes, owner
//! entries, per-kind counters and the registration layers, plus routing by scope (§1.3).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use harness_core::{Agent, AgentId, HookId, RegistrationScope, ScopeKey, SessionId};
use harness_jobs::{
    BoxError, JobDoneListener, JobError, JobId, JobKind, JobProgress, JobSnapshot, JobStatus,
    JobsChangedListener, ReadOutputHook,
};
use tokio_util::sync::CancellationToken;

use crate::history::History;

/// The producer's cancel hook, shareable so it can be called without the lock.
pub(crate) type CancelFn = dyn Fn(Option<&str>) -> Result<(), BoxError> + Send + Sync;

/// A hash map with a fast, non-cryptographic hasher: every key is registry-generated (job
/// ids, sequence numbers, pointer identities) or host-provided (agent ids, kinds).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The identity of an exact agent instance (its allocation address). Stable while any `Arc`
/// to it is held, and the registry holds one wherever a key is stored.
pub(crate) type OwnerKey = usize;

pub(crate) fn owner_key(agent: &Arc<dyn Agent>) -> OwnerKey {
    Arc::as_ptr(agent).cast::<()>() as usize
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
    pub(crate) label: Arc<str>,
    pub(crate) limit: Option<u64>,
    pub(crate) owner: Option<Arc<dyn Agent>>,
    pub(crate) chain: Option<Arc<[ScopeKey]>>,
    /// `None` once terminal: the producer's hooks are released.
    pub(crate) cancel: Option<Arc<CancelFn>>,
    pub(crate) stream: Option<Arc<Mutex<Stream>>>,
    pub(crate) progress: Option<JobProgress>,
    pub(crate) status: JobStatus,
    pub(crate) detail: Option<Arc<str>>,
    pub(crate) output: Option<String>,
    pub(crate) started_at: i64,
    pub(crate) finished_at: Option<i64>,
    pub(crate) reported: bool,
    pub(crate) waiters: Vec<Waiter>,
}

impl Record {
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
            output_limit_bytes: self.limit,
            owner_session: self.owner.as_ref().map(|o| SessionId::from(o.id())),
            status: self.status,
            detail,
            started_at: self.started_at,
            finished_at: self.finished_at,
            reported: self.reported,
        }
    }

    /// The owner and its scope chain, for routing notifications.
    pub(crate) fn route_target(&self) -> Target {
        Target {
            owner: self.owner.clone(),
            chain: self.chain.clone(),
        }
    }
}

/// Who a notification is about: an exact owner (with its scope chain) or none.
#[derive(Clone, Default)]
pub(crate) struct Target {
    pub(crate) owner: Option<Arc<dyn Agent>>,
    pub(crate) chain: Option<Arc<[ScopeKey]>>,
}

/// An owner that has (had) a job: its cleanup hook and its admission bucket.
pub(crate) struct OwnerEntry {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) hook: HookId,
    /// The owner's scope chain, read once (an agent's chain does not change).
    pub(crate) chain: Arc<[ScopeKey]>,
    /// Live (`running` / `stopping`) jobs plus admission reservations.
    pub(crate) live: u64,
}

/// A registration in a layer (§1.3).
#[derive(Clone)]
pub(crate) struct Layered<T> {
    pub(crate) id: u64,
    pub(crate) scope: RegistrationScope,
    pub(crate) item: T,
}

/// Copy-on-write registration layers: notifications clone the `Arc` under the lock and
/// iterate after releasing it, without allocating.
pub(crate) type Layers<T> = Arc<Vec<Layered<T>>>;

/// The records, stored per owner id (each bucket a B-tree in registration order) with an
/// index by job id. `list` for a caller scans only the caller's bucket and the unowned one,
/// in order, so its cost does not depend on other owners' records.
#[derive(Default)]
pub(crate) struct Records {
    // Boxed: sequential inserts leave B-tree leaves half full, which would waste half a
    // record per record inline.
    owned: FastMap<AgentId, BTreeMap<u64, Box<Record>>>,
    unowned: BTreeMap<u64, Box<Record>>,
    index: FastMap<JobId, (Option<AgentId>, u64)>,
}

impl Records {
    fn bucket(&self, owner: Option<&AgentId>) -> Option<&BTreeMap<u64, Box<Record>>> {
        match owner {
            None => Some(&self.unowned),
            Some(id) => self.owned.get(id),
        }
    }

    pub(crate) fn get(&self, id: &JobId) -> Option<&Record> {
        let (owner, seq) = self.index.get(id)?;
        self.bucket(owner.as_ref())?.get(seq).map(|r| &**r)
    }

    pub(crate) fn get_mut(&mut self, id: &JobId) -> Option<&mut Record> {
        let (owner, seq) = self.index.get(id)?;
        match owner {
            None => self.unowned.get_mut(seq).map(|r| &mut **r),
            Some(owner) => self.owned.get_mut(owner)?.get_mut(seq).map(|r| &mut **r),
        }
    }

    pub(crate) fn insert(&mut self, record: Record) {
        let owner = record.owner.as_ref().map(|o| o.id().clone());
        self.index
            .insert(record.id.clone(), (owner.clone(), record.seq));
        match owner {
            None => {
                self.unowned.insert(record.seq, Box::new(record));
            }
            Some(owner) => {
                self.owned
                    .entry(owner)
                    .or_default()
                    .insert(record.seq, Box::new(record));
            }
        }
    }

    pub(crate) fn remove(&mut self, id: &JobId) -> Option<Record> {
        let (owner, seq) = self.index.remove(id)?;
        match owner {
            None => self.unowned.remove(&seq).map(|r| *r),
            Some(owner) => {
                let bucket = self.owned.get_mut(&owner)?;
                let record = bucket.remove(&seq).map(|r| *r);
                if bucket.is_empty() {
                    self.owned.remove(&owner);
                }
                record
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn clear(&mut self) {
        self.owned.clear();
        self.unowned.clear();
        self.index.clear();
    }

    /// Every record, in registration order.
    pub(crate) fn values(&self) -> Vec<&Record> {
        let mut all: Vec<&Record> = self
            .unowned
            .values()
            .chain(self.owned.values().flat_map(BTreeMap::values))
            .map(|r| &**r)
            .collect();
        all.sort_by_key(|r| r.seq);
        all
    }

    /// Every id, in registration order.
    pub(crate) fn ids(&self) -> Vec<JobId> {
        self.values().into_iter().map(|r| r.id.clone()).collect()
    }

    /// The records of session `owner` (every instance), in registration order.
    pub(crate) fn owned_by(&self, owner: &AgentId) -> impl Iterator<Item = &Record> {
        self.owned
            .get(owner)
            .into_iter()
            .flat_map(BTreeMap::values)
            .map(|r| &**r)
    }

    /// What `list(caller)` shows: the caller's records and the unowned ones, merged in
    /// registration order.
    pub(crate) fn visible(&self, caller: Option<&AgentId>) -> Vec<&Record> {
        let mut owned = caller
            .and_then(|c| self.owned.get(c))
            .into_iter()
            .flat_map(BTreeMap::values)
            .map(|r| &**r)
            .peekable();
        let mut unowned = self.unowned.values().map(|r| &**r).peekable();
        let mut out = Vec::new();
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
    pub(crate) counters: FastMap<JobKind, u64>,
    pub(crate) next_seq: u64,
    pub(crate) next_id: u64,
    pub(crate) controllers: Layers<Arc<str>>,
    pub(crate) done_listeners: Layers<JobDoneListener>,
    pub(crate) observers: Layers<JobsChangedListener>,
    pub(crate) disposed: bool,
}

impl State {
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
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
            && caller != Some(owner.id())
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
    layers: &[Layered<T>],
    chain: Option<&[ScopeKey]>,
    mut f: impl FnMut(&T),
) {
    for layer in layers {
        if layer.scope == RegistrationScope::Global {
            f(&layer.item);
        }
    }
    if let Some(chain) = chain {
        for key in chain.iter().rev() {
            for layer in layers {
                if matches!(&layer.scope, RegistrationScope::Scoped(k) if k == key) {
                    f(&layer.item);
                }
            }
        }
    }
}

/// Whether any registration of `layers` serves `chain` (`None`: unowned, global only).
pub(crate) fn serves<T>(layers: &[Layered<T>], chain: Option<&[ScopeKey]>) -> bool {
    layers.iter().any(|l| l.scope.serves(chain))
}
