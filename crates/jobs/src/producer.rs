//! The producer side of the contract (todo-jobs §3.1): [`JobStart`] (the request),
//! [`JobHooks`] (what `run` returns) and [`JobProgress`] (decision 8's live progress line).

use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use turnkit_core::{Agent, lock};

use crate::{JobKind, JobLabel, JobOutcome};

/// An error from a producer hook or a listener. Its `Display` is what callers see: a
/// propagated error renders as `Error: <Display>` in a tool result (decision 10).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Cancels a job: `cancel(reason)`. Must not block (start the kill and return), must be
/// idempotent, and must eventually make `done` resolve. An `Err` propagates to the caller of
/// `kill` (and nothing changes), or force-fails the job during teardown (todo-jobs §4.5, §4.8).
pub type CancelHook = Box<dyn Fn(Option<&str>) -> Result<(), BoxError> + Send + Sync>;

/// Returns the output produced since the previous call (a consuming cursor), already
/// formatted by the producer (truncation and spill notices included). An `Err` propagates to
/// the reader. Must not block.
pub type ReadOutputHook = Box<dyn Fn() -> Result<String, BoxError> + Send + Sync>;

/// Resolves once the producer has released its resources. Should not fail: an `Err` (the
/// Rust form of a rejected promise) is logged and recorded as
/// `{status: failed, detail: "Error: <Display>"}` (todo-jobs §4.6, decision 10).
pub type DoneFuture = BoxFuture<'static, Result<JobOutcome, BoxError>>;

/// Starts the producer's work. Called at most once, only after every preflight check passed
/// (todo-jobs §4.3 step 7). On `Err` nothing is registered, no id is consumed, and the
/// producer must clean up anything it partially started; the error propagates from `start`.
pub type RunHook = Box<dyn FnOnce() -> Result<JobHooks, BoxError> + Send>;

/// A producer's request to start a background job (todo-jobs §3.1 `JobStart`).
///
/// ```
/// use turnkit_jobs::{JobHooks, JobKind, JobOutcome, JobStart};
/// let start = JobStart::new(JobKind::bash(), "sleep 60", || {
///     Ok(JobHooks::new(|_reason| Ok(()), async { Ok(JobOutcome::completed()) }))
/// })
/// .with_output_limit_bytes(64);
/// assert_eq!(start.label, "sleep 60");
/// assert_eq!(start.output_limit_bytes, Some(64));
/// assert!(start.owner.is_none());
/// ```
pub struct JobStart {
    /// The kind (id namespace); must be non-empty.
    pub kind: JobKind,
    /// A one-line, model-facing label (the command, the delegation description); must be
    /// non-empty (whitespace-only is accepted).
    pub label: JobLabel,
    /// Caps each complete model-facing read or notice, in UTF-8 bytes, including the
    /// controller's status text. Must be a positive safe integer (1 ..= 2^53−1); the registry
    /// rejects other values with `invalid outputLimitBytes: expected a positive safe integer,
    /// got <n>`.
    pub output_limit_bytes: Option<u64>,
    /// The owning agent, which must be the instance currently registered under its id.
    /// `None` makes the job unowned: every caller may access it and it lives until the
    /// registry is disposed.
    pub owner: Option<Arc<dyn Agent>>,
    /// Starts the work; see [`RunHook`].
    pub run: RunHook,
}

impl JobStart {
    /// An unowned start request without an output limit.
    pub fn new(
        kind: impl Into<JobKind>,
        label: impl Into<JobLabel>,
        run: impl FnOnce() -> Result<JobHooks, BoxError> + Send + 'static,
    ) -> Self {
        Self {
            kind: kind.into(),
            label: label.into(),
            output_limit_bytes: None,
            owner: None,
            run: Box::new(run),
        }
    }

    /// Sets the owner (see [`JobStart::owner`]).
    #[must_use]
    pub fn with_owner(mut self, owner: Arc<dyn Agent>) -> Self {
        self.owner = Some(owner);
        self
    }

    /// Sets or clears the owner.
    #[must_use]
    pub fn with_owner_opt(mut self, owner: Option<Arc<dyn Agent>>) -> Self {
        self.owner = owner;
        self
    }

    /// Sets the output limit in bytes (see [`JobStart::output_limit_bytes`]).
    #[must_use]
    pub fn with_output_limit_bytes(mut self, limit: u64) -> Self {
        self.output_limit_bytes = Some(limit);
        self
    }
}

impl fmt::Debug for JobStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobStart")
            .field("kind", &self.kind)
            .field("label", &self.label)
            .field("output_limit_bytes", &self.output_limit_bytes)
            .field("owner", &self.owner.as_ref().map(|a| a.id().clone()))
            .finish_non_exhaustive()
    }
}

