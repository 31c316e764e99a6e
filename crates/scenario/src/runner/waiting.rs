//! Driving a step's pending work on the manual clock: only real processes (jobs and
//! terminals) move in real time, so a wait is given their settlements and nothing else.

use std::sync::Arc;
use std::time::Duration;

use turnkit_testkit::settle;

use super::state::{ClockMode, Runner};

/// How to write a scenario whose disposal would wait for a job that hangs on cancel.
pub(super) const TEARDOWN_HINT: &str =
    "settle the jobs that hang on cancel (\"onCancel\":\"hang\")";

/// How long a step may wait, in real time, for a running real job to settle while its work
/// is pending on the manual clock.
const REAL_TIME_LIMIT: Duration = Duration::from_secs(30);

pub(super) fn blocked(what: &str, hint: &str) -> String {
    format!("{what} cannot finish until the manual clock moves or a later step runs; {hint}")
}

impl Runner {
    /// Drives a step's pending work (a synchronous call, or the `await` of an async one) to
    /// its end. On the manual clock, once every task that can run without time passing has
    /// run, the work can only go on while a real process runs (processes run in real time):
    /// it is given each running real job's settlement, and the end of each real terminal
    /// being stopped (a `terminal_kill` waits for its process), for at most
    /// [`REAL_TIME_LIMIT`] of real time at a stretch. With neither running, nothing but
    /// a later step or manual time can finish it, so waiting would hang the run: that is a
    /// scenario error naming `what`, with `hint` saying how to write the step instead.
    pub(super) async fn until_done<T>(
        &mut self,
        registry: Option<Arc<dyn turnkit_jobs::JobRegistry>>,
        what: &str,
        blocked: String,
        work: impl Future<Output = T>,
    ) -> Result<T, String> {
        let manual = matches!(self.setup()?.clock_mode, ClockMode::Manual(_));
        // Before the work runs: a terminal it stops leaves the family's table at once.
        self.note_terminals();
        tokio::pin!(work);
        if !manual {
            return Ok(work.await);
        }
        loop {
            tokio::select! {
                biased;
                output = &mut work => return Ok(output),
                () = settle() => {}
            }
            let ending = self.ending_terminals();
            let Some(registry) = registry.clone() else {
                return Err(blocked);
            };
            let fakes: Vec<turnkit_jobs::JobId> = self
                .jobs
                .keys()
                .map(|id| turnkit_jobs::JobId::from(id.as_str()))
                .collect();
            let real = move |id: &turnkit_jobs::JobId| !fakes.contains(id);
            // Listen before looking, so a settlement between the two is not missed.
            let settlement = Settlement::watch(registry.as_ref(), real.clone());
            let callers = std::iter::once(None).chain(
                self.live
                    .iter()
                    .map(|s| Some(turnkit_core::AgentId::from(s))),
            );
            let running = callers
                .flat_map(|caller| registry.list(caller.as_ref()))
                .any(|job| !job.status.is_terminal() && real(&job.id));
            if !running && ending.is_empty() {
                return Err(blocked);
            }
            let ended = async move {
                if ending.is_empty() {
                    std::future::pending::<()>().await;
                }
                futures::future::select_all(ending.iter().map(|t| Box::pin(t.wait_end()))).await;
            };
            if !settlement.within(REAL_TIME_LIMIT, ended).await {
                return Err(format!(
                    "{what} did not finish: no real job settled within {}ms",
                    REAL_TIME_LIMIT.as_millis()
                ));
            }
        }
    }
}

/// A wait for the next settlement of a job that `matches`, bounded in real time.
///
/// The listener is registered on creation, so a settlement that happens between creating
/// this and awaiting [`Settlement::within`] is not missed. The bound is kept by a watchdog
/// thread, since tokio's clock is paused under the runner.
pub(super) struct Settlement {
    settled: Arc<tokio::sync::Notify>,
    _listener: turnkit_core::Registration,
}

impl Settlement {
    pub(super) fn watch(
        registry: &dyn turnkit_jobs::JobRegistry,
        matches: impl Fn(&turnkit_jobs::JobId) -> bool + Send + Sync + 'static,
    ) -> Self {
        let settled = Arc::new(tokio::sync::Notify::new());
        let signal = settled.clone();
        let listener = registry.on_job_done(
            turnkit_core::RegistrationScope::Global,
            Arc::new(move |snapshot, _| {
                if matches(&snapshot.id) {
                    signal.notify_one();
                }
                Ok(None)
            }),
        );
        Self {
            settled,
            _listener: listener,
        }
    }

    /// Whether a matching job settled (or `also` completed) within `limit` of real time.
    pub(super) async fn within(&self, limit: Duration, also: impl Future<Output = ()>) -> bool {
        let (_cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let (expire, expired) = futures::channel::oneshot::channel::<()>();
        std::thread::spawn(move || {
            // Returns at once when `_cancel` is dropped (the wait ended first).
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                let _ = expire.send(());
            }
        });
        tokio::select! {
            () = self.settled.notified() => true,
            () = also => true,
            _ = expired => false,
        }
    }
}
