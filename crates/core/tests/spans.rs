//! Every tool call is one `harness.tool_call` span (docs/observability.md).
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

/// Every call runs in a `harness.tool_call` span whose `outcome` is recorded at its end
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
    run(&registry, "nope", json!({})).await;
    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let spans: Vec<&str> = text
        .lines()
        .map(|line| line.split(": close").next().unwrap().trim())
        .collect();
    assert_eq!(
        spans,
        [
            r#"INFO harness.tool_call{tool="echo" session="" outcome="ok"}"#,
            r#"INFO harness.tool_call{tool="echo" session="" outcome="error"}"#,
            r#"INFO harness.tool_call{tool="echo" session="" outcome="invalid_arguments"}"#,
            r#"INFO harness.tool_call{tool="nope" session="" outcome="unknown_tool"}"#,
        ]
    );
}
