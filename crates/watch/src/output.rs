//! The output watch: reads a job's output as it grows, and wakes the owner with the lines that
//! match.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use regex::Regex;
use turnkit_core::{AgentId, Clock, lock};
use turnkit_jobs::{CancellationToken, JobId, JobOutcome, JobRegistry, JobVoice};

use crate::frame::Batch;
use crate::lines::Lines;

/// What an output watch matches: the watched job and its two expressions.
#[derive(Clone, Debug)]
pub(crate) struct OutputSpec {
    /// The watched job.
    pub(crate) target: JobId,
    /// A line is an event when this matches it…
    pub(crate) pattern: Regex,
    /// …and this (when given) does not.
    pub(crate) exclude: Option<Regex>,
}

impl OutputSpec {
    fn matches(&self, line: &str) -> bool {
        self.pattern.is_match(line) && !self.exclude.as_ref().is_some_and(|x| x.is_match(line))
    }
}

/// The bounds every watch has, resolved from the call and the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// Events before the watch ends.
    pub(crate) max_events: u64,
    /// When the watch ends on its own (host clock).
    pub(crate) expires_in: Duration,
    /// Events within this of the first unsent one are one wake (host clock).
    pub(crate) coalesce: Duration,
    /// Characters of a line shown.
    pub(crate) line_max_chars: usize,
    /// Bytes of quoted lines in one wake.
    pub(crate) wake_max_bytes: usize,
    /// How often the watched output is read (real time).
    pub(crate) poll: Duration,
}

/// The watch's side of its job: the voice its wakes go out through, the events so far that
/// `job_output` reads, and the token `job_kill` cancels.
#[derive(Clone)]
pub(crate) struct Channel {
    pub(crate) voice: JobVoice,
    pub(crate) unread: Arc<Mutex<String>>,
    pub(crate) cancel: CancellationToken,
}

impl Channel {
    pub(crate) fn new() -> Self {
        Self {
            voice: JobVoice::new(),
            unread: Arc::new(Mutex::new(String::new())),
            cancel: CancellationToken::new(),
        }
    }

    /// Sends one wake (`event-<n>`, never replacing an earlier one) and keeps its text for
    /// `job_output`.
    pub(crate) fn wake(&self, n: u64, text: String) {
        {
            let mut unread = lock(&self.unread);
            unread.push_str(&text);
            unread.push('\n');
        }
        self.voice.say(format!("event-{n}"), text);
    }
}

/// Everything the output watch's task needs.
pub(crate) struct OutputWatch {
    pub(crate) spec: OutputSpec,
    pub(crate) bounds: Bounds,
    pub(crate) registry: Arc<dyn JobRegistry>,
    pub(crate) owner: Option<AgentId>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) channel: Channel,
}

/// The longest line kept before it is cut and treated as ended.
const MAX_PARTIAL_LINE_BYTES: usize = 64 * 1024;

struct Progress {
    cursor: u64,
    lines: Lines,
    batch: Batch,
    seen: u64,
    wakes: u64,
}

impl OutputWatch {
    /// Runs until the watched job ended and its output was read, `max_events` were seen,
    /// the watch expired, or it was cancelled; the outcome says which.
    pub(crate) async fn run(self) -> JobOutcome {
        let mut progress = Progress {
            cursor: 0,
            lines: Lines::new(MAX_PARTIAL_LINE_BYTES),
            batch: Batch::default(),
            seen: 0,
            wakes: 0,
        };
        let mut expiry = self.clock.sleep(self.bounds.expires_in).fuse();
        let mut window = futures::future::Fuse::terminated();
        loop {
            tokio::select! {
                biased;
                () = self.channel.cancel.cancelled() => {
                    return JobOutcome::killed().with_detail(self.seen_detail(&progress));
                }
                () = &mut expiry => {
                    self.flush(&mut progress);
                    return JobOutcome::completed().with_detail(format!(
                        "the watch expired; {}",
                        self.seen_detail(&progress)
                    ));
                }
                () = &mut window => {
                    self.flush(&mut progress);
                }
                () = tokio::time::sleep(self.bounds.poll) => {
                    let pending = !progress.batch.is_empty();
                    if let Some(outcome) = self.read(&mut progress) {
                        return outcome;
                    }
                    if !pending && !progress.batch.is_empty() {
                        if self.bounds.coalesce.is_zero() {
                            self.flush(&mut progress);
                        } else {
                            window = self.clock.sleep(self.bounds.coalesce).fuse();
                        }
                    }
                }
            }
        }
    }

    fn seen_detail(&self, progress: &Progress) -> String {
        let noun = if progress.seen == 1 {
            "event"
        } else {
            "events"
        };
        format!("{} {noun} seen", progress.seen)
    }

    /// Reads what the watched job printed since the last read; `Some` once the watch ends.
    fn read(&self, progress: &mut Progress) -> Option<JobOutcome> {
        let read = match self.read_at(progress.cursor) {
            Ok(read) => read,
            Err(error) => {
                self.flush(progress);
                return Some(
                    JobOutcome::failed()
                        .with_detail(format!("cannot read {}: {error}", self.spec.target)),
                );
            }
        };
        progress.cursor = read.next_cursor;
        if read.dropped {
            progress.batch.mark_dropped();
        }
        let ended = read.snapshot.status.is_terminal();
        let mut lines = progress.lines.push(&read.text);
        if ended {
            lines.extend(progress.lines.finish());
        }
        for line in lines {
            if !self.spec.matches(&line) {
                continue;
            }
            progress.seen += 1;
            progress.batch.add(
                &line,
                self.bounds.line_max_chars,
                self.bounds.wake_max_bytes,
            );
            if progress.seen >= self.bounds.max_events {
                self.flush(progress);
                return Some(JobOutcome::completed().with_detail(format!(
                    "max_events reached; {}",
                    self.seen_detail(progress)
                )));
            }
        }
        if ended {
            self.flush(progress);
            return Some(JobOutcome::completed().with_detail(format!(
                "{} ended {}; {}",
                self.spec.target,
                read.snapshot.status_line(),
                self.seen_detail(progress)
            )));
        }
        None
    }

    /// The watched job's output after `cursor`; once the job has ended, read once more, so
    /// what it printed between the read and its settlement is included.
    fn read_at(&self, cursor: u64) -> Result<turnkit_jobs::JobReadAt, turnkit_jobs::JobError> {
        let owner = self.owner.as_ref();
        let mut read = self.registry.read_at(&self.spec.target, cursor, owner)?;
        if read.snapshot.status.is_terminal() {
            let rest = self
                .registry
                .read_at(&self.spec.target, read.next_cursor, owner)?;
            read.text.push_str(&rest.text);
            read.next_cursor = rest.next_cursor;
            read.snapshot = rest.snapshot;
        }
        Ok(read)
    }

    fn flush(&self, progress: &mut Progress) {
        if progress.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut progress.batch);
        progress.wakes += 1;
        self.channel
            .wake(progress.wakes, batch.text(self.spec.target.as_str()));
    }
}
