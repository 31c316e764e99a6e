//! Each `todo_write` call's body runs in one `plan` span in the OpenTelemetry GenAI
//! conventions, nested under the call's `execute_tool` span (docs/observability.md).
//!
//! A test binary of its own: `tracing` caches each callsite's interest process-wide, so a
//! test on another thread with no subscriber could register these callsites as
//! uninteresting while this test runs.
#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{SessionHeader, SessionId};
use turnkit_testkit::{ManualClock, MemoryHarness};
use turnkit_todo::{TodoConfig, install};

/// Captures what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Capture(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A write by an agent is `plan <agent id>`; a refused write records `error.type`; a call
/// without an agent is a bare `plan` with no `gen_ai.agent.name`.
#[tokio::test(start_paused = true)]
async fn each_todo_write_body_is_a_plan_span_under_its_tool_call() {
    let capture = Capture::default();
    let sink = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_level(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || sink.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();

    let host = MemoryHarness::new(Arc::new(ManualClock::at_default()));
    let config = TodoConfig::from_json(json!({ "allowParallelInProgress": false })).unwrap();
    let _todo = install(&host.as_dyn(), config).unwrap();
    host.create_session(SessionHeader::new("writer")).unwrap();
    let writer = SessionId::from("writer");
    let one = json!([{"content": "plan", "status": "in_progress"}]);
    let two = json!([
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "in_progress"}
    ]);
    let ok = host
        .execute("todo_write", json!({ "todos": one }), Some(&writer))
        .await;
    let refused = host
        .execute("todo_write", json!({ "todos": two }), Some(&writer))
        .await;
    let no_agent = host
        .execute("todo_write", json!({ "todos": one }), None)
        .await;
    assert_eq!(
        (ok.is_error, refused.is_error, no_agent.is_error),
        (false, true, true)
    );

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let plans: Vec<String> = text
        .lines()
        .filter(|line| line.contains("plan{"))
        .map(|line| {
            let line = line.find(" time.busy").map_or(line, |at| &line[..at]);
            let at = line.find("plan{").unwrap();
            line[at..].to_owned()
        })
        .collect();
    assert_eq!(
        plans,
        [
            r#"plan{otel.name=plan writer gen_ai.operation.name="plan" gen_ai.agent.name="writer"}: close"#,
            r#"plan{otel.name=plan writer gen_ai.operation.name="plan" gen_ai.agent.name="writer" error.type="tool_error"}: close"#,
            r#"plan{otel.name=plan gen_ai.operation.name="plan" error.type="tool_error"}: close"#,
        ]
    );
    // Each one closes inside its call's `execute_tool` span.
    let nested = text
        .lines()
        .filter(|line| line.contains("execute_tool{") && line.contains("}:plan{"))
        .count();
    assert_eq!(nested, 3, "{text}");
}
