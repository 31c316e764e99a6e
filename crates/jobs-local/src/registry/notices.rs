//! Notices a running job raises through its voice: handed to the notice listeners that
//! serve its owner, each contained, while the job is live.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use turnkit_core::lock;
use turnkit_jobs::{JobId, JobNotice};

use super::Shared;
use crate::{driver::error_text, state::for_each_route};

impl Shared {
    /// Job `id` raised `notice`: the listeners serving its owner hear it with the job's
    /// snapshot, unless the job is no longer live (a notice racing its settlement is
    /// dropped: the settlement notice is the job's last word) or disposal began.
    pub(super) fn job_noticed(&self, id: &JobId, notice: &JobNotice) {
        let (snapshot, target, listeners) = {
            let state = lock(&self.state);
            let Some(record) = state.records.get(id) else {
                return;
            };
            if !record.status.is_live() || state.notice_listeners.is_empty() {
                return;
            }
            (
                record.snapshot(),
                record.route_target(),
                state.notice_listeners.clone(),
            )
        };
        if self.listeners_closed.load(Ordering::SeqCst) {
            return;
        }
        for_each_route(&listeners, target.chain(), |listener| {
            if self.listeners_closed.load(Ordering::SeqCst) {
                return;
            }
            match catch_unwind(AssertUnwindSafe(|| {
                listener(&snapshot, target.agent(), notice)
            })) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(
                    "jobs: onJobNotice listener threw for {id}: {}",
                    error_text(&error)
                ),
                Err(_) => {
                    tracing::warn!("jobs: onJobNotice listener threw for {id}: Error: panicked")
                }
            }
        });
    }
}
