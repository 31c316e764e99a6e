//! The real-time clock of `{"mode":"system"}` and instants in the grammar.

use std::time::Duration;

use chrono::{DateTime, Utc};
use turnkit_core::{Clock, SystemClock};

/// The system clock of `{"mode":"system"}`, with sleeps in real time. The runner's runtime has
/// a paused clock, on which [`SystemClock`]'s tokio sleeps would end as soon as the runtime is
/// idle: a 2 s `job_output` wait returned at once, a kill grace ended early, and a reminder's
/// timer spun until the wall clock reached its time. Each sleep waits on a thread of its own,
/// which returns at once when the sleep is dropped.
pub(super) struct RealTimeClock;

impl Clock for RealTimeClock {
    fn now(&self) -> DateTime<Utc> {
        SystemClock.now()
    }

    fn now_millis(&self) -> i64 {
        SystemClock.now_millis()
    }

    fn sleep(&self, duration: Duration) -> futures::future::BoxFuture<'static, ()> {
        let (dropped, cancelled) = std::sync::mpsc::channel::<()>();
        let (elapse, elapsed) = futures::channel::oneshot::channel::<()>();
        let started = std::thread::Builder::new()
            .name("harness-scenario-sleep".to_owned())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    cancelled.recv_timeout(duration)
                {
                    let _ = elapse.send(());
                }
            });
        Box::pin(async move {
            let _dropped = dropped;
            // Without a thread the sleep never ends, like a timer that never comes due.
            if started.is_err() || elapsed.await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

pub(super) fn parse_instant(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("invalid instant {text:?}: {e}"))
}
