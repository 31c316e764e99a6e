//! The todo family alone: `todo_write` replaces the whole list, failures leave the log
//! untouched, and the `todos` projection follows the last write (cleared when a turn starts).
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;

use harness_core::{Agent, SessionHeader, SessionId, SystemClock};
use harness_testkit::MemoryHarness;
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let host = MemoryHarness::new(Arc::new(SystemClock));
    let _todo = harness_todo::install(&host.as_dyn(), harness_todo::TodoConfig::new(false))?;
    let agent = host.create_session(SessionHeader::new("s1"))?;
    let s1 = SessionId::from("s1");
    for args in [
        json!({"todos": [{"content": " Draft the plan ", "status": "in_progress"},
                         {"content": "Write the code", "status": "pending"}]}),
        json!({"todos": [{"content": "a", "status": "in_progress"},
                         {"content": "b", "status": "in_progress"}]}),
        json!({"todos": [{"content": "dup", "status": "pending"},
                         {"content": " dup", "status": "pending"}]}),
        json!({"todos": [{"content": "x", "status": "paused"}]}),
    ] {
        let output = host.execute("todo_write", args.clone(), Some(&s1)).await;
        println!("todo_write {args}\n  → {}", output.text());
    }
    let view = host.projections().view(&s1, "todos").map(|v| v.value);
    println!("todos projection: {}", view.unwrap_or_default());
    println!("events in the log: {}", agent.session().len());
    Ok(())
}
