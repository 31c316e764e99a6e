//! Each turn is one `invoke_agent` span in the OpenTelemetry GenAI conventions
//! (docs/observability.md), open while the turn is.
//!
//! A test binary of its own: `tracing` caches each callsite's interest process-wide.
#![allow(clippy::unwrap_used, reason = "a test stops on failure")]

use std::sync::Arc;

use pretty_assertions::assert_eq;
use turnkit_core::{MemoryStore, SessionHeader, SessionStore, SystemClock};
use turnkit_host::LoopAgent;

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

#[tokio::test]
async fn a_turn_is_an_invoke_agent_span_that_its_steps_nest_under() {
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

    let session = MemoryStore::new(Arc::new(SystemClock))
        .create(SessionHeader::new("s1"))
        .unwrap();
    let agent = LoopAgent::new(session);
    let turn = agent.open_turn().unwrap();
    turn.span().in_scope(|| tracing::info!("model step"));
    let _ = turn.finish();
    let second = agent.open_turn().unwrap();
    drop(second);

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| match line.find(" time.busy") {
            Some(at) => line[..at].to_owned(),
            None => line.to_owned(),
        })
        .collect();
    let span = |turn: u64| {
        format!(
            "invoke_agent{{otel.name=invoke_agent s1 gen_ai.operation.name=\"invoke_agent\" \
             gen_ai.agent.name=\"s1\" gen_ai.conversation.id=s1 \
             harness.turn={turn}}}:"
        )
    };
    assert_eq!(
        lines,
        [
            format!("{} model step", span(1)),
            format!("{} close", span(1)),
            format!("{} close", span(2)),
        ]
    );
}
