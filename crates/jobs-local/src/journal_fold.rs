//! The journal as a reader sees it: every journaled job of a session log with its start, its
//! settlement and whether a lost-jobs notice named it, folded event by event (for inspection
//! tools that follow a log another process writes; the registry's own reopening fold is in
//! `journal.rs`).

use std::collections::{HashMap, HashSet};

use turnkit_core::RawEvent;
use turnkit_jobs::{JobId, JobKind, JobLabel, JobStatus};

use crate::journal::{
    JOB_LOST_EVENT, JOB_SETTLE_EVENT, JOB_START_EVENT, JournalError, decode_lost, decode_settle,
    decode_start,
};

/// A journaled job's settlement, as its `job/settle` event records it
/// (`docs/event-log.md`, "job/start, job/settle, job/lost").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournaledSettlement {
    /// `completed`, `killed` or `failed`.
    pub status: JobStatus,
    /// The job's detail (an exit code, a stop reason), when it has one.
    pub detail: Option<String>,
    /// When it settled, epoch milliseconds.
    pub finished_at: i64,
    /// The final output of a final-output job, cut to
    /// [`JOURNAL_OUTPUT_BYTES`](crate::JOURNAL_OUTPUT_BYTES).
    pub output: Option<String>,
    /// Whether `output` was cut.
    pub output_truncated: bool,
    /// The teardown reason (`owner disposed`, `jobs service disposed`) when the job was still
    /// running when its host shut down.
    pub teardown: Option<String>,
}

/// One journaled job of a session log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournaledJob {
    /// The job id, `<kind>-<N>`.
    pub id: JobId,
    /// The job kind.
    pub kind: JobKind,
    /// The job's label.
    pub label: JobLabel,
    /// When it started, epoch milliseconds.
    pub started_at: i64,
    /// The `seq` of its `job/start`.
    pub start_seq: u64,
    /// A fork's parent's job: its events were copied with the fork's seed.
    pub inherited: bool,
    /// Its settlement; `None` while it runs, or when its host died first (then a reopened
    /// owner reports it lost, and `reported_lost` becomes true).
    pub settlement: Option<JournaledSettlement>,
    /// A `job/lost` named it: a reopened owner reported it lost to the model.
    pub reported_lost: bool,
}

impl JournaledJob {
    /// Whether the job ran in an earlier run of its host: a teardown settled it, or a
    /// `job/lost` named it.
    pub fn from_before_restart(&self) -> bool {
        self.reported_lost
            || self
                .settlement
                .as_ref()
                .is_some_and(|settlement| settlement.teardown.is_some())
    }

    /// Whether the log says the job is still running: no settlement, not reported lost.
    pub fn running(&self) -> bool {
        self.settlement.is_none() && !self.reported_lost
    }
}

/// The journal of one session log, folded incrementally in `seq` order with the same strict
/// decoders the registry uses: a refused event is returned as its [`JournalError`] and
/// leaves the fold unchanged; other event types are ignored.
///
/// ```
/// use turnkit_core::RawEvent;
/// use turnkit_jobs_local::JournalFold;
///
/// let mut fold = JournalFold::with_seed(0);
/// let start = RawEvent::from_line(br#"{"seq":1,"type":"job/start","time":"2026-08-05T12:00:00.000Z","data":{"version":1,"id":"bash-1","kind":"bash","label":"make","startedAt":1785931200000}}"#).unwrap();
/// fold.apply_raw(&start).unwrap();
/// assert!(fold.jobs()[0].running());
/// ```
#[derive(Debug, Default)]
pub struct JournalFold {
    seed: u64,
    jobs: Vec<JournaledJob>,
    by_id: HashMap<JobId, usize>,
    lost: HashSet<JobId>,
}

impl JournalFold {
    /// An empty fold for a log whose first `seed_length` events are a fork's copied prefix.
    pub fn with_seed(seed_length: u64) -> Self {
        Self {
            seed: seed_length,
            ..Self::default()
        }
    }

