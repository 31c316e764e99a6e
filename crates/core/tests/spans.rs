//! Every tool call is one `execute_tool` span in the OpenTelemetry GenAI conventions, with
//! the earlier `harness.tool_call` fields as aliases (docs/observability.md).
//!
//! A test binary of its own: `tracing` caches each callsite's interest process-wide, so a
//! test on another thread with no subscriber could register these callsites as
//! uninteresting while this test runs. Alone in its binary, nothing else registers them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly; clippy's test exemption covers only #[test] bodies"
)]

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use turnkit_core::{RegistrationScope, ToolRegistry};

#[path = "suite/echo.rs"]
mod echo;

use echo::{echo, run};

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

/// Every call runs in an `execute_tool` span whose `outcome` and `error.type` are recorded at its end
/// (docs/observability.md).
#[tokio::test]
async fn each_tool_call_is_a_span_with_its_outcome() {
    let capture = Capture::default();
    let sink = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(move || sink.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    // Another test of this binary may have registered the span's callsite on its own thread,
    // with no subscriber, at the same moment: decide its interest again, now that this
    // thread's subscriber exists.
    tracing::callsite::rebuild_interest_cache();
    let registry = ToolRegistry::new();
    registry
        .register(echo("echo"), RegistrationScope::Global)
        .unwrap()
        .keep();
    run(&registry, "echo", json!({"n": 1})).await;
    run(&registry, "echo", json!({"n": 1, "fail": true})).await;
    run(&registry, "echo", json!({})).await;
    registry
        .execute_call(
            Some("call-9"),
            "nope",
            json!({}),
            None,
            tokio_util::sync::CancellationToken::new(),
        )
        .await;
    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let spans: Vec<&str> = text
        .lines()
        .map(|line| line.split(": close").next().unwrap().trim())
        .collect();
    assert_eq!(
        spans,
        [
            r#"INFO execute_tool{otel.name=execute_tool echo gen_ai.operation.name="execute_tool" gen_ai.tool.name="echo" gen_ai.tool.call.id="harness-call-1" gen_ai.conversation.id="" tool="echo" session="" outcome="ok"}"#,
            r#"INFO execute_tool{otel.name=execute_tool echo gen_ai.operation.name="execute_tool" gen_ai.tool.name="echo" gen_ai.tool.call.id="harness-call-2" gen_ai.conversation.id="" tool="echo" session="" outcome="error" error.type="tool_error"}"#,
            r#"INFO execute_tool{otel.name=execute_tool echo gen_ai.operation.name="execute_tool" gen_ai.tool.name="echo" gen_ai.tool.call.id="harness-call-3" gen_ai.conversation.id="" tool="echo" session="" outcome="invalid_arguments" error.type="invalid_arguments"}"#,
            r#"INFO execute_tool{otel.name=execute_tool nope gen_ai.operation.name="execute_tool" gen_ai.tool.name="nope" gen_ai.tool.call.id="call-9" gen_ai.conversation.id="" tool="nope" session="" outcome="unknown_tool" error.type="unknown_tool"}"#,
        ]
    );
}
