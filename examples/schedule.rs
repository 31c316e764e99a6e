//! Durable reminders alone, on a manual clock: create one of each kind, list them, delete
//! one, move time forward, and watch the reminders arrive as woken turns.
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::sync::Arc;
use std::time::Duration;

use harness_core::{SessionHeader, SessionId};
use harness_testkit::{HostRecord, ManualClock, MemoryHarness};
use serde_json::json;

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> anyhow::Result<()> {
    let clock = ManualClock::at_default();
    let host = MemoryHarness::new(Arc::new(clock.clone()));
    host.set_recorder(Arc::new(|record: HostRecord| {
        if let HostRecord::Claimed { source, text, .. } = record {
            println!(
                "  [woken turn claims {source}]\n    {}",
                text.replace('\n', "\n    ")
            );
        }
    }));
    let _schedule = harness_schedule::install(&host.as_dyn(), Default::default())?;
    let _agent = host.create_session(SessionHeader::new("s1"))?;
    harness_testkit::settle().await;
    let s1 = SessionId::from("s1");
    let call = async |tool: &str, args: serde_json::Value| {
        let output = host.execute(tool, args.clone(), Some(&s1)).await;
        println!("{tool} {args}\n  → {}", output.text());
    };
    call(
        "schedule_create",
        json!({"prompt": "check the deploy", "after_seconds": 60}),
    )
    .await;
    call(
        "schedule_create",
        json!({"prompt": "stand-up", "at": "2026-08-05T14:08:00+02:00"}),
    )
    .await;
    call(
        "schedule_create",
        json!({"prompt": "check metrics", "every_seconds": 300}),
    )
    .await;
    call(
        "schedule_create",
        json!({"prompt": "too often", "every_seconds": 60}),
    )
    .await;
    call("schedule_delete", json!({"id": "schedule-2"})).await;
    call("schedule_list", json!({})).await;
    // Let the delivery runtime arm its timer for the new reminders before time moves.
    harness_testkit::settle().await;
    println!("advancing the clock by 10 minutes…");
    clock.advance(Duration::from_secs(600)).await;
    call("schedule_list", json!({})).await;
    host.dispose_all().await;
    Ok(())
}