    /// Folds one event.
    ///
    /// # Errors
    /// [`JournalError::Corrupt`] for a `job/start`, `job/settle` or `job/lost` that is not a
    /// version-1 event with exactly the documented keys; the fold is unchanged.
    pub fn apply_raw(&mut self, event: &RawEvent) -> Result<(), JournalError> {
        match event.r#type() {
            JOB_START_EVENT => {
                let start = decode_start(event)?;
                if self.by_id.contains_key(&start.id) {
                    return Ok(());
                }
                self.by_id.insert(start.id.clone(), self.jobs.len());
                self.jobs.push(JournaledJob {
                    reported_lost: self.lost.contains(&start.id),
                    id: start.id,
                    kind: start.kind,
                    label: start.label,
                    started_at: start.started_at,
                    start_seq: event.seq(),
                    inherited: event.seq() <= self.seed,
                    settlement: None,
                });
            }
            JOB_SETTLE_EVENT => {
                let settle = decode_settle(event)?;
                if let Some(&i) = self.by_id.get(&settle.id)
                    && self.jobs[i].settlement.is_none()
                {
                    let status = match settle.status.as_str() {
                        "completed" => JobStatus::Completed,
                        "killed" => JobStatus::Killed,
                        _ => JobStatus::Failed,
                    };
                    self.jobs[i].settlement = Some(JournaledSettlement {
                        status,
                        detail: settle.detail,
                        finished_at: settle.finished_at,
                        output: settle.output,
                        output_truncated: settle.output_truncated,
                        teardown: settle.teardown,
                    });
                }
            }
            JOB_LOST_EVENT => {
                let lost = decode_lost(event)?;
                for id in lost.ids {
                    if let Some(&i) = self.by_id.get(&id) {
                        self.jobs[i].reported_lost = true;
                    }
                    self.lost.insert(id);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Every journaled job, in start order.
    pub fn jobs(&self) -> &[JournaledJob] {
        &self.jobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, r#type: &str, data: &str) -> RawEvent {
        let line = format!(
            r#"{{"seq":{seq},"type":"{type}","time":"2026-08-05T12:00:00.000Z","data":{data}}}"#
        );
        RawEvent::from_line(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn folds_start_settle_and_lost() {
        let mut fold = JournalFold::with_seed(1);
        let events = [
            event(
                1,
                "job/start",
                r#"{"version":1,"id":"bash-1","kind":"bash","label":"old","startedAt":1}"#,
            ),
            event(
                2,
                "job/start",
                r#"{"version":1,"id":"bash-2","kind":"bash","label":"make","startedAt":2}"#,
            ),
            event(
                3,
                "job/start",
                r#"{"version":1,"id":"subagent-1","kind":"subagent","label":"plan","startedAt":3}"#,
            ),
            event(
                4,
                "job/settle",
                r#"{"version":1,"id":"subagent-1","status":"completed","detail":"done","finishedAt":9,"output":"ok"}"#,
            ),
            event(5, "job/lost", r#"{"version":1,"ids":["bash-2"]}"#),
        ];
        for e in &events {
            assert_eq!(fold.apply_raw(e), Ok(()));
        }
        let jobs = fold.jobs();
        assert_eq!(jobs.len(), 3);
        assert!(jobs[0].inherited);
        assert!(jobs[1].reported_lost && jobs[1].from_before_restart() && !jobs[1].running());
        let settled = jobs[2]
            .settlement
            .as_ref()
            .unwrap_or_else(|| panic!("settled"));
        assert_eq!(settled.status, JobStatus::Completed);
        assert_eq!(settled.output.as_deref(), Some("ok"));
        assert_eq!(
            fold.apply_raw(&event(6, "job/lost", r#"{"version":1,"ids":[]}"#)),
            Err(JournalError::Corrupt {
                seq: 6,
                message: "a job/lost event names no job".to_owned()
            })
        );
    }
}
