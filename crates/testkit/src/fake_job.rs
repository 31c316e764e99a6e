//! A controllable fake job producer (cases-todo-jobs "Producer P"; scenario steps `fake_job`,
//! `emit`, `settle`).
//!
//! [`FakeProducer`] describes the job and builds the [`JobStart`] to hand to a registry plus a
//! [`FakeJob`] handle that plays the producer: [`FakeJob::emit`] appends unread stream text,
//! [`FakeJob::settle`] / [`FakeJob::reject`] resolve `done`, and [`FakeJob::cancels`] records
//! every cancel reason. What cancel does is chosen with [`OnCancel`].

use std::sync::{Arc, Mutex, MutexGuard};

use futures::channel::oneshot;
use turnkit_core::Agent;
use turnkit_jobs::{BoxError, JobHooks, JobKind, JobOutcome, JobProgress, JobStart};

/// What a fake job does when the registry cancels it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnCancel {
    /// Settle at once as `killed` with detail `cancelled` (the scenario default).
    Settle,
    /// Settle at once with this outcome.
    SettleWith(JobOutcome),
    /// Record the reason and do nothing else: `done` stays pending until settled by hand.
    Hang,
    /// Record the reason and fail with this message (the cancel "throws").
    Throw(String),
}

type Settle = oneshot::Sender<Result<JobOutcome, BoxError>>;

struct FakeState {
    unread: String,
    cancels: Vec<Option<String>>,
    runs: u32,
    settle: Option<Settle>,
    settled: bool,
    on_cancel: OnCancel,
    read_error: Option<String>,
}

/// The description of a fake job; [`FakeProducer::build`] turns it into a start request and
/// its controlling [`FakeJob`].
///
/// ```
/// use turnkit_jobs::JobOutcome;
/// use turnkit_testkit::{FakeProducer, OnCancel};
/// let (start, job) = FakeProducer::new("bash", "sleep 60")
///     .on_cancel(OnCancel::Hang)
///     .build();
/// assert_eq!(start.label, "sleep 60");
/// job.emit("line\n");
/// assert!(!job.was_run());
/// assert!(job.settle(JobOutcome::completed()));
/// ```
pub struct FakeProducer {
    kind: JobKind,
    label: String,
    stream: bool,
    output_limit_bytes: Option<u64>,
    owner: Option<Arc<dyn Agent>>,
    on_cancel: OnCancel,
    run_error: Option<String>,
    progress: bool,
}

impl FakeProducer {
    /// A stream job of `kind` labelled `label`, unowned, whose cancel settles `killed`.
    pub fn new(kind: impl Into<JobKind>, label: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            label: label.into(),
            stream: true,
            output_limit_bytes: None,
            owner: None,
            on_cancel: OnCancel::Settle,
            run_error: None,
            progress: false,
        }
    }

    /// `false` makes a final-output-only job (no `read_output`); its text is the settled
    /// outcome's `output`.
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the owner.
    #[must_use]
    pub fn owner(mut self, owner: Arc<dyn Agent>) -> Self {
        self.owner = Some(owner);
        self
    }

    /// Sets or clears the owner.
    #[must_use]
    pub fn owner_opt(mut self, owner: Option<Arc<dyn Agent>>) -> Self {
        self.owner = owner;
        self
    }

    /// Sets `outputLimitBytes`.
    #[must_use]
    pub fn output_limit_bytes(mut self, limit: u64) -> Self {
        self.output_limit_bytes = Some(limit);
        self
    }

    /// Chooses the cancel behaviour.
    #[must_use]
    pub fn on_cancel(mut self, on_cancel: OnCancel) -> Self {
        self.on_cancel = on_cancel;
        self
    }

    /// Makes `run` fail with `message` (nothing must be registered then).
    #[must_use]
    pub fn fail_run(mut self, message: impl Into<String>) -> Self {
        self.run_error = Some(message.into());
        self
    }

    /// Publishes a progress line ([`FakeJob::set_progress`]) as the job's live detail.
    #[must_use]
    pub fn with_progress(mut self) -> Self {
        self.progress = true;
        self
    }

    /// The start request and the handle that controls the job.
    pub fn build(self) -> (JobStart, FakeJob) {
        let (settle, done) = oneshot::channel();
        let job = FakeJob {
            state: Arc::new(Mutex::new(FakeState {
                unread: String::new(),
                cancels: Vec::new(),
                runs: 0,
                settle: Some(settle),
                settled: false,
                on_cancel: self.on_cancel,
                read_error: None,
            })),
            progress: JobProgress::new(),
            voice: turnkit_jobs::JobVoice::new(),
        };
        let runner = job.clone();
        let stream = self.stream;
        let progress = self.progress;
        let run_error = self.run_error;
        let run = move || -> Result<JobHooks, BoxError> {
            runner.lock().runs += 1;
            if let Some(message) = run_error {
                return Err(message.into());
            }
            let canceller = runner.clone();
            let done = async move {
                match done.await {
                    Ok(result) => result,
                    // Every handle is gone without settling: the job never ends.
                    Err(_) => futures::future::pending().await,
                }
            };
            let mut hooks = JobHooks::new(move |reason| canceller.cancelled(reason), done);
            if stream {
                let reader = runner.clone();
                hooks = hooks.with_read_output(move || reader.take_unread());
            }
            if progress {
                hooks = hooks.with_progress(runner.progress.clone());
            }
            Ok(hooks.with_voice(runner.voice.clone()))
        };
        let mut start = JobStart::new(self.kind, self.label, run).with_owner_opt(self.owner);
        start.output_limit_bytes = self.output_limit_bytes;
        (start, job)
    }
}