/// What a producer's `run` returns (todo-jobs §3.1 `JobHooks`).
///
/// A job with [`JobHooks::read_output`] is a *stream* job; without it the job is
/// *final-output-only* and its text is [`JobOutcome::output`] once settled.
pub struct JobHooks {
    /// See [`CancelHook`].
    pub cancel: CancelHook,
    /// See [`DoneFuture`].
    pub done: DoneFuture,
    /// See [`ReadOutputHook`]; `None` for a final-output-only job.
    pub read_output: Option<ReadOutputHook>,
    /// A live progress line shown as the snapshot's `detail` while the job is running or
    /// stopping (decision 8). Never model-facing by itself.
    pub progress: Option<JobProgress>,
    /// What the job leaves on the machine that outlives its host, as the producer names it
    /// (bash: its marker, `HARNESS_BASH_JOB`): recorded in the journal's `job/start` and
    /// handed to the kind's [`LeftoverStopper`](crate::LeftoverStopper) when a reopening
    /// finds the job unsettled. Never model-facing.
    pub trace: Option<String>,
    /// How the job raises notices while it runs ([`crate::JobVoice`]); `None` for a job that
    /// speaks only when it settles.
    pub voice: Option<crate::JobVoice>,
}

impl JobHooks {
    /// Hooks of a final-output-only job without a progress line.
    pub fn new(
        cancel: impl Fn(Option<&str>) -> Result<(), BoxError> + Send + Sync + 'static,
        done: impl Future<Output = Result<JobOutcome, BoxError>> + Send + 'static,
    ) -> Self {
        Self {
            cancel: Box::new(cancel),
            done: Box::pin(done),
            read_output: None,
            progress: None,
            trace: None,
            voice: None,
        }
    }

    /// Makes this a stream job reading through `read_output`.
    #[must_use]
    pub fn with_read_output(
        mut self,
        read_output: impl Fn() -> Result<String, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.read_output = Some(Box::new(read_output));
        self
    }

    /// Records `trace` (see [`JobHooks::trace`]).
    #[must_use]
    pub fn with_trace(mut self, trace: impl Into<String>) -> Self {
        self.trace = Some(trace.into());
        self
    }

    /// Lets the job raise notices through `voice` while it runs.
    #[must_use]
    pub fn with_voice(mut self, voice: crate::JobVoice) -> Self {
        self.voice = Some(voice);
        self
    }

    /// Publishes `progress` as the live detail line.
    #[must_use]
    pub fn with_progress(mut self, progress: JobProgress) -> Self {
        self.progress = Some(progress);
        self
    }
}

impl fmt::Debug for JobHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobHooks")
            .field("stream", &self.read_output.is_some())
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

/// Called by [`JobProgress`] after each change; installed by the registry.
pub type ProgressObserver = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct ProgressState {
    line: Option<Arc<str>>,
    observer: Option<ProgressObserver>,
}

/// A shared cell holding a job's live progress line (decision 8).
///
/// The producer keeps one clone and passes another in [`JobHooks::progress`]; every
/// [`JobProgress::set`] replaces the line. While the job is `running` or `stopping` its
/// snapshot's `detail` is the current line (absent when none); once terminal the producer's
/// [`JobOutcome::detail`] is used instead. A registry may install an observer (for example
/// to notify its change observers); it is called after each change, without any lock held.
///
/// ```
/// use turnkit_jobs::JobProgress;
/// let progress = JobProgress::new();
/// progress.set("3/10 files");
/// assert_eq!(progress.current().as_deref(), Some("3/10 files"));
/// progress.clear();
/// assert_eq!(progress.current(), None);
/// ```
#[derive(Clone, Default)]
pub struct JobProgress {
    state: Arc<Mutex<ProgressState>>,
}

impl JobProgress {
    /// An empty progress cell.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the progress line and calls the observer.
    pub fn set(&self, line: impl Into<Arc<str>>) {
        let observer = {
            let mut state = lock(&self.state);
            state.line = Some(line.into());
            state.observer.clone()
        };
        if let Some(observer) = observer {
            observer();
        }
    }

    /// Removes the progress line and calls the observer.
    pub fn clear(&self) {
        let observer = {
            let mut state = lock(&self.state);
            state.line = None;
            state.observer.clone()
        };
        if let Some(observer) = observer {
            observer();
        }
    }

    /// The current line.
    pub fn current(&self) -> Option<Arc<str>> {
        lock(&self.state).line.clone()
    }

    /// Installs (or, with `None`, removes) the observer called after every change. Meant for
    /// the registry that holds the job; a later call replaces an earlier observer.
    pub fn set_observer(&self, observer: Option<ProgressObserver>) {
        drop(self.replace_observer(observer));
    }

    /// [`JobProgress::set_observer`], returning the observer it replaces so the caller can
    /// drop it where it chooses (a registry drops it after releasing its own lock).
    pub fn replace_observer(&self, observer: Option<ProgressObserver>) -> Option<ProgressObserver> {
        std::mem::replace(&mut lock(&self.state).observer, observer)
    }
}

impl fmt::Debug for JobProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JobProgress").field(&self.current()).finish()
    }
}
