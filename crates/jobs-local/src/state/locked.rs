//! [`State`]: everything behind the registry's one lock.

use std::sync::Arc;

use turnkit_core::AgentId;
use turnkit_jobs::{
    JobDoneListener, JobError, JobId, JobNoticeListener, JobsChangedListener, JobsLostListener,
};

use crate::state::map::FastMap;
use crate::state::record::{OwnerEntry, OwnerKey, Record};
use crate::state::records::Records;
use crate::state::routes::Layers;

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
    pub(crate) notice_listeners: Layers<JobNoticeListener>,
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
