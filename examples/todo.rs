//! The todo family alone: `todo_write` replaces the whole list, failures leave the log
//! untouched, and the `todos` projection follows the last write (cleared when a turn starts).
//! Exits non-zero when a step does not answer as shown.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;

use anyhow::ensure;
use serde_json::json;
use turnkit_core::{Agent, SessionHeader, SessionId, SystemClock};
use turnkit_testkit::MemoryHarness;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let host = MemoryHarness::new(Arc::new(SystemClock));
    let _todo = turnkit_todo::install(&host.as_dyn(), turnkit_todo::TodoConfig::new(false))?;
    let agent = host.create_session(SessionHeader::new("s1"))?;
    let s1 = SessionId::from("s1");
    for (args, expected) in [
        (
            json!({"todos": [{"content": " Draft the plan ", "status": "in_progress"},
                             {"content": "Write the code", "status": "pending"}]}),
            "Updated todo list: 1 pending, 1 in progress, 0 completed.",
        ),
        (
            json!({"todos": [{"content": "a", "status": "in_progress"},
                             {"content": "b", "status": "in_progress"}]}),
            "Error: invalid todos: at most one task may be in_progress (got 2)",
        ),
        (
            json!({"todos": [{"content": "dup", "status": "pending"},
                             {"content": " dup", "status": "pending"}]}),
            "Error: invalid todos: duplicate content \"dup\"",
        ),
        (
            json!({"todos": [{"content": "x", "status": "paused"}]}),
            "Error: invalid arguments: \"todos[0].status\" must be one of [\"pending\",\"in_progress\",\"completed\"]",
        ),
    ] {
        let output = host.execute("todo_write", args.clone(), Some(&s1)).await;
        println!("todo_write {args}\n  → {}", output.text());
        ensure!(output.text() == expected, "expected {expected:?}");
    }
    let view = host.projections().view(&s1, "todos").map(|v| v.value);
    let view = view.unwrap_or_default();
    println!("todos projection: {view}");
    let events = agent.session().len();
    println!("events in the log: {events}");
    ensure!(
        view == json!([{"content": "Draft the plan", "status": "in_progress"},
                       {"content": "Write the code", "status": "pending"}]),
        "the projection should hold the one accepted list"
    );
    ensure!(events == 1, "only the accepted write should be in the log");
    Ok(())
}