/// Controls one fake job (cheap to clone; all clones share the job).
#[derive(Clone)]
pub struct FakeJob {
    state: Arc<Mutex<FakeState>>,
    progress: JobProgress,
    voice: turnkit_jobs::JobVoice,
}

impl std::fmt::Debug for FakeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("FakeJob")
            .field("runs", &state.runs)
            .field("settled", &state.settled)
            .field("cancels", &state.cancels)
            .finish_non_exhaustive()
    }
}

impl FakeJob {
    fn lock(&self) -> MutexGuard<'_, FakeState> {
        turnkit_core::lock(&self.state)
    }

    fn cancelled(&self, reason: Option<&str>) -> Result<(), BoxError> {
        let on_cancel = {
            let mut state = self.lock();
            state.cancels.push(reason.map(str::to_owned));
            state.on_cancel.clone()
        };
        match on_cancel {
            OnCancel::Settle => {
                self.settle(JobOutcome::killed().with_detail("cancelled"));
                Ok(())
            }
            OnCancel::SettleWith(outcome) => {
                self.settle(outcome);
                Ok(())
            }
            OnCancel::Hang => Ok(()),
            OnCancel::Throw(message) => Err(message.into()),
        }
    }

    fn take_unread(&self) -> Result<String, BoxError> {
        let mut state = self.lock();
        if let Some(message) = &state.read_error {
            return Err(message.clone().into());
        }
        Ok(std::mem::take(&mut state.unread))
    }

    fn resolve(&self, result: Result<JobOutcome, BoxError>) -> bool {
        let sender = {
            let mut state = self.lock();
            state.settled = true;
            state.settle.take()
        };
        match sender {
            Some(sender) => {
                let _ = sender.send(result);
                true
            }
            None => false,
        }
    }

    /// Appends `text` to the unread stream output (the next `read_output` returns it).
    pub fn emit(&self, text: &str) {
        self.lock().unread.push_str(text);
    }

    /// Resolves `done` with `outcome`. Returns `false` if it was already resolved.
    pub fn settle(&self, outcome: JobOutcome) -> bool {
        self.resolve(Ok(outcome))
    }

    /// Resolves `done` with an error (a producer contract violation the registry records as
    /// `failed`). Returns `false` if it was already resolved.
    pub fn reject(&self, message: impl Into<String>) -> bool {
        self.resolve(Err(message.into().into()))
    }

    /// Changes what later cancels do.
    pub fn set_on_cancel(&self, on_cancel: OnCancel) {
        self.lock().on_cancel = on_cancel;
    }

    /// Makes later reads fail with `message` (`None`: reads succeed again).
    pub fn fail_reads(&self, message: Option<String>) {
        self.lock().read_error = message;
    }

    /// Raises a running notice (see [`turnkit_jobs::JobVoice::say`]); `false` once the job
    /// settled.
    pub fn say(&self, key: &str, text: &str) -> bool {
        self.voice.say(key, text)
    }

    /// Publishes `line` as the live progress line (shown only with
    /// [`FakeProducer::with_progress`]).
    pub fn set_progress(&self, line: &str) {
        self.progress.set(line);
    }

    /// Every cancel reason received, in order (`None`: cancelled without a reason).
    pub fn cancels(&self) -> Vec<Option<String>> {
        self.lock().cancels.clone()
    }

    /// How many times `run` was called (0 or 1 for a registry that follows the contract).
    pub fn run_count(&self) -> u32 {
        self.lock().runs
    }

    /// Whether `run` was called.
    pub fn was_run(&self) -> bool {
        self.run_count() > 0
    }

    /// Whether `done` has been resolved.
    pub fn is_settled(&self) -> bool {
        self.lock().settled
    }

    /// The stream text not yet read.
    pub fn unread(&self) -> String {
        self.lock().unread.clone()
    }
}
