//! The per-agent FIFO and the incrementally folded schedule state (schedule.md §5, §10, §11).
//!
//! One [`Ledger`] exists per adopted agent and is shared by that agent's three tools and its
//! delivery runtime. Holding [`Ledger::enter`]'s guard *is* the FIFO slot: tokio's mutex hands
//! itself out in request order, so transactions (tool calls from preflight through
//! post-barrier, runtime passes from preflight through dispatch barrier) run one at a time in
//! arrival order. The fold is replayed in full once, on first use; afterwards each refresh reads
//! only `session.raw_events_after(last_seq)`, so a tool call costs O(new events), not O(log).
//! Both reads share the log's events (no copy) and decode only `schedule/change` payloads.

use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, MutexGuard};
use turnkit_core::{PersistenceError, Session};

use crate::domain::{SCHEDULE_CHANGE, ScheduleFold, ScheduleLogError};

/// The folded state behind the FIFO.
#[derive(Default)]
pub(crate) struct FoldCache {
    /// `None` until the first refresh; then the fold, or the sticky log error (an append-only
    /// log never heals).
    fold: Option<Result<ScheduleFold, ScheduleLogError>>,
}

/// One agent's FIFO, fold and session.
pub(crate) struct Ledger {
    session: Arc<dyn Session>,
    fifo: AsyncMutex<FoldCache>,
    /// Events scanned for "does the log hold any `schedule/change`" (the idle trigger of §12.1,
    /// which looks at the inherited prefix too), and the answer so far.
    scan: Mutex<(u64, bool)>,
}

impl Ledger {
    /// A ledger for `session`; nothing is read until the first transaction.
    pub(crate) fn new(session: Arc<dyn Session>) -> Self {
        Self {
            session,
            fifo: AsyncMutex::new(FoldCache::default()),
            scan: Mutex::new((0, false)),
        }
    }

    /// The session.
    pub(crate) fn session(&self) -> &Arc<dyn Session> {
        &self.session
    }

    /// Waits for this ledger's FIFO slot.
    pub(crate) async fn enter(&self) -> MutexGuard<'_, FoldCache> {
        self.fifo.lock().await
    }

    /// The durability barrier (§10).
    pub(crate) async fn barrier(&self) -> Result<(), PersistenceError> {
        self.session.flush().await
    }

    /// Whether the whole log (inherited prefix included) holds a `schedule/change` event.
    /// Incremental: each call reads only the events appended since the previous one.
    pub(crate) fn has_schedule_events(&self) -> bool {
        let mut scan = turnkit_core::lock(&self.scan);
        if scan.1 {
            return true;
        }
        let events = self.session.raw_events_after(scan.0);
        for event in &events {
            scan.0 = scan.0.max(event.seq());
            if event.r#type() == SCHEDULE_CHANGE {
                scan.1 = true;
                break;
            }
        }
        scan.1
    }
}

impl FoldCache {
    /// Brings the fold up to date with the session log and returns it: a full fold (§5, with
    /// the header's `seed_length`) the first time, then only the events after the last seq
    /// applied.
    ///
    /// # Errors
    /// The sticky [`ScheduleLogError`] once any owned `schedule/change` event failed to fold.
    pub(crate) fn refresh(
        &mut self,
        session: &dyn Session,
    ) -> Result<&ScheduleFold, ScheduleLogError> {
        let fold = match self.fold.take() {
            None => {
                ScheduleFold::open_raw(&session.raw_events_after(0), session.header().seed_length)
            }
            Some(Err(error)) => Err(error),
            Some(Ok(mut fold)) => {
                let mut outcome = Ok(());
                for event in session.raw_events_after(fold.last_seq()) {
                    if let Err(error) = fold.apply_raw(&event) {
                        outcome = Err(error);
                        break;
                    }
                }
                outcome.map(|()| fold)
            }
        };
        let slot = self.fold.insert(fold);
        match slot {
            Ok(fold) => Ok(fold),
            Err(error) => Err(error.clone()),
        }
    }
}
