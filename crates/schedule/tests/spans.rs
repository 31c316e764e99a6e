//! Every delivered reminder is one `harness.reminder` span with the stable fields of
//! docs/observability.md.
//!
//! A test binary of its own: `tracing` caches each callsite's interest process-wide, so a
//! test on another thread with no subscriber could register these callsites as
//! uninteresting while this test runs. Alone in its binary, nothing else registers them.

use std::io::Write;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;

#[cfg(test)]
#[allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the suites' shared test wiring; this binary uses part of it"
)]
#[path = "suite/fixture.rs"]
mod fixture;

use fixture::{Host, create_after, create_every, settled};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        harness_core::lock(&self.0).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_delivered_reminder_is_a_span_with_its_id_occurrence_and_session() {
    let capture = Capture::default();
    let sink = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_writer(move || sink.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    // Another test of this binary may have registered the span's callsite on its own thread,
    // with no subscriber: decide its interest again, now that this thread's subscriber exists.
    tracing::callsite::rebuild_interest_cache();

    let h = Host::new();
    let _installed = h.install();
    // Two every-records due together (one batch message, two spans), then a one-shot.
    h.seed(
        "s1",
        &[
            create_every("schedule-fast", "fast", 300, "2026-08-05T11:35:00.000Z"),
            create_every("schedule-slow", "slow", 600, "2026-08-05T11:59:00.000Z"),
            create_after("schedule-once", "once", 60, "2026-08-05T12:01:00.000Z"),
        ],
    );
    h.resume("s1");
    settled().await;
    h.advance_secs(60).await;
    assert_eq!(h.followups().len(), 2);

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let delivered: Vec<&str> = text
        .lines()
        .filter(|line| line.ends_with(": reminder delivered"))
        .collect();
    assert_eq!(
        delivered,
        [
            r#" INFO harness.reminder{reminder.id="schedule-fast" reminder.occurrence=2026-08-05T12:00:00.000Z session="s1"}: reminder delivered"#,
            r#" INFO harness.reminder{reminder.id="schedule-slow" reminder.occurrence=2026-08-05T11:59:00.000Z session="s1"}: reminder delivered"#,
            r#" INFO harness.reminder{reminder.id="schedule-once" reminder.occurrence=2026-08-05T12:01:00.000Z session="s1"}: reminder delivered"#,
        ]
    );
}
