//! The check watch: a shell command run every `interval_ms` (host clock) through bash's
//! runner, with bash's configuration (its sandbox, containment, working directory and
//! environment); an event when its result turns to success, or (with `on: "change"`) when
//! its result differs from the previous run's.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::channel::oneshot;
use sha2::{Digest, Sha256};
use turnkit_bash::{BashJobs, BashProcess, EndStatus};
use turnkit_core::{Agent, Clock};
use turnkit_jobs::{JobId, JobOutcome, StartGate};

use crate::durable::{self, CHECKED_EVENT, Checked, On, Result_};
use crate::frame::Batch;
use crate::output::{Bounds, Channel};

/// The shortest real time a run may take before it is stopped (`timed out`); a longer
/// interval is the limit itself.
const RUN_MIN_LIMIT: Duration = Duration::from_secs(10);

/// Everything a check watch's task needs.
pub(crate) struct CheckWatch {
    pub(crate) command: String,
    pub(crate) interval: Duration,
    pub(crate) on: On,
    pub(crate) bounds: Bounds,
    pub(crate) runner: BashJobs,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) channel: Channel,
    pub(crate) owner: Option<Arc<dyn Agent>>,
    pub(crate) seen: u64,
    pub(crate) last: Option<Result_>,
    pub(crate) continues: Option<JobId>,
    pub(crate) defined: oneshot::Receiver<JobId>,
}

/// The status words of a run, as its wake shows them.
fn status_words(status: &EndStatus) -> String {
    match status {
        EndStatus::Exited(code) => format!("exit code {code}"),
        EndStatus::Signaled(signal) => format!("signal {signal}"),
        EndStatus::Lost(why) => format!("status lost: {why}"),
    }
}

impl CheckWatch {
    /// Runs the command now and then every interval until `max_events` were seen, the
    /// watch expired or it was cancelled.
    pub(crate) async fn run(mut self, gate: StartGate) -> JobOutcome {
        if !gate.opened().await {
            return JobOutcome::killed().with_detail("its start could not be saved");
        }
        let defined = std::mem::replace(&mut self.defined, oneshot::channel().1);
        let Ok(id) = defined.await else {
            return JobOutcome::failed().with_detail("its definition could not be saved");
        };
        let mut expiry = self.clock.sleep(self.bounds.expires_in).fuse();
        let mut wakes = 0u64;
        loop {
            let ran = {
                let run = self.run_once().fuse();
                futures::pin_mut!(run);
                tokio::select! {
                    biased;
                    () = self.channel.cancel.cancelled() => None,
                    () = &mut expiry => Some(None),
                    ran = &mut run => Some(Some(ran)),
                }
            };
            let ran = match ran {
                None => return JobOutcome::killed().with_detail(seen_detail(self.seen)),
                Some(None) => {
                    return JobOutcome::completed()
                        .with_detail(format!("the watch expired; {}", seen_detail(self.seen)));
                }
                Some(Some(ran)) => ran,
            };
            let (result, words, output) = ran;
            let event = match self.on {
                On::Success => result.ok && !self.last.as_ref().is_some_and(|l| l.ok),
                On::Change => self.last.as_ref().is_some_and(|l| l != &result),
            };
            let first_after_restart = self.continues.is_some() && wakes == 0;
            let changed = self.last.as_ref() != Some(&result);
            self.last = Some(result.clone());
            if event {
                self.seen += 1;
            }
            // A changed result is recorded even without a wake: after a restart the runs
            // compare with it.
            if (changed || event || first_after_restart)
                && let Some(owner) = &self.owner
            {
                let checked = Checked {
                    version: 1,
                    id: id.clone(),
                    seen: self.seen,
                    last: result,
                };
                if let Err(error) = durable::record(owner, CHECKED_EVENT, &checked).await {
                    tracing::warn!("watch: could not record the check of {id}: {error}");
                }
            }
            if event || first_after_restart {
                wakes += 1;
                let text = self.text(&id, event, first_after_restart, &words, &output);
                self.channel.wake(wakes, text);
                if self.seen >= self.bounds.max_events {
                    return JobOutcome::completed()
                        .with_detail(format!("max_events reached; {}", seen_detail(self.seen)));
                }
            }
            tokio::select! {
                biased;
                () = self.channel.cancel.cancelled() => {
                    return JobOutcome::killed().with_detail(seen_detail(self.seen));
                }
                () = &mut expiry => {
                    return JobOutcome::completed()
                        .with_detail(format!("the watch expired; {}", seen_detail(self.seen)));
                }
                () = self.clock.sleep(self.interval) => {}
            }
        }
    }

    /// One run: its result, its status words and its output.
    async fn run_once(&self) -> (Result_, String, String) {
        let mut options = self
            .runner
            .config()
            .process_options(&self.command, self.clock.clone());
        options.tasks = self.runner.tasks().clone();
        let process = match BashProcess::spawn(options) {
            Ok(process) => process,
            Err(error) => {
                let words = format!("it could not start: {error}");
                return (
                    Result_ {
                        ok: false,
                        digest: digest(&words),
                    },
                    words,
                    String::new(),
                );
            }
        };
        let end = {
            let wait = process.wait().fuse();
            // Real time: the run is a real process, whatever clock paces the runs.
            let limit = tokio::time::sleep(self.interval.max(RUN_MIN_LIMIT)).fuse();
            futures::pin_mut!(wait, limit);
            tokio::select! {
                end = &mut wait => Some(end),
                () = &mut limit => None,
            }
        };
        let (ok, words) = match &end {
            Some(end) => (
                matches!(end.status, EndStatus::Exited(0)),
                status_words(&end.status),
            ),
            None => {
                process.cancel();
                let _ = process.wait().await;
                (false, "timed out".to_owned())
            }
        };
        let output = process.read();
        let digest = digest(&format!("{words}\n{output}"));
        (Result_ { ok, digest }, words, output)
    }

    fn text(&self, id: &JobId, event: bool, first: bool, words: &str, output: &str) -> String {
        let mut batch = Batch::default();
        for line in output.lines().filter(|l| !l.trim().is_empty()) {
            batch.add(line, self.bounds.line_max_chars, self.bounds.wake_max_bytes);
        }
        let what = match (self.on, event) {
            (On::Success, true) => format!("`{}` now succeeds ({words})", self.command),
            (On::Change, true) => format!("`{}` gave a different result ({words})", self.command),
            (_, false) => format!("`{}` gives {words}", self.command),
        };
        let head = match (&self.continues, first) {
            (Some(old), true) => format!("{id} continues {old} after the host restarted. "),
            _ => String::new(),
        };
        if batch.is_empty() {
            return format!("{head}{what}; no output.");
        }
        format!(
            "{head}{what}. {}",
            batch.framed("line", "lines", "of its output")
        )
    }
}

fn digest(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn seen_detail(seen: u64) -> String {
    let noun = if seen == 1 { "event" } else { "events" };
    format!("{seen} {noun} seen")
}
