//! The due decision (§12.3): [`ScheduleFold::decide`] and [`ScheduleFold::next_target`],
//! answering a [`Decision`] ([`EveryBatch`] for due fixed-rate records).

use std::sync::Arc;

use super::state::ScheduleFold;
use crate::domain::change::{ScheduleChange, ScheduleRecord};
use crate::domain::error::ResolveError;
use crate::domain::framing::{BatchItem, batch_framing, one_shot_framing};
use crate::domain::instant::Timestamp;

impl ScheduleFold {
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
            let occurrence = record.resolve(now_ms)?;
            items.push(BatchItem {
                record: record.clone(),
                occurrence_at: occurrence.occurrence_at,
                next_scheduled_at: occurrence.next_scheduled_at,
            });
        }
        Ok(Decision::EveryBatch(EveryBatch { accepted_at, items }))
    }
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
