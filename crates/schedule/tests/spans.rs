//! Every delivered reminder is one `harness.reminder` span with the stable fields of
//! docs/observability.md.
//!
//! Captured with the testkit's `LogCapture`: one process-wide subscriber with lines routed by
//! thread, which `tracing`'s process-wide cache of callsite interest cannot silence.

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

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_delivered_reminder_is_a_span_with_its_id_occurrence_and_session() {
    let capture = turnkit_testkit::LogCapture::start();

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

    let text = capture.text();
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
