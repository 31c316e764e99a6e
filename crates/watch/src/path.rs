//! The path watch: the OS's file events for a file or folder (through the family's [`Hub`]),
//! debounced by the coalescing window, compared with what the watch recorded of its files,
//! and each created, modified or removed file that counts is an event.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::channel::oneshot;
use tokio::sync::mpsc;
use turnkit_core::{Agent, Clock};
use turnkit_jobs::{JobId, JobOutcome, StartGate};

use crate::durable;
use crate::frame::Batch;
use crate::hub::Hub;
use crate::output::{Bounds, Channel};
use crate::snapshot::{self, Change, ChangeKind, Entry, Scope, Snapshot};

/// The watch this one continues after a restart, as its first wake names it.
pub(crate) struct Continues {
    pub(crate) id: JobId,
    pub(crate) label: String,
}

/// Everything a path watch's task needs.
pub(crate) struct PathWatch {
    pub(crate) scope: Scope,
    pub(crate) kinds: Vec<ChangeKind>,
    pub(crate) bounds: Bounds,
    pub(crate) hub: Hub,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) channel: Channel,
    pub(crate) owner: Option<Arc<dyn Agent>>,
    /// The files as last recorded (at the call, or in the log before a restart).
    pub(crate) baseline: Snapshot,
    /// Events seen before (a re-armed watch's predecessor's).
    pub(crate) seen: u64,
    pub(crate) continues: Option<Continues>,
    /// The job's id, once its definition is in the owner's log (dropped: it never will be).
    pub(crate) defined: oneshot::Receiver<JobId>,
}

struct Progress {
    id: JobId,
    snapshot: Snapshot,
    seen: u64,
    wakes: u64,
}

