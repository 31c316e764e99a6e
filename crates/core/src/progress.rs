//! [`Progress`]: where a running tool call's progress reports go, and how often a tool that
//! waits sends one.
//!
//! A transport that can tell its client about a long call (MCP's `notifications/progress`
//! for a request that carried a progress token) attaches a [`Progress`] to the
//! [`crate::ToolCall`]; a tool that waits (`job_output` with `wait`, a foreground `bash`,
//! `terminal_send` or `agent`) reports through it while it waits. No transport needs to know
//! which tools wait or what their arguments mean.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::Either;

use crate::Clock;

/// How often [`Progress::tick_while`] reports while a call waits, unless the transport
/// chose otherwise: every 500 ms.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// One progress report of a running call, in the terms of MCP's `notifications/progress`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressUpdate {
    /// How far the call has come; grows with every report of one call (a waiting tool
    /// counts its reports: 1, 2, 3, …).
    pub progress: f64,
    /// The value `progress` reaches when the call is done, if the tool knows it.
    pub total: Option<f64>,
    /// A line for the person watching (a job's live progress line), if there is one.
    pub message: Option<String>,
}

type Sink = dyn Fn(ProgressUpdate) + Send + Sync;

struct Attached {
    sink: Box<Sink>,
    clock: Arc<dyn Clock>,
    every: Duration,
}

/// Where a call's progress goes. The default reports nowhere (a call whose caller asked for
/// no progress): [`Progress::report`] does nothing and [`Progress::tick_while`] only awaits
/// its work, without a timer. Cloning shares the destination.
#[derive(Clone, Default)]
pub struct Progress {
    attached: Option<Arc<Attached>>,
}

impl Progress {
    /// Progress that goes to `sink`; a waiting tool reports every `every` of `clock`'s
    /// monotonic time ([`Clock::sleep`]). `sink` is called on the calling task and should
    /// not block (queue the update and send it elsewhere).
    pub fn new(
        clock: Arc<dyn Clock>,
        every: Duration,
        sink: impl Fn(ProgressUpdate) + Send + Sync + 'static,
    ) -> Self {
        Self {
            attached: Some(Arc::new(Attached {
                sink: Box::new(sink),
                clock,
                every,
            })),
        }
    }

    /// Whether reports go anywhere.
    pub fn is_reported(&self) -> bool {
        self.attached.is_some()
    }

    /// Sends `update` (nothing when no one listens).
    pub fn report(&self, update: ProgressUpdate) {
        if let Some(attached) = &self.attached {
            (attached.sink)(update);
        }
    }

    /// Awaits `work`; while it runs, every interval of the attached clock sends a report
    /// whose `progress` counts the reports so far (1, 2, …), with no `total` and `message()`
    /// as its message, read at that moment. Without a destination, only awaits `work`.
    pub async fn tick_while<F: Future>(
        &self,
        work: F,
        message: impl Fn() -> Option<String>,
    ) -> F::Output {
        let Some(attached) = &self.attached else {
            return work.await;
        };
        let mut work = std::pin::pin!(work);
        let mut ticks = 0u32;
        loop {
            let tick = attached.clock.sleep(attached.every);
            match futures::future::select(work.as_mut(), tick).await {
                Either::Left((output, _)) => return output,
                Either::Right(((), _)) => {
                    ticks += 1;
                    self.report(ProgressUpdate {
                        progress: f64::from(ticks),
                        total: None,
                        message: message(),
                    });
                }
            }
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("every", &self.attached.as_ref().map(|a| a.every))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::SystemClock;

    #[tokio::test(start_paused = true)]
    async fn a_waiting_call_reports_each_interval_with_the_message_of_that_moment() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let progress = Progress::new(Arc::new(SystemClock), PROGRESS_INTERVAL, move |u| {
            crate::lock(&sink).push(u);
        });
        let line = Arc::new(Mutex::new(None::<String>));
        let reader = line.clone();
        let work = async {
            tokio::time::sleep(Duration::from_millis(1100)).await;
            "done"
        };
        let setter = line.clone();
        let writer = async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            *crate::lock(&setter) = Some("50%".to_owned());
        };
        let (output, ()) = tokio::join!(
            progress.tick_while(work, move || crate::lock(&reader).clone()),
            writer
        );
        assert_eq!(output, "done");
        assert_eq!(
            *crate::lock(&seen),
            vec![
                ProgressUpdate {
                    progress: 1.0,
                    total: None,
                    message: None
                },
                ProgressUpdate {
                    progress: 2.0,
                    total: None,
                    message: Some("50%".to_owned())
                },
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_destination_nothing_is_reported_and_the_work_still_ends() {
        let progress = Progress::default();
        assert!(!progress.is_reported());
        let output = progress
            .tick_while(
                async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    7
                },
                || panic!("no report without a destination"),
            )
            .await;
        assert_eq!(output, 7);
    }
}