impl PathWatch {
    /// Runs until `max_events` were seen, the watch expired, it could not watch its path,
    /// or it was cancelled; the outcome says which.
    pub(crate) async fn run(mut self, gate: StartGate) -> JobOutcome {
        if !gate.opened().await {
            return JobOutcome::killed().with_detail("its start could not be saved");
        }
        let defined = std::mem::replace(&mut self.defined, oneshot::channel().1);
        let Ok(id) = defined.await else {
            return JobOutcome::failed().with_detail("its definition could not be saved");
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
        let dir = if self.scope.folder {
            self.scope.root.clone()
        } else {
            match self.scope.root.parent() {
                Some(parent) => parent.to_path_buf(),
                None => self.scope.root.clone(),
            }
        };
        let _subscription = match self.hub.subscribe(&dir, self.scope.recursive, tx) {
            Ok(subscription) => subscription,
            Err(error) => {
                return JobOutcome::failed()
                    .with_detail(format!("cannot watch {}: {error}", dir.display()));
            }
        };
        // Armed: what changed since the files were last recorded is the first comparison.
        let scope = self.scope.clone();
        let now = tokio::task::spawn_blocking(move || snapshot::scan(&scope))
            .await
            .unwrap_or_default();
        let changes = snapshot::diff(&self.baseline, &now);
        let mut progress = Progress {
            id,
            snapshot: now,
            seen: self.seen,
            wakes: 0,
        };
        if let Some(outcome) = self.deliver(&mut progress, changes, true).await {
            return outcome;
        }
        let mut expiry = self.clock.sleep(self.bounds.expires_in).fuse();
        let mut window = futures::future::Fuse::terminated();
        let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
        loop {
            tokio::select! {
                biased;
                () = self.channel.cancel.cancelled() => {
                    return JobOutcome::killed().with_detail(seen_detail(progress.seen));
                }
                () = &mut expiry => {
                    return JobOutcome::completed().with_detail(format!(
                        "the watch expired; {}",
                        seen_detail(progress.seen)
                    ));
                }
                () = &mut window => {
                    let paths: Vec<PathBuf> = std::mem::take(&mut pending).into_iter().collect();
                    if let Some(outcome) = self.refresh(&mut progress, paths).await {
                        return outcome;
                    }
                }
                path = rx.recv() => {
                    let Some(path) = path else { continue };
                    let first = pending.is_empty();
                    pending.insert(path);
                    while let Ok(more) = rx.try_recv() {
                        pending.insert(more);
                    }
                    if self.bounds.coalesce.is_zero() {
                        let paths: Vec<PathBuf> = std::mem::take(&mut pending).into_iter().collect();
                        if let Some(outcome) = self.refresh(&mut progress, paths).await {
                            return outcome;
                        }
                    } else if first {
                        window = self.clock.sleep(self.bounds.coalesce).fuse();
                    }
                }
            }
        }
    }

    /// Reads the reported paths again and delivers what changed.
    async fn refresh(&self, progress: &mut Progress, paths: Vec<PathBuf>) -> Option<JobOutcome> {
        let scope = self.scope.clone();
        let mut snapshot = std::mem::take(&mut progress.snapshot);
        let (snapshot, changes) = tokio::task::spawn_blocking(move || {
            let changes = snapshot::refresh(&scope, &mut snapshot, &paths);
            (snapshot, changes)
        })
        .await
        .ok()?;
        progress.snapshot = snapshot;
        self.deliver(progress, changes, false).await
    }

    /// Delivers the changes that count as one wake (`first`: the comparison when armed, of
    /// a re-armed watch always one wake saying so), after recording them in the owner's log;
    /// `Some` once `max_events` were seen.
    async fn deliver(
        &self,
        progress: &mut Progress,
        changes: Vec<Change>,
        first: bool,
    ) -> Option<JobOutcome> {
        let counted: Vec<&Change> = changes
            .iter()
            .filter(|c| self.kinds.contains(&c.kind))
            .collect();
        let left = self.bounds.max_events.saturating_sub(progress.seen);
        let taken = &counted[..counted
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX))];
        let rearmed = first && self.continues.is_some();
        if taken.is_empty() && !rearmed {
            return None;
        }
        let mut batch = Batch::default();
        for change in taken {
            batch.add(
                &snapshot::describe(&self.scope, change),
                self.bounds.line_max_chars,
                self.bounds.wake_max_bytes,
            );
        }
        progress.seen += taken.len() as u64;
        let files: BTreeMap<String, Option<Entry>> = changes
            .iter()
            .map(|c| (c.key.clone(), c.now.clone()))
            .collect();
        if let Some(owner) = &self.owner
            && let Err(error) =
                durable::record_seen(owner, &progress.id, progress.seen, files).await
        {
            tracing::warn!(
                "watch: could not record the events of {}: {error}",
                progress.id
            );
        }
        progress.wakes += 1;
        let text = self.text(progress, &batch, first);
        self.channel.wake(progress.wakes, text);
        (progress.seen >= self.bounds.max_events).then(|| {
            JobOutcome::completed().with_detail(format!(
                "max_events reached; {}",
                seen_detail(progress.seen)
            ))
        })
    }

    fn text(&self, progress: &Progress, batch: &Batch, first: bool) -> String {
        let root = self.scope.root.display();
        let place = if self.scope.folder {
            format!("under {root}")
        } else {
            format!("to {root}")
        };
        match (&self.continues, first) {
            (Some(old), true) => {
                let head = format!(
                    "{} continues {} ({}) after the host restarted",
                    progress.id, old.id, old.label
                );
                if batch.is_empty() {
                    let what = if self.scope.folder {
                        format!("nothing under {root} changed")
                    } else {
                        format!("{root} did not change")
                    };
                    format!("{head}; {what} while nobody watched.")
                } else {
                    let place = format!("{place} while nobody watched");
                    format!("{head}. {}", batch.framed("change", "changes", &place))
                }
            }
            _ => batch.framed("change", "changes", &place),
        }
    }
}

fn seen_detail(seen: u64) -> String {
    let noun = if seen == 1 { "event" } else { "events" };
    format!("{seen} {noun} seen")
}

/// How long a watch defined to end at `expires_at` (ms, host clock) has left at `now`.
pub(crate) fn remaining(expires_at: i64, now: i64) -> Duration {
    Duration::from_millis(
        u64::try_from(expires_at.saturating_sub(now))
            .unwrap_or(0)
            .max(1),
    )
}
